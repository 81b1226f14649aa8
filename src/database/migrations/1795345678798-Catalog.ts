import { MigrationInterface, QueryRunner } from 'typeorm';

export class Catalog1795345678798 implements MigrationInterface {
  name = 'Catalog1795345678798';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // Trigram indexes keep the customer search (ILIKE '%term%') fast with a million customers.
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await queryRunner.query(
      `CREATE TABLE "features" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "slug" character varying(64) NOT NULL, "name" character varying(200) NOT NULL, "description" character varying(2000) NOT NULL DEFAULT '', "metered" boolean NOT NULL DEFAULT false, "unit" character varying(32) NOT NULL DEFAULT '', "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5c1e336df2f4a7051e5bf08a941" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "features_project_slug_uq" ON "features"  ("project_id", "slug") `,
    );
    await queryRunner.query(
      `CREATE TABLE "quotas" ("id" SERIAL NOT NULL, "plan_id" integer NOT NULL, "feature_id" integer NOT NULL, "quota_limit" numeric(20,4) NOT NULL, "priority" integer NOT NULL DEFAULT '0', "reset_interval" character varying(32), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5f54877798333ca833245a100d1" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "quotas_feature_idx" ON "quotas"  ("feature_id") `);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "quotas_plan_feature_uq" ON "quotas"  ("plan_id", "feature_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "plans" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "slug" character varying(64) NOT NULL, "name" character varying(200) NOT NULL, "value" numeric(14,2) NOT NULL, "plan_group" character varying(64) NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_3720521a81c7c24fe9b7202ba61" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "plans_project_group_idx" ON "plans"  ("project_id", "plan_group") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "plans_project_slug_uq" ON "plans"  ("project_id", "slug") `,
    );
    await queryRunner.query(
      `CREATE TABLE "code_batches" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "plan_id" integer NOT NULL, "duration" character varying(32), "count" integer NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE, "note" character varying(500), "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_fc390d4f9675b93c173d4e4faaf" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "code_batches_project_idx" ON "code_batches"  ("project_id") `);
    await queryRunner.query(
      `CREATE TABLE "customer_credentials" ("id" SERIAL NOT NULL, "customer_id" integer NOT NULL, "type" smallint NOT NULL, "secret_hash" character varying(255) NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_1d04d4bb7a1817065d37c296937" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "customer_credentials_customer_type_uq" ON "customer_credentials"  ("customer_id", "type") `,
    );
    await queryRunner.query(
      `CREATE TABLE "customer_identifiers" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "type" character varying(16) NOT NULL, "value" character varying(128) NOT NULL, "readonly" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5f5aa4e0a3c26bdd7b19c41f08e" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "customer_identifiers_customer_idx" ON "customer_identifiers"  ("customer_id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "customer_identifiers_pair_uq" ON "customer_identifiers"  ("project_id", "type", "value") `,
    );
    await queryRunner.query(
      `CREATE TABLE "customers" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "username" character varying(16) NOT NULL, "enabled" boolean NOT NULL DEFAULT true, "temporary" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_133ec679a801fab5e070f73d3ea" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "customers_project_id_idx" ON "customers"  ("project_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "codes" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "batch_id" integer NOT NULL, "plan_id" integer NOT NULL, "code" character(16) NOT NULL, "duration" character varying(32), "status" character varying(16) NOT NULL DEFAULT 'available', "note" character varying(500), "expires_at" TIMESTAMP(3) WITH TIME ZONE, "redeemed_at" TIMESTAMP(3) WITH TIME ZONE, "redeemed_by_customer_id" integer, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9b85c624e2d705f4e8a9b64dbf4" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "codes_redeemed_by_idx" ON "codes"  ("redeemed_by_customer_id") `);
    await queryRunner.query(`CREATE INDEX "codes_plan_idx" ON "codes"  ("plan_id") `);
    await queryRunner.query(`CREATE INDEX "codes_batch_idx" ON "codes"  ("batch_id") `);
    await queryRunner.query(`CREATE INDEX "codes_project_id_idx" ON "codes"  ("project_id", "id") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "codes_code_uq" ON "codes"  ("code") `);
    await queryRunner.query(
      `CREATE TABLE "idempotency_records" ("project_id" character varying(24) NOT NULL, "key" character varying(255) NOT NULL, "fingerprint" character(64) NOT NULL, "response_status" integer, "response_body" jsonb, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "PK_cbbfa237691b6075d5f88eebab3" PRIMARY KEY ("project_id", "key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "idempotency_records_expires_idx" ON "idempotency_records"  ("expires_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "subscriptions" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "plan_id" integer NOT NULL, "plan_group" character varying(64) NOT NULL, "valid_from" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "valid_to" TIMESTAMP(3) WITH TIME ZONE, "status" character varying(16) NOT NULL DEFAULT 'active', "source" character varying(16) NOT NULL, "code_id" integer, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_a87248d73155605cf782be9ee5e" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "subscriptions_code_idx" ON "subscriptions"  ("code_id") `);
    await queryRunner.query(`CREATE INDEX "subscriptions_plan_idx" ON "subscriptions"  ("plan_id") `);
    await queryRunner.query(
      `CREATE INDEX "subscriptions_customer_group_idx" ON "subscriptions"  ("customer_id", "plan_group") `,
    );
    await queryRunner.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_plan_fk" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_feature_fk" FOREIGN KEY ("feature_id") REFERENCES "features"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "code_batches" ADD CONSTRAINT "code_batches_plan_fk" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "customer_credentials" ADD CONSTRAINT "customer_credentials_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "customer_identifiers" ADD CONSTRAINT "customer_identifiers_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_batch_fk" FOREIGN KEY ("batch_id") REFERENCES "code_batches"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_plan_fk" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_redeemed_by_customer_fk" FOREIGN KEY ("redeemed_by_customer_id") REFERENCES "customers"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_plan_fk" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_code_fk" FOREIGN KEY ("code_id") REFERENCES "codes"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    // Not expressible in entity metadata (declared there with synchronize: false):
    await queryRunner.query(
      `CREATE UNIQUE INDEX "customers_project_username_uq" ON "customers" ("project_id", lower("username"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "customers_username_trgm_idx" ON "customers" USING gin ("username" gin_trgm_ops)`,
    );
    await queryRunner.query(
      `CREATE INDEX "customer_identifiers_value_trgm_idx" ON "customer_identifiers" USING gin ("value" gin_trgm_ops)`,
    );
    await queryRunner.query(
      `ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_status_chk" CHECK ("status" IN ('active', 'cancelled'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_source_chk" CHECK ("source" IN ('signup', 'code', 'activation'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_status_chk" CHECK ("status" IN ('available', 'redeemed', 'revoked'))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_status_chk"`);
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP CONSTRAINT "subscriptions_source_chk"`);
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP CONSTRAINT "subscriptions_status_chk"`);
    await queryRunner.query(`DROP INDEX "public"."customer_identifiers_value_trgm_idx"`);
    await queryRunner.query(`DROP INDEX "public"."customers_username_trgm_idx"`);
    await queryRunner.query(`DROP INDEX "public"."customers_project_username_uq"`);
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP CONSTRAINT "subscriptions_code_fk"`);
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP CONSTRAINT "subscriptions_plan_fk"`);
    await queryRunner.query(`ALTER TABLE "subscriptions" DROP CONSTRAINT "subscriptions_customer_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_redeemed_by_customer_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_plan_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_batch_fk"`);
    await queryRunner.query(
      `ALTER TABLE "customer_identifiers" DROP CONSTRAINT "customer_identifiers_customer_fk"`,
    );
    await queryRunner.query(
      `ALTER TABLE "customer_credentials" DROP CONSTRAINT "customer_credentials_customer_fk"`,
    );
    await queryRunner.query(`ALTER TABLE "code_batches" DROP CONSTRAINT "code_batches_plan_fk"`);
    await queryRunner.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_feature_fk"`);
    await queryRunner.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_plan_fk"`);
    await queryRunner.query(`DROP INDEX "public"."subscriptions_customer_group_idx"`);
    await queryRunner.query(`DROP INDEX "public"."subscriptions_plan_idx"`);
    await queryRunner.query(`DROP INDEX "public"."subscriptions_code_idx"`);
    await queryRunner.query(`DROP TABLE "subscriptions"`);
    await queryRunner.query(`DROP INDEX "public"."idempotency_records_expires_idx"`);
    await queryRunner.query(`DROP TABLE "idempotency_records"`);
    await queryRunner.query(`DROP INDEX "public"."codes_code_uq"`);
    await queryRunner.query(`DROP INDEX "public"."codes_project_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."codes_batch_idx"`);
    await queryRunner.query(`DROP INDEX "public"."codes_plan_idx"`);
    await queryRunner.query(`DROP INDEX "public"."codes_redeemed_by_idx"`);
    await queryRunner.query(`DROP TABLE "codes"`);
    await queryRunner.query(`DROP INDEX "public"."customers_project_id_idx"`);
    await queryRunner.query(`DROP TABLE "customers"`);
    await queryRunner.query(`DROP INDEX "public"."customer_identifiers_pair_uq"`);
    await queryRunner.query(`DROP INDEX "public"."customer_identifiers_customer_idx"`);
    await queryRunner.query(`DROP TABLE "customer_identifiers"`);
    await queryRunner.query(`DROP INDEX "public"."customer_credentials_customer_type_uq"`);
    await queryRunner.query(`DROP TABLE "customer_credentials"`);
    await queryRunner.query(`DROP INDEX "public"."code_batches_project_idx"`);
    await queryRunner.query(`DROP TABLE "code_batches"`);
    await queryRunner.query(`DROP INDEX "public"."plans_project_slug_uq"`);
    await queryRunner.query(`DROP INDEX "public"."plans_project_group_idx"`);
    await queryRunner.query(`DROP TABLE "plans"`);
    await queryRunner.query(`DROP INDEX "public"."quotas_plan_feature_uq"`);
    await queryRunner.query(`DROP INDEX "public"."quotas_feature_idx"`);
    await queryRunner.query(`DROP TABLE "quotas"`);
    await queryRunner.query(`DROP INDEX "public"."features_project_slug_uq"`);
    await queryRunner.query(`DROP TABLE "features"`);
  }
}
