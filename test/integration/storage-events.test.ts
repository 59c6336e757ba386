/**
 * Integration-storage events as the provider documents them (issue 36, point 1): a
 * `pms_integration_storage:booking_changed` or `…:inventory_block_changed` event carries the id
 * to fetch and no property. Against the real CLI, the simulator delivering over HTTP and real
 * PostgreSQL:
 * - the delivery URL of a connection (webhooks.path/<connection>) names it; a connection of
 *   several properties finds the property by asking each in turn, once per id, and later events
 *   of that id cost no search;
 * - an id no property has is kept (waiting), said in the log, `status` and /metrics, asked
 *   again later and fetched once the provider has it;
 * - the URL of old, with several connections, names none: its events wait, said once, until
 *   the mirror knows the id; an unknown or malformed connection name is refused with 404;
 * - a storage event of an API the connection may not use (403) waits until it is granted;
 * - a provider that also sends the property is read without a search;
 * - `…:inventory_changed` refreshes the property's inventory per room type.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, logRecords, metricValue, opsGet, runCli, startReceivingDaemon, waitFor } from '../helpers/cli.js';
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, startHarness, type Harness } from '../helpers/harness.js';
import { simulatorClaims, type RequestLogEntry } from '../../tools/simulator/index.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Polls rarely: what changes, changes through the events. */
const NO_POLLING = { sync: { pollCron: '0 0 1 1 *' }, pms: { pollCron: '0 0 1 1 *' } };
const TWO_PROPERTIES = [
  { id: '500100', bookingCount: 20 },
  { id: '500200', bookingCount: 20 },
];

type EventRow = {
  event_type: string;
  state: string;
  property_id: string | null;
  connection: string | null;
  last_error: string | null;
};
/** The events of an id as stored (read whole, so that a schema without a column shows it missing rather than failing the query). */
const eventsOf = async (id: string): Promise<EventRow[]> =>
  (
    await h!.sql<{ e: EventRow }>(
      `SELECT to_jsonb(w) AS e FROM webhook_events w WHERE entity_key = $1 OR payload->>'bookingId' = $1 OR payload->>'inventoryBlockId' = $1
        ORDER BY received_at, event_id`,
      [id],
    )
  ).map(({ e }) => ({ event_type: e.event_type, state: e.state, property_id: e.property_id, connection: e.connection, last_error: e.last_error }));
const count = async (sql: string, params: unknown[] = []): Promise<number> => Number((await h!.sql<{ n: string }>(sql, params))[0]!.n);

