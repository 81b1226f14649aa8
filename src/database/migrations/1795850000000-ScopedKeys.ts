import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Scoped and expiring keys (docs/operations.md#scopes): `scopes` holds a private key's scope
 * names (`{*}` for all), null for a public key; `expires_at` when the key stops working, null for
 * never. Every private key made before holds all scopes. Nullable columns without a constraint
 * tying `scopes` to `kind`: the version still running during the update inserts private keys
 * without scopes, which the service reads as `{*}`, as it does the keys filled in here.
 */
export class ScopedKeys1795850000000 implements MigrationInterface {
  name = 'ScopedKeys1795850000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "api_keys" ADD "scopes" text array`);
    await q.query(`ALTER TABLE "api_keys" ADD "expires_at" TIMESTAMP(3) WITH TIME ZONE`);
    await q.query(`UPDATE "api_keys" SET "scopes" = '{*}' WHERE "kind" = 'private'`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "api_keys" DROP COLUMN "expires_at"`);
    await q.query(`ALTER TABLE "api_keys" DROP COLUMN "scopes"`);
  }
}
