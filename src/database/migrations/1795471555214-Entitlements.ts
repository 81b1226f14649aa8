import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Entitlements and metered usage (docs/entitlements.md): a quota's limit may be null (unlimited); the
 * permanent usage ledger (`usage_records`, unique event id per project and customer forever) and
 * its allocations to buckets (`usage_allocations`), whose partial index on live rows serves the
 * period sums. Both tables only grow: docs/entitlements.md#retention-of-the-ledger says
 * how to prune or partition them.
 */
export class Entitlements1795471555214 implements MigrationInterface {
  name = 'Entitlements1795471555214';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "usage_records" ("id" BIGSERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "event_id" character varying(255) NOT NULL, "amount" numeric(26,6) NOT NULL, "overage" numeric(26,6) NOT NULL DEFAULT '0', "recorded_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "reversed_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_e511cf9f7dc53851569f87467a5" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "usage_records_customer_feature_idx" ON "usage_records"  ("customer_id", "feature_id", "recorded_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "usage_records_customer_recorded_idx" ON "usage_records"  ("customer_id", "recorded_at", "id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "usage_records_event_uq" ON "usage_records"  ("project_id", "customer_id", "event_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "usage_allocations" ("id" BIGSERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "usage_id" bigint NOT NULL, "customer_id" integer NOT NULL, "feature_id" integer NOT NULL, "plan_group" character varying(64) NOT NULL, "period_start" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "amount" numeric(26,6) NOT NULL, "recorded_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "reversed" boolean NOT NULL DEFAULT false, CONSTRAINT "PK_e0155ede5af3210c43e8adc2a9b" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "usage_allocations_period_idx" ON "usage_allocations"  ("customer_id", "feature_id", "plan_group", "recorded_at") WHERE NOT "reversed"`,
    );
    await queryRunner.query(
      `CREATE INDEX "usage_allocations_usage_idx" ON "usage_allocations"  ("usage_id") `,
    );
    await queryRunner.query(`ALTER TABLE "quotas" ALTER COLUMN "quota_limit" DROP NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "usage_allocations" ADD CONSTRAINT "usage_allocations_usage_fk" FOREIGN KEY ("usage_id") REFERENCES "usage_records"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "usage_allocations" DROP CONSTRAINT "usage_allocations_usage_fk"`);
    await queryRunner.query(`ALTER TABLE "usage_records" DROP CONSTRAINT "usage_records_feature_fk"`);
    await queryRunner.query(`ALTER TABLE "usage_records" DROP CONSTRAINT "usage_records_customer_fk"`);
    // an unlimited quota cannot be written back as null: the largest exact limit stands in for it
    await queryRunner.query(
      `UPDATE "quotas" SET "quota_limit" = 9007199254740991 WHERE "quota_limit" IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE "quotas" ALTER COLUMN "quota_limit" SET NOT NULL`);
    await queryRunner.query(`DROP INDEX "public"."usage_allocations_usage_idx"`);
    await queryRunner.query(`DROP INDEX "public"."usage_allocations_period_idx"`);
    await queryRunner.query(`DROP TABLE "usage_allocations"`);
    await queryRunner.query(`DROP INDEX "public"."usage_records_event_uq"`);
    await queryRunner.query(`DROP INDEX "public"."usage_records_customer_recorded_idx"`);
    await queryRunner.query(`DROP INDEX "public"."usage_records_customer_feature_idx"`);
    await queryRunner.query(`DROP TABLE "usage_records"`);
  }
}
