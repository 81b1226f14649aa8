import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: { type: string; timestamp: string; data: Record<string, any> };
  at: number;
}

/**
 * What a path answers to its n-th request: a status, `'hang'` (never answers), or a status with
 * headers, given after `afterMs` (a slow receiver).
 */
export type Answer = number | 'hang' | { status: number; headers?: Record<string, string>; afterMs?: number };

/**
 * A real HTTP receiver on loopback for webhook tests. Each path answers what `respond` says for
 * its n-th request (default 200).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private server!: Server;
  private readonly scripts = new Map<string, (n: number) => Answer>();
  private readonly counts = new Map<string, number>();
  /** Requests of each path not answered yet, and the most there were at once. */
  private readonly open = new Map<string, { now: number; peak: number }>();

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const path = req.url ?? '/';
        const n = (this.counts.get(path) ?? 0) + 1;
        this.counts.set(path, n);
        this.received.push({ path, headers: req.headers, raw, body: JSON.parse(raw), at: Date.now() });
        const answer = this.scripts.get(path)?.(n) ?? 200;
        const open = this.open.get(path) ?? { now: 0, peak: 0 };
        open.now++;
        open.peak = Math.max(open.peak, open.now);
        this.open.set(path, open);
        if (answer === 'hang') return;
        const { status, headers, afterMs } = typeof answer === 'number' ? { status: answer } : answer;
        setTimeout(() => {
          open.now--;
          res.writeHead(status, headers ?? {}).end();
        }, afterMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  respond(path: string, script: (n: number) => Answer): void {
    this.scripts.set(path, script);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /** Requests of `path` answered so far. */
  answered(path: string): number {
    return this.at(path).length - (this.open.get(path)?.now ?? 0);
  }

  /** The most requests of `path` that were waiting for their answer at once. */
  peakOpen(path: string): number {
    return this.open.get(path)?.peak ?? 0;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns something truthy (or throws after `timeoutMs`). */
export async function eventually<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 20_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}
