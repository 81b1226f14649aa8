import type { EntityManager } from 'typeorm';

/**
 * A write that rides along with another statement of its unit of work instead of costing a round
 * trip of its own: one data-modifying common table expression (an `INSERT ... SELECT` over a JSON
 * parameter), with a fixed text so that the carrier stays one prepared statement per shape. The
 * audit record of a write is one: it rides with the write's events.
 */
export interface Rider {
  /** Names the text (`sql`) in the carrier's prepared statement's name. */
  readonly name: string;
  /** The expression's text; `$1` is its one parameter, renumbered when it rides. */
  readonly sql: string;
  readonly value: unknown;
}

/** A statement's name and text (the shape of `Statement`). */
interface Named {
  readonly name: string;
  readonly text: string;
}

/** Riders waiting for a carrier, per transaction (its `EntityManager`). */
const waiting = new WeakMap<EntityManager, Rider[]>();

/** Adds `rider` to the transaction `tx`: it goes with the next carrier, or alone before the commit. */
export function addRider(tx: EntityManager, rider: Rider): void {
  const list = waiting.get(tx);
  if (list) list.push(rider);
  else waiting.set(tx, [rider]);
}

/** The transaction's waiting riders, taken (they are sent by the caller). */
export function takeRiders(tx: EntityManager): Rider[] {
  const list = waiting.get(tx) ?? [];
  waiting.delete(tx);
  return list;
}

/**
 * `statement` (a `WITH ...` statement with `count` parameters) with `riders` spliced in front of
 * its own expressions, their parameters numbered after its own.
 */
export function carrying(
  statement: Named,
  count: number,
  riders: Rider[],
): { statement: Named; values: unknown[] } {
  if (!/^\s*WITH\s/i.test(statement.text)) throw new Error(`${statement.name} cannot carry riders`);
  return {
    statement: {
      name: [statement.name, ...riders.map((r) => r.name)].join('+'),
      text: statement.text.replace(/^\s*WITH\s/i, `WITH ${expressions(riders, count)},\n`),
    },
    values: riders.map((r) => r.value),
  };
}

/** The riders alone, as one statement (sent by the unit of work before it commits). */
export function ridersAlone(riders: Rider[]): { text: string; values: unknown[] } {
  return { text: `WITH ${expressions(riders, 0)} SELECT 1`, values: riders.map((r) => r.value) };
}

const expressions = (riders: Rider[], count: number) =>
  riders.map((r, i) => `rider_${i} AS (${r.sql.replace(/\$1\b/g, `$${count + i + 1}`)})`).join(',\n');
