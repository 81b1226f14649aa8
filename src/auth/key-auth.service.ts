import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../config/app-config';
import { sha256Hex } from '../common/crypto/sha256';
import { DomainError } from '../common/errors/domain-error';
import type { ApiKeyKind } from '../projects/entities/api-key.entity';
import { KeyRow, ProjectsRepository } from '../projects/repository/projects.repository';
import type { Caller } from './caller';
import { ALL_SCOPES } from './scopes';

const KEY_FORMAT: Record<ApiKeyKind, RegExp> = {
  private: /^sk_[A-Za-z0-9]{40}$/,
  public: /^pk_[A-Za-z0-9]{40}$/,
};

const CACHE_MAX_ENTRIES = 10_000;

/** What a known key stands for: its caller, or the error every request with it gets. */
type KeyOutcome = Caller | 'API_KEY_DISABLED' | 'PROJECT_NOT_FOUND';

/**
 * Turns a presented key into the caller's project (docs/api-guide.md#projects-and-keys): one
 * indexed lookup by the
 * key's SHA-256 (a key is 238 random bits, so a fast hash is the right tool, not bcrypt).
 *
 * Known keys are cached for `API_KEY_CACHE_TTL_MS` (a few seconds), with what they stand for: the
 * caller (one frozen object, shared by the requests of the key, with its scopes and expiry, so
 * that neither check costs a query) or the error they get. A key's expiry is compared with the
 * clock at every request, cached or not. Every
 * change made through this process (admin API, demo seed) clears the cache at once; another
 * replica sees a disabled key or a deleted project after at most that time. Unknown keys are
 * never cached. A cached key is answered without a promise, for the key guards' fast path.
 */
@Injectable()
export class KeyAuthService {
  /** Known keys by kind and hash; when full, the least recently used goes. */
  private readonly cache = new LRUCache<string, { outcome: KeyOutcome; until: number }>({
    max: CACHE_MAX_ENTRIES,
  });
  private readonly ttlMs: number;

  constructor(
    private readonly projects: ProjectsRepository,
    config: AppConfig,
  ) {
    this.ttlMs = config.get('API_KEY_CACHE_TTL_MS');
  }

  /** Forget every cached key: called after any change to projects or keys. */
  invalidate(): void {
    this.cache.clear();
  }

  /**
   * The caller of a presented key: at once when the cache knows the key (its cached error is
   * thrown at once, as is INVALID_API_KEY for a key of the wrong form), else a promise of the
   * lookup. The key guards take the first without a turn of the promise machinery. Refusals in
   * order: INVALID_API_KEY, API_KEY_DISABLED, PROJECT_NOT_FOUND, API_KEY_EXPIRED.
   */
  authenticate(kind: ApiKeyKind, presented: string | undefined): Caller | Promise<Caller> {
    const hash = hashOf(kind, presented);
    const key = `${kind}:${hash}`;
    const now = Date.now();
    const entry = this.cache.get(key);
    if (entry && entry.until > now) return unexpired(outcomeOf(entry.outcome), now);
    return this.lookup(kind, hash, key, now);
  }

  private async lookup(kind: ApiKeyKind, hash: string, key: string, now: number): Promise<Caller> {
    const row = await this.projects.findKeyByHash(hash, kind);
    if (!row) throw new DomainError('INVALID_API_KEY');
    const outcome = keyOutcome(kind, row);
    if (this.ttlMs > 0) this.cache.set(key, { outcome, until: now + this.ttlMs });
    return unexpired(outcomeOf(outcome), Date.now());
  }
}

/** The SHA-256 (hex) of a presented key of the right form; any other is INVALID_API_KEY. */
function hashOf(kind: ApiKeyKind, presented: string | undefined): string {
  if (!presented || !KEY_FORMAT[kind].test(presented)) throw new DomainError('INVALID_API_KEY');
  return sha256Hex(presented);
}

function outcomeOf(outcome: KeyOutcome): Caller {
  if (typeof outcome === 'string') throw new DomainError(outcome);
  return outcome;
}

/** The caller, unless its key has expired by `now`. */
function unexpired(caller: Caller, now: number): Caller {
  if (caller.expiresAt !== null && caller.expiresAt <= now) throw new DomainError('API_KEY_EXPIRED');
  return caller;
}

function keyOutcome(kind: ApiKeyKind, row: KeyRow): KeyOutcome {
  if (!row.enabled) return 'API_KEY_DISABLED';
  if (!row.project_id) return 'PROJECT_NOT_FOUND';
  return Object.freeze({
    apiKeyId: row.key_id,
    keyPrefix: row.prefix,
    kind,
    signingSecretEnc: row.signing_secret_enc,
    // a private key without scopes was made by a version before them: it holds them all
    scopes: kind === 'private' ? Object.freeze(row.scopes ?? [ALL_SCOPES]) : null,
    expiresAt: row.expires_at ? row.expires_at.getTime() : null,
    project: Object.freeze({
      id: row.project_id,
      name: row.name!,
      autoCreateCustomerAtRedemption: row.auto_create!,
      requireSignature: row.require_signature!,
      timeZone: row.time_zone!,
    }),
  });
}
