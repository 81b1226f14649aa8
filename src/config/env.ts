import { existsSync } from 'node:fs';
import { isValidIsoDuration } from '../common/time/duration';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsPositive,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateIf,
  ValidateBy,
  IsUrl,
} from 'class-validator';

const toBool = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : value === true || value === 'true' || value === '1';
const toInt = ({ value }: { value: unknown }) =>
  value === undefined || value === '' ? undefined : Number(value);

/** Different characters an ADMIN_TOKEN must hold (a run of one letter is no secret). */
export const ADMIN_TOKEN_MIN_DISTINCT = 8;

/** The values of LOG_LEVEL (pino's levels). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Every environment variable the service reads, validated once at start. A wrong value stops
 * the process with a message naming the variable (see `validateEnv`).
 */
export class EnvironmentVariables {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT: number = 3000;

  @IsOptional()
  @IsString()
  HOST: string = '0.0.0.0';

  /** Unset: `npm start` runs an embedded PostgreSQL (main.ts sets this before validation). */
  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_URL must be a postgres:// connection string' })
  DATABASE_URL: string;

  @IsOptional()
  @IsInt()
  @Transform(toInt)
  @Min(1)
  @Max(200)
  DB_POOL_SIZE: number = 10;

  /**
   * The PostgreSQL server itself, when DATABASE_URL goes through a pooler (PgBouncer in transaction
   * mode): migrations hold a session-level advisory lock, which a transaction pooler cannot keep.
   * Used by the start-up migrations and by `cli migrate`; unset: DATABASE_URL.
   */
  @IsOptional()
  @ValidateIf((_, v) => v !== '')
  @IsString()
  @Matches(/^postgres(ql)?:\/\//, { message: 'DATABASE_DIRECT_URL must be a postgres:// connection string' })
  DATABASE_DIRECT_URL?: string;

  /**
   * Read replicas: one or more postgres:// URLs, comma-separated. The reads that tolerate a little
   * lag (lists, search) go to a replica that is caught up; everything else to DATABASE_URL.
   */
  @IsOptional()
  @ValidateIf((_, v) => v !== '')
  @IsString()
  @Matches(/^\s*postgres(ql)?:\/\/[^,\s]+(\s*,\s*postgres(ql)?:\/\/[^,\s]+)*\s*$/, {
    message: 'DATABASE_READ_URL must be one or more postgres:// connection strings, separated by commas',
  })
  DATABASE_READ_URL?: string;

  /** A replica more than this behind the primary (in time) gets no reads until it catches up. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(3_600_000)
  DB_READ_MAX_LAG_MS: number = 5000;

  /** How often each replica's replay position (and the primary's WAL position) is read. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60_000)
  DB_READ_CHECK_INTERVAL_MS: number = 1000;

  /**
   * Longest a statement may run, in ms (PostgreSQL's `statement_timeout`); the client gives up
   * 1 s later (a frozen network). A request that hits it answers 503 SERVICE_UNAVAILABLE.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  DB_STATEMENT_TIMEOUT_MS: number = 5_000;

  /** The same for the known long operations (a batch of up to 10,000 codes), in ms. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(3_600_000)
  DB_LONG_STATEMENT_TIMEOUT_MS: number = 60_000;

  /** Longest wait for a free pool connection (or a new one), in ms; then 503 SERVICE_UNAVAILABLE. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(600_000)
  DB_POOL_WAIT_MS: number = 3_000;

  /**
   * How long a pool connection may sit unused before it is closed, in ms. Prepared statements are
   * planned once per connection, so a connection closed in a lull costs the next requests a new
   * connection and a new plan of each hot statement.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1_000)
  @Max(3_600_000)
  DB_POOL_IDLE_MS: number = 300_000;

  /** Hot queries as named prepared statements (parsed and planned once per connection); `false` behind PgBouncer < 1.21 in transaction mode. */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  DB_PREPARED_STATEMENTS: boolean = true;

  /**
   * Unset or empty: the admin interface answers 404. Otherwise at least 32 characters, of which at
   * least ADMIN_TOKEN_MIN_DISTINCT differ (`openssl rand -hex 32` gives 64 with 16 or so).
   */
  @IsOptional()
  @ValidateIf((_, v) => v !== '')
  @IsString()
  @MinLength(32, { message: 'ADMIN_TOKEN must be at least 32 characters (e.g. openssl rand -hex 32)' })
  @ValidateBy({
    name: 'distinctCharacters',
    validator: {
      validate: (value: unknown) =>
        typeof value === 'string' && new Set(value).size >= ADMIN_TOKEN_MIN_DISTINCT,
      defaultMessage: () =>
        `ADMIN_TOKEN must hold at least ${ADMIN_TOKEN_MIN_DISTINCT} different characters (e.g. openssl rand -hex 32)`,
    },
  })
  ADMIN_TOKEN?: string;

  /** 32 bytes, base64: the key that encrypts signing secrets at rest (AES-256-GCM). */
  @IsString()
  @Matches(/^[A-Za-z0-9+/]{43}=$/, {
    message: 'SECRET_ENCRYPTION_KEY must be 32 bytes encoded as base64 (44 characters)',
  })
  SECRET_ENCRYPTION_KEY: string;

  @IsOptional()
  @ValidateIf((_, v) => v !== undefined && v !== '')
  @IsUrl(
    { require_tld: false, require_protocol: true },
    { message: 'PUBLIC_BASE_URL must be an absolute http(s) URL' },
  )
  PUBLIC_BASE_URL?: string;

  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  DB_MIGRATE_ON_START: boolean = true;

  @IsOptional()
  @IsIn(LOG_LEVELS)
  LOG_LEVEL: string = 'info';

  /** `json` or `pretty`; unset: pretty when stdout is a terminal outside production, JSON otherwise. */
  @IsOptional()
  @IsIn(['json', 'pretty'])
  LOG_FORMAT?: 'json' | 'pretty';

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(4)
  @Max(15)
  BCRYPT_COST: number = 10;

  /** How long a known API key is remembered by one process; 0 turns the cache off. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(60000)
  API_KEY_CACHE_TTL_MS: number = 5000;

  /** Lifetime of a customer token issued by the public login, in days. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(3650)
  CUSTOMER_TOKEN_TTL_DAYS: number = 30;

  /**
   * Express `trust proxy`: unset or `false` (client address is the peer), `true`, a hop count
   * such as `1`, or addresses/subnets such as `10.0.0.0/8,loopback`. Needed behind an ingress so
   * that per-address login limits see the real client.
   */
  @IsOptional()
  @IsString()
  @Matches(/^(true|false|\d{1,2}|[0-9A-Za-z.:/,\s-]+)$/, {
    message: 'TRUST_PROXY must be true, false, a hop count or a list of addresses/subnets',
  })
  TRUST_PROXY?: string;

  /** Time allowed to receive a whole request (headers and body) from a client, in ms (Node's `server.requestTimeout`). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(600_000)
  REQUEST_TIMEOUT_MS: number = 30_000;

  /** How long an idle keep-alive connection stays open, in ms; above the idle timeout of the load balancer in front. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(600_000)
  KEEP_ALIVE_TIMEOUT_MS: number = 65_000;

  /** On SIGTERM/SIGINT: how long requests in flight may take to finish before their connections are cut, in ms. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600_000)
  SHUTDOWN_TIMEOUT_MS: number = 25_000;

  /** `GET /metrics` (Prometheus text format) and the HTTP metrics behind it. */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  METRICS_ENABLED: boolean = true;

  /**
   * Serve `GET /metrics` on this port, on a small HTTP server of its own, and no longer on PORT
   * (404 there): the scrape can then be allowed by its own network rule and kept off the API's
   * Service. Unset: on PORT, so that several instances on one machine need no second port each.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt({ message: 'METRICS_PORT must be an integer port (0-65535; 0: any free port)' })
  @Min(0, { message: 'METRICS_PORT must be an integer port (0-65535; 0: any free port)' })
  @Max(65535, { message: 'METRICS_PORT must be an integer port (0-65535; 0: any free port)' })
  METRICS_PORT?: number;

  /** Swagger UI at `/docs` and the OpenAPI document at `/docs-json` and `/docs-yaml`. */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  DOCS_ENABLED: boolean = true;

  /** Only read to choose defaults (`RATE_LIMIT_ENABLED`). */
  @IsOptional()
  @IsString()
  NODE_ENV?: string;

  /**
   * Rate limits per API key and per client address on `/api/private` and `/api/public`
   * (docs/operations.md#rate-limits). Unset: on when `NODE_ENV=production`, off otherwise
   * (development, tests).
   */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  RATE_LIMIT_ENABLED?: boolean;

  /** Length of a fixed rate-limit window, in seconds; a window starts with its first request. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(86_400)
  RATE_LIMIT_WINDOW_SECONDS: number = 60;

  /** Requests per private API key, and per public API key and client address, per window; 0 = no such limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_KEY: number = 600;

  /** Requests per client address (`req.ip`, see `TRUST_PROXY`) per window; 0 = no per-address limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_ADDRESS: number = 1200;

  /** Requests per logged-in customer (public customer-level endpoints) per window; 0 = no per-customer limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(10_000_000)
  RATE_LIMIT_PER_CUSTOMER: number = 300;

  /** Where the counters live, shared by every replica: `postgres` (a table) or `redis` (needs `REDIS_URL`). */
  @IsOptional()
  @IsIn(['postgres', 'redis'])
  RATE_LIMIT_STORE: 'postgres' | 'redis' = 'postgres';

  @ValidateIf(
    (env: EnvironmentVariables, v) => env.RATE_LIMIT_STORE === 'redis' || (v !== undefined && v !== ''),
  )
  @IsString({ message: 'REDIS_URL is required when RATE_LIMIT_STORE=redis' })
  @Matches(/^rediss?:\/\//, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** After a Redis failure, how long the rate limiter skips Redis (limits not enforced) before it probes again, in ms; 0 = never skip. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(600_000)
  RATE_LIMIT_REDIS_PAUSE_MS: number = 5_000;

  /** Prefix of every Redis key the service writes (several services or environments can share one Redis). */
  @IsOptional()
  @IsString()
  @Matches(/^[A-Za-z0-9:_.-]{0,64}$/, { message: 'REDIS_KEY_PREFIX: up to 64 characters of A-Za-z0-9:_.-' })
  REDIS_KEY_PREFIX: string = 'subscription-service:';

  /** Customers one project may hold (every way of creating one counts); 0 = no limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(2_000_000_000)
  PROJECT_MAX_CUSTOMERS: number = 1_000_000;

  /** Codes one project may hold in all its batches; 0 = no limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(2_000_000_000)
  PROJECT_MAX_CODES: number = 1_000_000;

  /** Code batches one project may create in any hour; 0 = no limit. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(0)
  @Max(1_000_000)
  PROJECT_MAX_CODE_BATCHES_PER_HOUR: number = 100;
  /** Webhook URLs may be http and reach any address (loopback, private): development and tests only. */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_ALLOW_INSECURE_URLS: boolean = false;

  /** Run the webhook delivery worker in this process (every replica runs one by default). */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  WEBHOOK_WORKER_ENABLED: boolean = true;

  /** Run the scheduler that announces windows starting and ending (every replica runs one by default). */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
  EVENTS_SCHEDULER_ENABLED: boolean = true;

  /** Waits between a failed webhook attempt and the next: a list of durations (`ms`, `s`, `m`, `h`, `d`). */
  @IsOptional()
  @Matches(/^\s*\d+(\.\d+)?(ms|s|m|h|d)\s*(,\s*\d+(\.\d+)?(ms|s|m|h|d)\s*)*$/, {
    message: 'WEBHOOK_RETRY_SCHEDULE must be a comma-separated list of durations such as 5s,5m,30m,2h',
  })
  WEBHOOK_RETRY_SCHEDULE: string = '5s,5m,30m,2h,5h,10h,10h';

  /** Time allowed for one webhook POST (connection, answer), in ms. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(100)
  @Max(60_000)
  WEBHOOK_TIMEOUT_MS: number = 10_000;

  /** How often the delivery worker looks for due deliveries, in ms. */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  WEBHOOK_POLL_INTERVAL_MS: number = 1000;

  /** How often the scheduler looks for windows that started or ended, in ms (events come within 5 s at the default). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  EVENTS_SCHEDULER_INTERVAL_MS: number = 1000;

  /**
   * How long before a trial window's end `trial.ending` is told: an ISO 8601 duration
   * (docs/events.md#event-types).
   */
  @IsOptional()
  @ValidateBy({
    name: 'isIsoDuration',
    validator: {
      validate: (value: unknown) => isValidIsoDuration(value),
      defaultMessage: () => 'TRIAL_ENDING_LEAD must be an ISO 8601 duration such as P3D or PT12H',
    },
  })
  TRIAL_ENDING_LEAD: string = 'P3D';

  /**
   * Live usage holds one customer may have of one feature (docs/entitlements.md#holds): one more
   * is `409 HOLD_LIMIT_REACHED`; ended holds free places.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  HOLDS_MAX_LIVE: number = 1000;

  /**
   * How often each replica's sealer gives the committed audit records their seq and hash, in ms
   * (docs/operations.md#audit-log); records are sealed within 5 s at the default.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(10)
  @Max(60_000)
  AUDIT_SEAL_INTERVAL_MS: number = 1000;

  /** Sealed audit records older than this many days (decimals allowed) are deleted. */
  @IsOptional()
  @Transform(toInt)
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  @Max(36_500)
  AUDIT_RETENTION_DAYS: number = 365;

  /** How often each replica deletes audit records past the retention, in ms (the first run at start). */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1000)
  @Max(86_400_000)
  AUDIT_PRUNE_INTERVAL_MS: number = 3_600_000;

  /**
   * Whole months of the usage ledger kept before the current one (docs/operations.md#partitioned-tables):
   * older months' partitions are dropped. Unset: the ledger keeps everything.
   */
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(1200)
  USAGE_RETENTION_MONTHS?: number;

  /** Set by main.ts when it runs the embedded database; not meant to be set by hand. */
  @IsOptional()
  @Transform(toBool)
  @IsBoolean()
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
  if (env.DATABASE_READ_URL && env.DB_READ_MAX_LAG_MS < 2 * env.DB_READ_CHECK_INTERVAL_MS) {
    // a replica's lag is known to one check interval: a smaller bound would refuse every replica
    throw new Error(
      'Invalid configuration:\n  - DB_READ_MAX_LAG_MS: must be at least twice DB_READ_CHECK_INTERVAL_MS',
    );
  }
  if (env.METRICS_PORT && env.METRICS_PORT === env.PORT) {
    throw new Error(
      'Invalid configuration:\n  - METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT)',
    );
  }
  env.RATE_LIMIT_ENABLED ??= env.NODE_ENV === 'production';
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
