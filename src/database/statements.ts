import { Global, Injectable, Logger, Module, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { AppConfig } from '../config/app-config';
import { probePooler } from './pooler-probe';
import { ReadReplicas } from './read-replicas';
import { carrying, takeRiders } from './riders';
import { Transactions } from './transactional';

/** A hot SQL statement with a name that is unique in the application. */
export interface Statement {
  readonly name: string;
  readonly text: string;
  /**
   * Takes the unit of work's waiting riders along (see `riders.ts`): a write's last statement,
   * such as its events' insert. Its text starts with `WITH`.
   */
  readonly carrier?: boolean;
}

/**
 * Runs the hot statements (customer reads, the steps of a redemption) through the `pg` driver
 * as named prepared statements: PostgreSQL parses and plans each one once per connection
 * instead of on every call, which was a large share of the database's and of the driver's time
 * per query. With `DB_PREPARED_STATEMENTS=false` (for PgBouncer before 1.21 in
 * transaction mode, which cannot keep them) the same text runs unnamed.
 *
 * Without a manager of its own a statement runs on the current unit of work's transaction (see
 * `Transactions`), if one is open. Inside a transaction the statement runs on the transaction's
 * own connection, with a manager outside one on that manager's DataSource (a read replica's),
 * else on the primary; errors are TypeORM's `QueryFailedError`, as from `EntityManager.query`.
 * Nothing here begins or commits: the unit of work does.
 */
@Injectable()
export class Statements implements OnModuleInit {
  private readonly logger = new Logger('Database');
  private prepare: boolean;

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
    // without a manager of its own: the current unit of work's transaction, if one is open
    em ??= this.transactions.tx;
    const runner = em.queryRunner;
    const riders = statement.carrier && runner ? takeRiders(em) : [];
    if (riders.length > 0) {
      const carried = carrying(statement, values.length, riders);
      statement = carried.statement;
      values = [...values, ...carried.values];
    }
    const query = this.prepare
      ? { name: statement.name, text: statement.text, values }
      : { text: statement.text, values };
    try {
      if (runner) {
        const client = (await runner.connect()) as PoolClient;
        return await client.query<R>(query);
      }
      // a manager without a transaction runs on its own DataSource's pool (a read replica's, see ReadReplicas)
      const pool = ((em?.connection ?? this.dataSource).driver as PostgresDriver).master as Pool;
      return await pool.query<R>(query);
    } catch (error) {
      throw new QueryFailedError(statement.text, values, error as Error);
    }
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

/** `Statements` and `ReadReplicas` (the data-source level: where a query runs), for every module. */
@Global()
@Module({ providers: [Statements, ReadReplicas], exports: [Statements, ReadReplicas] })
export class StatementsModule {}
