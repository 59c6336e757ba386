/**
 * Operations endpoint: /healthz (the process is alive), /readyz (the daemon can do its work:
 * database reachable, registered among the replicas, not stopping), /metrics (Prometheus text format,
 * from a prom-client registry), and the provider's change events (POST at webhooks.path).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from '../log.js';

export interface OpsSources {
  /** True when the daemon can do its work; with the reason when it cannot. */
  ready(): { ready: boolean; reason?: string };
  metrics: Registry;
  /** The change-event receiver (POST at `path`), when webhooks are enabled. */
  webhook?: { path: string; receive(req: IncomingMessage, res: ServerResponse): Promise<void> } | undefined;
}

/** The paths the ops endpoint answers (besides the webhook receiver's, webhooks.path). */
export const OPS_PATHS = { health: '/healthz', ready: '/readyz', metrics: '/metrics' } as const;

/** The ops port could not be opened: the message names the setting. */
export class OpsPortError extends Error {
  override name = 'OpsPortError';
}

export class OpsServer {
  private server: Server | undefined;

  constructor(
    private readonly sources: OpsSources,
    private readonly logger: Logger,
  ) {}

  /** Starts listening; resolves with the bound port. Idempotent. */
  async start(host: string, port: number): Promise<number> {
    if (this.server) return (this.server.address() as AddressInfo).port;
    const server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const reply = (status: number, body: string, type = 'text/plain; charset=utf-8') => {
        res.writeHead(status, { 'content-type': type });
        res.end(body);
      };
      const webhook = this.sources.webhook;
      if (webhook && path === webhook.path) {
        if (req.method !== 'POST') return reply(405, 'method not allowed: POST a batch of events\n');
        webhook.receive(req, res).catch((err: unknown) => {
          this.logger.error({ err: (err as Error).message }, 'webhook receiver failed');
          if (!res.headersSent) reply(503, 'the events could not be stored now; deliver the batch again\n');
        });
        return;
      }
      if (req.method !== 'GET') return reply(405, 'method not allowed\n');
      if (path === OPS_PATHS.health) return reply(200, 'ok\n');
      if (path === OPS_PATHS.ready) {
        const r = this.sources.ready();
        return reply(r.ready ? 200 : 503, r.ready ? 'ready\n' : `not ready: ${r.reason ?? 'starting'}\n`);
      }
      if (path === OPS_PATHS.metrics) {
        const registry = this.sources.metrics;
        registry.metrics().then(
          (text) => reply(200, text, registry.contentType),
          (err: unknown) => reply(500, `metrics unavailable: ${(err as Error).message}\n`),
        );
        return;
      }
      reply(404, 'not found\n');
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const what = `the ops endpoint could not listen on ${host}:${port}`;
        const hint = 'set ops.port (STAYSYNC_OPS_PORT) to a free port, or 0 for any';
        if (err.code === 'EADDRINUSE') reject(new OpsPortError(`${what}: the port is in use; ${hint}`));
        else if (err.code === 'EACCES') reject(new OpsPortError(`${what}: permission denied; ${hint} above 1023`));
        else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') reject(new OpsPortError(`${what}: no such address on this machine; check ops.host`));
        else reject(new OpsPortError(`${what}: ${err.message}; ${hint}`));
      });
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    const bound = (server.address() as AddressInfo).port;
    this.logger.info({ host, port: bound }, 'ops endpoint listening (/healthz /readyz /metrics)');
    return bound;
  }

  /** Stops listening. Idempotent. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
