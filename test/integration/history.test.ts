/**
 * History (migrations/0012_history.sql, src/mapping/history.ts): bookings made, re-priced,
 * moved, upgraded, shortened, cancelled and reinstated between moments T1 < T2 < T3, the mirror
 * caught up at each. The books as of each moment (reporting.on_the_books) equal the books
 * computed here from what the simulator served then; booking_history holds each version the
 * mirror fetched with its validity; bookings first seen after they changed are on the books from
 * their creation (reconstructed); a rebuild and a --recover leave history as it was.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rebuild } from '../../src/replay/rebuild.js';
import { refreshContent } from '../../src/sync/streams/content.js';
import type { BookingAmendment, BookingPayload } from '../../tools/simulator/index.js';
import { nightsOf } from '../helpers/books-model.js';
import { query } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const never = new AbortController().signal;
const HOUR = 3_600_000;
const unlimited = [{ limit: 1_000_000, windowMs: 1000 }];

/** The books per property, night and currency: room-nights, net and gross in cents. */
type Books = Map<string, { room_nights: number; net: number; gross: number; reconstructed: number }>;
const booksKey = (property: string, date: string, currency: string | null) => `${property}/${date}/${currency}`;

/** The books of bookings as served: every night of the bookings not cancelled. */
function booksOf(served: readonly BookingPayload[]): Books {
  const books: Books = new Map();
  for (const b of served) {
    if (b.status === 'Cancelled') continue;
    for (const n of nightsOf(b, 'UTC', null)) {
      const key = booksKey(b.propertyId, n.date, n.currency);
      const e = books.get(key) ?? { room_nights: 0, net: 0, gross: 0, reconstructed: 0 };
      e.room_nights += 1;
      e.net += n.net;
      e.gross += n.gross;
      books.set(key, e);
    }
  }
  return books;
}

/**
 * The books at `at`, before the mirror existed, of bookings first seen as `served`: each on the
 * books from its creation, until its cancellation when the version first seen is cancelled (or
 * until it was first seen, if the cancellation is not earlier); `reconstructed` counts the
 * nights of bookings whose first seen version is later than `at`.
 */
function reconstructedBooksOf(served: readonly BookingPayload[], at: number): Books {
  const books: Books = new Map();
  for (const b of served) {
    const created = Date.parse(b.createdDateTime);
    const modified = Date.parse(b.modifiedDateTime);
    let until = Infinity;
    if (b.status === 'Cancelled') {
      const cancelled = Date.parse(b.cancellation!.cancelledDateTime);
      if (created >= modified || cancelled <= created) continue;
      until = Math.min(cancelled, modified);
    }
    if (!(created <= at && at < until)) continue;
    for (const n of nightsOf(b, 'UTC', null)) {
      const key = booksKey(b.propertyId, n.date, n.currency);
      const e = books.get(key) ?? { room_nights: 0, net: 0, gross: 0, reconstructed: 0 };
      e.room_nights += 1;
      e.net += n.net;
      e.gross += n.gross;
      if (at < modified) e.reconstructed += 1;
      books.set(key, e);
    }
  }
  return books;
}

async function onTheBooks(harness: Harness, at: number): Promise<Books> {
  const rows = await query<{ property_id: string; stay_date: string; currency_code: string | null; n: number; net: string; gross: string; r: number }>(
    harness.dbUrl,
    `${harness.config.database.reportingSchema},${harness.schema}`,
    `SELECT property_id, stay_date::text, currency_code, room_nights::int AS n, room_revenue_net::text AS net,
            room_revenue_gross::text AS gross, reconstructed_room_nights::int AS r
       FROM on_the_books($1)`,
    [new Date(at)],
  );
  return new Map(
    rows.map((r) => [
      booksKey(r.property_id, r.stay_date, r.currency_code),
      { room_nights: r.n, net: Math.round(Number(r.net) * 100), gross: Math.round(Number(r.gross) * 100), reconstructed: r.r },
    ]),
  );
}

