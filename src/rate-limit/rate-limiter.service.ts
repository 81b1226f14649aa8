import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DomainError } from '../common/errors/domain-error';
import { requestIdOf } from '../common/http/request-id';
import { PeriodicTask } from '../common/periodic-task';
import { AppConfig } from '../config/app-config';
import { RATE_LIMIT_STORE, RateLimitStore, WindowHit } from './rate-limit.store';
import { API_ROOTS } from '../common/routes/api-prefixes';
import { clientAddress } from './client-address';

export type LimitKind = 'key' | 'address' | 'customer';

/** The interfaces that are limited; probes, metrics, docs and the admin interface are not. */
/** Every version of the private and public interfaces, routes or not (the admin interface is never limited). */
const LIMITED_PREFIXES = [`${API_ROOTS.private}/`, `${API_ROOTS.public}/`];

const PRUNE_INTERVAL_MS = 5 * 60 * 1000;
const FAILURE_LOG_INTERVAL_MS = 30 * 1000;

/** What `RateLimit-*` already advertises for this response (the tighter of the two limits wins). */
interface Advertised {
  remaining: number;
}

/**
 * Rate limits (docs/operations.md#rate-limits), per API key (a public key: per key and client address), per
 * client address and per logged-in customer, in fixed windows of
 * `RATE_LIMIT_WINDOW_SECONDS` counted in a store shared by the replicas (`RATE_LIMIT_STORE`).
 * Every counted request gets `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`
 * (seconds) of the tighter limit; one over a limit is refused with 429 RATE_LIMITED and
 * `Retry-After` = seconds to the end of the window. Requests refused with 429 still count.
 *
 * When the store fails (Redis or the database unreachable) the request goes through: a broken
 * limiter must not take the API down. The failure is logged (at most every 30 s).
 */
@Injectable()
export class RateLimiter implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  private readonly windowSeconds: number;
  private readonly limits: Record<LimitKind, number>;
  private readonly pruning?: PeriodicTask;
  private lastFailureLog = 0;

  constructor(
    config: AppConfig,
    /** null when rate limiting is off. */
    @Inject(RATE_LIMIT_STORE) private readonly store: RateLimitStore | null,
  ) {
    this.windowSeconds = config.get('RATE_LIMIT_WINDOW_SECONDS');
    this.limits = {
      key: config.get('RATE_LIMIT_PER_KEY'),
      address: config.get('RATE_LIMIT_PER_ADDRESS'),
      customer: config.get('RATE_LIMIT_PER_CUSTOMER'),
    };
    const prune = store?.prune?.bind(store);
    if (prune) this.pruning = new PeriodicTask('Pruning rate-limit counters', PRUNE_INTERVAL_MS, prune);
  }

  get enabled(): boolean {
    return this.store !== null;
  }

  appliesTo(req: Request): boolean {
    if (!this.store) return false;
    const path = req.path;
    return LIMITED_PREFIXES.some((prefix) => path.startsWith(prefix));
  }

  /**
   * The per-key limit, counted by the key guards as soon as they have found the key (so a refused
   * request goes no further: it never claims or stores an idempotency key, and a retry after the
   * window really runs).
   *
   * A private key is one server of the project: it is counted as a whole. A public key ships inside
   * every copy of the project's client apps, so one client could use up a count kept per key for
   * all of them: it is counted per key and client address (and a logged-in customer once more, by
   * `CustomerTokenGuard`), never per key alone.
   */
  async countKey(req: Request, res: Response, key: { apiKeyId: number; kind: string }): Promise<void> {
    if (!this.appliesTo(req)) return;
    const subject = key.kind === 'public' ? `${key.apiKeyId}:${clientAddress(req)}` : String(key.apiKeyId);
    await this.consume('key', subject, res);
  }

  /** Counts the request against the `kind` limit of `subject`; throws 429 RATE_LIMITED beyond it. */
  async consume(kind: LimitKind, subject: string, res: Response): Promise<void> {
    const limit = this.limits[kind];
    if (!this.store || limit === 0) return;
    let hit: WindowHit | null;
    try {
      hit = await this.store.hit(`${kind}:${subject}`, this.windowSeconds);
    } catch (error) {
      this.reportFailure(error, requestIdOf(res.req));
      return;
    }
    if (!hit) return; // not counted: the store is skipped for a while (it logged why, once)
    // never more than a window (a stored end is rounded to the millisecond), never less than 1 s
    const resetSeconds = Math.min(this.windowSeconds, Math.max(1, Math.ceil(hit.resetSeconds - 0.001)));
    this.advertise(res, limit, Math.max(0, limit - hit.count), resetSeconds);
    if (hit.count > limit) throw DomainError.rateLimited(resetSeconds);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.store?.connect?.();
    this.pruning?.start();
  }

  /** After the HTTP server has drained (Nest calls shutdown hooks last). */
  async onApplicationShutdown(): Promise<void> {
    await this.pruning?.stop();
    await this.store?.close?.();
  }

  private advertise(res: Response, limit: number, remaining: number, resetSeconds: number): void {
    const locals = res.locals as { rateLimit?: Advertised };
    if (locals.rateLimit && locals.rateLimit.remaining <= remaining) return;
    locals.rateLimit = { remaining };
    res.setHeader('RateLimit-Limit', String(limit));
    res.setHeader('RateLimit-Remaining', String(remaining));
    res.setHeader('RateLimit-Reset', String(resetSeconds));
  }

  private reportFailure(error: unknown, reqId: string): void {
    const now = Date.now();
    if (now - this.lastFailureLog < FAILURE_LOG_INTERVAL_MS) return;
    this.lastFailureLog = now;
    this.logger.error(
      { reqId, err: error instanceof Error ? error.message : String(error) },
      'Rate-limit store failed; requests are let through',
    );
  }
}
