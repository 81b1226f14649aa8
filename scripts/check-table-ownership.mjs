#!/usr/bin/env node
// Table ownership (run by `npm run lint`): every table belongs to one module, the folder under src/
// whose entities/ map it (or scripts/table-owners.json, for tables that only migrations create).
// A module's code must not name another module's table, in SQL text or in a TypeORM call with the
// other module's entity; it asks the owner's repository instead. Exceptions are listed, with a
// reason, in scripts/table-ownership-allowlist.json; an entry that no longer matches fails too, so
// the list only shrinks. Usage: node scripts/check-table-ownership.mjs [--root <dir>]
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const rootArg = process.argv.indexOf('--root');
const root = rootArg > 0 ? process.argv[rootArg + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');
const OWNERS_FILE = 'scripts/table-owners.json';
const ALLOWLIST_FILE = 'scripts/table-ownership-allowlist.json';

/** Calls whose first argument names what they query: an entity class, or a table by its name. */
const TARGET_CALLS = new Set(
  (
    'find findOne findBy findOneBy findAndCount findAndCountBy findOneOrFail findOneByOrFail exists existsBy ' +
    'count countBy sum average minimum maximum save insert update upsert delete softDelete restore increment ' +
    'decrement remove create merge preload clear getRepository getTreeRepository createQueryBuilder from into ' +
    'innerJoin leftJoin innerJoinAndSelect leftJoinAndSelect InjectRepository'
  ).split(' '),
);
/** Query builder joins whose first argument may be a relation path (`alias.relation`). */
const RELATION_JOINS = new Set(['innerJoin', 'leftJoin', 'innerJoinAndSelect', 'leftJoinAndSelect']);
/** A literal is SQL when it holds one of these keywords (the service writes SQL keywords in capitals). */
const SQL_TEXT = /\b(SELECT|INSERT|UPDATE|DELETE|FROM|JOIN|WITH|TRUNCATE|TABLE)\b/;
/** A table after a keyword that names one, optionally quoted; more may follow after commas (`FROM a x, b y`). */
const TABLE_AFTER_KEYWORD =
  /\b(?:FROM|JOIN|INTO|UPDATE|TABLE|REFERENCES|TRUNCATE|USING)\s+(?:ONLY\s+)?"?([a-z_][a-z0-9_]*)"?/g;
const NEXT_IN_LIST = /^(?:\s+(?:AS\s+)?[a-z_][a-z0-9_]*)?\s*,\s*"?([a-z_][a-z0-9_]*)"?/;
/** A quoted identifier, or a name qualifying a column (`customers.id`). */
const IDENTIFIER_USE = /"([a-z_][a-z0-9_]*)"|(?<![\w."])([a-z_][a-z0-9_]*)\.[a-z_"]/g;

const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
const rel = (file) => relative(root, file).split(sep).join('/');
const moduleOf = (file) => rel(file).split('/')[1];
const parse = (file) => ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
const readJson = (file) => JSON.parse(readFileSync(join(root, file), 'utf8'));
const snakeCase = (name) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
const calleeName = (call) =>
  ts.isIdentifier(call.expression)
    ? call.expression.text
    : ts.isPropertyAccessExpression(call.expression)
      ? call.expression.name.text
      : undefined;
const visit = (node, fn) => {
  fn(node);
  ts.forEachChild(node, (child) => visit(child, fn));
};

/** Tables and entity classes of each module, and each entity's relations (property -> entity class). */
function readEntities(srcFiles) {
  const tables = new Map(); // table -> module
  const entities = new Map(); // class -> { table, relations }
  for (const file of srcFiles.filter((f) => rel(f).split('/').includes('entities'))) {
    for (const node of parse(file).statements) {
      const entity = ts.isClassDeclaration(node) && node.name && decorator(node, 'Entity');
      if (!entity) continue;
      const [arg] = entity.arguments;
      const name =
        arg && ts.isStringLiteral(arg)
          ? arg.text
          : arg && ts.isObjectLiteralExpression(arg)
            ? arg.properties.find((p) => p.name?.text === 'name')?.initializer?.text
            : undefined;
      const table = name ?? snakeCase(node.name.text);
      if (tables.has(table) && tables.get(table) !== moduleOf(file))
        throw new Error(`${rel(file)}: table ${table} has an entity in ${tables.get(table)} too`);
      tables.set(table, moduleOf(file));
      const relations = new Map();
      for (const member of node.members) {
        const relation = ['ManyToOne', 'OneToMany', 'OneToOne', 'ManyToMany']
          .map((d) => decorator(member, d))
          .find(Boolean);
        const target = relation?.arguments[0];
        if (target && ts.isArrowFunction(target) && ts.isIdentifier(target.body))
          relations.set(member.name.text, target.body.text);
      }
      entities.set(node.name.text, { table, relations });
    }
  }
  return { tables, entities };
}

function decorator(node, name) {
  const found = ts
    .getDecorators?.(node)
    ?.find((d) => ts.isCallExpression(d.expression) && calleeName(d.expression) === name);
  return found?.expression;
}

/** Every table a file names, as `{ line, table }` (one per table and line). */
function tablesNamedIn(file, tables, entities) {
  const source = parse(file);
  const found = new Map();
  const add = (pos, table) => {
    if (!tables.has(table)) return;
    const line = source.getLineAndCharacterOfPosition(pos).line + 1;
    found.set(`${line}:${table}`, { line, table });
  };

  // SQL text: each piece of a literal, when the literal as a whole reads as SQL
  const scanSql = (pieces) => {
    if (!SQL_TEXT.test(pieces.map((p) => p.text).join(' '))) return;
    for (const { text, pos } of pieces) {
      for (const m of text.matchAll(TABLE_AFTER_KEYWORD)) {
        add(pos + m.index, m[1]);
        let rest = text.slice(m.index + m[0].length);
        let offset = m.index + m[0].length;
        for (let next = NEXT_IN_LIST.exec(rest); next; next = NEXT_IN_LIST.exec(rest)) {
          add(pos + offset, next[1]);
          offset += next[0].length;
          rest = rest.slice(next[0].length);
        }
      }
      for (const m of text.matchAll(IDENTIFIER_USE)) add(pos + m.index, m[1] ?? m[2]);
    }
  };
  const piece = (node) => ({
    text: source.text.slice(node.getStart(source), node.end),
    pos: node.getStart(source),
  });

  // query builder aliases (alias -> entity classes), for joins along a relation (`'c.plan'`)
  const aliases = new Map();
  const alias = (name, entity) => aliases.set(name, new Set([...(aliases.get(name) ?? []), entity]));
  const calls = [];
  visit(source, (node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) scanSql([piece(node)]);
    else if (ts.isTemplateExpression(node))
      scanSql([piece(node.head), ...node.templateSpans.map((s) => piece(s.literal))]);
    else if (ts.isCallExpression(node)) calls.push(node);
    // a table handed over by name, as `pruneInBatches(db, { table: 'sessions', ... })`
    if (ts.isPropertyAssignment(node) && /^table(Name)?$/.test(node.name.getText(source))) {
      const value = node.initializer;
      if (ts.isStringLiteral(value)) add(value.getStart(source), value.text);
    }
  });
  for (const call of calls) {
    const [first, second] = call.arguments;
    const name = calleeName(call);
    if (!TARGET_CALLS.has(name) || !first) continue;
    if (ts.isIdentifier(first) && entities.has(first.text)) {
      add(first.getStart(source), entities.get(first.text).table);
      if (second && ts.isStringLiteral(second)) alias(second.text, first.text);
    } else if (ts.isStringLiteral(first) && tables.has(first.text)) add(first.getStart(source), first.text);
    // getRepository(Entity).createQueryBuilder('alias')
    const target = ts.isPropertyAccessExpression(call.expression) ? call.expression.expression : undefined;
    if (name === 'createQueryBuilder' && ts.isStringLiteral(first) && target && ts.isCallExpression(target)) {
      const [entity] = target.arguments;
      if (calleeName(target) === 'getRepository' && entity && ts.isIdentifier(entity))
        alias(first.text, entity.text);
    }
  }
  // relation joins, twice over so that a join along a joined alias resolves too
  for (let pass = 0; pass < 2; pass++) {
    for (const call of calls.filter((c) => RELATION_JOINS.has(calleeName(c)))) {
      const [path, joined] = call.arguments;
      const [from, property] = path && ts.isStringLiteral(path) ? path.text.split('.') : [];
      for (const entity of (property && aliases.get(from)) || []) {
        const target = entities.get(entity)?.relations.get(property);
        if (!target || !entities.has(target)) continue;
        add(path.getStart(source), entities.get(target).table);
        if (joined && ts.isStringLiteral(joined)) alias(joined.text, target);
      }
    }
  }
  return [...found.values()].sort((a, b) => a.line - b.line || a.table.localeCompare(b.table));
}

/** Tables that migrations create and that have no owner (neither an entity nor table-owners.json). */
function unownedTables(tables) {
  const dir = join(root, 'src', 'database', 'migrations');
  if (!existsSync(dir)) return [];
  return walk(dir).flatMap((file) =>
    [
      ...readFileSync(file, 'utf8').matchAll(
        /CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF NOT EXISTS\s+)?"?(\w+)"?/g,
      ),
    ]
      .filter((m) => !tables.has(m[1]))
      .map((m) => `${rel(file)}: table ${m[1]} has no owner: give it an entity or map it in ${OWNERS_FILE}`),
  );
}

