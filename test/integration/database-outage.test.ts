/**
 * The daemon and its database: PostgreSQL stopped and started under a running sync, a
 * database that is down at start, and `sync --once` giving up. The file owns a PostgreSQL
 * server (test/helpers/postgres-server.ts) that each test really stops and starts, in a schema
 * of its own (the tests run one after the other; a server is started again after a test that
 * left it stopped); the daemon is the real CLI as a child process.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { mirrorSnapshot, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.js';

let h: Harness | undefined;
// One server for the file: an initdb per test cost seconds and proved nothing more.
let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgresServer();
});
afterEach(async () => {
  if (!server.isRunning) await server.start();
  await h?.close();
  h = undefined;
});
afterAll(async () => {
  await server?.close();
});

const count = async (sql: string): Promise<number> => Number((await h!.sql<{ n: string }>(sql))[0]!.n);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the database goes away', () => {
  it('run: keeps going through a PostgreSQL restart, not ready meanwhile, one line each way, and ends equal', async () => {
    // 600 bookings: the details alone take the daemon 3 s or more (its budget is 200 a second),
    // and the PMS reservations of the same bookings several times that, so the restart falls
    // in the middle of the sync; thousands only made it longer on both sides of the restart.
    h = await startHarness({
      databaseUrl: server.url,
      sim: {
        properties: [
          { id: '500100', bookingCount: 350 },
          { id: '500200', bookingCount: 250 },
        ],
      },
    });
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' } }));
    try {
      await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200);
      await waitFor('a part of the bookings', async () => (await count('SELECT count(*) AS n FROM bookings')) > 100);
      await server.stop();
      const down = await waitFor('/readyz to say not ready', async () => {
        const r = await opsGet(port, '/readyz');
        return r.status === 503 ? r : undefined;
      });
      expect(down.body).toMatch(/^not ready: (database unreachable|starting: waiting for the schema lock)/);
      await waitFor('staysync_database_up 0', async () => metricValue((await opsGet(port, '/metrics')).body, 'staysync_database_up') === 0);
      // Down for a while: the probe's retries at 0.25, 0.75 and 1.75 s fail too. (Longer only
      // makes the probe's next try, which doubles up to 5 s, come later after the start.)
      await sleep(2_000);
      expect(daemon.child.exitCode).toBeNull();
      await server.start();

      const total = h.sim.bookings().length;
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === total, 60_000);
      await waitFor('an empty queue', async () => (await count('SELECT count(*) AS n FROM booking_detail_queue')) === 0);
      await waitFor('ready again', async () => (await opsGet(port, '/readyz')).status === 200);
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_database_up')).toBe(1);
      expect(metricValue(metrics, 'staysync_database_outages_total')).toBe(1);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code, r.stdout.slice(-3000)).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));

    const logs = logRecords(r.stdout);
    expect(logs.filter((l) => l.msg.startsWith('database unreachable'))).toHaveLength(1);
    expect(logs.filter((l) => l.msg.startsWith('database reachable again'))).toHaveLength(1);
    expect(logs.find((l) => l.msg.startsWith('database unreachable'))!.msg).toContain(`127.0.0.1:${server.port}`);
    expect(logs.filter((l) => /unhandled|internal error/.test(l.msg))).toEqual([]);
    // Only the fetches in flight when the database went away were fetched a second time.
    const calls = [...h.sim.stats.detailCallsByNumber.values()].reduce((a, b) => a + b, 0);
    expect(calls).toBeLessThanOrEqual(h.sim.bookings().length + 16);
    expect(await h.sql('SELECT command, outcome FROM sync_runs')).toEqual([{ command: 'run', outcome: 'stopped' }]);
  });

  it('run: waits for a database that is down at start, then syncs', async () => {
    h = await startHarness({ databaseUrl: server.url, sim: { properties: [{ id: '500100', bookingCount: 10 }] } });
    await server.stop();
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' } }));
    try {
      await waitFor('/healthz', async () => (await opsGet(port, '/healthz')).status === 200);
      // It has found the database down, and keeps waiting past the probe's first retries.
      await waitFor('/readyz to say the database is unreachable', async () => /database unreachable/.test((await opsGet(port, '/readyz')).body));
      await sleep(1_000);
      expect(daemon.child.exitCode).toBeNull();
      expect((await opsGet(port, '/readyz')).status).toBe(503);
      await server.start();
      await waitFor('ready', async () => (await opsGet(port, '/readyz')).status === 200, 30_000);
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === 10);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    const logs = logRecords(r.stdout);
    expect(logs.filter((l) => l.msg.startsWith('database unreachable'))).toHaveLength(1);
    expect(logs.filter((l) => l.msg.startsWith('database reachable again'))).toHaveLength(1);
  });

  it('run: /readyz says "database unreachable" and nothing of the database (user, host, port, name) while it is down; the log names it, once each way', async () => {
    h = await startHarness({ databaseUrl: server.url, sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' } }));
    const url = new URL(server.url);
    const secrets = [url.username, url.hostname, url.port, url.pathname.slice(1), decodeURIComponent(url.password)].filter(Boolean);
    const answers: string[] = [];
    try {
      await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200);
      await server.stop();
      await waitFor('/readyz to say the database is unreachable', async () => {
        const r = await opsGet(port, '/readyz');
        if (r.status === 503) answers.push(r.body);
        return /database unreachable/.test(r.body);
      });
      // A few more answers while it stays down (the probe's retries change nothing in them).
      for (let i = 0; i < 5; i++) {
        answers.push((await opsGet(port, '/readyz')).body);
        await sleep(300);
      }
      await server.start();
      await waitFor('ready again', async () => (await opsGet(port, '/readyz')).status === 200, 30_000);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    for (const body of answers) {
      expect(body).toMatch(/^not ready: (database unreachable|starting: waiting for the schema lock .*)\n$/);
      for (const s of secrets) expect(body, `/readyz tells ${s}`).not.toContain(s);
    }
    expect(answers).toContain('not ready: database unreachable\n');
    // The operator's sentence, with where the database is, goes to the log: once when it goes, once when it is back.
    const logs = logRecords(r.stdout);
    const down = logs.filter((l) => l.msg.startsWith('database unreachable'));
    expect(down).toHaveLength(1);
    expect(down[0]!.msg).toContain(`${url.username}@127.0.0.1:${server.port}/${url.pathname.slice(1)} (DATABASE_URL)`);
    expect(logs.filter((l) => l.msg.startsWith('database reachable again'))).toHaveLength(1);
  });

  it('sync --once: gives up after database.giveUpAfterMs with exit 1 and a sentence naming the database; nothing committed is lost', async () => {
    // 120 bookings: the stop falls while their details or their PMS reservations (eight
    // requests or so each: 5 s or more at the daemon's budget) are still being fetched; 800
    // only made both runs longer.
    h = await startHarness({ databaseUrl: server.url, sim: { properties: [{ id: '500100', bookingCount: 120 }] } });
    const env = daemonEnv(h, { config: { database: { giveUpAfterMs: 2_000 } } });
    const once = startCli(['sync', '--once'], env);
    await waitFor('a part of the bookings', async () => (await count('SELECT count(*) AS n FROM bookings')) > 30);
    await server.stop();
    const stoppedAt = Date.now();
    const r = await once.done;
    const waited = Date.now() - stoppedAt;
    expect(r.code, r.stdout.slice(-2000)).toBe(1);
    expect(waited).toBeGreaterThanOrEqual(1_500);
    expect(waited).toBeLessThan(10_000);
    const line = logRecords(r.stdout).find((l) => l.msg.startsWith('sync --once gave up'));
    expect(line?.msg).toMatch(
      new RegExp(`the database postgres://\\S+@127\\.0\\.0\\.1:${server.port}/postgres \\(DATABASE_URL\\) has been unreachable for \\d+ s`),
    );
    expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);

    await server.start();
    const again = await runCli(['sync', '--once'], env);
    expect(again.code, again.stdout.slice(-2000)).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    // The first run's row is closed: by itself, or as killed by the next start.
    const runs = await h.sql<{ outcome: string }>('SELECT outcome FROM sync_runs ORDER BY id');
    expect(runs.map((x) => x.outcome)).toEqual([expect.stringMatching(/^(failed|killed)$/), 'ok']);
  });

  it('sync --once: a database that is down at start is waited for, then given up with the sentence', async () => {
    h = await startHarness({ databaseUrl: server.url, sim: { properties: [{ id: '500100', bookingCount: 10 }] } });
    await server.stop();
    const started = Date.now();
    const r = await runCli(['sync', '--once'], daemonEnv(h, { config: { database: { giveUpAfterMs: 1_500 } } }));
    expect(r.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(logRecords(r.stdout).map((l) => l.msg)).toContainEqual(
      expect.stringMatching(/^sync --once gave up: the database .* \(DATABASE_URL\) has been unreachable/),
    );
  });
});