const sorted = (books: Books) => [...books.entries()].sort(([a], [b]) => a.localeCompare(b));
const withoutReconstructed = (books: Books): Books => new Map([...books].map(([k, v]) => [k, { ...v, reconstructed: 0 }]));

interface VersionRow {
  number: string;
  version: number;
  valid_from: string;
  valid_to: string | null;
  reconstructed: boolean;
  status: string;
  changes: string[];
}

async function versionsOf(harness: Harness): Promise<Map<string, VersionRow[]>> {
  const rows = await harness.sql<VersionRow & Record<string, unknown>>(
    `SELECT number, version, to_char(valid_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS valid_from,
            to_char(valid_to AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS valid_to, reconstructed, status, changes
       FROM booking_versions ORDER BY number, version`,
  );
  const out = new Map<string, VersionRow[]>();
  for (const r of rows) out.set(r.number, [...(out.get(r.number) ?? []), r]);
  return out;
}

/** Every table of history as rows, for before/after comparisons. */
async function historyDump(harness: Harness): Promise<unknown[]> {
  return [
    await harness.sql(`SELECT property_id, number, version, valid_from, valid_to, modified_at, reconstructed, fetched_at, content_hash, status,
                              created_at, cancelled_at, currency_code, arrival_date::text, departure_date::text, rooms, room_nights,
                              room_type_ids, room_revenue_net::text, room_revenue_gross::text, total_net::text, total_gross::text, changes
                         FROM booking_versions ORDER BY property_id, number, version`),
    await harness.sql(`SELECT property_id, number, stay_index, stay_date::text, currency_code, room_type_id, net_amount::text, gross_amount::text,
                              valid_from, valid_to, reconstructed_until
                         FROM booking_night_history ORDER BY property_id, number, stay_index, stay_date, valid_from`),
    // A sum kept write by write may carry more decimal places than the same sum counted again: compared as numbers.
    await harness.sql(`SELECT property_id, stay_date::text, currency_code, rooms_sold, complimentary_rooms, trim_scale(room_revenue_net)::text AS net,
                              trim_scale(room_revenue_gross)::text AS gross
                         FROM nightly_facts WHERE rooms_sold <> 0 ORDER BY property_id, stay_date, currency_code`),
  ];
}

