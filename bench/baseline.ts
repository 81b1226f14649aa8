/**
 * The baselines of the benchmark: the leanest handlers of the same work as the service, on
 * `node:http` (BASELINE_KIND=http) or on Express (BASELINE_KIND=express), with `pg` and no ORM,
 * and (BASELINE_KIND=nest) the same handlers in a bare Nest application, the floor of Nest itself.
 * Each is served the usual way (`createServer(app)` for Express), with no patched prototypes.
 * They answer the two routes the benchmark compares with the service:
 *
 *   GET  /api/private/v1/customers/:id   the key (cached after its first lookup), then one
 *                                        statement: the customer record with identifiers and
 *                                        credentials aggregated as JSON
 *   POST /api/private/v1/redemptions     the key, then one transaction: START TRANSACTION; the code
 *                                        and the customer locked and the code marked redeemed in
 *                                        one statement; the customer's live chain in the plan's
 *                                        group; the new window inserted; its two events
 *                                        (`subscriptions.changed`, `code.redeemed`) inserted
 *                                        in one statement, as the service does; COMMIT
 *
 * The statements are the service's own: bench/bench.ts takes their text from the built service
 * (dist/) and hands it over in the file STATEMENTS_FILE, and they run as the same named prepared
 * statements (the key lookup unprepared, as the service runs it). The key is remembered for
 * API_KEY_CACHE_TTL_MS (the service's default, 5 s). Answers carry the same envelope
 * (`{ ok, requestId, data }`) and the same headers: `X-Request-Id` and the security headers that
 * helmet writes for the API (as constants), no ETag, no `X-Powered-By`.
 *
 * A yardstick, not a second implementation: only what the benchmark drives is handled (an
 * existing customer; a new window starts now, or after the last live timed window of the group).
 * Started by bench/bench.ts with DATABASE_URL, PORT, HOST, DB_POOL_SIZE, DB_POOL_IDLE_MS and STATEMENTS_FILE.
 * Not part of the build or the image.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Pool, PoolClient } from 'pg';

/** What bench.ts writes to STATEMENTS_FILE: the service's SQL text. */
export interface BaselineStatements {
  apiKeyLookup: string;
  customerRecord: { name: string; text: string };
  /** the code and a customer by username locked, the code marked */
  lockCodeByUsername: { name: string; text: string };
  /** the same with a customer by id (pgbench, which cannot build usernames) */
  lockCodeById: { name: string; text: string };
  liveChain: { name: string; text: string };
  insertWindow: { name: string; text: string };
  /** the events of a redemption (`subscriptions.changed`, `code.redeemed`), with their deliveries */
  insertEvents: { name: string; text: string };
}

const KIND = (['express', 'nest'] as const).find((k) => k === process.env.BASELINE_KIND) ?? 'http';
const SQL: BaselineStatements = JSON.parse(readFileSync(process.env.STATEMENTS_FILE!, 'utf8'));
const KEY_CACHE_TTL_MS = Number(process.env.API_KEY_CACHE_TTL_MS ?? 5000);

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DB_POOL_SIZE ?? 10),
  idleTimeoutMillis: Number(process.env.DB_POOL_IDLE_MS ?? 300_000),
  connectionTimeoutMillis: 10000,
  application_name: `bench-baseline-${KIND}`,
});

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const PRIVATE_KEY = /^sk_[A-Za-z0-9]{40}$/;
const BEARER = /^Bearer\s+(\S+)\s*$/i;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ID = /^[0-9]{1,10}$/;
const MAX_INT4 = 2147483647;

/** The headers helmet writes on every API answer of the service (configure-app.ts). */
const SECURITY_HEADERS: Record<string, string> = {
  // every API answer of the service is `no-store` (secrets are never cacheable)
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-dns-prefetch-control': 'off',
  'x-download-options': 'noopen',
  'x-frame-options': 'SAMEORIGIN',
  'x-permitted-cross-domain-policies': 'none',
  'x-xss-protection': '0',
};

const keyCache = new Map<string, { projectId: string; until: number }>();

