import { Injectable } from '@nestjs/common';
import { Statement, Statements } from '../database/statements';
import { Transactions } from '../database/transactional';
import { pruneInBatches } from '../database/prune';
import { Clock } from '../common/clock';
import {
  ColumnRange,
  defaultPartitionRows,
  eachPartition,
  maintainPartitions,
  namedPartitions,
  PARTITION_UPKEEP_LOCK,
  PartitionedColumn,
} from '../database/partitions';
import type { CursorWindow } from '../common/http/pagination';
import { GenerateSql } from '../database/generate-sql';
import { wellFormedJson } from '../common/json/well-formed';

/** The tables split by UTC day of their event's time, and their partition columns; each references the one before. */
const EVENT_PARTITIONS: PartitionedColumn[] = [
  { spec: { table: 'events', unit: 'day' }, column: 'created_at' },
  { spec: { table: 'webhook_deliveries', unit: 'day' }, column: 'event_created_at' },
  { spec: { table: 'webhook_attempts', unit: 'day' }, column: 'event_created_at' },
];

/** Days of events a page's statement names (today and the two before); older and newer days are read by one query each. */
const NAMED_DAYS = 3;

/** An event row as the API shows it. */
export interface EventRow {
  id: string;
  project_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
}

/** One event to insert: its id, type, data (without `customerSeq`) and optional unique key. */
export interface EventInsert {
  id: string;
  type: string;
  data: Record<string, unknown>;
  uniqueKey?: string;
}

/** A delivery claimed by a worker, with what it needs to post it. */
/**
 * A delivery's key: its id and its event's instant, the day its partition holds (an id alone
 * would be looked for in every day's partition).
 */
export interface DeliveryKey {
  id: number;
  created_at: Date;
}

/** An instant for the generated SQL's sample calls. */
const SAMPLE_EVENT_AT = new Date('2026-03-15T12:00:00Z');

