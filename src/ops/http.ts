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
 *
 * A full cap never keeps a request out because of connections that do nothing: when one more
 * connection comes, the one idle the longest (no request in progress: silent since it opened,
 * still sending its headers, or kept alive after its answer) is closed to make room. Only when
 * every open connection has a request in progress is the new one closed instead. Anyone who
 * can reach the ops port could otherwise hold all its connections open, and the kubelet's
 * probes would be refused until it restarted the container, again and again.
 *
 * Nor can one connection queue work: a client that sends requests without reading the answers
 * (HTTP pipelining, which no probe or scraper does) is cut off past MAX_REQUESTS_IN_PROGRESS,
 * and what it sent beyond is not handled. Node parses the rest of what it has read (up to
 * 64 KB, some 2,000 requests) whatever happens, and keeps them until the connection is gone:
 * that, times the connections open, is why the ops port's cap is small. Handled, 60
 * connections that wrote 5,000 GET /metrics each at once ran the daemon out of heap with the
 * image's memory settings; parsed only, on 64 connections, they still did on a busy machine.
 */
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
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
  /**
   * Connections open at once. One more closes the connection idle the longest, or itself when
   * every open connection has a request in progress (either counted as dropped).
   */
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
/** After a refusal the connection stays open (and unread) this long, so that the client reads the answer before it closes. */
const LINGER_MS = 1_000;
/** Requests one connection may have in progress at once (pipelined, their answers not read yet); one more closes it. */
const MAX_REQUESTS_IN_PROGRESS = 4;

/** An open connection: its requests in progress, and since when it has had none. */
interface OpenConnection {
  requests: number;
  idleSince: number;
}

/** One HTTP listener with bounded connections, header time and request time. */
export class HttpListener {
  private server: Server | undefined;
  private readonly open = new Map<Socket, OpenConnection>();
  /**
   * Connections closed at once because a cap was reached: maxConnections open (the idlest one,
   * or the new one), or MAX_REQUESTS_IN_PROGRESS on one connection.
   */
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
      // Requests parsed from a connection closed meanwhile (pipelined past the cap) are not handled.
      (req, res) => {
        if (!req.socket.destroyed) this.handler(req, res);
      },
    );
    // Not server.maxConnections: Node would close the new connection, whatever the others do.
    server.on('connection', (socket: Socket) => this.admit(socket));
    // Before the handler, which may answer at once.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => this.busy(req.socket, res));
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

  /** A new connection; over the cap, the idlest other one makes room, or this one goes. */
  private admit(socket: Socket): void {
    this.open.set(socket, { requests: 0, idleSince: performance.now() });
    socket.once('close', () => this.open.delete(socket));
    if (this.open.size <= this.spec.maxConnections) return;
    let idlest: Socket | undefined;
    let since = Infinity;
    for (const [s, c] of this.open) {
      if (s !== socket && c.requests === 0 && c.idleSince < since) {
        idlest = s;
        since = c.idleSince;
      }
    }
    (idlest ?? socket).destroy();
    this.dropped++;
  }

  /** A request in progress on `socket` until its answer is done; past the cap the connection is closed. */
  private busy(socket: Socket, res: ServerResponse): void {
    const c = this.open.get(socket);
    // Closed already: what it pipelined is parsed still, and not handled.
    if (!c || socket.destroyed) return;
    c.requests++;
    if (c.requests > MAX_REQUESTS_IN_PROGRESS) {
      socket.destroy();
      this.dropped++;
      return;
    }
    res.once('close', () => {
      c.requests--;
      c.idleSince = performance.now();
    });
  }
}

export interface OpsSources {
  /** True when the daemon can do its work; with the reason when it cannot. */
  ready(): { ready: boolean; reason?: string };
  metrics: Registry;
}

const TEXT = 'text/plain; charset=utf-8';

/** Answers with a short body (GET endpoints, refusals). */
export function reply(res: ServerResponse, status: number, body: string, type = TEXT, headers: OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { 'content-type': type, ...headers });
  res.end(body);
}

/**
 * Answers without reading what is left of the request's body, then closes the connection. The
 * socket is paused, not drained: a client still sending is held back by TCP and reads the
 * answer meanwhile; LINGER_MS later the connection is closed. (Closing at once would reset it
 * with the unread bytes, and a reset may throw away the answer before the client reads it: that
 * is why Node's own `connection: close` is not used here.)
 */
export function refuseAndClose(req: IncomingMessage, res: ServerResponse, status: number, body: string, headers: OutgoingHttpHeaders): void {
  // read(0) first: a request nobody read from is resumed by Node once its answer is sent, and
  // its body read to the end and thrown away (200 MB in well under the linger time, measured).
  // A request read from is left paused, and the pause holds the client back.
  req.read(0);
  req.pause();
  res.writeHead(status, headers);
  res.end(body);
  const socket = req.socket;
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

/** Whether a request announces a body (a length other than 0, or chunks). */
function carriesBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Refuses a request of the ops endpoint: a request that carries a body is answered without
 * reading it and its connection closed (Node would otherwise read and throw away all of it,
 * gigabytes if a client sends them); one without keeps its connection.
 */
function refuseOps(req: IncomingMessage, res: ServerResponse, status: number, body: string, headers: OutgoingHttpHeaders = {}): void {
  if (carriesBody(req)) refuseAndClose(req, res, status, body, { 'content-type': TEXT, ...headers });
  else reply(res, status, body, TEXT, headers);
}

/** The ops endpoint's listener: /healthz, /readyz, /metrics. */
export function opsListener(sources: OpsSources): HttpListener {
  return new HttpListener(
    {
      what: 'the ops endpoint',
      hostSetting: 'ops.host (STAYSYNC_OPS_HOST)',
      portSetting: 'ops.port (STAYSYNC_OPS_PORT)',
      // Probes and Prometheus need a few (idle ones make room for them); each may cost some 2,000
      // parsed requests when pipelined (above): 64 ran out of heap on a busy machine, 32 did not.
      maxConnections: 32,
      requestTimeoutMs: 10_000,
    },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET') return refuseOps(req, res, 405, 'method not allowed: GET only\n', { allow: 'GET' });
      if (carriesBody(req)) return refuseOps(req, res, 413, 'the ops endpoint takes no request body\n');
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