/** The key's project: from the cache, or the service's lookup statement (then cached). */
async function authenticate(authorization: string | undefined): Promise<string> {
  const key = BEARER.exec(authorization ?? '')?.[1];
  if (!key || !PRIVATE_KEY.test(key)) throw new HttpError(401, 'INVALID_API_KEY');
  const hash = createHash('sha256').update(key).digest('hex');
  const now = Date.now();
  const cached = keyCache.get(hash);
  if (cached && cached.until > now) return cached.projectId;
  const { rows } = await pool.query(SQL.apiKeyLookup, [hash, 'private']);
  const row = rows[0];
  if (!row) throw new HttpError(401, 'INVALID_API_KEY');
  if (!row.enabled) throw new HttpError(403, 'API_KEY_DISABLED');
  if (!row.project_id) throw new HttpError(404, 'PROJECT_NOT_FOUND');
  keyCache.set(hash, { projectId: row.project_id, until: now + KEY_CACHE_TTL_MS });
  return row.project_id as string;
}

const iso = (value: string | Date) => new Date(value).toISOString();
const byId = <T extends { id: number }>(items: T[]) => [...items].sort((a, b) => a.id - b.id);

async function getCustomer(projectId: string, rawId: string): Promise<unknown> {
  const id = ID.test(rawId) ? Number(rawId) : NaN;
  if (!(id >= 1 && id <= MAX_INT4)) throw new HttpError(400, 'VALIDATION_FAILED');
  const { rows } = await pool.query({ ...SQL.customerRecord, values: [id, projectId] });
  const c = rows[0];
  if (!c) throw new HttpError(404, 'CUSTOMER_NOT_FOUND');
  return {
    id: c.id,
    username: c.username,
    projectId: c.project_id,
    enabled: c.enabled,
    temporary: c.temporary,
    timeZone: c.time_zone,
    createdAt: iso(c.created_at),
    updatedAt: iso(c.updated_at),
    credentials: byId(c.credentials as Array<{ id: number; type: number; created_at: string }>).map((k) => ({
      id: k.id,
      type: k.type,
      createdAt: iso(k.created_at),
    })),
    identifiers: byId(
      c.identifiers as Array<{
        id: number;
        type: string;
        value: string;
        readonly: boolean;
        created_at: string;
        updated_at: string;
      }>,
    ).map((i) => ({
      id: i.id,
      type: i.type,
      value: i.value,
      readonly: i.readonly,
      createdAt: iso(i.created_at),
      updatedAt: iso(i.updated_at),
    })),
  };
}

/** The service's own id draws, from the built service (`common/crypto/random.ts`). */
const { randomBase32Lower, timeOrderedUuid } = require(`${process.env.SERVICE_DIST}/common/crypto/random.js`);

/** An event id as the service makes them (`newEventId`): `evt_` and 24 random base32 characters. */
const eventId = (): string => `evt_${randomBase32Lower(24)}`;

/** A stored code as the service shows it (code-format.ts): groups of four. */
function formatCode(stored: string): string {
  return stored.match(/.{1,4}/g)!.join('-');
}

/** The normalisation of code-format.ts: case, spaces and dashes ignored; O reads as 0, I and L as 1. */
function normaliseCode(raw: string): string | null {
  if (raw.length > 64) return null;
  const s = raw
    .replace(/[\s-]+/g, '')
    .toUpperCase()
    .replace(/O/g, '0')
    .replace(/[IL]/g, '1');
  return /^[0-9A-HJKMNP-TV-Z]{16}$/.test(s) ? s : null;
}

/** `PnD`, `PnW`, `PnM`, `PnY` (the forms the benchmark uses); anything else is refused. */
function addDuration(from: Date, duration: string): Date {
  const m = /^P(\d+)([DWMY])$/.exec(duration);
  if (!m) throw new HttpError(400, 'VALIDATION_FAILED');
  const n = Number(m[1]);
  const d = new Date(from.getTime());
  if (m[2] === 'D') d.setUTCDate(d.getUTCDate() + n);
  else if (m[2] === 'W') d.setUTCDate(d.getUTCDate() + 7 * n);
  else if (m[2] === 'M') d.setUTCMonth(d.getUTCMonth() + n);
  else d.setUTCFullYear(d.getUTCFullYear() + n);
  return d;
}

