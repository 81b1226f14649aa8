#!/usr/bin/env node
/**
 * The operator's tool: manages projects and keys straight against the database, the same
 * operations as the admin interface, through `ProjectsService`.
 *
 *   npm run -s cli -- projects:create --name "Acme Notes"   (-s: no npm banner on stdout)
 *   npx subscription-service projects:create --name "Acme Notes"   (the bin, the same launcher)
 *   node dist/cli.js projects:create --name "Acme Notes"   (compiled, e.g. in the container)
 *
 * Results are printed as JSON on stdout, and nothing else is: failures go to stderr as
 * `error: CODE: message` with exit code 1, and so does whatever a library logs.
 */
import 'reflect-metadata';
import { Console } from 'node:console';
import type { INestApplicationContext } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { Command, CommanderError } from 'commander';
import { Client } from 'pg';
import { DomainError } from './common/errors/domain-error';
import { ParseIdPipe } from './common/http/id-param';
import { PageQueryDto } from './common/http/pagination';
import { flattenValidationErrors, validationSummary } from './common/http/validation';
import { loadDotEnv, validateEnv } from './config/env';
import { EMBEDDED_DATA_DIR, embeddedConnection } from './database/embedded';
import {
  CreateApiKeyDto,
  CreateProjectDto,
  UpdateApiKeyDto,
  UpdateProjectDto,
} from './projects/dto/project.dto';
import type { ProjectsService } from './projects/projects.service';

/** An error the CLI reports as `error: CODE: message` (DomainError has the same shape). */
class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const ENVIRONMENT_HELP = `
Environment:
  DATABASE_URL            PostgreSQL connection string of the service's database; unset, run
                          from the project: the embedded database npm start runs (.data/)
  SECRET_ENCRYPTION_KEY   the service's key for signing secrets, 32 bytes as base64 (required,
                          except for "migrate"); must be the one the service runs with
  DB_POOL_SIZE            optional, as for the service
  DATABASE_DIRECT_URL     optional: the server itself when DATABASE_URL goes through a transaction
                          pooler (PgBouncer); "migrate" uses it, as its advisory lock needs a session

Output: the result as JSON on stdout. Errors: "error: CODE: message" on stderr, exit code 1.`;

/** `true`/`false` (also `1`/`0`, `yes`/`no`) become booleans; anything else is left for validation to refuse. */
function parseBoolean(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  return value;
}

/** `--scopes a,b` as the list the admin interface takes (`""` is an empty list, refused by validation). */
function parseScopes(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
}

/** `--expires-at <t>` as the admin interface takes it; `none` is null (never, clearing an expiry). */
const parseExpiry = (value: string | undefined): unknown =>
  value !== undefined && value.trim().toLowerCase() === 'none' ? null : value;

/** Drops undefined fields, so that an option not given is a field not sent. */
function defined(plain: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(plain).filter(([, v]) => v !== undefined));
}

/** Builds a DTO as the HTTP validation pipe would, and refuses it the same way (VALIDATION_FAILED). */
async function toDto<T extends object>(cls: new () => T, plain: Record<string, unknown>): Promise<T> {
  const dto = plainToInstance(cls, defined(plain), { enableImplicitConversion: false });
  const errors = await validate(dto, {
    whitelist: true,
    forbidNonWhitelisted: true,
    stopAtFirstError: false,
  });
  if (errors.length > 0) {
    const details = flattenValidationErrors(errors);
    throw new DomainError('VALIDATION_FAILED', validationSummary(details), details);
  }
  return dto;
}

/** A numeric key id, checked by the same pipe as the admin interface's path parameter. */
const toKeyId = (value: string): number =>
  new ParseIdPipe().transform(value, { type: 'param', data: 'keyId' });

