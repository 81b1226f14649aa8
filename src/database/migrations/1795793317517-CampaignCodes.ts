import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Campaign codes (docs/api-guide.md#campaign-codes) live in `codes` with `kind = 'campaign'`:
 * no batch and no 16-character `code`, their own string and key, terms, cap and count. Their
 * redemptions are recorded in `code_redemptions` (a batch code's one redemption stays on its row).
 */
export class CampaignCodes1795793317517 implements MigrationInterface {
  name = 'CampaignCodes1795793317517';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "code_redemptions" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "code_id" integer NOT NULL, "customer_id" integer, "redeemed_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "window_ids" integer array NOT NULL, CONSTRAINT "PK_32c96baf5e639c362434bb91190" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "code_redemptions_customer_idx" ON "code_redemptions"  ("customer_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "code_redemptions_code_customer_idx" ON "code_redemptions"  ("code_id", "customer_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "code_redemptions_code_idx" ON "code_redemptions"  ("code_id", "id") `,
    );
    await queryRunner.query(`ALTER TABLE "codes" ADD "kind" character varying(16) NOT NULL DEFAULT 'batch'`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "display_code" character varying(32)`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "code_key" character varying(32)`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "starts_at" TIMESTAMP(3) WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "max_redemptions" integer`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "per_customer_limit" integer NOT NULL DEFAULT '1'`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "redemption_count" integer NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "new_customers_only" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "not_if_held_plan_groups" jsonb`);
    await queryRunner.query(`ALTER TABLE "codes" ADD "trial" boolean NOT NULL DEFAULT false`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_batch_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" ALTER COLUMN "batch_id" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "codes" ALTER COLUMN "code" DROP NOT NULL`);
    await queryRunner.query(`CREATE INDEX "codes_campaign_key_idx" ON "codes"  ("project_id", "code_key") `);
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_kind_chk" CHECK ("kind" IN ('batch', 'campaign'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_batch_fk" FOREIGN KEY ("batch_id") REFERENCES "code_batches"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "code_redemptions" ADD CONSTRAINT "code_redemptions_code_fk" FOREIGN KEY ("code_id") REFERENCES "codes"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "code_redemptions" ADD CONSTRAINT "code_redemptions_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "code_redemptions" DROP CONSTRAINT "code_redemptions_customer_fk"`);
    await queryRunner.query(`ALTER TABLE "code_redemptions" DROP CONSTRAINT "code_redemptions_code_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_batch_fk"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP CONSTRAINT "codes_kind_chk"`);
    await queryRunner.query(`DROP INDEX "public"."codes_campaign_key_idx"`);
    await queryRunner.query(`ALTER TABLE "codes" ALTER COLUMN "code" SET NOT NULL`);
    await queryRunner.query(`ALTER TABLE "codes" ALTER COLUMN "batch_id" SET NOT NULL`);
    await queryRunner.query(
      `ALTER TABLE "codes" ADD CONSTRAINT "codes_batch_fk" FOREIGN KEY ("batch_id") REFERENCES "code_batches"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "trial"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "not_if_held_plan_groups"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "new_customers_only"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "redemption_count"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "per_customer_limit"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "max_redemptions"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "starts_at"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "code_key"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "display_code"`);
    await queryRunner.query(`ALTER TABLE "codes" DROP COLUMN "kind"`);
    await queryRunner.query(`DROP INDEX "public"."code_redemptions_code_idx"`);
    await queryRunner.query(`DROP INDEX "public"."code_redemptions_code_customer_idx"`);
    await queryRunner.query(`DROP INDEX "public"."code_redemptions_customer_idx"`);
    await queryRunner.query(`DROP TABLE "code_redemptions"`);
  }
}
