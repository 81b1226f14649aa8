/**
 * The bare baseline of the benchmark: `node:http` + `pg`, no framework, no ORM. It answers the two
 * routes the benchmark compares with the service, with the same SQL the service runs:
 *
 *   GET  /api/private/v1/customers/:id   key lookup, then customer + identifiers + credentials
 *   POST /api/private/v1/redemptions     key lookup, then one transaction: lock the code, read the
 *                                        plan, find and lock the customer (by username or another
 *                                        identifier), read the live windows of the group, insert
 *                                        the new window, mark the code redeemed, commit
 *
 * It answers the same envelope (`{ ok, requestId, data }`, `X-Request-Id`). It is a yardstick,
 * not a second implementation: only the paths the benchmark drives are handled (an existing
 * customer; a new window starts now, or after the last live timed window of the group).
 * Started by bench/bench.ts with DATABASE_URL, PORT, HOST and DB_POOL_SIZE (default 10, as the
 * service). Not part of the build or the image.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { Pool, PoolClient } from 'pg';

const pool = new Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DB_POOL_SIZE ?? 10),
  connectionTimeoutMillis: 10000,
  application_name: 'bench-baseline',
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
const CUSTOMER_PATH = /^\/api\/private\/v1\/customers\/([0-9]{1,10})$/;
const MAX_INT4 = 2147483647;

/** The same statement as KeyAuthService.authenticate. */
const KEY_SQL = `SELECT k.id AS key_id, k.enabled, k.signing_secret_enc,
              p.id AS project_id, p.name, p.auto_create_customer_at_redemption AS auto_create,
              p.require_signature
         FROM api_keys k
         LEFT JOIN projects p ON p.id = k.project_id AND p.deleted_at IS NULL
        WHERE k.key_hash = $1 AND k.kind = $2`;

async function authenticate(req: IncomingMessage): Promise<string> {
  const match = BEARER.exec(req.headers.authorization ?? '');
  const key = match?.[1];
  if (!key || !PRIVATE_KEY.test(key)) throw new HttpError(401, 'INVALID_API_KEY');
  const { rows } = await pool.query(KEY_SQL, [createHash('sha256').update(key).digest('hex'), 'private']);
  const row = rows[0];
  if (!row) throw new HttpError(401, 'INVALID_API_KEY');
  if (!row.enabled) throw new HttpError(403, 'API_KEY_DISABLED');
  if (!row.project_id) throw new HttpError(404, 'PROJECT_NOT_FOUND');
  return row.project_id as string;
}

/** The statement TypeORM emits for `find(Customer, { where: { id: In([id]), projectId }, relations: { identifiers, credentials } })`. */
const CUSTOMER_SQL = `SELECT c.id, c.project_id, c.username, c.enabled, c.temporary, c.created_at, c.updated_at,
       i.id AS i_id, i.project_id AS i_project_id, i.customer_id AS i_customer_id, i.type AS i_type, i.value AS i_value,
       i.readonly AS i_readonly, i.created_at AS i_created_at, i.updated_at AS i_updated_at,
       cr.id AS cr_id, cr.customer_id AS cr_customer_id, cr.type AS cr_type, cr.secret_hash AS cr_secret_hash,
       cr.created_at AS cr_created_at, cr.updated_at AS cr_updated_at
  FROM customers c
  LEFT JOIN customer_identifiers i ON i.customer_id = c.id
  LEFT JOIN customer_credentials cr ON cr.customer_id = c.id
 WHERE c.id IN ($1) AND c.project_id = $2`;

