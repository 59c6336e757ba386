/**
 * Stop means stop: SIGTERM in each phase of the daemon (token retries, a page write held up by
 * a lock, the detail drain, a content refresh, a backoff sleep) sends no new request, ends
 * within shutdown.graceMs with exit 0, every transaction committed or rolled back and the run
 * closed; a second signal ends at once; a run left open by SIGKILL is closed as killed.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const GRACE_MS = 3_000;
const count = async (sql: string): Promise<number> => Number((await h!.sql<{ n: string }>(sql))[0]!.n);

/** Starts `run` with the grace time (GRACE_MS unless given) and a request log; returns the daemon and its ops port. */
async function startDaemon(harness: Harness, opts: { env?: Record<string, string>; config?: Record<string, unknown>; graceMs?: number } = {}) {
  harness.sim.stats.requestLog = [];
  const port = await freePort();
  const daemon = startCli(
    ['run'],
    daemonEnv(harness, {
      env: {
        STAYSYNC_OPS_PORT: String(port),
        STAYSYNC_SHUTDOWN_GRACE_MS: String(opts.graceMs ?? GRACE_MS),
        STAYSYNC_LOG_LEVEL: 'info',
        ...opts.env,
      },
      config: opts.config,
    }),
  );
  await waitFor('/healthz', async () => (await opsGet(port, '/healthz')).status === 200);
  return { daemon, port };
}

/** SIGTERM, then what a user checks: exit status, how long it took, no request after the signal, the run closed. */
async function stopAndCheck(daemon: ReturnType<typeof startCli>) {
  const signalledAt = Date.now();
  daemon.child.kill('SIGTERM');
  const r = await daemon.done;
  const took = Date.now() - signalledAt;
  expect(r.code, r.stdout.slice(-2000)).toBe(0);
  expect(took).toBeLessThan(GRACE_MS);
  // A request the daemon had already sent may arrive a moment later; nothing new after that.
  const late = h!.sim.stats.requestLog!.filter((e) => e.t > signalledAt + 150);
  expect(late).toEqual([]);
  const runs = await h!.sql<{ outcome: string | null; finished_at: Date | null }>('SELECT outcome, finished_at FROM sync_runs ORDER BY id');
  expect(runs.at(-1)).toMatchObject({ outcome: 'stopped', finished_at: expect.any(Date) });
  return { r, took };
}

/**
 * Holds a lock on booking_summaries and makes the provider list new bookings: the daemon's next
 * page write waits for the lock. Resolves once it waits (that daemon's session, on a table: other
 * test files' daemons share the server, and wait on advisory locks too); `release` commits the
 * lock away.
 */
async function holdNextPageWrite(harness: Harness, newBookings: number, daemon: ReturnType<typeof startCli>): Promise<{ release: () => Promise<void> }> {
  const locker = new pg.Client({ connectionString: harness.dbUrl, options: `-c search_path=${harness.schema}` });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE booking_summaries IN SHARE ROW EXCLUSIVE MODE');
  harness.sim.mutate({ count: 0, newCount: newBookings, propertyId: '500100' });
  const own = `staysync % pid ${daemon.child.pid}`;
  try {
    await waitFor('the page write to wait for the lock', async () => {
      const rows = await locker.query(
        `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name LIKE $1 AND wait_event_type = 'Lock' AND wait_event = 'relation'`,
        [own],
      );
      return Number(rows.rows[0].n) > 0;
    });
  } catch (err) {
    // Say what the daemon was doing instead, and let go of the table (a held lock would keep
    // the schema from being dropped after the test).
    const sessions = await locker.query(
      `SELECT state, wait_event_type, wait_event, left(query, 120) AS query FROM pg_stat_activity WHERE application_name LIKE $1`,
      [own],
    );
    await locker.query('ROLLBACK');
    await locker.end();
    throw new Error(`${(err as Error).message}; the daemon's sessions: ${JSON.stringify(sessions.rows)}; its last output: ${daemon.output().slice(-3000)}`);
  }
  let released = false;
  return {
    release: async () => {
      if (released) return;
      released = true;
      await locker.query('COMMIT');
      await locker.end();
    },
  };
}

