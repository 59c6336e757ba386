/**
 * The daemon's two HTTP listeners, each bounded so that no client can hold it:
 * - the ops endpoint (ops.host, ops.port): /healthz (the process is alive), /readyz (the daemon
 *   can do its work: database reachable, registered among the replicas, not stopping) and
 *   /metrics (Prometheus text format, from a prom-client registry); GET only, no body;
 * - the webhook receiver (webhooks.host, webhooks.port, when enabled): POST of the provider's
 *   change events at webhooks.path (webhooks.ts).
 * Two listeners, not one: the webhook port is the one that faces the provider (through an
 * Ingress or a proxy), while probes and metrics stay inside the cluster; and a flood of
 * connections to the webhook port fills its own connection cap, never the one /healthz
 * answers on, so an attacker cannot get the container restarted by its liveness probe.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** The paths the ops endpoint answers. */
export const OPS_PATHS = { health: '/healthz', ready: '/readyz', metrics: '/metrics' } as const;

/** A listener could not be opened: the message names the setting. */
export class OpsPortError extends Error {
  override name = 'OpsPortError';
}

/** What a listener is and which settings choose its address, for messages. */
export interface ListenerSpec {
  /** e.g. "the ops endpoint" */
  what: string;
  hostSetting: string;
  portSetting: string;
  /** Connections open at once; further ones are closed as they come (counted as dropped). */
  maxConnections: number;
  /** Time for a whole request, body included, before the connection is closed with 408. */
  requestTimeoutMs: number;
}

/** Time for a request's headers: a client that sends them byte by byte is cut off. */
const HEADERS_TIMEOUT_MS = 10_000;
/** An idle keep-alive connection is closed after this. */
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** How often Node checks the two timeouts above (its default, 30 s, would let them overrun by that much). */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** One HTTP listener with bounded connections, header time and request time. */
export class HttpListener {
  private server: Server | undefined;
  /** Connections closed at once because maxConnections were open. */
  dropped = 0;

  constructor(
    private readonly spec: ListenerSpec,
    private readonly handler: (req: IncomingMessage, res: ServerResponse) => void,
  ) {}

  /** Starts listening; resolves with the bound port. Idempotent. */
  async start(host: string, port: number): Promise<number> {
    if (this.server) return (this.server.address() as AddressInfo).port;
    const { spec } = this;
    const server = createServer(
      {
        headersTimeout: HEADERS_TIMEOUT_MS,
        requestTimeout: spec.requestTimeoutMs,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
      },
      this.handler,
    );
    server.maxConnections = spec.maxConnections;
    server.on('drop', () => this.dropped++);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) => {
        const what = `${spec.what} could not listen on ${host}:${port}`;
        const hint = `set ${spec.portSetting} to a free port, or 0 for any`;
        if (err.code === 'EADDRINUSE') reject(new OpsPortError(`${what}: the port is in use; ${hint}`));
        else if (err.code === 'EACCES') reject(new OpsPortError(`${what}: permission denied; ${hint} above 1023`));
        else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
          reject(new OpsPortError(`${what}: no such address on this machine; check ${spec.hostSetting}`));
        else reject(new OpsPortError(`${what}: ${err.message}; ${hint}`));
      });
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    return (server.address() as AddressInfo).port;
  }

  /** Stops listening and closes every connection. Idempotent. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

export interface OpsSources {
  /** True when the daemon can do its work; with the reason when it cannot. */
  ready(): { ready: boolean; reason?: string };
  metrics: Registry;
}

/** Answers with a short body (GET endpoints, refusals). */
export function reply(res: ServerResponse, status: number, body: string, type = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': type });
  res.end(body);
}

/** The ops endpoint's listener: /healthz, /readyz, /metrics. */
export function opsListener(sources: OpsSources): HttpListener {
  return new HttpListener(
    {
      what: 'the ops endpoint',
      hostSetting: 'ops.host (STAYSYNC_OPS_HOST)',
      portSetting: 'ops.port (STAYSYNC_OPS_PORT)',
      maxConnections: 64,
      requestTimeoutMs: 10_000,
    },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET') return reply(res, 405, 'method not allowed\n');
      if (path === OPS_PATHS.health) return reply(res, 200, 'ok\n');
      if (path === OPS_PATHS.ready) {
        const r = sources.ready();
        return reply(res, r.ready ? 200 : 503, r.ready ? 'ready\n' : `not ready: ${r.reason ?? 'starting'}\n`);
      }
      if (path === OPS_PATHS.metrics) {
        const registry = sources.metrics;
        registry.metrics().then(
          (text) => reply(res, 200, text, registry.contentType),
          (err: unknown) => reply(res, 500, `metrics unavailable: ${(err as Error).message}\n`),
        );
        return;
      }
      reply(res, 404, 'not found\n');
    },
  );
}
