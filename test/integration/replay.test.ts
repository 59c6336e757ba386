/**
 * Replay against the simulator and real PostgreSQL: `rebuild` derives every typed table again
 * from the stored raw payloads byte for byte without a provider request, `quarantine retry`
 * mirrors what a fixed mapping now accepts and keeps what still fails, both commands as child
 * processes, and the automatic rebuild when the mirror's mapping version is older.
 */
import { streamNames } from '../../src/store/states.js';
import { TYPED_TABLES } from '../helpers/tables.js';
import { afterEach, describe, expect, it } from 'vitest';
import { keptPayload } from '../../src/mapping/personal-data.js';
import { parseJsonLossless } from '../../src/provider/json.js';
import { nextDueFetches } from '../../src/store/repositories/fetch-queue.js';
import { quarantinePayload } from '../../src/store/repositories/quarantine.js';
import { InvalidPayloadError } from '../../src/provider/errors.js';
import { MAPPING_VERSION } from '../../src/mapping/version.js';
import { retryQuarantine } from '../../src/replay/quarantine-retry.js';
import { rebuild } from '../../src/replay/rebuild.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { Engine } from '../../src/sync/runtime/engine.js';
import { FetchOutcomes } from '../../src/sync/runtime/fetch-drain.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { announceStorage, mirrorSnapshot, simulatorSnapshot, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const never = new AbortController().signal;
type AnyRecord = Record<string, any>;

/** Per table: its row count and a digest of every row's text, in a fixed order: equal digests, equal bytes. */
async function snapshot(harness: Harness): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of TYPED_TABLES) {
    const [r] = await harness.sql<{ n: string; d: string }>(
      `SELECT count(*) AS n, md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS d FROM ${t} t`,
    );
    out[t] = `${r!.n}:${r!.d}`;
  }
  return out;
}

const rowsOf = (snap: Record<string, string>, table: string) => Number(snap[table]!.split(':')[0]);

/** The replay environment of a sync context: its fenced writer and its reads. */
const replayEnv = (harness: Harness, ctx: SyncContext) => ({ handle: ctx, config: harness.config, logger: harness.logger });

