/**
 * A stand-in provider for the conformance suite: real HTTP on 127.0.0.1 that answers the token
 * endpoint and serves, byte for byte, the generated bodies a test puts in `routes`. The
 * project's simulator generates its own (realistic) data; this one serves whatever the
 * document allows, so that the daemon's real client, sync code and repositories meet it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A body for a GET, or undefined for 404. `query` holds the request's query parameters. */
export type Route = (query: URLSearchParams) => string | undefined;

export interface ServedBody {
  path: string;
  query: string;
  body: string;
}

export interface ConformanceProvider {
  /** Base URL for both the provider and the reference-data API. */
  readonly url: string;
  /** Routes by exact path, each segment decoded (e.g. `/api/read-reservation/v1/properties/7001/bookings/A%2FB` is looked up as `.../bookings/A/B`). */
  readonly routes: Map<string, Route>;
  /** Every 200 body served, in order. */
  readonly served: ServedBody[];
  close(): Promise<void>;
}

/** Decodes each segment of a path (an encoded `/` inside a booking number stays inside its segment). */
function decodedPath(raw: string): string {
  return raw
    .split('/')
    .map((s) => decodeURIComponent(s))
    .join('/');
}

export async function startConformanceProvider(): Promise<ConformanceProvider> {
  const routes = new Map<string, Route>();
  const served: ServedBody[] = [];
  const reply = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    // The request body (token form) is read and ignored: any client is welcome here.
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST' && url.pathname === '/auth/token') {
        return reply(res, 200, JSON.stringify({ access_token: 'conformance-token', token_type: 'Bearer', expires_in: 3600 }));
      }
      if (req.method !== 'GET') return reply(res, 405, '{"errors":[{"code":"MethodNotAllowed"}]}');
      const path = decodedPath(url.pathname);
      const body = routes.get(path)?.(url.searchParams);
      if (body === undefined) return reply(res, 404, JSON.stringify({ errors: [{ code: 'NotFound', message: path }] }));
      served.push({ path, query: url.search, body });
      reply(res, 200, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routes,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every rate limit far above what a test asks for: the conformance provider does not limit. */
export const unlimited = Object.fromEntries(
  ['bookingList', 'bookingDetails', 'standard', 'integrationStorage', 'token'].map((scope) => [scope, [{ limit: 100_000, windowMs: 1000 }]]),
);
