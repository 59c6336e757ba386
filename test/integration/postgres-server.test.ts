/**
 * The test helper that runs a PostgreSQL server of a test's own (test/helpers/postgres-server.ts):
 * stop() really takes the server off the network, start() brings it back on the same port with
 * the same data, settings reach postgresql.conf, and close() leaves nothing behind.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startPostgresServer, withPostgresServer } from '../helpers/postgres-server.js';

const run = promisify(execFile);

async function connectionError(url: string): Promise<NodeJS.ErrnoException> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    return error as NodeJS.ErrnoException;
  } finally {
    await client.end().catch(() => undefined);
  }
  throw new Error(`connected to ${url}, expected the connection to fail`);
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await fn();
  return [result, Math.round(performance.now() - started)];
}

describe('postgres-server test helper', () => {
  it('stops (connections refused), starts again on the same port with the data intact, and close() removes everything', async () => {
    const [server, createMs] = await timed(() => startPostgresServer());
    const dataDir = server.dataDir;
    const timings: Record<string, number> = { createMs };
    try {
      expect(server.isRunning).toBe(true);
      expect(server.url).toBe(`${server.url.slice(0, server.url.indexOf('@'))}@127.0.0.1:${server.port}/postgres`);
      expect(server.url).toMatch(/^postgres:\/\/[^:@/]+:[^:@/]+@127\.0\.0\.1:\d+\/postgres$/);
      expect(dataDir.startsWith(tmpdir())).toBe(true);
      expect(existsSync(dataDir)).toBe(true);

      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query('CREATE TABLE kept (id int PRIMARY KEY, name text NOT NULL)');
      await client.query(`INSERT INTO kept VALUES (1, 'Hôtel du Lac')`);
      const settings = await client.query<{ fsync: string; listen: string }>(
        `SELECT current_setting('fsync') AS fsync, current_setting('listen_addresses') AS listen`,
      );
      expect(settings.rows).toEqual([{ fsync: 'off', listen: '127.0.0.1' }]);
      // This connection stays open across stop(): the server must end it, not just refuse new ones.
      const terminated = new Promise<Error>((resolve) => client.on('error', resolve));

      [, timings.stopMs] = await timed(() => server.stop());
      expect(server.isRunning).toBe(false);
      expect(existsSync(dataDir)).toBe(true);
      expect((await terminated).message).toMatch(/terminat|Connection terminated/i);
      await client.end().catch(() => undefined);
      expect((await connectionError(server.url)).code).toBe('ECONNREFUSED');
      await server.stop(); // a second stop() is harmless

      [, timings.restartMs] = await timed(() => server.start());
      expect(server.isRunning).toBe(true);
      const again = new pg.Client({ connectionString: server.url });
      await again.connect();
      try {
        expect((await again.query('SELECT id, name FROM kept')).rows).toEqual([{ id: 1, name: 'Hôtel du Lac' }]);
        expect(again.port).toBe(server.port);
      } finally {
        await again.end();
      }

      // The URL works as-is for a child process (as the CLI tests hand DATABASE_URL to the daemon).
      const script = `import pg from 'pg'; const c = new pg.Client(process.env.DATABASE_URL); await c.connect(); const r = await c.query('SELECT count(*)::int AS n FROM kept'); console.log(r.rows[0].n); await c.end();`;
      const child = await run(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, DATABASE_URL: server.url } });
      expect(child.stdout.trim()).toBe('1');
    } finally {
      [, timings.closeMs] = await timed(() => server.close());
    }
    expect(server.isRunning).toBe(false);
    expect(existsSync(dataDir)).toBe(false);
    expect((await connectionError(server.url)).code).toBe('ECONNREFUSED');
    await server.close(); // idempotent
    await expect(server.start()).rejects.toThrow(/closed/);
    console.info(`postgres-server timings (ms): ${JSON.stringify(timings)}`);
  });

  it('applies settings: track_commit_timestamp gives committed rows a commit timestamp', async () => {
    let dataDir = '';
    const stamp = await withPostgresServer(
      async (server) => {
        dataDir = server.dataDir;
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        try {
          expect((await client.query(`SELECT current_setting('track_commit_timestamp') AS v`)).rows[0]).toEqual({ v: 'on' });
          await client.query('CREATE TABLE stamped (id int)');
          await client.query('INSERT INTO stamped VALUES (1)');
          const { rows } = await client.query<{ ts: Date | null }>('SELECT pg_xact_commit_timestamp(xmin) AS ts FROM stamped');
          return rows[0]?.ts ?? null;
        } finally {
          await client.end();
        }
      },
      { settings: { track_commit_timestamp: 'on' } },
    );
    expect(stamp).toBeInstanceOf(Date);
    expect(Math.abs(Date.now() - stamp!.getTime())).toBeLessThan(60_000);
    expect(dataDir).not.toBe('');
    expect(existsSync(dataDir)).toBe(false);
  });

  it('reports the server log when postgres cannot start, and removes the data dir', async () => {
    const error: unknown = await startPostgresServer({ settings: { no_such_setting: 'x' } }).then(
      async (server) => {
        await server.close();
        throw new Error('started despite an unknown setting');
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/unrecognized configuration parameter "no_such_setting"/);
    const dataDir = /\((\/[^)]+)\)/.exec(message)?.[1];
    expect(dataDir).toBeDefined();
    expect(existsSync(dataDir!)).toBe(false);
  });

  it('fails clearly when the requested port is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    try {
      await expect(startPostgresServer({ port })).rejects.toThrow(/could not bind|Address already in use/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
