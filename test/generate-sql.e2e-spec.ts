import { DiscoveryModule } from '@nestjs/core';
import { Test, TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
import { formatSql, generate, GeneratedCall, render, undecorated } from '../scripts/generate-sql';
import { AppConfig } from '../src/config/app-config';
import { buildDataSourceOptions } from '../src/database/data-source-options';
import { Statements } from '../src/database/statements';
import { TransactionsModule } from '../src/database/transactional';
import { createTestDatabase } from './support/database';
import { GenerateSqlFixtureRepository } from './support/generate-sql-fixture.repository';

/**
 * `npm run sql` (scripts/generate-sql.ts) on a small Nest module with one marked repository: the SQL
 * of each marked call, through TypeORM and through `pg` directly, rolled back, and the file it makes.
 */
describe('generate-sql', () => {
  const FIXTURE = 'test/support/generate-sql-fixture.repository.ts';
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let app: TestingModule;
  let calls: GeneratedCall[];

  beforeAll(async () => {
    db = await createTestDatabase();
    const config = { get: (name: string) => ({ DB_PREPARED_STATEMENTS: true, DATABASE_URL: db.url })[name] };
    app = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot(buildDataSourceOptions({ url: db.url })),
        TransactionsModule,
        DiscoveryModule,
      ],
      providers: [{ provide: AppConfig, useValue: config }, Statements, GenerateSqlFixtureRepository],
    }).compile();
    await app.init();
    calls = await generate(app, (type) => (type === GenerateSqlFixtureRepository ? FIXTURE : undefined));
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('calls each marked method once per call, sorted, and records the SQL it sent', () => {
    expect(calls.map((c) => [c.className, c.method, c.name, c.error])).toEqual([
      ['GenerateSqlFixtureRepository', 'countByName', undefined, undefined],
      ['GenerateSqlFixtureRepository', 'find', 'deleted too', undefined],
      ['GenerateSqlFixtureRepository', 'find', 'live', undefined],
      ['GenerateSqlFixtureRepository', 'insert', undefined, undefined],
      ['GenerateSqlFixtureRepository', 'where', 'outside a transaction', undefined],
      ['GenerateSqlFixtureRepository', 'where', 'params made in the transaction', undefined],
    ]);
    const [count, findAll, findLive, insert, outside, inside] = calls.map((c) => c.sql);
    // through pg directly (Statements, a named prepared statement)
    expect(count).toEqual([
      expect.stringMatching(/^SELECT count\(\*\)::int AS n\s+FROM projects\s+WHERE name = \$1$/),
    ]);
    // through TypeORM: parameters stay $1...; the live one filters deleted rows out
    expect(findLive).toEqual([expect.stringMatching(/FROM "projects".*"id" = \$1.*"deleted_at" IS NULL/)]);
    expect(findAll).toEqual([expect.not.stringMatching(/IS NULL/)]);
    expect(insert).toEqual(['INSERT INTO projects (id, name) VALUES ($1, $2)']);
    // params from a function, made in the call's transaction: what it sent is not the call's
    expect(inside).toEqual(['SELECT $1::int AS inside']);
    expect(outside).toEqual(['SELECT $1::int AS outside']);
  });

  it('rolls every call back', async () => {
    const client = new Client({ connectionString: db.url });
    await client.connect();
    const { rows } = await client.query("SELECT count(*)::int AS n FROM projects WHERE id = 'prj_generated'");
    await client.end();
    expect(rows).toEqual([{ n: 0 }]);
  });

  it('writes one block per statement under a -- Class.method header, in the module of the class file', () => {
    const files = render(calls);
    expect([...files.keys()]).toEqual(['support.sql']);
    const text = files.get('support.sql')!;
    const headers = text.split('\n').filter((l) => l.startsWith('-- GenerateSqlFixtureRepository'));
    expect(headers).toEqual([
      '-- GenerateSqlFixtureRepository.countByName',
      '-- GenerateSqlFixtureRepository.find (deleted too)',
      '-- GenerateSqlFixtureRepository.find (live)',
      '-- GenerateSqlFixtureRepository.insert',
      '-- GenerateSqlFixtureRepository.where (outside a transaction)',
      '-- GenerateSqlFixtureRepository.where (params made in the transaction)',
    ]);
    expect(text).toContain(
      '-- GenerateSqlFixtureRepository.countByName\nSELECT count(*)::int AS n\n FROM projects\nWHERE name = $1\n\n',
    );
    expect(text).toMatch(
      /-- GenerateSqlFixtureRepository\.find \(live\)\nSELECT\n {2}"Project"\."id" AS "Project_id",\n/,
    );
    expect(text).toMatch(/\nFROM "projects" "Project"\nWHERE/);
  });

  it('lists the public repository methods without @GenerateSql', () => {
    expect(undecorated(app, (type) => (type === GenerateSqlFixtureRepository ? FIXTURE : undefined))).toEqual(
      [`GenerateSqlFixtureRepository.unmarked (${FIXTURE})`],
    );
  });

  it('lays out a one-line statement by clause and keeps a written one as written', () => {
    expect(
      formatSql(
        `SELECT "a"."id" AS "a_id", f(x, y) FROM "t" "a" LEFT JOIN "u" ON "u"."id" = "a"."id" WHERE "a"."x" = 'FROM y' ORDER BY 1 FOR UPDATE`,
      ),
    ).toBe(
      [
        'SELECT',
        '  "a"."id" AS "a_id",',
        '  f(x, y)',
        'FROM "t" "a"',
        'LEFT JOIN "u" ON "u"."id" = "a"."id"',
        `WHERE "a"."x" = 'FROM y'`,
        'ORDER BY 1',
        'FOR UPDATE',
      ].join('\n'),
    );
    expect(formatSql('WITH x AS (\n      SELECT 1)\n    SELECT * FROM x   ')).toBe(
      'WITH x AS (\n  SELECT 1)\nSELECT * FROM x',
    );
    // a blank line separates two statements in the file: none is kept inside one
    expect(formatSql('\n    SELECT a\n\n      FROM t\n  ')).toBe('SELECT a\nFROM t');
  });
});
