/**
 * Operations endpoint: /healthz (the process is alive), /readyz (the database answers and the
 * daemon is not stopping), /metrics (Prometheus text format).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.js';

export interface OpsSources {
  /** Resolves when the daemon can do its work (database reachable, not stopping). */
  ready(): Promise<boolean>;
  /** Metric samples: name → value, or name → list of {labels, value}. */
  metrics(): Promise<MetricFamily[]>;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: { labels?: Record<string, string>; value: number }[];
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

export function renderMetrics(families: MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = s.labels && Object.keys(s.labels).length
        ? `{${Object.entries(s.labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`
        : '';
      lines.push(`${f.name}${labels} ${Number.isFinite(s.value) ? s.value : 0}`);
    }
  }
  return lines.join('\n') + '\n';
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
      if (req.method !== 'GET') return reply(405, 'method not allowed\n');
      if (path === '/healthz') return reply(200, 'ok\n');
      if (path === '/readyz') {
        this.sources.ready().then(
          (ok) => reply(ok ? 200 : 503, ok ? 'ready\n' : 'not ready\n'),
          () => reply(503, 'not ready\n'),
        );
        return;
      }
      if (path === '/metrics') {
        this.sources.metrics().then(
          (m) => reply(200, renderMetrics(m), 'text/plain; version=0.0.4; charset=utf-8'),
          (err: unknown) => reply(500, `metrics unavailable: ${(err as Error).message}\n`),
        );
        return;
      }
      reply(404, 'not found\n');
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
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
