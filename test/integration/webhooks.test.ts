/**
 * The provider's change events, received by the daemon (the real CLI as a child process) on
 * its webhook port: authentication, batches that are not batches, a batch delivered twice, the
 * simulator delivering as the provider does, and a daemon killed right after acknowledging.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, logRecords, metricValue, opsGet, runCli, startReceivingDaemon, waitFor } from '../helpers/cli.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await h!.sql<{ n: string }>(sql, params))[0]!.n);
/** Polls rarely: what changes, changes through the events. */
const NO_POLLING = { sync: { pollCron: '0 0 1 1 *' }, pms: { pollCron: '0 0 1 1 *' } };

async function post(port: number, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${port}/webhooks/provider`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* plain text */
  }
  return { status: res.status, body: parsed };
}

/** A daemon receiving events, polling rarely. */
const startDaemon = (harness: Harness, opts: { env?: Record<string, string>; config?: Record<string, unknown> } = {}) =>
  startReceivingDaemon(harness, { env: opts.env ?? {}, config: { ...NO_POLLING, ...opts.config }, allStreams: true });

function event(type: string, payload: Record<string, unknown>, id = crypto.randomUUID()) {
  return { eventId: id, eventType: type, creationTime: new Date().toISOString(), payload };
}

describe('change events', () => {
  it('checks the credentials (401, nothing stored), refuses what is not a batch (400), stores a redelivered batch once', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const { daemon, port, hooks } = await startDaemon(h, { env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k3y-of-the-hotel' } });
    try {
      // The whole first sync (every reservation with its invoices, the search and the occupancy caught up): status says so below.
      const reservations = h.sim.pmsReservations('500100').length;
      await waitFor(
        'the first sync',
        async () =>
          (await count('SELECT count(*) AS n FROM pms_reservations')) === reservations &&
          (await count(`SELECT count(*) AS n FROM sync_cursors WHERE stream IN ('pms_reservations', 'daily_occupancy') AND caught_up`)) === 2,
        30_000,
      );
      const number = h.sim.pmsReservations('500100')[0]!.number;
      const batch = [
        event('webpms:check_out', { BookingNumber: number, PropertyId: '500100' }),
        event('webpms:change_room', { BookingNumber: number, PropertyId: '500100' }),
        event('crm:guest_merged', { GuestId: '42', PropertyId: '500100' }),
      ];

      expect((await post(hooks, batch)).status).toBe(401);
      expect((await post(hooks, batch, { 'API-KEY': 'wrong' })).status).toBe(401);
      expect(await count('SELECT count(*) AS n FROM webhook_events')).toBe(0);

      const notJson = await post(hooks, '{"eventId": ', { 'API-KEY': 'k3y-of-the-hotel' });
      expect(notJson.status).toBe(400);
      expect(notJson.body.error).toMatch(/not JSON/);
      const notArray = await post(hooks, { events: batch }, { 'API-KEY': 'k3y-of-the-hotel' });
      expect(notArray).toMatchObject({ status: 400, body: { error: expect.stringMatching(/JSON array of events/) } });
      const noId = await post(hooks, [{ eventType: 'webpms:check_in', payload: {} }], { 'API-KEY': 'k3y-of-the-hotel' });
      expect(noId).toMatchObject({
        status: 400,
        body: { stored: 0, refused: 1, refusedEvents: [{ index: 0, eventId: null, reason: expect.stringMatching(/eventId/) }] },
      });
      expect(await count('SELECT count(*) AS n FROM webhook_events')).toBe(0);
      // Kept where an operator can see it, not lost.
      expect(await count(`SELECT count(*) AS n FROM quarantine WHERE stream = 'webhook_receiver'`)).toBe(1);

      h.sim.stats.requestLog = [];
      const first = await post(hooks, batch, { 'API-KEY': 'k3y-of-the-hotel' });
      expect(first).toEqual({ status: 200, body: { stored: 3, duplicates: 0 } });
      const again = await post(hooks, batch, { 'API-KEY': 'k3y-of-the-hotel' });
      expect(again).toEqual({ status: 200, body: { stored: 0, duplicates: 3 } });
      await waitFor('the events processed', async () => (await count(`SELECT count(*) AS n FROM webhook_events WHERE state <> 'pending'`)) === 3);
      const states = await h.sql<{ event_type: string; state: string }>('SELECT event_type, state FROM webhook_events ORDER BY event_type');
      expect(states).toEqual([
        { event_type: 'crm:guest_merged', state: 'ignored' },
        { event_type: 'webpms:change_room', state: 'processed' },
        { event_type: 'webpms:check_out', state: 'processed' },
      ]);
      // Processed once, both events of the reservation by one fetch.
      const fetches = h.sim.stats.requestLog.filter((e) => e.path.endsWith(`/reservations/${number}`));
      expect(fetches).toHaveLength(1);
      // status shows the PMS side and the events.
      const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k3y-of-the-hotel' } });
      const status = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
        pms: { propertyId: string; state: string; caughtUp: boolean; occupancyState: string }[];
        events: unknown[];
      };
      expect(status.pms).toEqual([expect.objectContaining({ propertyId: '500100', state: 'active', caughtUp: true, occupancyState: 'active' })]);
      // A type the provider does not document is counted as `other`: anyone may invent types.
      expect(status.events).toEqual(
        expect.arrayContaining([
          { eventType: 'webpms:check_out', state: 'processed', n: 1 },
          { eventType: 'other', state: 'ignored', n: 1 },
        ]),
      );
      const text = (await runCli(['status'], env)).stdout;
      expect(text).toMatch(/PMS property\s+state/);
      expect(text).toMatch(/Change events: .*2 processed/);
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_webhook_events{event_type="webpms:check_out",state="processed"}')).toBe(1);
      expect(metricValue(metrics, 'staysync_property_state{property_id="500100",stream="pms_reservations",state="active"}')).toBe(1);
      expect(metricValue(metrics, 'staysync_webhook_event_latency_seconds_count{event_type="webpms:check_out"}')).toBe(1);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toContain('k3y-of-the-hotel');
  });

  it('brings a PMS change into the mirror in seconds through events delivered by the provider, without polling', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 60 }] } });
    const { daemon, hooks } = await startDaemon(h, {
      env: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'exely', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'pa55' },
    });
    try {
      await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM pms_reservations')) === h!.sim.pmsReservations('500100').length);
      h.sim.stats.requestLog = [];
      h.sim.webhooks.configure({
        url: `http://127.0.0.1:${hooks}/webhooks/provider`,
        auth: { kind: 'basic', user: 'exely', password: 'pa55' },
        duplicateRate: 1,
      });
      const candidates = h.sim.pmsReservations('500100').filter((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.actualCheckInDateTime === null);
      // One change at a time: one batch each, every batch after the first repeating an event.
      for (const r of candidates.slice(0, 3)) {
        const changedAt = Date.now();
        h.sim.pmsCheckIn('500100', r.number);
        await waitFor(
          `${r.number} checked in, in the mirror`,
          async () =>
            (await count(`SELECT count(*) AS n FROM pms_room_stays WHERE number = $1 AND position = 0 AND actual_check_in_at IS NOT NULL`, [r.number])) === 1,
          10_000,
          50,
        );
        expect(Date.now() - changedAt).toBeLessThan(5_000);
      }
      // Integration storage: a booking and an inventory block announced by their events, which
      // carry the id only, as documented. The URL of old (webhooks.path) names the only connection,
      // which follows one property: that is theirs.
      const stored = h.sim.integrationStorageBookings('500100')[0]!;
      const block = h.sim.inventoryBlocks('500100')[0]!;
      h.sim.touchIntegrationStorageBooking('500100', stored.id);
      h.sim.touchInventoryBlock('500100', block.id);
      const storageEvents = `SELECT event_type, payload, state, last_error FROM webhook_events WHERE event_type LIKE 'pms_integration_storage:%' ORDER BY event_type`;
      // (Not acted on in time: the comparison below shows them as they are.)
      const announced = (rows: { payload: Record<string, unknown> }[]) =>
        rows.some((e) => e.payload['bookingId'] === stored.id) && rows.some((e) => e.payload['inventoryBlockId'] === block.id);
      await waitFor('the storage events acted on', async () => {
        const rows = await h!.sql<{ state: string; payload: Record<string, unknown> }>(storageEvents);
        return announced(rows) && rows.every((e) => e.state !== 'pending');
      }).catch(() => undefined);
      // (Check-ins of reservations that have a storage booking announced theirs too.)
      const acted = await h.sql<{ event_type: string; payload: unknown; state: string; last_error: string | null }>(storageEvents);
      expect(acted).toEqual(
        expect.arrayContaining([
          { event_type: 'pms_integration_storage:booking_changed', payload: { bookingId: stored.id }, state: 'processed', last_error: null },
          { event_type: 'pms_integration_storage:inventory_block_changed', payload: { inventoryBlockId: block.id }, state: 'processed', last_error: null },
        ]),
      );
      expect(acted.filter((e) => e.state !== 'processed')).toEqual([]);
      // The property found is written into the events, with the connection their URL named.
      expect(await h.sql(`SELECT DISTINCT property_id, connection FROM webhook_events WHERE event_type LIKE 'pms_integration_storage:%'`)).toEqual([
        { property_id: '500100', connection: 'default' },
      ]);
      expect(await count(`SELECT count(*) AS n FROM integration_storage_bookings WHERE booking_id = $1 AND property_id = '500100'`, [stored.id])).toBe(1);
      expect(await count(`SELECT count(*) AS n FROM inventory_blocks WHERE inventory_block_id = $1 AND property_id = '500100'`, [block.id])).toBe(1);
      // The only property: no request to find it, one fetch each, none answered 404.
      const storageReads = h.sim.stats.requestLog.filter((e) => /^\/api\/pms-integration-storage\/.*\/(bookings|blocks)\//.test(e.path));
      expect(
        storageReads.filter((e) => e.path.endsWith(`/bookings/${stored.id}`) || e.path.endsWith(`/blocks/${block.id}`)).map((e) => [e.path, e.status]),
      ).toEqual(
        expect.arrayContaining([
          [`/api/pms-integration-storage/v1/properties/500100/bookings/${stored.id}`, 200],
          [`/api/pms-integration-storage/v1/properties/500100/inventories/blocks/${block.id}`, 200],
        ]),
      );
      expect(storageReads).toHaveLength(acted.length);
      expect(storageReads.filter((e) => e.status !== 200)).toEqual([]);
      const [row] = await h.sql<{ updated_at: Date; raw: unknown }>('SELECT updated_at, raw FROM integration_storage_bookings WHERE booking_id = $1', [
        stored.id,
      ]);
      expect(row!.updated_at.toISOString()).toBe(new Date(h.sim.integrationStorageBookings('500100')[0]!.updateDateTime).toISOString());
      await h.sim.webhooks.idle();
      // Duplicates were delivered, and stored once each.
      const delivered = h.sim.webhooks.log.flatMap((d) => d.eventIds);
      expect(delivered.length).toBeGreaterThan(new Set(delivered).size);
      expect(await count('SELECT count(*) AS n FROM webhook_events')).toBe(new Set(delivered).size);
      // A check-in does not change the booking of the booking list: no details call for it.
      const detailsOf = (n: string) => h!.sim.stats.requestLog!.filter((e) => e.path.endsWith(`/read-reservation/v1/properties/500100/bookings/${n}`));
      for (const r of candidates.slice(0, 3)) expect(detailsOf(r.number)).toEqual([]);
      // A cancellation may: the booking's details are fetched first in line.
      const listed = new Set(h.sim.bookings('500100').map((b) => b.number));
      const cancelled = h.sim
        .pmsReservations('500100')
        .find((r) => listed.has(r.number) && r.reservationStatus !== 'Cancelled' && !candidates.slice(0, 3).includes(r))!;
      h.sim.pmsCancel('500100', cancelled.number);
      await waitFor(
        'the cancellation in the mirror, and the details asked for',
        async () =>
          (await count(`SELECT count(*) AS n FROM pms_reservations WHERE number = $1 AND reservation_status = 'Cancelled'`, [cancelled.number])) === 1 &&
          detailsOf(cancelled.number).length === 1,
      );
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    expect((await daemon.done).code).toBe(0);
  });

  it('processes after a restart what it acknowledged before it was killed', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    let { daemon, hooks } = await startDaemon(h);
    const reservation = h.sim.pmsReservations('500100').find((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.actualCheckInDateTime === null)!;
    try {
      await waitFor('the first sync', async () => (await count('SELECT count(*) AS n FROM pms_reservations')) > 0);
      // The refresh cannot succeed now: the PMS answers 503 for this property.
      h.sim.faults.propertyStatus.set('500100', { status: 503, scopes: ['standard'] });
      h.sim.pmsCheckIn('500100', reservation.number);
      const ack = await post(hooks, [event('webpms:check_in', { BookingNumber: reservation.number, PropertyId: '500100' })]);
      expect(ack.status).toBe(200);
      daemon.child.kill('SIGKILL');
      await daemon.done;
    } finally {
      daemon.child.kill('SIGKILL');
    }
    expect(await h.sql('SELECT state FROM webhook_events')).toEqual([{ state: 'pending' }]);

    h.sim.faults.propertyStatus.clear();
    ({ daemon, hooks } = await startDaemon(h));
    try {
      await waitFor(
        'the event processed after the restart',
        async () => (await count(`SELECT count(*) AS n FROM webhook_events WHERE state = 'processed'`)) === 1,
      );
      expect(
        await count(`SELECT count(*) AS n FROM pms_room_stays WHERE number = $1 AND position = 0 AND actual_check_in_at IS NOT NULL`, [reservation.number]),
      ).toBe(1);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    expect(logRecords(r.stdout).filter((l) => l.level === 'error')).toEqual([]);
  });
});
