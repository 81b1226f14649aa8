#!/usr/bin/env node
// `npm run cli -- <command>`: the compiled CLI (dist/cli.js) when the build is at least as new as
// every file under src/, otherwise src/cli.ts through ts-node (about 1.6 s a call).
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
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
const args = fresh
  ? [compiled, ...process.argv.slice(2)]
  : ['-r', 'ts-node/register/transpile-only', join(root, 'src', 'cli.ts'), ...process.argv.slice(2)];
const result = spawnSync(process.execPath, args, { stdio: 'inherit' });
process.exit(result.status ?? 1);