export interface ClaimedDelivery {
  id: number;
  attempts: number;
  project_id: string;
  event_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * A row of `event_schedule_cursors`: how far a time-boundary scheduler has scanned. Each row is
 * made by a migration.
 */
export type ScheduleCursorKind = 'windows' | 'grants';

/** A window at a boundary, with the snapshot its event carries. */
export interface BoundaryRow {
  id: number;
  project_id: string;
  customer_id: number;
  username: string;
  plan_id: number;
  plan_name: string;
  plan_group: string;
  valid_from: Date;
  valid_to: Date | null;
  status: 'active' | 'cancelled';
  source: 'signup' | 'code' | 'activation';
  code_id: number | null;
  trial: boolean;
}

export interface DeliveryRow {
  id: number;
  endpoint_id: string;
  status: string;
  next_attempt_at: Date;
  created_at: Date;
  attempts: {
    attemptedAt: string;
    outcome: string;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
  }[];
}

/**
 * Fan-out, shared by both inserts: every enabled endpoint of the project whose filter takes the
 * type gets a delivery, due at once.
 */
const FAN_OUT = `dl AS (
    INSERT INTO webhook_deliveries (project_id, event_id, event_created_at, endpoint_id, next_attempt_at)
    SELECT $1, ev.id, ev.created_at, w.id, ev.created_at
      FROM ev JOIN webhook_endpoints w
        ON w.project_id = $1 AND w.enabled AND (cardinality(w.event_types) = 0 OR ev.type = ANY (w.event_types))
    RETURNING 1
  )
  SELECT id, type FROM ev`;

/**
 * The unique keys of the events of `input` (rows `x` with `x.e` the event and `x.ord` its
 * place), taken in `event_unique_keys`: a key already there (or taken by a transaction not yet
 * committed, which this one waits for) is not returned, and its event is dropped (`KEYED`).
 */
const uniqueKeys = (input: string) => `uk AS (
    INSERT INTO event_unique_keys (unique_key, created_at)
    SELECT DISTINCT x.e->>'uniqueKey', now() FROM ${input} WHERE x.e->>'uniqueKey' IS NOT NULL
    ON CONFLICT (unique_key) DO NOTHING
    RETURNING unique_key
  )`;

/** Keeps an event with no key, or the first one of a key taken by `uniqueKeys`. */
const KEYED = `x.e->>'uniqueKey' IS NULL OR (x.e->>'uniqueKey' IN (SELECT unique_key FROM uk)
      AND x.ord = (SELECT min(y.ord) FROM input y WHERE y.e->>'uniqueKey' = x.e->>'uniqueKey'))`;

/**
 * Events naming a customer, in one statement: takes the next `$3` numbers of the customer's
 * sequence (the row of `customer_event_seqs` stays locked until the caller's transaction ends,
 * so numbers follow commit order per customer), inserts the events with `customerSeq` in their
 * data (one with a `unique_key` already used is dropped) and their deliveries.
 * `$1` project, `$2` customer, `$3` count, `$4` a JSON array of `EventInsert`.
 */
/** Exported for the benchmark's baselines (bench/baseline.ts), which run the same text in a redemption. */
export const INSERT_FOR_CUSTOMER: Statement = {
  name: 'events.insert-for-customer',
  carrier: true,
  text: `WITH seq AS (
    INSERT INTO customer_event_seqs (customer_id, project_id, seq) VALUES ($2, $1, $3)
    ON CONFLICT (customer_id) DO UPDATE SET seq = customer_event_seqs.seq + EXCLUDED.seq
    RETURNING seq
  ), input AS (
    SELECT x.e, x.ord FROM jsonb_array_elements($4::jsonb) WITH ORDINALITY AS x(e, ord)
  ), ${uniqueKeys('input x')}, ev AS (
    INSERT INTO events (id, project_id, type, customer_id, customer_seq, data, unique_key)
    SELECT x.e->>'id', $1, x.e->>'type', $2, (seq.seq - $3 + x.ord)::int,
           (x.e->'data') || jsonb_build_object('customerSeq', seq.seq - $3 + x.ord), x.e->>'uniqueKey'
      FROM seq, input x
     WHERE ${KEYED}
    RETURNING id, type, created_at
  ), ${FAN_OUT}`,
};

/**
 * The worker's claim (`EventsRepository.claimDue`). It visits the endpoints that have pending
 * deliveries, one probe each of the index of pending deliveries by endpoint and due time
 * (skipping from one endpoint to the next; the order names both columns so that only that index
 * serves it), and reads, and locks, each one's due deliveries up to its free places: `$3` posts at
 * once to an endpoint of `$7` (those that answered the worker) that is not failing, `$6` to any
 * other, less the posts in flight to it (`$4`/`$5`, ids and counts). An endpoint at its limit
 * costs one probe whatever its backlog. Then it takes the `$1` that are first in their endpoint's
 * turn, oldest first, each for a lease of `$2` seconds. (The inner `LIMIT $3` only tells the
 * planner how few rows an endpoint gives; the outer one stops the locking read at the free places.)
 */
export const CLAIM_DUE: Statement = {
  name: 'events.claim-due',
  text: `WITH RECURSIVE busy AS (
    SELECT * FROM unnest($4::varchar[], $5::int[]) AS b(endpoint_id, in_flight)
  ), endpoints AS (
    (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending'
      ORDER BY endpoint_id, next_attempt_at LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
             WHERE d.status = 'pending' AND d.endpoint_id > e.endpoint_id
             ORDER BY d.endpoint_id, d.next_attempt_at LIMIT 1)
      FROM endpoints e WHERE e.endpoint_id IS NOT NULL
  ), placed AS (
    SELECT due.id, due.event_created_at, due.next_attempt_at,
           COALESCE(busy.in_flight, 0)
             + row_number() OVER (PARTITION BY e.endpoint_id ORDER BY due.next_attempt_at, due.id) AS place
      FROM endpoints e
      JOIN webhook_endpoints w ON w.id = e.endpoint_id
      LEFT JOIN busy ON busy.endpoint_id = e.endpoint_id
      CROSS JOIN LATERAL (
        SELECT x.* FROM (
          SELECT d.id, d.event_created_at, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.endpoint_id = e.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= now()
           ORDER BY d.next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED) x
         LIMIT GREATEST(CASE WHEN w.failing_since IS NULL AND w.id = ANY ($7::varchar[]) THEN $3 ELSE $6 END
                        - COALESCE(busy.in_flight, 0), 0)) due
  ), picked AS (
    SELECT id, event_created_at FROM placed ORDER BY place, next_attempt_at LIMIT $1
  )
  UPDATE webhook_deliveries d
     SET attempts = d.attempts + 1, next_attempt_at = now() + make_interval(secs => $2), updated_at = now()
    FROM picked, events e, webhook_endpoints w
   WHERE d.id = picked.id AND d.event_created_at = picked.event_created_at
     AND e.id = d.event_id AND e.created_at = d.event_created_at AND w.id = d.endpoint_id
  RETURNING d.id::float8 AS id, d.attempts, d.project_id, e.id AS event_id, e.type, e.data, e.created_at,
            w.id AS endpoint_id, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at`,
};

/**
 * The successes of a batch (`EventsRepository.finishDelivered`): `$1` ids, `$2` attempts, `$3`
 * statuses, `$4` durations, `$5` their events' instants (each delivery's key with its id: its
 * day's partition).
 */
const FINISH_DELIVERED: Statement = {
  name: 'events.finish-delivered',
  text: `WITH done AS (
    UPDATE webhook_deliveries d SET status = 'delivered', updated_at = now()
      FROM unnest($1::bigint[], $2::int[], $5::timestamptz[]) AS c(id, attempts, created_at)
     WHERE d.id = c.id AND d.event_created_at = c.created_at AND d.attempts = c.attempts AND d.status = 'pending'
    RETURNING d.id, d.endpoint_id, d.event_created_at
  ), recorded AS (
    INSERT INTO webhook_attempts (delivery_id, event_created_at, attempted_at, outcome, status_code, error, duration_ms)
    SELECT done.id, done.event_created_at, now(), 'delivered', r.status_code, NULL, r.duration_ms
      FROM done JOIN unnest($1::bigint[], $3::int[], $4::int[]) AS r(id, status_code, duration_ms) ON r.id = done.id
  ), healed AS (
    UPDATE webhook_endpoints SET failing_since = NULL
     WHERE id IN (SELECT endpoint_id FROM done) AND failing_since IS NOT NULL
  )
  SELECT id::float8 AS id FROM done`,
};

/** Events naming no customer (`code.revoked`): `$1` project, `$2` a JSON array of `EventInsert`. */
const INSERT_WITHOUT_CUSTOMER: Statement = {
  name: 'events.insert',
  carrier: true,
  text: `WITH input AS (
    SELECT x.e, x.ord FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(e, ord)
  ), ${uniqueKeys('input x')}, ev AS (
    INSERT INTO events (id, project_id, type, data, unique_key)
    SELECT x.e->>'id', $1, x.e->>'type', x.e->'data', x.e->>'uniqueKey'
      FROM input x
     WHERE ${KEYED}
    RETURNING id, type, created_at
  ), ${FAN_OUT}`,
};

/**
 * Boundaries of one kind in `($1, $2]` not yet announced (no event with `<key>:<window id>`),
 * oldest first, at most `$3`; `at` is the boundary's instant, a column of `s` or an expression.
 */
const boundaries = (at: string, key: string, extra: string) => `
  SELECT s.id, s.project_id, s.customer_id, c.username, s.plan_id, p.name AS plan_name, s.plan_group,
         s.valid_from, s.valid_to, s.status, s.source, s.code_id, s.trial
    FROM subscriptions s
    JOIN customers c ON c.id = s.customer_id AND c.project_id = s.project_id
    JOIN plans p ON p.id = s.plan_id AND p.project_id = s.project_id
   WHERE s.status = 'active' AND ${at} > $1 AND ${at} <= $2 ${extra}
     AND NOT EXISTS (SELECT 1 FROM event_unique_keys k WHERE k.unique_key = '${key}:' || s.id)
   ORDER BY ${at}, s.id
   LIMIT $3`;

/**
 * When `trial.ending` is due: `max(validFrom, validTo - lead)`, the lead (`$4`, an interval)
 * taken off in UTC as the durations of codes are added.
 */
const TRIAL_ENDING_AT = `GREATEST(s.valid_from, (s.valid_to AT TIME ZONE 'UTC' - $4::interval) AT TIME ZONE 'UTC')`;

/**
 * The boundary scans and the scheduler cursors run every second or so on one replica: named, so
 * that PostgreSQL plans each once per connection, not on every scan.
 */
const STARTS_BETWEEN: Statement = {
  name: 'events.starts-between',
  text: boundaries('s.valid_from', 'subscription.started', 'AND s.valid_from > s.created_at'),
};
const ENDS_BETWEEN: Statement = {
  name: 'events.ends-between',
  text: boundaries('s.valid_to', 'subscription.ended', ''),
};
const TRIAL_ENDING_BETWEEN: Statement = {
  name: 'events.trial-ending-between',
  text: boundaries(
    TRIAL_ENDING_AT,
    'trial.ending',
    `AND s.trial AND s.valid_to > $2
         AND s.valid_to <= (($2::timestamptz AT TIME ZONE 'UTC') + $4::interval) AT TIME ZONE 'UTC'`,
  ),
};
const TRIAL_ENDS_BETWEEN: Statement = {
  name: 'events.trial-ends-between',
  text: boundaries('s.valid_to', 'trial.ended', 'AND s.trial'),
};
const LOCK_CURSOR: Statement = {
  name: 'events.lock-cursor',
  text: `SELECT scanned_to FROM event_schedule_cursors WHERE kind = $1 FOR UPDATE SKIP LOCKED`,
};
const ADVANCE_CURSOR: Statement = {
  name: 'events.advance-cursor',
  text: `UPDATE event_schedule_cursors SET scanned_to = $2 WHERE kind = $1 AND scanned_to < $2`,
};

/**
 * Every SQL statement of the events tables: `events`, `event_unique_keys`, `customer_event_seqs`,
 * `event_schedule_cursors`, `webhook_deliveries` and `webhook_attempts`.
 */
@Injectable()
export class EventsRepository {
  constructor(
    private readonly transactions: Transactions,
    private readonly statements: Statements,
    private readonly clock: Clock,
  ) {}

