#!/usr/bin/env node
// The operator's tool from the project, as `npm run -s cli -- <command>` or as the package's bin
// (`npx subscription-service <command>`): the compiled CLI (dist/cli.js) when the build is at least
// as new as every file under src/, otherwise src/cli.ts through ts-node (about 1.6 s a call).
// stdout carries the command's JSON and nothing else, so that it can be piped into `jq`: this
// launcher writes only to stderr, and the CLI sends its own errors and any library's chatter there.
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
// From the project's directory wherever it is started (as `npm run` does): .env and the embedded
// database's .data/ are found there.
const result = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
if (result.error) {
  process.stderr.write(`error: INTERNAL_ERROR: cannot start the CLI: ${result.error.message}\n`);
  process.exit(1);
}
if (result.signal) process.kill(process.pid, result.signal);
process.exit(result.status ?? 1);
