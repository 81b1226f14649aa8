import { connect, Socket } from 'node:net';
import request from 'supertest';
import { Client } from 'pg';
import { ADMIN_TOKEN, bearer, createTestApp, TestApp, TestProject } from './support/app';
import { ServiceProcess, sleep, waitFor } from './support/faults';

/**
 * Liveness under real faults, with the real service in child processes (src/main.ts) beside an
 * in-process instance on the same database (another replica): a process killed or shut down
 * past its deadline while a keyed request holds its transaction leaves no key stuck and runs
 * nothing twice; SIGTERM answers every request already on the wire.
 *
 * To hold a request inside its transaction for as long as the test needs, the test locks a table
 * from a session of its own: the request's INSERT waits in the database, its transaction (and
 * the key's lock) open.
 */

const CUSTOMERS = '/api/private/v1/customers';

describe('faults: killed and stopped processes', () => {
  let t: TestApp;
  let p: TestProject;
  let seq = 0;
  const services: ServiceProcess[] = [];
  const uname = () => `fault${String(++seq).padStart(5, '0')}${Date.now() % 1000}`;

  const startService = async (env: Record<string, string> = {}) => {
    const service = await ServiceProcess.start({
      DATABASE_URL: t.databaseUrl,
      SECRET_ENCRYPTION_KEY: t.env.SECRET_ENCRYPTION_KEY,
      ADMIN_TOKEN,
      ...env,
    });
    services.push(service);
    return service;
  };

  /** A session holding `LOCK TABLE <table> IN EXCLUSIVE MODE` until `release()`. */
  async function lockTable(table: string) {
    const lock = new Client({ connectionString: t.databaseUrl });
    await lock.connect();
    await lock.query('BEGIN');
    await lock.query(`LOCK TABLE ${table} IN EXCLUSIVE MODE`);
    return {
      release: async () => {
        await lock.query('COMMIT').catch(() => undefined);
        await lock.end();
      },
    };
  }

  const waitingOnLocks = async () => {
    const [{ n }] = await t.dataSource.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND state = 'active'`,
    );
    return n as number;
  };

  const customersNamed = async (username: string) => {
    const [{ n }] = await t.dataSource.query(
      'SELECT count(*)::int AS n FROM customers WHERE project_id = $1 AND username = $2',
      [p.id, username],
    );
    return n as number;
  };

  const keyed = (key: string) => ({ ...bearer(p.privateKey), 'Idempotency-Key': key });
  const postHere = (key: string, body: object) => t.http.post(CUSTOMERS).set(keyed(key)).send(body);

  beforeAll(async () => {
    t = await createTestApp();
    p = await t.createProject();
  });

  afterAll(async () => {
    for (const s of services) s.kill('SIGKILL');
    await Promise.all(services.map((s) => s.exited));
    await t?.close();
  });

  const report = (service: ServiceProcess) => (error: unknown) => {
    process.stderr.write(`--- service output (end) ---\n${service.tail()}\n`);
    throw error;
  };

  it('SIGKILL while a keyed request holds its transaction: 409 on another replica while it runs, then a fresh run there, never 409 again, never twice', async () => {
    const service = await startService();
    const key = `kill-${uname()}`;
    const body = { username: uname() };
    const lock = await lockTable('customers');
    try {
      const first = service.send('POST', CUSTOMERS, keyed(key), body);
      let firstSettled: unknown;
      void first.then((a) => (firstSettled = a));
      await waitFor('the request to wait inside its transaction', async () => {
        if (firstSettled) throw new Error(`the request was answered: ${JSON.stringify(firstSettled)}`);
        return (await waitingOnLocks()) === 1;
      });

      // running on the child: the other replica refuses the duplicate
      const duplicate = await postHere(key, body);
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.error.code).toBe('IDEMPOTENCY_KEY_IN_USE');

      service.kill('SIGKILL');
      expect((await first).error).toBeDefined(); // the client never got an answer
      await service.exited;
      // PostgreSQL sees the client gone while the statement still waits, and rolls back at once
      // (client_connection_check_interval): the key is free while the table is still locked
      await waitFor('the killed session to end', async () => (await waitingOnLocks()) === 0, 5_000);
    } catch (error) {
      report(service)(error);
    } finally {
      await lock.release();
    }

    // the retry runs, once
    const retried = await postHere(key, body);
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    const again = await postHere(key, body);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(retried.text);
    expect(await customersNamed(body.username)).toBe(1);
  }, 300_000);

  it('SIGKILL after the work committed: the retry on another replica gets the stored answer, the work ran once', async () => {
    const service = await startService();
    const key = `done-${uname()}`;
    const body = { username: uname() };
    const first = await service.send('POST', CUSTOMERS, keyed(key), body).catch(report(service));
    expect(first.status).toBe(201);
    service.kill('SIGKILL');
    await service.exited;
    const retried = await postHere(key, body);
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    expect(retried.body).toEqual(first.body);
    expect(await customersNamed(body.username)).toBe(1);
  }, 300_000);

  it('SIGTERM past SHUTDOWN_TIMEOUT_MS: the requests still waiting on the database answer 503, their transactions roll back, the process exits within a second of the deadline, no key stays stuck', async () => {
    const graceMs = 1500;
    const service = await startService({ SHUTDOWN_TIMEOUT_MS: String(graceMs) });
    const requests = Array.from({ length: 6 }, () => ({
      key: `term-${uname()}`,
      body: { username: uname() },
    }));
    const lock = await lockTable('customers');
    let signalledAt = 0;
    try {
      const answers = requests.map((r) => service.send('POST', CUSTOMERS, keyed(r.key), r.body));
      await waitFor(
        'the requests to wait inside their transactions',
        async () => (await waitingOnLocks()) === 6,
      );
      signalledAt = Date.now();
      service.kill('SIGTERM');
      const results = await Promise.all(answers);
      expect(results.map((r) => [r.status, r.body?.error?.code])).toEqual(
        requests.map(() => [503, 'SERVICE_UNAVAILABLE']),
      );
      expect(results.every((r) => r.headers?.['retry-after'] !== undefined)).toBe(true);
      const exit = await service.exited;
      // the deadline runs from the moment the service handled the signal (on a loaded machine
      // that can be a while after it was sent)
      const shutdownAt = service.loggedAt('SIGTERM: shutting down') ?? signalledAt;
      expect(exit.at - shutdownAt).toBeLessThan(graceMs + 1000);
      // their sessions are gone (PostgreSQL notices within a second) and their keys with them
      await waitFor('the cut sessions to end', async () => (await waitingOnLocks()) === 0, 5_000);
    } catch (error) {
      report(service)(error);
    } finally {
      await lock.release();
    }

    for (const r of requests) {
      const retried = await postHere(r.key, r.body);
      expect(retried.status).toBe(201);
      expect(retried.headers['idempotent-replayed']).toBeUndefined();
      expect(await customersNamed(r.body.username)).toBe(1);
    }
  }, 300_000);

  it('SIGTERM with requests written to the sockets: every one is answered, idle keep-alive connections are closed, busy ones get Connection: close, the process exits 0', async () => {
    const service = await startService({
      SHUTDOWN_TIMEOUT_MS: '20000',
      DB_POOL_SIZE: '20',
      DB_STATEMENT_TIMEOUT_MS: '60000',
    });
    const admin = `Authorization: Bearer ${ADMIN_TOKEN}\r\n`;
    const rawRequest = (i: number) => {
      const body = JSON.stringify({ name: `Wire ${i}` });
      return (
        `POST /api/admin/v1/projects HTTP/1.1\r\nHost: x\r\n${admin}Content-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
      );
    };
    interface Conn {
      socket: Socket;
      text: string;
      closed: Promise<void>;
    }
    const open = () =>
      new Promise<Conn>((resolveConn, reject) => {
        const socket = connect(service.port, '127.0.0.1');
        const conn = { socket, text: '' } as Conn;
        conn.closed = new Promise((r) => socket.once('close', () => r()));
        socket.on('data', (c: Buffer) => (conn.text += c.toString()));
        socket.on('error', () => undefined);
        socket.once('connect', () => resolveConn(conn));
        socket.once('error', reject);
      });
    const answers = (conn: Conn) => conn.text.match(/HTTP\/1\.1 \d{3}/g) ?? [];
    let lock: { release(): Promise<void> } | undefined;

    try {
      // idle keep-alive connections: one request answered each, then nothing
      const idle = await Promise.all(Array.from({ length: 5 }, () => open()));
      for (const c of idle) c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await waitFor('the idle connections to be answered', () => idle.every((c) => answers(c).length === 1));

      // a busy connection: its request waits in the database (projects locked) through the drain
      lock = await lockTable('projects');
      const busy = await open();
      busy.socket.write(rawRequest(0));
      await waitFor('the busy request to wait', async () => (await waitingOnLocks()) === 1);

      // requests on the wire: the process is stopped, the requests are written (on new
      // connections, and on the idle keep-alive ones), SIGTERM is sent, then the process resumes
      // and finds all of it at once
      service.kill('SIGSTOP');
      const fresh = await Promise.all(Array.from({ length: 10 }, () => open()));
      fresh.forEach((c, i) => c.socket.write(rawRequest(i + 1)));
      const reused = idle.slice(0, 3);
      reused.forEach((c, i) => c.socket.write(rawRequest(100 + i)));
      await sleep(100);
      service.kill('SIGTERM');
      await sleep(100);
      service.kill('SIGCONT');

      // the idle connections without a request are closed by the service
      await Promise.all(idle.slice(3).map((c) => c.closed));
      // the requests read from the wire are in the service now, waiting for the lock like the busy one
      await waitFor('the new requests to wait', async () => (await waitingOnLocks()) === 14);
      await lock.release();
      lock = undefined;

      await Promise.all([busy, ...fresh, ...reused].map((c) => c.closed));
      expect(answers(busy)).toEqual(['HTTP/1.1 201']);
      expect(busy.text).toMatch(/\r\nConnection: close\r\n/i);
      for (const c of fresh) expect(answers(c)).toEqual(['HTTP/1.1 201']);
      for (const c of reused) expect(answers(c)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 201']);
      const exit = await service.exited;
      expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 0, signal: null });
      const [{ n }] = await t.dataSource.query(
        `SELECT count(*)::int AS n FROM projects WHERE name LIKE 'Wire %'`,
      );
      expect(n).toBe(14);
    } catch (error) {
      report(service)(error);
    } finally {
      await lock?.release();
    }
  }, 300_000);

  it('the other replica is untouched by all of it', async () => {
    await request(t.app.getHttpServer()).get('/readyz').expect(200);
  });
});