  /** Inserts events of one customer (or of none) and their deliveries, in the current transaction. */
  @GenerateSql(
    {
      name: 'for a customer',
      params: [
        'prj_1',
        1,
        [
          {
            id: 'evt_2',
            type: 'subscription.created',
            data: { customerId: 1, subscriptionId: 1 },
            uniqueKey: 'subscription.created:1',
          },
        ],
      ],
    },
    {
      name: 'for no customer',
      params: ['prj_1', null, [{ id: 'evt_3', type: 'code.revoked', data: { codeId: 1 } }]],
    },
  )
  async insert(
    projectId: string,
    customerId: number | null,
    events: EventInsert[],
  ): Promise<{ id: string; type: string }[]> {
    if (events.length === 0) return [];
    const json = wellFormedJson(events);
    return customerId === null
      ? this.statements.rows(undefined, INSERT_WITHOUT_CUSTOMER, [projectId, json])
      : this.statements.rows(undefined, INSERT_FOR_CUSTOMER, [projectId, customerId, events.length, json]);
  }

  /** A page of the project's events, newest first; `after` is the last (createdAt, id) of the previous page. */
  @GenerateSql(
    { name: 'first page', params: ['prj_1', {}, { limit: 20 }] },
    {
      name: 'of a type and a customer, after a cursor',
      params: [
        'prj_1',
        { type: 'customer.created', customerId: 1 },
        { limit: 20, after: { createdAt: '2026-03-15T12:00:00.000Z', id: 'evt_9' } },
      ],
    },
  )
  async list(
    projectId: string,
    filter: { type?: string; customerId?: number },
    { limit, after }: CursorWindow<{ createdAt: string; id: string }>,
  ): Promise<EventRow[]> {
    const where = ['e.project_id = $1'];
    const values: unknown[] = [projectId];
    if (filter.type !== undefined) where.push(`e.type = $${values.push(filter.type)}`);
    if (filter.customerId !== undefined) where.push(`e.customer_id = $${values.push(filter.customerId)}`);
    let before: ColumnRange | undefined;
    if (after) {
      const at = `$${values.push(after.createdAt)}::timestamptz`;
      where.push(`(e.created_at, e.id) < (${at}, $${values.push(after.id)})`);
      // the cursor's own instant may hold the next rows (a later id came first)
      before = { to: `${at} + interval '1 microsecond'` };
    }
    // a page is looked for day by day, newest first: a customer with events today reads today's
    // partition only, not the first rows of every day kept
    return this.transactions.tx.query(
      eachPartition(
        namedPartitions('day', this.clock.now(), NAMED_DAYS),
        `SELECT e.id, e.project_id, e.type, e.data, e.created_at FROM events e WHERE ${where.join(' AND ')}`,
        'e',
        'created_at',
        'DESC',
        `$${values.push(limit)}`,
        before,
      ),
      values,
    );
  }

