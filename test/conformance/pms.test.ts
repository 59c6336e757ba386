/**
 * Conformance of the PMS reservation mirror with the provider's OpenAPI document: reservation
 * answers generated from the document (their number null, absent or empty, their date-times
 * sometimes other text, as the document's bare strings allow) are served over HTTP, searched
 * and fetched by the daemon's `sync --once` engine into a real PostgreSQL, and compared with
 * the payloads: each is mirrored under the number it was fetched by, raw as sent, date-times
 * typed when they can be read and NULL otherwise. Nothing spec-valid may be quarantined; an
 * answer without a reservation, which has nothing to mirror, is, with a reason that says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { byKey, Checks, connect, instant, isReadableDateTime, MISSING, rowsOf, textOf, wallClock, type Row } from './checks.js';
import { generate, generateMany, withValue, type Payload } from './generator.js';
import { startConformanceProvider, unlimited, type ConformanceProvider } from './provider.js';

type Any = any;

const PROPERTY = '7001';
const PMS = `/api/pms/v2/properties/${PROPERTY}`;
const COUNT = 120;

let provider: ConformanceProvider | undefined;
let h: Harness | undefined;
let client: pg.Client | undefined;
afterEach(async () => {
  await client?.end();
  await h?.close();
  await provider?.close();
  client = h = provider = undefined;
});

/**
 * An answer of data: a 2xx whose `errors` is not empty is a failed request, retried and never
 * mirrored (src/provider/client.ts; test/integration/pms-incomplete-answers.test.ts), so the
 * generated errors are left out here.
 */
const withoutErrors = (p: Payload): Payload => (Array.isArray(p.value.errors) && p.value.errors.length > 0 ? withValue(p, { ...p.value, errors: [] }) : p);

/** The reservation answers, each with a reservation (the generator may leave it out), fetched by `N-<i>`. */
function reservationAnswers(): { number: string; payload: Payload }[] {
  return generateMany('pmsReservation', COUNT, 21_000).map((p, i) => ({
    number: `N-${i}`,
    payload: withoutErrors(p.value.reservation ? p : withValue(p, { ...p.value, reservation: generate('#PmsApi_Reservation', p.seed, p.mode).value })),
  }));
}

/** A date-time column's expected value: the text when the suite reads it as one, else NULL (raw keeps the text). */
const readable = (v: unknown, read: (s: string) => string | null): string | null => (typeof v === 'string' && isReadableDateTime(v) ? read(v) : null);

/** A birth date's expected value: the calendar day the text starts with, when that day exists; else NULL. */
function birthDay(v: unknown): string | null {
  const m = typeof v === 'string' ? /^(\d{4})-(\d{2})-(\d{2})/.exec(v) : null;
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d);
  return y >= 1 && day.getUTCMonth() === mo - 1 && day.getUTCDate() === d ? m[0] : null;
}