/** The simulator's answers to the GETs of one storage booking or block id, in order: [path, status]. */
const readsOf = (id: string) =>
  (h!.sim.stats.requestLog ?? [])
    .filter(
      (r: RequestLogEntry) => r.path.startsWith('/api/pms-integration-storage/') && (r.path.endsWith(`/bookings/${id}`) || r.path.endsWith(`/blocks/${id}`)),
    )
    .map((r) => [r.path.replace(/^\/api\/pms-integration-storage\/v1\/properties\//, ''), r.status]);

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

const storageEvent = (bookingId: string) => ({
  eventId: crypto.randomUUID(),
  eventType: 'pms_integration_storage:booking_changed',
  creationTime: new Date().toISOString(),
  payload: { bookingId },
});

/** Every property's booking list caught up: the connection follows them (the events' routing). */
async function followed(ids: string[]): Promise<void> {
  await waitFor(
    'the properties followed',
    async () =>
      (await count(`SELECT count(*) AS n FROM sync_cursors WHERE stream = 'booking_summaries' AND caught_up AND property_id = ANY($1)`, [ids])) === ids.length,
  );
}

describe('integration-storage events without a property', () => {
  it('a connection of two properties, named by its delivery URL: each property asked once (404: not that one), the answer remembered', async () => {
    h = await startHarness({ sim: { properties: TWO_PROPERTIES } });
    const { daemon, port, hooks } = await startReceivingDaemon(h, { config: NO_POLLING });
    try {
      await followed(['500100', '500200']);
      h.sim.stats.requestLog = [];
      h.sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider/default` });

      // A booking of the second property: the first answers 404, the second has it.
      const booking = h.sim.integrationStorageBookings('500200')[0]!.id;
      h.sim.touchIntegrationStorageBooking('500200', booking);
      await waitFor('the storage booking', async () => (await eventsOf(booking)).some((e) => e.state !== 'pending'));
      expect(await eventsOf(booking)).toEqual([
        { event_type: 'pms_integration_storage:booking_changed', state: 'processed', property_id: '500200', connection: 'default', last_error: null },
      ]);
      expect(await count(`SELECT count(*) AS n FROM integration_storage_bookings WHERE property_id = '500200' AND booking_id = $1`, [booking])).toBe(1);
      expect(readsOf(booking)).toEqual([
        [`500100/bookings/${booking}`, 404],
        [`500200/bookings/${booking}`, 200],
      ]);

      // The same id again: the mirror knows its property, one fetch and no search.
      h.sim.touchIntegrationStorageBooking('500200', booking);
      await waitFor('the second event of the booking', async () => (await eventsOf(booking)).filter((e) => e.state === 'processed').length === 2);
      expect(readsOf(booking)).toEqual([
        [`500100/bookings/${booking}`, 404],
        [`500200/bookings/${booking}`, 200],
        [`500200/bookings/${booking}`, 200],
      ]);

      // A block of the first property: found at the first question.
      const block = h.sim.inventoryBlocks('500100')[0]!.id;
      h.sim.touchInventoryBlock('500100', block);
      await waitFor('the block', async () => (await eventsOf(block)).some((e) => e.state === 'processed'));
      expect(readsOf(block)).toEqual([[`500100/inventories/blocks/${block}`, 200]]);
      expect(await count(`SELECT count(*) AS n FROM inventory_blocks WHERE property_id = '500100' AND inventory_block_id = $1`, [block])).toBe(1);

      // What the searches cost, by connection: three questions for two ids.
      const metrics = (await opsGet(port, '/metrics')).body;
      expect(metricValue(metrics, 'staysync_webhook_property_lookups_total{connection="default"}')).toBe(3);
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    expect((await daemon.done).code).toBe(0);
  });

  it('an id no property has waits, said in the log, status and /metrics, is asked again later, and is fetched once the provider has it', async () => {
    h = await startHarness({ sim: { properties: TWO_PROPERTIES } });
    const { daemon, port, hooks } = await startReceivingDaemon(h, { config: { ...NO_POLLING, sync: { ...NO_POLLING.sync, refetchParkedAfterMs: 1_000 } } });
    const booking = h.sim.integrationStorageBookings('500200')[0]!.id;
    try {
      await followed(['500100', '500200']);
      // The provider announces the booking before either property can serve it.
      h.sim.faults.pathStatus = (path) => (path.endsWith(`/bookings/${booking}`) ? 404 : undefined);
      h.sim.stats.requestLog = [];
      h.sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider/default` });
      h.sim.touchIntegrationStorageBooking('500200', booking);
      await waitFor('the event kept', async () => (await eventsOf(booking)).some((e) => e.state !== 'pending'));
      const [kept] = await eventsOf(booking);
      expect(kept).toEqual({
        event_type: 'pms_integration_storage:booking_changed',
        state: 'waiting',
        property_id: null,
        connection: 'default',
        last_error: `no property of API connection default has integration-storage booking ${booking} (asked 500100, 500200: 404 each): asked again later`,
      });
      // Each property asked once per look.
      expect(readsOf(booking).slice(0, 2)).toEqual([
        [`500100/bookings/${booking}`, 404],
        [`500200/bookings/${booking}`, 404],
      ]);
      const env = daemonEnv(h);
      const status = await runCli(['status'], env);
      expect(status.stdout).toContain('Change events kept until what they name can be fetched (1):');
      expect(status.stdout).toContain(`1 × no property of API connection default has integration-storage booking ${booking}`);
      const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { eventsWaiting: { total: number } };
      expect(json.eventsWaiting.total).toBe(1);
      expect(
        metricValue((await opsGet(port, '/metrics')).body, 'staysync_webhook_events{event_type="pms_integration_storage:booking_changed",state="waiting"}'),
      ).toBe(1);
      // Asked again: a moment later, then on the parked rows' backoff (refetchParkedAfterMs, doubling).
      await waitFor('a second look', () => readsOf(booking).length >= 4, 10_000);

      h.sim.faults.pathStatus = undefined;
      await waitFor('the booking fetched once it exists', async () => (await eventsOf(booking))[0]!.state === 'processed', 20_000);
      expect(await eventsOf(booking)).toEqual([{ ...kept, state: 'processed', property_id: '500200', last_error: null }]);
      expect(await count(`SELECT count(*) AS n FROM integration_storage_bookings WHERE property_id = '500200' AND booking_id = $1`, [booking])).toBe(1);
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    const said = logRecords(r.stdout).filter((l) => l.msg.startsWith('change event names an integration-storage id that no property of its connection has'));
    expect(said.length).toBeGreaterThanOrEqual(1);
    expect(said[0]).toMatchObject({ level: 'warn', id: booking, connection: 'default', properties: 2 });
  });

  it('several connections: each has its delivery URL; the URL of old names none, and its event waits until the mirror knows the id; unknown names are refused', async () => {
    const A = { clientId: 'conn-a', clientSecret: 'secret-a', propertyIds: ['500100'] };
    const B = { clientId: 'conn-b', clientSecret: 'secret-b', propertyIds: ['500200'] };
    h = await startHarness({ sim: { clients: [A, B], properties: TWO_PROPERTIES } });
    const { daemon, hooks } = await startReceivingDaemon(h, {
      env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k3y' },
      config: {
        ...NO_POLLING,
        connections: [
          { name: 'hotel-a', ...A },
          { name: 'hotel-b', ...B },
        ],
        // The events no connection follows are looked at after half a second, not a minute.
        webhooks: { unfollowedAfterMs: 500 },
      },
    });
    const base = `http://127.0.0.1:${hooks}/webhooks/provider`;
    const key = { 'API-KEY': 'k3y' };
    try {
      await followed(['500100', '500200']);
      h.sim.stats.requestLog = [];
      const booking = h.sim.integrationStorageBookings('500200')[0]!.id;

      // Refused, nothing stored: no credentials (as on the URL of old), a name that is no
      // connection's, a name no connection could have.
      expect((await post(`${base}/hotel-b`, [storageEvent(booking)])).status).toBe(401);
      const unknown = await post(`${base}/hotel-c`, [storageEvent(booking)], key);
      expect(unknown).toEqual({
        status: 404,
        body: { error: 'no API connection named hotel-c is configured here: the delivery URL of a connection is /webhooks/provider/<its name>' },
      });
      for (const bad of ['Hotel-B', '.env', 'x'.repeat(64), 'hotel-b/more', 'hotel%20b', '']) {
        const r = await post(`${base}/${bad}`, [storageEvent(booking)], key);
        expect(r.status, bad).toBe(404);
        expect(r.body.error, bad).toMatch(/^not found: after \/webhooks\/provider\/ comes the name of an API connection/);
      }
      expect(await count('SELECT count(*) AS n FROM webhook_events')).toBe(0);

      // The URL of old, with two connections: the event names neither, and waits.
      expect((await post(base, [storageEvent(booking)], key)).status).toBe(200);
      await waitFor('the unnamed event kept', async () => (await eventsOf(booking)).some((e) => e.state === 'waiting'));
      expect(await eventsOf(booking)).toEqual([
        {
          event_type: 'pms_integration_storage:booking_changed',
          state: 'waiting',
          property_id: null,
          connection: null,
          last_error:
            'the event names no property, and its delivery URL (/webhooks/provider) no API connection while several are configured: give each connection its own delivery URL, /webhooks/provider/<connection>',
        },
      ]);
      expect(readsOf(booking)).toEqual([]);

      // hotel-b's own URL: its only property, no search. The waiting event then finds the id in
      // the mirror (it needs no fetch of its own, unless its next look falls in the same pass).
      expect((await post(`${base}/hotel-b`, [storageEvent(booking)], key)).status).toBe(200);
      await waitFor('both events processed', async () => (await eventsOf(booking)).every((e) => e.state === 'processed'), 20_000);
      expect((await eventsOf(booking)).map((e) => [e.connection, e.property_id])).toEqual([
        [null, '500200'],
        ['hotel-b', '500200'],
      ]);
      const reads = readsOf(booking);
      expect(reads.length).toBeGreaterThanOrEqual(1);
      expect(reads.length).toBeLessThanOrEqual(2);
      expect(new Set(reads.map((x) => JSON.stringify(x)))).toEqual(new Set([JSON.stringify([`500200/bookings/${booking}`, 200])]));
    } finally {
      daemon.child.kill('SIGTERM');
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    const records = logRecords(r.stdout);
    expect(
      records.filter((l) => l.msg === 'webhook batch refused: the delivery URL names a connection that is not configured (404, read nothing)'),
    ).toHaveLength(1);
    // Said once, however many such events come.
    expect(records.filter((l) => l.msg.startsWith('change events name no property and came to /webhooks/provider'))).toHaveLength(1);
  });

  it('a provider that names the property too: fetched at once, without a search', async () => {
    h = await startHarness({ sim: { properties: TWO_PROPERTIES } });
    const { daemon, hooks } = await startReceivingDaemon(h, { config: NO_POLLING });
    try {
      await followed(['500100', '500200']);
      h.sim.stats.requestLog = [];
      h.sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider/default`, storageEventsNameProperty: true });
      const booking = h.sim.integrationStorageBookings('500200')[0]!.id;
      h.sim.touchIntegrationStorageBooking('500200', booking);
      await waitFor('the storage booking', async () => (await eventsOf(booking)).some((e) => e.state === 'processed'));
      expect(readsOf(booking)).toEqual([[`500200/bookings/${booking}`, 200]]);
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    expect((await daemon.done).code).toBe(0);
  });

  it('the integration storage refused (403): the event waits, and is fetched once the hotel grants the API', async () => {
    const withoutStorage = ['reservation_api', 'content', simulatorClaims.referenceData];
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: withoutStorage }],
        properties: [{ id: '500100', bookingCount: 20 }],
        // Tokens renewed every 2 s: a grant shows within seconds.
        tokenTtlSeconds: 4,
      },
    });
    const { daemon, hooks } = await startReceivingDaemon(h, { config: { ...NO_POLLING, sync: { ...NO_POLLING.sync, failingRecheckMs: 1_000 } } });
    const booking = h.sim.integrationStorageBookings('500100')[0]!.id;
    try {
      await followed(['500100']);
      // With the property, as the provider might send it: what is about the grant alone.
      h.sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider`, storageEventsNameProperty: true });
      h.sim.touchIntegrationStorageBooking('500100', booking);
      await waitFor('the event kept', async () => (await eventsOf(booking)).some((e) => e.state !== 'pending'));
      const [kept] = await eventsOf(booking);
      expect(kept).toMatchObject({ state: 'waiting', property_id: '500100' });
      expect(kept!.last_error).toMatch(/HTTP 403.*the API connection may lack the PMS Integration Storage API .*asked again later$/);

      h.sim.setApiAccesses(SIM_CLIENT_ID, [...withoutStorage, simulatorClaims.pmsIntegrationStorage]);
      await waitFor('the booking fetched once granted', async () => (await eventsOf(booking))[0]!.state === 'processed', 30_000);
      expect(await count(`SELECT count(*) AS n FROM integration_storage_bookings WHERE booking_id = $1`, [booking])).toBe(1);
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    expect(
      logRecords(r.stdout).some((l) => l.level === 'warn' && l.msg.startsWith('change event could not be acted on, and the mirror lacks what it announces')),
    ).toBe(true);
  });

  it("pms_integration_storage:inventory_changed refreshes the property's inventory per room type, at most once a minute", async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    const { daemon, hooks } = await startReceivingDaemon(h, { config: NO_POLLING, env: { STAYSYNC_ROOM_INVENTORY_ENABLED: 'true' } });
    const searches = () => (h!.sim.stats.requestLog ?? []).filter((r) => r.method === 'POST' && r.path.endsWith('/properties/500100/inventories/search'));
    try {
      await followed(['500100']);
      // The refresh at start has run (it found no code to ask for): what follows is the events'.
      await waitFor(
        'the start-up inventory refresh',
        async () => (await count(`SELECT count(*) AS n FROM sync_cursors WHERE stream = 'room_type_inventory'`)) === 1,
      );
      // (With its property: what is about the inventory event alone.)
      h.sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider`, storageEventsNameProperty: true });
      // A storage booking in the mirror names the room type codes the inventory is asked for.
      const booking = h.sim.integrationStorageBookings('500100')[0]!.id;
      h.sim.touchIntegrationStorageBooking('500100', booking);
      await waitFor('the storage booking', async () => (await eventsOf(booking)).some((e) => e.state === 'processed'));
      h.sim.stats.requestLog = [];

      // The documents give this event no payload: it names nothing.
      const changed = h.sim.webhooks.emit('pms_integration_storage:inventory_changed', {});
      const state = async (eventId: string) => (await h!.sql<{ state: string }>('SELECT state FROM webhook_events WHERE event_id = $1', [eventId]))[0]?.state;
      await waitFor('the inventory refreshed', async () => (await state(changed.eventId)) === 'processed');
      expect(searches().length).toBeGreaterThanOrEqual(1);
      expect(searches().every((r) => r.status === 200)).toBe(true);
      expect(await count(`SELECT count(*) AS n FROM room_type_inventory_days WHERE property_id = '500100'`)).toBeGreaterThan(0);

      // Another within the minute waits for it, and shares the next refresh.
      const asked = searches().length;
      const again = h.sim.webhooks.emit('pms_integration_storage:inventory_changed', {});
      await waitFor('the second event stored', async () => (await state(again.eventId)) !== undefined);
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await state(again.eventId)).toBe('pending');
      expect(searches()).toHaveLength(asked);
    } finally {
      daemon.child.kill('SIGTERM');
      h.sim.webhooks.stop();
    }
    expect((await daemon.done).code).toBe(0);
  });
});
