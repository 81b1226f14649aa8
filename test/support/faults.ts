import { ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { AddressInfo, createServer, Server, Socket, connect } from 'node:net';
import { resolve } from 'node:path';
import { freePort } from './ports';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * A TCP proxy in front of a server (PostgreSQL, Redis), to make network faults on demand:
 * `freeze()` holds every byte in both directions (a frozen network: nothing is lost, nothing
 * arrives), `thaw()` lets them through again, `cut()` resets every connection, and `refuse()`
 * stops accepting new ones until `accept()`.
 */
export class FaultProxy {
  private server?: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  private frozen = false;
  private readonly held: Array<() => void> = [];
  /** Bytes sent by the clients (the service) towards the server, held ones included. */
  bytesFromClients = 0;
  port = 0;

  constructor(
    private readonly targetPort: number,
    private readonly targetHost = '127.0.0.1',
  ) {}

  async start(port = 0): Promise<this> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      const pair: [Socket, Socket] = [client, upstream];
      this.pairs.add(pair);
      const forward = (from: Socket, to: Socket, countIt: boolean) =>
        from.on('data', (chunk) => {
          if (countIt) this.bytesFromClients += chunk.length;
          const write = () => {
            if (!to.destroyed) to.write(chunk);
          };
          if (this.frozen) this.held.push(write);
          else write();
        });
      forward(client, upstream, true);
      forward(upstream, client, false);
      const close = () => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  freeze(): void {
    this.frozen = true;
  }

  thaw(): void {
    this.frozen = false;
    for (const write of this.held.splice(0)) write();
  }

  /** Resets every open connection. */
  cut(): void {
    for (const [client, upstream] of this.pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    this.pairs.clear();
    this.held.splice(0);
  }

  /** Closes the listener: new connections are refused (the server is "down"). */
  async refuse(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise((r) => server.close(r));
  }

  /** Listens again on the same port. */
  async accept(): Promise<void> {
    if (!this.server) await this.start(this.port);
  }

  async stop(): Promise<void> {
    this.thaw();
    this.cut();
    await this.refuse();
  }
}

export interface Answer {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: { error?: { code?: string }; data?: unknown };
  error?: string;
}

/** One HTTP request on a connection of its own; resolves with the answer or the socket error. */
export function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
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
        agent: false,
        headers: {
          ...headers,
          ...(payload
            ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) }
            : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let parsed: Answer['body'];
          try {
            parsed = JSON.parse(text) as Answer['body'];
          } catch {
            parsed = undefined;
          }
          resolveAnswer({ status: res.statusCode, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolveAnswer({ error: error.code ?? error.message }));
    req.end(payload);
  });
}

/** The real service (src/main.ts under ts-node) in a child process, as in production. */
export class ServiceProcess {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((r) =>
      child.once('exit', (code, signal) => r({ code, signal, at: Date.now() })),
    );
  }

  static async start(env: Record<string, string>): Promise<ServiceProcess> {
    const port = await freePort();
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
      cwd: resolve(__dirname, '..', '..'),
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: String(port),
        HOST: '127.0.0.1',
        DB_MIGRATE_ON_START: 'false',
        LOG_LEVEL: 'info',
        BCRYPT_COST: '4',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const service = new ServiceProcess(child, port);
    try {
      await waitFor(
        'the service to be ready',
        async () => {
          if (!service.running) throw new Error(`the service exited during start-up:\n${service.output}`);
          return (await send(port, 'GET', '/readyz')).status === 200;
        },
        240_000,
      );
    } catch (error) {
      service.kill('SIGKILL');
      throw error;
    }
    return service;
  }

  /** When the service logged a line containing `text` (its own clock, ms since the epoch). */
  loggedAt(text: string): number | undefined {
    for (const line of this.output.split('\n')) {
      if (!line.includes(text)) continue;
      try {
        return (JSON.parse(line) as { time: number }).time;
      } catch {
        return undefined;
      }
    }
    return undefined;
  }

  /** The last lines of the output, for a failing test's report. */
  tail(lines = 40): string {
    return this.output.split('\n').slice(-lines).join('\n');
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  send(method: string, path: string, headers: Record<string, string> = {}, body?: object): Promise<Answer> {
    return send(this.port, method, path, headers, body);
  }
}