describe('history', () => {
  it('keeps every version: the books as of T1 < T2 < T3 are the simulator’s books then, and a rebuild or --recover changes nothing', async () => {
    // The simulator's clock moves only when the test moves it: changes land at chosen moments,
    // two of them inside one second.
    let simNow = Math.floor(Date.now() / 1000) * 1000;
    const limits = { bookingList: unlimited, bookingDetails: unlimited, standard: unlimited, token: unlimited };
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 60 },
          { id: '500200', bookingCount: 40 },
        ],
        now: () => simNow,
        rateLimits: limits,
      },
    });
    const sim = h.sim;
    const ctx = await h.context();
    await refreshContent(ctx, never);
    const sync = async () => expect(await syncOnce(ctx)).toMatchObject({ failed: [], fatal: undefined });
    const served = () => structuredClone(sim.bookings());

    // T0: the first sync sees every booking at its current version.
    await sync();
    const T0 = simNow;
    const atT0 = served();
    expect(
      atT0.some((b) => Date.parse(b.modifiedDateTime) > Date.parse(b.createdDateTime)),
      'some bookings changed before the mirror saw them',
    ).toBe(true);

    // Bookings to change, with two nights or more (one to shorten), arriving after T3.
    const candidates = atT0.filter((b) => b.status !== 'Cancelled' && b.roomStays.every((s) => s.dailyRates.length >= 3));
    expect(candidates.length).toBeGreaterThanOrEqual(7);
    const [A, B, C, D, E, F, G] = candidates.map((b) => b.number) as [string, string, string, string, string, string, string];
    const propertyOf = new Map(atT0.map((b) => [b.number, b.propertyId]));
    const amend = (number: string, change: BookingAmendment) => sim.amendBooking(propertyOf.get(number)!, number, change);

    // T1: made, re-priced, moved, upgraded, shortened, cancelled.
    simNow += HOUR;
    sim.mutate({ count: 0, newCount: 4 });
    amend(A, 'reprice');
    amend(B, 'move');
    amend(C, 'upgrade');
    amend(D, 'shorten');
    amend(E, 'cancel');
    await sync();
    simNow += 60_000;
    const T1 = simNow;
    const atT1 = served();

    // T2: reinstated, cancelled, re-priced again; G changed twice within one second, the mirror
    // catching up in between.
    simNow += HOUR;
    amend(E, 'reinstate');
    amend(F, 'cancel');
    amend(A, 'reprice');
    amend(G, 'reprice');
    await sync();
    amend(G, 'shorten');
    await sync();
    simNow += 60_000;
    const T2 = simNow;
    const atT2 = served();

    // T3: more of each, and changes of the simulator's own choosing.
    simNow += HOUR;
    amend(B, 'upgrade');
    amend(C, 'move');
    amend(A, 'shorten');
    sim.mutate({ count: 6, newCount: 2 });
    await sync();
    simNow += 60_000;
    const T3 = simNow;
    const atT3 = served();

    // ---- the books as of each moment
    expect(sorted(withoutReconstructed(await onTheBooks(h, T1)))).toEqual(sorted(booksOf(atT1)));
    expect(sorted(withoutReconstructed(await onTheBooks(h, T2)))).toEqual(sorted(booksOf(atT2)));
    expect(sorted(withoutReconstructed(await onTheBooks(h, T3)))).toEqual(sorted(booksOf(atT3)));
    expect(sorted(booksOf(atT1))).not.toEqual(sorted(booksOf(atT2)));
    // Before the mirror existed: reconstructed from the versions first seen.
    const created = atT0.map((b) => Date.parse(b.createdDateTime)).sort((a, b) => a - b);
    const past = [created[Math.floor(created.length / 3)]!, created[Math.floor((2 * created.length) / 3)]!, T0 - 1000];
    for (const at of past) {
      const expected = reconstructedBooksOf(atT0, at);
      expect(sorted(await onTheBooks(h, at)), `books at ${new Date(at).toISOString()}`).toEqual(sorted(expected));
    }
    expect(past.some((at) => [...reconstructedBooksOf(atT0, at).values()].some((e) => e.reconstructed > 0))).toBe(true);

    // Now: what daily_kpis shows, and what the facts kept with every write add up to.
    const kpis = await query<{ k: string; n: number; net: string; gross: string }>(
      h.dbUrl,
      `${h.config.database.reportingSchema},${h.schema}`,
      `SELECT property_id || '/' || stay_date || '/' || currency_code AS k, rooms_sold::int AS n, room_revenue_net::text AS net, room_revenue_gross::text AS gross
         FROM daily_kpis WHERE rooms_sold > 0`,
    );
    const kpiBooks: Books = new Map(
      kpis.map((r) => [r.k, { room_nights: r.n, net: Math.round(Number(r.net) * 100), gross: Math.round(Number(r.gross) * 100), reconstructed: 0 }]),
    );
    expect(sorted(kpiBooks)).toEqual(sorted(booksOf(atT3)));

    // ---- each version with its validity
    const versions = await versionsOf(h);
    const t = (b: BookingPayload | undefined) => b!.modifiedDateTime.replace(/\.\d+/, '');
    const at = (served: BookingPayload[], number: string) => served.find((b) => b.number === number);
    for (const [number, vs] of versions) {
      expect(
        vs.map((v) => v.version),
        number,
      ).toEqual(vs.map((_, i) => i + 1));
      expect(vs.filter((v) => v.valid_to === null).length, number).toBe(1);
      vs.forEach((v, i) => expect(v.valid_to, `${number} v${v.version}`).toBe(vs[i + 1]?.valid_from ?? null));
      const current = at(atT3, number);
      expect(vs.at(-1)!.valid_from, number).toBe(t(current));
      expect(vs.at(-1)!.status, number).toBe(current!.status);
    }
    expect(versions.size).toBe(atT3.length);
    const fetched = (number: string) => versions.get(number)!.filter((v) => !v.reconstructed);
    const changesOf = (number: string) => fetched(number).map((v) => v.changes);
    expect(fetched(A).map((v) => v.valid_from)).toEqual([t(at(atT0, A)), t(at(atT1, A)), t(at(atT2, A)), t(at(atT3, A))]);
    expect(changesOf(A)[1]).toContain('price');
    expect(changesOf(A)[1]).not.toContain('dates');
    expect(changesOf(A)[3]).toContain('dates');
    expect(changesOf(B)[1]).toContain('dates');
    expect(changesOf(B)[2]).toContain('room_type');
    expect(changesOf(C)[1]).toContain('room_type');
    expect(changesOf(C)[2]).toContain('dates');
    expect(changesOf(D)[1]).toContain('dates');
    expect(changesOf(E).slice(1)).toEqual([['cancelled'], ['reinstated']]);
    expect(changesOf(F)[1]).toEqual(['cancelled']);
    // G: two versions within one second, the first never valid at any instant.
    const g = fetched(G);
    expect(g).toHaveLength(3);
    expect(g[1]!.valid_from).toBe(g[2]!.valid_from);
    expect(g[1]!.valid_to).toBe(g[1]!.valid_from);
    expect(g[2]!.changes).toContain('dates');
    // Made after T0: created, never reconstructed.
    const made = atT3.filter((b) => !atT0.some((x) => x.number === b.number));
    expect(made.length).toBe(6);
    for (const b of made) expect(versions.get(b.number)![0]).toMatchObject({ reconstructed: false, changes: ['created'] });
    // First seen after it changed: a reconstructed version from its creation.
    const late = atT0.find((b) => b.status !== 'Cancelled' && Date.parse(b.modifiedDateTime) > Date.parse(b.createdDateTime))!;
    expect(versions.get(late.number)![0]).toMatchObject({ reconstructed: true, changes: ['created'], valid_from: late.createdDateTime.replace(/\.\d+/, '') });

    // ---- a rebuild and a --recover add nothing and lose nothing
    const before = await historyDump(h);
    const rebuilt = await rebuild({ handle: ctx, config: h.config, logger: h.logger });
    expect(rebuilt.sources.bookings!.rebuilt).toBe(atT3.length);
    expect(await historyDump(h)).toEqual(before);
    await syncOnce(ctx, { recoverFrom: new Map([['500100', new Date(T0 - 2 * 24 * HOUR)]]) });
    expect(await historyDump(h)).toEqual(before);

    // A mirror from before history (its tables empty, as after the upgrade's migration): the
    // rebuild gives every booking its history from the version stored, reconstructed before it.
    await h.sql('DELETE FROM booking_versions; DELETE FROM booking_night_history; DELETE FROM nightly_facts');
    const upgraded = await rebuild({ handle: ctx, config: h.config, logger: h.logger });
    expect(upgraded.history).toMatchObject({ started: atT3.length, corrected: 0 });
    expect(sorted(withoutReconstructed(await onTheBooks(h, T3)))).toEqual(sorted(booksOf(atT3)));
    const created3 = atT3.map((b) => Date.parse(b.createdDateTime)).sort((a, b) => a - b);
    const middle = created3[Math.floor(created3.length / 2)]!;
    expect(sorted(await onTheBooks(h, middle))).toEqual(sorted(reconstructedBooksOf(atT3, middle)));
    expect((await h.sql<{ n: number }>('SELECT count(*)::int AS n FROM booking_versions WHERE valid_to IS NULL'))[0]!.n).toBe(atT3.length);
  });
});