describe('conformance with the OpenAPI document: PMS reservations', () => {
  it('mirrors every generated reservation under the number it was fetched by, raw as sent, date-times read or NULL, none quarantined', async () => {
    const p = await startConformanceProvider();
    provider = p;
    h = await startHarness({
      sim: { properties: [{ id: '1', bookingCount: 0 }] },
      config: {
        provider: { url: p.url, referenceDataUrl: p.url },
        propertyIds: [PROPERTY],
        rateLimits: unlimited,
        // Raw as sent: with personal data off, the customer's contact data would be stripped from it.
        pms: { personalData: true, backfillFrom: '2024-01-01' },
      },
    });
    await h.migrate();
    client = await connect(h.dbUrl, h.schema);

    const answers = reservationAnswers();
    const sent = answers.map((a) => a.payload.value.reservation);
    // What this test is about is in the mix.
    expect(sent.filter((r) => r.number === null || r.number === undefined || r.number === '').length).toBeGreaterThan(10);
    expect(sent.filter((r) => typeof r.modifyDateTime === 'string' && !isReadableDateTime(r.modifyDateTime)).length).toBeGreaterThan(0);
    expect(sent.filter((r) => typeof r.modifyDateTime === 'string' && isReadableDateTime(r.modifyDateTime)).length).toBeGreaterThan(10);
    // An answer the document allows without any reservation: nothing to mirror.
    const empty = withoutErrors(generateMany('pmsReservation', 40, 22_000).find((x) => x.value.reservation === undefined)!);

    // The numbers are listed by the first search only; every later window finds nothing new.
    let listed = false;
    p.routes.set(`${PMS}/reservations/search`, (q) => {
      const numbers = listed || q.get('state') !== 'Active' ? [] : [...answers.map((a) => a.number), 'N-none'];
      listed = true;
      return JSON.stringify({ reservations: numbers.map((number) => ({ number })), hasNextPage: false });
    });
    for (const a of answers) p.routes.set(`${PMS}/reservations/${a.number}`, () => a.payload.body);
    p.routes.set(`${PMS}/reservations/N-none`, () => empty.body);

    const result = await syncOnce(await h.context(), { streams: 'pms' });
    expect(result).toMatchObject({ failed: [], fatal: undefined });

    const quarantine = await client.query<{ stream: string; entity_key: string; reason: string }>('SELECT stream, entity_key, reason FROM quarantine');
    expect(quarantine.rows).toEqual([
      { stream: 'pms_reservations', entity_key: 'N-none', reason: 'response.reservation: absent or null: the answer holds no reservation to mirror' },
    ]);

    const checks = new Checks();
    const reservations = checks.rowsFor(
      'pms_reservations',
      byKey(
        await rowsOf(client, 'SELECT number, modified_at, room_stay_count, customer_birth_date, raw FROM pms_reservations WHERE property_id = $1', [PROPERTY]),
        (r) => textOf(r.number)!,
      ),
      answers.map((a) => a.number),
    );
    const stayKey = (number: string, position: number) => `${number} stay ${position}`;
    const stays = checks.rowsFor(
      'pms_room_stays',
      byKey(
        await rowsOf(
          client,
          'SELECT number, position, pms_room_stay_id, check_in_at, check_out_at, actual_check_in_at, actual_check_out_at FROM pms_room_stays WHERE property_id = $1',
          [PROPERTY],
        ),
        (r) => stayKey(textOf(r.number)!, Number(textOf(r.position))),
      ),
      answers.flatMap((a) => ((a.payload.value.reservation.roomStays ?? []) as unknown[]).map((_, i) => stayKey(a.number, i))),
    );
    const column = (row: Row | undefined, name: string) => (row ? row[name] : MISSING);
    for (const { number, payload } of answers) {
      const r: Any = payload.value.reservation;
      const row = reservations.get(number);
      checks.add(`${number} raw`, 'json', column(row, 'raw'), r);
      checks.add(`${number} modified_at`, 'instant', column(row, 'modified_at'), readable(r.modifyDateTime, instant));
      checks.add(`${number} room_stay_count`, 'int', column(row, 'room_stay_count'), (r.roomStays ?? []).length);
      checks.add(`${number} customer_birth_date`, 'date', column(row, 'customer_birth_date'), birthDay(r.customer?.birthDate));
      ((r.roomStays ?? []) as Any[]).forEach((s, i) => {
        const stay = stays.get(stayKey(number, i));
        const at = `${stayKey(number, i)}`;
        checks.add(`${at} pms_room_stay_id`, 'text', column(stay, 'pms_room_stay_id'), s.pmsRoomStayId);
        checks.add(`${at} check_in_at`, 'local', column(stay, 'check_in_at'), readable(s.checkInDateTime, wallClock));
        checks.add(`${at} check_out_at`, 'local', column(stay, 'check_out_at'), readable(s.checkOutDateTime, wallClock));
        checks.add(`${at} actual_check_in_at`, 'local', column(stay, 'actual_check_in_at'), readable(s.actualCheckInDateTime, wallClock));
        checks.add(`${at} actual_check_out_at`, 'local', column(stay, 'actual_check_out_at'), readable(s.actualCheckOutDateTime, wallClock));
      });
    }
    expect(checks.items.length).toBeGreaterThan(COUNT * 4);
    expect(await checks.mismatches(client)).toEqual([]);
  });
});
