import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The customer search document: one row per customer holding every identifier value (the mirrored
 * username included), lower-cased and joined by U+001F, with one trigram GIN index. A search is
 * then one row per customer (no DISTINCT over identifiers) and `doc LIKE lower(pattern)` is
 * exactly "some identifier value ILIKE pattern" for any term without U+001F (the service falls
 * back to the identifiers for a term that holds it).
 *
 * The documents are rewritten by statement-level triggers on customer_identifiers, in the
 * transaction that changes the identifiers; the customers concerned are locked first, so that
 * concurrent changes to one customer's identifiers are applied one after the other and the last
 * document is computed from committed rows. Deleting a customer deletes its row (ON DELETE
 * CASCADE).
 *
 * `fastupdate = off`: no pending list that every search would have to read until a vacuum.
 * The statistics object on show_trgm(doc) gives, after ANALYZE, the frequency of the common
 * trigrams (most_common_elems), from which the service picks the rare part of a term for the
 * index scan. No entity maps the table (like customer_counts), so `migration:check` ignores it.
 */
export class CustomerSearch1795351000000 implements MigrationInterface {
  name = 'CustomerSearch1795351000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "customer_search" (
        "customer_id" integer NOT NULL,
        "project_id" varchar(24) NOT NULL,
        "doc" text NOT NULL,
        CONSTRAINT "customer_search_pkey" PRIMARY KEY ("customer_id"),
        CONSTRAINT "customer_search_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE
      )`);
    await q.query(`
      CREATE FUNCTION customer_search_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        ids integer[];
      BEGIN
        IF TG_OP = 'INSERT' THEN
          SELECT array_agg(DISTINCT customer_id) INTO ids FROM new_rows;
        ELSIF TG_OP = 'DELETE' THEN
          SELECT array_agg(DISTINCT customer_id) INTO ids FROM old_rows;
        ELSE
          SELECT array_agg(DISTINCT customer_id) INTO ids FROM (SELECT customer_id FROM old_rows UNION ALL SELECT customer_id FROM new_rows) r;
        END IF;
        IF ids IS NULL THEN
          RETURN NULL;
        END IF;
        -- a deleted customer is not found (its row goes by ON DELETE CASCADE); each statement below
        -- reads with a fresh snapshot, taken after the lock
        PERFORM 1 FROM customers WHERE id = ANY (ids) ORDER BY id FOR NO KEY UPDATE;
        INSERT INTO customer_search AS s (customer_id, project_id, doc)
          SELECT c.id, c.project_id,
                 coalesce((SELECT string_agg(lower(i.value), chr(31) ORDER BY i.id) FROM customer_identifiers i WHERE i.customer_id = c.id), '')
            FROM customers c
           WHERE c.id = ANY (ids)
          ON CONFLICT (customer_id) DO UPDATE SET project_id = EXCLUDED.project_id, doc = EXCLUDED.doc
           WHERE (s.project_id, s.doc) IS DISTINCT FROM (EXCLUDED.project_id, EXCLUDED.doc);
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER customer_search_insert AFTER INSERT ON customer_identifiers
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION customer_search_refresh()`);
    await q.query(`
      CREATE TRIGGER customer_search_update AFTER UPDATE ON customer_identifiers
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION customer_search_refresh()`);
    await q.query(`
      CREATE TRIGGER customer_search_delete AFTER DELETE ON customer_identifiers
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION customer_search_refresh()`);
    await q.query(`
      INSERT INTO customer_search (customer_id, project_id, doc)
        SELECT c.id, c.project_id, coalesce(string_agg(lower(i.value), chr(31) ORDER BY i.id), '')
          FROM customers c LEFT JOIN customer_identifiers i ON i.customer_id = c.id
         GROUP BY c.id`);
    await q.query(
      `CREATE INDEX "customer_search_doc_trgm_idx" ON "customer_search" USING gin ("doc" gin_trgm_ops) WITH (fastupdate = off)`,
    );
    await q.query(
      `CREATE STATISTICS "customer_search_trgm_stats" ON (show_trgm("doc")) FROM "customer_search"`,
    );
    await q.query(`ANALYZE "customer_search"`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER customer_search_delete ON customer_identifiers`);
    await q.query(`DROP TRIGGER customer_search_update ON customer_identifiers`);
    await q.query(`DROP TRIGGER customer_search_insert ON customer_identifiers`);
    await q.query(`DROP FUNCTION customer_search_refresh()`);
    await q.query(`DROP TABLE "customer_search"`);
  }
}