describe('rebuild', () => {
  it('reproduces every typed table byte for byte from raw with zero provider requests, and restores corrupted columns', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 60 },
          { id: '7291', bookingCount: 40 },
        ],
      },
      config: { occupancy: { daysBack: 20, daysAhead: 20 } },
    });
    const P = '500100';
    const ctx = await h.context();
    const announced = await announceStorage(h, ctx, P, { storage: 5, blocks: 3 });
    const synced = await syncOnce(ctx, { streams: 'all' });
    expect(synced.failed).toEqual([]);
    expect(synced.refreshFailures).toEqual([]);

    const before = await snapshot(h);
    // Every source of raw has rows, or the comparison would prove little.
    for (const t of [
      'bookings',
      'booking_room_stays',
      'booking_daily_rates',
      'booking_tax_amounts',
      'booking_summaries',
      'properties',
      'room_types',
      'rate_plans',
      'cancellation_rules',
      'extra_stay_rules',
      'reference_lists',
      'meal_plans',
      'pms_reservations',
      'pms_room_stays',
      'pms_guests',
      'pms_rooms',
      'pms_companies',
      'pms_invoices',
      'pms_invoice_items',
      'daily_occupancy',
    ]) {
      expect(rowsOf(before, t), t).toBeGreaterThan(0);
    }
    expect(rowsOf(before, 'integration_storage_bookings')).toBe(announced.storage);
    expect(rowsOf(before, 'inventory_blocks')).toBe(announced.blocks);
    const headerVersions = await h.sql<{ v: string }>('SELECT xmin::text AS v FROM bookings ORDER BY property_id, number');

    h.sim.stats.requestLog = [];
    const first = await rebuild(replayEnv(h, ctx));
    expect(h.sim.stats.requestLog).toEqual([]);
    expect(await snapshot(h)).toEqual(before);
    expect(first.stopped).toBe(false);
    expect(first.sources.bookings).toEqual({ rebuilt: rowsOf(before, 'bookings'), changed: 0, quarantined: 0, left: 0 });
    expect(first.sources.pms_reservations).toEqual({ rebuilt: rowsOf(before, 'pms_reservations'), changed: 0, quarantined: 0, left: 0 });
    for (const [table, c] of Object.entries(first.sources))
      expect({ table, changed: c.changed, quarantined: c.quarantined, left: c.left }).toEqual({ table, changed: 0, quarantined: 0, left: 0 });
    expect(first.children.booking_daily_rates).toBe(rowsOf(before, 'booking_daily_rates'));
    // An unchanged row is not rewritten.
    expect(await h.sql<{ v: string }>('SELECT xmin::text AS v FROM bookings ORDER BY property_id, number')).toEqual(headerVersions);

    // Typed columns damaged (or rows lost) without their raw changing: the rebuild restores them.
    const [one] = await h.sql<{ number: string }>(`SELECT number FROM bookings WHERE property_id = $1 AND price_after_tax > 0 ORDER BY number LIMIT 1`, [P]);
    await h.sql(`UPDATE bookings SET price_after_tax = 0, status = 'Bogus' WHERE property_id = $1 AND number = $2`, [P, one!.number]);
    await h.sql(`UPDATE booking_daily_rates SET price_before_tax = price_before_tax + 1 WHERE property_id = $1 AND number = $2`, [P, one!.number]);
    await h.sql(
      `DELETE FROM booking_room_stays WHERE property_id = $1 AND number IN (SELECT number FROM bookings WHERE property_id = $1 ORDER BY number DESC LIMIT 2)`,
      [P],
    );
    await h.sql(`UPDATE booking_summaries SET status = NULL WHERE property_id = $1 AND number = $2`, [P, one!.number]);
    await h.sql(`UPDATE properties SET name = 'renamed', stars = NULL WHERE property_id = $1`, [P]);
    await h.sql(`DELETE FROM room_type_amenities WHERE property_id = $1`, [P]);
    await h.sql(`UPDATE meal_plans SET name = 'x'`);
    await h.sql(`UPDATE pms_room_stays SET amount = 0, guest_person_ids = '{}' WHERE property_id = $1`, [P]);
    await h.sql(`UPDATE daily_occupancy SET revenue = -1 WHERE property_id = $1`, [P]);
    await h.sql(`UPDATE inventory_blocks SET pms_side_code = 'corrupted'`);
    expect(await snapshot(h)).not.toEqual(before);

    const second = await rebuild(replayEnv(h, ctx));
    expect(h.sim.stats.requestLog).toEqual([]);
    expect(await snapshot(h)).toEqual(before);
    expect(second.sources.bookings!.changed).toBe(1);
    expect(second.sources.booking_summaries!.changed).toBe(1);
    expect(second.sources.properties!.changed).toBe(1);
    expect(second.sources.daily_occupancy!.changed).toBe(
      Number((await h.sql<{ n: string }>('SELECT count(*) AS n FROM daily_occupancy WHERE property_id = $1', [P]))[0]!.n),
    );
    expect(second.sources.inventory_blocks!.changed).toBe(announced.blocks);
  });

  it('quarantines a raw that no longer passes the schemas, leaves its rows, and rebuilds the others in small batches', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const P = '500100';
    const ctx = await h.context();
    await syncOnce(ctx);
    const [bad] = await h.sql<{ number: string }>('SELECT number FROM bookings ORDER BY number LIMIT 1 OFFSET 7');
    // Its typed rows: the header without its raw, and its children.
    const rowsOfBad = async () =>
      h!.sql<{ t: string }>(
        `SELECT (to_jsonb(b) - 'raw')::text AS t FROM bookings b WHERE number = $1
         UNION ALL SELECT s::text FROM booking_room_stays s WHERE number = $1
         UNION ALL SELECT r::text FROM booking_daily_rates r WHERE number = $1 ORDER BY 1`,
        [bad!.number],
      );
    const kept = await rowsOfBad();
    // The stored payload as a newer, stricter mapping would see it: room stays that are not a list.
    await h.sql(`UPDATE bookings SET raw = jsonb_set(raw, '{booking,roomStays}', '"unavailable"') WHERE number = $1`, [bad!.number]);
    await h.sql(`UPDATE bookings SET price_after_tax = 0 WHERE number <> $1`, [bad!.number]);
    const keptRaw = await h.sql<{ raw: string }>('SELECT raw::text AS raw FROM bookings WHERE number = $1', [bad!.number]);

    h.sim.stats.requestLog = [];
    const r = await rebuild(replayEnv(h, ctx), { batchSize: 4 });
    expect(h.sim.stats.requestLog).toEqual([]);
    expect(r.sources.bookings).toEqual({ rebuilt: 29, changed: 29, quarantined: 1, left: 0 });
    const q = await h.sql<AnyRecord>('SELECT stream, property_id, entity_key, reason, raw_body, occurrences FROM quarantine');
    expect(q).toEqual([
      {
        stream: streamNames.bookingDetails,
        property_id: P,
        entity_key: bad!.number,
        reason: expect.stringContaining('booking.roomStays'),
        // The stored payload, through the personal-data policy and the erasure list as every quarantined body (JSON text of its own).
        raw_body: JSON.stringify(parseJsonLossless(keptRaw[0]!.raw)),
        occurrences: 1,
      },
    ]);
    // Its typed rows are left as they were (the raw update did not touch them).
    expect(await rowsOfBad()).toEqual(kept);
    expect((await h.sql<{ n: string }>('SELECT count(*) AS n FROM bookings WHERE price_after_tax = 0'))[0]!.n).toBe('0');
  });
});

