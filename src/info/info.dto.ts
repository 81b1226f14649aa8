import { ApiProperty } from '@nestjs/swagger';

export class ProjectSummary {
  @ApiProperty({ example: 'prj_k3v7q2m9x4t6b8n5c1zd' }) id: string;
  @ApiProperty({ example: 'Acme Notes' }) name: string;
  @ApiProperty({ example: false }) autoCreateCustomerAtRedemption: boolean;
  @ApiProperty({
    example: 'UTC',
    description: 'The zone of calendar periods when neither the quota nor the customer names one.',
  })
  timeZone: string;
}

class PrivateApiDescription {
  @ApiProperty({ example: 'v1' }) version: string;
  @ApiProperty({ example: 'https://subs.example.com/api/private/v1' }) baseUrl: string;
  @ApiProperty({ example: 'Bearer' }) authScheme: string;
  @ApiProperty({ example: 'Authorization' }) authHeader: string;
  @ApiProperty({ example: 'X-Request-Id' }) requestIdHeader: string;
  @ApiProperty({ example: 'Idempotency-Key' }) idempotencyHeader: string;
}

export class KeySummary {
  @ApiProperty({ example: 1 }) id: number;
  @ApiProperty({ example: 'sk_Xy12ab', description: 'First characters of the key.' }) prefix: string;
  @ApiProperty({
    type: [String],
    example: ['*'],
    description: 'The scopes the key holds, sorted (`["*"]`: all); a `:write` scope includes its `:read`.',
  })
  scopes: string[];
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'When the key stops working; null: never.',
  })
  expiresAt: string | null;
}

export class PrivateInfo {
  @ApiProperty({ type: ProjectSummary }) project: ProjectSummary;
  @ApiProperty({ type: KeySummary, description: 'The key of this request.' }) key: KeySummary;
  @ApiProperty({ type: PrivateApiDescription }) api: PrivateApiDescription;
  @ApiProperty({ type: [String], example: ['GET /api/private/v1/info', 'POST /api/private/v1/redemptions'] })
  endpoints: string[];
}

class SignatureHeaders {
  @ApiProperty({ example: 'X-Service-Timestamp' }) timestamp: string;
  @ApiProperty({ example: 'X-Service-Nonce' }) nonce: string;
  @ApiProperty({ example: 'X-Service-Signature' }) signature: string;
}

class PublicApiDescription {
  @ApiProperty({ example: 'v1' }) version: string;
  @ApiProperty({ example: 'https://subs.example.com/api/public/v1' }) baseUrl: string;
  @ApiProperty({ example: 'X-Service-Key' }) projectKeyHeader: string;
  @ApiProperty({ example: 'Authorization' }) customerAuthHeader: string;
  @ApiProperty({ example: 'X-Request-Id' }) requestIdHeader: string;
  @ApiProperty({ type: SignatureHeaders }) signatureHeaders: SignatureHeaders;
}

export class PublicInfo {
  @ApiProperty({ type: ProjectSummary }) project: ProjectSummary;
  @ApiProperty({ type: PublicApiDescription }) api: PublicApiDescription;
  @ApiProperty({ type: [String], example: ['GET /api/public/v1/info', 'POST /api/public/v1/auth/login'] })
  endpoints: string[];
}
