import { DataSource, QueryFailedError } from 'typeorm';
import type { AppConfig } from '../src/config/app-config';
import { Statement, Statements } from '../src/database/statements';
import type { Transactions } from '../src/database/transactional';
import { createTestDatabase } from './support/database';

/**
 * `Statements.chain` (several steps of a transaction in one round trip, hot statements named by
 * SQL `EXECUTE` with their values written as literals), on a real PostgreSQL: the values a
 * chained statement sees are exactly those its parameters would have carried.
 */
describe('Statements.chain', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataSource: DataSource;

  const statementsOf = async (prepared: boolean) => {
    const config = {
      get: (name: string) => ({ DB_PREPARED_STATEMENTS: prepared, DATABASE_URL: db.url })[name],
    };
    const outside = { tx: dataSource.manager } as unknown as Transactions;
    const statements = new Statements(dataSource, config as unknown as AppConfig, outside);
    await statements.onModuleInit();
    return statements;
  };

  /** Every kind of value the hot statements pass, with the characters literals must escape. */
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

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('runs a statement by name only once the connection has prepared it, with the same answer', async () => {
    const statements = await statementsOf(true);
    const runner = dataSource.createQueryRunner();
    try {
      expect(await statements.chain(runner.manager, [{ statement: ECHO, values }])).toBeNull();
      const [direct] = await statements.rows(runner.manager, ECHO, values);
      const chained = await statements.chain(runner.manager, [
        { statement: ECHO, values },
        'SELECT 1 AS one',
      ]);
      expect(chained).toEqual([[direct], [{ one: 1 }]]);
      expect(direct).toEqual({
        t: values[0],
        a: values[1],
        d: values[2],
        n: values[3],
        i: 42,
        ds: values[5],
        absent: null,
        b: '9007199254740993',
      });
      // written out instead of named: the same values
      expect(await statements.chain(runner.manager, [{ statement: ECHO, values, inline: true }])).toEqual([
        [direct],
      ]);
    } finally {
      await runner.release();
    }
  });

  it('never names a statement in SQL when prepared statements are off (a pooler that cannot keep them)', async () => {
    const statements = await statementsOf(false);
    const runner = dataSource.createQueryRunner();
    try {
      await statements.rows(runner.manager, ECHO, values);
      expect(await statements.chain(runner.manager, [{ statement: ECHO, values }])).toBeNull();
      expect(await statements.chain(runner.manager, ['SELECT 2 AS two'])).toEqual([[{ two: 2 }]]);
    } finally {
      await runner.release();
    }
  });

  it('an error stops the chain and aborts its transaction: nothing after it runs, nothing commits', async () => {
    const statements = await statementsOf(true);
    await dataSource.query('CREATE TABLE chain_probe (v text)');
    const runner = dataSource.createQueryRunner();
    try {
      await expect(
        statements.chain(runner.manager, [
          'BEGIN',
          "INSERT INTO chain_probe VALUES ('before')",
          'SELECT 1 / 0',
          "INSERT INTO chain_probe VALUES ('after')",
          'COMMIT',
        ]),
      ).rejects.toBeInstanceOf(QueryFailedError);
      await runner.query('ROLLBACK');
    } finally {
      await runner.release();
    }
    expect(await dataSource.query('SELECT v FROM chain_probe')).toEqual([]);
  });
});