describe('quarantine retry', () => {
  it('mirrors a payload an older mapping quarantined, settles its queue row, keeps what still fails, and never goes back to the provider', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const P = '500100';
    const numbers = h.sim
      .bookings(P)
      .map((b) => b.number)
      .sort();
    const fixed = numbers[3]!;
    const broken = numbers[11]!;
    const older = numbers[17]!;
    // The provider serves `broken` with a body today's schema rejects (room stays not a list, or the like).
    h.sim.faults.malformedBookingNumbers.add(broken);
    const ctx = await h.context();

    // 1. The booking list only: every booking waits in the detail queue.
    const listOnly = { property: registeredStreams.property.filter((s) => s.name === 'booking_summaries'), queues: [], refreshes: [] };
    await new Engine(ctx, { mode: 'once', recovery: { mode: 'none' }, streams: listOnly }).run(never);
    const due = await nextDueFetches(ctx.db, 'booking_detail_queue', ctx.connection, 100, new Set());
    const item = due.find((d) => d.number === fixed)!;
    expect(item).toBeDefined();

    // 2. `fixed` as an older mapping left it: fetched for real, rejected for a reason today's
    //    schema no longer has, and quarantined by the sync's own outcome path (quarantine row
    //    plus a queue row parked as quarantined).
    const fetched = await ctx.client.getBooking(P, fixed, never);
    const rawBody = JSON.stringify(fetched.raw);
    const oldReason = 'booking.roomStays.0.ratePlans: expected at most 1 item (mapping version 1)';
    const fatal: Error[] = [];
    await new FetchOutcomes(ctx, 'booking_detail_queue', streamNames.bookingDetails, 'booking details', h.logger).fetchFailed(
      item,
      new InvalidPayloadError(
        { rawBody, reason: oldReason, propertyId: P, bookingNumber: fixed },
        { status: 200, path: `/api/read-reservation/v1/properties/${P}/bookings/${fixed}` },
      ),
      (e) => fatal.push(e),
    );
    expect(fatal).toEqual([]);

    // 3. The details: `broken` is quarantined for real; `fixed` waits parked; the rest lands.
    await syncOnce(ctx);
    const queued = async () => h!.sql<{ number: string; state: string }>('SELECT number, state FROM booking_detail_queue ORDER BY number');
    expect(await queued()).toEqual(
      [
        { number: fixed, state: 'quarantined' },
        { number: broken, state: 'quarantined' },
      ].sort((a, b) => a.number.localeCompare(b.number)),
    );
    expect((await h.sql('SELECT 1 FROM bookings WHERE number IN ($1, $2)', [fixed, broken])).length).toBe(0);

    // 4. A quarantined body older than the mirrored version of its booking: a fixed mapping
    //    accepts it, the version guard refuses it.
    const [current] = await h.sql<AnyRecord>('SELECT raw::text AS raw, price_after_tax, modified_at FROM bookings WHERE number = $1', [older]);
    const stale = (await ctx.client.getBooking(P, older, never)).raw as AnyRecord;
    stale.booking.modifiedDateTime = '2010-01-01T00:00:00Z';
    stale.booking.total = { ...stale.booking.total, priceAfterTax: 1 };
    await ctx.write((trx) =>
      quarantinePayload(trx, { stream: streamNames.bookingDetails, propertyId: P, entityKey: older, reason: oldReason, rawBody: JSON.stringify(stale) }),
    );

    const [brokenBefore] = await h.sql<AnyRecord>('SELECT occurrences, last_seen_at, reason FROM quarantine WHERE entity_key = $1', [broken]);
    h.sim.stats.requestLog = [];
    const r = await retryQuarantine(replayEnv(h, ctx));
    expect(h.sim.stats.requestLog).toEqual([]);
    expect(r.byStream).toEqual({ [streamNames.bookingDetails]: { retried: 3, mirrored: 1, superseded: 1, stillFailing: 1, notReplayable: 0 } });

    // `fixed` is mirrored exactly as a fetch would have mirrored it, its quarantine row and queue row are gone.
    const onlyFixed = (rows: Awaited<ReturnType<typeof mirrorSnapshot>>) => rows.filter((b) => b.key === `${P}/${fixed}`);
    expect(onlyFixed(await mirrorSnapshot(h))).toEqual(onlyFixed(simulatorSnapshot(h.sim)));
    expect(onlyFixed(simulatorSnapshot(h.sim))).toHaveLength(1);
    const [fixedRow] = await h.sql<AnyRecord>('SELECT raw::text AS raw, room_stay_count FROM bookings WHERE number = $1', [fixed]);
    // As the personal-data policy keeps it (personal data off: no loyalty card numbers).
    expect(JSON.parse(fixedRow!.raw)).toEqual(keptPayload(JSON.parse(rawBody), false));
    expect(await h.sql('SELECT 1 FROM quarantine WHERE entity_key = $1', [fixed])).toEqual([]);
    // `older` stays as mirrored: the stale body is dropped, not written.
    expect(await h.sql<AnyRecord>('SELECT raw::text AS raw, price_after_tax, modified_at FROM bookings WHERE number = $1', [older])).toEqual([current]);
    expect(await h.sql('SELECT 1 FROM quarantine WHERE entity_key = $1', [older])).toEqual([]);
    // `broken` still fails: kept once, seen once more, its queue row still parked.
    const [brokenAfter] = await h.sql<AnyRecord>('SELECT occurrences, last_seen_at, reason FROM quarantine WHERE entity_key = $1', [broken]);
    expect(brokenAfter!.occurrences).toBe(brokenBefore!.occurrences + 1);
    expect(brokenAfter!.reason).toBe(brokenBefore!.reason);
    expect(brokenAfter!.last_seen_at.getTime()).toBeGreaterThan(brokenBefore!.last_seen_at.getTime());
    expect(await queued()).toEqual([{ number: broken, state: 'quarantined' }]);
    expect((await h.sql('SELECT 1 FROM bookings WHERE number = $1', [broken])).length).toBe(0);

    // A body that is not JSON can only come from the provider again: left as it is.
    await ctx.write((trx) =>
      quarantinePayload(trx, {
        stream: streamNames.bookingDetails,
        propertyId: P,
        entityKey: 'x-1',
        reason: 'HTTP 200 with a body that is not JSON',
        rawBody: '<html>502 Bad Gateway</html>',
      }),
    );
    const again = await retryQuarantine(replayEnv(h, ctx));
    expect(again.byStream).toEqual({ [streamNames.bookingDetails]: { retried: 2, mirrored: 0, superseded: 0, stillFailing: 1, notReplayable: 1 } });
    expect((await h.sql<{ occurrences: number }>('SELECT occurrences FROM quarantine WHERE entity_key = $1', ['x-1']))[0]!.occurrences).toBe(1);
    expect(h.sim.stats.requestLog).toEqual([]);
  });

  it('replays a content payload an older mapping quarantined, and keeps the one that still fails', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 5 },
          { id: '500200', bookingCount: 5 },
        ],
      },
    });
    const bad = '500200';
    // The provider serves the property with a body today's schema rejects.
    h.sim.faults.malformedPropertyIds.add(bad);
    const ctx = await h.context();
    await syncOnce(ctx, { streams: 'all' });
    const [malformed] = await h.sql<AnyRecord>(`SELECT id, reason FROM quarantine WHERE stream = 'content' AND entity_key = $1`, [bad]);
    expect(malformed).toBeDefined();
    expect(await h.sql('SELECT 1 FROM properties WHERE property_id = $1', [bad])).toEqual([]);

    // The same property as an older, stricter mapping quarantined it: the body as served
    // without the fault, written by the sync's own quarantine call.
    const served = h.sim.contentProperty(bad);
    await ctx.write((trx) =>
      quarantinePayload(trx, {
        stream: streamNames.content,
        propertyId: bad,
        entityKey: bad,
        reason: 'property.images: expected at most 10 items (mapping version 1)',
        rawBody: JSON.stringify(served),
      }),
    );

    h.sim.stats.requestLog = [];
    const r = await retryQuarantine(replayEnv(h, ctx));
    expect(h.sim.stats.requestLog).toEqual([]);
    expect(r.byStream.content).toEqual({ retried: 2, mirrored: 1, superseded: 0, stillFailing: 1, notReplayable: 0 });
    const [row] = await h.sql<AnyRecord>('SELECT name, raw FROM properties WHERE property_id = $1', [bad]);
    expect(row!.raw).toEqual(served);
    expect(row!.name).toBe(served.name);
    expect((await h.sql<{ n: string }>('SELECT count(*) AS n FROM room_types WHERE property_id = $1', [bad]))[0]!.n).toBe(String(served.roomTypes.length));
    expect(await h.sql<AnyRecord>(`SELECT id, reason FROM quarantine WHERE stream = 'content'`)).toEqual([malformed]);
  });

  it('leaves a newer guest profile alone: a quarantined profile older than the stored one is superseded, not written over it', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const [stored] = await h.sql<AnyRecord>(
      `SELECT pms_person_id, first_name, last_name, raw::text AS raw, fetched_at FROM pms_guests WHERE last_name IS NOT NULL ORDER BY pms_person_id LIMIT 1`,
    );
    // The profile as it was before its last fetch, quarantined (by a rebuild of an older mapping) an hour before that fetch.
    const old = { ...JSON.parse(stored!.raw as string), personName: { firstName: 'Older', lastName: 'Profilebody' } };
    const seen = new Date((stored!.fetched_at as Date).getTime() - 3_600_000);
    await h.sql(
      `INSERT INTO quarantine (stream, property_id, entity_key, reason, reason_hash, raw_body, received_at, last_seen_at)
       VALUES ('pms_guests', '500100', $1, 'old', md5('old'), $2, $3, $3)`,
      [stored!.pms_person_id, JSON.stringify({ guest: old }), seen],
    );
    const r = await retryQuarantine(replayEnv(h, ctx));
    expect(r.byStream.pms_guests).toMatchObject({ retried: 1, superseded: 1, mirrored: 0 });
    expect(await h.sql('SELECT first_name, last_name FROM pms_guests WHERE pms_person_id = $1', [stored!.pms_person_id])).toEqual([
      { first_name: stored!.first_name, last_name: stored!.last_name },
    ]);
    expect(await h.sql(`SELECT 1 FROM quarantine WHERE stream = 'pms_guests'`)).toEqual([]);
  });
});

