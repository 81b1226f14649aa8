import { MigrationInterface, QueryRunner } from 'typeorm';

/** Public interface: customer sessions, request nonces of signed requests, login failure counters. */
export class PublicSessions1795347055914 implements MigrationInterface {
  name = 'PublicSessions1795347055914';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "customer_sessions" ("id" SERIAL NOT NULL, "project_id" character varying(24) NOT NULL, "customer_id" integer NOT NULL, "token_hash" character(64) NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "created_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL DEFAULT now(), "last_used_at" TIMESTAMP(3) WITH TIME ZONE, CONSTRAINT "PK_c684ecbaa67a634723776229c4c" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "customer_sessions_token_hash_uq" ON "customer_sessions"  ("token_hash") `,
    );
    await queryRunner.query(
      `CREATE INDEX "customer_sessions_expires_idx" ON "customer_sessions"  ("expires_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "customer_sessions_customer_idx" ON "customer_sessions"  ("customer_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "login_failures" ("key" character varying(128) NOT NULL, "window_start" TIMESTAMP(3) WITH TIME ZONE NOT NULL, "failures" integer NOT NULL, CONSTRAINT "login_failures_pk" PRIMARY KEY ("key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "login_failures_window_idx" ON "login_failures"  ("window_start") `,
    );
    await queryRunner.query(
      `CREATE TABLE "request_nonces" ("api_key_id" integer NOT NULL, "nonce" character varying(64) NOT NULL, "expires_at" TIMESTAMP(3) WITH TIME ZONE NOT NULL, CONSTRAINT "request_nonces_pk" PRIMARY KEY ("api_key_id", "nonce"))`,
    );
    await queryRunner.query(`CREATE INDEX "request_nonces_expires_idx" ON "request_nonces"  ("expires_at") `);
    await queryRunner.query(
      `ALTER TABLE "customer_sessions" ADD CONSTRAINT "customer_sessions_customer_fk" FOREIGN KEY ("customer_id") REFERENCES "customers"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "request_nonces" ADD CONSTRAINT "request_nonces_api_key_fk" FOREIGN KEY ("api_key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "request_nonces" DROP CONSTRAINT "request_nonces_api_key_fk"`);
    await queryRunner.query(
      `ALTER TABLE "customer_sessions" DROP CONSTRAINT "customer_sessions_customer_fk"`,
    );
    await queryRunner.query(`DROP INDEX "public"."request_nonces_expires_idx"`);
    await queryRunner.query(`DROP TABLE "request_nonces"`);
    await queryRunner.query(`DROP INDEX "public"."login_failures_window_idx"`);
    await queryRunner.query(`DROP TABLE "login_failures"`);
    await queryRunner.query(`DROP INDEX "public"."customer_sessions_customer_idx"`);
    await queryRunner.query(`DROP INDEX "public"."customer_sessions_expires_idx"`);
    await queryRunner.query(`DROP INDEX "public"."customer_sessions_token_hash_uq"`);
    await queryRunner.query(`DROP TABLE "customer_sessions"`);
  }
}
