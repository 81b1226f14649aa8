import { Injectable, OnApplicationBootstrap, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { RouteLabeler } from './route-label';

/** The part of a `pg` Pool the gauges read. */
interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

const joinPath = (...parts: string[]) =>
  '/' +
  parts
    .flatMap((p) => p.split('/'))
    .filter((p) => p.length > 0)
    .join('/');

/**
 * The Prometheus metrics of one application instance, in a registry of its own (two instances
 * in one process, as in the tests, never share series):
 * - the default process and Node.js metrics (`process_*`, `nodejs_*`);
 * - `http_requests_total` and `http_request_duration_seconds` by method, route template and status;
 * - `redemptions_total` by outcome (`success` or the error code);
 * - `db_pool_*` gauges of the PostgreSQL pool behind TypeORM, read at each scrape.
 */
@Injectable()
export class MetricsService implements OnApplicationBootstrap {
  readonly registry = new Registry();
  private readonly routes = new RouteLabeler();

  private readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  private readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the arrival of a request to the end of its answer, by method, route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  private readonly redemptions = new Counter({
    name: 'redemptions_total',
    help: 'Redemptions and activations (dry runs excluded), by outcome: success or the error code.',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {
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
    gauge('db_pool_connections', 'Connections open in the PostgreSQL pool (busy and idle).', (p) => p.totalCount);
    gauge('db_pool_idle_connections', 'Idle connections in the PostgreSQL pool.', (p) => p.idleCount);
    gauge('db_pool_waiting_requests', 'Queries waiting for a free connection of the PostgreSQL pool.', (p) => p.waitingCount);
    gauge('db_pool_max_connections', 'Size limit of the PostgreSQL pool (DB_POOL_SIZE).', (p) => p.options?.max);
  }

  /** Reads the route templates from the controllers, for requests refused before routing. */
  onApplicationBootstrap(): void {
    const routes: Array<{ method: string; path: string }> = [];
    for (const wrapper of this.discovery.getControllers()) {
      const type = wrapper.metatype as (new (...args: unknown[]) => unknown) | undefined;
      if (!type) continue;
      const base = Reflect.getMetadata(PATH_METADATA, type) as string | string[] | undefined;
      for (const name of this.scanner.getAllMethodNames(type.prototype)) {
        const handler = (type.prototype as Record<string, unknown>)[name] as object;
        const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
        if (path === undefined || method === undefined) continue;
        for (const b of Array.isArray(base) ? base : [base ?? '']) {
          for (const p of Array.isArray(path) ? path : [path]) routes.push({ method: RequestMethod[method], path: joinPath(b, p) });
        }
      }
    }
    this.routes.setRoutes(routes);
  }

  /** Express middleware, installed first (configure-app.ts): times every request to the end of its answer. */
  httpMiddleware(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      const end = this.httpDuration.startTimer();
      res.once('finish', () => {
        const labels = { method: req.method, route: this.routes.labelOf(req), status: String(res.statusCode) };
        end(labels);
        this.httpRequests.inc(labels);
      });
      next();
    };
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
