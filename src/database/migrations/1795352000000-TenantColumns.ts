import { MigrationInterface, QueryRunner } from 'typeorm';

/** The tables whose missing `project_id` a trigger fills from the parent row `via` names. */
const FILLED = [
  { table: 'quotas', parent: 'plans', via: 'plan_id' },
  { table: 'customer_credentials', parent: 'customers', via: 'customer_id' },
];

/**
 * `project_id` on the last two tenant tables without it, `quotas` and `customer_credentials`,
 * filled from the parent row (plans, customers). Their foreign keys now include it, so the parent
 * is always of the same project: quotas (plan_id, project_id) -> plans and (feature_id,
 * project_id) -> features, credentials (customer_id, project_id) -> customers, with the names and
 * ON DELETE of the single-column keys they replace. A foreign key needs a unique index on the
 * referenced columns: new ones on plans and features (project_id, id), which also serve their
 * pages by id; on customers the existing (project_id, id) index becomes unique (id alone is, so
 * nothing can break). No other index: the tables are read by plan or customer id, as before.
 *
 * Rollout: the version still running inserts quotas and credentials without `project_id`; until
 * it is gone, a row trigger fills a missing `project_id` from the parent (it never fires for the
 * new version, which always sets it). A later migration drops the two triggers and functions.
 */
export class TenantColumns1795352000000 implements MigrationInterface {
  name = 'TenantColumns1795352000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "quotas" ADD "project_id" character varying(24)`);
    await q.query(
      `UPDATE "quotas" q SET "project_id" = p."project_id" FROM "plans" p WHERE p."id" = q."plan_id"`,
    );
    await q.query(`ALTER TABLE "quotas" ALTER COLUMN "project_id" SET NOT NULL`);
    await q.query(`ALTER TABLE "customer_credentials" ADD "project_id" character varying(24)`);
    await q.query(
      `UPDATE "customer_credentials" k SET "project_id" = c."project_id" FROM "customers" c WHERE c."id" = k."customer_id"`,
    );
    await q.query(`ALTER TABLE "customer_credentials" ALTER COLUMN "project_id" SET NOT NULL`);

    await q.query(`CREATE UNIQUE INDEX "plans_project_id_uq" ON "plans"  ("project_id", "id") `);
    await q.query(`CREATE UNIQUE INDEX "features_project_id_uq" ON "features"  ("project_id", "id") `);
    await q.query(`DROP INDEX "public"."customers_project_id_idx"`);
    await q.query(`CREATE UNIQUE INDEX "customers_project_id_idx" ON "customers"  ("project_id", "id") `);

    await q.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_plan_fk"`);
    await q.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_feature_fk"`);
    await q.query(`ALTER TABLE "customer_credentials" DROP CONSTRAINT "customer_credentials_customer_fk"`);
    await q.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_plan_fk" FOREIGN KEY ("plan_id", "project_id") REFERENCES "plans"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_feature_fk" FOREIGN KEY ("feature_id", "project_id") REFERENCES "features"("id","project_id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "customer_credentials" ADD CONSTRAINT "customer_credentials_customer_fk" FOREIGN KEY ("customer_id", "project_id") REFERENCES "customers"("id","project_id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    // For the version still running during the rollout only (see above).
    for (const { table, parent, via } of FILLED) {
      await q.query(`
        CREATE FUNCTION ${table}_fill_project_id() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          SELECT p.project_id INTO NEW.project_id FROM ${parent} p WHERE p.id = NEW.${via};
          RETURN NEW;
        END $$`);
      await q.query(`
        CREATE TRIGGER ${table}_fill_project_id BEFORE INSERT ON ${table}
          FOR EACH ROW WHEN (NEW.project_id IS NULL) EXECUTE FUNCTION ${table}_fill_project_id()`);
    }
  }

  public async down(q: QueryRunner): Promise<void> {
    for (const { table } of FILLED) {
      await q.query(`DROP TRIGGER ${table}_fill_project_id ON ${table}`);
      await q.query(`DROP FUNCTION ${table}_fill_project_id()`);
    }

    await q.query(`ALTER TABLE "customer_credentials" DROP CONSTRAINT "customer_credentials_customer_fk"`);
    await q.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_feature_fk"`);
    await q.query(`ALTER TABLE "quotas" DROP CONSTRAINT "quotas_plan_fk"`);
    await q.query(
      `ALTER TABLE "customer_credentials" ADD CONSTRAINT "customer_credentials_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_feature_fk" FOREIGN KEY ("feature_id") REFERENCES "features"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await q.query(
      `ALTER TABLE "quotas" ADD CONSTRAINT "quotas_plan_fk" FOREIGN KEY ("plan_id") REFERENCES "plans"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    await q.query(`DROP INDEX "public"."customers_project_id_idx"`);
    await q.query(`CREATE INDEX "customers_project_id_idx" ON "customers"  ("project_id", "id") `);
    await q.query(`DROP INDEX "public"."features_project_id_uq"`);
    await q.query(`DROP INDEX "public"."plans_project_id_uq"`);

    await q.query(`ALTER TABLE "customer_credentials" DROP COLUMN "project_id"`);
    await q.query(`ALTER TABLE "quotas" DROP COLUMN "project_id"`);
  }
}
