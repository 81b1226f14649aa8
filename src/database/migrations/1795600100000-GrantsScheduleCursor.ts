import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The cursor of the scheduler that announces grants and overrides reaching their `expiresAt`
 * (`grant.expired`, `override.removed`): a row of `event_schedule_cursors`, kind `grants`. It
 * starts at the migration's instant, as the windows' cursor did: nothing that ended before is
 * announced.
 */
export class GrantsScheduleCursor1795600100000 implements MigrationInterface {
  name = 'GrantsScheduleCursor1795600100000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `INSERT INTO "event_schedule_cursors" ("kind", "scanned_to") VALUES ('grants', now()) ON CONFLICT ("kind") DO NOTHING`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM "event_schedule_cursors" WHERE "kind" = 'grants'`);
  }
}
