/**
 * A preload (`node -r`) for the benchmark's capturing instance of the service: writes every query
 * the service sends through `pg` to CAPTURE_FILE, one JSON line each, with the connection's backend
 * pid, the statement's name, its text and its parameters as `pg` sends them (strings, arrays in
 * PostgreSQL's text form). bench/consume-limit.ts replays consume transactions from it with
 * pgbench, to find the consumes per second at which PostgreSQL's CPU is the limit. Not part of the
 * build or the image; run as plain JavaScript, `pg` found through NODE_PATH.
 */
import { appendFileSync } from 'node:fs';
import { Client } from 'pg';

const { prepareValue } = require('pg/lib/utils') as { prepareValue: (v: unknown) => unknown };

export interface CapturedQuery {
  pid: number;
  name?: string;
  text: string;
  values: Array<string | null>;
}

const file = process.env.CAPTURE_FILE!;
const original = Client.prototype.query as (...args: unknown[]) => unknown;

Client.prototype.query = function capture(this: Client & { processID?: number }, ...args: unknown[]) {
  const [first, second] = args;
  const config: { name?: string; text?: string; values?: unknown[] } =
    typeof first === 'string'
      ? { text: first, values: Array.isArray(second) ? second : [] }
      : (first as object);
  if (config && typeof config.text === 'string') {
    const line: CapturedQuery = {
      pid: this.processID ?? 0,
      name: config.name,
      text: config.text,
      values: (config.values ?? []).map((v) => {
        const prepared = prepareValue(v);
        return prepared === null || prepared === undefined ? null : String(prepared);
      }),
    };
    appendFileSync(file, JSON.stringify(line) + '\n');
  }
  return original.apply(this, args);
} as typeof Client.prototype.query;
