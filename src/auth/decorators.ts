import { applyDecorators, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiHeader, ApiSecurity } from '@nestjs/swagger';
import { Access } from '../common/routes/access';
import { ApiErrors } from '../common/swagger/api-responses';
import { AdminGuard, PrivateKeyGuard, PublicKeyGuard } from './guards';
import { NONCE_PATTERN, SIGNATURE_HEADERS, SIGNATURE_WINDOW_SECONDS } from './signature';

export const SECURITY = {
  private: 'privateKey',
  public: 'publicKey',
  admin: 'adminToken',
  customer: 'customerToken',
} as const;

const SIGNATURE_HELP = [
  "Signature v1: lowercase hex HMAC-SHA256, with the public key's signing secret, of",
  '`METHOD \\n path-with-query \\n timestamp \\n nonce \\n hex(SHA-256(raw body))` (an empty body hashes as empty).',
  'Required when the project has `requireSignature`; otherwise verified whenever any of the three headers is sent.',
  'Example: `GET /api/public/v1/me`, timestamp `1767225600`, nonce `n0nce-0000000001`, no body, secret `ss_example`:',
  'the canonical string is `GET\\n/api/public/v1/me\\n1767225600\\nn0nce-0000000001\\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`',
  'and the signature `0b8a7696ebea153b5abf332d731dd20b01e83e2dad56078a28729dbeeb8cfc2a`.',
].join(' ');

/** The three optional signature headers, documented on every public operation. */
const ApiSignatureHeaders = () =>
  applyDecorators(
    ApiHeader({
      name: SIGNATURE_HEADERS.timestamp,
      required: false,
      description: `Unix seconds; accepted within ${SIGNATURE_WINDOW_SECONDS} s of the server's clock. ${SIGNATURE_HELP}`,
      schema: { type: 'string', pattern: '^[0-9]{1,12}$', maxLength: 12, example: '1767225600' },
    }),
    ApiHeader({
      name: SIGNATURE_HEADERS.nonce,
      required: false,
      description: 'Random, 16 to 64 characters of `A-Za-z0-9_-`, used once per key.',
      schema: {
        type: 'string',
        pattern: NONCE_PATTERN.source,
        minLength: 16,
        maxLength: 64,
        example: 'n0nce-0000000001',
      },
    }),
    ApiHeader({
      name: SIGNATURE_HEADERS.signature,
      required: false,
      description: 'Lowercase hex HMAC-SHA256 of the canonical string (see the timestamp header).',
      schema: {
        type: 'string',
        pattern: '^[0-9a-f]{64}$',
        maxLength: 64,
        example: '0b8a7696ebea153b5abf332d731dd20b01e83e2dad56078a28729dbeeb8cfc2a',
      },
    }),
  );

/**
 * The key guard (the key, then its rate limit, then the route's scope), Swagger security and the
 * key errors of the private interface, as one decorator. Each route also declares its scope,
 * `@Scope(...)` or `@NoScope()` (`scopes.ts`).
 */
export const PrivateApi = () =>
  applyDecorators(
    Access('private'),
    UseGuards(PrivateKeyGuard),
    ApiBearerAuth(SECURITY.private),
    ApiErrors(
      'INVALID_API_KEY',
      'API_KEY_DISABLED',
      'PROJECT_NOT_FOUND',
      'API_KEY_EXPIRED',
      'VALIDATION_FAILED',
    ),
  );

/**
 * The key guard (key and request signature, then the key's rate limit), Swagger security, signature headers and errors of the
 * public interface. `withCustomerToken` documents that the operation needs the public key AND
 * a customer token (the customer-token guard is added by `CustomerApi()` in `src/public`).
 */
export const PublicApi = (options: { withCustomerToken?: boolean } = {}) =>
  applyDecorators(
    Access('public'),
    UseGuards(PublicKeyGuard),
    options.withCustomerToken
      ? ApiSecurity({ [SECURITY.public]: [], [SECURITY.customer]: [] })
      : ApiSecurity(SECURITY.public),
    ApiSignatureHeaders(),
    ApiErrors(
      'INVALID_API_KEY',
      'API_KEY_DISABLED',
      'PROJECT_NOT_FOUND',
      'API_KEY_EXPIRED',
      'SIGNATURE_REQUIRED',
      'INVALID_SIGNATURE',
      'SIGNATURE_EXPIRED',
      'NONCE_REUSED',
    ),
  );

/** The operators' interface (`API_PREFIXES.admin`). */
export const AdminApi = () =>
  applyDecorators(
    Access('admin'),
    UseGuards(AdminGuard),
    ApiBearerAuth(SECURITY.admin),
    ApiErrors('INVALID_ADMIN_TOKEN', 'VALIDATION_FAILED', 'RATE_LIMITED'),
  );
