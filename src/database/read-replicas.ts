import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { DataSource, EntityManager, QueryFailedError } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { buildDataSourceOptions, DatabaseSettings, servicePoolSettings } from './data-source-options';

/** A WAL position (`'16/B374D848'`) as a number that compares. */
export function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/** SQLSTATE classes and codes that mean "this server cannot answer now", not "this query is wrong". */
const UNAVAILABLE_STATES = /^(08|57P0[1-4]|53300|25006|40001)/;
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/**
 * Whether `error` says the server could not be reached or stopped serving (refused or broken
 * connection, shutdown, recovery conflict with the replica's replay), rather than a fault of the
 * query: only those send a read back to the primary.
 */
export function isUnavailable(error: unknown): boolean {
  const cause = error instanceof QueryFailedError ? (error.driverError as unknown) : error;
  const { code, message } = (cause ?? {}) as { code?: string; message?: string };
  if (code && (UNAVAILABLE_ERRNOS.has(code) || UNAVAILABLE_STATES.test(code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|connection timeout/i.test(
    message ?? '',
  );
}

interface Replica {
  /** `host:port/database` of the URL, without credentials: for the logs. */
  label: string;
  url: string;
  dataSource?: DataSource;
  starting?: Promise<void>;
  reachable: boolean;
  /** The replica has replayed everything the primary had written at this time (ms), or 0. */
  caughtUpTo: number;
}

/**
 * Routes the reads that tolerate a little lag to read replicas (`DATABASE_READ_URL`).
 *
 * A read opts in explicitly: `reads.run(projectId, () => ...)` runs it with `reads.manager` set,
 * for the repositories it calls to send their queries on: a replica's manager when one is fit
 * for it, the primary's otherwise.
 * Everything else (writes, transactions, key checks, redemption, idempotency, login, reads that
 * must see the latest change) keeps using the primary DataSource, as before.
 *
 * A replica is fit for a project's read when:
 * - it answered its last check (every `DB_READ_CHECK_INTERVAL_MS`: its replay position, against
 *   the positions the primary's WAL had at the previous checks), and its replay is less than
 *   `DB_READ_MAX_LAG_MS` behind the primary;
 * - it has replayed every write this process made for the project (the time of the project's
 *   last write through this process, `noteWrite`, is before the primary position the replica has
 *   replayed). A caller therefore reads its own writes on the same instance; through another
 *   instance a list may lag by up to `DB_READ_MAX_LAG_MS`.
 *
 * A read that fails on a replica because the replica is unreachable (or shutting down, or its
 * replay cancelled the query) runs again on the primary, and the replica gets no reads until a
 * check reaches it again. Replicas share the round-robin in turn.
 */
@Injectable()
export class ReadReplicas implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private readonly replicas: Replica[];
  private readonly maxLagMs: number;
  private readonly intervalMs: number;
  /** The primary's pool settings: a stalled replica answers 503 (or hands over to the primary) in time. */
  private readonly pool: Omit<DatabaseSettings, 'url'>;
  /** (time, primary WAL position) of the recent checks, oldest first. */
  private samples: Array<{ at: number; lsn: bigint }> = [];
  private readonly lastWrite = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private checking?: Promise<void>;
  private next = 0;
  /** The manager of the lag-tolerant read running in this async context (`run`). */
  private readonly current = new AsyncLocalStorage<EntityManager>();

  constructor(
    @InjectDataSource() private readonly primary: DataSource,
    config: AppConfig,
  ) {
    const urls = (config.get('DATABASE_READ_URL') ?? '')
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean);
    this.replicas = urls.map((url) => ({ url, label: labelOf(url), reachable: false, caughtUpTo: 0 }));
    this.maxLagMs = config.get('DB_READ_MAX_LAG_MS');
    this.intervalMs = config.get('DB_READ_CHECK_INTERVAL_MS');
    this.pool = servicePoolSettings(config);
  }

  /** Whether any replica is configured. */
  get enabled(): boolean {
    return this.replicas.length > 0;
  }

  async onModuleInit(): Promise<void> {
    if (!this.enabled) return;
    // The first check, so that the first reads can already use a replica; a replica that is down
    // does not stop the start: its reads go to the primary until it answers.
    // (a replica that does not answer within 2 s does not hold the start up either)
    const wait = new Promise<void>((resolve) => setTimeout(resolve, 2000).unref());
    await Promise.race([this.check(), wait]);
    this.timer = setInterval(() => void this.check(), this.intervalMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.checking?.catch(() => undefined);
    for (const r of this.replicas) {
      await r.starting?.catch(() => undefined);
      if (r.dataSource?.isInitialized) await r.dataSource.destroy().catch(() => undefined);
    }
  }

  /** A write for `projectId` committed just now (called before its answer is sent). */
  noteWrite(projectId: string): void {
    if (this.enabled) this.lastWrite.set(projectId, Date.now());
  }

  /**
   * Express middleware: a request that may write (any method but GET, HEAD, OPTIONS) notes a
   * write of its caller's project when its answer starts, i.e. after its work committed and
   * before the caller can send the next request.
   */
  writeTracker(): RequestHandler {
    return (req, res, next) => {
      if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') {
        const writeHead = res.writeHead;
        const note = (projectId: string) => this.noteWrite(projectId);
        res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
          const projectId = (req as { caller?: { project?: { id?: string } } }).caller?.project?.id;
          if (projectId) note(projectId);
          return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
        } as typeof res.writeHead;
      }
      next();
    };
  }

  /**
   * The manager a repository's lag-tolerant read runs on: the one `run` chose for the read in
   * progress, or undefined outside `run` (then the read goes where any other statement goes).
   */
  get manager(): EntityManager | undefined {
    return this.current.getStore();
  }

  /**
   * Runs a lag-tolerant read of `projectId` on a fit replica, or on the primary; a replica that
   * fails as unavailable hands the read to the primary. The repositories `read` calls find the
   * manager to use in `manager`.
   */
  async run<T>(projectId: string | undefined, read: () => Promise<T>): Promise<T> {
    const replica = this.pick(projectId);
    if (!replica) return this.current.run(this.primary.manager, read);
    try {
      return await this.current.run(replica.dataSource!.manager, read);
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      if (replica.reachable) {
        replica.reachable = false;
        this.logger.warn(
          { replica: replica.label, err: (error as Error).message },
          'Read replica unavailable: its reads go to the primary until it answers again',
        );
      }
      return this.current.run(this.primary.manager, read);
    }
  }

  /** Where the next read of `projectId` would go: a replica's label, or `primary`. For tests and logs. */
  target(projectId?: string): string {
    return this.pick(projectId)?.label ?? 'primary';
  }

  private pick(projectId: string | undefined): Replica | undefined {
    const n = this.replicas.length;
    if (n === 0) return undefined;
    const now = Date.now();
    const wrote = projectId === undefined ? 0 : (this.lastWrite.get(projectId) ?? 0);
    for (let i = 0; i < n; i++) {
      const r = this.replicas[(this.next + i) % n];
      if (r.reachable && r.dataSource && now - r.caughtUpTo <= this.maxLagMs && r.caughtUpTo >= wrote) {
        this.next = (this.next + i + 1) % n;
        return r;
      }
    }
    return undefined;
  }

  /** One round of checks; rounds never overlap. */
  private check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const at = Date.now();
    try {
      // the insert position covers every commit made before `at`, flushed or not
      const [{ lsn }]: Array<{ lsn: string }> = await this.primary.query(
        'SELECT pg_current_wal_insert_lsn()::text AS lsn',
      );
      this.samples.push({ at, lsn: lsnValue(lsn) });
      const keep = Math.ceil(this.maxLagMs / this.intervalMs) + 2;
      if (this.samples.length > keep) this.samples = this.samples.slice(-keep);
    } catch {
      // the primary is unreachable: replicas keep their last known positions
    }
    await Promise.all(this.replicas.map((r) => this.checkReplica(r)));
    // a write older than the lag bound is behind every fit replica's position: forget it
    for (const [projectId, wrote] of this.lastWrite)
      if (wrote < at - this.maxLagMs) this.lastWrite.delete(projectId);
  }

  private async checkReplica(r: Replica): Promise<void> {
    try {
      if (!r.dataSource?.isInitialized) {
        r.starting ??= this.open(r).finally(() => (r.starting = undefined));
        await r.starting;
      }
      const [row]: Array<{ standby: boolean; lsn: string | null }> = await r.dataSource!.query(
        'SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS lsn',
      );
      const now = Date.now();
      if (!row.standby) {
        r.caughtUpTo = now; // not a standby (a primary named as a replica): nothing to replay
      } else if (row.lsn !== null) {
        const replayed = lsnValue(row.lsn);
        const sample = [...this.samples].reverse().find((s) => s.lsn <= replayed);
        if (sample) r.caughtUpTo = Math.max(r.caughtUpTo, sample.at);
      }
      if (!r.reachable) this.logger.log({ replica: r.label }, 'Read replica available');
      r.reachable = true;
    } catch (error) {
      if (r.reachable)
        this.logger.warn(
          { replica: r.label, err: (error as Error).message },
          'Read replica unavailable: its reads go to the primary until it answers again',
        );
      r.reachable = false;
    }
  }

  private async open(r: Replica): Promise<void> {
    const dataSource = new DataSource({
      ...buildDataSourceOptions({ url: r.url, ...this.pool }),
      migrations: [],
    });
    try {
      await dataSource.initialize();
    } catch (error) {
      await dataSource.destroy().catch(() => undefined);
      throw error;
    }
    r.dataSource = dataSource;
  }
}

function labelOf(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'replica';
  }
}