async function getCustomer(projectId: string, id: number): Promise<unknown> {
  const { rows } = await pool.query(CUSTOMER_SQL, [id, projectId]);
  if (rows.length === 0) throw new HttpError(404, 'CUSTOMER_NOT_FOUND');
  const c = rows[0];
  const identifiers = new Map<number, unknown>();
  const credentials = new Map<number, unknown>();
  for (const r of rows) {
    if (r.i_id !== null && !identifiers.has(r.i_id)) {
      identifiers.set(r.i_id, {
        id: r.i_id,
        type: r.i_type,
        value: r.i_value,
        readonly: r.i_readonly,
        createdAt: r.i_created_at.toISOString(),
        updatedAt: r.i_updated_at.toISOString(),
      });
    }
    if (r.cr_id !== null && !credentials.has(r.cr_id)) {
      credentials.set(r.cr_id, { id: r.cr_id, type: r.cr_type, createdAt: r.cr_created_at.toISOString() });
    }
  }
  const byId = (m: Map<number, unknown>) => [...m.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
  return {
    id: c.id,
    username: c.username,
    projectId: c.project_id,
    enabled: c.enabled,
    temporary: c.temporary,
    createdAt: c.created_at.toISOString(),
    updatedAt: c.updated_at.toISOString(),
    credentials: byId(credentials),
    identifiers: byId(identifiers),
  };
}

const CODE_SQL = `SELECT id, project_id, batch_id, plan_id, code, duration, status, note, expires_at, redeemed_at,
       redeemed_by_customer_id, created_at, updated_at
  FROM codes WHERE code = $1 AND project_id = $2 LIMIT 1 FOR UPDATE`;
const PLAN_SQL =
  'SELECT id, project_id, slug, name, value, plan_group, created_at, updated_at FROM plans WHERE id = $1 LIMIT 1';
const CUSTOMER_BY_USERNAME_SQL =
  'SELECT id FROM customers WHERE project_id = $1 AND lower(username) = lower($2)';
const CUSTOMER_BY_IDENTIFIER_SQL =
  'SELECT customer_id AS id FROM customer_identifiers WHERE project_id = $1 AND type = $2 AND value = $3';
const LOCK_CUSTOMER_SQL = `SELECT id, project_id, username, enabled, temporary, created_at, updated_at
  FROM customers WHERE id = $1 AND project_id = $2 LIMIT 1 FOR UPDATE`;
const WINDOWS_SQL = `SELECT s.id, s.plan_id, s.source, s.code_id, p.value, s.valid_from, s.valid_to
         FROM subscriptions s JOIN plans p ON p.id = s.plan_id
        WHERE s.customer_id = $1 AND s.plan_group = $2 AND s.status = 'active'
          AND (s.valid_to IS NULL OR s.valid_to > $3)`;
const INSERT_WINDOW_SQL = `INSERT INTO subscriptions (project_id, customer_id, plan_id, plan_group, valid_from, valid_to, status, source, code_id, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, DEFAULT, DEFAULT) RETURNING id, status, created_at, updated_at`;
const MARK_REDEEMED_SQL = `UPDATE codes SET status = $1, redeemed_at = $2, redeemed_by_customer_id = $3, updated_at = $4
  WHERE id = $5 AND project_id = $6 AND status = 'available'`;

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
function addDuration(from: Date, iso: string): Date {
  const m = /^P(\d+)([DWMY])$/.exec(iso);
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

function parseRedeemBody(text: string): RedeemBody {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'MALFORMED_JSON');
  }
  const ok =
    body !== null &&
    typeof body === 'object' &&
    typeof body.code === 'string' &&
    body.code.length >= 1 &&
    body.code.length <= 64 &&
    body.customer !== null &&
    typeof body.customer === 'object' &&
    typeof body.customer.type === 'string' &&
    typeof body.customer.value === 'string' &&
    body.customer.value.length >= 1 &&
    body.customer.value.length <= 128;
  if (!ok) throw new HttpError(400, 'VALIDATION_FAILED');
  return body as RedeemBody;
}

