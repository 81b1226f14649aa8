import { ALL_SCOPES, normalizeScopes } from '../auth/scopes';
import { isoOrNull } from '../common/time/iso';
import type { ApiKeyView, ProjectView } from './dto/project.dto';
import type { ApiKey } from './entities/api-key.entity';
import type { Project } from './entities/project.entity';

export const toProjectView = (p: Project): ProjectView => ({
  id: p.id,
  name: p.name,
  autoCreateCustomerAtRedemption: p.autoCreateCustomerAtRedemption,
  requireSignature: p.requireSignature,
  timeZone: p.timeZone,
  createdAt: p.createdAt.toISOString(),
  updatedAt: p.updatedAt.toISOString(),
});

export const toApiKeyView = (k: ApiKey): ApiKeyView => ({
  id: k.id,
  kind: k.kind,
  name: k.name,
  prefix: k.prefix,
  enabled: k.enabled,
  // a private key without scopes was made by a version before them: it holds them all
  scopes: k.kind === 'private' ? normalizeScopes(k.scopes ?? [ALL_SCOPES]) : null,
  expiresAt: isoOrNull(k.expiresAt),
  createdAt: k.createdAt.toISOString(),
});
