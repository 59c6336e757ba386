/**
 * The daemon and a provider that misbehaves, each failure caused for real by the simulator
 * (or by an address nothing answers on): a permanent 403 on one property, answers that stall
 * mid-body, bodies cut short or replaced by an HTML page, 404s of a lagging replica, an
 * unreachable provider for `sync --once`, and an outage of the token endpoint under `run`.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { mirrorSnapshot, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const count = async (sql: string): Promise<number> => Number((await h!.sql<{ n: string }>(sql))[0]!.n);

interface StatusJson {
  properties: { propertyId: string; state: string; since: string | null; lastError: string | null; queuePending: number }[];
  pms: { propertyId: string; state: string; occupancyState: string }[];
}
const statusOf = async (env: Record<string, string>): Promise<StatusJson> => JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;

describe('a permanent error on one property', () => {
  it('sync --once: the others converge, the property is failing with the reason, exit 1 naming it', async () => {
    // A few bookings each: the claim is which property fails, why, and that the others finish;
    // every property's list is one page at any of these sizes, and each booking brings its PMS
    // reservation, guests, invoices and cards (about eight requests), which only add time.
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 8 },
          { id: '500200', bookingCount: 6 },
          { id: '7291', bookingCount: 4 },
        ],
      },
    });
    h.sim.faults.propertyStatus.set('500200', { status: 403 });
    h.sim.stats.requestLog = [];
    // With the PMS streams: a 403 of the PMS API is a stream not granted, not a failure.
    const env = daemonEnv(h, { allStreams: true });
    const started = Date.now();
    const r = await runCli(['sync', '--once'], env);
    expect(r.code, r.stdout.slice(-2000)).toBe(1);
    // Not retried for long: a 403 is not a passing fault.
    expect(Date.now() - started).toBeLessThan(20_000);
    const msgs = logRecords(r.stdout).map((l) => l.msg);
    expect(msgs).toContainEqual(expect.stringMatching(/^property 500200: booking list failing: bookingList \S+: HTTP 403/));
    expect(msgs).toContainEqual(expect.stringMatching(/sync --once finished with failing properties: 500200 \(booking list\) \(the others are caught up\)/));
    // A 403 of the PMS API is that API not granted (for this property, until the next token): not a failure.
    expect(msgs).toContainEqual(expect.stringMatching(/^property 500200: PMS reservations not granted: standard \S+: HTTP 403/));
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim).filter((b) => !b.key.startsWith('500200/')));
    // The booking list was asked once (its content rules were refused too, and kept as they were).
    const refused = h.sim.stats.requestLog.filter((e) => e.status === 403);
    expect(refused.filter((e) => e.path.endsWith('/properties/500200/bookings'))).toHaveLength(1);
    expect(refused.every((e) => e.propertyId === '500200')).toBe(true);

    const status = await statusOf(env);
    const failing = status.properties.find((p) => p.propertyId === '500200')!;
    expect(failing).toMatchObject({ state: 'failing', lastError: expect.stringMatching(/HTTP 403/), since: expect.any(String) });
    expect(status.properties.filter((p) => p.propertyId !== '500200').map((p) => p.state)).toEqual(['active', 'active']);
    expect(status.pms.find((p) => p.propertyId === '500200')).toMatchObject({ state: 'not_granted', occupancyState: 'not_granted' });
    const text = (await runCli(['status'], env)).stdout;
    expect(text).toMatch(/500200\s+FAILING/);
    expect(text).toMatch(/property 500200: FAILING: bookingList .*HTTP 403/);

    // Fixed at the provider: the next run picks it up and the state is active again.
    h.sim.faults.propertyStatus.clear();
    const again = await runCli(['sync', '--once'], env);
    expect(again.code).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const healed = await statusOf(env);
    expect(healed.properties.map((p) => p.state)).toEqual(['active', 'active', 'active']);
    expect(healed.pms.map((p) => [p.state, p.occupancyState])).toEqual([
      ['active', 'active'],
      ['active', 'active'],
      ['active', 'active'],
    ]);
  });

  it('run: the property shows failing in /metrics while the others converge', async () => {
    // As above: a few bookings show the others converging as well as a hundred would.
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 5 },
          { id: '500200', bookingCount: 3 },
          { id: '7291', bookingCount: 2 },
        ],
      },
    });
    h.sim.faults.propertyStatus.set('7291', { status: 400, scopes: ['bookingList'] });
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) } }));
    try {
      await waitFor('the other properties', async () => (await count(`SELECT count(*) AS n FROM bookings WHERE property_id <> '7291'`)) === 8);
      const metrics = await waitFor('the failing state in /metrics', async () => {
        const body = (await opsGet(port, '/metrics')).body;
        return metricValue(body, 'staysync_property_state{property_id="7291",stream="booking_summaries",state="failing"}') === 1 ? body : undefined;
      });
      expect(metricValue(metrics, 'staysync_property_state{property_id="500100",stream="booking_summaries",state="active"}')).toBe(1);
      expect((await opsGet(port, '/readyz')).status).toBe(200);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
  });
});

describe('answers that are not usable', () => {
  it('stalled mid-body, cut short, HTML pages and lagging 404s: retried, nothing quarantined, everything arrives', async () => {
    // 70 bookings make about 600 requests (each booking brings its PMS reservation, guests,
    // invoices and cards): at these rates about 18 stalls, 30 bodies cut short and 30 HTML
    // pages (none of a kind has a chance of about 1e-8), and every booking's details 404 twice.
    // More bookings only mean more of the same retries.
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 40 },
          { id: '500200', bookingCount: 30 },
        ],
      },
    });
    h.sim.faults.stallMidBodyRate = 0.03;
    h.sim.faults.truncatedBodyRate = 0.05;
    h.sim.faults.htmlBodyRate = 0.05;
    h.sim.faults.replicaLag404s = 2;
    const env = daemonEnv(h, { config: { provider: { requestTimeoutMs: 800, maxAttempts: 10 } } });
    const r = await runCli(['sync', '--once'], env);
    expect(r.code, r.stdout.slice(-3000)).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    expect(await h.sql('SELECT * FROM quarantine')).toEqual([]);
    expect(await h.sql('SELECT * FROM booking_detail_queue')).toEqual([]);
    const { stalled, truncated, html, lagged404 } = h.sim.stats;
    expect(stalled).toBeGreaterThan(0);
    expect(truncated).toBeGreaterThan(0);
    expect(html).toBeGreaterThan(0);
    expect(lagged404).toBe(2 * 70);
    // The run's stats say what happened, by cause.
    const [run] = await h.sql<{ stats: { provider: { failures: Record<string, number> } } }>('SELECT stats FROM sync_runs');
    expect(run!.stats.provider.failures.timeout).toBeGreaterThan(0);
    expect(run!.stats.provider.failures.invalid_body).toBe(truncated + html);
  });
});

describe('nothing stays missing', () => {
  it('run: bookings quarantined or answering 404 are fetched again on a backoff and arrive once the provider heals', async () => {
    // Twelve bookings: two to park, the others to show the drain goes on around them.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 12 }] } });
    const numbers = h.sim.bookings('500100').map((b) => b.number);
    const [bad, gone] = [numbers[3]!, numbers[7]!];
    h.sim.faults.malformedBookingNumbers.add(bad);
    h.sim.faults.notFoundBookingNumbers.add(gone);
    const port = await freePort();
    const env = daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) }, config: { sync: { refetchParkedAfterMs: 500 } } });
    const daemon = startCli(['run'], env);
    try {
      await waitFor(
        'both parked',
        async () => (await count(`SELECT count(*) AS n FROM booking_detail_queue WHERE state IN ('quarantined', 'not_found')`)) === 2,
      );
      const parked = await h.sql<{ number: string; state: string; last_error: string }>(
        'SELECT number, state, last_error FROM booking_detail_queue ORDER BY state',
      );
      expect(parked).toEqual([
        { number: gone, state: 'not_found', last_error: 'provider answered 404' },
        { number: bad, state: 'quarantined', last_error: expect.stringMatching(/roomStays|total/) },
      ]);
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_detail_queue_parked{property_id="500100",state="not_found"}')).toBe(1);
      expect(metricValue(metrics, 'staysync_detail_queue_parked{property_id="500100",state="quarantined"}')).toBe(1);
      // Still failing: fetched again (the quarantine keeps one row, counting the repeats).
      await waitFor('a repeat of the quarantine', async () => (await count(`SELECT coalesce(max(occurrences), 0) AS n FROM quarantine`)) >= 2, 20_000);
      h.sim.faults.malformedBookingNumbers.clear();
      h.sim.faults.notFoundBookingNumbers.clear();
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === 12, 30_000);
      expect(await h.sql('SELECT * FROM booking_detail_queue')).toEqual([]);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    expect(await h.sql<{ entity_key: string }>('SELECT entity_key FROM quarantine')).toEqual([{ entity_key: bad }]);
  });
});

describe('an unreachable provider', () => {
  const closedPort = async (): Promise<number> =>
    new Promise((resolve) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const port = (s.address() as { port: number }).port;
        s.close(() => resolve(port));
      });
    });

  it('sync --once gives up after provider.giveUpAfterMs, exit 1, naming the host, the last error and the setting', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const port = await closedPort();
    const started = Date.now();
    const r = await runCli(
      ['sync', '--once'],
      daemonEnv(h, { env: { STAYSYNC_PROVIDER_URL: `http://127.0.0.1:${port}` }, config: { provider: { giveUpAfterMs: 1_000 } } }),
    );
    const took = Date.now() - started;
    expect(r.code, r.stdout.slice(-2000)).toBe(1);
    expect(took).toBeLessThan(12_000);
    const msg = logRecords(r.stdout)
      .map((l) => l.msg)
      .find((m) => m.startsWith('sync --once gave up'));
    expect(msg).toMatch(new RegExp(`the provider 127\\.0\\.0\\.1:${port} has given no usable answer for \\d+ s \\(last error: ECONNREFUSED`));
    expect(msg).toContain('Check STAYSYNC_PROVIDER_URL');
    expect(r.stdout).not.toMatch(/caught up/);
    expect(r.stdout + r.stderr).not.toMatch(/\n\s+at /);
    expect(await h.sql<{ outcome: string }>('SELECT outcome FROM sync_runs')).toEqual([{ outcome: 'failed' }]);
  });

  it('names a DNS failure and a TLS failure the same way', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const cases: [string, RegExp][] = [
      ['https://staysync-no-such-host.invalid', /the provider staysync-no-such-host\.invalid has given no usable answer .*\(last error: (ENOTFOUND|EAI_AGAIN)/],
      // TLS to a plain-HTTP server: the handshake fails.
      [h.sim.url.replace('http:', 'https:'), /has given no usable answer .*\(last error: .*(SSL|TLS|EPROTO|wrong version)/i],
    ];
    for (const [url, expected] of cases) {
      const r = await runCli(['sync', '--once'], daemonEnv(h, { env: { STAYSYNC_PROVIDER_URL: url }, config: { provider: { giveUpAfterMs: 1_000 } } }));
      expect(r.code).toBe(1);
      expect(logRecords(r.stdout).map((l) => l.msg)).toContainEqual(expect.stringMatching(expected));
    }
  });
});

describe('a provider outage under run', () => {
  it('is visible while it lasts (log once, status, /metrics) and the daemon recovers by itself', async () => {
    const port = await freePort();
    // Tokens live 3 s (renewed 1.5 s before expiry), so the token endpoint's outage stops the sync.
    h = await startHarness({
      sim: {
        // A few bookings: the outage and the recovery are the subject, not the volume.
        properties: [
          { id: '500100', bookingCount: 8 },
          { id: '500200', bookingCount: 6 },
        ],
        tokenTtlSeconds: 3,
      },
    });
    const env = daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' }, config: { sync: { pollCron: '* * * * * *' } } });
    const daemon = startCli(['run'], env);
    try {
      await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM bookings')) === 14);
      h.sim.faults.tokenStatus = 503;
      h.sim.faults.error5xxRate = 1;
      const during = await waitFor(
        'the outage in /metrics',
        async () => {
          const body = (await opsGet(port, '/metrics')).body;
          return metricValue(body, `staysync_provider_up{host="${new URL(h!.sim.url).host}"}`) === 0 ? body : undefined;
        },
        20_000,
      );
      expect(metricValue(during, 'staysync_provider_failures_total{cause="http_5xx"}')).toBeGreaterThan(0);
      expect(metricValue(during, 'staysync_provider_retries_total')).toBeGreaterThan(0);
      expect(metricValue(during, `staysync_provider_last_success_timestamp_seconds{host="${new URL(h.sim.url).host}"}`)).toBeGreaterThan(0);
      const status = await waitFor('status to show the outage per property', async () => {
        const s = await statusOf(env);
        return s.properties.every((p) => p.state === 'retrying') ? s : undefined;
      });
      // The outage as a whole, or this property's own request that gave up on it.
      expect(status.properties[0]!.lastError).toMatch(/unreachable since|no usable answer from/);
      expect((await opsGet(port, '/readyz')).status).toBe(200);

      h.sim.faults.tokenStatus = undefined;
      h.sim.faults.error5xxRate = 0;
      h.sim.mutate({ count: 5, newCount: 5 });
      await waitFor('the changes after the outage', async () => (await count('SELECT count(*) AS n FROM bookings')) === h!.sim.bookings().length, 30_000);
      await waitFor('status active again', async () => (await statusOf(env)).properties.every((p) => p.state === 'active'));
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    const msgs = logRecords(r.stdout).map((l) => l.msg);
    expect(msgs.filter((m) => /^provider \S+ unreachable since/.test(m))).toHaveLength(1);
    expect(msgs.filter((m) => /^provider \S+ answers again after/.test(m))).toHaveLength(1);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });
});