/** Where a run reads its environment and writes its output: the process, or a test's buffers. */
export interface CliIo {
  env: Record<string, string | undefined>;
  /**
   * With no DATABASE_URL, use the embedded database `npm start` runs with its data here (`.data`
   * when run from the project; tests leave it out).
   */
  embeddedDataDir?: string;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Checks the environment this command needs before anything connects. */
function requireEnv(
  env: CliIo['env'],
  names: Array<'DATABASE_URL' | 'SECRET_ENCRYPTION_KEY'>,
  embeddedDataDir?: string,
): void {
  if (!env.DATABASE_URL && env.NODE_ENV !== 'production' && embeddedDataDir) {
    // Run from the project: the embedded database that `npm start` is running, found through .data/
    let embedded: ReturnType<typeof embeddedConnection>;
    try {
      embedded = embeddedConnection(embeddedDataDir);
    } catch (error) {
      throw new CliError('INVALID_CONFIGURATION', (error as Error).message);
    }
    if (embedded) {
      env.DATABASE_URL = embedded.url;
      if (embedded.secretKey) env.SECRET_ENCRYPTION_KEY ??= embedded.secretKey;
    }
  }
  const missing = names.filter((n) => !env[n]);
  if (missing.length > 0) {
    throw new CliError('INVALID_CONFIGURATION', `${missing.join(' and ')} must be set (see --help)`);
  }
  if (names.includes('SECRET_ENCRYPTION_KEY')) {
    try {
      validateEnv(env);
    } catch (error) {
      throw new CliError('INVALID_CONFIGURATION', (error as Error).message);
    }
  }
}

/** Fails fast on an unreachable database (the Nest TypeORM module would retry for half a minute). */
async function checkDatabase(url: string): Promise<void> {
  const client = new Client({
    connectionString: url,
    connectionTimeoutMillis: 10000,
    application_name: 'subscription-service-cli',
  });
  try {
    await client.connect();
  } catch (error) {
    throw new CliError('DATABASE_UNAVAILABLE', `cannot connect to DATABASE_URL: ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs `fn` with `ProjectsService` from a Nest application context, closed afterwards. */
async function withProjects<T>(
  env: CliIo['env'],
  fn: (projects: ProjectsService) => Promise<T>,
  embeddedDataDir?: string,
): Promise<T> {
  requireEnv(env, ['DATABASE_URL', 'SECRET_ENCRYPTION_KEY'], embeddedDataDir);
  await checkDatabase(env.DATABASE_URL!);
  // Loaded only now: the whole application is slow to load, and --help or a refused input needs none of it.
  const [{ NestFactory }, { AppModule }, { ProjectsService }, { ClsService }, { AUDIT_CONTEXT, CLI }] =
    await Promise.all([
      import('@nestjs/core'),
      import('./app.module'),
      import('./projects/projects.service'),
      import('nestjs-cls'),
      import('./audit/audit-context'),
    ]);
  let app: INestApplicationContext | undefined;
  try {
    app = await NestFactory.createApplicationContext(AppModule.forRoot({ env }), {
      logger: false,
      abortOnError: false,
    });
    // what the CLI changes is the operator's doing: its audit records name the `cli`
    const cls = app.get(ClsService);
    const projects = app.get(ProjectsService);
    return await cls.run(() => {
      cls.set(AUDIT_CONTEXT, CLI);
      return fn(projects);
    });
  } finally {
    await app?.close();
  }
}

function reportError(io: Pick<CliIo, 'stderr'>, error: unknown): void {
  if (error instanceof DomainError || error instanceof CliError) {
    io.stderr(`error: ${error.code}: ${error.message}\n`);
    const details = error instanceof DomainError ? (error.details ?? []) : [];
    for (const d of details) io.stderr(`  - ${d.field}: ${d.message}\n`);
  } else {
    const message = error instanceof Error ? error.message : JSON.stringify(error);
    const hint = /relation ".*" does not exist/.test(message)
      ? ' (are the migrations applied? see the migrate command)'
      : '';
    io.stderr(`error: INTERNAL_ERROR: ${message}${hint}\n`);
  }
}

/**
 * The CLI as a commander program writing to `io`. `exit.code` is the exit status of the command
 * that ran (0, or 1 with the error on stderr).
 */
export function buildProgram(
  io: CliIo,
  exit: { code: number } = { code: 0 },
  options: { throwInsteadOfExit?: boolean } = {},
): Command {
  /** Wraps an action: prints its result, or the error with exit code 1. */
  const run =
    <A extends unknown[]>(action: (...args: A) => Promise<unknown>) =>
    async (...args: A): Promise<void> => {
      try {
        io.stdout(JSON.stringify(await action(...args), null, 2) + '\n');
        exit.code = 0;
      } catch (error) {
        reportError(io, error);
        exit.code = 1;
      }
    };
  const projectsDo = <T>(fn: (projects: ProjectsService) => Promise<T>) =>
    withProjects(io.env, fn, io.embeddedDataDir);

  const program = new Command();
  program.configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  // Inherited by the commands made below: commander throws a CommanderError instead of exiting.
  if (options.throwInsteadOfExit) program.exitOverride();
  program
    .name('subscription-service')
    .description(
      'Operator tool of the subscription service: projects, API keys and migrations, straight against the database.',
    )
    .addHelpText('after', ENVIRONMENT_HELP)
    .showHelpAfterError('(run with --help for usage)');

  program
    .command('projects:create')
    .description('Create a project')
    .requiredOption('--name <name>', 'project name (1 to 200 characters)')
    .option(
      '--auto-create-customer',
      'redemption may create a missing customer (autoCreateCustomerAtRedemption)',
    )
    .option('--require-signature', 'public requests must be signed (requireSignature)')
    .action(
      run(async (opts: { name: string; autoCreateCustomer?: boolean; requireSignature?: boolean }) => {
        const dto = await toDto(CreateProjectDto, {
          name: opts.name,
          autoCreateCustomerAtRedemption: opts.autoCreateCustomer ?? false,
          requireSignature: opts.requireSignature ?? false,
        });
        return projectsDo((projects) => projects.create(dto));
      }),
    );

  program
    .command('projects:list')
    .description('List projects, newest first (a page object)')
    .option('--page <n>', 'page number, from 1')
    .option('--page-size <n>', 'items per page, 1 to 100 (default 10)')
    .option('--search <text>', 'case-insensitive substring of the name')
    .action(
      run(async (opts: { page?: string; pageSize?: string; search?: string }) => {
        const query = await toDto(PageQueryDto, {
          page: opts.page,
          pageSize: opts.pageSize,
          search: opts.search,
        });
        return projectsDo((projects) => projects.list(query));
      }),
    );

  program
    .command('projects:get')
    .description('Show one project')
    .argument('<projectId>')
    .action(run(async (projectId: string) => projectsDo((projects) => projects.get(projectId))));

  program
    .command('projects:update')
    .description("Change a project's name or settings")
    .argument('<projectId>')
    .option('--name <name>', 'new name')
    .option('--auto-create-customer <bool>', 'true or false')
    .option('--require-signature <bool>', 'true or false')
    .action(
      run(
        async (
          projectId: string,
          opts: { name?: string; autoCreateCustomer?: string; requireSignature?: string },
        ) => {
          const dto = await toDto(UpdateProjectDto, {
            name: opts.name,
            autoCreateCustomerAtRedemption: parseBoolean(opts.autoCreateCustomer),
            requireSignature: parseBoolean(opts.requireSignature),
          });
          return projectsDo((projects) => projects.update(projectId, dto));
        },
      ),
    );

  program
    .command('projects:delete')
    .description('Delete a project; its keys then answer 404 PROJECT_NOT_FOUND')
    .argument('<projectId>')
    .action(run(async (projectId: string) => projectsDo((projects) => projects.remove(projectId))));

  program
    .command('keys:create')
    .description("Create a key; the key (and a public key's signing secret) is shown only this once")
    .argument('<projectId>')
    .requiredOption('--kind <kind>', 'private or public')
    .option('--name <name>', 'a label for the key (at most 100 characters)')
    .option(
      '--scopes <names>',
      'private keys: scopes separated by commas, such as customers:read,usage:write (default *: all)',
    )
    .option(
      '--expires-at <time>',
      'when the key stops working: a date-time with Z or an offset, or a date (UTC midnight)',
    )
    .action(
      run(
        async (
          projectId: string,
          opts: { kind: string; name?: string; scopes?: string; expiresAt?: string },
        ) => {
          const dto = await toDto(CreateApiKeyDto, {
            kind: opts.kind,
            name: opts.name,
            scopes: parseScopes(opts.scopes),
            expiresAt: parseExpiry(opts.expiresAt),
          });
          return projectsDo((projects) => projects.createKey(projectId, dto));
        },
      ),
    );

  program
    .command('keys:list')
    .description("List a project's keys, without secrets")
    .argument('<projectId>')
    .action(run(async (projectId: string) => projectsDo((projects) => projects.listKeys(projectId))));

  program
    .command('keys:update')
    .description("Enable, disable or rename a key, or change a private key's scopes or a key's expiry")
    .argument('<projectId>')
    .argument('<keyId>')
    .option('--enabled <bool>', 'true or false')
    .option('--name <name>', 'new label')
    .option('--scopes <names>', 'private keys: the new scopes, separated by commas (* for all)')
    .option('--expires-at <time>', 'a new expiry (a date-time with Z or an offset, or a date), or none')
    .action(
      run(
        async (
          projectId: string,
          keyId: string,
          opts: { enabled?: string; name?: string; scopes?: string; expiresAt?: string },
        ) => {
          const id = toKeyId(keyId);
          const dto = await toDto(UpdateApiKeyDto, {
            enabled: parseBoolean(opts.enabled),
            name: opts.name,
            scopes: parseScopes(opts.scopes),
            expiresAt: parseExpiry(opts.expiresAt),
          });
          return projectsDo((projects) => projects.updateKey(projectId, id, dto));
        },
      ),
    );

  program
    .command('keys:delete')
    .description('Delete a key')
    .argument('<projectId>')
    .argument('<keyId>')
    .action(
      run(async (projectId: string, keyId: string) => {
        const id = toKeyId(keyId);
        return projectsDo((projects) => projects.removeKey(projectId, id));
      }),
    );

  program
    .command('migrate')
    .description(
      'Apply pending migrations under the advisory lock (safe beside starting replicas); needs DATABASE_URL only (DATABASE_DIRECT_URL instead when set)',
    )
    .action(
      run(async () => {
        // the advisory lock is a session's: through a transaction pooler use the server itself
        if (!io.env.DATABASE_DIRECT_URL) requireEnv(io.env, ['DATABASE_URL'], io.embeddedDataDir);
        const url = (io.env.DATABASE_DIRECT_URL || io.env.DATABASE_URL)!;
        await checkDatabase(url);
        const { migrateWithLock } = await import('./database/migrator');
        const applied = await migrateWithLock(url, (msg) => io.stderr(`${msg}\n`));
        return { applied };
      }),
    );

  return program;
}

/**
 * Runs one command line (without `node cli.js`) and answers its exit status; what commander
 * would exit with (--help, an unknown option) is answered too instead of ending the process.
 */
export async function runCli(args: string[], io: CliIo): Promise<number> {
  const exit = { code: 0 };
  const program = buildProgram(io, exit, { throwInsteadOfExit: true });
  try {
    await program.parseAsync(args, { from: 'user' });
    return exit.code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    reportError(io, error);
    return 1;
  }
}

if (require.main === module) {
  // stdout carries the result only, so that it can be piped into a JSON parser: whatever else
  // writes there goes to stderr. That is console.* of any library, and the service's own logger
  // (pino), which writes through process.stdout.write once that has been replaced.
  const writeResult = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const toStderr = new Console({ stdout: process.stderr, stderr: process.stderr });
  for (const method of ['log', 'info', 'warn', 'debug', 'trace'] as const)
    console[method] = toStderr[method].bind(toStderr);

  loadDotEnv();
  const io: CliIo = {
    env: process.env,
    embeddedDataDir: EMBEDDED_DATA_DIR,
    stdout: (text) => writeResult(text),
    stderr: (text) => process.stderr.write(text),
  };
  const exit = { code: 0 };
  buildProgram(io, exit)
    .parseAsync(process.argv)
    .then(() => {
      // Leave once the output is flushed, whatever handles a library may have left open.
      writeResult('', () => process.exit(exit.code));
    })
    .catch((error: unknown) => {
      reportError(io, error);
      process.exit(1);
    });
}
