import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './support/database';

/**
 * docs/scaling.md ("Where one primary ends") classifies every table for a distribution by project
 * on Citus and lists what in the schema blocks it. Both lists are read here from the catalog of a
 * freshly migrated database and from the code, so the paper stays exact as the schema grows: a new
 * table, key, unique index, foreign key, trigger, sequence or advisory lock that the paper does not
 * list fails this test, and so does a row of the paper that no longer matches anything.
 */

const ROOT = join(__dirname, '..');
const PAPER = 'docs/scaling.md';
const CLASSES = ['distributed', 'reference', 'coordinator'] as const;
type TableClass = (typeof CLASSES)[number];

/** The cells of each row of the Markdown table between `<!-- scaling:NAME -->` and `<!-- /scaling:NAME -->`. */
function sectionRows(markdown: string, name: string): string[][] {
  const start = markdown.indexOf(`<!-- scaling:${name} -->`);
  const end = markdown.indexOf(`<!-- /scaling:${name} -->`);
  if (start < 0 || end < start) throw new Error(`${PAPER} has no <!-- scaling:${name} --> section`);
  return markdown
    .slice(start, end)
    .split('\n')
    .filter((line) => line.trim().startsWith('|'))
    .slice(2) // the header and its separator
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((cell) => cell.trim()),
    );
}

const code = (cell: string): string => {
  const m = /^`([^`]+)`$/.exec(cell);
  if (!m) throw new Error(`${PAPER}: expected a \`name\` in "${cell}"`);
  return m[1];
};

interface Schema {
  tables: string[];
  withProject: Set<string>;
  uniques: Array<{ table: string; primary: boolean; exclusion: boolean; columns: string[] }>;
  foreignKeys: Array<{
    table: string;
    columns: string[];
    references: string;
    referenced: string[];
    /** ON DELETE: a (no action), r (restrict), c (cascade), n (set null), d (set default). */
    onDelete: string;
  }>;
  triggers: Array<{ table: string; name: string; rowLevel: boolean }>;
  sequences: Array<{ table: string; column: string; type: string }>;
}

async function readSchema(url: string): Promise<Schema> {
  const client = new Client({ connectionString: url });
  await client.connect();
  const rows = async <T>(sql: string): Promise<T[]> => (await client.query(sql)).rows as T[];
  // tables of the schema; a partition belongs to its parent's row
  const TABLES = `SELECT c.oid FROM pg_class c
     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition`;
  try {
    const tables = (
      await rows<{ name: string }>(
        `SELECT c.relname AS name FROM pg_class c WHERE c.oid IN (${TABLES}) ORDER BY 1`,
      )
    ).map((r) => r.name);
    const withProject = new Set(
      (
        await rows<{ name: string }>(
          `SELECT c.relname AS name FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
            WHERE a.attrelid IN (${TABLES}) AND a.attname = 'project_id' AND NOT a.attisdropped`,
        )
      ).map((r) => r.name),
    );
    const uniques = await rows<Schema['uniques'][number]>(
      `SELECT c.relname AS table, i.indisprimary AS primary, i.indisexclusion AS exclusion,
              array(SELECT pg_get_indexdef(i.indexrelid, k, true) FROM generate_series(1, i.indnkeyatts) k ORDER BY k) AS columns
         FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
        WHERE i.indrelid IN (${TABLES}) AND (i.indisunique OR i.indisexclusion)`,
    );
    const foreignKeys = await rows<Schema['foreignKeys'][number]>(
      `SELECT c.relname AS table, r.relname AS references, k.confdeltype AS "onDelete",
              array(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY u(n, o)
                      JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n ORDER BY u.o) AS columns,
              array(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY u(n, o)
                      JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.n ORDER BY u.o) AS referenced
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
        WHERE k.contype = 'f' AND k.conrelid IN (${TABLES})`,
    );
    const triggers = await rows<Schema['triggers'][number]>(
      `SELECT c.relname AS table, t.tgname AS name, (t.tgtype & 1) = 1 AS "rowLevel"
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
        WHERE t.tgrelid IN (${TABLES}) AND NOT t.tgisinternal`,
    );
    const sequences = await rows<Schema['sequences'][number]>(
      `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
         LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid IN (${TABLES}) AND a.attnum > 0 AND NOT a.attisdropped
          AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%')`,
    );
    return { tables, withProject, uniques, foreignKeys, triggers, sequences };
  } finally {
    await client.end();
  }
}

/**
 * What blocks a distribution by `project_id`, given each table's class: a distributed table needs
 * the column, and every key, unique index and exclusion constraint of it must include it; foreign
 * keys between distributed tables must include it on both sides (at the same place) and cannot
 * SET NULL or SET DEFAULT on delete (the distribution column would go with it); a distributed
 * table may reference only its own kind or reference tables, and only distributed tables may
 * reference it (reference and coordinator tables may reference each other); Citus refuses
 * statement-level triggers, runs row triggers only with `citus.enable_unsafe_triggers` (each must
 * touch its own project's rows only) and none on reference tables; every sequence of a
 * distributed or reference table changes meaning (and an `integer` one only works from the
 * coordinator).
 */