function main() {
  const srcFiles = walk(join(root, 'src')).filter((f) => rel(f).split('/').length > 2);
  const { tables, entities } = readEntities(srcFiles);
  for (const [table, module] of Object.entries(readJson(OWNERS_FILE).tables)) tables.set(table, module);
  const problems = unownedTables(tables);

  // cross-module references, grouped by file and table
  const references = new Map();
  for (const file of srcFiles.filter((f) => !/\/migrations\/|\.(e2e-)?spec\.ts$/.test(rel(f)))) {
    const module = moduleOf(file);
    for (const { line, table } of tablesNamedIn(file, tables, entities)) {
      if (tables.get(table) === module) continue;
      const key = `${rel(file)} ${table}`;
      const message = `${rel(file)}:${line}: module ${module} names table ${table} of module ${tables.get(table)}`;
      references.set(key, [...(references.get(key) ?? []), message]);
    }
  }

  // the entries of a file and table allow exactly as many references as their counts add up to
  const allowed = new Map();
  for (const { file, table, count } of readJson(ALLOWLIST_FILE).entries)
    allowed.set(`${file} ${table}`, (allowed.get(`${file} ${table}`) ?? 0) + count);
  for (const [key, count] of allowed) {
    const found = references.get(key) ?? [];
    references.delete(key);
    const [file, table] = key.split(' ');
    if (found.length > count)
      problems.push(...found, `  (${ALLOWLIST_FILE} allows ${count} of these ${found.length})`);
    else if (found.length < count)
      problems.push(
        `${ALLOWLIST_FILE}: ${file} names ${table} ${found.length} times, not ${count}: ` +
          (found.length ? `lower the count` : 'remove the entry'),
      );
  }
  problems.push(
    ...[...references.values()].flat().sort((a, b) => a.localeCompare(b, 'en', { numeric: true })),
  );

  if (problems.length) {
    console.log(problems.join('\n'));
    console.log(
      `\nA module's code names only its own tables: call the owning module's repository instead, ` +
        `or (rarely, with a reason) list the reference in ${ALLOWLIST_FILE}.`,
    );
    process.exit(1);
  }
}

main();