async function redeemOnce(
  client: PoolClient,
  projectId: string,
  code: string,
  ref: RedeemBody['customer'],
): Promise<unknown> {
  const now = new Date();
  await client.query('BEGIN');
  try {
    const codeRow = (await client.query(CODE_SQL, [code, projectId])).rows[0];
    if (!codeRow) throw new HttpError(404, 'CODE_NOT_FOUND');
    if (codeRow.status === 'revoked') throw new HttpError(409, 'CODE_REVOKED');
    if (codeRow.status === 'redeemed') throw new HttpError(409, 'CODE_ALREADY_REDEEMED');
    if (codeRow.expires_at !== null && codeRow.expires_at.getTime() <= now.getTime())
      throw new HttpError(409, 'CODE_EXPIRED');

    const plan = (await client.query(PLAN_SQL, [codeRow.plan_id])).rows[0];
    if (!plan || plan.project_id !== projectId) throw new HttpError(409, 'CUSTOMER_PROJECT_MISMATCH');

    const found =
      ref.type === 'username'
        ? await client.query(CUSTOMER_BY_USERNAME_SQL, [projectId, ref.value])
        : await client.query(CUSTOMER_BY_IDENTIFIER_SQL, [projectId, ref.type, ref.value]);
    if (found.rows.length === 0) throw new HttpError(404, 'CUSTOMER_NOT_FOUND');
    const customer = (await client.query(LOCK_CUSTOMER_SQL, [found.rows[0].id, projectId])).rows[0];
    if (!customer) throw new HttpError(404, 'CUSTOMER_NOT_FOUND');

    const windows = (await client.query(WINDOWS_SQL, [customer.id, plan.plan_group, now])).rows;
    // the new window starts now, or when the last live timed window of the group ends
    let validFrom = now;
    for (const w of windows) if (w.valid_to !== null && w.valid_to > validFrom) validFrom = w.valid_to;
    const validTo = codeRow.duration === null ? null : addDuration(validFrom, codeRow.duration);
    const created = (
      await client.query(INSERT_WINDOW_SQL, [
        projectId,
        customer.id,
        plan.id,
        plan.plan_group,
        validFrom,
        validTo,
        'active',
        'code',
        codeRow.id,
      ])
    ).rows[0];

    const updated = await client.query(MARK_REDEEMED_SQL, [
      'redeemed',
      now,
      customer.id,
      now,
      codeRow.id,
      projectId,
    ]);
    if (updated.rowCount !== 1) throw new HttpError(409, 'CODE_ALREADY_REDEEMED');
    await client.query('COMMIT');
    return {
      customer: { id: customer.id, username: customer.username, created: false },
      subscriptions: [
        {
          id: created.id,
          planId: plan.id,
          planName: plan.name,
          validFrom: validFrom.toISOString(),
          validTo: validTo ? validTo.toISOString() : null,
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
      return await redeemOnce(client, projectId, code, body.customer);
    } catch (error) {
      const pgCode = (error as { code?: string }).code;
      if (!pgCode || !RETRYABLE.has(pgCode) || attempt >= 4) throw error;
    } finally {
      client.release();
    }
    await new Promise((r) => setTimeout(r, 5 * attempt + Math.random() * 20));
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > 1024 * 1024) reject(new HttpError(413, 'PAYLOAD_TOO_LARGE'));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, requestId: string, payload: unknown): void {
  const body = JSON.stringify(payload);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
  });
  res.end(body);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
  try {
    const path = (req.url ?? '/').split('?')[0];
    let data: unknown;
    if (req.method === 'GET' && path === '/readyz') {
      data = { status: 'ok' };
    } else if (req.method === 'GET' && CUSTOMER_PATH.test(path)) {
      const id = Number(CUSTOMER_PATH.exec(path)![1]);
      if (id < 1 || id > MAX_INT4) throw new HttpError(400, 'VALIDATION_FAILED');
      const projectId = await authenticate(req);
      data = await getCustomer(projectId, id);
    } else if (req.method === 'POST' && path === '/api/private/v1/redemptions') {
      const text = await readBody(req);
      const projectId = await authenticate(req);
      data = await redeem(projectId, parseRedeemBody(text));
    } else {
      throw new HttpError(404, 'ROUTE_NOT_FOUND');
    }
    send(res, 200, requestId, { ok: true, requestId, data });
  } catch (error) {
    if (error instanceof HttpError) {
      send(res, error.status, requestId, {
        ok: false,
        requestId,
        error: { code: error.code, message: error.code },
      });
    } else {
      if (!closing)
        process.stderr.write(`baseline: ${error instanceof Error ? error.stack : String(error)}\n`);
      send(res, 500, requestId, {
        ok: false,
        requestId,
        error: { code: 'INTERNAL_ERROR', message: 'internal error' },
      });
    }
  }
}

const server = createServer((req, res) => void handle(req, res));
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT ?? 3100), process.env.HOST ?? '127.0.0.1');
let closing = false;
const stop = () => {
  closing = true;
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
