import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { MetricsService } from './metrics.service';

/**
 * `GET /metrics` on a port of its own (`METRICS_PORT`), when that is set: a plain Node HTTP
 * server beside the API's, so that the scrape can have its own network rule and its own
 * Kubernetes Service, and the API port (and the ingress behind it) never serves it. It answers
 * `/metrics` only (404 otherwise); it starts with the application and closes when it stops.
 */
@Injectable()
export class MetricsServer implements OnApplicationBootstrap, OnApplicationShutdown {
  private server?: Server;

  constructor(
    private readonly metrics: MetricsService,
    private readonly config: AppConfig,
  ) {}

  /** The port it listens on (the real one when METRICS_PORT is 0), or undefined when it does not run. */
  get port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async onApplicationBootstrap(): Promise<void> {
    const port = this.config.get('METRICS_PORT');
    if (port === undefined || !this.config.get('METRICS_ENABLED')) return;
    const server = createServer((req, res) => void this.answer(req, res));
    // a scraper keeps its connection open between scrapes: close idle ones well before the next
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.config.get('HOST'), () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    res.setHeader('Cache-Control', 'no-store');
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    try {
      const text = await this.metrics.render();
      res.writeHead(200, { 'Content-Type': this.metrics.contentType() });
      res.end(req.method === 'HEAD' ? undefined : text);
    } catch {
      res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Metrics failed\n');
    }
  }
}
