/**
 * The consumes per second at which PostgreSQL's CPU is the limit (the `dblimit` part, after `load`):
 * on the benchmark's machine the service and PostgreSQL share two vCPUs, so a run through the
 * service cannot load PostgreSQL fully. Here a capturing instance of the service (the same build,
 * bench/statement-capture.ts preloaded) serves a few consumes, and their transactions as the
 * service sent them (begin, the customer's lock, the state read, the insert of the record with its
 * allocations and its audit record, commit) are replayed by pgbench, a lighter client than the
 * service, with many clients at once (docs/scaling.md#the-limit-of-one-primary).
 *
 * The statements keep their text and run as prepared statements with parameters, as the service
 * runs them; each pgbench transaction takes one captured transaction's parameters from a table
 * (one more statement, before its begin), with what must be new every time made new: the
 * consumes' event ids and their audit records' ids get a random part, and the record ids the state
 * read drew for the insert are left to the insert to draw.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from 'pg';
import type { CapturedQuery } from './statement-capture';

export interface CaptureContext {
  db: Client;
  /** A directory for the capture's files. */
  dir: string;
  /** Starts the capturing instance with `args` before `dist/main.js` and `env` added: its port and a stop. */
  start: (
    args: string[],
    env: Record<string, string>,
  ) => Promise<{ port: number; stop: () => Promise<void> }>;
  /** A consume of one unit by `customerId` with `eventId`, at the instance on `port`: its status. */
  consume: (port: number, customerId: number, eventId: string) => Promise<number>;
  /** Transpiles a bench file to plain JavaScript in `dir`, answering its path. */
  transpile: (file: string) => string;
}

/** A pgbench script replaying consume transactions, and the consumes each of them holds. */
export interface ConsumeScript {
  script: string;
  /** Consumes per transaction, one entry per captured transaction (pgbench picks one at random each time). */
  sizes: number[];
}

/**
 * Captures the consumes of `customers`, sent `together` at a time (1: one after the other, each
 * its own transaction; more: the service gathers those arriving together into batches, as under
 * load), and writes their parameters to the table `table`: a pgbench script that replays them.
 */
export async function captureConsumeScript(
  ctx: CaptureContext,
  customers: number[],
  together: number,
  table: string,
): Promise<ConsumeScript> {
  const log = join(ctx.dir, `${table}.jsonl`);
  writeFileSync(log, '');
  const preload = ctx.transpile('statement-capture.ts');
  const instance = await ctx.start(['-r', preload], { CAPTURE_FILE: log });
  const eventIds: string[] = [];
  try {
    for (let g = 0; g < customers.length; g += together) {
      const group = customers.slice(g, g + together);
      // the first consume of a customer in a new process reads its periods; the second is the
      // steady state (its periods remembered: one state read)
      for (const n of [1, 2]) {
        const statuses = await Promise.all(
          group.map((customer) => ctx.consume(instance.port, customer, `pgbcap-${customer}-${n}`)),
        );
        if (statuses.some((s) => s !== 201))
          throw new Error(`a captured consume answered ${statuses.join(', ')}`);
      }
      eventIds.push(...group.map((customer) => `pgbcap-${customer}-2`));
    }
  } finally {
    await instance.stop();
  }
  const queries: CapturedQuery[] = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  // the transactions holding the second consumes, each once
  const byInsert = new Map<number, string[]>();
  for (const e of eventIds) {
    const insert = insertOf(queries, e);
    byInsert.set(insert, [...(byInsert.get(insert) ?? []), e]);
  }
  const transactions = [...byInsert].map(([insert, events]) => ({
    events,
    queries: transactionOf(queries, insert),
  }));
  const texts = (t: (typeof transactions)[number]) => t.queries.map((q) => q.text).join('\0');
  if (transactions.some((t) => texts(t) !== texts(transactions[0])))
    throw new Error("the captured consumes' transactions differ in their statements");

  // one column per parameter of each statement, one row per transaction
  const first = transactions[0].queries;
  const columns = first.flatMap((q, s) => q.values.map((_, k) => `s${s}p${k + 1}`));
  const rows = transactions.map((t) =>
    t.queries.flatMap((q) => q.values.map((v, p) => idsDrawnByInsert(q, p, v))),
  );
  await ctx.db.query(
    `CREATE TABLE ${table} (k int PRIMARY KEY, ${columns.map((c) => `${c} text`).join(', ')})`,
  );
  for (const [k, values] of rows.entries())
    await ctx.db.query(
      `INSERT INTO ${table} VALUES (${[k, ...values].map((_, i) => `$${i + 1}`).join(', ')})`,
      [k, ...values],
    );
  // the ids that must be new every time: the event ids (`pgbcap-…`) and the audit records' (`aud_…`),
  // made new by a plain replace of their prefix, in the columns that hold them
  const fresh = (c: string, i: number) =>
    rows.some((values) => /pgbcap-|aud_/.test(values[i] ?? ''))
      ? `replace(replace(${c}, 'pgbcap-', 'pgbcap-' || :n || '-'), 'aud_', 'aud_' || :n || '_') AS ${c}`
      : c;
  const lines = [
    `\\set k random(0, ${transactions.length - 1})`,
    '\\set n random(1, 1000000000000)',
    `SELECT ${columns.map(fresh).join(', ')} FROM ${table} WHERE k = :k \\gset`,
    ...first.map((q, s) => `${pgbenchStatement(q.text, (p) => `:s${s}p${p}`)};`),
  ];
  return { script: lines.join('\n') + '\n', sizes: transactions.map((t) => t.events.length) };
}

/** The index of the insert of the record of `eventId`. */
function insertOf(queries: CapturedQuery[], eventId: string): number {
  const insert = queries.findIndex(
    (q) => q.name?.startsWith('usage.insert-many') && q.values.some((v) => v?.includes(eventId)),
  );
  if (insert < 0) throw new Error(`no insert of ${eventId} captured`);
  return insert;
}

/** The statements of the transaction of the insert at `insert`, from its begin to its commit. */
function transactionOf(queries: CapturedQuery[], insert: number): CapturedQuery[] {
  const { pid } = queries[insert];
  const same = queries.map((q, i) => [q, i] as const).filter(([q]) => q.pid === pid);
  const begin = same.filter(([q, i]) => i < insert && /^\s*(START TRANSACTION|BEGIN)\b/i.test(q.text)).pop();
  const commit = same.find(([q, i]) => i > insert && /^\s*COMMIT\b/i.test(q.text));
  if (!begin || !commit) throw new Error(`the transaction of the insert at ${insert} was not captured whole`);
  return same.filter(([, i]) => i >= begin[1] && i <= commit[1]).map(([q]) => q);
}

/** The record ids the state read drew, given to the insert (its 16th parameter): drawn by the insert instead. */
function idsDrawnByInsert(q: CapturedQuery, p: number, v: string | null): string | null {
  if (!q.name?.startsWith('usage.insert-many') || p !== 15 || v === null) return v;
  return `{${v
    .slice(1, -1)
    .split(',')
    .map(() => 'NULL')
    .join(',')}}`;
}

/** `text` on one line, its `$n` as the pgbench variables `variable(n)`. */
function pgbenchStatement(text: string, variable: (n: number) => string): string {
  return (
    text
      .replace(/--[^\n]*/g, '')
      // an array slice's colon (`a[f:t]`) would read as a pgbench variable
      .replace(/(?<!:):(?=[A-Za-z_])/g, ': ')
      .replace(/\$(\d+)/g, (_, n: string) => variable(Number(n)))
      .replace(/\s*\n\s*/g, ' ')
      .trim()
  );
}
