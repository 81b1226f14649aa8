import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { ADMIN_TOKEN } from './support/app';
import { createTestDatabase } from './support/database';
import { freePort } from './support/ports';

/**
 * Graceful shutdown of the real process (main.ts, run with ts-node): requests in flight when
 * SIGTERM arrives are answered, new connections are refused at once, the process exits 0.
 *
 * To hold requests in flight for as long as the test needs, the test takes an EXCLUSIVE lock on
 * `projects`: every `POST /api/admin/v1/projects` then waits inside the database until the lock
 * is released, after SIGTERM.
 */

const REQUESTS = 40;
const GRACE_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status?: number;
  keepAlive?: string;
  error?: string;
}

function send(
  port: number,
  agent: Agent | false,
  method: string,
  path: string,
  body?: object,
): Promise<Answer> {
  return new Promise((resolveAnswer) => {
    const payload = body ? JSON.stringify(body) : undefined;
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent,
        headers: {
          Authorization: `Bearer ${ADMIN_TOKEN}`,
          ...(payload
            ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolveAnswer({
            status: res.statusCode,
            ...(agent ? { keepAlive: String(res.headers['keep-alive']) } : {}),
          }),
        );
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolveAnswer({ error: error.code ?? error.message }));
    req.end(payload);
  });
}

/** Does a new TCP connection to the port succeed? ('refused' when nothing listens.) */
const tryConnect = (port: number) =>
  new Promise<'connected' | 'refused' | string>((resolveTry) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolveTry('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      resolveTry(error.code === 'ECONNREFUSED' ? 'refused' : String(error.code)),
    );
  });

async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('graceful shutdown of the real process', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let child: ChildProcess | undefined;
  let output = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await db?.drop();
  });

  it('answers every request in flight at SIGTERM, refuses new connections, closes keep-alive connections and exits 0', async () => {
    db = await createTestDatabase();
    const port = await freePort();
    child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: resolve(__dirname, '..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: db.url,
        SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
        ADMIN_TOKEN,
        PORT: String(port),
        HOST: '127.0.0.1',
        DB_MIGRATE_ON_START: 'false',
        DB_POOL_SIZE: String(REQUESTS + 5),
        LOG_LEVEL: 'info',
        SHUTDOWN_TIMEOUT_MS: String(GRACE_MS),
        // the requests wait on the test's lock for as long as it takes: no statement timeout then
        DB_STATEMENT_TIMEOUT_MS: '120000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    exited = new Promise((resolveExit) =>
      child!.once('exit', (code, signal) => resolveExit({ code, signal, at: Date.now() })),
    );
    const running = () => child!.exitCode === null && child!.signalCode === null;

    try {
      await waitFor(
        'the service to be ready',
        async () => {
          if (!running()) throw new Error('the service exited during start-up');
          return (await send(port, false, 'GET', '/readyz')).status === 200;
        },
        60_000,
      );

      // KEEP_ALIVE_TIMEOUT_MS (65 s by default) is applied to the server and announced
      const probe = new Agent({ keepAlive: true });
      expect(await send(port, probe, 'GET', '/healthz')).toEqual({ status: 200, keepAlive: 'timeout=65' });
      probe.destroy();

      const lock = new Client({ connectionString: db.url });
      const monitor = new Client({ connectionString: db.url });
      await lock.connect();
      await monitor.connect();
      try {
        await lock.query('BEGIN');
        await lock.query('LOCK TABLE projects IN EXCLUSIVE MODE');

        const agent = new Agent({ keepAlive: true, maxSockets: REQUESTS });
        const answers = Array.from({ length: REQUESTS }, (_, i) =>
          send(port, agent, 'POST', '/api/admin/v1/projects', { name: `Shutdown ${i}` }),
        );
        const settled: Answer[] = [];
        answers.forEach((a) => void a.then((x) => settled.push(x)));

        // every request is inside the service, waiting for the lock in the database (watched from
        // another session: inside a transaction pg_stat_activity is a frozen snapshot)
        await waitFor(
          'the requests to wait on the lock',
          async () => {
            const [{ n }] = (
              await monitor.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity
                  WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'`,
              )
            ).rows;
            return n === REQUESTS;
          },
          20_000,
        );
        expect(settled).toEqual([]);

        const signalledAt = Date.now();
        child.kill('SIGTERM');
        await waitFor('the shutdown to begin', () => output.includes('SIGTERM: shutting down'), 5_000);
        await sleep(100);

        // the listener is closed while the requests are still in flight
        expect(running()).toBe(true);
        expect(await tryConnect(port)).toBe('refused');
        expect(settled).toEqual([]);

        await lock.query('COMMIT');
        const results = await Promise.all(answers);
        expect(results.map((r) => r.status ?? r.error)).toEqual(Array.from({ length: REQUESTS }, () => 201));

        // the client keeps its keep-alive connections open: the service must close them itself
        const exit = await exited;
        agent.destroy();
        expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
        expect(exit.at - signalledAt).toBeLessThan(GRACE_MS);
      } finally {
        await lock.query('ROLLBACK').catch(() => undefined);
        await lock.end();
        await monitor.end();
      }

      const check = new Client({ connectionString: db.url });
      await check.connect();
      try {
        const { rows } = await check.query(
          `SELECT count(*)::int AS n FROM projects WHERE name LIKE 'Shutdown %'`,
        );
        expect(rows[0].n).toBe(REQUESTS);
      } finally {
        await check.end();
      }
    } catch (error) {
      process.stderr.write(`--- service output ---\n${output}\n`);
      throw error;
    }
  }, 120_000);
});