  @GenerateSql({ params: ['prj_1', 'evt_1'] })
  async get(projectId: string, eventId: string): Promise<EventRow | undefined> {
    const [row] = await this.transactions.tx.query(
      'SELECT id, project_id, type, data, created_at FROM events WHERE id = $1 AND project_id = $2',
      [eventId, projectId],
    );
    return row;
  }

  /** The event's deliveries, oldest first, each with its attempts. */
  @GenerateSql({ params: ['prj_1', 'evt_1'] })
  deliveriesOf(projectId: string, eventId: string): Promise<DeliveryRow[]> {
    return this.transactions.tx.query(
      `SELECT d.id::float8 AS id, d.endpoint_id, d.status, d.next_attempt_at, d.created_at,
              COALESCE((SELECT jsonb_agg(jsonb_build_object(
                         'attemptedAt', to_char(a.attempted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                         'outcome', a.outcome, 'statusCode', a.status_code, 'error', a.error,
                         'durationMs', a.duration_ms) ORDER BY a.id)
                          FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.event_created_at = d.event_created_at),
                       '[]'::jsonb) AS attempts
         FROM webhook_deliveries d
        WHERE d.event_id = $1 AND d.project_id = $2
        ORDER BY d.id`,
      [eventId, projectId],
    );
  }

