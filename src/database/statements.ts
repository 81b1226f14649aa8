import { Global, Injectable, Logger, Module, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { AppConfig } from '../config/app-config';
import { probePooler } from './pooler-probe';
import { ReadReplicas } from './read-replicas';
import { Transactions } from './transactional';

/** A hot SQL statement with a name that is unique in the application. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/**
 * Runs the hot statements (customer reads, the steps of a redemption) through the `pg` driver
 * as named prepared statements: PostgreSQL parses and plans each one once per connection
 * instead of on every call, which took a third of the database's and of the driver's time per
 * query in the benchmark. With `DB_PREPARED_STATEMENTS=false` (for PgBouncer before 1.21 in
 * transaction mode, which cannot keep them) the same text runs unnamed.
 *
 * Inside a transaction the statement runs on the transaction's own connection, with a manager
 * outside one on that manager's DataSource (a read replica's), else on the primary; errors are
 * TypeORM's `QueryFailedError`, as from `EntityManager.query`.
 */
@Injectable()
export class Statements implements OnModuleInit {
  private readonly logger = new Logger('Database');
  private prepare: boolean;
  /** Whether `chain` may name prepared statements in SQL (`EXECUTE`): a direct connection, checked at start. */
  private executable = false;
  /** The hot statements each connection has prepared (by a protocol-level `run`), for `chain`. */
  private readonly preparedOn = new WeakMap<PoolClient, Set<string>>();

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
  ) {
    this.prepare = config.get('DB_PREPARED_STATEMENTS');
  }

  /**
   * With prepared statements on, checks at start that DATABASE_URL does not lead to a pooler that
   * cannot keep them (PgBouncer before 1.21 in transaction mode, see `probePooler`): if it does,
   * the statements run unnamed and a warning says how to configure it.
   */
  async onModuleInit(): Promise<void> {
    if (!this.prepare) return;
    try {
      const probe = await probePooler(this.config.get('DATABASE_URL'));
      if (!probe.prepares) {
        this.prepare = false;
        this.logger.warn(
          'DATABASE_URL leads to a transaction pooler that cannot keep prepared statements (PgBouncer before 1.21, ' +
            'or max_prepared_statements = 0): the hot queries run unprepared. Set DB_PREPARED_STATEMENTS=false ' +
            '(or upgrade PgBouncer to 1.21+ with max_prepared_statements > 0) to silence this warning.',
        );
      } else if (probe.transactionPooled) {
        this.logger.log('DATABASE_URL leads to a transaction pooler that keeps prepared statements');
      } else {
        this.executable = true;
      }
    } catch (error) {
      this.logger.warn(
        { err: (error as Error).message },
        'Could not check DATABASE_URL for a transaction pooler; if it leads to PgBouncer before 1.21 in ' +
          'transaction mode, set DB_PREPARED_STATEMENTS=false',
      );
    }
  }

  /** Whether the hot statements run as named prepared statements (after the start-up check). */
  get prepared(): boolean {
    return this.prepare;
  }

  async run<R extends QueryResultRow = QueryResultRow>(
    em: EntityManager | undefined,
    statement: Statement,
    values: unknown[],
  ): Promise<QueryResult<R>> {
    const query = this.prepare
      ? { name: statement.name, text: statement.text, values }
      : { text: statement.text, values };
    // without a manager of its own: the current unit of work's transaction, if one is open
    em ??= this.transactions.tx;
    const runner = em.queryRunner;
    try {
      if (runner) {
        const client = (await runner.connect()) as PoolClient;
        const result = await client.query<R>(query);
        if (this.executable) this.remember(client, statement.name);
        return result;
      }
      // a manager without a transaction runs on its own DataSource's pool (a read replica's, see ReadReplicas)
      const pool = ((em?.connection ?? this.dataSource).driver as PostgresDriver).master as Pool;
      return await pool.query<R>(query);
    } catch (error) {
      throw new QueryFailedError(statement.text, values, error as Error);
    }
  }

  /**
   * Opens a transaction on `em`'s connection with `statement` as its first statement, in one
   * round trip: `BEGIN; <statement>` as one simple query (see `chain`), so the round trip of a
   * lone `BEGIN` is saved (for `inTransactionOpenedByWork`). On a direct connection the statement
   * runs by name (`EXECUTE`) once this connection has prepared it: its first use on each
   * connection takes two round trips, `BEGIN` then the statement prepared. Elsewhere (a pooler)
   * it is written out and planned each time, so keep it small (a row lock by key).
   */
  async begin<R extends QueryResultRow = QueryResultRow>(
    em: EntityManager,
    statement: Statement,
    values: unknown[],
  ): Promise<R[]> {
    if (this.executable) {
      const client = (await em.queryRunner!.connect()) as PoolClient;
      if (!this.preparedOn.get(client)?.has(statement.name)) {
        await this.chain(em, ['BEGIN']);
        return this.rows<R>(em, statement, values);
      }
    }
    const rows = await this.chain<R>(em, ['BEGIN', { statement, values, inline: !this.executable }]);
    return rows![1];
  }

  /**
   * Several steps of `em`'s transaction in one round trip, as one simple query (PostgreSQL runs
   * its statements in order, each with a snapshot of its own, and skips the rest after an
   * error, which aborts the transaction): plain SQL without parameters (`BEGIN`, `COMMIT`), a
   * small statement written out with its values as literals (`inline`: planned each time), or a
   * hot statement that this connection has already prepared, run by name with SQL `EXECUTE` and
   * its values as literals, so its prepared plan serves as it does for `run`. Answers the rows of
   * each part, in order.
   *
   * Answers null, having sent nothing, when a named part cannot run so: the connection has not
   * prepared it yet (its first use on each connection goes through `run`), or the service does
   * not know that it talks to PostgreSQL directly (prepared statements off, or a transaction
   * pooler, which keeps protocol-level prepared statements but knows nothing of SQL `EXECUTE`);
   * the caller then takes its steps one by one.
   */
  async chain<R extends QueryResultRow = QueryResultRow>(
    em: EntityManager,
    parts: Array<string | ChainedStatement>,
  ): Promise<R[][] | null> {
    const client = (await em.queryRunner!.connect()) as PoolClient;
    const prepared = this.preparedOn.get(client);
    const sql: string[] = [];
    for (const part of parts) {
      if (typeof part === 'string') sql.push(part);
      else if (part.inline)
        sql.push(
          part.statement.text.replace(/\$(\d+)/g, (_, n: string) => literal(client, part.values[+n - 1])),
        );
      else if (this.executable && prepared?.has(part.statement.name))
        sql.push(
          `EXECUTE "${part.statement.name}"(${part.values.map((v) => literal(client, v)).join(', ')})`,
        );
      else return null;
    }
    const text = sql.join('; ');
    try {
      // one result for one statement, an array of them for several
      const results = (await client.query<R>(text)) as QueryResult<R> | Array<QueryResult<R>>;
      return Array.isArray(results) ? results.map((r) => r.rows) : [results.rows];
    } catch (error) {
      throw new QueryFailedError(text, [], error as Error);
    }
  }

  private remember(client: PoolClient, name: string): void {
    const names = this.preparedOn.get(client);
    if (names) names.add(name);
    else this.preparedOn.set(client, new Set([name]));
  }

  /** The rows of `statement`. */
  async rows<R extends QueryResultRow = QueryResultRow>(
    em: EntityManager | undefined,
    statement: Statement,
    values: unknown[],
  ): Promise<R[]> {
    return (await this.run<R>(em, statement, values)).rows;
  }
}

