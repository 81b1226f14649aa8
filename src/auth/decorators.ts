import { applyDecorators, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiSecurity } from '@nestjs/swagger';
import { ApiErrors } from '../common/swagger/api-responses';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';

export const SECURITY = { private: 'privateKey', public: 'publicKey', admin: 'adminToken', customer: 'customerToken' } as const;

/** Guard, Swagger security and the key errors of the private interface, as one decorator. */
export const PrivateApi = () =>
  applyDecorators(
    UseGuards(PrivateKeyGuard),
    ApiBearerAuth(SECURITY.private),
    ApiErrors('INVALID_API_KEY', 'API_KEY_DISABLED', 'PROJECT_NOT_FOUND', 'VALIDATION_FAILED'),
  );

/** Guard, Swagger security and the key errors of the public interface. */
export const PublicApi = () =>
  applyDecorators(
    UseGuards(PublicKeyGuard),
    ApiSecurity(SECURITY.public),
    ApiErrors('INVALID_API_KEY', 'API_KEY_DISABLED', 'PROJECT_NOT_FOUND'),
  );

/** The operators' interface `/api/admin/v1`. */
export const AdminApi = () =>
  applyDecorators(UseGuards(AdminGuard), ApiBearerAuth(SECURITY.admin), ApiErrors('INVALID_ADMIN_TOKEN', 'VALIDATION_FAILED'));