interface RedeemBody {
  code: string;
  customer: { type: string; value: string };
}

function checkRedeemBody(body: any): RedeemBody {
  const ok =
    body !== null &&
    typeof body === 'object' &&
    typeof body.code === 'string' &&
    body.code.length >= 1 &&
    body.code.length <= 64 &&
    body.customer !== null &&
    typeof body.customer === 'object' &&
    body.customer.type === 'username' &&
    typeof body.customer.value === 'string' &&
    body.customer.value.length >= 1 &&
    body.customer.value.length <= 128;
  if (!ok) throw new HttpError(400, 'VALIDATION_FAILED');
  return body as RedeemBody;
}

async function redeemOnce(client: PoolClient, projectId: string, code: string, username: string) {
  await client.query('START TRANSACTION');
  try {
    const now = new Date();
    const [row] = (
      await client.query({ ...SQL.lockCodeByUsername, values: [projectId, username, code, now, code] })
    ).rows;
    if (row.id === null) throw new HttpError(404, 'CODE_NOT_FOUND');
    if (row.status === 'revoked') throw new HttpError(409, 'CODE_REVOKED');
    if (row.expires_at !== null && row.expires_at.getTime() <= now.getTime())
      throw new HttpError(409, 'CODE_EXPIRED');
    if (row.status === 'redeemed') throw new HttpError(409, 'CODE_ALREADY_REDEEMED');
    if (row.plan_project_id !== projectId) throw new HttpError(409, 'CUSTOMER_PROJECT_MISMATCH');
    if (row.customer_id === null) throw new HttpError(404, 'CUSTOMER_NOT_FOUND');
    const at = new Date(Math.max(now.getTime(), Date.now()));
    const chain = (
      await client.query({ ...SQL.liveChain, values: [row.customer_id, row.plan_group, at, projectId] })
    ).rows;
    // the new window starts now, or when the last live timed window of the group ends
    let validFrom = at;
    for (const w of chain) if (w.valid_to !== null && w.valid_to > validFrom) validFrom = w.valid_to;
    const validTo = row.duration === null ? null : addDuration(validFrom, row.duration);
    const [created] = (
      await client.query({
        ...SQL.insertWindow,
        values: [
          projectId,
          row.customer_id,
          row.plan_id,
          row.plan_group,
          validFrom,
          validTo,
          'code',
          row.id,
          at,
        ],
      })
    ).rows;
    const customer = { id: row.customer_id, username: row.customer_username };
    const window = {
      id: created.id,
      planId: row.plan_id,
      planName: row.plan_name,
      group: row.plan_group,
      validFrom: validFrom.toISOString(),
      validTo: validTo ? validTo.toISOString() : null,
      status: 'active',
      source: 'code',
      codeId: row.id,
      trial: false,
    };
    const codeView = {
      id: row.id,
      kind: 'batch',
      code: formatCode(row.code),
      planId: row.plan_id,
      planName: row.plan_name,
      duration: row.duration,
      permanent: row.duration === null,
      status: 'redeemed',
      batchId: row.batch_id,
      note: row.note,
      expiresAt: row.expires_at ? row.expires_at.toISOString() : null,
      redeemedAt: at.toISOString(),
      redeemedByCustomerId: row.customer_id,
      createdAt: row.created_at.toISOString(),
      updatedAt: at.toISOString(),
    };
    const events = [
      {
        id: eventId(),
        type: 'subscriptions.changed',
        data: {
          customer,
          source: 'code',
          codeId: row.id,
          created: [window],
          ended: [],
          cancelled: [],
          moved: [],
        },
      },
      { id: eventId(), type: 'code.redeemed', data: { code: codeView, customer } },
    ];
    await client.query({
      ...SQL.insertEvents,
      values: [projectId, row.customer_id, events.length, JSON.stringify(events)],
    });
    await client.query('COMMIT');
    return {
      customer: { id: row.customer_id, username: row.customer_username, created: false },
      subscriptions: [
        {
          id: created.id,
          planId: row.plan_id,
          planName: row.plan_name,
          validFrom: validFrom.toISOString(),
          validTo: validTo ? validTo.toISOString() : null,
          trial: false,
        },
      ],
    };
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

const RETRYABLE = new Set(['40001', '40P01']);

async function redeem(projectId: string, body: RedeemBody): Promise<unknown> {
  const code = normaliseCode(body.code);
  if (code === null) throw new HttpError(404, 'CODE_NOT_FOUND');
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      return await redeemOnce(client, projectId, code, body.customer.value);
    } catch (error) {
      const pgCode = (error as { code?: string }).code;
      if (!pgCode || !RETRYABLE.has(pgCode) || attempt >= 4) throw error;
    } finally {
      client.release();
    }
    await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20));
  }
}

