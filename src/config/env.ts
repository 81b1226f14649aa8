import { existsSync } from 'node:fs';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateIf,
  IsUrl,
} from 'class-validator';

const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : value === true || value === 'true' || value === '1';
const toInt = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : Number(value);

/**
 * Every environment variable the service reads, validated once at start. A wrong value stops
 * the process with a message naming the variable (see `validateEnv`).
 */
export class EnvironmentVariables {
  @IsOptional() @Transform(toInt) @IsInt() @Min(0) @Max(65535)
  PORT: number = 3000;

  @IsOptional() @IsString()
  HOST: string = '0.0.0.0';

  /** Unset: `npm start` runs an embedded PostgreSQL (main.ts sets this before validation). */
  @IsString() @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// connection string' })
  DATABASE_URL: string;

  @IsOptional() @IsInt() @Transform(toInt) @Min(1) @Max(200)
  DB_POOL_SIZE: number = 10;

  /** Unset or empty: the admin interface answers 404. */
  @IsOptional() @ValidateIf((_, v) => v !== '') @IsString() @MinLength(16, { message: 'ADMIN_TOKEN must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  /** 32 bytes, base64: the key that encrypts signing secrets at rest (AES-256-GCM). */
  @IsString()
  @Matches(/^[A-Za-z0-9+/]{43}=$/, { message: 'SECRET_ENCRYPTION_KEY must be 32 bytes encoded as base64 (44 characters)' })
  SECRET_ENCRYPTION_KEY: string;

  @IsOptional() @ValidateIf((_, v) => v !== undefined && v !== '')
  @IsUrl({ require_tld: false, require_protocol: true }, { message: 'PUBLIC_BASE_URL must be an absolute http(s) URL' })
  PUBLIC_BASE_URL?: string;

  @IsOptional() @Transform(toBool) @IsBoolean()
  DB_MIGRATE_ON_START: boolean = true;

  @IsOptional() @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL: string = 'info';

  @IsOptional() @Transform(toInt) @IsInt() @Min(4) @Max(15)
  BCRYPT_COST: number = 10;

  /** Lifetime of a customer token issued by the public login, in days. */
  @IsOptional() @Transform(toInt) @IsInt() @Min(1) @Max(3650)
  CUSTOMER_TOKEN_TTL_DAYS: number = 30;

  /**
   * Express `trust proxy`: unset or `false` (client address is the peer), `true`, a hop count
   * such as `1`, or addresses/subnets such as `10.0.0.0/8,loopback`. Needed behind an ingress so
   * that per-address login limits see the real client.
   */
  @IsOptional() @IsString() @Matches(/^(true|false|\d{1,2}|[0-9A-Za-z.:/,\s-]+)$/, { message: 'TRUST_PROXY must be true, false, a hop count or a list of addresses/subnets' })
  TRUST_PROXY?: string;

  /** Set by main.ts when it runs the embedded database; not meant to be set by hand. */
  @IsOptional() @Transform(toBool) @IsBoolean()
  EMBEDDED_DATABASE: boolean = false;
}

/** Validates `raw` (normally `process.env`); throws one Error that names every bad variable. */
export function validateEnv(raw: Record<string, unknown>): EnvironmentVariables {
  const env = plainToInstance(EnvironmentVariables, raw, { exposeDefaultValues: true });
  const errors = validateSync(env, { skipMissingProperties: false, whitelist: false });
  if (errors.length > 0) {
    const lines = errors.map((e) => {
      const why = Object.values(e.constraints ?? {}).join('; ');
      return `  - ${e.property}: ${why}`;
    });
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return env;
}

/** Reads `./.env` into `process.env` (variables already set win), for `main.ts` and the CLI. */
export function loadDotEnv(file = '.env'): void {
  if (existsSync(file)) process.loadEnvFile(file);
}

/** The `trust proxy` value Express expects for a `TRUST_PROXY` setting. */
export function trustProxySetting(value: string | undefined): boolean | number | string {
  if (!value || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}
