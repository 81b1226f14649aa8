import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Audit records written once and never updated (docs/operations.md#audit-log). The sealer used to
 * give a record its place in the chain by updating its row; `seq` being in two indexes, every
 * seal wrote a whole new version of the record with an entry in each of its six indexes, and left
 * the old one for vacuum (docs/benchmarks.md#measurements-behind-decisions has what it cost). Now:
 *
 * - `audit_unsealed`: one narrow row per record not sealed yet, written by a trigger on
 *   `audit_events` in the statement that writes the records (whoever writes them), deleted when
 *   the record is sealed. The sealer finds its work there.
 * - `audit_seals`: what the sealer gives a record (`seq`, `prev_hash`, `hash`), one row per
 *   record, keyed by its project and position, unique by project and `seq` (verify walks it).
 *
 * Existing seals and the backlog move over; `audit_events` loses its three columns and their two
 * indexes.
 */
export class AuditSeals1796200000000 implements MigrationInterface {
  name = 'AuditSeals1796200000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE TABLE "audit_seals" ("position" bigint NOT NULL, "project_id" character varying(24) NOT NULL,
         "seq" bigint NOT NULL, "prev_hash" text, "hash" text NOT NULL,
         CONSTRAINT "audit_seals_pk" PRIMARY KEY ("project_id", "position"))`,
    );
    await q.query(
      `INSERT INTO "audit_seals" (position, project_id, seq, prev_hash, hash)
       SELECT position, project_id, seq, prev_hash, hash FROM "audit_events" WHERE seq IS NOT NULL`,
    );
    await q.query(`CREATE UNIQUE INDEX "audit_seals_seq_uq" ON "audit_seals" ("project_id", "seq")`);
    await q.query(
      `CREATE TABLE "audit_unsealed" ("project_id" character varying(24) NOT NULL, "position" bigint NOT NULL,
         CONSTRAINT "audit_unsealed_pk" PRIMARY KEY ("project_id", "position"))`,
    );
    await q.query(
      `INSERT INTO "audit_unsealed" (project_id, position)
       SELECT project_id, position FROM "audit_events" WHERE seq IS NULL`,
    );
    await q.query(`
      CREATE FUNCTION audit_events_unsealed() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO audit_unsealed (project_id, position) SELECT project_id, position FROM written;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER audit_events_unsealed AFTER INSERT ON audit_events
        REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION audit_events_unsealed()`);
    await q.query(`DROP INDEX "audit_events_seq_uq"`);
    await q.query(`DROP INDEX "audit_events_unsealed_idx"`);
    await q.query(
      `ALTER TABLE "audit_events" DROP COLUMN "seq", DROP COLUMN "prev_hash", DROP COLUMN "hash"`,
    );
    await q.query(`ANALYZE audit_seals, audit_unsealed`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "audit_events" ADD "seq" bigint, ADD "prev_hash" text, ADD "hash" text`);
    await q.query(
      `UPDATE "audit_events" a SET seq = s.seq, prev_hash = s.prev_hash, hash = s.hash
         FROM "audit_seals" s WHERE s.project_id = a.project_id AND s.position = a.position`,
    );
    await q.query(
      `CREATE UNIQUE INDEX "audit_events_seq_uq" ON "audit_events" ("project_id", "seq") WHERE "seq" IS NOT NULL`,
    );
    await q.query(
      `CREATE INDEX "audit_events_unsealed_idx" ON "audit_events" ("project_id", "position") WHERE "seq" IS NULL`,
    );
    await q.query(`DROP TRIGGER "audit_events_unsealed" ON "audit_events"`);
    await q.query(`DROP FUNCTION audit_events_unsealed()`);
    await q.query(`DROP TABLE "audit_unsealed"`);
    await q.query(`DROP TABLE "audit_seals"`);
  }
}
