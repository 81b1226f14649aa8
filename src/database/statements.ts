import { Global, Injectable, Module } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { AppConfig } from '../config/app-config';

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
 * Inside a transaction the statement runs on the transaction's own connection; errors are
 * TypeORM's `QueryFailedError`, as from `EntityManager.query`.
 */
@Injectable()
export class Statements {
  private readonly prepare: boolean;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    config: AppConfig,
  ) {
    this.prepare = config.get('DB_PREPARED_STATEMENTS');
  }

  async run<R extends QueryResultRow = QueryResultRow>(
    em: EntityManager | undefined,
    statement: Statement,
    values: unknown[],
  ): Promise<QueryResult<R>> {
    const query = this.prepare
      ? { name: statement.name, text: statement.text, values }
      : { text: statement.text, values };
    const runner = em?.queryRunner;
    try {
      if (runner) return await ((await runner.connect()) as PoolClient).query<R>(query);
      return await ((this.dataSource.driver as PostgresDriver).master as Pool).query<R>(query);
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

/** `Statements`, for every module. */
@Global()
@Module({ providers: [Statements], exports: [Statements] })
export class StatementsModule {}
