import type { ZoneHistory } from './calendar';

export type { ZoneHistory } from './calendar';

/** A zone as stored: its current value and its changes, in time order (null: follows the project). */
export interface ZoneChanges {
  zone: string | null;
  changes: ReadonlyArray<{ at: number; from: string | null; to: string | null }>;
}

/** Stored changes as the rules take them (`[at, from, to]` rows). */
export const toZoneChanges = (json: {
  zone: string | null;
  changes: Array<[number, string | null, string | null]>;
}): ZoneChanges => ({
  zone: json.zone,
  changes: json.changes.map(([at, from, to]) => ({ at, from, to })),
});

/** The zone at instant `ms`: the `from` of the earliest change after it, else the current one. */
const zoneAt = (z: ZoneChanges, ms: number): string | null => {
  for (const c of z.changes) if (c.at > ms) return c.from;
  return z.zone;
};

/**
 * A customer's zone over time: at each instant its own zone as it was then, else its project's as
 * it was then. One entry from the start, then one at each change of either.
 */
export function customerZones(project: ZoneChanges, customer: ZoneChanges): ZoneHistory {
  const at = (ms: number) => zoneAt(customer, ms) ?? zoneAt(project, ms) ?? 'UTC';
  const instants = [...new Set([...project.changes, ...customer.changes].map((c) => c.at))].sort(
    (x, y) => x - y,
  );
  const history: Array<{ from: number | null; zone: string }> = [
    { from: null, zone: at(instants.length ? instants[0] - 1 : 0) },
  ];
  for (const ms of instants) history.push({ from: ms, zone: at(ms) });
  return history;
}
