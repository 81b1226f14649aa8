import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The pending deliveries of each endpoint in due order, for the worker's claim: it visits the
 * endpoints that have pending deliveries and takes each one's due deliveries up to its free
 * places, so that an endpoint at its limit with a large backlog costs one probe, not a read of
 * its whole backlog (docs/events.md#how-it-works-and-how-it-scales-with-replicas). It replaces the
 * index of all pending deliveries by due time, which only the claim read.
 */
export class DeliveriesByEndpoint1796060000000 implements MigrationInterface {
  name = 'DeliveriesByEndpoint1796060000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "public"."webhook_deliveries_due_idx"`);
    await q.query(
      `CREATE INDEX "webhook_deliveries_endpoint_due_idx" ON "webhook_deliveries" ("endpoint_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX "public"."webhook_deliveries_endpoint_due_idx"`);
    await q.query(
      `CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`,
    );
  }
}