  /** New deliveries of an event to the given endpoints, due now. */
  @GenerateSql({ params: ['prj_1', 'evt_1', ['we_1']] })
  async addDeliveries(projectId: string, eventId: string, endpointIds: string[]): Promise<number> {
    if (endpointIds.length === 0) return 0;
    const rows: unknown[] = await this.transactions.tx.query(
      `INSERT INTO webhook_deliveries (project_id, event_id, event_created_at, endpoint_id, next_attempt_at)
       SELECT e.project_id, e.id, e.created_at, unnest($3::varchar[]), now()
         FROM events e WHERE e.id = $2 AND e.project_id = $1 RETURNING id`,
      [projectId, eventId, endpointIds],
    );
    return rows.length;
  }

  /**
   * Claims up to `limit` due deliveries, fairly across endpoints: at most `perEndpoint.proven` of
   * an endpoint of `proven` that is not failing, `perEndpoint.unproven` of any other, counting the
   * ones this worker already posts to it (`inFlight`, endpoint id and count), an endpoint at that count
   * skipped, and the others taken in turns, oldest due first. Under `FOR UPDATE SKIP LOCKED` (two
   * workers never claim the same one): each gets one more attempt and is due again when the lease
   * ends, so a delivery whose worker died is taken again then. Returns what posting needs.
   */
  @GenerateSql({ params: [10, 30, { proven: 8, unproven: 2 }, [['we_1', 8]], ['we_1']] })
  async claimDue(
    limit: number,
    leaseSeconds: number,
    perEndpoint: { proven: number; unproven: number },
    inFlight: ReadonlyArray<readonly [string, number]>,
    proven: readonly string[],
  ): Promise<ClaimedDelivery[]> {
    return this.statements.rows<ClaimedDelivery>(undefined, CLAIM_DUE, [
      limit,
      leaseSeconds,
      perEndpoint.proven,
      inFlight.map(([id]) => id),
      inFlight.map(([, n]) => n),
      perEndpoint.unproven,
      proven,
    ]);
  }

  /**
   * Ends claimed attempts that were delivered, in one statement: each delivery whose claim still
   * holds (same attempt, still pending) is delivered with its attempt recorded, and its endpoint
   * is no longer failing. Returns the ids it ended (a claim that no longer holds is left alone).
   */
  @GenerateSql({
    params: [[{ id: 1, attempts: 1, created_at: SAMPLE_EVENT_AT, statusCode: 200, durationMs: 12 }]],
  })
  async finishDelivered(
    claims: ReadonlyArray<DeliveryKey & { attempts: number; statusCode: number | null; durationMs: number }>,
  ): Promise<number[]> {
    const rows = await this.statements.rows<{ id: number }>(undefined, FINISH_DELIVERED, [
      claims.map((c) => c.id),
      claims.map((c) => c.attempts),
      claims.map((c) => c.statusCode),
      claims.map((c) => c.durationMs),
      claims.map((c) => c.created_at),
    ]);
    return rows.map((r) => r.id);
  }

