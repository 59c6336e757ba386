/**
 * The simulator's webhooks over real HTTP, as the provider delivers them: POSTed JSON arrays
 * (batches, oldest first, at most maxBatch), one batch at a time, acknowledged by any 2xx,
 * redelivered after failures with a doubling gap up to a cap, with the receiver's auth header,
 * sometimes with an already acknowledged event again; the events of PMS changes; and no
 * delivery after stop() or close().
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator, type WebhookEvent } from '../index.js';

interface Received {
  /** performance.now() when the request arrived. */
  at: number;
  method: string;
  headers: IncomingHttpHeaders;
  events: WebhookEvent[];
}

/** A webhook receiver: records every request, answers the queued statuses (then 200), one answer after `delayMs`. */
class Receiver {
  readonly received: Received[] = [];
  statuses: number[] = [];
  delayMs = 0;
  inFlight = 0;
  maxInFlight = 0;
  url = '';
  private readonly server: Server;

  constructor() {
    this.server = createServer((req, res) => {
      const at = performance.now();
      this.inFlight++;
      this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.received.push({
          at,
          method: req.method ?? '',
          headers: req.headers,
          events: JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookEvent[],
        });
        const status = this.statuses.shift() ?? 200;
        setTimeout(() => {
          this.inFlight--;
          res.writeHead(status, { 'content-type': 'text/plain' });
          res.end(status < 300 ? 'ok' : 'no');
        }, this.delayMs);
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks`;
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Every event received, in the order received (duplicates included). */
  events(): WebhookEvent[] {
    return this.received.flatMap((r) => r.events);
  }
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CREATION_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3,7}Z$/;

describe('simulator webhooks: delivery', () => {
  let sim: Simulator;
  let receiver: Receiver;
  beforeEach(async () => {
    sim = await startSimulator({ properties: [{ id: '500100', bookingCount: 60 }] });
    receiver = await new Receiver().start();
  });
  afterEach(async () => {
    await sim.close();
    await receiver.close();
  });

  it('nothing is emitted while webhooks are not configured', async () => {
    const r = sim.pmsReservations('500100').find((x) => x.reservationStatus !== 'Cancelled')!;
    sim.pmsCancel('500100', r.number);
    sim.mutate({ count: 3, newCount: 1 });
    await sleep(30);
    expect(sim.webhooks.events()).toEqual([]);
    expect(sim.webhooks.log).toEqual([]);
  });

  it('POSTs JSON arrays one at a time, oldest first, at most maxBatch events each', async () => {
    receiver.delayMs = 40;
    sim.webhooks.configure({ url: receiver.url, maxBatch: 3 });
    const emitted = Array.from({ length: 8 }, (_, i) => sim.webhooks.emit('test:tick', { n: i }));
    await sleep(60);
    emitted.push(sim.webhooks.emit('test:tick', { n: 8 }));
    await waitFor('9 events', () => receiver.events().length >= 9);
    await sim.webhooks.idle();

    expect(receiver.maxInFlight).toBe(1);
    expect(receiver.events().map((e) => e.eventId)).toEqual(emitted.map((e) => e.eventId));
    expect(receiver.received[0]!.events).toHaveLength(3);
    for (const r of receiver.received) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['api-key']).toBeUndefined();
      expect(r.headers['authorization']).toBeUndefined();
      expect(r.events.length).toBeGreaterThanOrEqual(1);
      expect(r.events.length).toBeLessThanOrEqual(3);
    }
    for (const e of receiver.events()) {
      expect(Object.keys(e)).toEqual(['eventId', 'eventType', 'creationTime', 'payload']);
      expect(e.eventId).toMatch(UUID);
      expect(e.creationTime).toMatch(CREATION_TIME);
    }
    const times = receiver.events().map((e) => Date.parse(e.creationTime));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(sim.webhooks.log.map((l) => l.status)).toEqual(receiver.received.map(() => 200));
    expect(sim.webhooks.log.map((l) => l.eventIds)).toEqual(receiver.received.map((r) => r.events.map((e) => e.eventId)));
    expect(sim.webhooks.events()).toEqual(emitted);
    expect(sim.webhooks.pending()).toBe(0);
  });

  it('redelivers the same batch after a failure, the gap doubling up to the cap; the next batch waits; a 2xx resets the gap', async () => {
    receiver.statuses = [500, 503, 500, 500, 500, 200];
    sim.webhooks.configure({ url: receiver.url, retryBaseMs: 60, retryMaxMs: 250 });
    const a = sim.webhooks.emit('test:a', {});
    await waitFor('the first attempt', () => receiver.received.length >= 1);
    const b = sim.webhooks.emit('test:b', {});
    await waitFor('b delivered', () => receiver.events().some((e) => e.eventId === b.eventId));
    await sim.webhooks.idle();

    const batches = receiver.received.map((r) => r.events.map((e) => e.eventId));
    expect(batches).toEqual([...Array.from({ length: 6 }, () => [a.eventId]), [b.eventId]]);
    const gaps = receiver.received.slice(1, 6).map((r, i) => r.at - receiver.received[i]!.at);
    // 60, 120, 240, then capped at 250 (instead of 480 and 960).
    expect(gaps[0]).toBeGreaterThanOrEqual(55);
    expect(gaps[1]).toBeGreaterThanOrEqual(115);
    expect(gaps[2]).toBeGreaterThanOrEqual(235);
    expect(gaps[3]).toBeGreaterThanOrEqual(245);
    expect(gaps[4]).toBeGreaterThanOrEqual(245);
    expect(gaps[3]).toBeLessThan(450);
    expect(gaps[4]).toBeLessThan(700);
    expect(sim.webhooks.log.map((l) => l.status)).toEqual([500, 503, 500, 500, 500, 200, 200]);

    // After the 2xx the gap starts again from the base.
    receiver.statuses = [500];
    const c = sim.webhooks.emit('test:c', {});
    await waitFor('c delivered', () => receiver.received.filter((r) => r.events.some((e) => e.eventId === c.eventId)).length === 2);
    const [first, second] = receiver.received.filter((r) => r.events.some((e) => e.eventId === c.eventId));
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(55);
    expect(second!.at - first!.at).toBeLessThan(230);
  });

  it('network errors are retried too; a new configuration attempts at once', async () => {
    const closed = await new Receiver().start();
    await closed.close();
    sim.webhooks.configure({ url: closed.url, retryBaseMs: 5_000 });
    const e = sim.webhooks.emit('test:e', {});
    await waitFor('a failed attempt', () => sim.webhooks.log[0]?.error !== undefined);
    expect(sim.webhooks.log[0]!.status).toBeUndefined();
    expect(sim.webhooks.log[0]!.eventIds).toEqual([e.eventId]);
    const started = performance.now();
    sim.webhooks.configure({ url: receiver.url, retryBaseMs: 5_000 });
    await waitFor('delivery', () => receiver.received.length === 1, 2000);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(receiver.received[0]!.events.map((x) => x.eventId)).toEqual([e.eventId]);
  });

  it('sends the receiver auth: API-KEY header, or HTTP Basic', async () => {
    sim.webhooks.configure({ url: receiver.url, auth: { kind: 'apiKey', key: 'k-123' } });
    sim.webhooks.emit('test:key', {});
    await waitFor('one', () => receiver.received.length === 1);
    expect(receiver.received[0]!.headers['api-key']).toBe('k-123');
    expect(receiver.received[0]!.headers['authorization']).toBeUndefined();

    sim.webhooks.configure({ url: receiver.url, auth: { kind: 'basic', user: 'hotel', password: 'p@ss:word' } });
    const basic = sim.webhooks.emit('test:basic', {});
    await sim.webhooks.idle();
    const withBasic = receiver.received.find((r) => r.events.some((e) => e.eventId === basic.eventId))!;
    expect(withBasic.headers['authorization']).toBe(`Basic ${Buffer.from('hotel:p@ss:word').toString('base64')}`);
    expect(withBasic.headers['api-key']).toBeUndefined();
    expect(receiver.events().map((e) => e.eventType)).toEqual(['test:key', 'test:basic']);
  });

  it('duplicateRate: an acknowledged event comes again, first in a later batch', async () => {
    sim.webhooks.configure({ url: receiver.url, duplicateRate: 1 });
    const first = sim.webhooks.emit('test:first', {});
    await sim.webhooks.idle();
    const second = sim.webhooks.emit('test:second', {});
    await sim.webhooks.idle();
    expect(receiver.received[0]!.events.map((e) => e.eventId)).toEqual([first.eventId]);
    expect(receiver.received[1]!.events.map((e) => e.eventId)).toEqual([first.eventId, second.eventId]);
    expect(sim.webhooks.events()).toHaveLength(2);
  });

  it('stop() ends delivery and emission; undelivered events wait for the next configure()', async () => {
    receiver.statuses = [500, 500, 500, 500, 500, 500];
    sim.webhooks.configure({ url: receiver.url, retryBaseMs: 30, retryMaxMs: 30 });
    const e = sim.webhooks.emit('test:stop', {});
    await waitFor('two attempts', () => receiver.received.length >= 2);
    sim.webhooks.stop();
    const count = receiver.received.length;
    const r = sim.pmsReservations('500100').find((x) => x.reservationStatus !== 'Cancelled')!;
    sim.pmsCancel('500100', r.number);
    await sleep(150);
    expect(receiver.received.length).toBe(count);
    expect(sim.webhooks.events().map((x) => x.eventId)).toEqual([e.eventId]);
    expect(sim.webhooks.pending()).toBe(1);

    receiver.statuses = [];
    sim.webhooks.configure({ url: receiver.url });
    await sim.webhooks.idle();
    expect(receiver.received.at(-1)!.events.map((x) => x.eventId)).toEqual([e.eventId]);
  });
});

describe('simulator webhooks: stop on close', () => {
  it('no attempt after sim.close(), even mid-retry', async () => {
    const sim = await startSimulator({ properties: [{ id: '500100', bookingCount: 10 }] });
    const receiver = await new Receiver().start();
    try {
      receiver.statuses = Array.from({ length: 100 }, () => 500);
      sim.webhooks.configure({ url: receiver.url, retryBaseMs: 20, retryMaxMs: 20 });
      sim.webhooks.emit('test:close', {});
      await waitFor('three attempts', () => receiver.received.length >= 3);
      await sim.close();
      const count = receiver.received.length;
      await sleep(150);
      expect(receiver.received.length).toBe(count);
      expect(() => sim.webhooks.configure({ url: receiver.url })).toThrow();
    } finally {
      await sim.close();
      await receiver.close();
    }
  });
});

describe('simulator webhooks: the events of PMS changes', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let receiver: Receiver;
  const P = '500100';
  beforeAll(async () => {
    sim = await startSimulator({ now: () => t, properties: [{ id: P, bookingCount: 120 }] });
    receiver = await new Receiver().start();
    sim.webhooks.configure({ url: receiver.url, auth: { kind: 'apiKey', key: 'secret' } });
  });
  afterAll(async () => {
    await sim.close();
    await receiver.close();
  });

  /** The events delivered for what `change` does, after it. */
  async function eventsOf(change: () => void): Promise<WebhookEvent[]> {
    const before = receiver.events().length;
    const emitted = sim.webhooks.events().length;
    change();
    const expected = sim.webhooks.events().length - emitted;
    await waitFor('delivery', () => receiver.events().length >= before + expected);
    return receiver.events().slice(before);
  }

  it('webpms events carry {BookingNumber, PropertyId}; storage events only the id to fetch, {bookingId} or {inventoryBlockId}, as documented', async () => {
    const storageNumbers = new Map(sim.integrationStorageBookings(P).map((s) => [s.uniqueIds.find((u) => u.idContext === 'External')!.id!, s.id] as const));
    const candidates = sim
      .pmsReservations(P)
      .filter((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]!.status === 'New' && r.roomStays[0]!.roomId !== null);
    const plain = candidates.find((r) => !storageNumbers.has(r.number))!;
    const stored = candidates.find((r) => storageNumbers.has(r.number))!;

    t += 60_000;
    const checkIn = await eventsOf(() => sim.pmsCheckIn(P, plain.number));
    expect(checkIn.map((e) => [e.eventType, e.payload])).toEqual([['webpms:check_in', { BookingNumber: plain.number, PropertyId: P }]]);
    expect(Date.parse(checkIn[0]!.creationTime)).toBe(t);

    t += 60_000;
    expect((await eventsOf(() => sim.pmsCheckOut(P, plain.number))).map((e) => e.eventType)).toEqual(['webpms:check_out']);

    t += 60_000;
    const inStorage = await eventsOf(() => sim.pmsCheckIn(P, stored.number));
    expect(inStorage.map((e) => [e.eventType, e.payload])).toEqual([
      ['webpms:check_in', { BookingNumber: stored.number, PropertyId: P }],
      ['pms_integration_storage:booking_changed', { bookingId: storageNumbers.get(stored.number) }],
    ]);
    expect(sim.integrationStorageBookings(P).find((s) => s.id === storageNumbers.get(stored.number))!.status).toBe('InHouse');

    t += 60_000;
    const moved = candidates.find((r) => r !== plain && r !== stored && !storageNumbers.has(r.number))!;
    expect((await eventsOf(() => sim.pmsChangeRoom(P, moved.number, 0))).map((e) => e.eventType)).toEqual(['webpms:change_room']);
    t += 60_000;
    expect((await eventsOf(() => sim.pmsCancel(P, moved.number))).map((e) => e.eventType)).toEqual(['webpms:cancel_booking']);

    const id = [...storageNumbers.values()][0]!;
    expect((await eventsOf(() => sim.touchIntegrationStorageBooking(P, id))).map((e) => [e.eventType, e.payload])).toEqual([
      ['pms_integration_storage:booking_changed', { bookingId: id }],
    ]);
    const block = sim.inventoryBlocks(P)[0]!.id;
    expect((await eventsOf(() => sim.touchInventoryBlock(P, block))).map((e) => [e.eventType, e.payload])).toEqual([
      ['pms_integration_storage:inventory_block_changed', { inventoryBlockId: block }],
    ]);
    for (const r of receiver.received) expect(r.headers['api-key']).toBe('secret');
  });

  it('storageEventsNameProperty: the storage events also carry propertyId (a provider that sends more than it promises)', async () => {
    sim.webhooks.configure({ url: receiver.url, auth: { kind: 'apiKey', key: 'secret' }, storageEventsNameProperty: true });
    try {
      const id = sim.integrationStorageBookings(P)[0]!.id;
      const block = sim.inventoryBlocks(P)[0]!.id;
      t += 60_000;
      expect((await eventsOf(() => sim.touchIntegrationStorageBooking(P, id))).map((e) => [e.eventType, e.payload])).toEqual([
        ['pms_integration_storage:booking_changed', { bookingId: id, propertyId: P }],
      ]);
      expect((await eventsOf(() => sim.touchInventoryBlock(P, block))).map((e) => [e.eventType, e.payload])).toEqual([
        ['pms_integration_storage:inventory_block_changed', { inventoryBlockId: block, propertyId: P }],
      ]);
    } finally {
      sim.webhooks.configure({ url: receiver.url, auth: { kind: 'apiKey', key: 'secret' } });
    }
  });

  it('mutate(): create_booking for new reservations; the events of changed ones describe the change; one batch', async () => {
    const before = new Map(sim.pmsReservations(P).map((r) => [r.number, r]));
    t += 60_000;
    const requests = receiver.received.length;
    const events = await eventsOf(() => sim.mutate({ count: 20, newCount: 3, propertyId: P }));
    expect(receiver.received.length).toBe(requests + 1);
    const after = sim.pmsReservations(P);
    const created = after.filter((r) => !before.has(r.number)).map((r) => r.number);
    expect(created).toHaveLength(3);
    const createEvents = events.filter((e) => e.eventType === 'webpms:create_booking').map((e) => e.payload['BookingNumber']);
    for (const n of created) expect(createEvents).toContain(n);
    for (const e of events) {
      if (!e.eventType.startsWith('webpms:')) continue;
      const number = e.payload['BookingNumber'] as string;
      const now = after.find((r) => r.number === number)!;
      const old = before.get(number);
      expect(now.modifyDateTime).not.toBe(old?.modifyDateTime);
      if (e.eventType === 'webpms:cancel_booking') expect(now.reservationStatus).toBe('Cancelled');
      if (e.eventType === 'webpms:change_check_out_datetime') expect(now.roomStays[0]!.checkOutDateTime).not.toBe(old!.roomStays[0]!.checkOutDateTime);
    }
    // Every cancellation of the batch was announced.
    for (const r of after) {
      const old = before.get(r.number);
      if (old && old.reservationStatus !== 'Cancelled' && r.reservationStatus === 'Cancelled') {
        expect(events.some((e) => e.eventType === 'webpms:cancel_booking' && e.payload['BookingNumber'] === r.number)).toBe(true);
      }
    }
    // Events of one instant keep their order in creationTime (7 fraction digits after the first).
    const times = events.map((e) => e.creationTime);
    expect(times[0]).toMatch(/\.\d{3}Z$/);
    expect(times.slice(1).every((x) => /\.\d{7}Z$/.test(x))).toBe(true);
    expect(new Set(times).size).toBe(times.length);
  });

  it('emit() delivers any event type as it is', async () => {
    const events = await eventsOf(() => sim.webhooks.emit('pms_integration_storage:inventory_changed', { Something: 'new' }));
    expect(events.map((e) => [e.eventType, e.payload])).toEqual([['pms_integration_storage:inventory_changed', { Something: 'new' }]]);
  });
});
