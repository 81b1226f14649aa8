/**
 * `npm run sql`: writes the SQL of every method marked `@GenerateSql` (src/database/generate-sql.ts)
 * to src/queries/<module>.sql, so that a review shows each statement a change adds or alters. It
 * migrates a fresh database (an embedded PostgreSQL, or a new database on DATABASE_URL's server),
 * writes the rows the params name (generate-sql.seed.sql), boots the application, calls each marked
 * method with its params in a transaction that is always rolled back, and records what reaches
 * PostgreSQL: TypeORM's queries through its logger, the statements `Statements` sends through `pg`
 * by wrapping pg's `query`.
 * It also lists the public methods of *.repository.ts providers that carry no `@GenerateSql`.
 * `--check` writes nothing and fails when a file would change or such a method exists.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { INestApplicationContext, Module } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner, NestFactory } from '@nestjs/core';
import { getDataSourceToken } from '@nestjs/typeorm';
import { Client, Pool } from 'pg';
import ts from 'typescript';
import { DataSource } from 'typeorm';
import { startEmbeddedPostgres } from '../src/database/embedded';
import { GENERATE_SQL, GenerateSqlCall } from '../src/database/generate-sql';
import { migrateWithLock } from '../src/database/migrator';
import { runInTransaction, Transactions } from '../src/database/transactional';

const ROOT = join(__dirname, '..');
const QUERIES_DIR = join(ROOT, 'src', 'queries');

/** The SQL one call of a marked method sent, in order. */
export interface GeneratedCall {
  className: string;
  method: string;
  name?: string;
  /** The file that exports the class, relative to the project (when it can be found). */
  file?: string;
  sql: string[];
  error?: string;
}

/** Where the statements of the call being generated go (none outside a call: background work is not recorded). */
const recording = new AsyncLocalStorage<string[]>();
/**
 * `Batcher` runs a batch outside its callers' async context, in that of its module's loading:
 * `main` loads the application in this store, and what a batch sends goes to the current call's.
 */
const BATCHES: string[] = [];
let currentCall: string[] | undefined;
/** Transaction control is left out: the transaction is the script's, and a savepoint says nothing of the SQL. */
const TRANSACTION_CONTROL =
  /^\s*(START TRANSACTION|BEGIN|COMMIT|ROLLBACK|ROLLBACK TO SAVEPOINT \w+|(RELEASE )?SAVEPOINT \w+)\s*;?\s*$/i;
const record = (text: unknown) => {
  const store = recording.getStore();
  const sql = store === BATCHES ? currentCall : store;
  if (sql && typeof text === 'string' && !TRANSACTION_CONTROL.test(text)) sql.push(text);
};

/**
 * Records the statements sent through `pg` directly: `Statements` calls `query` with one argument (a
 * query config or a text), on a client or on a pool. TypeORM always passes its parameters too, so
 * its queries (recorded by its logger, see `recordTypeOrm`) are not recorded twice.
 */
export function recordPg(): void {
  for (const target of [Client.prototype, Pool.prototype] as Array<{
    query: (...args: unknown[]) => unknown;
  }>) {
    const query = target.query;
    if ((query as { recorded?: boolean }).recorded) continue;
    const wrapped = function (this: unknown, ...args: unknown[]) {
      if (args.length === 1)
        record(typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text);
      return query.apply(this, args);
    };
    target.query = Object.assign(wrapped, { recorded: true });
  }
}

/** Records TypeORM's queries through the data source's logger. */
export function recordTypeOrm(dataSource: DataSource): void {
  const logQuery = dataSource.logger.logQuery.bind(dataSource.logger);
  dataSource.logger.logQuery = (query, parameters, runner) => {
    record(query);
    return logQuery(query, parameters, runner);
  };
}

/** Thrown at the end of each call so that its transaction rolls back. */
class RollBack extends Error {}

/**
 * Calls every provider method marked `@GenerateSql`, once per call it declares, each in a
 * transaction rolled back at its end; sorted by class, method and call name.
 */
export async function generate(
  app: INestApplicationContext,
  fileOf: (type: object) => string | undefined = sourceFile,
): Promise<GeneratedCall[]> {
  recordPg();
  recordTypeOrm(app.get<DataSource>(getDataSourceToken()));
  const results: GeneratedCall[] = [];
  const host = app.get(Transactions);
  for (const { instance, methods } of providers(app)) {
    for (const method of methods) {
      const calls = Reflect.getMetadata(GENERATE_SQL, instance[method]) as GenerateSqlCall[] | undefined;
      for (const { params = [], name, transaction } of calls ?? []) {
        const sql: string[] = [];
        const result: GeneratedCall = { className: instance.constructor.name, method, name, sql };
        result.file = fileOf(instance.constructor);
        const call = async () => {
          const args =
            typeof params === 'function'
              ? await params(instance as never, { manager: () => host.tx })
              : params;
          currentCall = sql;
          await recording.run(sql, () => instance[method](...args));
        };
        try {
          if (transaction === false) await call();
          else
            await runInTransaction(host, async () => {
              await call();
              throw new RollBack();
            });
        } catch (error) {
          if (!(error instanceof RollBack)) result.error = (error as Error).message;
        } finally {
          currentCall = undefined;
        }
        results.push(result);
      }
    }
  }
  const key = (r: GeneratedCall) => [r.className, r.method, r.name ?? ''];
  return results.sort((a, b) => compareKeys(key(a), key(b)));
}