  /**
   * Ends a claimed attempt: `next` is 'delivered', 'failed' (no retry) or a wait in ms before the
   * next attempt. Only if the claim still holds (same attempt, still pending); false otherwise.
   */
  @GenerateSql(
    {
      name: 'delivered',
      params: [
        { id: 1, attempts: 1, created_at: SAMPLE_EVENT_AT },
        'delivered',
        { outcome: 'success', statusCode: 200, error: null, durationMs: 120 },
      ],
    },
    {
      name: 'retried later',
      params: [
        { id: 1, attempts: 1, created_at: SAMPLE_EVENT_AT },
        60_000,
        { outcome: 'failure', statusCode: 503, error: 'Service Unavailable', durationMs: 80 },
      ],
    },
  )
  async finishAttempt(
    claim: DeliveryKey & { attempts: number },
    next: 'delivered' | 'failed' | number,
    attempt: { outcome: string; statusCode: number | null; error: string | null; durationMs: number },
  ): Promise<boolean> {
    const [, affected] = (await this.transactions.tx.query(
      typeof next === 'number'
        ? `UPDATE webhook_deliveries SET next_attempt_at = now() + make_interval(secs => $3), updated_at = now()
            WHERE id = $1 AND event_created_at = $4 AND attempts = $2 AND status = 'pending'`
        : `UPDATE webhook_deliveries SET status = $3, updated_at = now()
            WHERE id = $1 AND event_created_at = $4 AND attempts = $2 AND status = 'pending'`,
      [claim.id, claim.attempts, typeof next === 'number' ? next / 1000 : next, claim.created_at],
    )) as [unknown, number];
    if (!affected) return false;
    await this.transactions.tx.query(
      `INSERT INTO webhook_attempts (delivery_id, event_created_at, attempted_at, outcome, status_code, error, duration_ms)
       SELECT d.id, d.event_created_at, now(), $2, $3, $4, $5 FROM webhook_deliveries d
        WHERE d.id = $1 AND d.event_created_at = $6`,
      [
        claim.id,
        attempt.outcome,
        attempt.statusCode,
        attempt.error?.slice(0, 500) ?? null,
        attempt.durationMs,
        claim.created_at,
      ],
    );
    return true;
  }

  /** Gives a claimed delivery back at once (shutdown while it was being posted). */
  @GenerateSql({ params: [{ id: 1, attempts: 1, created_at: SAMPLE_EVENT_AT }] })
  async release(claim: DeliveryKey & { attempts: number }): Promise<void> {
    await this.transactions.tx.query(
      `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = now()
        WHERE id = $1 AND event_created_at = $3 AND attempts = $2 AND status = 'pending'`,
      [claim.id, claim.attempts, claim.created_at],
    );
  }

  /** A disabled endpoint's pending deliveries stop: they are skipped, never sent. */
  @GenerateSql({ params: ['we_1'] })
  async skipPending(endpointId: string): Promise<void> {
    await this.transactions.tx.query(
      `UPDATE webhook_deliveries SET status = 'skipped', updated_at = now() WHERE endpoint_id = $1 AND status = 'pending'`,
      [endpointId],
    );
  }

  /**
   * The partitions of events, deliveries and attempts (a UTC day each), by one replica at a time
   * (an advisory lock, tried): makes the days from the one holding `from` to the one holding `to`
   * that are missing, and drops the days that end at or before `before` (attempts, deliveries,
   * then events: each references the next), with the unique keys of events made before it. Null
   * when another replica holds the lock.
   */
  @GenerateSql({
    params: [
      new Date('2020-01-15T00:00:00Z'),
      new Date('2020-01-17T00:00:00Z'),
      new Date('2019-12-01T00:00:00Z'),
    ],
  })
  async maintainPartitions(
    from: Date,
    to: Date,
    before: Date,
  ): Promise<{ created: string[]; dropped: string[]; keys: number } | null> {
    const tx = this.transactions.tx;
    const done = await maintainPartitions(tx, [PARTITION_UPKEEP_LOCK, 2], EVENT_PARTITIONS, from, to, before);
    if (!done) return null;
    const keys = await pruneInBatches(tx, {
      table: 'event_unique_keys',
      condition: 'created_at < $1',
      values: [before],
    });
    return { ...done, keys };
  }

