import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { callerOf, type CallerProject } from '../auth/caller';
import { AppConfig } from '../config/app-config';
import { REQUEST_ID_HEADER } from '../common/http/request-id';
import { SIGNATURE_HEADERS } from '../auth/signature';
import { PrivateInfo, ProjectSummary, PublicInfo } from './info.dto';
import { RouteCatalog } from '../common/routes/route-catalog.service';

import { API_PREFIXES } from '../common/routes/api-prefixes';

@Injectable()
export class InfoService {
  constructor(
    private readonly routes: RouteCatalog,
    private readonly config: AppConfig,
  ) {}

  privateInfo(project: CallerProject, req: Request): PrivateInfo {
    const caller = callerOf(req);
    return {
      project: summary(project),
      key: {
        id: caller.apiKeyId,
        prefix: caller.keyPrefix,
        scopes: [...(caller.scopes ?? [])],
        expiresAt: caller.expiresAt === null ? null : new Date(caller.expiresAt).toISOString(),
      },
      api: {
        version: 'v1',
        baseUrl: this.baseUrl(req) + API_PREFIXES.private,
        authScheme: 'Bearer',
        authHeader: 'Authorization',
        requestIdHeader: REQUEST_ID_HEADER,
        idempotencyHeader: 'Idempotency-Key',
      },
      endpoints: this.routes.endpointsOf('private'),
    };
  }

  publicInfo(project: CallerProject, req: Request): PublicInfo {
    return {
      project: summary(project),
      api: {
        version: 'v1',
        baseUrl: this.baseUrl(req) + API_PREFIXES.public,
        projectKeyHeader: 'X-Service-Key',
        customerAuthHeader: 'Authorization',
        requestIdHeader: REQUEST_ID_HEADER,
        signatureHeaders: { ...SIGNATURE_HEADERS },
      },
      endpoints: this.routes.endpointsOf('public'),
    };
  }

  /** `PUBLIC_BASE_URL` when set, else the address the caller used (honouring `trust proxy`). */
  private baseUrl(req: Request): string {
    const configured = this.config.get('PUBLIC_BASE_URL');
    if (configured) return configured.replace(/\/+$/, '');
    return `${req.protocol}://${req.host ?? 'localhost'}`;
  }
}

const summary = (p: CallerProject): ProjectSummary => ({
  id: p.id,
  name: p.name,
  autoCreateCustomerAtRedemption: p.autoCreateCustomerAtRedemption,
  timeZone: p.timeZone,
});
