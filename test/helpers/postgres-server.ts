/**
 * Throwaway PostgreSQL servers for tests: the product's own supervisor
 * (src/local-pg/postgres-server.ts, which also runs the local default database) on a
 * temporary data directory that close() removes, with nothing forced to disk.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgresServer as startSupervised, type PostgresServer } from '../../src/local-pg/postgres-server.js';

export type { PostgresServer };

/** Settings of a throwaway test cluster, on top of the caller's. */
const THROWAWAY_SETTINGS: Readonly<Record<string, string>> = {
  // Nothing is forced to disk: a test cluster need not survive a crash of the machine. Commits
  // still reach the kernel before they return (synchronous_commit stays on), so a committed row
  // survives a crash or kill -9 of postgres itself, which tests may well provoke.
  fsync: 'off',
  full_page_writes: 'off',
  // The log goes to stderr, which is kept in memory and shown only when a start fails.
  logging_collector: 'off',
  log_destination: 'stderr',
};

/** A fresh server on a temporary data directory (removed by close()). */
export async function startPostgresServer(opts: { settings?: Record<string, string>; port?: number } = {}): Promise<PostgresServer> {
  // As root the server runs as the OS user postgres, which is given the directory (its parent, /tmp, lets anyone in).
  const dataDir = await mkdtemp(join(tmpdir(), 'staysync-pg-'));
  let server: PostgresServer;
  try {
    server = await startSupervised({
      dataDir,
      password: randomBytes(12).toString('hex'),
      settings: { ...THROWAWAY_SETTINGS, ...opts.settings },
      ...(opts.port === undefined ? {} : { port: opts.port }),
    });
  } catch (err) {
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    url: server.url,
    port: server.port,
    dataDir,
    get isRunning() {
      return server.isRunning;
    },
    start: () => server.start(),
    stop: () => server.stop(),
    close: () =>
      (closing ??= (async () => {
        await server.close();
        await rm(dataDir, { recursive: true, force: true });
      })()),
  };
}

/** Runs `fn` with a fresh server and always closes the server afterwards. */
export async function withPostgresServer<T>(fn: (server: PostgresServer) => Promise<T>, opts?: { settings?: Record<string, string> }): Promise<T> {
  const server = await startPostgresServer(opts);
  try {
    return await fn(server);
  } finally {
    await server.close();
  }
}