  /** Rows of events, deliveries and attempts that no day's partition holds (their DEFAULT partitions'). */
  @GenerateSql({ params: [] })
  defaultPartitionRows(): Promise<Array<{ table: string; rows: number }>> {
    return defaultPartitionRows(this.transactions.tx, EVENT_PARTITIONS);
  }

  /** Age in seconds of the oldest event with a pending delivery (0 when none). */
  @GenerateSql({ params: [] })
  async oldestUndeliveredAgeSeconds(): Promise<number> {
    const [row] = await this.transactions.tx.query(
      `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(d.event_created_at)), 0)::float8 AS age
         FROM webhook_deliveries d WHERE d.status = 'pending'`,
    );
    return Number(row.age);
  }

  /**
   * Locks the named scheduler cursor (`windows`: this module's boundary scheduler; `grants`: the
   * entitlements module's) for the rest of the current transaction; undefined when another
   * replica holds it.
   */
  @GenerateSql({ params: ['windows'] })
  async lockCursor(kind: ScheduleCursorKind): Promise<Date | undefined> {
    const [row] = await this.statements.rows<{ scanned_to: Date }>(undefined, LOCK_CURSOR, [kind]);
    return row?.scanned_to;
  }

  @GenerateSql({ params: ['windows', new Date('2026-03-15T12:00:00Z')] })
  async advanceCursor(kind: ScheduleCursorKind, to: Date): Promise<void> {
    await this.statements.run(undefined, ADVANCE_CURSOR, [kind, to]);
  }

  /** Which of `keys` an event already holds (in `event_unique_keys`). */
  @GenerateSql({ params: [['subscription.ended:1', 'grant.expired:1']] })
  async existingUniqueKeys(keys: string[]): Promise<string[]> {
    if (keys.length === 0) return [];
    const rows: { unique_key: string }[] = await this.transactions.tx.query(
      `SELECT unique_key FROM event_unique_keys WHERE unique_key = ANY ($1::varchar[])`,
      [keys],
    );
    return rows.map((r) => r.unique_key);
  }

  /** Windows created to start later whose start is in `(from, to]` and not yet announced. */
  @GenerateSql({ params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), 100] })
  startsBetween(from: Date, to: Date, limit: number): Promise<BoundaryRow[]> {
    return this.statements.rows<BoundaryRow>(undefined, STARTS_BETWEEN, [from, to, limit]);
  }

  /** Windows whose end is in `(from, to]` and whose end is not yet announced (expired or replaced). */
  @GenerateSql({ params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), 100] })
  endsBetween(from: Date, to: Date, limit: number): Promise<BoundaryRow[]> {
    return this.statements.rows<BoundaryRow>(undefined, ENDS_BETWEEN, [from, to, limit]);
  }

  /**
   * Trial windows whose `trial.ending` is due in `(from, to]` and not yet announced, still in effect
   * at `to` (a trial that ended before the scan gets none); `lead` is a PostgreSQL interval. The
   * due instant is at most `lead` before the end, so the trials' index is read from `to` to
   * `to + lead` only.
   */
  @GenerateSql({
    params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), 100, '3 days'],
  })
  trialEndingBetween(from: Date, to: Date, limit: number, lead: string): Promise<BoundaryRow[]> {
    return this.statements.rows<BoundaryRow>(undefined, TRIAL_ENDING_BETWEEN, [from, to, limit, lead]);
  }

  /** Trial windows whose end is in `(from, to]` and whose `trial.ended` is not yet told (expired or replaced). */
  @GenerateSql({ params: [new Date('2026-03-01T00:00:00Z'), new Date('2026-03-15T12:00:00Z'), 100] })
  trialEndsBetween(from: Date, to: Date, limit: number): Promise<BoundaryRow[]> {
    return this.statements.rows<BoundaryRow>(undefined, TRIAL_ENDS_BETWEEN, [from, to, limit]);
  }
}
