import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { sha256Hex } from '../common/crypto/sha256';
import { DomainError } from '../common/errors/domain-error';
import type { ApiKeyKind } from '../projects/entities/api-key.entity';
import { KeyRow, ProjectsRepository } from '../projects/repository/projects.repository';
import type { Caller } from './caller';

const KEY_FORMAT: Record<ApiKeyKind, RegExp> = {
  private: /^sk_[A-Za-z0-9]{40}$/,
  public: /^pk_[A-Za-z0-9]{40}$/,
};

const CACHE_MAX_ENTRIES = 10_000;

/**
 * Turns a presented key into the caller's project (product.md 1): one indexed lookup by the
 * key's SHA-256 (a key is 238 random bits, so a fast hash is the right tool, not bcrypt).
 *
 * Known keys are cached for `API_KEY_CACHE_TTL_MS` (a few seconds): every change made through
 * this process (admin API, demo seed) clears the cache at once; another replica sees a disabled
 * key or a deleted project after at most that time. Unknown keys are never cached.
 */
@Injectable()
export class KeyAuthService {
  private readonly cache = new Map<string, { row: KeyRow; until: number }>();
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

  async authenticate(kind: ApiKeyKind, presented: string | undefined): Promise<Caller> {
    if (!presented || !KEY_FORMAT[kind].test(presented)) throw new DomainError('INVALID_API_KEY');
    const hash = sha256Hex(presented);
    const row = await this.lookup(hash, kind);
    if (!row) throw new DomainError('INVALID_API_KEY');
    if (!row.enabled) throw new DomainError('API_KEY_DISABLED');
    if (!row.project_id) throw new DomainError('PROJECT_NOT_FOUND');
    return {
      apiKeyId: row.key_id,
      kind,
      signingSecretEnc: row.signing_secret_enc,
      project: {
        id: row.project_id,
        name: row.name!,
        autoCreateCustomerAtRedemption: row.auto_create!,
        requireSignature: row.require_signature!,
      },
    };
  }

  private async lookup(hash: string, kind: ApiKeyKind): Promise<KeyRow | undefined> {
    const key = `${kind}:${hash}`;
    const now = Date.now();
    const cached = this.cache.get(key);
    if (cached && cached.until > now) return cached.row;
    const row = await this.projects.findKeyByHash(hash, kind);
    if (row && this.ttlMs > 0) {
      if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(key, { row, until: now + this.ttlMs });
    }
    return row;
  }
}
