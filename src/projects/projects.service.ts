import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Clock } from '../common/clock';
import { KeyAuthService } from '../auth/key-auth.service';
import { randomBase32Lower, randomBase62 } from '../common/crypto/random';
import { sha256Hex } from '../common/crypto/sha256';
import { SecretBox } from '../common/crypto/secret-box';
import { DomainError } from '../common/errors/domain-error';
import { AuditTrail } from '../audit/audit-trail';
import { Transactions, runInTransaction } from '../database/transactional';
import { Page, PageQueryDto, pageWindow, toPage } from '../common/http/pagination';
import {
  ApiKeyView,
  CreateApiKeyDto,
  CreateProjectDto,
  CreatedApiKeyView,
  ProjectView,
  UpdateApiKeyDto,
  UpdateProjectDto,
} from './dto/project.dto';
import { ApiKey } from './entities/api-key.entity';
import { parseKeyExpiry } from './dto/key-input';
import { ALL_SCOPES, normalizeScopes } from '../auth/scopes';
import { Project } from './entities/project.entity';
import { toApiKeyView, toProjectView } from './projects.mapper';
import { ProjectsRepository } from './repository/projects.repository';

export const newProjectId = () => `prj_${randomBase32Lower(20)}`;

/** A validated `expiresAt` input (`IsKeyExpiry`) as the instant it names. */
function keyExpiry(input: string): Date {
  const instant = parseKeyExpiry(input);
  if (!instant) throw new Error(`expiresAt ${input} was not validated`);
  return instant;
}

/** A change of `scopes` on a public key: refused as the creation of one is. */
function publicKeyScopes(): DomainError {
  const message = 'scopes are for private keys only: a public key has none';
  return new DomainError('VALIDATION_FAILED', message, [{ field: 'scopes', message }]);
}

/**
 * Operators' management of projects and their keys: the admin API and the CLI. A change to a
 * project or a key empties the key cache once its transaction has committed, so that no request
 * caches the state before it.
 */
@Injectable()
export class ProjectsService {
  private readonly secretBox: SecretBox;

  constructor(
    private readonly repository: ProjectsRepository,
    private readonly keyAuth: KeyAuthService,
    config: AppConfig,
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly audit: AuditTrail,
  ) {
    this.secretBox = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
  }

  async create(dto: CreateProjectDto): Promise<ProjectView> {
    return runInTransaction(this.transactions, async () => {
      const view = toProjectView(
        await this.repository.insertProject({
          id: newProjectId(),
          name: dto.name,
          autoCreateCustomerAtRedemption: dto.autoCreateCustomerAtRedemption ?? false,
          requireSignature: dto.requireSignature ?? false,
          timeZone: dto.timeZone ?? 'UTC',
        }),
      );
      this.audit.created(view.id, 'project', view.id, view);
      return view;
    });
  }

  async list(query: PageQueryDto): Promise<Page<ProjectView>> {
    const [rows, total] = await this.repository.page(query.search, pageWindow(query));
    return toPage(rows.map(toProjectView), total, query);
  }

  async get(projectId: string): Promise<ProjectView> {
    return toProjectView(await this.find(projectId));
  }

  async update(projectId: string, dto: UpdateProjectDto): Promise<ProjectView> {
    const saved = await runInTransaction(this.transactions, async () => {
      const project = await this.find(projectId, 'pessimistic_write');
      const before = toProjectView(project);
      // the zone's history lets calendar periods follow the zone as it was (docs/entitlements.md)
      if (dto.timeZone !== undefined && dto.timeZone !== project.timeZone) {
        await this.repository.insertTimeZoneChange(
          projectId,
          this.clock.now(),
          project.timeZone,
          dto.timeZone,
        );
      }
      const saved = await this.repository.saveProject(Object.assign(project, dto));
      this.audit.updated(projectId, 'project', projectId, before, toProjectView(saved));
      return saved;
    });
    this.keyAuth.invalidate();
    return toProjectView(saved);
  }