const compareKeys = (a: string[], b: string[]): number =>
  a.reduce((order, part, i) => order || (part < b[i] ? -1 : part > b[i] ? 1 : 0), 0);

type Instance = Record<string, (...args: unknown[]) => Promise<unknown>>;

/** Each provider instance once, with its prototype's method names. */
function providers(app: INestApplicationContext): Array<{ instance: Instance; methods: string[] }> {
  const scanner = app.get(MetadataScanner);
  const seen = new Set<unknown>();
  return app
    .get(DiscoveryService)
    .getProviders()
    .map((wrapper) => wrapper.instance as Instance | undefined)
    .filter((instance): instance is Instance => {
      if (!instance || typeof instance !== 'object' || seen.has(instance.constructor)) return false;
      seen.add(instance.constructor);
      return true;
    })
    .map((instance) => ({ instance, methods: scanner.getAllMethodNames(Object.getPrototypeOf(instance)) }));
}

/** The file under src/ that exports `type`, from Node's module cache. */
function sourceFile(type: object): string | undefined {
  for (const [path, loaded] of Object.entries(require.cache)) {
    const exports = loaded?.exports as Record<string, unknown> | undefined;
    if (exports && Object.values(exports).includes(type)) return relative(ROOT, path).split(sep).join('/');
  }
  return undefined;
}

/** The public methods of `*.repository.ts` providers that carry no `@GenerateSql`, as `Class.method (file)`. */
export function undecorated(app: INestApplicationContext, fileOf = sourceFile): string[] {
  const missing: string[] = [];
  for (const { instance } of providers(app)) {
    const file = fileOf(instance.constructor);
    if (!file?.endsWith('.repository.ts')) continue;
    const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest);
    const declaration = source.statements.find(
      (s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === instance.constructor.name,
    );
    for (const member of declaration?.members ?? []) {
      const hidden = ts
        .getModifiers(member as ts.MethodDeclaration)
        ?.some((m) => m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword);
      if (!ts.isMethodDeclaration(member) || hidden || !ts.isIdentifier(member.name)) continue;
      const method = member.name.text;
      if (!Reflect.getMetadata(GENERATE_SQL, instance[method]))
        missing.push(`${instance.constructor.name}.${method} (${file})`);
    }
  }
  return missing.sort();
}

/** The .sql file of each module (the folder under src/ of the class's file), by file name. */
export function render(calls: GeneratedCall[]): Map<string, string> {
  const files = new Map<string, string[]>();
  for (const call of calls) {
    // the folder under src/ (or under test/, for a fixture)
    const parts = call.file?.split('/') ?? [];
    const module = parts.length > 2 ? parts[1] : 'other';
    const header = `-- ${call.className}.${call.method}${call.name ? ` (${call.name})` : ''}`;
    const blocks = files.get(module) ?? [
      `-- Generated by \`npm run sql\` from the @GenerateSql methods: do not edit.`,
    ];
    for (const sql of call.sql) blocks.push(`${header}\n${formatSql(sql)}`);
    files.set(module, blocks);
  }
  return new Map([...files].map(([module, blocks]) => [`${module}.sql`, `${blocks.join('\n\n')}\n`]));
}

/** Clauses that start a line of their own in a statement written on one line (TypeORM's). */
const CLAUSE =
  /^(SELECT|FROM|WHERE|GROUP BY|HAVING|ORDER BY|LIMIT|OFFSET|RETURNING|VALUES|SET|ON CONFLICT|UNION( ALL)?|(INNER |LEFT |RIGHT |FULL |CROSS )?JOIN|FOR (NO KEY )?UPDATE|FOR (KEY )?SHARE|INSERT INTO|UPDATE|DELETE FROM|WITH)\b/;

/**
 * A statement laid out for reading: one written over several lines keeps its lines (dedented, the
 * blank ones dropped); one on a single line (TypeORM's) gets a line per clause, and a line per
 * column of its select list. Parameters stay `$1`, `$2`... Only whitespace outside quotes changes.
 */