function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : timeOrderedUuid();
}

function send(res: ServerResponse, status: number, requestId: string, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'x-request-id': requestId,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function sendError(res: ServerResponse, requestId: string, error: unknown): void {
  if (error instanceof HttpError) {
    send(res, error.status, requestId, {
      ok: false,
      requestId,
      error: { code: error.code, message: error.code },
    });
    return;
  }
  if (!closing) process.stderr.write(`baseline: ${error instanceof Error ? error.stack : String(error)}\n`);
  send(res, 500, requestId, {
    ok: false,
    requestId,
    error: { code: 'INTERNAL_ERROR', message: 'internal error' },
  });
}

/** Runs `work` and answers its result in the envelope, or the error. */
async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  work: (requestId: string) => Promise<unknown>,
): Promise<void> {
  const requestId = requestIdOf(req);
  try {
    const data = await work(requestId);
    send(res, 200, requestId, { ok: true, requestId, data });
  } catch (error) {
    sendError(res, requestId, error);
  }
}

// ---------------------------------------------------------------------------------------------
// node:http: the routes matched by hand, the body read and parsed here

const CUSTOMER_PATH = /^\/api\/private\/v1\/customers\/([^/?]+)$/;

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 1024 * 1024) reject(new HttpError(413, 'PAYLOAD_TOO_LARGE'));
      else chunks.push(c);
    });
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'MALFORMED_JSON'));
      }
    });
    req.on('error', reject);
  });
}

