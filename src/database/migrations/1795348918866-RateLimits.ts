import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rate-limit counters (src/rate-limit). Generated, then made UNLOGGED by hand: the counters are
 * rewritten on every API request and are worth no WAL; after a crash PostgreSQL empties the table,
 * which only resets the current windows. (TypeORM does not compare table persistence, so
 * `migration:check` stays clean.)
 */
export class RateLimits1795348918866 implements MigrationInterface {
  name = 'RateLimits1795348918866';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE UNLOGGED TABLE "rate_limit_counters" ("key" character varying(200) NOT NULL, "hits" integer NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "rate_limit_counters_pk" PRIMARY KEY ("key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rate_limit_counters_expires_idx" ON "rate_limit_counters"  ("expires_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."rate_limit_counters_expires_idx"`);
    await queryRunner.query(`DROP TABLE "rate_limit_counters"`);
  }
}
