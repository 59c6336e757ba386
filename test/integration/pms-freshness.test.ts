/**
 * The freshness of the PMS data, as an operator sees it, against the real CLI, the simulator and
 * real PostgreSQL: after `sync --once`, `status` names when each PMS refresh of a property last
 * read it (rooms, companies, where rooms are, occupancy) and what the pass after the backfill has
 * still to read (invoices, loyalty cards); `/metrics` of the daemon has the same as
 * staysync_stream_last_read_timestamp_seconds and staysync_pms_unread.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type Reads = Record<string, { state: string; readAt: string | null }>;

describe('freshness of the PMS data', () => {
  it('status and /metrics say when each PMS refresh last read a property, and what is not read yet', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 40 }] } });
    // The loyalty cards read (their default follows pms.personalData, off here).
    const cards = { STAYSYNC_PMS_LOYALTY_CARDS: 'true' };
    const env = daemonEnv(h, { allStreams: true, env: cards });
    const before = Date.now();
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);

    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      pms: { propertyId: string; reads: Reads; unread: Record<string, number> }[];
    };
    const p = json.pms.find((x) => x.propertyId === P)!;
    for (const stream of ['pms_rooms', 'pms_companies', 'accommodation_inventory', 'daily_occupancy']) {
      expect(p.reads[stream], stream).toMatchObject({ state: 'active' });
      expect(Date.parse(p.reads[stream]!.readAt!), stream).toBeGreaterThanOrEqual(before - 1000);
    }
    // sync --once waits for the pass after the backfill: nothing is left unread.
    expect(p.unread).toEqual({ invoices: 0, loyaltyCards: 0 });

    // Three reservations whose invoices, and two persons whose cards, are to be read again.
    await h.sql(`UPDATE pms_reservations SET invoices_read_at = NULL WHERE number IN (SELECT number FROM pms_reservations ORDER BY number LIMIT 3)`);
    await h.sql(`UPDATE pms_guests SET loyalty_cards_read_at = NULL WHERE pms_person_id IN (SELECT pms_person_id FROM pms_guests ORDER BY 1 LIMIT 2)`);
    const text = (await runCli(['status'], env)).stdout;
    const line = text.split('\n').find((l) => l.startsWith(`PMS property ${P} read:`));
    expect(line, text).toMatch(/rooms \d{4}-\d\d-\d\dT.*companies \d{4}-.*where rooms are \d{4}-.*occupancy \d{4}-/);
    expect(line).toContain('not read yet: invoices of 3 reservations, loyalty cards of 2 persons');

    // The daemon's /metrics says the same, and its pass reads them.
    const port = await freePort();
    const { child, done } = startCli(['run'], daemonEnv(h, { allStreams: true, config: { ops: { port } }, env: cards }));
    try {
      const scrape = () => opsGet(port, '/metrics').then((r) => r.body);
      const m = await waitFor('the PMS reads in /metrics', async () => {
        const body = await scrape();
        return metricValue(body, `staysync_stream_last_read_timestamp_seconds{property_id="${P}",stream="pms_companies"}`) !== undefined ? body : undefined;
      });
      for (const stream of ['pms_rooms', 'pms_companies', 'accommodation_inventory', 'daily_occupancy', 'booking_summaries'])
        expect(metricValue(m, `staysync_stream_last_read_timestamp_seconds{property_id="${P}",stream="${stream}"}`)! * 1000, stream).toBeGreaterThanOrEqual(
          before - 1000,
        );
      // At start the pass reads what waits: the gauges come down to 0.
      await waitFor('nothing unread in /metrics', async () => {
        const body = await scrape();
        return (
          metricValue(body, `staysync_pms_unread{property_id="${P}",data="invoices"}`) === 0 &&
          metricValue(body, `staysync_pms_unread{property_id="${P}",data="loyalty_cards"}`) === 0
        );
      });
      expect(await h.sql(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)).toEqual([{ n: 0 }]);
    } finally {
      child.kill('SIGTERM');
      await done;
    }
  });
});
