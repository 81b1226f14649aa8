import { MigrationInterface, QueryRunner } from 'typeorm';

export class InitProjectsAndKeys1763800000000 implements MigrationInterface {
  name = 'InitProjectsAndKeys1763800000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE "projects" (
        "id" varchar(24) NOT NULL,
        "name" varchar(200) NOT NULL,
        "auto_create_customer_at_redemption" boolean NOT NULL DEFAULT false,
        "require_signature" boolean NOT NULL DEFAULT false,
        "created_at" timestamptz(3) NOT NULL DEFAULT now(),
        "updated_at" timestamptz(3) NOT NULL DEFAULT now(),
        "deleted_at" timestamptz(3),
        CONSTRAINT "projects_pkey" PRIMARY KEY ("id")
      )`);
    await q.query(`
      CREATE TABLE "api_keys" (
        "id" SERIAL NOT NULL,
        "project_id" varchar(24) NOT NULL,
        "kind" varchar(16) NOT NULL,
        "name" varchar(100),
        "prefix" varchar(12) NOT NULL,
        "key_hash" char(64) NOT NULL,
        "enabled" boolean NOT NULL DEFAULT true,
        "signing_secret_enc" text,
        "created_at" timestamptz(3) NOT NULL DEFAULT now(),
        "updated_at" timestamptz(3) NOT NULL DEFAULT now(),
        CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id"),
        CONSTRAINT "api_keys_kind_chk" CHECK ("kind" IN ('private', 'public')),
        CONSTRAINT "api_keys_project_fk" FOREIGN KEY ("project_id") REFERENCES "projects"("id") ON DELETE CASCADE
      )`);
    await q.query(`CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" ("key_hash")`);
    await q.query(`CREATE INDEX "api_keys_project_idx" ON "api_keys" ("project_id")`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "api_keys"`);
    await q.query(`DROP TABLE "projects"`);
  }
}
