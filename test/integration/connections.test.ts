/**
 * Several API connections in one daemon, as a partner runs it: each connection with its own
 * credentials, budget and properties, defined by one file each in a connections directory
 * that changes while the daemon runs. One connection's refused secret never slows another;
 * files added, changed and removed take effect without a restart.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { fastRateLimits, mirrorSnapshot, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
let dir: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

const A = { clientId: 'conn-a', clientSecret: 'secret-a', propertyIds: ['500100'] };
const B = { clientId: 'conn-b', clientSecret: 'secret-b', propertyIds: ['500200'] };
/** A's contracted details budget: slow enough that its use can be measured. */
const A_DETAILS_PER_SECOND = 30;
const A_BOOKINGS = 240;

function writeConnection(name: string, c: { clientId: string; clientSecret: string; propertyIds: string[] }, extra: Record<string, unknown> = {}): void {
  writeFileSync(join(dir!, `${name}.json`), JSON.stringify({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds, ...extra }));
}

async function bookingCount(propertyId: string): Promise<number> {
  const rows = await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings WHERE property_id = $1', [propertyId]);
  return Number(rows[0]?.n ?? 0);
}

describe('several API connections in one daemon', () => {
  it('a connection with a revoked secret fails alone, named; the healthy one converges at its full budget; a new secret in the file takes effect', async () => {
    h = await startHarness({
      sim: {
        clients: [{ ...A, rateLimits: { bookingDetails: [{ limit: A_DETAILS_PER_SECOND, windowMs: 1000 }] } }, B],
        properties: [
          { id: '500100', bookingCount: A_BOOKINGS },
          { id: '500200', bookingCount: 40 },
        ],
      },
    });
    h.sim.stats.requestLog = [];
    // The hotel regenerated B's secret: the one staysync has is refused.
    h.sim.setClientSecret(B.clientId, 'secret-b-2');
    dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    writeConnection('hotel-a', A, { rateLimits: { bookingDetails: [{ limit: A_DETAILS_PER_SECOND, windowMs: 1000 }] } });
    writeConnection('hotel-b', B);
    const port = await freePort();
    const env = daemonEnv(h, {
      // 16 details in flight (default 4): at 30 a second that is 4 round trips a second each,
      // so that the budget, not the round trip of a loaded machine (over 133 ms with 4), sets
      // the pace the test measures.
      config: { ops: { port }, sync: { failingRecheckMs: 600_000, detailConcurrency: 16 } },
      env: { STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_LOG_LEVEL: 'info' },
    });
    const { child, done, output } = startCli(['run'], env);
    try {
      await waitFor('hotel-a caught up', async () => (await bookingCount('500100')) === A_BOOKINGS, 60_000);
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_connection_state{connection="hotel-b",state="credentials_refused"}')).toBe(1);
      expect(metricValue(metrics, 'staysync_connection_state{connection="hotel-a",state="running"}')).toBe(1);
      const refused = logRecords(output()).find(
        (r) => r.level === 'error' && r.connection === 'hotel-b' && r.msg.includes('refused the API client credentials'),
      );
      expect(refused?.msg).toContain('the other connections go on');
      expect(output()).not.toContain('secret-b');

      // A used its whole details budget: from its first detail answer to its last, at least
      // 80 % of the contracted rate, and never a 429.
      const details = (h.sim.stats.requestLog ?? []).filter((r) => r.clientId === A.clientId && r.status === 200 && /\/bookings\/[^/]+$/.test(r.path));
      expect(details.length).toBeGreaterThanOrEqual(A_BOOKINGS);
      const seconds = (details.at(-1)!.t - details[0]!.t) / 1000;
      const rate = (details.length - 1) / seconds;
      expect(rate, `hotel-a fetched ${details.length} details in ${seconds.toFixed(1)} s`).toBeGreaterThanOrEqual(0.8 * A_DETAILS_PER_SECOND);
      expect(h.sim.stats.rejected429ByClient[A.clientId] ?? 0).toBe(0);
      expect(await bookingCount('500200')).toBe(0);

      // The operator puts the new secret in B's file: B restarts with it, A is not touched.
      const aRuns = await h.sql<{ id: string }>("SELECT id FROM sync_runs WHERE connection = 'hotel-a'");
      writeConnection('hotel-b', { ...B, clientSecret: 'secret-b-2' });
      await waitFor('hotel-b caught up', async () => (await bookingCount('500200')) === 40, 30_000);
      expect(await h.sql<{ id: string }>("SELECT id FROM sync_runs WHERE connection = 'hotel-a'")).toEqual(aRuns);
      const reloaded = logRecords(output()).find((r) => r.msg.startsWith('connections reloaded'));
      expect(reloaded?.msg).toContain('restarted hotel-b with new settings');
      await waitFor(
        'the mirror equals the simulator',
        async () => JSON.stringify(await mirrorSnapshot(h!)) === JSON.stringify(simulatorSnapshot(h!.sim)),
        30_000,
      );
      const cursors = await h.sql<{ property_id: string; connection: string }>(
        'SELECT DISTINCT property_id, connection FROM sync_cursors ORDER BY property_id',
      );
      expect(cursors).toEqual([
        { property_id: '500100', connection: 'hotel-a' },
        { property_id: '500200', connection: 'hotel-b' },
      ]);
    } finally {
      child.kill('SIGTERM');
    }
    const r = await done;
    expect(r.code).toBe(0);
  });

  it('a connection file added starts it, one removed stops it, SIGHUP reads the directory again; the others go on', async () => {
    h = await startHarness({
      sim: {
        clients: [A, B],
        properties: [
          { id: '500100', bookingCount: 30 },
          { id: '500200', bookingCount: 20 },
        ],
        rateLimits: fastRateLimits,
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    writeConnection('hotel-a', A);
    const port = await freePort();
    const env = daemonEnv(h, { config: { ops: { port } }, env: { STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_LOG_LEVEL: 'info' } });
    const { child, done, output } = startCli(['run'], env);
    try {
      await waitFor('hotel-a caught up', async () => (await bookingCount('500100')) === 30, 30_000);
      expect(await bookingCount('500200')).toBe(0);

      writeConnection('hotel-b', B);
      await waitFor('hotel-b caught up', async () => (await bookingCount('500200')) === 20, 30_000);
      expect(logRecords(output()).some((r) => r.msg.startsWith('connections reloaded: started hotel-b'))).toBe(true);

      rmSync(join(dir, 'hotel-a.json'));
      await waitFor('hotel-a stopped', () => logRecords(output()).some((r) => r.msg.startsWith('connections reloaded: stopped hotel-a')), 10_000);
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_connection_state{connection="hotel-a"}')).toBeUndefined();
      expect(metricValue(metrics, 'staysync_connection_state{connection="hotel-b",state="running"}')).toBe(1);
      const runs = await h.sql<{ connection: string; outcome: string | null }>('SELECT connection, outcome FROM sync_runs ORDER BY id');
      expect(runs).toEqual([
        { connection: 'hotel-a', outcome: 'stopped' },
        { connection: 'hotel-b', outcome: null },
      ]);

      // B goes on: its changes are mirrored; A's are not any more.
      h.sim.mutate({ count: 0, newCount: 2, propertyId: '500200' });
      h.sim.mutate({ count: 0, newCount: 2, propertyId: '500100' });
      await waitFor('hotel-b follows its changes', async () => (await bookingCount('500200')) === 22, 30_000);
      expect(await bookingCount('500100')).toBe(30);

      // SIGHUP reads the directory again; nothing changed, so nothing restarts.
      child.kill('SIGHUP');
      await waitFor('the SIGHUP reload', () => logRecords(output()).some((r) => r.msg === 'reloading the API connections'), 10_000);
      await new Promise((r) => setTimeout(r, 500));
      expect(logRecords(output()).filter((r) => r.msg.startsWith('connections reloaded'))).toHaveLength(2);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGTERM');
    }
    const r = await done;
    expect(r.code).toBe(0);
  });

  it('a replica of many connections stops on SIGTERM with exit 0 in a small heap, whatever the size of the fleet around it', async () => {
    // Each engine's last progress line read every property's cursor, 500 engines at once: a
    // replica of the fleet bench ran out of its 128 MB heap within a second of SIGTERM. Here:
    // 30 connections in a 64 MB heap, beside the cursors of 30,000 properties other replicas follow.
    const n = 30;
    // Token windows wide enough for the 30 to start together: behind the test's 3 per 100 ms
    // and 15 a second (and the shared token gate's batches of 3) the last engine started 16 s
    // after the first; here within a few seconds. The heap at SIGTERM is what is measured.
    // SIGTERM still waits until they caught up: sent as soon as each engine synced, it once
    // ended with exit 0 but without the 30 "stopped" lines on a loaded machine (30 engines
    // stopped mid first pass, likely past the 5 s shutdown grace).
    const rateLimits = {
      ...fastRateLimits,
      token: [
        { limit: 30, windowMs: 100 },
        { limit: 60, windowMs: 1000 },
      ],
    };
    const clients = Array.from({ length: n }, (_, i) => ({ clientId: `fleet-${i}`, clientSecret: `secret-${i}`, propertyIds: [String(600_000 + i)] }));
    h = await startHarness({ sim: { rateLimits, clients, properties: clients.map((c) => ({ id: c.propertyIds[0]!, bookingCount: 2 })) } });
    await h.migrate();
    await h.sql(
      `INSERT INTO sync_cursors (property_id, stream, cursor, position, caught_up, last_poll_at)
       SELECT 'other-' || i, 'booking_summaries', 'token-' || i, now(), true, now() FROM generate_series(1, 30000) i`,
    );
    dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    clients.forEach((c, i) => writeConnection(`hotel-${i}`, c));
    const env = daemonEnv(h, {
      config: { rateLimits },
      env: { STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_LOG_LEVEL: 'info', NODE_OPTIONS: '--max-old-space-size=64' },
    });
    const { child, done, output } = startCli(['run'], env);
    try {
      await waitFor(
        'every connection caught up',
        async () => {
          const rows = await h!.sql<{ n: string }>(`SELECT count(*) AS n FROM bookings WHERE property_id LIKE '6000%'`);
          return Number(rows[0]!.n) === 2 * n;
        },
        60_000,
      );
    } finally {
      child.kill('SIGTERM');
    }
    const r = await done;
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(logRecords(output()).filter((x) => x.msg === 'stopped: in-flight work finished, nothing committed is lost')).toHaveLength(n);
    // Every run row of the connections closed as stopped, none left open.
    const runs = await h.sql<{ outcome: string | null; n: string }>(`SELECT outcome, count(*) AS n FROM sync_runs GROUP BY outcome`);
    expect(runs).toEqual([{ outcome: 'stopped', n: String(n) }]);
  });

  it('a connections file that does not parse is reported with its path; the running connections go on', async () => {
    h = await startHarness({ sim: { clients: [A], properties: [{ id: '500100', bookingCount: 10 }] } });
    dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    writeConnection('hotel-a', A);
    const env = daemonEnv(h, { env: { STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_LOG_LEVEL: 'info' } });
    const { child, done, output } = startCli(['run'], env);
    try {
      await waitFor('hotel-a caught up', async () => (await bookingCount('500100')) === 10, 30_000);
      writeFileSync(join(dir, 'hotel-c.json'), '{"clientId": "c", ');
      const bad = await waitFor('the reload error', () => logRecords(output()).find((r) => r.msg.startsWith('connections not reloaded')), 10_000);
      expect(bad.msg).toContain(join(dir, 'hotel-c.json'));
      expect(bad.msg).toContain('The running connections go on unchanged');
      h.sim.mutate({ count: 0, newCount: 1, propertyId: '500100' });
      await waitFor('hotel-a goes on', async () => (await bookingCount('500100')) === 11, 30_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect((await done).code).toBe(0);
  });

  it('two connections of one API client share its budget: their requests together stay within its limits, without a 429', async () => {
    // A hotel group gives one API client two connections (one per property here). The provider
    // counts its limits per API client (all its tokens together): each connection pacing
    // itself at the full limit made the client send twice as much as it may.
    const shared = { clientId: 'conn-shared', clientSecret: 'secret-shared' };
    const details = { bookingDetails: [{ limit: 20, windowMs: 1000 }] };
    h = await startHarness({
      sim: {
        clients: [{ ...shared, rateLimits: details }],
        properties: [
          { id: '500100', bookingCount: 120 },
          { id: '500200', bookingCount: 120 },
        ],
      },
    });
    h.sim.stats.requestLog = [];
    dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    writeConnection('hotel-a', { ...shared, propertyIds: ['500100'] }, { rateLimits: details });
    writeConnection('hotel-b', { ...shared, propertyIds: ['500200'] }, { rateLimits: details });
    const env = daemonEnv(h, { config: { sync: { detailConcurrency: 16 } }, env: { STAYSYNC_CONNECTIONS_DIR: dir } });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await bookingCount('500100')).toBe(120);
    expect(await bookingCount('500200')).toBe(120);
    expect(h.sim.stats.rejected429ByClient[shared.clientId] ?? 0).toBe(0);
    // Both connections read details: the budget was shared, not taken by one of them.
    const detailsOf = (id: string) =>
      (h!.sim.stats.requestLog ?? []).filter((r) => r.status === 200 && r.path.startsWith(`/api/read-reservation/v1/properties/${id}/bookings/`));
    expect(detailsOf('500100').length).toBeGreaterThanOrEqual(120);
    expect(detailsOf('500200').length).toBeGreaterThanOrEqual(120);
  });
});
