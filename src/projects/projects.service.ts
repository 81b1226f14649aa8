import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { KeyAuthService } from '../auth/key-auth.service';
import { randomBase32Lower, randomBase62, sha256Hex } from '../common/crypto/random';
import { SecretBox } from '../common/crypto/secret-box';
import { DomainError } from '../common/errors/domain-error';
import { Page, PageQueryDto, likePattern, toPage } from '../common/http/pagination';
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
import { Project } from './entities/project.entity';
import { toApiKeyView, toProjectView } from './projects.mapper';

export const newProjectId = () => `prj_${randomBase32Lower(20)}`;

/** Operators' management of projects and their keys (product.md 1): the admin API and the CLI. */
@Injectable()
export class ProjectsService {
  private readonly secretBox: SecretBox;

  constructor(
    @InjectRepository(Project) private readonly projects: Repository<Project>,
    @InjectRepository(ApiKey) private readonly keys: Repository<ApiKey>,
    private readonly keyAuth: KeyAuthService,
    config: AppConfig,
  ) {
    this.secretBox = new SecretBox(config.get('SECRET_ENCRYPTION_KEY'));
  }

  async create(dto: CreateProjectDto): Promise<ProjectView> {
    const project = await this.projects.save(
      this.projects.create({
        id: newProjectId(),
        name: dto.name,
        autoCreateCustomerAtRedemption: dto.autoCreateCustomerAtRedemption ?? false,
        requireSignature: dto.requireSignature ?? false,
      }),
    );
    return toProjectView(project);
  }

  async list(query: PageQueryDto): Promise<Page<ProjectView>> {
    const qb = this.projects.createQueryBuilder('p').orderBy('p.created_at', 'DESC').addOrderBy('p.id', 'DESC');
    if (query.search) qb.where('p.name ILIKE :pattern', { pattern: likePattern(query.search) });
    const [rows, total] = await qb
      .skip((query.page - 1) * query.pageSize)
      .take(query.pageSize)
      .getManyAndCount();
    return toPage(rows.map(toProjectView), total, query);
  }

  async get(projectId: string): Promise<ProjectView> {
    return toProjectView(await this.find(projectId));
  }

  async update(projectId: string, dto: UpdateProjectDto): Promise<ProjectView> {
    const project = await this.find(projectId);
    Object.assign(project, dto);
    const saved = await this.projects.save(project);
    this.keyAuth.invalidate();
    return toProjectView(saved);
  }

  async remove(projectId: string): Promise<{ success: true }> {
    await this.find(projectId);
    await this.projects.softDelete({ id: projectId });
    this.keyAuth.invalidate();
    return { success: true };
  }

  /** Makes a key; the plaintext (and a public key's signing secret) leaves the service only here. */
  async createKey(projectId: string, dto: CreateApiKeyDto): Promise<CreatedApiKeyView> {
    await this.find(projectId);
    const key = `${dto.kind === 'private' ? 'sk' : 'pk'}_${randomBase62(40)}`;
    const signingSecret = dto.kind === 'public' ? `ss_${randomBase62(40)}` : undefined;
    const saved = await this.keys.save(
      this.keys.create({
        projectId,
        kind: dto.kind,
        name: dto.name ?? null,
        prefix: key.slice(0, 8),
        keyHash: sha256Hex(key),
        enabled: true,
        signingSecretEnc: signingSecret ? this.secretBox.encrypt(signingSecret) : null,
      }),
    );
    return { ...toApiKeyView(saved), key, ...(signingSecret ? { signingSecret } : {}) };
  }

  async listKeys(projectId: string): Promise<ApiKeyView[]> {
    await this.find(projectId);
    const keys = await this.keys.find({ where: { projectId }, order: { id: 'ASC' } });
    return keys.map(toApiKeyView);
  }

  async updateKey(projectId: string, keyId: number, dto: UpdateApiKeyDto): Promise<ApiKeyView> {
    const key = await this.findKey(projectId, keyId);
    if (dto.enabled !== undefined) key.enabled = dto.enabled;
    if (dto.name !== undefined) key.name = dto.name;
    const saved = await this.keys.save(key);
    this.keyAuth.invalidate();
    return toApiKeyView(saved);
  }

  async removeKey(projectId: string, keyId: number): Promise<{ success: true }> {
    const key = await this.findKey(projectId, keyId);
    await this.keys.delete({ id: key.id, projectId });
    this.keyAuth.invalidate();
    return { success: true };
  }

  private async find(projectId: string): Promise<Project> {
    const project = await this.projects.findOne({ where: { id: projectId } });
    if (!project) throw new DomainError('PROJECT_NOT_FOUND', 'Project not found.');
    return project;
  }

  private async findKey(projectId: string, keyId: number): Promise<ApiKey> {
    await this.find(projectId);
    const key = await this.keys.findOne({ where: { id: keyId, projectId } });
    if (!key) throw new DomainError('API_KEY_NOT_FOUND');
    return key;
  }
}
