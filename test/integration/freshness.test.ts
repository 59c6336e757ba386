/**
 * Freshness, measured and shown, with the daemon as deployed (`node dist/cli/main.js run`, real
 * PostgreSQL, the simulator, the fast test windows and adaptive polling): changes made at the
 * provider after catch-up reach `bookings` within seconds; each is recorded once in change_lags
 * (a backfill records nothing, a day-old row is pruned), observed in staysync_change_lag_seconds,
 * and the per-property gauges, `status` (text and JSON) and reporting.freshness all say the
 * same as the tables.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const BUSY = '500100';
const QUIET = '500200';
const CHANGES = 4;
type AnyRecord = Record<string, any>;

/** The type-7 quantile, as percentile_cont computes it. */
function percentile(values: number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

describe('freshness', () => {
  it('mirrors a change within seconds and shows its lag in change_lags, /metrics, status and reporting.freshness', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: BUSY, bookingCount: 20 },
          { id: QUIET, bookingCount: 10 },
        ],
      },
    });
    const port = await freePort();
    const env = daemonEnv(h, {
      config: { pms: { enabled: false }, occupancy: { enabled: false } },
      env: { STAYSYNC_OPS_PORT: String(port) },
    });
    const daemon = startCli(['run'], env);
    let stopped = false;
    try {
      const caughtUp = async () =>
        Number((await h!.sql<{ n: string }>("SELECT count(*) AS n FROM sync_cursors WHERE stream = 'booking_summaries' AND caught_up"))[0]!.n) === 2 &&
        Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]!.n) === 30;
      await waitFor('the first sync of both properties', caughtUp, 30_000);
      // The backfill is not a fresh change: nothing recorded.
      expect(await h.sql('SELECT * FROM change_lags')).toEqual([]);
      // A day-old row goes with the next fresh write of its property.
      await h.sql(`INSERT INTO change_lags VALUES ($1, 'old', now() - interval '26 hours', now() - interval '25 hours')`, [BUSY]);

      const made: { number: string; version: number; madeAt: number; seenAt: number }[] = [];
      for (let i = 0; i < CHANGES; i++) {
        // Each change in a second of its own: modifiedDateTime has whole seconds.
        if (i > 0) await new Promise((r) => setTimeout(r, 1_100));
        const before = new Map(h.sim.bookings(BUSY).map((b) => [b.number, b.modifiedDateTime]));
        const madeAt = Date.now();
        h.sim.mutate({ count: 1, propertyId: BUSY });
        const changed = h.sim.bookings(BUSY).find((b) => before.get(b.number) !== b.modifiedDateTime)!;
        expect(changed, 'the simulator changed a booking').toBeDefined();
        const version = Date.parse(changed.modifiedDateTime);
        await waitFor(
          `booking ${changed.number} at its new version in the mirror`,
          async () => {
            const r = await h!.sql<{ modified_at: Date }>('SELECT modified_at FROM bookings WHERE property_id = $1 AND number = $2', [BUSY, changed.number]);
            return r[0] !== undefined && r[0].modified_at.getTime() >= version;
          },
          10_000,
          50,
        );
        made.push({ number: changed.number, version, madeAt, seenAt: Date.now() });
      }
      // Adaptive polling with the test windows polls each property every 250 ms (the floor).
      for (const m of made) expect(m.seenAt - m.madeAt, `change of ${m.number}`).toBeLessThan(5_000);

      // change_lags: one row per change, at the version the list announced, written after it.
      const lags = await h.sql<{ number: string; modified_at: Date; written_at: Date; lag: number; old: boolean }>(
        `SELECT number, modified_at, written_at, extract(epoch FROM written_at - modified_at)::float8 AS lag, written_at < now() - interval '1 day' AS old
           FROM change_lags WHERE property_id = $1 ORDER BY written_at`,
        [BUSY],
      );
      expect(lags.map((l) => l.number)).toEqual(made.map((m) => m.number));
      expect(lags.map((l) => l.modified_at.getTime())).toEqual(made.map((m) => m.version));
      for (const [i, l] of lags.entries()) {
        expect(l.lag).toBeGreaterThanOrEqual(0);
        // From the whole second the provider announced: at most a second more than the bench-side time.
        expect(l.lag).toBeLessThan((made[i]!.seenAt - made[i]!.madeAt) / 1000 + 1.5);
      }
      expect(await h.sql(`SELECT * FROM change_lags WHERE property_id = $1 AND number = 'old'`, [BUSY])).toEqual([]);
      expect(await h.sql('SELECT * FROM change_lags WHERE property_id = $1', [QUIET])).toEqual([]);

      // /metrics: the histogram counted each change once with the same lags; the gauges agree with the tables.
      const metrics = (await opsGet(port, '/metrics')).body;
      const scrapedAt = Date.now() / 1000;
      expect(metricValue(metrics, `staysync_change_lag_seconds_count{property_id="${BUSY}"}`)).toBe(CHANGES);
      expect(metricValue(metrics, `staysync_change_lag_seconds_sum{property_id="${BUSY}"}`)).toBeCloseTo(
        lags.reduce((s, l) => s + l.lag, 0),
        2,
      );
      expect(metricValue(metrics, `staysync_change_lag_seconds_bucket{le="0.25",property_id="${BUSY}"}`)).toBeDefined();
      expect(metricValue(metrics, `staysync_change_lag_seconds_bucket{le="600",property_id="${BUSY}"}`)).toBe(CHANGES);
      expect(metricValue(metrics, `staysync_change_lag_seconds_count{property_id="${QUIET}"}`)).toBeUndefined();
      for (const id of [BUSY, QUIET]) {
        const lastPoll = metricValue(metrics, `staysync_last_poll_timestamp_seconds{property_id="${id}"}`);
        // Polled every quarter second or so.
        expect(lastPoll, `last poll of ${id}`).toBeGreaterThan(scrapedAt - 5);
        expect(lastPoll).toBeLessThanOrEqual(scrapedAt + 0.1);
        const newest = (await h.sql<{ m: Date }>('SELECT max(modified_at) AS m FROM bookings WHERE property_id = $1', [id]))[0]!.m;
        const age = metricValue(metrics, `staysync_newest_change_age_seconds{property_id="${id}"}`);
        expect(age, `newest change age of ${id}`).toBeDefined();
        expect(Math.abs(age! - (scrapedAt - newest.getTime() / 1000)), `newest change age of ${id}`).toBeLessThan(2);
      }
      // The busy property's newest change is the last one made: seconds old. The quiet one's is from the generated history.
      expect(metricValue(metrics, `staysync_newest_change_age_seconds{property_id="${BUSY}"}`)).toBeLessThan(10);
      expect(metricValue(metrics, `staysync_newest_change_age_seconds{property_id="${QUIET}"}`)).toBeGreaterThan(60);

      // status, text: a freshness line per property.
      const text = await runCli(['status'], env);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(
        new RegExp(
          `property ${BUSY} freshness: last poll \\S+Z \\([\\d.]+s ago\\), newest change [\\d.]+s old, data as of \\S+Z \\([\\d.]+s ago\\), lag p50 [\\d.]+s, p95 [\\d.]+s \\(${CHANGES} fresh changes in the last hour\\)`,
        ),
      );
      expect(text.stdout).toMatch(new RegExp(`property ${QUIET} freshness: last poll .*, no fresh change in the last hour`));

      // Stopped: the tables hold still while status --json and the view are compared with them.
      daemon.child.kill('SIGTERM');
      const end = await daemon.done;
      stopped = true;
      expect(end.code, end.stderr).toBe(0);
      const tables = await h.sql<AnyRecord>(
        `SELECT c.property_id, c.last_poll_at, (SELECT max(b.modified_at) FROM bookings b WHERE b.property_id = c.property_id) AS newest
           FROM sync_cursors c WHERE c.stream = 'booking_summaries' ORDER BY 1`,
      );
      const lagValues = lags.map((l) => l.lag);

      const json = await runCli(['status', '--json'], env);
      expect(json.code, json.stderr).toBe(0);
      const props = (JSON.parse(json.stdout) as { properties: { propertyId: string; freshness: AnyRecord }[] }).properties;
      expect(props.map((p) => p.propertyId)).toEqual([BUSY, QUIET]);
      for (const [i, p] of props.entries()) {
        expect(p.freshness.lastPollAt).toBe(tables[i]!.last_poll_at.toISOString());
        expect(p.freshness.newestChangeAt).toBe(tables[i]!.newest.toISOString());
        // Caught up and nothing pending: the mirror is complete as of the last poll.
        expect(p.freshness.dataAsOf).toBe(tables[i]!.last_poll_at.toISOString());
        expect(p.freshness.lastPollAgeSeconds).toBeGreaterThanOrEqual(0);
      }
      expect(props[0]!.freshness).toMatchObject({ changesLastHour: CHANGES });
      expect(props[0]!.freshness.lagP50Seconds).toBeCloseTo(percentile(lagValues, 0.5), 2);
      expect(props[0]!.freshness.lagP95Seconds).toBeCloseTo(percentile(lagValues, 0.95), 2);
      expect(props[1]!.freshness).toMatchObject({ changesLastHour: 0, lagP50Seconds: null, lagP95Seconds: null });

      const view = await h.sql<AnyRecord>(`SELECT * FROM "${reportingSchemaOf(h.schema)}".freshness ORDER BY property_id`);
      expect(view.map((v) => v.property_id)).toEqual([BUSY, QUIET]);
      for (const [i, v] of view.entries()) {
        expect(v.last_poll_at).toEqual(tables[i]!.last_poll_at);
        expect(v.newest_change_at).toEqual(tables[i]!.newest);
        expect(v.data_as_of).toEqual(tables[i]!.last_poll_at);
      }
      expect(Number(view[0]!.changes_last_hour)).toBe(CHANGES);
      expect(Number(view[0]!.lag_p50_seconds)).toBeCloseTo(percentile(lagValues, 0.5), 2);
      expect(Number(view[0]!.lag_p95_seconds)).toBeCloseTo(percentile(lagValues, 0.95), 2);
      expect(view[1]).toMatchObject({ lag_p50_seconds: null, lag_p95_seconds: null });
      expect(Number(view[1]!.changes_last_hour)).toBe(0);

      // A change waiting for its details holds "data as of" back to its modification time.
      const waiting = new Date(tables[1]!.last_poll_at.getTime() - 30_000);
      await h.sql(
        `INSERT INTO booking_detail_queue (property_id, number, wanted_modified_at, priority, generation) VALUES ($1, 'waiting', $2, 0, nextval('booking_detail_queue_generation'))`,
        [QUIET, waiting],
      );
      const held = await h.sql<AnyRecord>(`SELECT data_as_of FROM "${reportingSchemaOf(h.schema)}".freshness WHERE property_id = $1`, [QUIET]);
      expect(held[0]!.data_as_of).toEqual(waiting);
      const heldJson = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { properties: { propertyId: string; freshness: AnyRecord }[] };
      expect(heldJson.properties.find((p) => p.propertyId === QUIET)!.freshness.dataAsOf).toBe(waiting.toISOString());
    } finally {
      if (!stopped) {
        daemon.child.kill('SIGTERM');
        await daemon.done;
      }
    }
  });
});
