#!/usr/bin/env node
// `npm run cli -- <command>`: the compiled CLI (dist/cli.js, about 0.3 s a call) when the build
// is at least as new as every file under src/, otherwise src/cli.ts through ts-node (about 1.6 s).
'use strict';
const { existsSync, readdirSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { spawnSync } = require('node:child_process');

const root = join(__dirname, '..');
const compiled = join(root, 'dist', 'cli.js');

function newestUnder(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestUnder(path) : statSync(path).mtimeMs);
  }
  return newest;
}

const fresh = existsSync(compiled) && statSync(compiled).mtimeMs >= newestUnder(join(root, 'src'));
const args = process.argv.slice(2);
if (fresh) {
  require(compiled);
} else {
  const result = spawnSync(
    process.execPath,
    ['-r', 'ts-node/register/transpile-only', join(root, 'src', 'cli.ts'), ...args],
    { stdio: 'inherit' },
  );
  process.exit(result.status ?? 1);
}