  async remove(projectId: string): Promise<{ success: true }> {
    await runInTransaction(this.transactions, async () => {
      const project = await this.find(projectId, 'pessimistic_write');
      await this.repository.softDeleteProject(projectId);
      // the project's own records stay readable after it is gone (through the admin interface)
      this.audit.deleted(projectId, 'project', projectId, toProjectView(project));
    });
    this.keyAuth.invalidate();
    return { success: true };
  }

  /** Makes a key; the plaintext (and a public key's signing secret) leaves the service only here. */
  async createKey(projectId: string, dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    const key = `${dto.kind === 'private' ? 'sk' : 'pk'}_${randomBase62(40)}`;
    const signingSecret = dto.kind === 'public' ? `ss_${randomBase62(40)}` : undefined;
    // the project's row is held (shared) until the key is in: a delete cannot slip in between
    const saved = await runInTransaction(this.transactions, async () => {
      await this.find(projectId, 'pessimistic_read');
      const created = await this.repository.insertKey({
        projectId,
        kind: dto.kind,
        name: dto.name ?? null,
        prefix: key.slice(0, 8),
        keyHash: sha256Hex(key),
        enabled: true,
        signingSecretEnc: signingSecret ? this.secretBox.encrypt(signingSecret) : null,
        scopes: dto.kind === 'private' ? normalizeScopes(dto.scopes ?? [ALL_SCOPES]) : null,
        expiresAt: dto.expiresAt ? keyExpiry(dto.expiresAt) : null,
      });
      this.audit.created(projectId, 'api_key', created.id, toApiKeyView(created));
      return created;
    });
    return { ...toApiKeyView(saved), key, ...(signingSecret ? { signingSecret } : {}) };
  }

  async listKeys(projectId: string): Promise<ApiKeyView[]> {
    await this.find(projectId);
    const keys = await this.repository.listKeys(projectId);
    return keys.map(toApiKeyView);
  }

  async updateKey(projectId: string, keyId: number, dto: UpdateApiKeyDto): Promise<ApiKeyView> {
    const saved = await runInTransaction(this.transactions, async () => {
      const key = await this.findKey(projectId, keyId);
      const before = toApiKeyView(key);
      if (dto.enabled !== undefined) key.enabled = dto.enabled;
      if (dto.name !== undefined) key.name = dto.name;
      if (dto.scopes !== undefined) {
        if (key.kind !== 'private') throw publicKeyScopes();
        key.scopes = normalizeScopes(dto.scopes);
      }
      if (dto.expiresAt !== undefined)
        key.expiresAt = dto.expiresAt === null ? null : keyExpiry(dto.expiresAt);
      const saved = await this.repository.saveKey(key);
      this.audit.updated(projectId, 'api_key', keyId, before, toApiKeyView(saved));
      return saved;
    });
    this.keyAuth.invalidate();
    return toApiKeyView(saved);
  }

  async removeKey(projectId: string, keyId: number): Promise<{ success: true }> {
    await runInTransaction(this.transactions, async () => {
      const key = await this.findKey(projectId, keyId);
      await this.repository.deleteKey(projectId, key.id);
      this.audit.deleted(projectId, 'api_key', key.id, toApiKeyView(key));
    });
    this.keyAuth.invalidate();
    return { success: true };
  }

  /**
   * The live project; with a lock mode (inside a transaction), its row is locked for the rest of
   * it, so a concurrent delete waits, or is waited for and then seen (the project is gone).
   */
  private async find(projectId: string, lock?: 'pessimistic_read' | 'pessimistic_write'): Promise<Project> {
    const project = await this.repository.find(projectId, lock);
    if (!project) throw new DomainError('PROJECT_NOT_FOUND', 'Project not found.');
    return project;
  }

  /** The project's key, locked for the rest of the transaction (the project's row held shared). */
  private async findKey(projectId: string, keyId: number): Promise<ApiKey> {
    await this.find(projectId, 'pessimistic_read');
    const key = await this.repository.findKeyForUpdate(projectId, keyId);
    if (!key) throw new DomainError('API_KEY_NOT_FOUND');
    return key;
  }
}
