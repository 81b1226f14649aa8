import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { HttpRequestMetrics } from './http-request-metrics';

/** The part of a `pg` Pool the gauges read. */
interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

/**
 * The Prometheus metrics of one application instance, in a registry of its own (two instances
 * in one process, as in the tests, never share series):
 * - the default process and Node.js metrics (`process_*`, `nodejs_*`);
 * - `http_requests_total` and `http_request_duration_seconds` by method, route template and status;
 * - `redemptions_total` by outcome (`success` or the error code);
 * - `db_pool_*` gauges of the PostgreSQL pool behind TypeORM, read at each scrape;
 * - `db_partition_default_rows` by table: rows of a time-partitioned table that fell in its
 *   DEFAULT partition (no month's or day's partition covered them: none should), read at each
 *   scrape from what the owning modules register (`watchDefaultPartitions`).
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly http = new HttpRequestMetrics(
    this.registry,
    { count: 'http_requests_total', duration: 'http_request_duration_seconds' },
    {
      count: 'HTTP requests answered, by method, route template and status code.',
      duration:
        'Time from the arrival of a request to the end of its answer, by method, route template and status code.',
    },
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );

  private readonly redemptions = new Counter({
    name: 'redemptions_total',
    help: 'Redemptions and activations (dry runs excluded), by outcome: success or the error code.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly storeCircuitOpened = new Counter({
    name: 'rate_limit_store_circuit_opened_total',
    help: 'Times the rate-limit Redis failed and was then skipped for RATE_LIMIT_REDIS_PAUSE_MS (limits not enforced).',
    registers: [this.registry],
  });

  private readonly storeSkipped = new Counter({
    name: 'rate_limit_store_skipped_total',
    help: 'Rate-limit checks let through without counting while the Redis circuit was open.',
    registers: [this.registry],
  });

  private readonly defaultPartitionReads: Array<() => Promise<Array<{ table: string; rows: number }>>> = [];

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    collectDefaultMetrics({ register: this.registry });
    const pool = () => (this.dataSource.driver as unknown as { master?: PoolStats }).master;
    const gauge = (name: string, help: string, read: (p: PoolStats) => number | undefined) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          const p = pool();
          const value = p ? read(p) : undefined;
          if (value !== undefined) this.set(value);
        },
      });
    gauge(
      'db_pool_connections',
      'Connections open in the PostgreSQL pool (busy and idle).',
      (p) => p.totalCount,
    );
    gauge('db_pool_idle_connections', 'Idle connections in the PostgreSQL pool.', (p) => p.idleCount);
    gauge(
      'db_pool_waiting_requests',
      'Queries waiting for a free connection of the PostgreSQL pool.',
      (p) => p.waitingCount,
    );
    gauge(
      'db_pool_max_connections',
      'Size limit of the PostgreSQL pool (DB_POOL_SIZE).',
      (p) => p.options?.max,
    );
    // after the pool's gauges: its reads of the database must not show in them as waiting requests
    const reads = this.defaultPartitionReads;
    new Gauge({
      name: 'db_partition_default_rows',
      help: 'Rows in the DEFAULT partition of a time-partitioned table, by table (0 when partitions are made ahead as they should be).',
      labelNames: ['table'] as const,
      registers: [this.registry],
      async collect() {
        for (const read of reads) for (const { table, rows } of await read()) this.set({ table }, rows);
      },
    });
  }

  /** Adds a read of the DEFAULT partitions' rows of a module's partitioned tables to `db_partition_default_rows`. */
  watchDefaultPartitions(read: () => Promise<Array<{ table: string; rows: number }>>): void {
    this.defaultPartitionReads.push(read);
  }

  /** Counts and times one answer (`requestPipeline` calls it when an answer is complete). */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.http.observe(method, route, status, seconds);
  }

  recordRateLimitStore(event: 'opened' | 'skipped'): void {
    (event === 'opened' ? this.storeCircuitOpened : this.storeSkipped).inc();
  }

  recordRedemption(outcome: string): void {
    this.redemptions.inc({ outcome });
  }

  contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