export function formatSql(text: string): string {
  // a blank line separates the statements of a file: none inside one
  const lines = text
    .split('\n')
    .map((l) => l.trimEnd())
    .filter(Boolean);
  if (lines.length > 1) {
    const indent = Math.min(...lines.slice(1).map((l) => l.match(/^ */)![0].length));
    return [lines[0].trim(), ...lines.slice(1).map((l) => l.slice(indent))].join('\n');
  }
  text = lines[0]?.trim() ?? '';
  let after = CLAUSE.exec(text)?.[0].length ?? 0;
  const clauses = cutTopLevel(text, (i) => {
    if (i < after || !/\s/.test(text[i - 1]) || /\bDO\s+$/.test(text.slice(0, i))) return false;
    const keyword = CLAUSE.exec(text.slice(i));
    if (keyword) after = i + keyword[0].length;
    return keyword !== null;
  });
  return clauses
    .flatMap((clause) => {
      const select = /^SELECT\s+(DISTINCT\s+)?/.exec(clause);
      if (!select) return [clause];
      const list = clause.slice(select[0].length);
      return [
        select[0].trim(),
        ...cutTopLevel(list, (i) => list[i - 1] === ',').map((column) => `  ${column}`),
      ];
    })
    .join('\n');
}

/** `text` cut where `startsPart(i)` says a part starts, outside quotes and parentheses; the parts trimmed. */
function cutTopLevel(text: string, startsPart: (i: number) => boolean): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      i = end < 0 ? text.length : end;
    } else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0 && i > start && startsPart(i)) {
      parts.push(text.slice(start, i).trim());
      start = i;
    }
  }
  parts.push(text.slice(start).trim());
  return parts.filter(Boolean);
}

/** A fresh migrated database: a new one on DATABASE_URL's server, or an embedded server's. */
async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = process.env.DATABASE_URL;
  if (server) {
    const name = `generate_sql_${randomBytes(4).toString('hex')}`;
    const admin = async (sql: string) => {
      const client = new Client({ connectionString: server });
      await client.connect();
      await client.query(sql).finally(() => client.end());
    };
    await admin(`CREATE DATABASE "${name}"`);
    const url = new URL(server);
    url.pathname = `/${name}`;
    return { url: url.toString(), drop: () => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'generate-sql-pg-'));
  chmodSync(dir, 0o755); // as root, the server runs as the `postgres` user
  const embedded = await startEmbeddedPostgres(join(dir, 'data'), (msg) => console.error(msg));
  return {
    url: embedded.url,
    drop: async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes the rows the calls' params name (scripts/generate-sql.seed.sql). */
async function seed(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(readFileSync(join(__dirname, 'generate-sql.seed.sql'), 'utf8'));
  } finally {
    await client.end();
  }
}

async function main(): Promise<number> {
  const check = process.argv.includes('--check');
  const database = await freshDatabase();
  let app: INestApplicationContext | undefined;
  try {
    await migrateWithLock(database.url);
    await seed(database.url);
    // loaded here, so that the test of this script does not load the whole application; in the
    // batches' store (see BATCHES)
    const { AppModule } = await recording.run(BATCHES, () => import('../src/app.module'));
    const env = {
      DATABASE_URL: database.url,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ADMIN_TOKEN: randomBytes(24).toString('hex'),
      LOG_LEVEL: 'silent',
      DB_MIGRATE_ON_START: 'false',
      // the Postgres store of the rate limits is made only when they are on
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_STORE: 'postgres',
      WEBHOOK_WORKER_ENABLED: 'false',
      EVENTS_SCHEDULER_ENABLED: 'false',
    };
    @Module({ imports: [AppModule.forRoot({ env }), DiscoveryModule] })
    class GenerateSqlModule {}
    app = await NestFactory.createApplicationContext(GenerateSqlModule, { logger: false });
    // statements that name the ledger's months (see `LedgerStatements`) are written for one month
    const { Clock } = await import('../src/common/clock');
    app.get(Clock).now = () => new Date('2026-03-15T12:00:00Z');
    const calls = await generate(app);
    const failed = calls.filter((c) => c.error);
    failed.forEach((c) => console.error(`${c.className}.${c.method}: ${c.error}`));
    const missing = undecorated(app);
    if (missing.length) console.log(`Repository methods without @GenerateSql:\n  ${missing.join('\n  ')}`);
    if (failed.length) return 1;

    const files = render(calls);
    const present = existsSync(QUERIES_DIR) ? readdirSync(QUERIES_DIR).filter((f) => f.endsWith('.sql')) : [];
    const changed = [...new Set([...files.keys(), ...present])].filter(
      (file) =>
        files.get(file) !==
        (present.includes(file) ? readFileSync(join(QUERIES_DIR, file), 'utf8') : undefined),
    );
    if (check) {
      changed.forEach((file) =>
        console.error(`src/queries/${file} is out of date: run npm run sql and commit it`),
      );
      return changed.length || missing.length ? 1 : 0;
    }
    mkdirSync(QUERIES_DIR, { recursive: true });
    for (const file of changed) {
      const text = files.get(file);
      if (text === undefined) rmSync(join(QUERIES_DIR, file));
      else writeFileSync(join(QUERIES_DIR, file), text);
      console.log(
        `src/queries/${file} ${text === undefined ? 'removed (no marked method left)' : 'written'}`,
      );
    }
    console.log(`${calls.length} marked calls, ${missing.length} repository methods unmarked`);
    return 0;
  } finally {
    await app?.close();
    await database.drop();
  }
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
