/**
 * Integration harness: a simulator of the provider on 127.0.0.1, a migrated mirror of the
 * test's own on the test PostgreSQL (a copy of the template, helpers/mirror-template.ts; or an
 * empty schema), and a configuration that points staysync at both with short windows.
 */
import { streamNames } from '../../src/store/states.js';
import { Writable } from 'node:stream';
import { loadConfig, type Config, type RateWindow } from '../../src/config/config.js';
import { openDatabase, type DatabaseHandle } from '../../src/store/database.js';
import { openForWriting } from '../../tools/common/database.js';
import { createLogger, type Logger } from '../../src/util/log.js';
import { ProviderClient } from '../../src/provider/client.js';
import { createSyncContext, type SyncContext } from '../../src/sync/runtime/context.js';
import { insertWebhookEvents } from '../../src/store/repositories/webhook-events.js';
import { Engine, type EngineResult } from '../../src/sync/runtime/engine.js';
import type { Recovery } from '../../src/sync/runtime/recovery.js';
import type { StreamRegistry } from '../../src/sync/streams/types.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { startSimulator, type Simulator, type SimulatorOptions } from '../../tools/simulator/index.js';
import type { Clock } from '../../src/util/clock.js';
import { assertionPool, dropSchema, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from './database.js';
import { copyMirrorTemplate, MIRROR_SCHEMA } from './mirror-template.js';

export const SIM_CLIENT_ID = 'sim-client';
export const SIM_CLIENT_SECRET = 'sim-secret-do-not-log-7f3a';

/** Production shapes with windows shrunk so that tests run in seconds. */
/**
 * The fast windows below would let adaptive polling ask every 17 ms; a floor of a quarter
 * second keeps a test daemon's idle polling from loading the machine.
 */
/**
 * Tests poll a quiet property as often as a busy one (quiet 250 ms): a test that makes a change
 * after the first sync wants it seen soon, and the first sync is no change (every property is
 * quiet after it). The tests of quiet polling set their own (quiet-hotels, list-scheduler).
 */
export const TEST_POLL_INTERVAL = { min: 250, quiet: 250, max: 60_000 };

export const fastRateLimits: Record<string, RateWindow[]> = {
  bookingList: [
    { limit: 3, windowMs: 50 },
    { limit: 100, windowMs: 1000 },
  ],
  bookingDetails: [
    { limit: 10, windowMs: 50 },
    { limit: 200, windowMs: 1000 },
  ],
  standard: [
    { limit: 50, windowMs: 100 },
    { limit: 200, windowMs: 1000 },
  ],
  integrationStorage: [
    { limit: 50, windowMs: 100 },
    { limit: 1200, windowMs: 1000 },
  ],
  token: [
    { limit: 3, windowMs: 100 },
    { limit: 15, windowMs: 1000 },
  ],
};

export interface Harness {
  sim: Simulator;
  config: Config;
  dbUrl: string;
  schema: string;
  logLines: string[];
  logger: Logger;
  /**
   * A context on a database handle of its own (closed by close()), holding the schema's
   * schema's lock: close the previous one (`release`) before asking for another.
   */
  context(opts?: { clock?: Clock }): Promise<SyncContext>;
  /** Closes the handle of a context (its lease is free for the next one). */
  release(ctx: SyncContext): Promise<void>;
  /** Creates the schema's tables and lets go of the database (e.g. before starting a daemon). */
  migrate(): Promise<void>;
  sql<T extends Record<string, unknown> = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /** The PostgreSQL server to use instead of the test server (e.g. one the test stops and starts): an empty schema there. */
  databaseUrl?: string;
  /**
   * An empty schema to migrate (or to see migrated), instead of a copy of the migrated mirror
   * (helpers/mirror-template.ts): for tests of what the migrations themselves do.
   */
  emptySchema?: boolean;
  sim?: SimulatorOptions;
  config?: Record<string, unknown>;
  logLevel?: string;
}

function mergeDeep(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] =
      prev && typeof prev === 'object' && !Array.isArray(prev) && v && typeof v === 'object' && !Array.isArray(v)
        ? mergeDeep(prev as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const serverUrl = opts.databaseUrl ?? (await testDatabaseUrl());
  const copy = opts.databaseUrl || opts.emptySchema ? undefined : await copyMirrorTemplate(serverUrl);
  const dbUrl = copy?.url ?? serverUrl;
  const schema = copy ? MIRROR_SCHEMA : uniqueSchema();
  const sim = await startSimulator({
    clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET }],
    rateLimits: fastRateLimits,
    ...opts.sim,
  });
  const config = loadConfig({
    env: {},
    overrides: mergeDeep(
      {
        database: { url: dbUrl, schema, reportingSchema: reportingSchemaOf(schema), poolSize: 4 },
        provider: {
          url: sim.url,
          referenceDataUrl: sim.url,
          clientId: SIM_CLIENT_ID,
          clientSecret: SIM_CLIENT_SECRET,
          requestTimeoutMs: 5000,
          maxAttempts: 20,
        },
        propertyIds: sim.propertyIds(),
        rateLimits: fastRateLimits,
        sync: { progressIntervalMs: 60_000, pollIntervalMs: TEST_POLL_INTERVAL },
        // The PMS tests read the loyalty cards, with personal data or not; the default (as
        // pms.personalData) is config.test.ts's and the CLI's (test/integration/loyalty-cards.test.ts).
        pms: { loyaltyCards: true },
        log: { level: opts.logLevel ?? 'warn' },
      },
      opts.config ?? {},
    ),
  });
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  const logger = createLogger(config.log.level, sink);
  // The test's own queries share two connections: a connection per query (a session started
  // and ended on the server each time a test polls the mirror) made a tenth of the server's CPU.
  const assertions = assertionPool(dbUrl, schema);
  const handles: DatabaseHandle[] = [];
  const byContext = new Map<SyncContext, DatabaseHandle>();
  const clients: ProviderClient[] = [];
  return {
    sim,
    config,
    dbUrl,
    schema,
    logLines,
    logger,
    async context(opts = {}) {
      // The previous contexts of this test are done: their leases are let go.
      for (const old of handles.splice(0)) await old.close();
      const h = await openForWriting(config, logger);
      handles.push(h);
      const client = new ProviderClient({ config, logger });
      clients.push(client);
      const ctx = createSyncContext({ config, handle: h, client, logger, ...(opts.clock ? { clock: opts.clock } : {}) });
      byContext.set(ctx, h);
      return ctx;
    },
    async release(ctx) {
      await byContext.get(ctx)?.close();
    },
    async migrate() {
      const h = await openDatabase(config, logger);
      try {
        await h.migrate();
      } finally {
        await h.close();
      }
    },
    sql: async (text, params = []) => (await assertions.query(text, params)).rows,
    async close() {
      for (const c of clients) await c.close();
      for (const h of handles) await h.close();
      await assertions.end();
      await sim.close();
      // A copy of the template is dropped at the end of the run (helpers/mirror-template.ts).
      if (!copy) await dropSchema(dbUrl, schema);
    },
  };
}

