import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Customers per project, kept by statement-level triggers, so that the `total` of an unfiltered
 * customer page is a sum of a few rows instead of a count over every customer. Each database
 * session writes its own slot (`pg_backend_pid() % 16`), so concurrent inserts do not queue on
 * one counter row.
 */
export class CustomerCounts1795349900000 implements MigrationInterface {
  name = 'CustomerCounts1795349900000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "customer_counts" (
        "project_id" varchar(24) NOT NULL,
        "slot" smallint NOT NULL,
        "n" bigint NOT NULL,
        CONSTRAINT "customer_counts_pkey" PRIMARY KEY ("project_id", "slot")
      )`);
    await q.query(`
      CREATE FUNCTION customer_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO customer_counts (project_id, slot, n)
            SELECT project_id, pg_backend_pid() % 16, count(*) FROM new_rows GROUP BY project_id
            ON CONFLICT (project_id, slot) DO UPDATE SET n = customer_counts.n + EXCLUDED.n;
        ELSE
          INSERT INTO customer_counts (project_id, slot, n)
            SELECT project_id, pg_backend_pid() % 16, -count(*) FROM old_rows GROUP BY project_id
            ON CONFLICT (project_id, slot) DO UPDATE SET n = customer_counts.n + EXCLUDED.n;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER customers_count_insert AFTER INSERT ON customers
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION customer_counts_add()`);
    await q.query(`
      CREATE TRIGGER customers_count_delete AFTER DELETE ON customers
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION customer_counts_add()`);
    await q.query(
      `INSERT INTO customer_counts (project_id, slot, n) SELECT project_id, 0, count(*) FROM customers GROUP BY project_id`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER customers_count_delete ON customers`);
    await q.query(`DROP TRIGGER customers_count_insert ON customers`);
    await q.query(`DROP FUNCTION customer_counts_add()`);
    await q.query(`DROP TABLE "customer_counts"`);
  }
}