function httpHandler(req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?', 1)[0];
  if (req.method === 'GET' && path === '/readyz') {
    void answer(req, res, async () => ({ status: 'ok' }));
    return;
  }
  const match = req.method === 'GET' ? CUSTOMER_PATH.exec(path) : null;
  if (match) {
    void answer(req, res, async () => getCustomer(await authenticate(req.headers.authorization), match[1]));
  } else if (req.method === 'POST' && path === '/api/private/v1/redemptions') {
    void answer(req, res, async () => {
      const body = await readJson(req);
      return redeem(await authenticate(req.headers.authorization), checkRedeemBody(body));
    });
  } else {
    void answer(req, res, async () => {
      throw new HttpError(404, 'ROUTE_NOT_FOUND');
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Express: its router and its JSON body parser, the same handlers

function expressHandler(): import('express').Express {
  const express = require('express');
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.get(
    '/readyz',
    (req: IncomingMessage, res: ServerResponse) => void answer(req, res, async () => ({ status: 'ok' })),
  );
  app.get(
    '/api/private/v1/customers/:id',
    (req: IncomingMessage & { params: { id: string } }, res: ServerResponse) =>
      void answer(req, res, async () =>
        getCustomer(await authenticate(req.headers.authorization), req.params.id),
      ),
  );
  app.post(
    '/api/private/v1/redemptions',
    express.json({ limit: 1024 * 1024 }),
    (req: IncomingMessage & { body: unknown }, res: ServerResponse) =>
      void answer(req, res, async () =>
        redeem(await authenticate(req.headers.authorization), checkRedeemBody(req.body)),
      ),
  );
  app.use((req: IncomingMessage, res: ServerResponse) =>
    answer(req, res, async () => {
      throw new HttpError(404, 'ROUTE_NOT_FOUND');
    }),
  );
  app.use((error: unknown, req: IncomingMessage, res: ServerResponse, _next: unknown) =>
    sendError(
      res,
      requestIdOf(req),
      (error as { type?: string }).type ? new HttpError(400, 'MALFORMED_JSON') : error,
    ),
  );
  return app;
}

// ---------------------------------------------------------------------------------------------
// Nest (BASELINE_KIND=nest, the benchmark's BENCH_NEST_FLOOR): the same handlers as the only
// routes of a bare Nest application on Express: no middleware, guard, pipe, interceptor or filter
// of the service's. What Nest itself costs on top of Express: the floor of any service built on it.

async function nestServer(): Promise<import('node:http').Server> {
  require('reflect-metadata');
  const {
    Controller,
    Get,
    HttpCode,
    HttpException,
    Module,
    Param,
    Post,
    Req,
    Res,
  } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  const { ExpressAdapter } = require('@nestjs/platform-express');
  const express = require('express');
  type Req = IncomingMessage & { body?: unknown };
  /** The answer as `answer()` writes it, returned to Nest as the handler's result. */
  const handle = async (req: Req, res: ServerResponse, work: () => Promise<unknown>) => {
    const requestId = requestIdOf(req);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
    res.setHeader('x-request-id', requestId);
    try {
      return { ok: true, requestId, data: await work() };
    } catch (error) {
      // Nest's own filter writes an HttpException's object as the body
      const status = error instanceof HttpError ? error.status : 500;
      const code = error instanceof HttpError ? error.code : 'INTERNAL_ERROR';
      throw new HttpException({ ok: false, requestId, error: { code, message: code } }, status);
    }
  };
  class Routes {
    ready() {
      return { ok: true, data: { status: 'ok' } };
    }
    customer(req: Req, res: ServerResponse, id: string) {
      return handle(req, res, async () => getCustomer(await authenticate(req.headers.authorization), id));
    }
    redeem(req: Req, res: ServerResponse) {
      return handle(req, res, async () =>
        redeem(await authenticate(req.headers.authorization), checkRedeemBody(req.body)),
      );
    }
  }
  // the decorators, applied by hand (this file is transpiled without decorator support)
  const method = (name: keyof Routes, ...decorators: Array<(...a: unknown[]) => void>) =>
    decorators.forEach((d) =>
      d(Routes.prototype, name, Object.getOwnPropertyDescriptor(Routes.prototype, name)),
    );
  const param = (name: keyof Routes, index: number, decorator: (...a: unknown[]) => void) =>
    decorator(Routes.prototype, name, index);
  method('ready', Get('/readyz'));
  method('customer', Get('/api/private/v1/customers/:id'));
  param('customer', 0, Req());
  param('customer', 1, Res({ passthrough: true }));
  param('customer', 2, Param('id'));
  method('redeem', Post('/api/private/v1/redemptions'), HttpCode(200));
  param('redeem', 0, Req());
  param('redeem', 1, Res({ passthrough: true }));
  Controller()(Routes);
  class App {}
  Module({ controllers: [Routes] })(App);
  const instance = express();
  instance.disable('x-powered-by');
  instance.set('etag', false);
  instance.use(express.json({ limit: 1024 * 1024 }));
  const app = await NestFactory.create(App, new ExpressAdapter(instance), {
    logger: false,
    bodyParser: false,
  });
  await app.init();
  return createServer(instance);
}

let server: import('node:http').Server;
let closing = false;
const stop = () => {
  closing = true;
  server?.close();
  server?.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
};
void (
  KIND === 'nest'
    ? nestServer()
    : Promise.resolve(createServer(KIND === 'express' ? expressHandler() : httpHandler))
).then((s) => {
  server = s;
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT ?? 3100), process.env.HOST ?? '127.0.0.1');
});
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