describe('the commands', () => {
  it('`rebuild` and `quarantine retry` run as processes: summaries, exit 0, the lease respected, an unreachable database named', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 40 }] } });
    const numbers = h.sim
      .bookings('500100')
      .map((b) => b.number)
      .sort();
    h.sim.faults.malformedBookingNumbers.add(numbers[5]!);
    const env = daemonEnv(h, { config: { pms: { enabled: false }, occupancy: { enabled: false } } });

    // A first sync on an empty schema records the mapping version without rebuilding anything.
    const synced = await runCli(['sync', '--once'], { ...env, STAYSYNC_LOG_LEVEL: 'info' });
    expect(synced.code).toBe(0);
    expect(logRecords(synced.stdout).some((l) => /rebuilding the typed tables/.test(l.msg))).toBe(false);
    expect(await h.sql('SELECT value FROM mirror_settings WHERE name = $1', ['mapping_version'])).toEqual([{ value: String(MAPPING_VERSION) }]);

    const target = numbers[9]!;
    const [orig] = await h.sql<{ price_after_tax: string }>('SELECT price_after_tax FROM bookings WHERE number = $1', [target]);
    await h.sql('UPDATE bookings SET price_after_tax = 0 WHERE number = $1', [target]);
    h.sim.stats.requestLog = [];
    const rebuilt = await runCli(['rebuild'], env);
    expect(rebuilt.code).toBe(0);
    expect(rebuilt.stdout).toContain('rebuilt the typed tables from raw in');
    expect(rebuilt.stdout).toMatch(/bookings\s+39 rows from raw, 1 changed/);
    expect(rebuilt.stdout).toMatch(/booking_daily_rates\s+\d+ rows written/);
    expect(await h.sql('SELECT price_after_tax FROM bookings WHERE number = $1', [target])).toEqual([orig]);

    const retried = await runCli(['quarantine', 'retry'], env);
    expect(retried.code).toBe(0);
    expect(retried.stdout).toContain('booking_details: 1 retried, 0 mirrored, 0 superseded, 1 still failing, 0 not replayable without the provider');
    expect(h.sim.stats.requestLog).toEqual([]);

    // Another process holds the schema's lock: nothing is done, and the sentence says why.
    const holder = await h.context();
    const busy = await runCli(['rebuild'], env);
    expect(busy.code).toBe(1);
    expect(busy.stdout).toMatch(/cannot rebuild the typed tables: another staysync process \(.+\) is syncing into schema/);
    await h.release(holder);

    const unreachable = await runCli(['quarantine', 'retry'], { ...env, DATABASE_URL: 'postgres://staysync:x@127.0.0.1:1/staysync' });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toContain('is unreachable');
    expect(unreachable.stdout + unreachable.stderr).not.toMatch(/\n\s+at /);

    const usage = await runCli(['quarantine'], {});
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('quarantine needs a subcommand: quarantine retry');
    const help = await runCli(['--help'], {});
    expect(help.stdout).toContain('quarantine retry');
    expect(help.stdout).toContain('rebuild');
  });

  it('`sync --once` rebuilds from raw and retries the quarantine first when the mirror was built with an older mapping', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 40 }] } });
    const ctx = await h.context();
    await syncOnce(ctx);
    const [target] = await h.sql<{ number: string; price_after_tax: string }>('SELECT number, price_after_tax FROM bookings ORDER BY number LIMIT 1 OFFSET 4');
    await h.sql('UPDATE bookings SET price_after_tax = 0 WHERE number = $1', [target!.number]);
    await h.sql(`INSERT INTO mirror_settings (name, value) VALUES ('mapping_version', '1') ON CONFLICT (name) DO UPDATE SET value = '1'`);
    await h.release(ctx);

    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, {
      config: { content: { enabled: false }, pms: { enabled: false }, occupancy: { enabled: false } },
      env: { STAYSYNC_LOG_LEVEL: 'info' },
    });
    const run = await runCli(['sync', '--once'], env);
    expect(run.code).toBe(0);
    const msgs = logRecords(run.stdout).map((l) => l.msg);
    expect(msgs.some((m) => m.includes(`(version 1 → ${MAPPING_VERSION}): rebuilding the typed tables from raw`))).toBe(true);
    // 40 bookings and their 40 summaries rebuilt; one booking differed from its raw.
    expect(msgs.some((m) => m.startsWith(`mapping version ${MAPPING_VERSION} recorded: 80 rows rebuilt from raw (1 changed, 0 quarantined)`))).toBe(true);
    expect(await h.sql('SELECT price_after_tax FROM bookings WHERE number = $1', [target!.number])).toEqual([{ price_after_tax: target!.price_after_tax }]);
    expect(await h.sql('SELECT value FROM mirror_settings WHERE name = $1', ['mapping_version'])).toEqual([{ value: String(MAPPING_VERSION) }]);
    // The column came back from raw, not from the provider: no details were asked for.
    expect(h.sim.stats.requestLog.filter((e) => e.path.includes('/bookings/'))).toEqual([]);

    // Recorded: the next start does not rebuild again.
    const next = await runCli(['sync', '--once'], env);
    expect(next.code).toBe(0);
    expect(logRecords(next.stdout).some((l) => l.msg.includes('rebuilding the typed tables'))).toBe(false);
  });
});
