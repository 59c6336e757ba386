/**
 * Fidelity: payloads the provider's document allows, served by the simulator over HTTP and
 * mirrored into a real PostgreSQL, arrive exactly as sent and are not quarantined; what cannot
 * be stored is quarantined visibly, and no key or list position is lost.
 */
import { streamNames } from '../../src/store/states.js';
import { afterEach, describe, expect, it } from 'vitest';
import { gatherStatus, formatStatus } from '../../src/ops/status.js';
import { refreshContent } from '../../src/sync/streams/content.js';
import { jsonNumber } from '../../src/provider/json.js';
import { mirrorSnapshot, SIM_CLIENT_ID, SIM_CLIENT_SECRET, simulatorSnapshot, startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { tokenResponse } from '../helpers/simulator-http.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const never = new AbortController().signal;
type AnyRecord = Record<string, any>;

const LIST = /\/bookings\/?$/;
const DETAILS = /\/read-reservation\/v1\/properties\/[^/]+\/bookings\/[^/]+$/;

/** A rewrite of booking details bodies for one booking number. */
function forBooking(number: string, change: (booking: AnyRecord) => void) {
  return (path: string, body: unknown) => {
    if (!DETAILS.test(path) || !path.endsWith(`/${number}`)) return undefined;
    change((body as AnyRecord).booking);
    return body;
  };
}

async function quarantined(harness: Harness) {
  return harness.sql<{ stream: string; entity_key: string | null; reason: string }>('SELECT stream, entity_key, reason FROM quarantine ORDER BY id');
}

describe('the booking list', () => {
  it('mirrors a summary without status and fetches its details', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const target = h.sim.bookings('500100')[5]!.number;
    h.sim.faults.rewriteBody = (path, body) => {
      if (!LIST.test(path)) return undefined;
      for (const s of (body as AnyRecord).bookingSummaries) if (s.number === target) delete s.status;
      return body;
    };
    await syncOnce(await h.context());
    expect(await quarantined(h)).toEqual([]);
    const [summary] = await h.sql<{ status: string | null; raw: AnyRecord }>('SELECT status, raw FROM booking_summaries WHERE number = $1', [target]);
    expect(summary!.status).toBeNull();
    expect(summary!.raw).not.toHaveProperty('status');
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('still fetches the details of a summary that fails validation, and quarantines the summary', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const target = h.sim.bookings('500100')[7]!.number;
    h.sim.faults.rewriteBody = (path, body) => {
      if (!LIST.test(path)) return undefined;
      for (const s of (body as AnyRecord).bookingSummaries) if (s.number === target) s.modifiedDateTime = 'last tuesday';
      return body;
    };
    await syncOnce(await h.context());
    const q = await quarantined(h);
    expect(q).toHaveLength(1);
    expect(q[0]).toMatchObject({ stream: streamNames.bookingSummaries, entity_key: target });
    expect(q[0]!.reason).toMatch(/modifiedDateTime/);
    // The booking itself is mirrored from its details.
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('keeps its position when pages come without a continueToken, and does not stop the property', async () => {
    // 30 bookings in pages of 12: three pages' worth, as 120 in pages of 50 were.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] }, config: { sync: { summariesPageSize: 12 } } });
    h.sim.stats.requestLog = [];
    h.sim.faults.rewriteBody = (path, body) => {
      if (!LIST.test(path)) return undefined;
      delete (body as AnyRecord).continueToken;
      return body;
    };
    // Each poll reads one page (there is no token to ask for the next with) and goes on from
    // the last modification it listed.
    for (let poll = 0; poll < 6; poll++) {
      const result = await syncOnce(await h.context());
      expect(result.continueTokenLost).toEqual([]);
    }
    const [cursor] = await h.sql<{ cursor: string | null; position: Date | null; state: string }>(
      "SELECT cursor, position, state FROM sync_cursors WHERE stream = 'booking_summaries'",
    );
    expect(cursor).toMatchObject({ cursor: null, state: 'active' });
    expect(cursor!.position).not.toBeNull();
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    expect(h.logLines.some((l) => l.includes('hasMoreData without a continueToken'))).toBe(true);
    // The next requests asked by modification time, not with a token.
    expect(h.sim.stats.requestLog.some((e) => LIST.test(e.path) && e.query?.includes('lastModification='))).toBe(true);
  });
});

describe('booking details', () => {
  it('keeps every digit and the scale of money, in the typed column, in raw and as the provider sent it', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const target = h.sim.bookings('500100')[0]!.number;
    h.sim.faults.rewriteBody = forBooking(target, (b) => {
      b.total.priceAfterTax = jsonNumber('28.0000');
      b.roomStays[0].total.priceBeforeTax = jsonNumber('12345678901234567.25');
      b.roomStays[0].index = jsonNumber('9007199254740993');
    });
    await syncOnce(await h.context());

    // What the provider sent, read as a client would.
    const sent = await fetchText(h, `/api/read-reservation/v1/properties/500100/bookings/${target}`);
    expect(sent).toContain('"priceAfterTax":28.0000');
    expect(sent).toContain('"priceBeforeTax":12345678901234567.25');

    const [row] = await h.sql<AnyRecord>(
      `SELECT b.price_after_tax::text AS booking_total, b.raw->'booking'->'total'->>'priceAfterTax' AS raw_total,
              s.price_before_tax::text AS stay_total, b.raw->'booking'->'roomStays'->0->'total'->>'priceBeforeTax' AS raw_stay,
              s.provider_index::text AS stay_index, b.raw->'booking'->'roomStays'->0->>'index' AS raw_index
         FROM bookings b JOIN booking_room_stays s USING (property_id, number)
        WHERE b.number = $1 AND s.stay_index = 0`,
      [target],
    );
    expect(row).toEqual({
      booking_total: '28.0000',
      raw_total: '28.0000',
      stay_total: '12345678901234567.25',
      raw_stay: '12345678901234567.25',
      stay_index: '9007199254740993',
      raw_index: '9007199254740993',
    });
  });

  it("reads a daily rate's rate plan spelled `RatePlanId`, as the specification writes it, and `ratePlanId`, as the OpenAPI document does", async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    h.sim.faults.specRatePlanIdRate = 0.5;
    h.sim.stats.requestLog = [];
    await syncOnce(await h.context());

    // Both spellings were served, each as sent in raw.
    const spelled = await h.sql<{ key: string; n: number }>(
      `SELECT k AS key, count(*)::int AS n
         FROM bookings b, jsonb_array_elements(b.raw->'booking'->'roomStays') s, jsonb_array_elements(s->'dailyRates') r, jsonb_object_keys(r) k
        WHERE k IN ('ratePlanId', 'RatePlanId') GROUP BY k ORDER BY k`,
    );
    expect(spelled.map((x) => x.key)).toEqual(['RatePlanId', 'ratePlanId']);
    expect(await quarantined(h)).toEqual([]);
    // Every night has its rate plan, as the provider's truth says.
    expect(await h.sql(`SELECT count(*)::int AS n FROM booking_daily_rates WHERE rate_plan_id IS NULL`)).toEqual([{ n: 0 }]);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('takes stay times with a zone: the wall clock in the typed column, the zone in raw', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const target = h.sim.bookings('500100')[1]!.number;
    let arrivalDate = '';
    h.sim.faults.rewriteBody = forBooking(target, (b) => {
      const stay = b.roomStays[0];
      arrivalDate = String(stay.stayDates.arrivalDateTime).slice(0, 10);
      const departureDate = String(stay.stayDates.departureDateTime).slice(0, 10);
      stay.stayDates.arrivalDateTime = `${arrivalDate}T14:00:00Z`;
      stay.stayDates.departureDateTime = `${departureDate}T12:00+03:00`;
      if (stay.dailyRates[0]) stay.dailyRates[0].date = `${arrivalDate}T00:00:00-05:30`;
    });
    await syncOnce(await h.context());
    expect(await quarantined(h)).toEqual([]);
    const [row] = await h.sql<AnyRecord>(
      `SELECT to_char(s.arrival_at, 'YYYY-MM-DD"T"HH24:MI:SS') AS arrival, to_char(s.departure_at, 'HH24:MI') AS departure,
              b.raw->'booking'->'roomStays'->0->'stayDates'->>'departureDateTime' AS raw_departure,
              (SELECT stay_date::text FROM booking_daily_rates r WHERE r.property_id = s.property_id AND r.number = s.number AND r.stay_index = 0 AND r.position = 0) AS first_night
         FROM booking_room_stays s JOIN bookings b USING (property_id, number)
        WHERE s.number = $1 AND s.stay_index = 0`,
      [target],
    );
    expect(row!.arrival).toBe(`${arrivalDate}T14:00:00`);
    expect(row!.departure).toBe('12:00');
    expect(row!.raw_departure).toMatch(/T12:00\+03:00$/);
    expect(row!.first_night).toBe(arrivalDate);
  });

  it('stores taxes that share an index, tax amounts at every level, every rate plan, loyalty cards and payment methods', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const target = h.sim.bookings('500100')[2]!.number;
    h.sim.faults.rewriteBody = forBooking(target, (b) => {
      b.taxes = [
        { index: 1, name: 'City tax', description: null },
        { index: 1, name: 'City tax (children)', description: 'same index' },
        { index: 2, name: 'VAT' },
      ];
      b.total.taxes = [{ index: 2, amount: jsonNumber('10.50') }];
      const stay = b.roomStays[0];
      stay.total.taxes = [
        { index: 1, amount: 3 },
        { index: 2, amount: jsonNumber('7.125') },
      ];
      stay.ratePlans = [
        { id: 'RP1', name: 'Flexible' },
        { id: 'RP2', name: 'Breakfast included' },
      ];
      stay.extraStayCharges = {
        earlyArrival: { overriddenDateTime: null, total: { priceBeforeTax: 20, priceAfterTax: jsonNumber('24.00'), taxes: [{ index: 2, amount: 4 }] } },
        lateDeparture: null,
      };
      b.guaranteeInfo = {
        totalPrepaid: 0,
        guarantees: [{ paymentMethod: 'BankCard' }, { paymentMethod: 'Cash' }],
        loyalty: { cards: [{ cardNumber: '11039500047840', loyaltySystemId: 'TLStatusLevel' }] },
      };
    });
    await syncOnce(await h.context());
    expect(await quarantined(h)).toEqual([]);
    const key = [target];
    expect(await h.sql('SELECT position, tax_index, name FROM booking_taxes WHERE number = $1 ORDER BY position', key)).toEqual([
      { position: 0, tax_index: 1, name: 'City tax' },
      { position: 1, tax_index: 1, name: 'City tax (children)' },
      { position: 2, tax_index: 2, name: 'VAT' },
    ]);
    expect(
      await h.sql('SELECT level, stay_index, tax_index, name, amount::text AS amount FROM booking_tax_amounts WHERE number = $1 ORDER BY position', key),
    ).toEqual([
      { level: 'booking', stay_index: null, tax_index: 2, name: 'VAT', amount: '10.50' },
      { level: 'room_stay', stay_index: 0, tax_index: 1, name: 'City tax', amount: '3' },
      { level: 'room_stay', stay_index: 0, tax_index: 2, name: 'VAT', amount: '7.125' },
      { level: 'early_arrival', stay_index: 0, tax_index: 2, name: 'VAT', amount: '4' },
    ]);
    expect(
      await h.sql('SELECT rate_plan_id, rate_plan_name FROM booking_room_stay_rate_plans WHERE number = $1 AND stay_index = 0 ORDER BY position', key),
    ).toEqual([
      { rate_plan_id: 'RP1', rate_plan_name: 'Flexible' },
      { rate_plan_id: 'RP2', rate_plan_name: 'Breakfast included' },
    ]);
    expect(await h.sql('SELECT card_number, loyalty_system_id FROM booking_loyalty_cards WHERE number = $1', key)).toEqual([
      // The card number is personal data: kept only with pms.personalData (personal-data.test.ts).
      { card_number: null, loyalty_system_id: 'TLStatusLevel' },
    ]);
    expect(await h.sql('SELECT payment_method, payment_methods FROM bookings WHERE number = $1', key)).toEqual([
      { payment_method: 'BankCard', payment_methods: ['BankCard', 'Cash'] },
    ]);
    expect(
      await h.sql(
        'SELECT early_arrival_price_before_tax::text AS before, early_arrival_price_after_tax::text AS after FROM booking_room_stays WHERE number = $1 AND stay_index = 0',
        key,
      ),
    ).toEqual([{ before: '20', after: '24.00' }]);
  });

  it('quarantines a booking the database cannot store (a NUL character), says so, and mirrors the rest', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    const target = h.sim.bookings('500100')[3]!.number;
    h.sim.faults.rewriteBody = forBooking(target, (b) => {
      b.customer = { ...b.customer, lastName: 'Smi\u0000th' };
    });
    const ctx = await h.context();
    await syncOnce(ctx);
    const q = await quarantined(h);
    expect(q).toHaveLength(1);
    expect(q[0]).toMatchObject({ stream: 'booking_details', entity_key: target });
    expect(q[0]!.reason).toMatch(/^database write failed: /);
    expect(ctx.counters.writeFailures).toBe(1);
    const [queued] = await h.sql<{ state: string }>('SELECT state FROM booking_detail_queue WHERE number = $1', [target]);
    expect(queued!.state).toBe('quarantined');
    expect(h.logLines.some((l) => l.includes('could not be written: quarantined') && l.includes(target))).toBe(true);
    // Visible where an operator looks.
    const status = formatStatus(await gatherStatus(ctx.db, h.config)).join('\n');
    expect(status).toContain('Quarantine: 1 payload (booking_details: 1 the database refused)');
    const others = simulatorSnapshot(h.sim, new Set([target]));
    expect(await mirrorSnapshot(h)).toEqual(others);
  });
});

