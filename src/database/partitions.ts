import type { DataSource, EntityManager } from 'typeorm';

/**
 * A table partitioned by range of one time column (docs/operations.md#partitioned-tables): a
 * partition per UTC month or day, named `<table>_p<yyyymm>` or `<table>_p<yyyymmdd>`, and a
 * DEFAULT partition `<table>_default` that takes any row no partition covers, so that a write
 * never fails for want of one.
 */
export interface PartitionedTable {
  table: string;
  unit: 'month' | 'day';
}

/** The start of the UTC month or day holding `at`. */
export function partitionStart(unit: PartitionedTable['unit'], at: Date): Date {
  return unit === 'month'
    ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
    : new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

/** The start of the partition after the one starting at `start`. */
export function nextPartitionStart(unit: PartitionedTable['unit'], start: Date): Date {
  return unit === 'month'
    ? new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1))
    : new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + 1));
}

/** The name of the partition of `table` starting at `start`. */
export function partitionName({ table, unit }: PartitionedTable, start: Date): string {
  const digits = start.toISOString().slice(0, unit === 'month' ? 7 : 10);
  return `${table}_p${digits.replace(/-/g, '')}`;
}

/** The start of the partition named `name` of `table` (null: not one of its dated partitions). */
export function startOfPartition({ table, unit }: PartitionedTable, name: string): Date | null {
  const match = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})?$`).exec(name);
  if (!match || (unit === 'day') !== (match[3] !== undefined)) return null;
  return new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3] ?? 1)));
}

/** The names of the dated partitions of `table`, with their starts, oldest first. */
export async function listPartitions(
  db: DataSource | EntityManager,
  spec: PartitionedTable,
): Promise<Array<{ name: string; start: Date }>> {
  const rows: Array<{ name: string }> = await db.query(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [spec.table],
  );
  return rows
    .map(({ name }) => ({ name, start: startOfPartition(spec, name) }))
    .filter((p): p is { name: string; start: Date } => p.start !== null)
    .sort((a, b) => a.start.getTime() - b.start.getTime());
}

/**
 * Creates the partitions of `spec` from the one holding `from` up to the one holding `to`, those
 * missing. A range for which the DEFAULT partition already holds rows is skipped (its creation
 * would fail): those rows stay readable there, the metrics show them, and
 * docs/operations.md#partitioned-tables says how to move them. Answers the names created.
 */
export async function createPartitions(
  db: DataSource | EntityManager,
  spec: PartitionedTable,
  column: string,
  from: Date,
  to: Date,
): Promise<string[]> {
  const existing = new Set((await listPartitions(db, spec)).map((p) => p.name));
  const created: string[] = [];
  for (
    let start = partitionStart(spec.unit, from);
    start <= to;
    start = nextPartitionStart(spec.unit, start)
  ) {
    const name = partitionName(spec, start);
    if (existing.has(name)) continue;
    const end = nextPartitionStart(spec.unit, start);
    const [{ taken }]: Array<{ taken: boolean }> = await db.query(
      `SELECT EXISTS (SELECT 1 FROM ${spec.table}_default WHERE ${column} >= $1 AND ${column} < $2) AS taken`,
      [start, end],
    );
    if (taken) continue;
    await db.query(
      `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${spec.table}
         FOR VALUES FROM ('${start.toISOString()}') TO ('${end.toISOString()}')`,
    );
    created.push(name);
  }
  return created;
}

/**
 * Drops the partitions of `spec` that end at or before `before`, detached first (a partition
 * still referenced by a foreign key cannot go: drop the referencing table's first). Answers the
 * names dropped.
 */
export async function dropPartitionsBefore(
  db: DataSource | EntityManager,
  spec: PartitionedTable,
  before: Date,
): Promise<string[]> {
  const dropped: string[] = [];
  for (const { name, start } of await listPartitions(db, spec)) {
    if (nextPartitionStart(spec.unit, start) > before) break;
    await db.query(`ALTER TABLE ${spec.table} DETACH PARTITION ${name}`);
    await db.query(`DROP TABLE ${name}`);
    dropped.push(name);
  }
  return dropped;
}

/**
 * First key of the partition upkeep's advisory lock, the same on every replica; the second names
 * the tables kept: 1 the ledger's, 2 the events'.
 */
export const PARTITION_UPKEEP_LOCK = 0x4c454447;

/** A partitioned table and the column it is partitioned on. */
export interface PartitionedColumn {
  spec: PartitionedTable;
  column: string;
}

/**
 * The upkeep of related partitioned tables, in the current transaction, by one replica at a time:
 * tries the advisory lock `lock` (null when another replica holds it), then makes each table's
 * missing partitions from the one holding `from` to the one holding `to`, `tables` in order (a
 * table before those that reference it), and with `dropBefore` drops the partitions that end at
 * or before it, in the reverse order. A partition is made or dropped under a brief lock of its
 * whole table: a run waits for it 5 seconds at most (the next run tries again) rather than queue
 * every write of the table behind it.
 */
export async function maintainPartitions(
  tx: EntityManager,
  lock: [number, number],
  tables: readonly PartitionedColumn[],
  from: Date,
  to: Date,
  dropBefore: Date | null,
): Promise<{ created: string[]; dropped: string[] } | null> {
  const [{ locked }]: Array<{ locked: boolean }> = await tx.query(
    `SELECT pg_try_advisory_xact_lock($1, $2) AS locked`,
    lock,
  );
  if (locked !== true) return null;
  await tx.query(`SET LOCAL lock_timeout = '5s'`);
  const created: string[] = [];
  const dropped: string[] = [];
  for (const { spec, column } of tables)
    created.push(...(await createPartitions(tx, spec, column, from, to)));
  if (dropBefore)
    for (const { spec } of [...tables].reverse())
      dropped.push(...(await dropPartitionsBefore(tx, spec, dropBefore)));
  return { created, dropped };
}

/** Rows in the DEFAULT partition of each of `tables` (they belong to no dated partition: none should). */
export async function defaultPartitionRows(
  db: DataSource | EntityManager,
  tables: readonly PartitionedColumn[],
): Promise<Array<{ table: string; rows: number }>> {
  const out: Array<{ table: string; rows: number }> = [];
  for (const { spec } of tables) {
    const [{ n }]: Array<{ n: number }> = await db.query(
      `SELECT count(*)::int AS n FROM ${spec.table}_default`,
    );
    out.push({ table: spec.table, rows: n });
  }
  return out;
}

/**
 * Partitions a statement names in its text, for `eachPartition`: the `count` partitions of a
 * table's `unit` up to the one holding `at`, as their bounds (SQL literals, oldest first,
 * `count + 1` of them), and a key for the statement's name (the newest one's start).
 */
export interface NamedPartitions {
  readonly key: string;
  readonly bounds: readonly string[];
}

export function namedPartitions(unit: PartitionedTable['unit'], at: Date, count: number): NamedPartitions {
  const newest = partitionStart(unit, at);
  const starts = [nextPartitionStart(unit, newest), newest];
  for (let k = 1; k < count; k++) {
    const start = partitionStart(unit, new Date(starts[starts.length - 1].getTime() - 1));
    starts.push(start);
  }
  return {
    key: newest.toISOString().slice(0, unit === 'month' ? 7 : 10),
    bounds: starts.reverse().map((s) => `timestamptz '${s.toISOString()}'`),
  };
}

/** A range of `column` asked for (SQL expressions; `to` excluded; an absent end is open): the partitions outside it are skipped. */
export interface ColumnRange {
  from?: string;
  to?: string;
}

/**
 * The first `limit` rows of `select` (a `SELECT` over alias `t` of a partitioned table, its
 * `WHERE` open to more conditions) in `order` of `(t.column, t.id)`, looked for in each range of
 * `named` in turn (newest first for `DESC`): the ranges after and before the named ones, and each
 * named partition, whose bounds are written into the text.
 *
 * A statement prepared once runs with a generic plan, which cannot know how many rows one key
 * has in a partition. Over several partitions it may then sort every row of the key rather than
 * read one partition's index in order (the partitions made ahead are empty, so scanning them
 * costs nothing); with the bounds in its text each query plans over one partition, whose index
 * gives the order. The queries run in turn and stop at the `limit`-th row (`Append` under
 * `LIMIT`); one whose range misses `within` is skipped without a probe.
 */
export function eachPartition(
  named: NamedPartitions,
  select: string,
  t: string,
  column: string,
  order: 'ASC' | 'DESC',
  limit: string,
  within?: ColumnRange,
): string {
  const { bounds } = named;
  const ranges: Array<{ lo?: string; hi?: string }> = [{ hi: bounds[0] }];
  for (let k = 0; k + 1 < bounds.length; k++) ranges.push({ lo: bounds[k], hi: bounds[k + 1] });
  ranges.push({ lo: bounds[bounds.length - 1] });
  if (order === 'DESC') ranges.reverse();
  const queries = ranges.map(({ lo, hi }) => {
    const conditions = [
      lo && `${t}.${column} >= ${lo}`,
      hi && `${t}.${column} < ${hi}`,
      within?.to && lo && `${within.to} > ${lo}`,
      within?.from && hi && `${within.from} < ${hi}`,
    ].filter(Boolean);
    return `(${select} AND ${conditions.join(' AND ')} ORDER BY ${t}.${column} ${order}, ${t}.id ${order} LIMIT ${limit})`;
  });
  return `${queries.join('\n UNION ALL ')}\n LIMIT ${limit}`;
}
