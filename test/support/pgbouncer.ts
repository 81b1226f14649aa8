import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from './ports';

const BINARIES = [process.env.PGBOUNCER_BIN, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].filter(
  Boolean,
) as string[];

export const pgbouncerBinary = (): string | undefined => BINARIES.find((b) => existsSync(b));

/** `PgBouncer 1.18.0` → `1.18.0`. */
export const pgbouncerVersion = (): string | undefined => {
  const bin = pgbouncerBinary();
  if (!bin) return undefined;
  return /PgBouncer (\S+)/.exec(execFileSync(bin, ['--version'], { encoding: 'utf8' }))?.[1];
};

export interface PgBouncer {
  port: number;
  /** `url` (a database of the server behind) with the pooler's address instead. */
  via(url: string): string;
  stop(): Promise<void>;
}

/**
 * Starts PgBouncer in transaction mode on a free port in front of the server of `serverUrl`
 * (every database, `* =`), with `auth_type = trust` (the user must be in the auth file; its
 * password there is what PgBouncer logs in to the server with). Its config, log and pid file live
 * in a temporary directory removed by `stop()`.
 */
export async function startPgBouncer(
  serverUrl: string,
  settings: Record<string, string> = {},
): Promise<PgBouncer> {
  const bin = pgbouncerBinary();
  if (!bin) throw new Error('pgbouncer is not installed (apt-get install -y pgbouncer)');
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const dir = mkdtempSync(join(tmpdir(), 'subs-test-pgbouncer-'));
  chmodSync(dir, 0o777); // as root, PgBouncer drops to the `postgres` user and writes its log here
  const port = await freePort();
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  writeFileSync(join(dir, 'userlist.txt'), `${quote(user)} ${quote(password)}\n`, { mode: 0o644 });
  const config = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    unix_socket_dir: '',
    auth_type: 'trust',
    auth_file: join(dir, 'userlist.txt'),
    pool_mode: 'transaction',
    max_client_conn: '2000',
    default_pool_size: '40',
    max_db_connections: '0',
    server_reset_query: '',
    // pg sends the pool's statement_timeout and options (client_connection_check_interval) at start-up;
    // PgBouncer refuses unknown start-up parameters unless told to ignore them
    ignore_startup_parameters: 'extra_float_digits,options,statement_timeout',
    logfile: join(dir, 'pgbouncer.log'),
    pidfile: join(dir, 'pgbouncer.pid'),
    admin_users: user,
    ...(process.getuid?.() === 0 ? { user: 'postgres' } : {}),
    ...settings,
  };
  const ini = [
    '[databases]',
    `* = host=${server.hostname} port=${server.port || 5432}`,
    '[pgbouncer]',
    ...Object.entries(config).map(([k, v]) => `${k} = ${v}`),
  ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
  const child: ChildProcess = spawn(bin, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });
  let exited = false;
  child.once('exit', () => (exited = true));

  const via = (url: string) => {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    return u.toString();
  };
  // ready when it accepts a client and reaches the server through it
  const probe = via(serverUrl);
  for (let i = 0; ; i++) {
    const client = new Client({ connectionString: probe });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (exited || i > 100) {
        const log = existsSync(config.logfile) ? readFileSync(config.logfile, 'utf8') : '';
        child.kill('SIGKILL');
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`PgBouncer did not start: ${(error as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  return {
    port,
    via,
    async stop() {
      if (!exited) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT'); // immediate shutdown
        await gone;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
