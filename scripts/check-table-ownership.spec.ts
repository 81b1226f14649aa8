// The table ownership check (scripts/check-table-ownership.mjs) on small trees of its own: what it
// finds, what it lets through, and how the allowlist holds it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const SCRIPT = join(__dirname, 'check-table-ownership.mjs');

const BASE: Record<string, string> = {
  'src/plans/entities/plan.entity.ts': `
    @Entity('plans')
    export class Plan {}`,
  'src/customers/entities/customer.entity.ts': `
    @Entity({ name: 'customers' })
    export class Customer {
      @ManyToOne(() => Plan, { onDelete: 'RESTRICT' })
      plan: Plan;
    }`,
  'src/customers/customers.repository.ts': `
    export class CustomersRepository {
      find(id: number) {
        return this.em.query('SELECT * FROM customers c JOIN customer_search s ON s.customer_id = c.id WHERE c.id = $1', [id]);
      }
    }`,
  'src/plans/plans.repository.ts': `
    export class PlansRepository {
      find(id: number) {
        return this.em.findOne(Plan, { where: { id } });
      }
    }`,
  'src/database/migrations/1-Search.ts': `await q.query('CREATE TABLE "customer_search" ("customer_id" integer)');`,
  'scripts/table-owners.json': JSON.stringify({ tables: { customer_search: 'customers' } }),
  'scripts/table-ownership-allowlist.json': JSON.stringify({ entries: [] }),
};

/** Runs the check on BASE with `files` added (or replaced): its exit code and output lines. */
function check(files: Record<string, string> = {}): { status: number | null; lines: string[] } {
  const root = mkdtempSync(join(tmpdir(), 'table-ownership-'));
  try {
    for (const [path, text] of Object.entries({ ...BASE, ...files })) {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), text);
    }
    const run = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
    return {
      status: run.status,
      lines: `${run.stdout}${run.stderr}`.split('\n').filter((l) => l.startsWith('src/')),
    };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const allow = (...entries: Array<{ file: string; table: string; count: number }>) => ({
  'scripts/table-ownership-allowlist.json': JSON.stringify({
    entries: entries.map((e) => ({ ...e, reason: 'moving to its owner', pending: true })),
  }),
});

const SUBSCRIPTIONS = 'src/subscriptions/subscriptions.repository.ts';

describe('check-table-ownership', () => {
  it('passes a tree where each module names only its own tables', () => {
    expect(check()).toEqual({ status: 0, lines: [] });
  });

  it('fails on SQL text that names another module’s table, one line per table and line', () => {
    const { status, lines } = check({
      [SUBSCRIPTIONS]: [
        'const SQL = `SELECT s.id, p.name',
        '  FROM subscriptions s JOIN "plans" p ON p.id = s.plan_id',
        '  WHERE s.customer_id IN (SELECT id FROM customers WHERE project_id = $1)`;',
        "const UPDATE = 'UPDATE customers SET name = $2 WHERE id = $1';",
        'const LIST = `SELECT 1 FROM subscriptions s, customer_search x WHERE x.customer_id = s.customer_id`;',
      ].join('\n'),
    });
    expect(status).toBe(1);
    expect(lines).toEqual([
      `${SUBSCRIPTIONS}:2: module subscriptions names table plans of module plans`,
      `${SUBSCRIPTIONS}:3: module subscriptions names table customers of module customers`,
      `${SUBSCRIPTIONS}:4: module subscriptions names table customers of module customers`,
      `${SUBSCRIPTIONS}:5: module subscriptions names table customer_search of module customers`,
    ]);
  });

  it('fails on TypeORM calls with another module’s entity, relation joins and tables by name', () => {
    const { status, lines } = check({
      [SUBSCRIPTIONS]: [
        'const a = em.find(Customer, { where: { id } });',
        'const b = this.dataSource.getRepository(Plan);',
        "const c = em.createQueryBuilder(Customer, 'c')",
        "  .innerJoin('c.plan', 'p');",
        "const d = pruneInBatches(db, { table: 'customers', condition: 'true' });",
      ].join('\n'),
    });
    expect(status).toBe(1);
    expect(lines).toEqual([
      `${SUBSCRIPTIONS}:1: module subscriptions names table customers of module customers`,
      `${SUBSCRIPTIONS}:2: module subscriptions names table plans of module plans`,
      `${SUBSCRIPTIONS}:3: module subscriptions names table customers of module customers`,
      `${SUBSCRIPTIONS}:4: module subscriptions names table plans of module plans`,
      `${SUBSCRIPTIONS}:5: module subscriptions names table customers of module customers`,
    ]);
  });

  it('lets ordinary words, types, specs and migrations through', () => {
    const { status } = check({
      [SUBSCRIPTIONS]: [
        "import { Customer } from '../customers/entities/customer.entity';",
        "const message = 'Move the customers from one plans page to another';",
        'const label = `customers of ${projectId}`;',
        'let customer: Customer | undefined;',
      ].join('\n'),
      'src/subscriptions/subscriptions.repository.spec.ts': "em.query('SELECT * FROM customers');",
      'src/database/migrations/2-Backfill.ts': "await q.query('UPDATE customers SET plan_id = NULL');",
    });
    expect(status).toBe(0);
  });

  it('fails on a table that a migration creates without an owner', () => {
    const { status } = check({
      'src/database/migrations/2-Orphan.ts': `await q.query('CREATE UNLOGGED TABLE "orphans" ("id" integer)');`,
    });
    expect(status).toBe(1);
  });

  it('accepts the allowlisted references, and fails on one more or one fewer', () => {
    const sql = "const SQL = 'SELECT 1 FROM customers';";
    const entry = { file: SUBSCRIPTIONS, table: 'customers', count: 1 };
    expect(check({ [SUBSCRIPTIONS]: sql, ...allow(entry) }).status).toBe(0);

    const more = check({ [SUBSCRIPTIONS]: `${sql}\nconst MORE = 'DELETE FROM customers';`, ...allow(entry) });
    expect(more.status).toBe(1);
    expect(more.lines).toContain(
      `${SUBSCRIPTIONS}:2: module subscriptions names table customers of module customers`,
    );

    expect(check({ [SUBSCRIPTIONS]: 'const SQL = 1;', ...allow(entry) }).status).toBe(1);
  });
});
