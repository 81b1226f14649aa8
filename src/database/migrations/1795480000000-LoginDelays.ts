import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `login_failures.last_failure_at`: the time of a counter's last counted attempt, from which the
 * growing login delay (per customer and address) and the end of such a counter are measured
 * (`auth/failure-counters.ts`). Rows of the version still running get `now()` by default.
 */
export class LoginDelays1795480000000 implements MigrationInterface {
  name = 'LoginDelays1795480000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE "login_failures" ADD "last_failure_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now()`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "login_failures" DROP COLUMN "last_failure_at"`);
  }
}
