import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A batch's note is stored once, on `code_batches` (where every batch already has it), and no
 * longer copied into each of its codes: a batch of 10,000 codes with a note of 500 characters
 * wrote 5 MB of copies. Codes now read the note of their batch; this clears the copies.
 *
 * Rollout (expand/contract): the column `codes.note` stays, unused, so that the version still
 * running can insert and read codes during the rolling update (it shows no note on codes in the
 * meantime); a later release drops it.
 */
export class CodeBatchNotes1795480100000 implements MigrationInterface {
  name = 'CodeBatchNotes1795480100000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE "codes" SET "note" = NULL WHERE "note" IS NOT NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(
      `UPDATE "codes" c SET "note" = b."note" FROM "code_batches" b WHERE b."id" = c."batch_id" AND b."note" IS NOT NULL`,
    );
  }
}
