/**
 * Benchmark: starts the built service (dist/) on its own PostgreSQL (embedded, or DATABASE_URL),
 * seeds a project with BENCH_CUSTOMERS customers (3 identifiers each), then
 *
 *   1. one client, a hand-written keep-alive loop: p50/p95/p99 of the lookups and searches;
 *   2. autocannon over keep-alive connections: req/s, p50, p99, errors and the service's peak RSS
 *      for info, customer by id, resolve, search, plans, redemptions (distinct codes), and
 *      entitlement checks and usage records (over 10,000 customers, and on one hot customer);
 *      then, with `dblimit` in BENCH_PARTS and pgbench found, consumes on PostgreSQL alone:
 *      consume transactions captured from a second instance of the service
 *      (bench/consume-limit.ts), one at a time and in the batches it forms, replayed by pgbench,
 *      with PostgreSQL's CPU;
 *   3. against the limit (bench/baseline.ts): a node:http + pg and an Express + pg handler of the
 *      same work (the service's own statements, prepared, the key cached; Express served through
 *      requests and responses born as its own objects, as the service is), and pgbench on the same
 *      statements with the service's pool size as clients, for `GET /customers/:id` and
 *      `POST /redemptions`; the sides take turns in rounds (order rotated every round) and each
 *      service/side req/s ratio is the median over the rounds; CPU ms per request of each process
 *      and of PostgreSQL;
 *   4. a redemption for a customer whose group already holds 1, 100 and 1,000 windows
 *      (BENCH_WINDOWS), a fresh customer per redemption; an entitlement check and a consume, one
 *      client, for a customer whose current period holds 1, 1,000 and 10,000 records
 *      (BENCH_LEDGER), and for one whose group holds 1, 100 and 1,000 windows (monthly, abutting);
 *   5. `grants` (BENCH_PARTS=grants, not in the default): a check and a consume, one client, for a
 *      customer holding 1 active grant of a feature, one holding 100, and one holding 1 active and
 *      1,000 ended ones, in rotating rounds; each one's time per request against the 1-grant one.
 *   6. `calendar` (BENCH_PARTS=calendar, not in the default): checks, a few clients, spread over
 *      customers on a plan with a run-anchored daily quota, and over customers on plans with
 *      calendar quotas in named zones (the quota's zone, or the customer's with a zone history), in
 *      rotating rounds; each one's req/s against the run-anchored one's.
 *   7. `campaign` (BENCH_PARTS=campaign, not in the default): redemptions with 1,000 connections of
 *      one campaign code (a cap of 100,000) and of single-use codes of the same plan, every one for
 *      a customer of its own, in rotating rounds; the campaign code's req/s against single-use.
 *   8. `holds` (BENCH_PARTS=holds, not in the default): a hold and its commit (one pair of
 *      requests) against one consume, clients over the 10,000 customers of the consumes, in
 *      alternating rounds; the pairs' rate against the consumes'. Then a check and a consume, one
 *      client, for a customer with 100 live holds of the feature, one whose 100 holds all ended,
 *      and one with none, in rotating rounds; each one's time per request against none.
 *   9. `audit` (BENCH_PARTS=audit, not in the default; needs BENCH_BEFORE, a built checkout of the
 *      same tree with AuditTrail.record a no-op): `POST /customers`, `POST /redemptions` and `POST /usage` on this
 *      tree, which writes their audit records, and on that tree, which writes none, with a
 *      read beside them as a control, in rotating rounds; each write's req/s and CPU time per
 *      request with its records against without, and a count of the records written.
 *  10. `auditscale` (BENCH_PARTS=auditscale, not in the default): BENCH_AUDIT_RECORDS unsealed audit
 *      records of the project inserted with SQL; the time from their commit until all are sealed
 *      (records/s), `verify` over the whole chain (wall time, the service's peak RSS, its answer),
 *      one-client p50/p99 of list pages (by resource, action, request, unfiltered, deep by cursor),
 *      and the plans of the repository's filtered list statements.
 *  11. `ledger` (BENCH_PARTS=ledger, not in the default): the ledger grown through SQL to each of
 *      BENCH_LEDGER_RECORDS records, a customer with few and a heavy one measured at each size
 *      (bench/ledger-scale.ts).
 *  12. `webhooks` (BENCH_PARTS=webhooks, not in the default): webhook deliveries to a receiver on
 *      loopback (node:http, answering 204 at once) from 1 and then 2 replicas of the service on
 *      the same database: a backlog of BENCH_WEBHOOK_EVENTS `customer.created` events (made through
 *      `POST /customers`) to BENCH_WEBHOOK_ENDPOINTS endpoints, drained (deliveries/s); then events
 *      written at BENCH_WEBHOOK_RATE per second while the replicas deliver, and the delay from each
 *      event's `createdAt` to its arrival at the receiver (p50, p99).
 *
 *   npm run bench                                        # 200,000 customers
 *   BENCH_CUSTOMERS=1000000 npm run bench                # 1,000,000 customers (seeding takes minutes)
 *   BENCH_CUSTOMERS=20000 BENCH_SECONDS=3 npm run bench  # a quick check
 *   BENCH_BEFORE=/tmp/before npm run bench               # this tree against a built earlier checkout
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=grants npm run bench  # the grants part alone
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=calendar npm run bench  # the calendar part alone
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=campaign npm run bench  # the campaign part alone
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=holds npm run bench  # the holds part alone
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=audit BENCH_BEFORE=/tmp/no-audit npm run bench  # the audit part
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=auditscale npm run bench  # the audit log at scale
 *   BENCH_CUSTOMERS=20000 BENCH_PARTS=webhooks npm run bench  # webhook deliveries, 1 and 2 replicas
 */
import autocannon = require('autocannon');
import { execFileSync, spawn, ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { AddressInfo } from 'node:net';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import * as ts from 'typescript';
import { AUDIT_ACTIONS } from '../src/audit/audit-actions';
import { freePort, startEmbeddedPostgres, EmbeddedDatabase } from '../src/database/embedded';
import { migrateWithLock } from '../src/database/migrator';
import type { BaselineStatements } from './baseline';
import { CaptureContext, captureConsumeScript } from './consume-limit';
import { ledgerScale, LedgerScaleResult } from './ledger-scale';

const int = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number`);
  return value;
};
const CUSTOMERS = int('BENCH_CUSTOMERS', 200_000);
/** Seconds per measured run (each 1-client scenario, each autocannon run, each side of each round). */
const SECONDS = int('BENCH_SECONDS', 5);
const ROUNDS = Math.max(1, int('BENCH_ROUNDS', 3));
const WARMUP = int('BENCH_WARMUP_SECONDS', Math.min(2, SECONDS));
const READ_CONNECTIONS = int('BENCH_CONNECTIONS', 64);
const REDEEM_CONNECTIONS = int('BENCH_REDEEM_CONNECTIONS', 32);
const BATCH = 10_000;
/** Records already in the current period of the customer of the period scenarios (part `windows`). */
const LEDGER = (process.env.BENCH_LEDGER ?? '1,1000,10000')
  .split(',')
  .filter((x) => x.trim() !== '')
  .map(Number);
/**
 * Windows already held (ended ones) by the customer of a redemption, or of a check and a consume,
 * one measured run per count.
 */
const WINDOWS = (process.env.BENCH_WINDOWS ?? '1,100,1000')
  .split(',')
  .filter((x) => x.trim() !== '')
  .map(Number);
/** Redemptions (each for a fresh customer holding the windows) per window count. */
const WINDOW_SAMPLES = Math.max(1, int('BENCH_WINDOW_SAMPLES', 200));
/**
 * Parts to run: `latency` (one client), `load` (autocannon, service only), `versus` (against the
 * baselines), `windows`, `grants`, `calendar`, `campaign`, `audit`, `holds`, `auditscale`,
 * `webhooks` and `dblimit` (with `load`) (not in the default: their rounds would add minutes to
 * every run).
 */
const PARTS = new Set(
  (process.env.BENCH_PARTS ?? 'latency,load,versus,windows').split(',').map((p) => p.trim()),
);
/** Rounds of the `grants` part: at least 5, so that the median ratio is not one slow round's. */
const GRANT_ROUNDS = Math.max(5, ROUNDS);
/** Rounds of the `holds` part: at least 5, as the grants part's. */
const HOLD_ROUNDS = Math.max(5, ROUNDS);
/** Clients of the `holds` part's pairs and consumes, each a loop of its own. */
const HOLD_CLIENTS = Math.max(1, int('BENCH_HOLD_CLIENTS', 32));
/** Rounds of the `calendar` part: at least 5, as the grants part's. */
const CALENDAR_ROUNDS = Math.max(5, ROUNDS);
/** Customers per scenario of the `calendar` part, checked in turn, so that no row is hot. */
const CALENDAR_CUSTOMERS = Math.max(1, int('BENCH_CALENDAR_CUSTOMERS', 2000));
/** Clients of the `calendar` part: a few, so that the service's CPU time shows in req/s. */
const CALENDAR_CLIENTS = Math.max(1, int('BENCH_CALENDAR_CLIENTS', 4));
/**
 * The plans of the `calendar` part, one quota each of the same feature: the run-anchored daily
 * one (the reference), a run-anchored monthly one (a control: it should match the reference), and
 * calendar quotas in named zones, in the quota's own zone or in the customer's (whose history then
 * holds a change). `zone` is the zone the check must answer for the current period.
 */
const CALENDAR_PLANS: Array<{
  label: string;
  slug: string;
  quota: Record<string, unknown>;
  customerZone: string | null;
  zone: string;
}> = [
  { label: 'run P1D', slug: 'cal-run-day', quota: { resetInterval: 'P1D' }, customerZone: null, zone: 'UTC' },
  {
    label: 'run P1M',
    slug: 'cal-run-month',
    quota: { resetInterval: 'P1M' },
    customerZone: null,
    zone: 'UTC',
  },
  {
    label: 'calendar P1D, America/New_York (quota)',
    slug: 'cal-new-york-day',
    quota: { resetAnchor: 'calendar', resetInterval: 'P1D', resetTimeZone: 'America/New_York' },
    customerZone: null,
    zone: 'America/New_York',
  },
  {
    label: 'calendar P1M on the 31st, Europe/Berlin (customer)',
    slug: 'cal-berlin-month',
    quota: { resetAnchor: 'calendar', resetInterval: 'P1M', resetDayOfMonth: 31 },
    customerZone: 'Europe/Berlin',
    zone: 'Europe/Berlin',
  },
  {
    label: 'calendar PT1H, Asia/Kathmandu (quota)',
    slug: 'cal-kathmandu-hour',
    quota: { resetAnchor: 'calendar', resetInterval: 'PT1H', resetTimeZone: 'Asia/Kathmandu' },
    customerZone: null,
    zone: 'Asia/Kathmandu',
  },
];
/** Rounds of the `campaign` part: at least 5, as the grants part's. */
const CAMPAIGN_ROUNDS = Math.max(5, ROUNDS);
/** Connections of the `campaign` part: as many concurrent redeemers as the target speaks of. */
const CAMPAIGN_CONNECTIONS = Math.max(1, int('BENCH_CAMPAIGN_CONNECTIONS', 1000));
/** The campaign code's cap: the part never comes near it, so no redemption meets `CODE_EXHAUSTED`. */
const CAMPAIGN_CAP = 100_000;
/**
 * Redemptions per side of the `campaign` part (single-use codes, and customers, for each side):
 * enough for 1,000 redemptions/s over the warm-up and every round, plus the requests still in
 * flight when each run stops; never above the cap.
 */
const CAMPAIGN_PER_SIDE = Math.min(
  CAMPAIGN_CAP,
  int(
    'BENCH_CAMPAIGN_REDEMPTIONS',
    Math.ceil(
      ((CAMPAIGN_ROUNDS * SECONDS + WARMUP) * 1000 + (CAMPAIGN_ROUNDS + 1) * CAMPAIGN_CONNECTIONS) / BATCH,
    ) * BATCH,
  ),
);
/** Rounds of the `audit` part: at least 5, as the grants part's. */
const AUDIT_ROUNDS = Math.max(5, ROUNDS);
/** Connections of each run of the `audit` part (as many as the redemption part's by default). */
const AUDIT_CONNECTIONS = Math.max(1, int('BENCH_AUDIT_CONNECTIONS', REDEEM_CONNECTIONS));
/** The write rate per second the `audit` part's codes and customers are sized for: above any seen here. */
const AUDIT_SIZED_RATE = 2000;
/**
 * Redemptions per side of the `audit` part (single-use codes, and customers of their own): enough
 * for AUDIT_SIZED_RATE over the warm-up and every round, plus the requests still in flight when
 * each run stops.
 */
const AUDIT_REDEMPTIONS = Math.max(
  1,
  int(
    'BENCH_AUDIT_REDEMPTIONS',
    Math.ceil(
      ((AUDIT_ROUNDS * SECONDS + WARMUP) * AUDIT_SIZED_RATE + (AUDIT_ROUNDS + 1) * AUDIT_CONNECTIONS) / BATCH,
    ) * BATCH,
  ),
);
/**
 * The most a write with its audit records may cost against the same write without, in CPU time per
 * request (its req/s at least the inverse).
 */
const AUDIT_TARGET = 1.15;
/** Audit records the `auditscale` part inserts (unsealed) before it measures sealing, verify and the list. */
const AUDIT_RECORDS = Math.max(1, int('BENCH_AUDIT_RECORDS', 1_000_000));
/** Sizes the `ledger` part grows the ledger to, in usage records (cumulative, ascending). */
const LEDGER_RECORDS = (process.env.BENCH_LEDGER_RECORDS ?? '10000,1000000')
  .split(',')
  .map((x) => Number(x.trim()))
  .filter((x) => Number.isInteger(x) && x > 0);
/** Rounds of the `ledger` part's scenarios at each size (medians). */
const LEDGER_ROUNDS = Math.max(1, int('BENCH_LEDGER_ROUNDS', 3));
/** Customers the `ledger` part spreads its records over (at most those seeded). */
const LEDGER_CUSTOMERS = Math.max(10, int('BENCH_LEDGER_CUSTOMERS', 100_000));
/** Requests per list scenario of the `auditscale` part, one client. */
const AUDIT_SCALE_REQUESTS = Math.max(1, int('BENCH_AUDIT_SCALE_REQUESTS', 50));
/** Events (`POST /customers`, one `customer.created` each) of each backlog of the `webhooks` part. */
const WEBHOOK_EVENTS = Math.max(1, int('BENCH_WEBHOOK_EVENTS', 5000));
/** Endpoints of the `webhooks` part's project, each taking every type: a delivery per event and endpoint. */
const WEBHOOK_ENDPOINTS = Math.max(1, int('BENCH_WEBHOOK_ENDPOINTS', 4));
/** Events per second written while the replicas deliver, in the delay runs of the `webhooks` part. */
const WEBHOOK_RATE = Math.max(1, int('BENCH_WEBHOOK_RATE', 100));
/** Sign-ups in flight at most in the delay runs of the `webhooks` part. */
const WEBHOOK_OUTSTANDING = 16;
/** Replica counts of the `webhooks` part, each measured in turn on the same database. */
const WEBHOOK_REPLICAS = (process.env.BENCH_WEBHOOK_REPLICAS ?? '1,2')
  .split(',')
  .filter((x) => x.trim() !== '')
  .map(Number);
/** The customers of the `grants` part: active grants of the feature, and ended ones (expired, voided). */
const GRANT_HOLDERS = [
  { label: '1 active grant', active: 1, expired: 0, voided: 0 },
  { label: '100 active grants', active: 100, expired: 0, voided: 0 },
  { label: '1 active grant and 1,000 ended (500 expired, 500 voided)', active: 1, expired: 500, voided: 500 },
];
/** Codes per side (service, baseline): enough for 2,500 redemptions/s over every round and the warm-up. */
const CODES_PER_SIDE = int('BENCH_CODES', Math.ceil(((ROUNDS * SECONDS + WARMUP) * 2500) / BATCH) * BATCH);
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
/** BENCH_BEFORE=<dir>: a built checkout of an earlier tree, measured beside this one (docs/benchmarks.md). */
const BEFORE = process.env.BENCH_BEFORE;
const BEFORE_SIDE = 'before tree';
/** BENCH_NEST_FLOOR=1: a side more, the same handlers in a bare Nest application (what Nest itself costs). */
const NEST_FLOOR = process.env.BENCH_NEST_FLOOR === '1';
/** A directory: the service and the baselines run with `--cpu-prof` and write their profiles there on exit. */
const CPU_PROF = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined;
/**
 * The Node flags of `npm start` (package.json; the image's CMD has the same): the service runs
 * as it is deployed, and every baseline with the same flags, so that the runtime is the same on
 * every side.
 */
const RUNTIME_FLAGS: string[] = (() => {
  const start: string = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).scripts.start;
  const words = start.split(/\s+/);
  if (words[0] !== 'node' || words[words.length - 1] !== 'dist/main.js')
    throw new Error(`npm start is not "node [flags] dist/main.js": ${start}`);
  return words.slice(1, -1);
})();
const nodeFlags = (name: string) => [
  ...RUNTIME_FLAGS,
  ...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`, `--cpu-prof-name=${name}.cpuprofile`] : []),
];
const POOL_SIZE = 10; // the service's DB_POOL_SIZE default; the baseline gets the same
/** The service's DB_POOL_IDLE_MS default; the baselines' pools keep their connections as long. */
const POOL_IDLE_MS = 300_000;
const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** The figures of one replica count of the `webhooks` part. */
interface WebhookRun {
  replicas: number;
  backlog: number;
  drainMs: number;
  drainRate: number;
  drainDuplicates: number;
  drainCpuMsPerDelivery: number;
  drainDbCpuMsPerDelivery: number;
  written: number;
  writeSeconds: number;
  delivered: number;
  deliveryRate: number;
  p50: number;
  p99: number;
  max: number;
  duplicates: number;
}

/** The figures of the `auditscale` part. */
interface AuditScale {
  records: number;
  before: number;
  insertMs: number;
  sealMs: number;
  sealLeft: number;
  sealCpuMs: number;
  sealDbCpuMs: number;
  sealPeakRss: number;
  sealLoad: string[];
  verifyAfterSeal: unknown;
  verifyMs: number;
  verifyStatus: number;
  verifyAnswer: unknown;
  rssIdle: number;
  rssBefore: number;
  verifyPeakRss: number;
  list: Array<{ label: string; requests: number; p50: number; p99: number; errors: number; records: number }>;
  plans: Array<{ label: string; sql: string; plan: string[] }>;
  tableSize: { t: string; i: string };
}

interface Reply {
  status: number;
  headers?: Record<string, unknown>;
  body: any;
}