function blockersOf(schema: Schema, classOf: (table: string) => TableClass | undefined): string[] {
  const out: string[] = [];
  const list = (cols: string[]) => cols.join(', ');
  for (const table of schema.tables)
    if (classOf(table) === 'distributed' && !schema.withProject.has(table))
      out.push(`missing column: ${table}.project_id`);
  for (const u of schema.uniques) {
    if (classOf(u.table) !== 'distributed' || u.columns.includes('project_id')) continue;
    const kind = u.primary ? 'primary key' : u.exclusion ? 'exclusion constraint' : 'unique index';
    out.push(`${kind}: ${u.table} (${list(u.columns)})`);
  }
  for (const fk of schema.foreignKeys) {
    const [from, to] = [classOf(fk.table), classOf(fk.references)];
    const aligned =
      fk.columns.indexOf('project_id') >= 0 &&
      fk.referenced[fk.columns.indexOf('project_id')] === 'project_id' &&
      !['n', 'd'].includes(fk.onDelete);
    const allowed =
      to === 'distributed'
        ? from === 'distributed' && aligned
        : !(from === 'distributed' && to === 'coordinator');
    if (!allowed)
      out.push(`foreign key: ${fk.table} (${list(fk.columns)}) → ${fk.references} (${list(fk.referenced)})`);
  }
  for (const t of schema.triggers) {
    const cls = classOf(t.table);
    if (cls === 'coordinator') continue;
    const kind = cls === 'reference' ? 'trigger' : t.rowLevel ? 'row trigger' : 'statement trigger';
    out.push(`${kind}: ${t.table} ${t.name}`);
  }
  for (const s of schema.sequences)
    if (classOf(s.table) !== 'coordinator') out.push(`sequence: ${s.table}.${s.column} (${s.type})`);
  return out.sort();
}

/** Every advisory lock the service takes: `file function`, one entry per call. */
function advisoryLocks(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) {
        const text = readFileSync(path, 'utf8');
        for (const m of text.matchAll(/\b(pg_(?:try_)?advisory(?:_xact)?_lock(?:_shared)?)\s*\(/g))
          out.push(`${relative(ROOT, path)} ${m[1]}`);
      }
    }
  };
  walk(join(ROOT, 'src'));
  return out.sort();
}

const difference = (a: string[], b: string[]): string[] => {
  const rest = [...b];
  return a.filter((x) => {
    const i = rest.indexOf(x);
    if (i < 0) return true;
    rest.splice(i, 1);
    return false;
  });
};

describe('docs/scaling.md: the path past one primary, exact for the schema', () => {
  const paper = readFileSync(join(ROOT, PAPER), 'utf8');
  const classes = new Map<string, TableClass>(
    sectionRows(paper, 'tables').map(([name, cls]) => [code(name), cls as TableClass]),
  );
  const paperBlockers = sectionRows(paper, 'blockers')
    .map(([kind, key]) => `${kind}: ${code(key)}`)
    .sort();
  const paperLocks = sectionRows(paper, 'advisory-locks')
    .map(([file, fn]) => `${code(file)} ${code(fn)}`)
    .sort();
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let schema: Schema;

  beforeAll(async () => {
    db = await createTestDatabase();
    schema = await readSchema(db.url);
  });
  afterAll(() => db?.drop());

  it('classifies every table of the migrated schema, each once, and no table the schema lacks', () => {
    const bad = [...classes].filter(([, cls]) => !CLASSES.includes(cls)).map(([t, cls]) => `${t}: ${cls}`);
    expect(bad).toEqual([]);
    expect(sectionRows(paper, 'tables')).toHaveLength(classes.size);
    expect({
      unclassified: schema.tables.filter((t) => !classes.has(t)),
      notInSchema: [...classes.keys()].filter((t) => !schema.tables.includes(t)),
    }).toEqual({ unclassified: [], notInSchema: [] });
  });

  it('lists exactly the keys, unique indexes, foreign keys, triggers and sequences that block the distribution', () => {
    const derived = blockersOf(schema, (t) => classes.get(t));
    expect({
      missingFromPaper: difference(derived, paperBlockers),
      notInSchema: difference(paperBlockers, derived),
    }).toEqual({ missingFromPaper: [], notInSchema: [] });
  });

  it('lists every advisory lock the code takes', () => {
    const found = advisoryLocks();
    expect(found.length).toBeGreaterThan(0);
    expect({
      missingFromPaper: difference(found, paperLocks),
      notInCode: difference(paperLocks, found),
    }).toEqual({ missingFromPaper: [], notInCode: [] });
  });
});
