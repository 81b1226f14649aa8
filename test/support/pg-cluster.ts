import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports';

/**
 * PostgreSQL servers of a test's own, from the machine's PostgreSQL installation (Debian's
 * `postgresql-15`: initdb, pg_ctl, pg_basebackup), in a temporary directory: a primary and
 * streaming replicas of it made with `pg_basebackup`. Nothing of the machine's own server is
 * touched. As root the servers run as the `postgres` user (PostgreSQL refuses root).
 */
const BIN_DIRS = [process.env.PG_BIN_DIR, '/usr/lib/postgresql/15/bin'].filter(Boolean) as string[];

export const pgBinDir = (): string | undefined =>
  BIN_DIRS.find((d) =>
    ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres'].every((b) => existsSync(join(d, b))),
  );

const asRoot = process.getuid?.() === 0;

function pg(binary: string, args: string[]): string {
  const bin = join(pgBinDir()!, binary);
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return execFileSync(cmd, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
}

export interface PgServer {
  port: number;
  dataDir: string;
  url(database: string): string;
  start(): void;
  /** `fast` shutdown: connections are closed, as when an operator stops the server. */
  stop(): void;
}

function server(dataDir: string, port: number, logFile: string): PgServer {
  let running = false;
  return {
    port,
    dataDir,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    start() {
      pg('pg_ctl', ['-D', dataDir, '-l', logFile, '-w', '-t', '60', 'start']);
      running = true;
    },
    stop() {
      if (!running) return;
      pg('pg_ctl', ['-D', dataDir, '-m', 'fast', '-w', 'stop']);
      running = false;
    },
  };
}

export interface PgCluster {
  primary: PgServer;
  /** A new streaming replica of the primary (pg_basebackup -R), started on a free port. */
  addReplica(): Promise<PgServer>;
  /** Stops every server and removes the directory. */
  destroy(): void;
}

export async function startPrimary(): Promise<PgCluster> {
  // `subs-test-pg-` like the suite's embedded server: CI checks that no such server outlives the tests
  const dir = mkdtempSync(join(tmpdir(), 'subs-test-pg-cluster-'));
  chmodSync(dir, 0o777); // the servers run as `postgres` when we are root and write their logs here
  const servers: PgServer[] = [];
  const settings = (port: number) =>
    [
      `port = ${port}`,
      `listen_addresses = '127.0.0.1'`,
      `unix_socket_directories = '${dir}'`,
      'fsync = off',
      'full_page_writes = off',
      'max_connections = 100',
      'shared_buffers = 32MB',
      'wal_level = replica',
      'max_wal_senders = 8',
      'hot_standby = on',
      // the replica tells the primary what it still reads (no "conflict with recovery" cancellations)
      'hot_standby_feedback = on',
      'wal_receiver_status_interval = 1s',
    ].join('\n') + '\n';

  const primaryDir = join(dir, 'primary');
  const primaryPort = await freePort();
  // initdb's pg_hba.conf trusts local connections, replication ones from 127.0.0.1 included
  pg('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  appendFileSync(join(primaryDir, 'postgresql.conf'), settings(primaryPort));
  const primary = server(primaryDir, primaryPort, join(dir, 'primary.log'));
  primary.start();
  servers.push(primary);

  return {
    primary,
    async addReplica() {
      const n = servers.length;
      const replicaDir = join(dir, `replica${n}`);
      const port = await freePort();
      pg('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primaryPort),
        '-U',
        'postgres',
        '-D',
        replicaDir,
        '-R', // standby.signal and primary_conninfo: a streaming replica
        '-X',
        'stream',
        '--checkpoint=fast',
        '--no-sync',
      ]);
      appendFileSync(join(replicaDir, 'postgresql.auto.conf'), `port = ${port}\n`);
      const replica = server(replicaDir, port, join(dir, `replica${n}.log`));
      replica.start();
      servers.push(replica);
      return replica;
    },
    destroy() {
      for (const s of [...servers].reverse()) {
        try {
          s.stop();
        } catch {
          // already stopped
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