function call(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolvePromise, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          ...headers,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolvePromise({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: text.startsWith('{') ? JSON.parse(text) : text,
          });
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---------------------------------------------------------------------------------------------
// memory of a child process (Linux: /proc/<pid>/status)

function memoryOf(pid: number | undefined): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU time (user + system) used so far by `pid`, in ms (Linux: /proc/<pid>/stat). */
function cpuMsOf(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3 (state)
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** Samples VmRSS of `pid` every 100 ms while `work` runs; returns its result and the peak in MiB. */
async function withPeakRss<T>(
  pid: number | undefined,
  work: () => Promise<T>,
): Promise<{ value: T; peakRss: number }> {
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => {
    const { rss } = memoryOf(pid);
    if (Number.isNaN(peak) || rss > peak) peak = rss;
  }, 100);
  try {
    const value = await work();
    const { rss } = memoryOf(pid);
    if (rss > peak) peak = rss;
    return { value, peakRss: peak };
  } finally {
    clearInterval(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// 1 client: a hand-written keep-alive loop, for p50/p95/p99 (autocannon has no p95)

interface LoopResult {
  scenario: string;
  requests: number;
  rps: number;
  p50: number;
  p95: number;
  p99: number;
  errors: number;
  /** CPU time of the service per request */
  cpuMsPerRequest: number;
}

/** A one-client run of the `grants` part, with PostgreSQL's CPU time per request beside the service's. */
interface GrantRun extends LoopResult {
  dbCpuMsPerRequest: number;
}

/** A scenario of the `grants` part: its runs, one per round, and its per-round cost ÷ 1 grant. */
interface GrantRow {
  kind: 'POST /entitlements/check' | 'POST /usage';
  holder: string;
  runs: GrantRun[];
  /** per round: req/s of the customer holding 1 grant ÷ this one's (empty for that customer) */
  ratios: number[];
}

/** A scenario of the `holds` part: its runs, one per round, and its per-round ratio to its reference. */
interface HoldRow {
  label: string;
  runs: GrantRun[];
  /** the pairs: per round, pairs/s ÷ consumes/s; the live holds: req/s of the customer with none ÷ this one's (empty for the references) */
  ratios: number[];
}

/** A scenario of the `calendar` part: its runs, one per round, and its req/s ÷ the reference's. */
interface CalendarRow {
  label: string;
  runs: GrantRun[];
  /** per round: this req/s ÷ that of the run-anchored daily quota (empty for that one) */
  ratios: number[];
  /** per round: the service's CPU ms per request of this one ÷ the reference's (steadier on a shared machine) */
  cpuRatios: number[];
}

/** A side of the `campaign` part (the campaign code, or single-use codes): its runs, one per round. */
interface CampaignRow {
  label: string;
  runs: CannonRun[];
  /** per round: the campaign code's req/s ÷ that of single-use codes (empty for single-use) */
  ratios: number[];
}

/** A run of the `audit` part: on this tree, also the CPU time spent after it until its records were sealed. */
interface AuditRun extends CannonRun {
  /** service and PostgreSQL CPU ms per request from the end of the run until every record was sealed */
  sealCpuMsPerRequest: number;
  /**
   * that CPU time per record left unsealed at the end of the run: what sealing a record costs,
   * most of which the sealer spends during the run itself (NaN when none was left)
   */
  sealCpuMsPerRecord: number;
}

/** A request of the `audit` part, on both trees: its runs on each, one per round, and their ratios. */
interface AuditRow {
  label: string;
  /** the control: a read, which writes no record on either tree */
  control: boolean;
  /** runs on this tree (with records) and on the before tree (without), one per round */
  with: AuditRun[];
  without: AuditRun[];
  /** per round, with ÷ without: req/s; CPU ms per request of the service and PostgreSQL together, of each, and with the sealing */
  rps: number[];
  cpu: number[];
  serviceCpu: number[];
  dbCpu: number[];
  cpuSealed: number[];
}

/** The writes the `audit` part made, as the database holds them, and the audit records of each. */
interface AuditCount {
  label: string;
  side: string;
  writes: number;
  records: number;
}

/** The service's process, whose CPU time the one-client loops report. */
let servicePid: number | undefined;

/** `concurrency` loops issuing `make(i)` until `seconds` pass or `limit` requests were sent. */
async function drive(
  scenario: string,
  concurrency: number,
  seconds: number,
  make: (i: number) => Promise<Reply>,
  limit = Infinity,
): Promise<LoopResult> {
  const latencies: number[] = [];
  let errors = 0;
  let issued = 0;
  const started = process.hrtime.bigint();
  const cpu0 = cpuMsOf(servicePid);
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < deadline && issued < limit) {
        const i = issued++;
        const t0 = process.hrtime.bigint();
        const reply = await make(i);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (reply.status >= 400) errors++;
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    scenario,
    requests: latencies.length,
    rps: round2(latencies.length / elapsed),
    p50: round2(pct(latencies, 50)),
    p95: round2(pct(latencies, 95)),
    p99: round2(pct(latencies, 99)),
    errors,
    cpuMsPerRequest: round2((cpuMsOf(servicePid) - cpu0) / Math.max(1, latencies.length)),
  };
}

// ---------------------------------------------------------------------------------------------
// many connections: autocannon

interface Target {
  /** `service`, or a baseline: `node:http`, `express` */
  name: string;
  port: number;
  pid: number | undefined;
}

/** CPU time (ms) used so far by the benchmark's own PostgreSQL: its postmaster and every backend. */
let databaseCpuMs: () => number = () => NaN;

function postgresCpuOf(postmasterPid: number): () => number {
  return () => {
    // the postmaster's own time and that of the backends it has reaped (cutime, cstime)
    let total = NaN;
    try {
      const stat = readFileSync(`/proc/${postmasterPid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total = ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLOCK_TICKS;
    } catch {
      return NaN;
    }
    for (const entry of readdirSync('/proc')) {
      if (!/^[0-9]+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(fields[1]) === postmasterPid)
          total += ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
      } catch {
        // gone meanwhile
      }
    }
    return total;
  };
}

interface CannonRun {
  scenario: string;
  target: Target['name'];
  connections: number;
  seconds: number;
  requests: number;
  /** successful (2xx) responses per second */
  rps: number;
  /** successful (2xx) responses */
  ok: number;
  p50: number;
  p99: number;
  /** non-2xx responses + connection errors and timeouts */
  errors: number;
  peakRss: number;
  /** CPU time of the target process (user + system) per completed request */
  cpuMsPerRequest: number;
  /** CPU time of PostgreSQL (all its processes) per completed request */
  dbCpuMsPerRequest: number;
  /** answers by status, when some were errors */
  statuses?: Record<string, number>;
  connectionErrors?: number;
}

/** `request.setupRequest` may set a fresh path/body per request (it runs before every send). */
async function cannon(
  scenario: string,
  target: Target,
  connections: number,
  length: number | { amount: number },
  req: autocannon.Request,
): Promise<CannonRun> {
  const cpu0 = cpuMsOf(target.pid);
  const db0 = databaseCpuMs();
  const { value: r, peakRss } = await withPeakRss(target.pid, () =>
    autocannon({
      url: `http://127.0.0.1:${target.port}`,
      connections,
      ...(typeof length === 'number' ? { duration: length } : { amount: length.amount }),
      timeout: 10,
      requests: [req],
    }),
  );
  const cpu = cpuMsOf(target.pid) - cpu0;
  const db = databaseCpuMs() - db0;
  return {
    scenario,
    target: target.name,
    connections,
    seconds: r.duration,
    requests: r['2xx'] + r.non2xx,
    rps: round2(r['2xx'] / r.duration),
    ok: r['2xx'],
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.non2xx + r.errors,
    peakRss: round2(peakRss),
    cpuMsPerRequest: round2(cpu / Math.max(1, r['2xx'] + r.non2xx)),
    dbCpuMsPerRequest: round2(db / Math.max(1, r['2xx'] + r.non2xx)),
    ...(r.non2xx + r.errors > 0
      ? {
          statuses: Object.fromEntries(Object.entries(r.statusCodeStats).map(([k, v]) => [k, v.count])),
          connectionErrors: r.errors,
        }
      : {}),
  };
}

/** The project's audit records not sealed yet. */
async function unsealedOf(db: Client, projectId: string): Promise<number> {
  const { rows } = await db.query('SELECT count(*)::int AS n FROM audit_unsealed WHERE project_id = $1', [
    projectId,
  ]);
  return Number(rows[0].n);
}

/**
 * Waits until the service and PostgreSQL are idle (under a tenth of a core over 250 ms; 20 s at
 * most). autocannon stops a run with its requests in flight, which the service still serves: with
 * many connections that tail would fall on the next run.
 */
async function settle(pid: number | undefined): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const service0 = cpuMsOf(pid);
    const db0 = databaseCpuMs();
    await new Promise((r) => setTimeout(r, 250));
    const busy = cpuMsOf(pid) - service0 + (databaseCpuMs() - db0 || 0);
    if (!(busy > 25)) return;
  }
}

interface PgbenchRun {
  /** transactions per second (a transaction = one request's statements) */
  tps: number;
  /** mean latency, ms */
  latency: number;
  dbCpuMsPerRequest: number;
}

interface Row {
  scenario: string;
  connections: number;
  service: CannonRun[];
  /** runs of each baseline, by name, one per round */
  baselines: Record<string, CannonRun[]>;
  /** per baseline: service req/s ÷ baseline req/s, per round */
  ratios: Record<string, number[]>;
  pgbench: PgbenchRun[];
}

/** One autocannon run of the service only. */
async function single(
  scenario: string,
  service: Target,
  connections: number,
  req: autocannon.Request,
  length: number | { amount: number } = SECONDS,
): Promise<Row | undefined> {
  if (!PARTS.has('load')) return undefined;
  const run = await cannon(scenario, service, connections, length, req);
  console.log(JSON.stringify(run));
  return { scenario, connections, service: [run], baselines: {}, ratios: {}, pgbench: [] };
}

/**
 * The same scenario against the service, each baseline and (if given) pgbench on the same
 * statements: a warm-up of each, then ROUNDS rounds of SECONDS per side, the order rotated every
 * round so that a slow patch of a shared machine hits every side.
 */
async function versus(
  scenario: string,
  service: Target,
  baselines: Target[],
  connections: number,
  req: (side: Target) => autocannon.Request,
  options: { afterWarmUp?: () => Promise<void>; pgbench?: () => Promise<PgbenchRun> } = {},
): Promise<Row | undefined> {
  if (!PARTS.has('versus')) return undefined;
  const targets = [service, ...baselines];
  const requests = new Map(targets.map((t) => [t.name, req(t)]));
  if (WARMUP > 0) {
    for (const t of targets) await cannon(scenario, t, connections, WARMUP, requests.get(t.name)!);
  }
  await options.afterWarmUp?.();
  const row: Row = {
    scenario,
    connections,
    service: [],
    baselines: Object.fromEntries(baselines.map((b) => [b.name, []])),
    ratios: Object.fromEntries(baselines.map((b) => [b.name, []])),
    pgbench: [],
  };
  const sides: Array<Target | 'pgbench'> = [...targets, ...(options.pgbench ? ['pgbench' as const] : [])];
  for (let round = 0; round < ROUNDS; round++) {
    const order = sides.map((_, i) => sides[(i + round) % sides.length]);
    for (const t of order) {
      if (t === 'pgbench') {
        const run = await options.pgbench!();
        console.log(JSON.stringify({ round: round + 1, scenario, target: 'pgbench', ...run }));
        row.pgbench.push(run);
        continue;
      }
      const run = await cannon(scenario, t, connections, SECONDS, requests.get(t.name)!);
      console.log(JSON.stringify({ round: round + 1, ...run }));
      (t === service ? row.service : row.baselines[t.name]).push(run);
    }
    for (const b of baselines)
      row.ratios[b.name].push(round2(row.service[round].rps / row.baselines[b.name][round].rps));
  }
  for (const b of baselines)
    console.log(
      `${scenario}: service/${b.name} req/s per round ${row.ratios[b.name].join(', ')}; median ${round2(median(row.ratios[b.name]))}`,
    );
  return row;
}

// ---------------------------------------------------------------------------------------------
// pgbench: the database's limit on the same statements

/** pgbench's clients for the consumes: enough for PostgreSQL's CPU, not its commits, to be the limit. */
const CONSUME_LIMIT_CLIENTS = [10, 20];
/** Consumes sent to the capturing instance at once, which it gathers into batches as under load. */
const CONSUME_LIMIT_TOGETHER = 32;
/** Seconds of each consume run before it is measured: each new connection plans the statements first. */
const CONSUME_LIMIT_WARM_UP = 10;

/** Customers of pgbench's redemptions (contiguous ids, inserted after the seed). */
const PGBENCH_CUSTOMERS = 1000;

const PGBENCH = (() => {
  if (process.env.BENCH_PGBENCH === 'off') return undefined;
  const candidates = [
    process.env.BENCH_PGBENCH,
    ...(() => {
      try {
        return readdirSync('/usr/lib/postgresql')
          .sort()
          .reverse()
          .map((v) => `/usr/lib/postgresql/${v}/bin/pgbench`);
      } catch {
        return [];
      }
    })(),
    '/usr/bin/pgbench',
  ];
  return candidates.find((c) => c && existsSync(c));
})();

/** `$n` of a statement → pgbench variables (`:name`). */
const pgbenchText = (text: string, names: string[]) =>
  text.replace(/\$(\d+)/g, (_, n: string) => `:${names[Number(n) - 1]}`).replace(/\s*\n\s*/g, ' ');

/**
 * Runs pgbench for SECONDS with `clients` (by default POOL_SIZE, the service's pool: the most
 * statements the service can have in flight), prepared statements, on `script`; `defines` are its
 * `-D` variables. What it reports comes from its progress each second and PostgreSQL's CPU over
 * the measured SECONDS, after `warmUpSeconds` (a new connection plans each prepared statement,
 * which a long-lived pool does once).
 */
function runPgbench(
  url: string,
  script: string,
  defines: Record<string, string | number>,
  { clients = POOL_SIZE, warmUpSeconds = 0 }: { clients?: number; warmUpSeconds?: number } = {},
): Promise<PgbenchRun> {
  return new Promise((resolvePromise, reject) => {
    const at = (seconds: number, read: () => void) => setTimeout(read, seconds * 1000);
    let db0 = databaseCpuMs();
    let db1 = NaN;
    const args = [
      '-n',
      '-M',
      'prepared',
      '-c',
      String(clients),
      '-j',
      '2',
      // a second more than measured: PostgreSQL's CPU is read at the measured seconds' end, while
      // the backends still run (those of a closing run vanish from /proc before they count as reaped)
      '-T',
      String(warmUpSeconds + SECONDS + 1),
      '-P',
      '1',
      '-f',
      script,
      ...Object.entries(defines).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
      url,
    ];
    const child = spawn(PGBENCH!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timers = [
      ...(warmUpSeconds ? [at(warmUpSeconds, () => (db0 = databaseCpuMs()))] : []),
      at(warmUpSeconds + SECONDS, () => (db1 = databaseCpuMs())),
    ];
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      timers.forEach(clearTimeout);
      // the measured seconds' progress: "progress: 7.0 s, 455.9 tps, lat 21.9 ms stddev ..."
      const seconds = [...out.matchAll(/progress: ([0-9.]+) s, ([0-9.]+) tps, lat ([0-9.]+) ms/g)]
        .map((m) => ({ at: Number(m[1]), tps: Number(m[2]), latency: Number(m[3]) }))
        .filter((p) => p.at > warmUpSeconds && p.at <= warmUpSeconds + SECONDS);
      const transactions = seconds.reduce((n, p) => n + p.tps, 0);
      if (code !== 0 || seconds.length === 0) return reject(new Error(`pgbench failed (${code}):\n${out}`));
      const failed = /number of failed transactions: ([1-9][0-9]*)/.exec(out);
      if (failed) console.log(`pgbench: ${failed[1]} failed transactions`);
      const result = {
        tps: round2(transactions / seconds.length),
        latency: round2(seconds.reduce((n, p) => n + p.latency, 0) / seconds.length),
        dbCpuMsPerRequest: round2((db1 - db0) / Math.max(1, transactions)),
      };
      // the run's backends end after it: once they are reaped, their CPU no longer moves the next run's
      setTimeout(() => resolvePromise(result), 2000);
    });
  });
}

// ---------------------------------------------------------------------------------------------
// set-up