describe('content and reference lists', () => {
  it('mirrors reference lists with null arrays and entries without a code, keeping the list as sent', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 0 }] } });
    const ctx = await h.context();
    await refreshContent(ctx, never);
    const mealPlansBefore = await h.sql<{ code: string }>('SELECT code FROM meal_plans WHERE removed_at IS NULL ORDER BY code');
    expect(mealPlansBefore.length).toBeGreaterThan(1);

    h.sim.faults.rewriteBody = (path, body) => {
      if (path.endsWith('/meal-plans')) return [...(body as AnyRecord[]), { code: null, name: 'Unnamed plan' }];
      if (path.endsWith('/room-type-categories')) return null;
      if (path.endsWith('/payment-methods')) return { paymentMethods: null };
      return undefined;
    };
    const second = await refreshContent(await h.context(), never);
    expect(second.quarantined).toBe(0);
    expect(await quarantined(h)).toEqual([]);
    // The coded entries are all there; the uncoded one only in the list as sent.
    expect(await h.sql('SELECT code FROM meal_plans WHERE removed_at IS NULL ORDER BY code')).toEqual(mealPlansBefore);
    const [sent] = await h.sql<{ raw: AnyRecord[] }>("SELECT raw FROM reference_lists WHERE list_name = 'mealPlans'");
    expect(sent!.raw.at(-1)).toEqual({ code: null, name: 'Unnamed plan' });
    // A null list says nothing about its entries: none is marked removed.
    expect(await h.sql('SELECT count(*)::int AS n FROM room_type_categories WHERE removed_at IS NOT NULL')).toEqual([{ n: 0 }]);
    expect(await h.sql('SELECT count(*)::int AS n FROM payment_methods WHERE removed_at IS NOT NULL')).toEqual([{ n: 0 }]);
    expect(await h.sql("SELECT raw FROM reference_lists WHERE list_name = 'roomTypeCategories'")).toEqual([{ raw: null }]);
  });

  it('does not mark room types, rate plans and services removed when the property sends those lists as null', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 0 }] } });
    await refreshContent(await h.context(), never);
    const count = async () =>
      (
        await h!.sql<{
          n: number;
        }>(`SELECT (SELECT count(*) FROM room_types WHERE removed_at IS NULL) + (SELECT count(*) FROM rate_plans WHERE removed_at IS NULL)
                                          + (SELECT count(*) FROM services WHERE removed_at IS NULL) AS n`)
      )[0]!.n;
    const before = Number(await count());
    expect(before).toBeGreaterThan(0);
    h.sim.faults.rewriteBody = (path, body) => {
      if (!/\/content\/v1\/properties(\/[^/]+)?\/?$/.test(path)) return undefined;
      const properties: AnyRecord[] = (body as AnyRecord).properties ?? [body];
      for (const p of properties) {
        p.roomTypes = null;
        p.ratePlans = null;
        delete p.services;
        p.name = `${p.name} (renamed)`;
      }
      return body;
    };
    await refreshContent(await h.context(), never);
    expect(await quarantined(h)).toEqual([]);
    expect(Number(await count())).toBe(before);
    expect((await h.sql<{ name: string }>('SELECT name FROM properties'))[0]!.name).toMatch(/\(renamed\)$/);
  });
});

async function fetchText(harness: Harness, path: string): Promise<string> {
  const token = await tokenResponse(harness.sim, { grant_type: 'client_credentials', client_id: SIM_CLIENT_ID, client_secret: SIM_CLIENT_SECRET });
  const { access_token } = (await token.json()) as { access_token: string };
  const res = await fetch(`${harness.sim.url}${path}`, { headers: { authorization: `Bearer ${access_token}` } });
  return res.text();
}