/** The booking list and the booking details, and no other stream. */
export const bookingStreams: StreamRegistry = {
  property: registeredStreams.property.filter((s) => s.name === 'booking_summaries'),
  queues: registeredStreams.queues.filter((q) => q.name === 'booking_details'),
  refreshes: [],
};

/**
 * `sync --once` through the engine, in-process, with a choice of streams: the booking list
 * and details (default; the other streams have tests of their own), the PMS streams (with the
 * loyalty cards' pass), all, or those of a registry given.
 */
export async function syncOnce(
  ctx: SyncContext,
  opts: { recoverFrom?: ReadonlyMap<string, Date>; recovery?: Recovery; streams?: 'bookings' | 'pms' | 'all' | StreamRegistry; signal?: AbortSignal } = {},
): Promise<EngineResult> {
  const all = registeredStreams;
  const streams: StreamRegistry =
    typeof opts.streams === 'object'
      ? opts.streams
      : opts.streams === 'all'
        ? all
        : opts.streams === 'pms'
          ? {
              property: all.property.filter((s) => s.name === 'pms_reservations'),
              // With the pass that reads the invoices and cards a backfill left.
              queues: all.queues.filter((q) => q.name === 'pms_reservation_queue' || q.name === 'pms_deferred_reads'),
              refreshes: [],
            }
          : bookingStreams;
  let recovery: Recovery = opts.recovery ?? { mode: 'none' };
  // A fixed restart point per property: reset those cursors as --recover=<time> would.
  if (opts.recoverFrom && opts.recoverFrom.size > 0) {
    const { resetCursorForRecovery } = await import('../../src/store/repositories/cursors.js');
    const [first] = [...opts.recoverFrom.values()];
    for (const id of opts.recoverFrom.keys()) await ctx.write((trx) => resetCursorForRecovery(trx, id, streamNames.bookingSummaries, new Date()));
    recovery = { mode: 'at', from: first! };
  }
  return new Engine(ctx, { mode: 'once', recovery, streams }).run(opts.signal ?? new AbortController().signal);
}