async function seed(url: string, projectId: string): Promise<void> {
  const db = new Client({ connectionString: url });
  await db.connect();
  const t0 = Date.now();
  // Trigram indexes are rebuilt once after the load: far faster than maintaining them per row.
  // Likewise the search documents (migration CustomerSearch): their triggers are off during the
  // load, the documents are written in one statement afterwards, as the triggers would write them.
  await db.query(
    'DROP INDEX customers_username_trgm_idx; DROP INDEX customer_identifiers_value_trgm_idx; DROP INDEX customer_search_doc_trgm_idx',
  );
  const searchTriggers = ['customer_search_insert', 'customer_search_update', 'customer_search_delete'];
  await db.query(
    searchTriggers.map((t) => `ALTER TABLE customer_identifiers DISABLE TRIGGER ${t};`).join(' '),
  );
  try {
    const chunk = 100_000;
    for (let from = 1; from <= CUSTOMERS; from += chunk) {
      const to = Math.min(CUSTOMERS, from + chunk - 1);
      await db.query(
        `WITH c AS (
           INSERT INTO customers (project_id, username)
           SELECT $1, 'user' || lpad(g::text, 7, '0') FROM generate_series($2::int, $3::int) g
           RETURNING id, username)
         INSERT INTO customer_identifiers (project_id, customer_id, type, value, readonly)
         SELECT $1, c.id, v.type, v.value, v.readonly FROM c, LATERAL (VALUES
           ('username', c.username, true),
           ('email', c.username || '@mail' || (c.id % 100) || '.example', false),
           ('external_user_id', 'ext-' || md5(c.username), false)) AS v(type, value, readonly)`,
        [projectId, from, to],
      );
      process.stdout.write(`\rseeded ${to.toLocaleString()} customers`);
    }
    await db.query(
      `INSERT INTO customer_search (customer_id, project_id, doc)
         SELECT c.id, c.project_id, string_agg(lower(i.value), chr(31) ORDER BY i.id)
           FROM customers c JOIN customer_identifiers i ON i.customer_id = c.id
          WHERE c.project_id = $1
          GROUP BY c.id
       ON CONFLICT (customer_id) DO UPDATE SET doc = EXCLUDED.doc`,
      [projectId],
    );
  } finally {
    await db.query(
      searchTriggers.map((t) => `ALTER TABLE customer_identifiers ENABLE TRIGGER ${t};`).join(' '),
    );
  }
  await db.query('CREATE INDEX customers_username_trgm_idx ON customers USING gin (username gin_trgm_ops)');
  await db.query(
    'CREATE INDEX customer_identifiers_value_trgm_idx ON customer_identifiers USING gin (value gin_trgm_ops)',
  );
  await db.query(
    'CREATE INDEX customer_search_doc_trgm_idx ON customer_search USING gin (doc gin_trgm_ops) WITH (fastupdate = off)',
  );
  // As a database that has lived a while, not one loaded a second ago: hint bits and visibility
  // maps set, statistics fresh, dirty pages written (CHECKPOINT needs a superuser; skipped otherwise).
  await db.query('VACUUM (ANALYZE)');
  await db.query('CHECKPOINT').catch(() => undefined);
  await db.end();
  console.log(
    `\nseeding ${CUSTOMERS.toLocaleString()} customers with 3 identifiers each took ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
}

async function waitReady(port: number, child: ChildProcess, name: string): Promise<void> {
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode}`);
    const ready = await call(port, 'GET', '/readyz', {}).catch(() => undefined);
    if (ready?.status === 200) return;
    if (i > 150) throw new Error(`${name} did not become ready`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The service's own SQL text, from the built service (dist/), for the baselines and pgbench: the
 * statements cannot drift apart from what the service runs.
 */
function serviceStatements(): BaselineStatements {
  require('reflect-metadata');
  const dist = (file: string) => require(resolve(__dirname, '..', 'dist', file));
  const { API_KEY_LOOKUP } = dist('projects/repository/projects.repository.js');
  const { CUSTOMER_RECORD } = dist('customers/customers.repository.js');
  const { LOCK_FOR_REDEMPTION } = dist('codes/codes.repository.js');
  const { LIVE_CHAIN, insertWindows } = dist('subscriptions/subscriptions.repository.js');
  const { INSERT_FOR_CUSTOMER } = dist('events/events.repository.js');
  return {
    apiKeyLookup: API_KEY_LOOKUP,
    customerRecord: CUSTOMER_RECORD,
    lockCodeByUsername: LOCK_FOR_REDEMPTION.username,
    lockCodeById: LOCK_FOR_REDEMPTION.id,
    liveChain: LIVE_CHAIN,
    insertWindow: insertWindows(1),
    insertEvents: INSERT_FOR_CUSTOMER,
  };
}

/** The bench file `name` as plain JavaScript in `dir` (no ts-node in a measured process); answers its path. */
function transpiled(dir: string, name: string): string {
  const source = readFileSync(join(__dirname, name), 'utf8');
  const js = ts.transpileModule(source, {
    compilerOptions: {
      module: ts.ModuleKind.CommonJS,
      target: ts.ScriptTarget.ES2022,
      esModuleInterop: true,
    },
  }).outputText;
  const file = join(dir, name.replace(/\.ts$/, '.js'));
  writeFileSync(file, js);
  return file;
}

/** bench/baseline.ts as plain JavaScript; `pg` found through NODE_PATH. */
function startBaseline(
  dir: string,
  url: string,
  port: number,
  kind: 'http' | 'express' | 'nest',
): ChildProcess {
  const file = transpiled(dir, 'baseline.ts');
  return spawn(process.execPath, [...nodeFlags(`baseline-${kind}`), file], {
    env: {
      ...process.env,
      BASELINE_KIND: kind,
      STATEMENTS_FILE: join(dir, 'statements.json'),
      SERVICE_DIST: resolve(__dirname, '..', 'dist'),
      NODE_PATH: resolve(__dirname, '..', 'node_modules'),
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      DB_POOL_SIZE: String(POOL_SIZE),
      DB_POOL_IDLE_MS: String(POOL_IDLE_MS),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, CPU_PROF ? 30_000 : 5000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Headers that differ between any two answers (time, connection, id, length). */
const VARYING_HEADERS = new Set(['date', 'connection', 'keep-alive', 'x-request-id', 'content-length']);

/**
 * Fails the benchmark unless every target answers `ask` with the same status, the same headers
 * (names and values, except VARYING_HEADERS) and the same `data` (after `comparable`).
 */
async function sameAnswers(
  targets: Target[],
  ask: (t: Target) => Promise<Reply & { headers?: Record<string, unknown> }>,
  comparable: (data: any) => unknown,
): Promise<void> {
  // BENCH_SAME_ANSWERS=warn: report a difference and go on (to measure a service changed on purpose)
  const onDifference = (message: string) => {
    if (process.env.BENCH_SAME_ANSWERS !== 'warn') throw new Error(message);
    console.log(`WARNING: ${message}`);
  };
  const answers: Array<{ name: string; status: number; headers: string; data: string }> = [];
  for (const t of targets) {
    const reply = await ask(t);
    const headers = Object.entries(reply.headers ?? {})
      .filter(([k]) => !VARYING_HEADERS.has(k))
      .sort(([a], [b]) => a.localeCompare(b));
    answers.push({
      name: t.name,
      status: reply.status,
      headers: JSON.stringify(headers),
      data: JSON.stringify({ ok: reply.body?.ok, data: comparable(reply.body?.data) }),
    });
  }
  for (const a of answers.slice(1)) {
    for (const field of ['status', 'headers', 'data'] as const) {
      if (a[field] !== answers[0][field])
        onDifference(
          `${a.name} answers another ${field} than ${answers[0].name}:\n${a[field]}\n${answers[0][field]}`,
        );
    }
  }
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  // said before minutes of seeding, not after them
  if (PARTS.has('audit') && !BEFORE)
    throw new Error(
      'BENCH_PARTS=audit compares writes with their audit records against the same writes without: set BENCH_BEFORE to a built checkout of this tree with AuditTrail.record a no-op (docs/benchmarks.md#audit-records)',
    );
  if (BEFORE && !existsSync(join(BEFORE, 'dist', 'main.js')))
    throw new Error(
      `BENCH_BEFORE=${BEFORE} holds no dist/main.js: build that checkout first (npx nest build in it)`,
    );
  const loadBefore = loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
  const dir = mkdtempSync(join(tmpdir(), 'subs-bench-'));
  let embedded: EmbeddedDatabase | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    // the ledger part reads the database's work per request from its statement statistics
    embedded = await startEmbeddedPostgres(
      dir,
      () => undefined,
      PARTS.has('ledger')
        ? ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track_planning=on']
        : [],
    );
    url = embedded.url;
  }
  let serviceProcess: ChildProcess | undefined;
  const baselineProcesses: ChildProcess[] = [];
  const onSignal = () => {
    serviceProcess?.kill('SIGTERM');
    for (const b of baselineProcesses) b.kill('SIGTERM');
    void (embedded?.stop() ?? Promise.resolve()).finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  try {
    await migrateWithLock(url);
    const port = await freePort();
    const secretKey = randomBytes(32).toString('base64');
    /** The environment of the service, and of the before tree (BENCH_BEFORE): the same settings. */
    const serviceEnv = (servicePort: number) => ({
      ...process.env,
      DATABASE_URL: url,
      PORT: String(servicePort),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      LOG_LEVEL,
      SECRET_ENCRYPTION_KEY: secretKey,
      DB_MIGRATE_ON_START: 'false',
      DB_POOL_SIZE: String(POOL_SIZE),
      DB_POOL_IDLE_MS: String(POOL_IDLE_MS),
      // the webhooks part: endpoints on loopback, delivered by the replicas it starts, never by this one
      ...(PARTS.has('webhooks')
        ? { WEBHOOK_ALLOW_INSECURE_URLS: 'true', WEBHOOK_WORKER_ENABLED: 'false' }
        : {}),
    });
    serviceProcess = spawn(process.execPath, [...nodeFlags('service'), 'dist/main.js'], {
      env: serviceEnv(port),
      // BENCH_SERVICE_LOG: a file for the service's log lines (at BENCH_LOG_LEVEL)
      stdio: [
        'ignore',
        process.env.BENCH_SERVICE_LOG ? openSync(process.env.BENCH_SERVICE_LOG, 'w') : 'ignore',
        'inherit',
      ],
    });
    await waitReady(port, serviceProcess, 'service');
    const service: Target = { name: 'service', port, pid: serviceProcess.pid };
    servicePid = serviceProcess.pid;

    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const project = (
      await call(port, 'POST', '/api/admin/v1/projects', admin, {
        name: 'bench',
        autoCreateCustomerAtRedemption: true,
      })
    ).body.data;
    const key: string = (
      await call(port, 'POST', `/api/admin/v1/projects/${project.id}/keys`, admin, { kind: 'private' })
    ).body.data.key;
    const sk = { authorization: `Bearer ${key}` };
    const json = { ...sk, 'content-type': 'application/json' };
    await seed(url, project.id);

    if (embedded) {
      const postmaster = Number(readFileSync(join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
      databaseCpuMs = postgresCpuOf(postmaster);
    }
    const statements = serviceStatements();
    writeFileSync(join(dir, 'statements.json'), JSON.stringify(statements));
    const baselines: Target[] = [];
    const kinds = ['http', 'express', ...(NEST_FLOOR ? ['nest' as const] : [])] as const;
    const sideNames = {
      http: 'node:http',
      express: 'express',
      nest: 'bare Nest',
    };
    for (const kind of kinds) {
      const baselinePort = await freePort();
      const child = startBaseline(dir, url, baselinePort, kind);
      baselineProcesses.push(child);
      await waitReady(baselinePort, child, `baseline ${kind}`);
      baselines.push({
        name: sideNames[kind],
        port: baselinePort,
        pid: child.pid,
      });
    }

    // BENCH_BEFORE: another checkout of the service (built, same migrations), served beside this one on
    // the same database and project, and measured as one more side of every comparison
    if (BEFORE) {
      const beforePort = await freePort();
      const child = spawn(process.execPath, [...nodeFlags('before'), join(BEFORE, 'dist', 'main.js')], {
        cwd: BEFORE,
        env: serviceEnv(beforePort),
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      baselineProcesses.push(child);
      await waitReady(beforePort, child, 'before tree');
      baselines.push({ name: BEFORE_SIDE, port: beforePort, pid: child.pid });
    }

    const db = new Client({ connectionString: url });
    await db.connect();
    const pgVersion: string = (await db.query('SHOW server_version')).rows[0].server_version;
    const sample: Array<{ id: number; username: string; email: string }> = (
      await db.query(
        `SELECT c.id, c.username, i.value AS email FROM customers c
           JOIN customer_identifiers i ON i.customer_id = c.id AND i.type = 'email'
          WHERE c.project_id = $1 ORDER BY random() LIMIT 10000`,
        [project.id],
      )
    ).rows;
    // the measured lookups use the first half; the warm-ups before them the other half, so the
    // measured customers are not in any cache that the warm-up filled
    const half = Math.ceil(sample.length / 2);
    const measured = sample.slice(0, half);
    const warm = sample.length > half ? sample.slice(half) : measured;
    const pick = (i: number) => measured[i % measured.length];
    const pickWarm = (i: number) => warm[i % warm.length];
    /** A rotating pick shared by all connections of one autocannon run. */
    const rotating = <T>(items: T[]) => {
      let n = 0;
      return () => items[n++ % items.length];
    };

    // --- 1 client: latency of the lookups and searches
    const loops: LoopResult[] = [];
    /** pgbench's replays of consumes, each round at each client count (the `dblimit` part). */
    const consumeLimit: Array<PgbenchRun & { kind: string; size: number; clients: number }> = [];
    const loop = async (r: Promise<LoopResult>) => {
      const x = await r;
      loops.push(x);
      console.log(JSON.stringify(x));
    };
    /** `BENCH_WARMUP_SECONDS` of the same requests on other customers (JIT, connections), then the measured run. */
    const measure = async (scenario: string, make: (who: (typeof sample)[number]) => Promise<Reply>) => {
      if (!PARTS.has('latency')) return;
      if (WARMUP > 0) await drive(`${scenario} warm-up`, 1, WARMUP, (i) => make(pickWarm(i)));
      await loop(drive(scenario, 1, SECONDS, (i) => make(pick(i))));
    };
    await measure('GET /customers/:id (1 client)', (who) =>
      call(port, 'GET', `/api/private/v1/customers/${who.id}`, sk),
    );
    await measure('POST /customers/resolve (1 client)', (who) =>
      call(port, 'POST', '/api/private/v1/customers/resolve', sk, {
        customer: { type: 'email', value: who.email },
      }),
    );
    await measure('GET /customers (no term, 1 client)', () =>
      call(port, 'GET', '/api/private/v1/customers', sk),
    );
    await measure('GET /customers?search=<rare> (1 client)', (who) =>
      call(port, 'GET', `/api/private/v1/customers?search=${who.username}`, sk),
    );
    await measure('GET /customers?search=<common, 1%> (1 client)', () =>
      call(port, 'GET', '/api/private/v1/customers?search=@mail42.', sk),
    );

    // --- many connections: reads
    const rows: Array<Row | undefined> = [];
    /** Per entitlement scenario: its req/s ÷ that of GET /customers/:id in the same round. */
    const toRead = new Map<string, number[]>();
    rows.push(
      await single('GET /api/private/v1/info', service, READ_CONNECTIONS, {
        method: 'GET',
        path: '/api/private/v1/info',
        headers: sk,
      }),
    );
    // the baselines answer what the service answers: the same data, the same headers
    await sameAnswers(
      [service, ...baselines],
      (t) => call(t.port, 'GET', `/api/private/v1/customers/${sample[0].id}`, sk),
      (data) => data,
    );
    const idRange = (
      await db.query('SELECT min(id) AS lo, max(id) AS hi FROM customers WHERE project_id = $1', [project.id])
    ).rows[0];
    const readScript = join(dir, 'read.sql');
    writeFileSync(
      readScript,
      `\\set id random(${idRange.lo}, ${idRange.hi})\n${pgbenchText(statements.customerRecord.text, ['id', 'project'])};\n`,
    );
    /** GET /customers/:id over the sample's customers in turn */
    const readById = (): autocannon.Request => {
      const next = rotating(sample);
      return {
        method: 'GET',
        path: '/',
        headers: sk,
        setupRequest: (r) => ({ ...r, path: `/api/private/v1/customers/${next().id}` }),
      };
    };
    rows.push(
      await versus('GET /customers/:id', service, baselines, READ_CONNECTIONS, readById, {
        pgbench: PGBENCH ? () => runPgbench(url!, readScript, { project: project.id }) : undefined,
      }),
    );
    {
      const next = rotating(sample);
      rows.push(
        await single('POST /customers/resolve (email)', service, READ_CONNECTIONS, {
          method: 'POST',
          path: '/api/private/v1/customers/resolve',
          headers: json,
          setupRequest: (r) => ({
            ...r,
            body: JSON.stringify({ customer: { type: 'email', value: next().email } }),
          }),
        }),
      );
    }
    {
      const next = rotating(sample);
      rows.push(
        await single('GET /customers?search=<rare>', service, READ_CONNECTIONS, {
          method: 'GET',
          path: '/',
          headers: sk,
          setupRequest: (r) => ({ ...r, path: `/api/private/v1/customers?search=${next().username}` }),
        }),
      );
    }

    // --- plans and codes: two batches of codes, one per side, never shared
    const plans = [];
    for (const [slug, value] of [
      ['basic', 10],
      ['pro', 20],
      ['max', 40],
    ] as const) {
      plans.push(
        (
          await call(port, 'POST', '/api/private/v1/plans', sk, {
            slug,
            name: slug.toUpperCase(),
            value,
            group: 'tier',
          })
        ).body.data,
      );
    }
    const plan = plans[1];
    rows.push(
      await single('GET /plans', service, READ_CONNECTIONS, {
        method: 'GET',
        path: '/api/private/v1/plans',
        headers: sk,
      }),
    );

    const sides = ['service', ...baselines.map((b) => b.name)];
    const windowCounts = PARTS.has('windows') ? WINDOWS : [];
    const codes: string[] = [];
    await loop(
      drive(
        `POST /codes (batch of ${BATCH.toLocaleString()})`,
        1,
        3600,
        async () => {
          const reply = await call(port, 'POST', '/api/private/v1/codes', sk, {
            planId: plan.id,
            duration: 'P30D',
            count: BATCH,
          });
          codes.push(...(reply.body.data?.codes ?? []));
          return reply;
        },
        Math.ceil((sides.length * CODES_PER_SIDE + windowCounts.length * WINDOW_SAMPLES) / BATCH),
      ),
    );
    const codesOf = Object.fromEntries(
      sides.map((side, k) => [side, codes.slice(k * CODES_PER_SIDE, (k + 1) * CODES_PER_SIDE)]),
    );
    const spareCodes = codes.slice(sides.length * CODES_PER_SIDE);
    // distinct customers too: position i goes to side i % sides
    const usernames: string[] = (
      await db.query('SELECT username FROM customers WHERE project_id = $1 ORDER BY id LIMIT $2', [
        project.id,
        sides.length * CODES_PER_SIDE,
      ])
    ).rows.map((r) => r.username);
    const customersOf = Object.fromEntries(
      sides.map((side, k) => [side, usernames.filter((_, i) => i % sides.length === k)]),
    );

    // pgbench: codes of its own (16 digits computed from the client and a counter) and customers
    // of its own (PGBENCH_CUSTOMERS, by id: pgbench cannot build a username), the same statements.
    // Its windows all start at one fixed time, so its customers' chains would look broken to the
    // service: they are never the service's or the baselines' customers.
    const perClient = Math.ceil(ROUNDS * SECONDS * 1000) + 1000;
    let redeemScript: string | undefined;
    let redeemDefines: Record<string, string | number> = {};
    if (PGBENCH) {
      const batch = (
        await db.query(
          `INSERT INTO code_batches (project_id, plan_id, duration, count) VALUES ($1, $2, 'P30D', $3) RETURNING id`,
          [project.id, plan.id, POOL_SIZE * perClient],
        )
      ).rows[0].id;
      await db.query(
        `INSERT INTO codes (project_id, batch_id, plan_id, code, duration)
         SELECT $1, $2, $3, (1000000000000000 + c * 100000000 + k)::text, 'P30D'
           FROM generate_series(0, $4::int - 1) c, generate_series(1, $5::int) k`,
        [project.id, batch, plan.id, POOL_SIZE, perClient],
      );
      const own: number[] = (
        await db.query(
          `INSERT INTO customers (project_id, username)
           SELECT $1, 'pgbench' || g FROM generate_series(1, $2::int) g RETURNING id`,
          [project.id, PGBENCH_CUSTOMERS],
        )
      ).rows.map((r) => r.id);
      const now = new Date();
      const later = new Date(now.getTime() + 30 * 86400_000);
      redeemScript = join(dir, 'redeem.sql');
      writeFileSync(
        redeemScript,
        [
          '\\set k :k + 1',
          '\\set code 1000000000000000 + :client_id * 100000000 + :k',
          `\\set cust ${Math.min(...own)} + ((:client_id * ${perClient} + :k) % ${own.length})`,
          'START TRANSACTION;',
          `${pgbenchText(statements.lockCodeById.text, ['project', 'cust', 'code', 'now', 'code'])} \\gset`,
          `${pgbenchText(statements.liveChain.text, ['cust', 'plan_group', 'now', 'project'])};`,
          `${pgbenchText(statements.insertWindow.text, ['project', 'cust', 'plan_id', 'plan_group', 'now', 'later', 'source', 'id', 'now'])};`,
          // the redemption's two events, with fresh ids (pgbench cannot make strings: the array is built in SQL)
          `${pgbenchText(
            statements.insertEvents.text.replace(
              '$4::jsonb',
              `format('[{"id":"evt_%s","type":"subscriptions.changed","data":{"source":"code"}},{"id":"evt_%s","type":"code.redeemed","data":{}}]', left(md5(random()::text), 24), left(md5(random()::text), 24))::jsonb`,
            ),
            ['project', 'cust', 'two'],
          )};`,
          'COMMIT;',
          '',
        ].join('\n'),
      );
      redeemDefines = {
        project: project.id,
        two: 2,
        k: 0,
        now: now.toISOString(),
        later: later.toISOString(),
        source: 'code',
      };
    }

    // --- redemptions: distinct codes and customers, service against the baselines
    const used: Record<string, number> = Object.fromEntries(sides.map((side) => [side, 0]));
    const redeemRequest = (side: Target): autocannon.Request => ({
      method: 'POST',
      path: '/api/private/v1/redemptions',
      headers: json,
      setupRequest: (r) => {
        const i = used[side.name]++;
        const list = codesOf[side.name];
        const who = customersOf[side.name];
        // past the end the codes repeat and answer 409 (counted as errors): raise BENCH_CODES
        return {
          ...r,
          body: JSON.stringify({
            code: list[i % list.length],
            customer: { type: 'username', value: who[i % who.length] },
          }),
        };
      },
    });
    // the same answer from every side (a window of 30 days from now, for the first customer of each side)
    await sameAnswers(
      [service, ...baselines],
      (t) =>
        call(t.port, 'POST', '/api/private/v1/redemptions', json, {
          code: codesOf[t.name][used[t.name]],
          customer: { type: 'username', value: customersOf[t.name][used[t.name]++] },
        }),
      (data) => ({
        created: data?.customer?.created,
        subscriptions: data?.subscriptions?.map((w: any) => ({ planId: w.planId, planName: w.planName })),
      }),
    );
    // The seed analyzed `subscriptions` while it was empty, and the warm-up has just filled it
    // faster than autovacuum looks (once a minute). A generic plan the service cached meanwhile
    // would scan the whole table for each customer's chain until then
    // (docs/decisions.md#named-prepared-statements-for-the-hot-queries): the steady state is measured.
    const analyze = () => db.query('ANALYZE subscriptions, codes').then(() => undefined);
    rows.push(
      await versus(
        'POST /redemptions (distinct codes)',
        service,
        baselines,
        REDEEM_CONNECTIONS,
        redeemRequest,
        {
          afterWarmUp: analyze,
          pgbench: redeemScript ? () => runPgbench(url!, redeemScript!, redeemDefines) : undefined,
        },
      ),
    );

    // --- a redemption for a customer whose group already holds n windows (ended ones: a customer
    // who has redeemed for years), one client, a fresh customer for each redemption
    const windowLoops: LoopResult[] = [];
    for (const [k, n] of windowCounts.entries()) {
      const names = Array.from({ length: WINDOW_SAMPLES }, (_, j) => `win${n}x${j}`);
      const ids: number[] = (
        await db.query(
          `INSERT INTO customers (project_id, username) SELECT $1, unnest($2::text[]) RETURNING id`,
          [project.id, names],
        )
      ).rows.map((r) => r.id);
      await db.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
         SELECT $1, c, $2, $3, now() - (w * 30 + 30) * interval '1 day', now() - w * 30 * interval '1 day', 'activation'
           FROM unnest($4::int[]) c, generate_series(1, $5::int) w`,
        [project.id, plan.id, plan.group, ids, n],
      );
      await db.query('ANALYZE subscriptions');
      const mine = spareCodes.slice(k * WINDOW_SAMPLES, (k + 1) * WINDOW_SAMPLES);
      const x = await drive(
        `POST /redemptions, group holding ${n} windows (1 client)`,
        1,
        3600,
        (i) =>
          call(port, 'POST', '/api/private/v1/redemptions', json, {
            code: mine[i],
            customer: { type: 'username', value: names[i] },
          }),
        WINDOW_SAMPLES,
      );
      windowLoops.push(x);
      loops.push(x);
      console.log(JSON.stringify(x));
    }
    // --- entitlements: a metered feature with a monthly quota far above what the run uses,
    // granted to 20,000 customers (windows written straight into the chain, as a grant would leave
    // them): checks and consumes spread over 10,000 of them, checks of the other 10,000 each for
    // the first time, and consumes on one hot customer (serialised by its row lock); ratios
    // against GET /customers/:id above
    const feature = (
      await call(port, 'POST', '/api/private/v1/features', sk, {
        slug: 'api-calls',
        name: 'API calls',
        metered: true,
        unit: 'call',
      })
    ).body.data;
    const meteredPlan = (
      await call(port, 'POST', '/api/private/v1/plans', sk, {
        slug: 'metered',
        name: 'Metered',
        value: 5,
        group: 'usage',
        quotas: [{ featureId: feature.id, limit: 1_000_000_000, priority: 0, resetInterval: 'P1M' }],
      })
    ).body.data;
    const entitled: number[] = (
      await db.query(`SELECT id FROM customers WHERE project_id = $1 ORDER BY random() LIMIT 20000`, [
        project.id,
      ])
    ).rows.map((r: { id: number }) => r.id);
    await db.query(
      `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
       SELECT $1, id, $2, 'usage', now() - interval '3 days', NULL, 'activation' FROM unnest($3::int[]) AS id`,
      [project.id, meteredPlan.id, entitled],
    );
    // a ledger in operation: three records of each customer from before its window (outside every
    // period measured), analyzed. Statistics taken while the ledger was empty would leave each
    // connection's cached plans scanning the whole ledger as it grows during the run.
    await db.query(
      `WITH u AS (
         INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at, overage_running, feature_seq)
         SELECT $1, id, $2, 'history-' || id || '-' || n, 1, 0, now() - interval '10 days' + n * interval '1 hour', 0, n
           FROM unnest($3::int[]) AS id, generate_series(1, 3) AS n
         RETURNING *)
       , a AS (
         INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at, running)
         SELECT project_id, id, customer_id, feature_id, 'usage', recorded_at, amount, recorded_at,
                right(event_id, 1)::int -- the n-th record of its customer: running total n
           FROM u)
       INSERT INTO usage_event_ids (project_id, customer_id, event_id, feature_id, usage_id, recorded_at, amount, overage)
       SELECT project_id, customer_id, event_id, feature_id, id, recorded_at, amount, overage FROM u`,
      [project.id, feature.id, entitled],
    );
    await db.query('ANALYZE subscriptions, usage_records, usage_allocations, usage_event_ids');
    /** consumes and the measured checks: 10,000 customers, each checked once before (the warm-up) */
    const spread = entitled.slice(0, 10_000);
    /** checked once each, after the others: every check the first of its customer in this process */
    const firsts = entitled.slice(10_000);
    /** POSTs of `body` to `path` for each customer of `ids` in turn */
    const postOf = (
      path: string,
      ids: number[],
      body: (customerId: number) => object,
    ): autocannon.Request => {
      const next = rotating(ids);
      return {
        method: 'POST',
        path: `/api/private/v1${path}`,
        headers: json,
        setupRequest: (r) => ({ ...r, body: JSON.stringify(body(next())) }),
      };
    };
    const checkOf = (ids: number[]) =>
      postOf('/entitlements/check', ids, (customerId) => ({ customerId, feature: 'api-calls', amount: 1 }));
    let eventSeq = 0;
    const usageOf = (ids: number[], prefix: string) =>
      postOf('/usage', ids, (customerId) => ({
        customerId,
        feature: 'api-calls',
        amount: 1,
        eventId: `${prefix}-${++eventSeq}`,
      }));
    /**
     * The connections' prepared statements, and each of the 10,000 customers checked once, so that
     * this process holds its periods (a check or consume is then one statement). Every part that
     * measures these customers runs after it: without it, their first rounds measure first
     * touches, and a reference that warms up during the rounds makes the ratios drift.
     */
    let spreadWarm = false;
    const warmSpread = async () => {
      if (spreadWarm) return;
      spreadWarm = true;
      await cannon(
        'entitlements warm-up',
        service,
        READ_CONNECTIONS,
        { amount: spread.length },
        checkOf(spread),
      );
    };
    if (PARTS.has('load')) {
      await warmSpread();
      if (firsts.length > 0)
        rows.push(
          await single(
            `POST /entitlements/check (first check of each of ${firsts.length.toLocaleString('en-US')} customers)`,
            service,
            READ_CONNECTIONS,
            checkOf(firsts),
            { amount: firsts.length },
          ),
        );
    }
    if (PARTS.has('load')) {
      // the check and the consume over 10,000 customers, and one hot customer's consumes, in rounds
      // with GET /customers/:id, the order rotated every round (as the baselines are): each ratio to the read is the median of
      // the per-round ratios, so that a slow patch of a shared machine weighs on both
      const before = baselines.find((b) => b.name === BEFORE_SIDE);
      const sides: Array<[string, autocannon.Request, Target]> = [
        ['GET /customers/:id (in rounds with the entitlement scenarios)', readById(), service],
        ['POST /entitlements/check (10,000 customers)', checkOf(spread), service],
        ['POST /usage (10,000 customers)', usageOf(spread, 'bench'), service],
        // one customer's checks: read once per batch
        ['POST /entitlements/check (one hot customer)', checkOf([spread[0]]), service],
        // one customer's consumes, serialised on its row lock unless gathered into batches
        ['POST /usage (one hot customer)', usageOf([spread[0]], 'hot'), service],
        ...(before
          ? ([
              [`POST /entitlements/check (10,000 customers, ${BEFORE_SIDE})`, checkOf(spread), before],
              [`POST /usage (10,000 customers, ${BEFORE_SIDE})`, usageOf(spread, 'before'), before],
              [`POST /entitlements/check (one hot customer, ${BEFORE_SIDE})`, checkOf([spread[0]]), before],
              [`POST /usage (one hot customer, ${BEFORE_SIDE})`, usageOf([spread[0]], 'hot-before'), before],
            ] as Array<[string, autocannon.Request, Target]>)
          : []),
      ];
      const runs = new Map<string, CannonRun[]>(sides.map(([name]) => [name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, req, target] of sides.map((_, i) => sides[(i + round) % sides.length])) {
          const run = await cannon(name, target, READ_CONNECTIONS, SECONDS, req);
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs.get(name)!.push(run);
        }
      }
      const [readName] = sides[0];
      for (const [name] of sides) {
        rows.push({
          scenario: name,
          connections: READ_CONNECTIONS,
          service: runs.get(name)!,
          baselines: {},
          ratios: {},
          pgbench: [],
        });
        if (name !== readName)
          toRead.set(
            name,
            runs.get(name)!.map((r, i) => round2(r.rps / runs.get(readName)![i].rps)),
          );
      }
      // this tree against the before tree, round by round: the checks and the consumes
      for (const [name] of before ? sides.slice(1, 5) : []) {
        const mine = runs.get(name)!;
        const theirs = runs.get(name.replace(/\)$/, `, ${BEFORE_SIDE})`))!;
        const ratios = mine.map((r, i) => round2(r.rps / theirs[i].rps));
        console.log(
          `${name}: service/${BEFORE_SIDE} req/s per round ${ratios.join(', ')}; median ${round2(median(ratios))}`,
        );
      }
      // the consumes' transactions replayed by pgbench: where PostgreSQL's CPU is the limit
      if (PGBENCH && PARTS.has('dblimit')) {
        const capture: CaptureContext = {
          db,
          dir,
          transpile: (name) => transpiled(dir, name),
          start: async (args, env) => {
            const capturePort = await freePort();
            const child = spawn(process.execPath, [...RUNTIME_FLAGS, ...args, 'dist/main.js'], {
              env: {
                ...serviceEnv(capturePort),
                ...env,
                NODE_PATH: resolve(__dirname, '..', 'node_modules'),
              },
              stdio: ['ignore', 'ignore', 'inherit'],
            });
            await waitReady(capturePort, child, 'capturing service');
            return { port: capturePort, stop: () => stopChild(child) };
          },
          consume: async (at, customerId, eventId) =>
            (
              await call(at, 'POST', '/api/private/v1/usage', json, {
                customerId,
                feature: 'api-calls',
                amount: 1,
                eventId,
              })
            ).status,
        };
        // customers of their own, after the hot one: one at a time, then in groups sent together
        const kinds = [
          {
            kind: 'one consume a transaction',
            customers: spread.slice(1, 201),
            together: 1,
            table: 'bench_consumes_one',
          },
          {
            kind: 'batches',
            customers: spread.slice(201, 201 + 64 * CONSUME_LIMIT_TOGETHER),
            together: CONSUME_LIMIT_TOGETHER,
            table: 'bench_consumes_batched',
          },
        ];
        const scripts = [];
        // (with a small BENCH_CUSTOMERS a kind may get none: skipped)
        for (const k of kinds.filter((kind) => kind.customers.length > 0)) {
          const { script, sizes } = await captureConsumeScript(capture, k.customers, k.together, k.table);
          const file = join(dir, `${k.table}.sql`);
          writeFileSync(file, script);
          scripts.push({ kind: k.kind, file, size: sizes.reduce((n, x) => n + x, 0) / sizes.length });
        }
        for (let round = 0; round < ROUNDS; round++)
          for (const { kind, file, size } of scripts)
            for (const clients of CONSUME_LIMIT_CLIENTS) {
              const run = await runPgbench(url!, file, {}, { clients, warmUpSeconds: CONSUME_LIMIT_WARM_UP });
              const consumes = { kind, size: round2(size), clients, ...run };
              console.log(
                JSON.stringify({ round: round + 1, scenario: 'consumes on PostgreSQL alone', ...consumes }),
              );
              consumeLimit.push(consumes);
            }
      }
    }
    /** A check, then a consume, one client, for customer `who`, as `${name}, ${what} (1 client)`. */
    const checkAndConsume = async (who: number, what: string) => {
      const body = (extra: object) => ({ customerId: who, feature: 'api-calls', amount: 1, ...extra });
      for (const [name, make] of [
        [
          'POST /entitlements/check',
          () => call(port, 'POST', '/api/private/v1/entitlements/check', json, body({})),
        ],
        [
          'POST /usage',
          () => call(port, 'POST', '/api/private/v1/usage', json, body({ eventId: `period-${++eventSeq}` })),
        ],
      ] as const) {
        const x = await drive(`${name}, ${what} (1 client)`, 1, SECONDS, make);
        loops.push(x);
        console.log(JSON.stringify(x));
      }
    };
    // --- a check and a consume, one client, for a customer whose current period already holds n
    // records (a busy quota late in its month): the cost of the period's usage against n
    for (const [k, n] of (PARTS.has('windows') ? LEDGER : []).entries()) {
      const who = firsts[firsts.length - 1 - k] ?? spread[spread.length - 1 - k];
      await db.query(
        `WITH u AS (
           INSERT INTO usage_records (project_id, customer_id, feature_id, event_id, amount, overage, recorded_at)
           SELECT $1, $2, $3, 'ledger-' || i, 1, 0, now() - interval '2 days' + i * interval '1 ms'
             FROM generate_series(1, $4::int) AS i
           RETURNING *)
         INSERT INTO usage_allocations (project_id, usage_id, customer_id, feature_id, plan_group, period_start, amount, recorded_at)
         SELECT project_id, id, customer_id, feature_id, 'usage', now() - interval '3 days', amount, recorded_at FROM u`,
        [project.id, who, feature.id, n],
      );
      await checkAndConsume(who, `period holding ${n.toLocaleString('en-US')} record${n === 1 ? '' : 's'}`);
    }
    // --- the same for a customer whose group holds n windows: n - 1 ended ones, each of a month,
    // abutting its live window (a customer who renewed monthly for years; its periods' anchor is
    // the first window's start)
    for (const [k, n] of windowCounts.entries()) {
      const who =
        firsts[firsts.length - 1 - LEDGER.length - k] ?? spread[spread.length - 1 - LEDGER.length - k];
      await db.query(
        `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
         SELECT $1, $2, $3, 'usage', now() - interval '3 days' - w * interval '30 days',
                now() - interval '3 days' - (w - 1) * interval '30 days', 'activation'
           FROM generate_series(1, $4::int) AS w`,
        [project.id, who, meteredPlan.id, n - 1],
      );
      await checkAndConsume(who, `group holding ${n.toLocaleString('en-US')} window${n === 1 ? '' : 's'}`);
    }
    // --- grants: a check and a consume, one client, for customers holding 1 active grant of a
    // feature no plan gives, 100 active ones, and 1 active one beside 1,000 ended ones (expired
    // more than a day ago, or voided). The scenarios take turns for GRANT_ROUNDS rounds, the order
    // rotated every round, so that a slow patch of a shared machine weighs on every customer; a
    // ratio is the median of the per-round ratios to the customer holding one grant.
    const grantRows: GrantRow[] = [];
    if (PARTS.has('grants')) {
      const grantFeature = (
        await call(port, 'POST', '/api/private/v1/features', sk, {
          slug: 'grant-calls',
          name: 'Granted calls',
          metered: true,
          unit: 'call',
        })
      ).body.data;
      const holders = GRANT_HOLDERS.map((h) => ({ ...h, id: 0 }));
      for (const h of holders) {
        h.id = (
          await db.query(`INSERT INTO customers (project_id, username) VALUES ($1, $2) RETURNING id`, [
            project.id,
            `grants-${h.active}-${h.expired + h.voided}`,
          ])
        ).rows[0].id;
        // amounts far above what the run consumes; the active grants end on different days, so
        // the order of consumption has something to sort, and a consume takes from the first
        await db.query(
          `INSERT INTO grants (project_id, customer_id, feature_id, amount, used, priority, effective_at, expires_at, metadata, created_at, voided_at)
           SELECT $1::text, $2::int, $3::int, 1000000000, 0, 0, now() - interval '1 day', now() + interval '30 days' + g * interval '1 day', '{}'::jsonb, now() - interval '1 day', NULL::timestamptz
             FROM generate_series(1, $4::int) g
           UNION ALL
           SELECT $1, $2, $3, 100, 40, 0, now() - interval '400 days', now() - interval '2 days' - g * interval '1 hour', '{}'::jsonb, now() - interval '400 days', NULL::timestamptz
             FROM generate_series(1, $5::int) g
           UNION ALL
           SELECT $1, $2, $3, 100, 40, 0, now() - interval '400 days', NULL::timestamptz, '{}'::jsonb, now() - interval '400 days', now() - g * interval '1 minute'
             FROM generate_series(1, $6::int) g`,
          [project.id, h.id, grantFeature.id, h.active, h.expired, h.voided],
        );
      }
      await db.query('ANALYZE grants');
      // every customer is granted the feature through exactly its active grants
      for (const h of holders) {
        const reply = await call(port, 'POST', '/api/private/v1/entitlements/check', json, {
          customerId: h.id,
          feature: 'grant-calls',
          amount: 1,
        });
        const buckets = reply.body?.data?.buckets?.length;
        if (reply.status !== 200 || reply.body.data.allowed !== true || buckets !== h.active)
          throw new Error(
            `grants: the check of the customer holding ${h.label} answered ${reply.status} with ${buckets} buckets: ${JSON.stringify(reply.body).slice(0, 300)}`,
          );
      }
      const scenarios = holders.flatMap((h) =>
        (['POST /entitlements/check', 'POST /usage'] as const).map((kind) => ({
          kind,
          holder: h.label,
          make: () =>
            call(
              port,
              'POST',
              `/api/private/v1${kind === 'POST /usage' ? '/usage' : '/entitlements/check'}`,
              json,
              {
                customerId: h.id,
                feature: 'grant-calls',
                amount: 1,
                ...(kind === 'POST /usage' ? { eventId: `grants-${++eventSeq}` } : {}),
              },
            ),
        })),
      );
      for (const s of scenarios)
        if (WARMUP > 0) await drive(`${s.kind}, ${s.holder} warm-up`, 1, WARMUP, s.make);
      const runs = new Map(scenarios.map((s) => [s, [] as GrantRun[]]));
      for (let round = 0; round < GRANT_ROUNDS; round++) {
        for (const s of scenarios.map((_, i) => scenarios[(i + round) % scenarios.length])) {
          const db0 = databaseCpuMs();
          const x = await drive(`${s.kind}, ${s.holder} (1 client)`, 1, SECONDS, s.make);
          const run = { ...x, dbCpuMsPerRequest: round2((databaseCpuMs() - db0) / Math.max(1, x.requests)) };
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs.get(s)!.push(run);
        }
      }
      for (const s of scenarios) {
        const one = scenarios.find((o) => o.kind === s.kind && o.holder === GRANT_HOLDERS[0].label)!;
        const mine = runs.get(s)!;
        grantRows.push({
          kind: s.kind,
          holder: s.holder,
          runs: mine,
          ratios: s === one ? [] : mine.map((r, i) => round2(runs.get(one)![i].rps / r.rps)),
        });
      }
    }
    // --- holds: a hold and its commit (one pair: the commit records 1 of the 2 held) against one
    // consume, HOLD_CLIENTS loops each over the 10,000 customers of the consumes, for HOLD_ROUNDS
    // rounds in alternating order; a ratio is the median of the per-round pairs/s ÷ consumes/s.
    // Then a check and a consume, one client, for a customer with 100 live holds of the feature,
    // one whose 100 holds all ended, and one with none, in rotating rounds, as the grants part.
    const holdRows: HoldRow[] = [];
    if (PARTS.has('holds')) {
      let holdSeq = 0;
      const pairCustomer = rotating(spread);
      const consumeCustomer = rotating(spread);
      const pair = async (): Promise<Reply> => {
        const held = await call(port, 'POST', '/api/private/v1/usage/holds', json, {
          customerId: pairCustomer(),
          feature: 'api-calls',
          amount: 2,
          holdId: `bench-hold-${++holdSeq}`,
        });
        if (held.status !== 201) return held;
        return call(port, 'POST', `/api/private/v1/usage/holds/${held.body.data.hold.id}/commit`, json, {
          amount: 1,
        });
      };
      const consume = () =>
        call(port, 'POST', '/api/private/v1/usage', json, {
          customerId: consumeCustomer(),
          feature: 'api-calls',
          amount: 1,
          eventId: `holds-use-${++eventSeq}`,
        });
      // the holds table as it is after a while in service, as the ledger is (three ended holds for
      // each of the 10,000 customers), and analyzed: a prepared statement is planned again only
      // after its tables are, so plans made while the table was empty would read it whole
      await db.query(
        `INSERT INTO usage_holds (project_id, customer_id, feature_id, hold_id, amount, allocations, status, created_at, expires_at, ended_at)
         SELECT $1, c, $2, 'history-' || c || '-' || g, 1, '[]'::jsonb, 'released',
                now() - interval '2 days', now() - interval '1 day', now() - interval '2 days' + interval '1 minute'
           FROM unnest($3::int[]) c, generate_series(1, 3) g`,
        [project.id, feature.id, spread],
      );
      await db.query('ANALYZE usage_holds');
      await warmSpread();
      const sides = [
        { label: 'POST /usage (10,000 customers)', make: consume },
        { label: 'POST /usage/holds and its commit (10,000 customers)', make: pair },
      ];
      for (const s of sides) if (WARMUP > 0) await drive(`${s.label} warm-up`, HOLD_CLIENTS, WARMUP, s.make);
      const sideRuns = sides.map(() => [] as GrantRun[]);
      for (let round = 0; round < HOLD_ROUNDS; round++) {
        for (const k of sides.map((_, i) => (i + round) % sides.length)) {
          const db0 = databaseCpuMs();
          const x = await drive(
            `${sides[k].label} (${HOLD_CLIENTS} clients)`,
            HOLD_CLIENTS,
            SECONDS,
            sides[k].make,
          );
          const run = { ...x, dbCpuMsPerRequest: round2((databaseCpuMs() - db0) / Math.max(1, x.requests)) };
          console.log(JSON.stringify({ round: round + 1, ...run }));
          sideRuns[k].push(run);
        }
      }
      holdRows.push(
        { label: sides[0].label, runs: sideRuns[0], ratios: [] },
        {
          label: sides[1].label,
          runs: sideRuns[1],
          ratios: sideRuns[1].map((r, i) => round2(r.rps / sideRuns[0][i].rps)),
        },
      );

      // three customers of the metered plan: 100 live holds of 1, 100 ended ones, none
      const holders = [
        { label: 'no holds', live: 0, ended: 0, id: 0 },
        { label: '100 live holds', live: 100, ended: 0, id: 0 },
        { label: '100 ended holds', live: 0, ended: 100, id: 0 },
      ];
      for (const h of holders) {
        h.id = (
          await db.query(`INSERT INTO customers (project_id, username) VALUES ($1, $2) RETURNING id`, [
            project.id,
            `holds-${h.live}-${h.ended}`,
          ])
        ).rows[0].id;
        await db.query(
          `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
           VALUES ($1, $2, $3, 'usage', now() - interval '3 days', NULL, 'activation')`,
          [project.id, h.id, meteredPlan.id],
        );
        await db.query(
          `INSERT INTO usage_holds (project_id, customer_id, feature_id, hold_id, amount, allocations, status, created_at, expires_at, ended_at)
           SELECT $1, $2, $3, 'seed-' || g, 1,
                  jsonb_build_array(jsonb_build_object('source', 'plan', 'group', 'usage', 'periodStart', now() - interval '3 days',
                                                       'grantId', NULL, 'amount', '1.000000')),
                  s.status, now() - interval '1 hour', now() + interval '1 day', s.ended_at
             FROM generate_series(1, $4::int + $5::int) g,
                  LATERAL (SELECT CASE WHEN g <= $4 THEN 'held' ELSE 'released' END AS status,
                                  CASE WHEN g <= $4 THEN NULL ELSE now() - interval '30 minutes' END AS ended_at) s`,
          [project.id, h.id, feature.id, h.live, h.ended],
        );
      }
      await db.query('ANALYZE customers, subscriptions, usage_holds');
      for (const h of holders) {
        const reply = await call(port, 'POST', '/api/private/v1/entitlements/check', json, {
          customerId: h.id,
          feature: 'api-calls',
          amount: 1,
        });
        if (reply.status !== 200 || reply.body.data.balance?.held !== h.live)
          throw new Error(
            `holds: the check of the customer with ${h.label} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 300)}`,
          );
      }
      const scenarios = holders.flatMap((h) =>
        (['POST /entitlements/check', 'POST /usage'] as const).map((kind) => ({
          kind,
          holder: h.label,
          make: () =>
            call(
              port,
              'POST',
              `/api/private/v1${kind === 'POST /usage' ? '/usage' : '/entitlements/check'}`,
              json,
              {
                customerId: h.id,
                feature: 'api-calls',
                amount: 1,
                ...(kind === 'POST /usage' ? { eventId: `holds-${++eventSeq}` } : {}),
              },
            ),
        })),
      );
      for (const s of scenarios)
        if (WARMUP > 0) await drive(`${s.kind}, ${s.holder} warm-up`, 1, WARMUP, s.make);
      const runs = new Map(scenarios.map((s) => [s, [] as GrantRun[]]));
      for (let round = 0; round < HOLD_ROUNDS; round++) {
        for (const s of scenarios.map((_, i) => scenarios[(i + round) % scenarios.length])) {
          const db0 = databaseCpuMs();
          const x = await drive(`${s.kind}, ${s.holder} (1 client)`, 1, SECONDS, s.make);
          const run = { ...x, dbCpuMsPerRequest: round2((databaseCpuMs() - db0) / Math.max(1, x.requests)) };
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs.get(s)!.push(run);
        }
      }
      for (const s of scenarios) {
        const none = scenarios.find((o) => o.kind === s.kind && o.holder === holders[0].label)!;
        const mine = runs.get(s)!;
        holdRows.push({
          label: `${s.kind}, ${s.holder}`,
          runs: mine,
          ratios: s === none ? [] : mine.map((r, i) => round2(runs.get(none)![i].rps / r.rps)),
        });
      }
    }
    // --- calendar: checks of one feature, a few clients, spread over CALENDAR_CUSTOMERS customers
    // per plan: a run-anchored daily quota (the reference), a run-anchored monthly one, and
    // calendar quotas in named zones. The scenarios take turns for CALENDAR_ROUNDS rounds, the
    // order rotated every round; a ratio is the median of the per-round req/s ÷ the reference's.
    const calendarRows: CalendarRow[] = [];
    if (PARTS.has('calendar')) {
      const featureId: number = (
        await call(port, 'POST', '/api/private/v1/features', sk, {
          slug: 'calendar-calls',
          name: 'Calendar calls',
          metered: true,
          unit: 'call',
        })
      ).body.data.id;
      const scenarios: Array<(typeof CALENDAR_PLANS)[number] & { ids: number[] }> = [];
      for (const [k, p] of CALENDAR_PLANS.entries()) {
        const reply = await call(port, 'POST', '/api/private/v1/plans', sk, {
          slug: p.slug,
          name: p.label,
          value: 5,
          group: 'calendar',
          quotas: [{ featureId, limit: 1_000_000_000, priority: 0, thresholds: [80, 100], ...p.quota }],
        });
        if (reply.status >= 300)
          throw new Error(`calendar: plan ${p.slug} answered ${reply.status}: ${JSON.stringify(reply.body)}`);
        // usernames of at most 16 characters, as the column allows
        const ids: number[] = (
          await db.query(
            `INSERT INTO customers (project_id, username, time_zone)
             SELECT $1, 'cal' || $2 || '-' || g, $3 FROM generate_series(1, $4::int) g RETURNING id`,
            [project.id, k, p.customerZone, CALENDAR_CUSTOMERS],
          )
        ).rows.map((r: { id: number }) => r.id);
        // a zone the customer was given 40 days ago: a history of one change, as the API leaves it
        if (p.customerZone)
          await db.query(
            `INSERT INTO customer_time_zone_changes (project_id, customer_id, changed_at, from_zone, to_zone)
             SELECT $1, id, now() - interval '40 days', NULL, $2 FROM unnest($3::int[]) AS id`,
            [project.id, p.customerZone, ids],
          );
        // runs started 3 to 7 days ago at various hours, so the run-anchored periods differ too
        await db.query(
          `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, source)
           SELECT $1, id, $2, 'calendar', now() - interval '3 days' - (k % 97) * interval '1 hour', NULL, 'activation'
             FROM unnest($3::int[]) WITH ORDINALITY AS t(id, k)`,
          [project.id, reply.body.data.id, ids],
        );
        scenarios.push({ ...p, ids });
      }
      await db.query('ANALYZE customers, subscriptions, customer_time_zone_changes');
      // every plan answers its own zone, the quota allowed
      for (const s of scenarios) {
        const reply = await call(port, 'POST', '/api/private/v1/entitlements/check', json, {
          customerId: s.ids[0],
          feature: 'calendar-calls',
          amount: 1,
        });
        const bucket = reply.body?.data?.buckets?.[0];
        if (
          reply.status !== 200 ||
          reply.body.data.allowed !== true ||
          String(bucket?.timeZone).toLowerCase() !== s.zone.toLowerCase()
        )
          throw new Error(
            `calendar: the check of ${s.label} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 400)}`,
          );
      }
      const makers = scenarios.map((s) => ({
        label: s.label,
        make: (i: number) =>
          call(port, 'POST', '/api/private/v1/entitlements/check', json, {
            customerId: s.ids[i % s.ids.length],
            feature: 'calendar-calls',
            amount: 1,
          }),
      }));
      // warm-up: each customer checked once, so this process has seen every one
      for (const [k, s] of makers.entries())
        await drive(`${s.label} warm-up`, CALENDAR_CLIENTS, 3600, s.make, scenarios[k].ids.length);
      const runs = new Map(makers.map((s) => [s, [] as GrantRun[]]));
      for (let round = 0; round < CALENDAR_ROUNDS; round++) {
        for (const s of makers.map((_, i) => makers[(i + round) % makers.length])) {
          const db0 = databaseCpuMs();
          const x = await drive(
            `POST /entitlements/check, ${s.label} (${CALENDAR_CLIENTS} clients)`,
            CALENDAR_CLIENTS,
            SECONDS,
            s.make,
          );
          const run = { ...x, dbCpuMsPerRequest: round2((databaseCpuMs() - db0) / Math.max(1, x.requests)) };
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs.get(s)!.push(run);
        }
      }
      const reference = runs.get(makers[0])!;
      for (const s of makers) {
        const mine = runs.get(s)!;
        calendarRows.push({
          label: s.label,
          runs: mine,
          ratios: s === makers[0] ? [] : mine.map((r, i) => round2(r.rps / reference[i].rps)),
          cpuRatios:
            s === makers[0]
              ? []
              : mine.map((r, i) => round2(r.cpuMsPerRequest / reference[i].cpuMsPerRequest)),
        });
      }
    }
    // --- campaign: redemptions with CAMPAIGN_CONNECTIONS connections of one campaign code (a cap
    // of CAMPAIGN_CAP, one per customer) and of single-use codes of the same plan, each redemption
    // for a customer of its own that holds nothing in the plan's group. The two take turns for
    // CAMPAIGN_ROUNDS rounds, the order rotated every round; the ratio is the median of the
    // per-round campaign ÷ single-use req/s.
    const campaignRows: CampaignRow[] = [];
    let campaignCount: { counted: number; ok: number } | undefined;
    if (PARTS.has('campaign')) {
      const campaignPlan = (
        await call(port, 'POST', '/api/private/v1/plans', sk, {
          slug: 'campaign',
          name: 'Campaign',
          value: 20,
          group: 'campaign',
        })
      ).body.data;
      const created = await call(port, 'POST', '/api/private/v1/codes', sk, {
        kind: 'campaign',
        code: 'BENCH-CAMPAIGN',
        planId: campaignPlan.id,
        duration: 'P30D',
        maxRedemptions: CAMPAIGN_CAP,
        perCustomerLimit: 1,
      });
      if (created.status !== 201)
        throw new Error(`campaign: the code answered ${created.status}: ${JSON.stringify(created.body)}`);
      const campaignCode = created.body.data;
      const singles: string[] = [];
      while (singles.length < CAMPAIGN_PER_SIDE) {
        const reply = await call(port, 'POST', '/api/private/v1/codes', sk, {
          planId: campaignPlan.id,
          duration: 'P30D',
          count: Math.min(BATCH, CAMPAIGN_PER_SIDE - singles.length),
        });
        if (reply.status !== 201)
          throw new Error(`campaign: a batch answered ${reply.status}: ${JSON.stringify(reply.body)}`);
        singles.push(...reply.body.data.codes);
      }
      // the seeded customers, the last ones first (the redemption part takes the first ones; it
      // redeems in another group anyway), then new ones when the seed holds too few
      const wanted = 2 * CAMPAIGN_PER_SIDE;
      const names: string[] = (
        await db.query(
          'SELECT username FROM customers WHERE project_id = $1 AND username LIKE $2 ORDER BY id DESC LIMIT $3',
          [project.id, 'user%', wanted],
        )
      ).rows.map((r: { username: string }) => r.username);
      if (names.length < wanted)
        names.push(
          ...(
            await db.query(
              `INSERT INTO customers (project_id, username)
               SELECT $1, 'camp' || lpad(g::text, 7, '0') FROM generate_series(1, $2::int) g RETURNING username`,
              [project.id, wanted - names.length],
            )
          ).rows.map((r: { username: string }) => r.username),
        );
      await db.query('ANALYZE customers');
      // position i goes to side i % 2: no customer redeems twice, in either side
      const campaignSides = [
        {
          label: 'campaign code (one code, cap 100,000)',
          codes: (_i: number) => campaignCode.code as string,
        },
        { label: 'single-use codes', codes: (i: number) => singles[i] },
      ].map((side, k) => ({
        ...side,
        customers: names.filter((_, i) => i % 2 === k),
        used: 0,
      }));
      const redeem = (side: (typeof campaignSides)[number]): autocannon.Request => ({
        method: 'POST',
        path: '/api/private/v1/redemptions',
        headers: json,
        setupRequest: (r) => {
          // past the end the customers (and single-use codes) repeat and answer 409, counted as
          // errors: BENCH_CAMPAIGN_REDEMPTIONS too low for this machine's rate
          const i = side.used++;
          return {
            ...r,
            body: JSON.stringify({
              code: side.codes(i % CAMPAIGN_PER_SIDE),
              customer: { type: 'username', value: side.customers[i % side.customers.length] },
            }),
          };
        },
      });
      // one redemption of each first: granted, and the campaign code counted
      for (const side of campaignSides) {
        const i = side.used++;
        const reply = await call(port, 'POST', '/api/private/v1/redemptions', json, {
          code: side.codes(i),
          customer: { type: 'username', value: side.customers[i] },
        });
        const counted = reply.body?.data?.campaign?.redemptionCount;
        if (reply.status >= 300 || (side === campaignSides[0] && counted !== 1))
          throw new Error(
            `campaign: a redemption of ${side.label} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 400)}`,
          );
      }
      const requests = campaignSides.map(redeem);
      let campaignOk = 1;
      if (WARMUP > 0)
        for (const [k, side] of campaignSides.entries()) {
          const warm = await cannon(
            `${side.label} warm-up`,
            service,
            CAMPAIGN_CONNECTIONS,
            WARMUP,
            requests[k],
          );
          if (k === 0) campaignOk += warm.ok;
          await settle(service.pid);
        }
      // statistics of the tables the warm-up has just filled (as the redemption part does)
      await db.query('ANALYZE subscriptions, codes, code_redemptions');
      const runs = campaignSides.map(() => [] as CannonRun[]);
      for (let round = 0; round < CAMPAIGN_ROUNDS; round++) {
        for (const k of campaignSides.map((_, i) => (i + round) % campaignSides.length)) {
          const run = await cannon(
            `POST /redemptions, ${campaignSides[k].label}`,
            service,
            CAMPAIGN_CONNECTIONS,
            SECONDS,
            requests[k],
          );
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs[k].push(run);
          await settle(service.pid);
        }
      }
      for (const [k, side] of campaignSides.entries())
        campaignRows.push({
          label: side.label,
          runs: runs[k],
          ratios: k === 0 ? runs[0].map((r, i) => round2(r.rps / runs[1][i].rps)) : [],
        });
      // the code's own count: every 2xx seen, and the requests cut off at the end of each run
      // that the service still served
      const shown = await call(port, 'GET', `/api/private/v1/codes/${campaignCode.id}`, sk);
      campaignCount = {
        counted: shown.body?.data?.redemptionCount,
        ok: campaignOk + runs[0].reduce((n, r) => n + r.ok, 0),
      };
      for (const side of campaignSides)
        if (side.used > side.customers.length)
          console.log(
            `WARNING: campaign: customers ran out for ${side.label} (${side.used} requests, ${side.customers.length} customers): raise BENCH_CAMPAIGN_REDEMPTIONS`,
          );
    }
    // --- audit: writes with their audit records (this tree) against the same writes without them
    // (the before tree, BENCH_BEFORE, served on the same database): POST /customers (a new
    // username each), POST /redemptions (single-use codes of a plan in a group of its own, each
    // for a customer of its own) and POST /usage (over the load part's customers with a metered
    // quota), with a read beside them as a control (no record on either tree: what differs there
    // is the rest of the two trees). The eight take turns for AUDIT_ROUNDS rounds, the order
    // rotated every round; a ratio is the median of the per-round ratios, with ÷ without. After
    // each run on this tree the part waits until the sealer has sealed its records, so that this
    // work never falls on the next run, and reports that CPU time apart.
    const auditRows: AuditRow[] = [];
    const auditCounts: AuditCount[] = [];
    const auditLoad: string[] = [];
    let auditActions: Array<{ action: string; n: number }> = [];
    if (PARTS.has('audit')) {
      const before = baselines.find((b) => b.name === BEFORE_SIDE)!;
      const auditPlan = (
        await call(port, 'POST', '/api/private/v1/plans', sk, {
          slug: 'audit',
          name: 'Audit',
          value: 20,
          group: 'audit',
        })
      ).body.data;
      const auditSides = [
        { key: 'n', label: 'with records (this tree)', target: service },
        { key: 'b', label: 'without (the tree before)', target: before },
      ].map((side) => ({
        ...side,
        codes: [] as string[],
        redeemers: [] as string[],
        redeemed: 0,
        created: 0,
      }));
      for (const side of auditSides) {
        while (side.codes.length < AUDIT_REDEMPTIONS) {
          const reply = await call(port, 'POST', '/api/private/v1/codes', sk, {
            planId: auditPlan.id,
            duration: 'P30D',
            count: Math.min(BATCH, AUDIT_REDEMPTIONS - side.codes.length),
          });
          if (reply.status !== 201)
            throw new Error(
              `audit: a batch of codes answered ${reply.status}: ${JSON.stringify(reply.body)}`,
            );
          side.codes.push(...reply.body.data.codes);
        }
        // customers that hold nothing in the plan's group, one per redemption (usernames of at
        // most 16 characters, as the column allows)
        side.redeemers = (
          await db.query(
            `INSERT INTO customers (project_id, username)
             SELECT $1, $2 || lpad(g::text, 8, '0') FROM generate_series(1, $3::int) g RETURNING username`,
            [project.id, `aud${side.key}-r-`, AUDIT_REDEMPTIONS],
          )
        ).rows.map((r: { username: string }) => r.username);
      }
      await db.query('ANALYZE customers, codes');
      const usernameOf = (side: (typeof auditSides)[number]) =>
        `aud${side.key}-c-${String(++side.created).padStart(8, '0')}`;
      const redemptionOf = (side: (typeof auditSides)[number]) => {
        // past the end the codes and customers repeat and answer 409, counted as errors:
        // BENCH_AUDIT_REDEMPTIONS too low for this machine's rate
        const i = side.redeemed++;
        return {
          code: side.codes[i % side.codes.length],
          customer: { type: 'username', value: side.redeemers[i % side.redeemers.length] },
        };
      };
      const writes: Array<{
        label: string;
        control: boolean;
        request: (side: (typeof auditSides)[number]) => autocannon.Request;
      }> = [
        {
          label: 'POST /customers (a new username each)',
          control: false,
          request: (side) => ({
            method: 'POST',
            path: '/api/private/v1/customers',
            headers: json,
            setupRequest: (r) => ({ ...r, body: JSON.stringify({ username: usernameOf(side) }) }),
          }),
        },
        {
          label: 'POST /redemptions (single-use codes, a customer of its own each)',
          control: false,
          request: (side) => ({
            method: 'POST',
            path: '/api/private/v1/redemptions',
            headers: json,
            setupRequest: (r) => ({ ...r, body: JSON.stringify(redemptionOf(side)) }),
          }),
        },
        {
          label: `POST /usage (${spread.length.toLocaleString('en-US')} customers)`,
          control: false,
          request: (side) => usageOf(spread, `audit-${side.key}`),
        },
        { label: 'GET /customers/:id (control: no record)', control: true, request: () => readById() },
      ];
      // each write answered alike by both trees (the same fields; the values are each its own)
      const keysOf = (data: unknown) =>
        data && typeof data === 'object' ? Object.keys(data as object).sort() : data;
      const checked = (label: string, t: Target) => async (reply: Promise<Reply>) => {
        const r = await reply;
        if (r.status >= 300)
          throw new Error(
            `audit: ${label} on ${t.name} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 400)}`,
          );
        return r;
      };
      const sideOf = (t: Target) => auditSides.find((s) => s.target === t)!;
      const targets = auditSides.map((s) => s.target);
      await sameAnswers(
        targets,
        (t) =>
          checked(
            'POST /customers',
            t,
          )(call(t.port, 'POST', '/api/private/v1/customers', json, { username: usernameOf(sideOf(t)) })),
        keysOf,
      );
      await sameAnswers(
        targets,
        (t) =>
          checked(
            'POST /redemptions',
            t,
          )(call(t.port, 'POST', '/api/private/v1/redemptions', json, redemptionOf(sideOf(t)))),
        (data) => ({
          keys: keysOf(data),
          created: data?.customer?.created,
          subscriptions: data?.subscriptions?.map((w: any) => ({ planId: w.planId, planName: w.planName })),
        }),
      );
      await sameAnswers(
        targets,
        (t) =>
          checked(
            'POST /usage',
            t,
          )(
            call(t.port, 'POST', '/api/private/v1/usage', json, {
              customerId: spread[0],
              feature: 'api-calls',
              amount: 1,
              eventId: `audit-${sideOf(t).key}-${++eventSeq}`,
            }),
          ),
        keysOf,
      );
      const scenarios = writes.flatMap((w) =>
        auditSides.map((side) => ({ write: w, side, request: w.request(side) })),
      );
      const unsealed = () => unsealedOf(db, project.id);
      /**
       * Waits until the service is idle and every record of the project is sealed (a minute at
       * most); answers the CPU ms the service and PostgreSQL spent meanwhile, and the records
       * that were left to seal.
       */
      const untilSealed = async (): Promise<{ cpuMs: number; records: number }> => {
        const service0 = cpuMsOf(service.pid);
        const db0 = databaseCpuMs();
        const records = await unsealed();
        await settle(service.pid);
        const deadline = Date.now() + 60_000;
        for (let left = await unsealed(); left > 0; left = await unsealed()) {
          if (Date.now() > deadline) {
            console.log(`WARNING: audit: ${left} records still unsealed a minute after a run`);
            break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        return { cpuMs: cpuMsOf(service.pid) - service0 + (databaseCpuMs() - db0), records };
      };
      /** A run of `s`, then the wait for its records (this tree) and for both processes to be idle. */
      const auditRun = async (s: (typeof scenarios)[number], seconds: number, name: string) => {
        const run = await cannon(name, s.side.target, AUDIT_CONNECTIONS, seconds, s.request);
        const sealing = s.side.target === service ? await untilSealed() : { cpuMs: 0, records: 0 };
        await settle(s.side.target.pid);
        return {
          ...run,
          sealCpuMsPerRequest: round2(sealing.cpuMs / Math.max(1, run.requests)),
          sealCpuMsPerRecord: sealing.records > 0 ? round2(sealing.cpuMs / sealing.records) : NaN,
        };
      };
      if (WARMUP > 0)
        for (const s of scenarios) await auditRun(s, WARMUP, `${s.write.label}, ${s.side.label} warm-up`);
      // statistics of the tables the warm-up has just filled (as the redemption part does)
      await db.query(
        'ANALYZE customers, codes, subscriptions, usage_records, usage_allocations, events, audit_events',
      );
      const countActions = async () =>
        new Map(
          (
            await db.query(
              'SELECT action, count(*)::int AS n FROM audit_events WHERE project_id = $1 GROUP BY action',
              [project.id],
            )
          ).rows.map((r: { action: string; n: number }) => [r.action, r.n]),
        );
      const actions0 = await countActions();
      const runs = new Map(scenarios.map((s) => [s, [] as AuditRun[]]));
      for (let round = 0; round < AUDIT_ROUNDS; round++) {
        auditLoad.push(
          loadavg()
            .map((x) => x.toFixed(2))
            .join(' '),
        );
        for (const s of scenarios.map((_, i) => scenarios[(i + round) % scenarios.length])) {
          const run = await auditRun(s, SECONDS, `${s.write.label}, ${s.side.label}`);
          console.log(JSON.stringify({ round: round + 1, ...run }));
          runs.get(s)!.push(run);
        }
      }
      auditLoad.push(
        loadavg()
          .map((x) => x.toFixed(2))
          .join(' '),
      );
      const actions1 = await countActions();
      auditActions = [...actions1]
        .map(([action, n]) => ({ action, n: n - (actions0.get(action) ?? 0) }))
        .filter((a) => a.n > 0);
      for (const w of writes) {
        const mine = runs.get(scenarios.find((s) => s.write === w && s.side.key === 'n')!)!;
        const theirs = runs.get(scenarios.find((s) => s.write === w && s.side.key === 'b')!)!;
        const per = (f: (a: AuditRun, b: AuditRun) => number) => mine.map((r, i) => round2(f(r, theirs[i])));
        auditRows.push({
          label: w.label,
          control: w.control,
          with: mine,
          without: theirs,
          rps: per((a, b) => a.rps / b.rps),
          cpu: per(
            (a, b) => (a.cpuMsPerRequest + a.dbCpuMsPerRequest) / (b.cpuMsPerRequest + b.dbCpuMsPerRequest),
          ),
          serviceCpu: per((a, b) => a.cpuMsPerRequest / b.cpuMsPerRequest),
          dbCpu: per((a, b) => a.dbCpuMsPerRequest / b.dbCpuMsPerRequest),
          cpuSealed: per(
            (a, b) =>
              (a.cpuMsPerRequest + a.dbCpuMsPerRequest + a.sealCpuMsPerRequest) /
              (b.cpuMsPerRequest + b.dbCpuMsPerRequest),
          ),
        });
      }
      // the records: every write this tree made (warm-up and probes included) has its record, the
      // before tree's none; found by the names each side used
      for (const side of auditSides) {
        const count = async (label: string, writesSql: string, recordsSql: string, pattern: string) => {
          const [w, r] = await Promise.all(
            [writesSql, recordsSql].map(async (sql) =>
              Number((await db.query(sql, [project.id, pattern])).rows[0].n),
            ),
          );
          auditCounts.push({ label, side: side.label, writes: w, records: r });
        };
        await count(
          'POST /customers',
          'SELECT count(*)::int AS n FROM customers WHERE project_id = $1 AND username LIKE $2',
          `SELECT count(*)::int AS n FROM customers c JOIN audit_events a
              ON a.project_id = c.project_id AND a.resource_type = 'customer' AND a.resource_id = c.id::text
             AND a.action = 'customer.created'
           WHERE c.project_id = $1 AND c.username LIKE $2`,
          `aud${side.key}-c-%`,
        );
        await count(
          'POST /redemptions',
          `SELECT count(*)::int AS n FROM codes k JOIN customers c ON c.id = k.redeemed_by_customer_id
           WHERE k.project_id = $1 AND c.username LIKE $2`,
          `SELECT count(*)::int AS n FROM codes k JOIN customers c ON c.id = k.redeemed_by_customer_id
             JOIN audit_events a
               ON a.project_id = k.project_id AND a.resource_type = 'code' AND a.resource_id = k.id::text
              AND a.action = 'code.redeemed'
           WHERE k.project_id = $1 AND c.username LIKE $2`,
          `aud${side.key}-r-%`,
        );
        await count(
          'POST /usage',
          'SELECT count(*)::int AS n FROM usage_records WHERE project_id = $1 AND event_id LIKE $2',
          `SELECT count(*)::int AS n FROM usage_records u JOIN audit_events a
              ON a.project_id = u.project_id AND a.resource_type = 'usage' AND a.resource_id = u.id::text
             AND a.action = 'usage.recorded'
           WHERE u.project_id = $1 AND u.event_id LIKE $2`,
          `audit-${side.key}-%`,
        );
      }
      for (const c of auditCounts) {
        const mine = c.side === auditSides[0].label;
        if (mine && !(c.writes > 0 && c.records > 0))
          throw new Error(
            `audit: this tree wrote ${c.records} audit records for ${c.writes} writes of ${c.label}: nothing to compare`,
          );
        if (!mine && c.records > 0)
          throw new Error(
            `audit: the before tree wrote ${c.records} audit records for ${c.label}: BENCH_BEFORE is not a tree without them`,
          );
      }
      for (const side of auditSides)
        if (side.redeemed > side.codes.length)
          console.log(
            `WARNING: audit: codes ran out for ${side.label} (${side.redeemed} requests, ${side.codes.length} codes): raise BENCH_AUDIT_REDEMPTIONS`,
          );
    }
    // --- auditscale: the audit log at scale. BENCH_AUDIT_RECORDS records of the project, inserted
    // unsealed in one statement (the columns as the writer fills them: actions of every type, a
    // `changes` of a few fields, requests of three records, `at` over thirty days); then the time
    // from their commit until the sealer has sealed them all, `verify` over the whole chain, and
    // one-client list pages at that size with the plans of their statements.
    let auditScale: AuditScale | undefined;
    let ledgerResult: LedgerScaleResult | undefined;
    if (PARTS.has('auditscale')) {
      // one action of the vocabulary is left out of the records, so that a filter on it shows
      // what a list finds when nothing matches
      const absentAction = 'hold.released';
      const pairs = Object.entries(AUDIT_ACTIONS).flatMap(([type, actions]) =>
        (actions as readonly string[]).filter((a) => a !== absentAction).map((action) => ({ type, action })),
      );
      const keyRow = (
        await db.query(`SELECT id, prefix FROM api_keys WHERE project_id = $1 AND kind = 'private' LIMIT 1`, [
          project.id,
        ])
      ).rows[0];
      const before = Number(
        (await db.query('SELECT count(*)::int AS n FROM audit_events WHERE project_id = $1', [project.id]))
          .rows[0].n,
      );
      const unsealed = () => unsealedOf(db, project.id);
      // what was there before is sealed first, so that the clock below counts these records only
      for (let i = 0; (await unsealed()) > 0 && i < 60; i++) await new Promise((r) => setTimeout(r, 1000));
      const rssIdle = memoryOf(service.pid).rss;
      const loadAtInsert = loadavg()
        .map((x) => x.toFixed(2))
        .join(' ');
      const insert0 = Date.now();
      // ids that sort with their time, as the service makes them (ten characters of the order, then random)
      await db.query(
        `INSERT INTO audit_events (id, project_id, at, actor_type, actor_key_id, actor_key_prefix,
           actor_customer_id, action, resource_type, resource_id, changes, request_id, idempotency_key, ip)
         SELECT 'aud_' || translate(lpad(to_hex(g), 10, '0'), '0123456789abcdef', '234567abcdefghij')
                       || translate(substr(md5('aud' || $2::text || g), 1, 14), '0189', 'wxyz'), $1,
                now() - make_interval(secs => ($3::bigint - g) * (2592000.0 / $3::bigint)),
                'private_key', $4::int, $5::text, NULL,
                ($6::text[])[1 + g % $8::int], ($7::text[])[1 + g % $8::int], (g / $8::int)::text,
                jsonb_build_object(
                  'name', jsonb_build_object('from', 'name ' || (g - 1), 'to', 'name ' || g),
                  'enabled', jsonb_build_object('from', NULL, 'to', g % 2 = 0),
                  'limit', jsonb_build_object('from', g % 1000, 'to', g % 1000 + 100),
                  'note', jsonb_build_object('from', NULL, 'to', 'bench record ' || md5(g::text))),
                'req_' || substr(md5('req' || $2::text || (g / 3)), 1, 24),
                CASE WHEN g % 4 = 0 THEN 'idem-' || $2::text || '-' || g END,
                '10.' || (g % 200) || '.' || (g / 200 % 256) || '.' || (g / 51200 % 256)
           FROM generate_series(1, $3::bigint) g`,
        [
          project.id,
          String(insert0),
          AUDIT_RECORDS,
          keyRow.id,
          keyRow.prefix,
          pairs.map((p) => p.action),
          pairs.map((p) => p.type),
          pairs.length,
        ],
      );
      const committed = Date.now();
      console.log(
        `auditscale: inserted ${AUDIT_RECORDS.toLocaleString('en-US')} records in ${((committed - insert0) / 1000).toFixed(1)} s`,
      );
      // (1) sealing: polled every second with the count verify reports as `unsealed` (verify
      // itself walks the whole sealed chain, which would compete with the sealer it measures)
      const sealLoad: string[] = [];
      let left = AUDIT_RECORDS;
      const sealing = await withPeakRss(service.pid, async () => {
        const cpu0 = cpuMsOf(service.pid);
        const db0 = databaseCpuMs();
        const deadline = committed + Math.max(600, AUDIT_RECORDS / 200) * 1000;
        for (let tick = 0; ; tick++) {
          left = await unsealed();
          if (left === 0 || Date.now() > deadline) break;
          if (tick % 30 === 0) {
            sealLoad.push(
              loadavg()
                .map((x) => x.toFixed(2))
                .join(' '),
            );
            console.log(`auditscale: ${left.toLocaleString('en-US')} unsealed after ${tick} s`);
          }
          await new Promise((r) => setTimeout(r, 1000));
        }
        return {
          ms: Date.now() - committed,
          cpuMs: cpuMsOf(service.pid) - cpu0,
          dbCpuMs: databaseCpuMs() - db0,
        };
      });
      if (left > 0) console.log(`WARNING: auditscale: ${left} records still unsealed at the deadline`);
      const verifyAfterSeal = (await call(port, 'GET', '/api/private/v1/audit-events/verify', sk)).body.data;
      // as a database that has lived a while (as the seeding does): the sealer's queue vacuumed,
      // statistics fresh
      await db.query('VACUUM (ANALYZE) audit_events, audit_seals, audit_unsealed');
      await settle(service.pid);
      // (2) verify over the whole chain
      const rssBefore = memoryOf(service.pid).rss;
      const verify0 = Date.now();
      const verified = await withPeakRss(service.pid, () =>
        call(port, 'GET', '/api/private/v1/audit-events/verify', sk),
      );
      const verifyMs = Date.now() - verify0;
      // (3) list pages: a resource, a request and a deep cursor taken from the middle of the chain
      const middle = (
        await db.query(
          `SELECT a.position, a.resource_type, a.resource_id, a.request_id, a.action
             FROM audit_seals s JOIN audit_events a ON a.position = s.position
            WHERE s.project_id = $1 AND s.seq = $2`,
          [project.id, before + Math.floor(AUDIT_RECORDS / 2)],
        )
      ).rows[0];
      const deepCursor = Buffer.from(JSON.stringify([String(middle.position)])).toString('base64url');
      const q = (params: Record<string, string>) => new URLSearchParams(params).toString();
      const listScenarios = [
        { label: 'first page, no filter', query: '' },
        { label: 'a page in the middle (cursor)', query: q({ cursor: deepCursor }) },
        {
          label: `resourceType=${middle.resource_type}&resourceId=…`,
          query: q({ resourceType: middle.resource_type, resourceId: middle.resource_id }),
        },
        { label: 'requestId=…', query: q({ requestId: middle.request_id }) },
        { label: `action=${middle.action}`, query: q({ action: middle.action }) },
        {
          label: `action=${absentAction} (no record has it)`,
          query: q({ action: absentAction }),
          requests: Math.min(AUDIT_SCALE_REQUESTS, 10),
        },
      ];
      const listRows: AuditScale['list'] = [];
      for (const s of listScenarios) {
        const path = `/api/private/v1/audit-events${s.query ? `?${s.query}` : ''}`;
        const n = s.requests ?? AUDIT_SCALE_REQUESTS;
        for (let i = 0; i < Math.min(5, n); i++) await call(port, 'GET', path, sk);
        const times: number[] = [];
        let errors = 0;
        let records = 0;
        for (let i = 0; i < n; i++) {
          const t0 = process.hrtime.bigint();
          const reply = await call(port, 'GET', path, sk);
          times.push(Number(process.hrtime.bigint() - t0) / 1e6);
          if (reply.status !== 200) errors++;
          else {
            // the page itself, whether or not the envelope wraps it once more
            const page = reply.body.data;
            records = Array.isArray(page) ? page.length : (page?.data?.length ?? NaN);
          }
        }
        times.sort((a, b) => a - b);
        const row = {
          label: s.label,
          requests: n,
          p50: round2(pct(times, 50)),
          p99: round2(pct(times, 99)),
          errors,
          records,
        };
        console.log(JSON.stringify(row));
        listRows.push(row);
      }
      // the plans of the repository's list statement (src/queries/audit.sql) with each filter
      const sqlText = readFileSync(join('src', 'queries', 'audit.sql'), 'utf8');
      const firstPage = /-- AuditRepository\.list \(first page\)\n([\s\S]*?)(?:\n\n|$)/.exec(sqlText)?.[1];
      if (!firstPage)
        throw new Error('auditscale: no "AuditRepository.list (first page)" in src/queries/audit.sql');
      const filtered = (where: string, limitParam: number) => {
        for (const part of ['WHERE a.project_id = $1', 'LIMIT $2'])
          if (!firstPage.includes(part))
            throw new Error(`auditscale: the list statement in src/queries/audit.sql has no "${part}"`);
        return firstPage
          .replace('WHERE a.project_id = $1', `WHERE a.project_id = $1 AND ${where}`)
          .replace('LIMIT $2', `LIMIT $${limitParam}`);
      };
      const plans: AuditScale['plans'] = [];
      for (const [label, sql, params] of [
        [
          'resourceType and resourceId',
          filtered('a.resource_type = $2 AND a.resource_id = $3', 4),
          [project.id, middle.resource_type, middle.resource_id, 21],
        ],
        ['requestId', filtered('a.request_id = $2', 3), [project.id, middle.request_id, 21]],
        ['action', filtered('a.action = $2', 3), [project.id, middle.action, 21]],
        ['action (no record has it)', filtered('a.action = $2', 3), [project.id, absentAction, 21]],
      ] as Array<[string, string, unknown[]]>) {
        const plan = (await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params)).rows.map(
          (r: Record<string, string>) => r['QUERY PLAN'],
        );
        console.log(`\nauditscale plan, ${label}:\n${plan.join('\n')}`);
        plans.push({ label, sql, plan });
      }
      auditScale = {
        records: AUDIT_RECORDS,
        before,
        insertMs: committed - insert0,
        sealMs: sealing.value.ms,
        sealLeft: left,
        sealCpuMs: sealing.value.cpuMs,
        sealDbCpuMs: sealing.value.dbCpuMs,
        sealPeakRss: round2(sealing.peakRss),
        sealLoad: [loadAtInsert, ...sealLoad],
        verifyAfterSeal,
        verifyMs,
        verifyStatus: verified.value.status,
        verifyAnswer: verified.value.body.data ?? verified.value.body,
        rssIdle: round2(rssIdle),
        rssBefore: round2(rssBefore),
        verifyPeakRss: round2(verified.peakRss),
        list: listRows,
        plans,
        tableSize: (
          await db.query(
            `SELECT pg_size_pretty(pg_table_size('audit_events') + pg_table_size('audit_seals')) AS t,
                    pg_size_pretty(pg_indexes_size('audit_events') + pg_indexes_size('audit_seals')) AS i`,
          )
        ).rows[0],
      };
    }
    // --- ledger: the ledger grown through SQL to each of BENCH_LEDGER_RECORDS records, a customer
    // with few and the heavy one measured at each size (bench/ledger-scale.ts)
    if (PARTS.has('ledger')) {
      const customers: number[] = (
        await db.query(`SELECT id FROM customers WHERE project_id = $1 ORDER BY id LIMIT $2`, [
          project.id,
          LEDGER_CUSTOMERS,
        ])
      ).rows.map((r: { id: number }) => r.id);
      const api = '/api/private/v1';
      ledgerResult = await ledgerScale(
        {
          db,
          projectId: project.id,
          featureId: feature.id,
          customers,
          heavy: spread[1],
          few: spread[2],
          drive: (scenario, make) => drive(scenario, 1, SECONDS, make),
          rounds: LEDGER_ROUNDS,
          get: (path) => call(port, 'GET', `${api}${path}`, sk),
          post: (path, body) => call(port, 'POST', `${api}${path}`, json, body),
        },
        LEDGER_RECORDS,
      );
    }
    // --- webhooks: deliveries from 1, then 2, replicas of the service (the same dist/main.js, the
    // same settings, the worker on) to a receiver in this process answering 204 at once. Per replica
    // count: (1) a backlog of WEBHOOK_EVENTS `customer.created` events made through POST /customers
    // while no worker runs (every endpoint gets a delivery of each), parked an hour ahead, the
    // replicas started, then made due in one UPDATE: deliveries/s is the backlog over the time from
    // that UPDATE to the last arrival; (2) WEBHOOK_RATE events per second written for
    // max(10, SECONDS) s while the replicas deliver, and the delay from each event's createdAt (the
    // database's clock, as the receiver's: one machine) to its arrival.
    const webhookRuns: WebhookRun[] = [];
    if (PARTS.has('webhooks')) {
      type Arrival = { key: string; at: number; createdAt: number };
      let sink: Arrival[] = [];
      const receiver = createServer((req, res) => {
        const at = Date.now();
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          res.writeHead(204).end();
          const body = JSON.parse(Buffer.concat(chunks).toString());
          sink.push({
            key: `${req.url} ${String(req.headers['webhook-id'])}`,
            at,
            createdAt: Date.parse(body.timestamp),
          });
        });
      });
      await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
      const receiverPort = (receiver.address() as AddressInfo).port;
      for (let i = 0; i < WEBHOOK_ENDPOINTS; i++) {
        const made = await call(port, 'POST', '/api/private/v1/webhook-endpoints', json, {
          url: `http://127.0.0.1:${receiverPort}/e${i}`,
        });
        if (made.status !== 201)
          throw new Error(`webhooks: the endpoint was refused: ${made.status} ${JSON.stringify(made.body)}`);
      }
      const pending = async () =>
        Number(
          (await db.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`))
            .rows[0].n,
        );
      let username = 0;
      const signUp = () =>
        call(port, 'POST', '/api/private/v1/customers', json, { username: `webhook_${++username}` });
      const until = async (what: string, check: () => Promise<boolean> | boolean, ms: number) => {
        const deadline = Date.now() + ms;
        while (!(await check())) {
          if (Date.now() > deadline) throw new Error(`webhooks: timed out waiting for ${what}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      const unique = (xs: Arrival[]) => new Set(xs.map((x) => x.key)).size;
      try {
        for (const replicas of WEBHOOK_REPLICAS) {
          // (1) the backlog, written with no worker running, then parked
          const made = await drive('webhooks backlog', 32, 3600, () => signUp(), WEBHOOK_EVENTS);
          if (made.errors) throw new Error(`webhooks: ${made.errors} sign-ups failed`);
          console.log(`webhooks: backlog written through POST /customers at ${made.rps}/s (32 clients)`);
          const backlog = (
            await db.query(
              `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '1 hour' WHERE status = 'pending'`,
            )
          ).rowCount!;
          const children: Array<{ child: ChildProcess; port: number }> = [];
          for (let r = 0; r < replicas; r++) {
            const replicaPort = await freePort();
            const child = spawn(
              process.execPath,
              [...nodeFlags(`replica-${replicas}-${r}`), 'dist/main.js'],
              {
                env: { ...serviceEnv(replicaPort), WEBHOOK_WORKER_ENABLED: 'true' },
                stdio: ['ignore', 'ignore', 'inherit'],
              },
            );
            baselineProcesses.push(child);
            children.push({ child, port: replicaPort });
          }
          for (const c of children) await waitReady(c.port, c.child, 'replica');
          sink = [];
          const cpu0 = children.map((c) => cpuMsOf(c.child.pid));
          const db0 = databaseCpuMs();
          const t0 = Date.now();
          await db.query(
            `UPDATE webhook_deliveries SET next_attempt_at = created_at WHERE status = 'pending'`,
          );
          await until('the backlog', () => unique(sink) >= backlog, Math.max(120, backlog / 20) * 1000);
          const last = Math.max(...sink.map((a) => a.at));
          const cpuMs = children.reduce((n, c, i) => n + cpuMsOf(c.child.pid) - cpu0[i], 0);
          const dbMs = databaseCpuMs() - db0;
          const drainDuplicates = sink.length - unique(sink);
          console.log(
            `webhooks: ${replicas} replica(s) delivered a backlog of ${backlog} in ${last - t0} ms (${round2(backlog / ((last - t0) / 1000))}/s), ${drainDuplicates} duplicates`,
          );
          await until('the outcomes of the backlog', async () => (await pending()) === 0, 60_000);

          // (2) events written at WEBHOOK_RATE per second while the replicas deliver
          sink = [];
          const seconds = Math.max(10, SECONDS);
          const runStart = Date.now();
          // at most WEBHOOK_OUTSTANDING writes at a time: a rate the service cannot take is written
          // slower (the events/s column says what was written), not piled up until it refuses
          const writes: Promise<Reply>[] = [];
          let written = 0;
          let outstanding = 0;
          while (Date.now() - runStart < seconds * 1000) {
            const due = Math.floor(((Date.now() - runStart) / 1000) * WEBHOOK_RATE);
            while (written < due && outstanding < WEBHOOK_OUTSTANDING) {
              written++;
              outstanding++;
              writes.push(signUp().finally(() => outstanding--));
            }
            await new Promise((r) => setTimeout(r, 5));
          }
          const answers = await Promise.all(writes);
          const writeSeconds = (Date.now() - runStart) / 1000;
          const refused = answers.filter((a) => a.status !== 201);
          if (refused.length)
            console.log(
              `WARNING: webhooks: ${refused.length} sign-ups of the delay run failed: ${refused[0].status} ${JSON.stringify(refused[0].body).slice(0, 300)}`,
            );
          written -= refused.length;
          const expected = written * WEBHOOK_ENDPOINTS;
          await until('the deliveries of the delay run', () => unique(sink) >= expected, 120_000);
          const delivered = sink.slice();
          const delays = delivered.map((a) => a.at - a.createdAt).sort((a, b) => a - b);
          const span = (Math.max(...delivered.map((a) => a.at)) - runStart) / 1000;
          webhookRuns.push({
            replicas,
            backlog,
            drainMs: last - t0,
            drainRate: round2(backlog / ((last - t0) / 1000)),
            drainDuplicates,
            drainCpuMsPerDelivery: round2(cpuMs / backlog),
            drainDbCpuMsPerDelivery: round2(dbMs / backlog),
            written,
            writeSeconds: round2(writeSeconds),
            delivered: delivered.length,
            deliveryRate: round2(delivered.length / span),
            p50: pct(delays, 50),
            p99: pct(delays, 99),
            max: delays[delays.length - 1],
            duplicates: delivered.length - unique(delivered),
          });
          console.log(JSON.stringify(webhookRuns[webhookRuns.length - 1]));
          await until('the outcomes of the delay run', async () => (await pending()) === 0, 60_000);
          await Promise.all(children.map((c) => stopChild(c.child)));
        }
      } finally {
        receiver.closeAllConnections();
        await new Promise<void>((r) => receiver.close(() => r()));
      }
    }
    await db.end();
    const exhausted = sides.filter((s) => used[s] > codesOf[s].length);

    // --- report
    const cpu = cpus();
    console.log(
      `\nmachine: ${cpu.length} × ${cpu[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${platform()} ${release()}, node ${process.version}, PostgreSQL ${pgVersion}; load average ${loadBefore} before, ${loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')} after`,
    );
    console.log(
      `settings: BENCH_CUSTOMERS=${CUSTOMERS} BENCH_SECONDS=${SECONDS} BENCH_ROUNDS=${ROUNDS} BENCH_WARMUP_SECONDS=${WARMUP} BENCH_CONNECTIONS=${READ_CONNECTIONS} BENCH_REDEEM_CONNECTIONS=${REDEEM_CONNECTIONS} BENCH_CODES=${CODES_PER_SIDE} (per side), pool ${POOL_SIZE}, LOG_LEVEL=${LOG_LEVEL}, node flags (every side, from npm start) ${RUNTIME_FLAGS.join(' ') || 'none'}, pgbench ${PGBENCH ?? 'not found'}`,
    );
    if (exhausted.length)
      console.log(
        `WARNING: codes ran out for ${exhausted.join(', ')} (used ${JSON.stringify(used)}): raise BENCH_CODES`,
      );

    console.log('\n1 client (hand-written keep-alive loop):\n');
    console.log(
      '| scenario | requests | req/s | p50 ms | p95 ms | p99 ms | errors | CPU ms/req |\n|---|---|---|---|---|---|---|---|',
    );
    for (const r of loops)
      console.log(
        `| ${r.scenario} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.errors} | ${r.cpuMsPerRequest} |`,
      );

    console.log(
      `\nautocannon, ${SECONDS} s per run; rows with baselines: medians of ${ROUNDS} rounds in rotating order; ratio = median of the per-round service/baseline req/s; CPU ms/req of the process (and of PostgreSQL, "db"):\n`,
    );
    console.log(
      '| scenario | side | connections | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | service ÷ side |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    const m = (runs: CannonRun[], f: (r: CannonRun) => number) => round2(median(runs.map(f)));
    const done = rows.filter((r): r is Row => r !== undefined);
    for (const row of done) {
      const line = (side: string, runs: CannonRun[], ratio: string) =>
        console.log(
          `| ${row.scenario} | ${side} | ${row.connections} | ${m(runs, (r) => r.rps)} | ${m(runs, (r) => r.p50)} | ${m(runs, (r) => r.p99)} | ${runs.reduce((n, r) => n + r.errors, 0)} | ${m(runs, (r) => r.cpuMsPerRequest)} | ${m(runs, (r) => r.dbCpuMsPerRequest)} | ${ratio} |`,
        );
      line('service', row.service, '');
      for (const [name, runs] of Object.entries(row.baselines))
        line(name, runs, `**${round2(median(row.ratios[name]))}** (${row.ratios[name].join(', ')})`);
      if (row.pgbench.length) {
        const tps = round2(median(row.pgbench.map((r) => r.tps)));
        const perRound = row.pgbench.map((r, i) => round2(row.service[i].rps / r.tps));
        console.log(
          `| ${row.scenario} | pgbench (${POOL_SIZE} clients) | ${POOL_SIZE} | ${tps} | mean ${round2(median(row.pgbench.map((r) => r.latency)))} | | | | ${round2(median(row.pgbench.map((r) => r.dbCpuMsPerRequest)))} | **${round2(median(perRound))}** (${perRound.join(', ')}) |`,
        );
      }
    }
    const rpsOf = (scenario: string) =>
      median(done.find((r) => r.scenario === scenario)?.service.map((r) => r.rps) ?? [NaN]);
    const byId = rpsOf('GET /customers/:id (in rounds with the entitlement scenarios)');
    console.log(
      '\nentitlements against GET /customers/:id in the same rounds (targets: check >= 0.8, usage >= 0.5):',
    );
    const entitlementScenarios = done
      .map((r) => r.scenario)
      .filter((x) => x.startsWith('POST /entitlements/check') || x.startsWith('POST /usage'));
    for (const scenario of entitlementScenarios) {
      const perRound = toRead.get(scenario);
      console.log(
        `${scenario}: ${round2(rpsOf(scenario))} req/s, ` +
          (perRound
            ? `ratio **${round2(median(perRound))}** (${perRound.join(', ')})`
            : `ratio ${round2(rpsOf(scenario) / byId)} (one run, to the median read)`),
      );
    }
    if (consumeLimit.length) {
      const spreadUsage = rpsOf('POST /usage (10,000 customers)');
      console.log(
        `\nconsumes on PostgreSQL alone: pgbench replaying consume transactions captured from the service (one at a time, or batches the service formed from ${CONSUME_LIMIT_TOGETHER} sent together), ${CONSUME_LIMIT_WARM_UP} s of warm-up then ${SECONDS} s measured, ${ROUNDS} rounds, medians; consumes/s = transactions/s × consumes a transaction; PostgreSQL's cores busy = its CPU over the measured seconds (of ${cpus().length}):\n`,
      );
      console.log(
        '| transactions | consumes a transaction | clients | consumes/s | mean latency ms | db CPU ms/consume | db cores busy | service (10,000 customers) ÷ this |\n|---|---|---|---|---|---|---|---|',
      );
      for (const kind of [...new Set(consumeLimit.map((r) => r.kind))])
        for (const clients of CONSUME_LIMIT_CLIENTS) {
          const runs = consumeLimit.filter((r) => r.kind === kind && r.clients === clients);
          const size = runs[0].size;
          const cm = (f: (r: PgbenchRun) => number) => round2(median(runs.map(f)));
          const consumes = cm((r) => r.tps * size);
          console.log(
            `| ${kind} | ${size} | ${clients} | ${consumes} | ${cm((r) => r.latency)} | ${cm((r) => r.dbCpuMsPerRequest / size)} | ${cm((r) => (r.tps * r.dbCpuMsPerRequest) / 1000)} | ${round2(spreadUsage / consumes)} |`,
          );
        }
    }
    if (grantRows.length) {
      console.log(
        `\ngrants: 1 client, ${SECONDS} s per run, ${GRANT_ROUNDS} rounds in rotating order, medians; cost ÷ 1 grant = median of the per-round (req/s of the customer holding 1 grant ÷ this req/s), the time per request against it (target: 100 grants <= 1.5):\n`,
      );
      console.log(
        '| scenario | customer | requests | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | cost ÷ 1 grant |\n|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const g of grantRows) {
        const gm = (f: (r: GrantRun) => number) => round2(median(g.runs.map(f)));
        console.log(
          `| ${g.kind} | ${g.holder} | ${g.runs.reduce((n, r) => n + r.requests, 0)} | ${gm((r) => r.rps)} | ${gm((r) => r.p50)} | ${gm((r) => r.p99)} | ${g.runs.reduce((n, r) => n + r.errors, 0)} | ${gm((r) => r.cpuMsPerRequest)} | ${gm((r) => r.dbCpuMsPerRequest)} | ${g.ratios.length ? `**${round2(median(g.ratios))}** (${g.ratios.join(', ')})` : ''} |`,
        );
      }
    }
    if (holdRows.length) {
      console.log(
        `\nholds: ${SECONDS} s per run, ${HOLD_ROUNDS} rounds in rotating order, medians; a pair is a hold and its commit (two requests), ${HOLD_CLIENTS} clients; ratio = median of the per-round pairs/s ÷ consumes/s (target >= 0.4), and for the one-client check and consume the per-round (req/s with no holds ÷ this req/s) (target: 100 live holds <= 1.5):\n`,
      );
      console.log(
        '| scenario | requests | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | ratio |\n|---|---|---|---|---|---|---|---|---|',
      );
      for (const h of holdRows) {
        const hm = (f: (r: GrantRun) => number) => round2(median(h.runs.map(f)));
        console.log(
          `| ${h.label} | ${h.runs.reduce((n, r) => n + r.requests, 0)} | ${hm((r) => r.rps)} | ${hm((r) => r.p50)} | ${hm((r) => r.p99)} | ${h.runs.reduce((n, r) => n + r.errors, 0)} | ${hm((r) => r.cpuMsPerRequest)} | ${hm((r) => r.dbCpuMsPerRequest)} | ${h.ratios.length ? `**${round2(median(h.ratios))}** (${h.ratios.join(', ')})` : ''} |`,
        );
      }
      const pairs = median(holdRows[1].ratios);
      console.log(
        `\na hold and its commit ÷ one consume (req/s): ${round2(pairs)} ${pairs >= 0.4 ? '(at or above 0.4)' : '(BELOW 0.4)'}`,
      );
    }
    if (calendarRows.length) {
      console.log(
        `\ncalendar: POST /entitlements/check, ${CALENDAR_CLIENTS} clients over ${CALENDAR_CUSTOMERS.toLocaleString('en-US')} customers per plan, ${SECONDS} s per run, ${CALENDAR_ROUNDS} rounds in rotating order, medians; ÷ run = median of the per-round (this req/s ÷ that of ${calendarRows[0].label}) (target: calendar >= 0.9):\n`,
      );
      console.log(
        '| quota | requests | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | ÷ run | CPU ms/req ÷ run |\n|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const c of calendarRows) {
        const cm = (f: (r: GrantRun) => number) => round2(median(c.runs.map(f)));
        console.log(
          `| ${c.label} | ${c.runs.reduce((n, r) => n + r.requests, 0)} | ${cm((r) => r.rps)} | ${cm((r) => r.p50)} | ${cm((r) => r.p99)} | ${c.runs.reduce((n, r) => n + r.errors, 0)} | ${cm((r) => r.cpuMsPerRequest)} | ${cm((r) => r.dbCpuMsPerRequest)} | ${c.ratios.length ? `**${round2(median(c.ratios))}** (${c.ratios.join(', ')})` : ''} | ${c.cpuRatios.length ? `${round2(median(c.cpuRatios))} (${c.cpuRatios.join(', ')})` : ''} |`,
        );
      }
      const calendarOnly = calendarRows.filter((c) => c.label.startsWith('calendar'));
      const worst = Math.min(...calendarOnly.map((c) => median(c.ratios)));
      console.log(
        `\ncalendar ÷ run (req/s), the lowest median: ${round2(worst)} ${worst >= 0.9 ? '(at or above 0.9)' : '(BELOW 0.9)'}`,
      );
    }
    if (campaignRows.length) {
      console.log(
        `\ncampaign: POST /redemptions, ${CAMPAIGN_CONNECTIONS} connections, every redemption for a customer of its own, ${SECONDS} s per run, ${CAMPAIGN_ROUNDS} rounds in rotating order, medians; ÷ single-use = median of the per-round (campaign req/s ÷ single-use req/s) (target >= 0.5):\n`,
      );
      console.log(
        '| codes | requests | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | ÷ single-use |\n|---|---|---|---|---|---|---|---|---|',
      );
      for (const c of campaignRows) {
        const cm = (f: (r: CannonRun) => number) => round2(median(c.runs.map(f)));
        console.log(
          `| ${c.label} | ${c.runs.reduce((n, r) => n + r.requests, 0)} | ${cm((r) => r.rps)} | ${cm((r) => r.p50)} | ${cm((r) => r.p99)} | ${c.runs.reduce((n, r) => n + r.errors, 0)} | ${cm((r) => r.cpuMsPerRequest)} | ${cm((r) => r.dbCpuMsPerRequest)} | ${c.ratios.length ? `**${round2(median(c.ratios))}** (${c.ratios.join(', ')})` : ''} |`,
        );
        // what the errors were: statuses, and connections that failed or timed out
        const statuses: Record<string, number> = {};
        let connectionErrors = 0;
        for (const r of c.runs) {
          for (const [status, n] of Object.entries(r.statuses ?? {}))
            if (!status.startsWith('2')) statuses[status] = (statuses[status] ?? 0) + n;
          connectionErrors += r.connectionErrors ?? 0;
        }
        if (Object.keys(statuses).length || connectionErrors)
          console.log(
            `  errors of ${c.label}: ${JSON.stringify(statuses)}, connection errors or timeouts ${connectionErrors}`,
          );
      }
      const ratio = median(campaignRows[0].ratios);
      console.log(
        `\ncampaign ÷ single-use (req/s): ${round2(ratio)} ${ratio >= 0.5 ? '(at or above 0.5)' : '(BELOW 0.5)'}; the code's redemptionCount ${campaignCount?.counted} after ${campaignCount?.ok} 2xx answers seen (the rest: requests in flight when a run stopped, which the service still served)`,
      );
    }
    if (auditRows.length) {
      const floor = round2(1 / AUDIT_TARGET);
      console.log(
        `\naudit: ${AUDIT_CONNECTIONS} connections, ${SECONDS} s per run, ${AUDIT_ROUNDS} rounds in rotating order, medians; "with" is this tree (it writes the audit records), "without" the before tree (${BEFORE}); a ratio is the median of the per-round with ÷ without; CPU = service + PostgreSQL ms per request; "sealing" = both processes' CPU ms after a run until its records were sealed, per request of the run and per record left unsealed at its end (targets: req/s ÷ without >= ${floor}, CPU ÷ without <= ${AUDIT_TARGET}); load average at each round's start and at the end ${auditLoad.join(' | ')}:\n`,
      );
      console.log(
        '| request | side | requests | req/s | p50 ms | p99 ms | errors | CPU ms/req | db CPU ms/req | sealing ms/req | sealing ms/record |\n|---|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const a of auditRows)
        for (const [side, runs] of [
          ['with', a.with],
          ['without', a.without],
        ] as const) {
          const am = (f: (r: AuditRun) => number) => round2(median(runs.map(f)));
          console.log(
            `| ${a.label} | ${side} | ${runs.reduce((n, r) => n + r.requests, 0)} | ${am((r) => r.rps)} | ${am((r) => r.p50)} | ${am((r) => r.p99)} | ${runs.reduce((n, r) => n + r.errors, 0)} | ${am((r) => r.cpuMsPerRequest)} | ${am((r) => r.dbCpuMsPerRequest)} | ${side === 'with' ? am((r) => r.sealCpuMsPerRequest) : ''} | ${side === 'with' && !a.control ? round2(median(runs.map((r) => r.sealCpuMsPerRecord).filter((x) => !Number.isNaN(x)))) : ''} |`,
          );
        }
      console.log(
        '\n| request | req/s ÷ without | CPU ÷ without | service CPU ÷ | db CPU ÷ | CPU with sealing ÷ without | target |\n|---|---|---|---|---|---|---|',
      );
      for (const a of auditRows) {
        const rps = median(a.rps);
        const cpu = median(a.cpu);
        const verdict = a.control
          ? 'control'
          : rps >= 1 / AUDIT_TARGET && cpu <= AUDIT_TARGET
            ? 'within'
            : 'OUTSIDE';
        console.log(
          `| ${a.label} | **${round2(rps)}** (${a.rps.join(', ')}) | **${round2(cpu)}** (${a.cpu.join(', ')}) | ${round2(median(a.serviceCpu))} | ${round2(median(a.dbCpu))} | ${round2(median(a.cpuSealed))} (${a.cpuSealed.join(', ')}) | ${verdict} |`,
        );
      }
      console.log(
        '\naudit records of the writes, as the database holds them (warm-up and first probes included):\n',
      );
      console.log('| write | side | writes | audit records |\n|---|---|---|---|');
      for (const c of auditCounts) console.log(`| ${c.label} | ${c.side} | ${c.writes} | ${c.records} |`);
      console.log(
        `\naudit records written during the rounds, by action: ${auditActions.map((a) => `${a.action} ${a.n}`).join(', ')}`,
      );
    }
    if (webhookRuns.length) {
      console.log(
        `\nwebhooks: ${WEBHOOK_ENDPOINTS} endpoints on a loopback receiver answering 204 at once; backlog = ${WEBHOOK_EVENTS} events × endpoints, drained from the moment it is due to the last arrival; delay run: ${WEBHOOK_RATE} events/s written for the given seconds while the replicas deliver, delay = arrival − event createdAt:\n`,
      );
      console.log(
        '| replicas | backlog | drain s | deliveries/s | service CPU ms/delivery | db CPU ms/delivery | delay run: events (s) | deliveries/s | delay p50 ms | p99 ms | max ms | duplicates |\n|---|---|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const w of webhookRuns)
        console.log(
          `| ${w.replicas} | ${w.backlog} | ${round2(w.drainMs / 1000)} | **${w.drainRate}** | ${w.drainCpuMsPerDelivery} | ${w.drainDbCpuMsPerDelivery} | ${w.written} (${w.writeSeconds}) | ${w.deliveryRate} | ${w.p50} | ${w.p99} | ${w.max} | ${w.drainDuplicates + w.duplicates} |`,
        );
      const one = webhookRuns.find((w) => w.replicas === 1);
      for (const w of webhookRuns)
        if (one && w !== one)
          console.log(`${w.replicas} replicas ÷ 1: deliveries/s ${round2(w.drainRate / one.drainRate)}`);
    }
    if (auditScale) {
      const a = auditScale;
      const rate = a.sealLeft === 0 ? a.records / (a.sealMs / 1000) : NaN;
      console.log(
        `\naudit log at scale: ${a.records.toLocaleString('en-US')} records inserted unsealed in one statement (${(a.insertMs / 1000).toFixed(1)} s; ${a.before} records of the project before them), table ${a.tableSize.t} + indexes ${a.tableSize.i}; load average at the insert and every 30 s of sealing ${a.sealLoad.join(' | ')}:\n`,
      );
      console.log('| measure | value |\n|---|---|');
      console.log(
        `| sealing: commit to unsealed 0 | ${(a.sealMs / 1000).toFixed(1)} s${a.sealLeft ? ` (${a.sealLeft} STILL UNSEALED)` : ''} |`,
      );
      console.log(
        `| sealing rate (target >= 2,000/s) | **${Math.round(rate)} records/s** ${rate >= 2000 ? '(at or above)' : '(BELOW)'} |`,
      );
      console.log(
        `| sealing CPU per record: service, PostgreSQL | ${round2(a.sealCpuMs / a.records)} ms, ${round2(a.sealDbCpuMs / a.records)} ms |`,
      );
      console.log(
        `| service RSS before the insert, peak while sealing | ${a.rssIdle} MiB, ${a.sealPeakRss} MiB |`,
      );
      console.log(`| verify right after sealing | ${JSON.stringify(a.verifyAfterSeal)} |`);
      console.log(`| verify over the chain: wall time | ${(a.verifyMs / 1000).toFixed(1)} s |`);
      console.log(`| verify: service RSS before, peak during | ${a.rssBefore} MiB, ${a.verifyPeakRss} MiB |`);
      console.log(`| verify's answer (${a.verifyStatus}) | ${JSON.stringify(a.verifyAnswer)} |`);
      console.log(`\nlist pages (GET /audit-events, limit 20), one client, after 5 warm-up requests each:\n`);
      console.log(
        '| query | requests | p50 ms | p99 ms | errors | records on the page |\n|---|---|---|---|---|---|',
      );
      for (const r of a.list)
        console.log(`| ${r.label} | ${r.requests} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.records} |`);
      console.log('\nplans of the list statement (src/queries/audit.sql, first page) with each filter:');
      for (const p of a.plans) console.log(`\n${p.label}:\n${p.plan.map((l) => `    ${l}`).join('\n')}`);
    }
    if (ledgerResult) {
      console.log(
        '\nthe ledger at scale: records filled through SQL (the heavy customer a tenth), bytes per million records of usage_records and usage_allocations with their indexes, and of usage_event_ids; the partition upkeep making a month and dropping one, ms:\n',
      );
      console.log(
        '| records | fill s | ledger bytes per million | event id bytes per million | heavy customer records | upkeep: make a month | drop a month |\n|---|---|---|---|---|---|---|',
      );
      for (const f of ledgerResult.fills)
        console.log(
          `| ${f.records.toLocaleString('en-US')} | ${f.seconds.toFixed(1)} | ${f.bytesPerMillion.toLocaleString('en-US')} | ${f.eventIdBytesPerMillion.toLocaleString('en-US')} | ${f.heavyRecords.toLocaleString('en-US')} | ${f.maintenance.create} | ${f.maintenance.drop} |`,
        );
      console.log(
        `\none client, ${SECONDS} s each, ${LEDGER_ROUNDS} rounds of every scenario, medians; ratio = p50 ÷ the same scenario's p50 at the first size (goal <= 1.2); paced = that ratio ÷ the same ratio of the read (GET /customers/:id) run just before each; buffers and db ms = the database's shared buffers and time (planning included) per request, from pg_stat_statements:\n`,
      );
      console.log(
        '| records | customer | scenario | requests | p50 ms | p99 ms | errors | ratio | read p50 ms | paced | buffers | ÷ first | db ms |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      );
      for (const r of ledgerResult.rows)
        console.log(
          `| ${r.records.toLocaleString('en-US')} | ${r.customer} | ${r.scenario} | ${r.requests} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.ratio ?? ''} | ${r.readP50} | ${r.paced ?? ''} | ${r.buffers ?? ''} | ${r.buffersRatio ?? ''} | ${r.dbMs ?? ''} |`,
        );
      if (ledgerResult.retention)
        console.log(
          `\nthe retention's drop of the two oldest months (${ledgerResult.retention.records.toLocaleString('en-US')} records): ${ledgerResult.retention.ms} ms`,
        );
    }
    const peakOf = (pid: number | undefined, runs: CannonRun[]) =>
      round2(Math.max(memoryOf(pid).hwm, ...runs.map((r) => r.peakRss).filter((x) => !Number.isNaN(x))));
    console.log(
      `\npeak RSS over the whole run: service ${peakOf(
        service.pid,
        done.flatMap((r) => r.service),
      )} MiB, ${baselines
        .map(
          (b) =>
            `${b.name} ${peakOf(
              b.pid,
              done.flatMap((r) => r.baselines[b.name] ?? []),
            )} MiB`,
        )
        .join(', ')}; baseline errors ${done
        .flatMap((r) => Object.values(r.baselines).flat())
        .reduce((n, r) => n + r.errors, 0)}; total time ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
  } catch (error) {
    // said before the cleanup below, whose server stop cuts the connections still open
    console.error(error);
    throw error;
  } finally {
    process.removeListener('SIGINT', onSignal);
    await Promise.all([stopChild(serviceProcess), ...baselineProcesses.map(stopChild)]);
    agent.destroy();
    if (embedded) await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