describe('SIGTERM in each phase', () => {
  it('during token retries', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    h.sim.faults.tokenStatus = 503;
    const { daemon } = await startDaemon(h);
    // The first request refused: the daemon is in its retry (the 503's retry-after, then the
    // token gate, which admits a process's token requests at most every 5 s). Waiting for a
    // second request only waited out that spacing (TOKEN_GATE_SPACING_MS, src/cluster/token-gate.ts).
    await waitFor('a refused token request', () => h!.sim.stats.requestLog!.filter((e) => e.path === '/auth/token').length >= 1);
    await stopAndCheck(daemon);
  });

  it('during a page write held up by a lock: the page commits when the lock goes, within the grace time', async () => {
    // Five bookings: the first sync only has to end before the held page write (the phase under
    // test); each booking costs about eight PMS requests too, all of which the first sync waits for.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const { daemon } = await startDaemon(h, { config: { sync: { pollCron: '* * * * * *' } } });
    await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM bookings')) === 5);
    const lock = await holdNextPageWrite(h, 4, daemon);
    try {
      const signalledAt = Date.now();
      daemon.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 800));
      expect(daemon.child.exitCode).toBeNull();
      await lock.release();
      const r = await daemon.done;
      expect(r.code).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(GRACE_MS);
    } finally {
      await lock.release();
    }
    // The page committed with its cursor: the new bookings are listed (their details come next time).
    expect(await count('SELECT count(*) AS n FROM booking_summaries')).toBe(9);
    expect((await h.sql<{ outcome: string }>('SELECT outcome FROM sync_runs')).map((x) => x.outcome)).toEqual(['stopped']);
  });

  it('during a page write held past the grace time: exit 0 at the grace time, the page rolled back, done again next time', async () => {
    // As above, five bookings; and a grace time of 1.5 s, which this test waits out (the same
    // margins around it as at 3 s: exit within 200 ms after it, not before half of it).
    const graceMs = 1_500;
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const { daemon } = await startDaemon(h, { config: { sync: { pollCron: '* * * * * *' } }, graceMs });
    await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM bookings')) === 5);
    const lock = await holdNextPageWrite(h, 4, daemon);
    let took = 0;
    try {
      const signalledAt = Date.now();
      daemon.child.kill('SIGTERM');
      const r = await daemon.done;
      took = Date.now() - signalledAt;
      expect(r.code).toBe(0);
      expect(logRecords(r.stdout).map((l) => l.msg)).toContainEqual(expect.stringMatching(/shutdown grace time \(1500 ms, shutdown\.graceMs\) is over/));
    } finally {
      await lock.release();
    }
    expect(took).toBeLessThanOrEqual(graceMs + 200);
    expect(took).toBeGreaterThan(graceMs / 2);
    // The session died with the process: its page was rolled back, and the run row is closed.
    // This daemon's sessions only (other test files' daemons share the server).
    const own = `staysync % pid ${daemon.child.pid}`;
    await waitFor(
      'the page session to end',
      async () => (await count(`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name LIKE '${own}'`)) === 0,
    );
    expect(await count('SELECT count(*) AS n FROM booking_summaries')).toBe(5);
    expect(await h.sql('SELECT outcome, error FROM sync_runs')).toEqual([{ outcome: 'stopped', error: 'stopped at the end of the grace time' }]);
    const again = await runCli(['sync', '--once'], daemonEnv(h));
    expect(again.code).toBe(0);
    expect(await count('SELECT count(*) AS n FROM bookings')).toBe(9);
  });

  it('during the detail drain, with requests in flight', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 300 }] } });
    const { daemon } = await startDaemon(h);
    await waitFor('some details', async () => (await count('SELECT count(*) AS n FROM bookings')) > 20);
    h.sim.faults.latencyMs = { min: 5_000, max: 5_000 };
    await new Promise((r) => setTimeout(r, 300));
    const { took } = await stopAndCheck(daemon);
    // In-flight requests are abandoned, not waited for.
    expect(took).toBeLessThan(1_500);
  });

  it('during a content refresh', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }], contentOnlyProperties: 50 } });
    h.sim.faults.latencyMs = { min: 400, max: 400 };
    const { daemon } = await startDaemon(h, { env: { STAYSYNC_PROPERTY_IDS: '' } });
    await waitFor('the content refresh to start', async () => (await count('SELECT count(*) AS n FROM content_refreshes')) === 1);
    await stopAndCheck(daemon);
    expect(await h.sql('SELECT outcome FROM content_refreshes')).toEqual([{ outcome: 'stopped' }]);
  });

  it('during a backoff sleep after provider errors', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    h.sim.faults.error5xxRate = 1;
    const { daemon } = await startDaemon(h);
    // The rate hits the token endpoint too: two 5xx answers and the daemon is in its second
    // wait. (A third came only after another 5 s of the token gate's spacing, TOKEN_GATE_SPACING_MS.)
    await waitFor('5xx answers', () => (h!.sim.stats.byStatus[500] ?? 0) + (h!.sim.stats.byStatus[503] ?? 0) >= 2);
    await new Promise((r) => setTimeout(r, 500));
    await stopAndCheck(daemon);
  });
});

describe('ending at once', () => {
  it('a second signal exits at once; the run left open is closed as killed by the next start', async () => {
    // Five bookings, as above: the first sync and the last sync --once each fetch them all.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const { daemon } = await startDaemon(h, { config: { sync: { pollCron: '* * * * * *' } } });
    await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM bookings')) === 5);
    const lock = await holdNextPageWrite(h, 2, daemon);
    try {
      daemon.child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 200));
      const at = Date.now();
      daemon.child.kill('SIGTERM');
      const r = await daemon.done;
      expect(Date.now() - at).toBeLessThan(500);
      expect(r.code).toBe(1);
    } finally {
      await lock.release();
    }
    expect(await h.sql('SELECT outcome FROM sync_runs')).toEqual([{ outcome: null }]);

    // SIGKILL leaves a run open too; the next start closes both kinds as killed.
    const killed = startCli(['run'], daemonEnv(h));
    await waitFor('the second run to start', async () => (await count('SELECT count(*) AS n FROM sync_runs')) === 2);
    killed.child.kill('SIGKILL');
    await killed.done;
    const next = await runCli(['sync', '--once'], daemonEnv(h, { env: { STAYSYNC_LOG_LEVEL: 'info' } }));
    expect(next.code).toBe(0);
    expect(logRecords(next.stdout).map((l) => l.msg)).toContainEqual('closed 1 run(s) left open by a process that was killed (outcome killed)');
    expect((await h.sql<{ outcome: string }>('SELECT outcome FROM sync_runs ORDER BY id')).map((x) => x.outcome)).toEqual(['killed', 'killed', 'ok']);
  });
});
