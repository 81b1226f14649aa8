import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { AppConfig } from '../src/config/app-config';
import { Statement, Statements } from '../src/database/statements';
import type { Transactions } from '../src/database/transactional';
import { createTestDatabase } from './support/database';

/**
 * `Statements` on a real PostgreSQL: a hot statement runs as a named prepared statement (or
 * unnamed, with prepared statements off) with exactly the values its parameters carry, on the
 * current unit of work's transaction when one is open and on the pool outside one; its errors are
 * TypeORM's `QueryFailedError`. It never begins or commits: the unit of work does.
 */
describe('Statements', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataSource: DataSource;

  /** `Statements` whose current transaction is `current()`'s manager (the data source's: none open). */
  const statementsOf = async (prepared: boolean, current: () => EntityManager = () => dataSource.manager) => {
    const config = {
      get: (name: string) => ({ DB_PREPARED_STATEMENTS: prepared, DATABASE_URL: db.url })[name],
    };
    const transactions = {
      get tx() {
        return current();
      },
    } as unknown as Transactions;
    const statements = new Statements(dataSource, config as unknown as AppConfig, transactions);
    await statements.onModuleInit();
    return statements;
  };

  /** Every kind of value the hot statements pass, with characters that need care. */
  const ECHO: Statement = {
    name: 'test.echo',
    text: `SELECT $1::text AS t, $2::text[] AS a, $3::timestamptz AS d, $4::numeric[]::text[] AS n, $5::int AS i,
                  $6::timestamptz[] AS ds, $7::text AS absent, $8::bigint AS b`,
  };
  const values = [
    `O'Reilly \\ "quoted" ü ✓`,
    ['a,b', '{c}', 'q"u\\o', null, ' spaced ', '', 'NULL'],
    new Date('2026-01-31T23:59:59.999Z'),
    ['1.000001', '-2', '0'],
    42,
    [new Date('2024-02-29T00:00:00.000Z'), new Date(0)],
    null,
    9007199254740993n,
  ];
  const echoed = {
    t: values[0],
    a: values[1],
    d: values[2],
    n: values[3],
    i: 42,
    ds: values[5],
    absent: null,
    b: '9007199254740993',
  };

  const PID: Statement = { name: 'test.pid', text: 'SELECT pg_backend_pid() AS pid, $1::int AS n' };
  const PROBE: Statement = {
    name: 'test.probe',
    text: 'SELECT count(*)::int AS n FROM statements_probe WHERE v = $1',
  };
  /** The statement names prepared on `em`'s connection. */
  const preparedOn = async (em: EntityManager): Promise<string[]> =>
    (
      (await em.query('SELECT name FROM pg_prepared_statements ORDER BY name')) as Array<{ name: string }>
    ).map((r) => r.name);

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
    await dataSource.query('CREATE TABLE statements_probe (v text)');
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('runs a statement by name, prepared once on its connection, with exactly its values', async () => {
    const statements = await statementsOf(true);
    expect(statements.prepared).toBe(true);
    const runner = dataSource.createQueryRunner();
    try {
      expect(await statements.rows(runner.manager, ECHO, values)).toEqual([echoed]);
      // again on the same connection: the prepared statement serves, the same answer
      expect(await statements.rows(runner.manager, ECHO, values)).toEqual([echoed]);
      expect(await preparedOn(runner.manager)).toEqual(['test.echo']);
      const result = await statements.run(runner.manager, ECHO, values);
      expect(result.rowCount).toBe(1);
      expect(result.rows).toEqual([echoed]);
    } finally {
      await runner.release();
    }
  });

  it('runs unnamed when prepared statements are off (a pooler that cannot keep them), with the same answer', async () => {
    const statements = await statementsOf(false);
    expect(statements.prepared).toBe(false);
    const runner = dataSource.createQueryRunner();
    // a name of its own: the pool's connections may hold those the test before prepared
    const unnamed = { ...ECHO, name: 'test.echo-off' };
    try {
      expect(await statements.rows(runner.manager, unnamed, values)).toEqual([echoed]);
      expect(await preparedOn(runner.manager)).not.toContain(unnamed.name);
    } finally {
      await runner.release();
    }
  });

  it("without a manager, runs on the current transaction's connection and sees its writes; outside one, on the pool", async () => {
    const runner = dataSource.createQueryRunner();
    let current: EntityManager = dataSource.manager;
    const statements = await statementsOf(true, () => current);
    try {
      await runner.connect();
      const [{ pid: own }] = (await runner.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
      await runner.startTransaction();
      await runner.query(`INSERT INTO statements_probe VALUES ('uncommitted')`);
      current = runner.manager;
      expect(await statements.rows(undefined, PID, [1])).toEqual([{ pid: own, n: 1 }]);
      expect(await statements.rows(undefined, PROBE, ['uncommitted'])).toEqual([{ n: 1 }]);
      // no transaction open: the pool, which sees only what committed; nothing began or committed there
      current = dataSource.manager;
      const [outside] = await statements.rows<{ pid: number }>(undefined, PID, [2]);
      expect(outside.pid).not.toBe(own);
      expect(await statements.rows(undefined, PROBE, ['uncommitted'])).toEqual([{ n: 0 }]);
      // a manager given explicitly wins over the current one
      expect(await statements.rows(runner.manager, PROBE, ['uncommitted'])).toEqual([{ n: 1 }]);
      await runner.rollbackTransaction();
    } finally {
      await runner.release();
    }
    expect(await dataSource.query(`SELECT v FROM statements_probe WHERE v = 'uncommitted'`)).toEqual([]);
  });

  it("answers an error as QueryFailedError with the statement's text and values; it aborts the transaction, which commits nothing", async () => {
    const runner = dataSource.createQueryRunner();
    let current: EntityManager = dataSource.manager;
    const statements = await statementsOf(true, () => current);
    const DIVIDE: Statement = { name: 'test.divide', text: 'SELECT 1 / $1::int AS q' };
    const INSERT: Statement = { name: 'test.insert', text: 'INSERT INTO statements_probe VALUES ($1)' };
    // outside a transaction
    const error = await statements.rows(undefined, DIVIDE, [0]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(QueryFailedError);
    expect(error).toMatchObject({ query: DIVIDE.text, parameters: [0], driverError: { code: '22012' } });
    try {
      await runner.connect();
      await runner.startTransaction();
      current = runner.manager;
      await statements.run(undefined, INSERT, ['before']);
      await expect(statements.run(undefined, DIVIDE, [0])).rejects.toBeInstanceOf(QueryFailedError);
      // the transaction is aborted: nothing more runs in it
      await expect(statements.run(undefined, INSERT, ['after'])).rejects.toMatchObject({
        driverError: { code: '25P02' },
      });
      await runner.rollbackTransaction();
    } finally {
      await runner.release();
    }
    expect(await dataSource.query(`SELECT v FROM statements_probe WHERE v IN ('before', 'after')`)).toEqual(
      [],
    );
  });
});
