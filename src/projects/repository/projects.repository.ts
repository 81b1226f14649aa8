import { Injectable } from '@nestjs/common';
import { likePattern, PageWindow } from '../../common/http/pagination';
import { Transactions } from '../../database/transactional';
import { ApiKey, ApiKeyKind } from '../entities/api-key.entity';
import { Project } from '../entities/project.entity';
import { ProjectTimeZoneChange } from '../entities/project-time-zone-change.entity';
import { GenerateSql } from '../../database/generate-sql';

/** A key and its project as the key guards need them (`ProjectsRepository.findKeyByHash`). */
export interface KeyRow {
  key_id: number;
  prefix: string;
  enabled: boolean;
  signing_secret_enc: string | null;
  scopes: string[] | null;
  expires_at: Date | null;
  project_id: string | null;
  name: string | null;
  auto_create: boolean | null;
  require_signature: boolean | null;
  time_zone: string | null;
}

/** A key and its project by the key's SHA-256 and kind (`$1`, `$2`); no row: an unknown key. */
export const API_KEY_LOOKUP = `SELECT k.id AS key_id, k.prefix, k.enabled, k.signing_secret_enc, k.scopes, k.expires_at,
              p.id AS project_id, p.name, p.auto_create_customer_at_redemption AS auto_create,
              p.require_signature, p.time_zone
         FROM api_keys k
         LEFT JOIN projects p ON p.id = k.project_id AND p.deleted_at IS NULL
        WHERE k.key_hash = $1 AND k.kind = $2`;

/**
 * Every statement on `projects` and `api_keys`: the operators' management (`ProjectsService`) and
 * the key lookup of every authenticated request (`KeyAuthService`, in auth/). Every statement
 * runs in the current unit of work's transaction, if one is open.
 *
 * It sits in a folder of its own (like `entities/`): auth/ reads keys through it while the admin
 * controller of projects/ uses auth/'s guards, and this folder imports only the entities (and the
 * database layer), so the folders stay free of cycles.
 */
@Injectable()
export class ProjectsRepository {
  constructor(private readonly transactions: Transactions) {}

  private get tx() {
    return this.transactions.tx;
  }

  /** The key guards' one lookup per request (cached by `KeyAuthService`). */
  @GenerateSql({ params: ['a'.repeat(64), 'private'] })
  async findKeyByHash(hash: string, kind: ApiKeyKind): Promise<KeyRow | undefined> {
    const rows: KeyRow[] = await this.tx.query(API_KEY_LOOKUP, [hash, kind]);
    return rows[0];
  }

  @GenerateSql({
    params: [
      {
        id: 'prj_2',
        name: 'Globex',
        autoCreateCustomerAtRedemption: false,
        requireSignature: false,
        timeZone: 'UTC',
      },
    ],
  })
  insertProject(project: Omit<Project, 'createdAt' | 'updatedAt' | 'deletedAt'>): Promise<Project> {
    const projects = this.tx.getRepository(Project);
    return projects.save(projects.create(project));
  }

  /** Live projects, newest first; `search` a case-insensitive substring of the name. */
  @GenerateSql(
    { name: 'unfiltered', params: [undefined, { limit: 20, offset: 20 }] },
    { name: 'searching', params: ['acme', { limit: 20, offset: 20 }] },
  )
  page(search: string | undefined, window: PageWindow): Promise<[Project[], number]> {
    const qb = this.tx
      .getRepository(Project)
      .createQueryBuilder('p')
      .orderBy('p.created_at', 'DESC')
      .addOrderBy('p.id', 'DESC');
    if (search) qb.where('p.name ILIKE :pattern', { pattern: likePattern(search) });
    return qb.skip(window.offset).take(window.limit).getManyAndCount();
  }

  /** The project, deleted or not: a deleted project's audit log stays readable (admin interface). */
  @GenerateSql({ params: ['prj_1'] })
  findWithDeleted(projectId: string): Promise<Project | null> {
    return this.tx.findOne(Project, { where: { id: projectId }, withDeleted: true });
  }

  /**
   * The live project; with a lock mode (inside a transaction), its row is locked for the rest of
   * it, so a concurrent delete waits, or is waited for and then seen (the project is gone).
   */
  @GenerateSql(
    { name: 'unlocked', params: ['prj_1'] },
    { name: 'locked for share', params: ['prj_1', 'pessimistic_read'] },
    { name: 'locked for update', params: ['prj_1', 'pessimistic_write'] },
  )
  find(projectId: string, lock?: 'pessimistic_read' | 'pessimistic_write'): Promise<Project | null> {
    return this.tx.findOne(Project, {
      where: { id: projectId },
      ...(lock ? { lock: { mode: lock } } : {}),
    });
  }

  @GenerateSql({
    params: [
      Object.assign(new Project(), {
        id: 'prj_1',
        name: 'Acme Inc',
        autoCreateCustomerAtRedemption: true,
        requireSignature: false,
        timeZone: 'Europe/Berlin',
      }),
    ],
  })
  saveProject(project: Project): Promise<Project> {
    return this.tx.save(project);
  }

  /** Records a change of the project's zone (same transaction as the change itself). */
  @GenerateSql({ params: ['prj_1', new Date(0), 'UTC', 'Europe/Berlin'] })
  async insertTimeZoneChange(
    projectId: string,
    changedAt: Date,
    fromZone: string,
    toZone: string,
  ): Promise<void> {
    await this.tx.insert(ProjectTimeZoneChange, { projectId, changedAt, fromZone, toZone });
  }

  @GenerateSql({ params: ['prj_1'] })
  async softDeleteProject(projectId: string): Promise<void> {
    await this.tx.softDelete(Project, { id: projectId });
  }

  @GenerateSql({
    params: [
      {
        projectId: 'prj_1',
        kind: 'public',
        name: 'Web',
        prefix: 'pk_7c2e',
        keyHash: 'd'.repeat(64),
        enabled: true,
        signingSecretEnc: null,
        scopes: null,
        expiresAt: null,
      },
    ],
  })
  insertKey(key: Omit<ApiKey, 'id' | 'project' | 'createdAt' | 'updatedAt'>): Promise<ApiKey> {
    return this.tx.save(this.tx.create(ApiKey, key));
  }

  @GenerateSql({ params: ['prj_1'] })
  listKeys(projectId: string): Promise<ApiKey[]> {
    return this.tx.getRepository(ApiKey).find({ where: { projectId }, order: { id: 'ASC' } });
  }

  /** The project's key, locked for the rest of the current transaction. */
  @GenerateSql({ params: ['prj_1', 1] })
  findKeyForUpdate(projectId: string, keyId: number): Promise<ApiKey | null> {
    return this.tx.findOne(ApiKey, { where: { id: keyId, projectId }, lock: { mode: 'pessimistic_write' } });
  }

  @GenerateSql({
    params: [
      Object.assign(new ApiKey(), {
        id: 1,
        projectId: 'prj_1',
        kind: 'private',
        name: 'Backend',
        prefix: 'sk_3f9a',
        keyHash: 'a'.repeat(64),
        enabled: false,
        signingSecretEnc: null,
        scopes: ['codes:read', 'customers:write'],
        expiresAt: new Date('2030-01-01T00:00:00.000Z'),
      }),
    ],
  })
  saveKey(key: ApiKey): Promise<ApiKey> {
    return this.tx.save(key);
  }

  @GenerateSql({ params: ['prj_1', 1] })
  async deleteKey(projectId: string, keyId: number): Promise<void> {
    await this.tx.delete(ApiKey, { id: keyId, projectId });
  }
}