/** A part of `Statements.chain`: a hot statement with its values. */
export interface ChainedStatement {
  statement: Statement;
  values: unknown[];
  /** Written out with its values instead of run by name (planned each time: keep it small). */
  inline?: boolean;
}

/**
 * A value as an SQL literal, as `pg` would send it as a parameter: null, text (numbers and
 * bigints as their digits), a `Date` in ISO 8601 (UTC), an array as an array literal, another
 * object as JSON.
 */
function literal(client: PoolClient, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  return client.escapeLiteral(Array.isArray(value) ? arrayLiteral(value) : scalarText(value));
}

const scalarText = (value: unknown): string =>
  value instanceof Date
    ? value.toISOString()
    : typeof value === 'object'
      ? JSON.stringify(value)
      : String(value as string | number | bigint | boolean);

function arrayLiteral(values: unknown[]): string {
  const items = values.map((v) =>
    v === null || v === undefined ? 'NULL' : `"${scalarText(v).replace(/[\\"]/g, (c) => `\\${c}`)}"`,
  );
  return `{${items.join(',')}}`;
}

/** `Statements` and `ReadReplicas` (the data-source level: where a query runs), for every module. */
@Global()
@Module({ providers: [Statements, ReadReplicas], exports: [Statements, ReadReplicas] })
export class StatementsModule {}