// ------------------------------------------------------------------ mirror comparison

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const second = (v: string | Date | null | undefined): string | null => {
  if (v === null || v === undefined) return null;
  const d = v instanceof Date ? v : new Date(v);
  return d.toISOString().slice(0, 19) + 'Z';
};
/** `2024-03-27T14:00`, `2024-03-27 14:00:00` → `2024-03-27T14:00`. */
const local = (v: unknown): string | null =>
  v === null || v === undefined ? null : (v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : JSON.stringify(v)).replace(' ', 'T').slice(0, 16);

interface CanonicalBooking {
  key: string;
  status: string;
  modifiedAt: string | null;
  priceBeforeTax: number | null;
  priceAfterTax: number | null;
  stays: {
    arrival: string | null;
    departure: string | null;
    roomTypeId: string | null;
    ratePlanId: string | null;
    adults: number | null;
    priceAfterTax: number | null;
    rates: [string, string | null, number | null][];
  }[];
  services: [number | null, string | null, number | null][];
}

type AnyRecord = Record<string, any>;

/** The simulator's truth in canonical form, optionally leaving out some booking numbers. */
export function simulatorSnapshot(sim: Simulator, exclude: ReadonlySet<string> = new Set()): CanonicalBooking[] {
  const out: CanonicalBooking[] = [];
  for (const pid of sim.propertyIds()) {
    for (const b of sim.bookings(pid) as unknown as AnyRecord[]) {
      if (exclude.has(b.number)) continue;
      const services: CanonicalBooking['services'] = [];
      for (const s of b.services ?? []) services.push([null, s.id, num(s.total?.priceAfterTax)]);
      (b.roomStays as AnyRecord[]).forEach((st, i) => {
        for (const s of st.services ?? []) services.push([i, s.id, num(s.total?.priceAfterTax)]);
      });
      out.push({
        key: `${pid}/${b.number}`,
        status: b.status,
        modifiedAt: second(b.modifiedDateTime),
        priceBeforeTax: num(b.total?.priceBeforeTax),
        priceAfterTax: num(b.total?.priceAfterTax),
        stays: (b.roomStays as AnyRecord[]).map((st) => ({
          arrival: local(st.stayDates.arrivalDateTime),
          departure: local(st.stayDates.departureDateTime),
          roomTypeId: st.roomType?.id ?? null,
          ratePlanId: st.ratePlans?.[0]?.id ?? null,
          adults: st.guestCount?.adultCount ?? null,
          priceAfterTax: num(st.total?.priceAfterTax),
          rates: (st.dailyRates as AnyRecord[]).map((r) => [String(r.date).slice(0, 10), r.ratePlanId ?? null, num(r.priceBeforeTax)]),
        })),
        services,
      });
    }
  }
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

/** The mirror in the same canonical form. */
export async function mirrorSnapshot(h: Pick<Harness, 'sql'>): Promise<CanonicalBooking[]> {
  const bookings = await h.sql<AnyRecord>('SELECT * FROM bookings ORDER BY property_id, number');
  const stays = await h.sql<AnyRecord>('SELECT * FROM booking_room_stays ORDER BY property_id, number, stay_index');
  const rates = await h.sql<AnyRecord>('SELECT * FROM booking_daily_rates ORDER BY property_id, number, stay_index, position');
  const services = await h.sql<AnyRecord>('SELECT * FROM booking_services ORDER BY property_id, number, position');
  const byKey = new Map<string, CanonicalBooking>();
  for (const b of bookings) {
    byKey.set(`${b.property_id}/${b.number}`, {
      key: `${b.property_id}/${b.number}`,
      status: b.status,
      modifiedAt: second(b.modified_at),
      priceBeforeTax: num(b.price_before_tax),
      priceAfterTax: num(b.price_after_tax),
      stays: [],
      services: [],
    });
  }
  for (const s of stays) {
    byKey.get(`${s.property_id}/${s.number}`)!.stays[s.stay_index] = {
      arrival: local(s.arrival_at),
      departure: local(s.departure_at),
      roomTypeId: s.room_type_id,
      ratePlanId: s.rate_plan_id,
      adults: s.adult_count,
      priceAfterTax: num(s.price_after_tax),
      rates: [],
    };
  }
  for (const r of rates) {
    byKey.get(`${r.property_id}/${r.number}`)!.stays[r.stay_index]!.rates.push([String(r.stay_date), r.rate_plan_id, num(r.price_before_tax)]);
  }
  for (const s of services) {
    byKey.get(`${s.property_id}/${s.number}`)!.services.push([s.stay_index, s.service_id, num(s.price_after_tax)]);
  }
  return [...byKey.values()].sort((a, b) => a.key.localeCompare(b.key));
}

/** Every PMS reservation the simulator serves, `property/number` → its modification time (ISO). */
export function simulatorPmsVersions(sim: Simulator): Record<string, string> {
  return Object.fromEntries(
    sim.propertyIds().flatMap((pid) => sim.pmsReservations(pid).map((r) => [`${pid}/${r.number}`, new Date(r.modifyDateTime).toISOString()] as const)),
  );
}

/** The same of the mirror's pms_reservations. */
export async function mirrorPmsVersions(h: Pick<Harness, 'sql'>): Promise<Record<string, string>> {
  const rows = await h.sql<{ key: string; modified_at: Date }>(`SELECT property_id || '/' || number AS key, modified_at FROM pms_reservations`);
  return Object.fromEntries(rows.map((r) => [r.key, r.modified_at.toISOString()]));
}

/**
 * Integration-storage bookings and inventory blocks arrive only through change events: stores
 * the events the webhook receiver would for the first `counts` of each, for the sync to fetch.
 */
export async function announceStorage(
  harness: Harness,
  ctx: SyncContext,
  propertyId: string,
  counts = { storage: 3, blocks: 2 },
): Promise<{ storage: number; blocks: number }> {
  const storage = harness.sim.integrationStorageBookings(propertyId).slice(0, counts.storage);
  const blocks = harness.sim.inventoryBlocks(propertyId).slice(0, counts.blocks);
  await ctx.write((trx) =>
    insertWebhookEvents(trx, [
      ...storage.map((s, i) => ({
        eventId: `s-${i}`,
        eventType: 'pms_integration_storage:booking_changed',
        creationTime: null,
        payload: { BookingId: s.id, PropertyId: propertyId },
        propertyId,
        entityKey: s.id,
      })),
      ...blocks.map((b, i) => ({
        eventId: `b-${i}`,
        eventType: 'pms_integration_storage:inventory_block_changed',
        creationTime: null,
        payload: { InventoryBlockId: b.id, PropertyId: propertyId },
        propertyId,
        entityKey: b.id,
      })),
    ]),
  );
  return { storage: storage.length, blocks: blocks.length };
}
