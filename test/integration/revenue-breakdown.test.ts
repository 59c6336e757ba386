/**
 * What each night earns, on real PostgreSQL: revenue_breakdown, revenue_breakdown_monthly,
 * tax_breakdown and channel_performance's commission, on the example of
 * docs/tables-and-reporting.md ("Revenue breakdown") worked out by hand. The bookings and the
 * PMS reservations go through the daemon's own parse, mapping and write path.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bookingToRows } from '../../src/mapping/bookings.js';
import { bookingHistoryOf } from '../../src/mapping/history.js';
import { pmsReservationToRows } from '../../src/mapping/pms.js';
import { parseGetBookingResponse } from '../../src/provider/schemas/bookings.js';
import { parseReservationResponse } from '../../src/provider/schemas/pms.js';
import { saveBookingVersion } from '../../src/store/repositories/bookings.js';
import { savePmsReservation } from '../../src/store/repositories/pms.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const total = (before: string, after: string, taxes: { amount: string; index: number }[] = []) => ({
  priceBeforeTax: before,
  priceAfterTax: after,
  taxAmount: (Number(after) - Number(before)).toFixed(2),
  taxes,
  discounts: [],
});

/** The booking as the provider sends it. */
function booking(
  number: string,
  v: {
    status?: string;
    created: string;
    source: { type: string; code?: string };
    nights: [string, string][];
    stay: ReturnType<typeof total>;
    stayServices?: unknown[];
    services?: unknown[];
    early?: unknown;
    taxes?: unknown[];
  },
) {
  const arrival = v.nights[0]![0];
  const departure = new Date(Date.parse(`${v.nights.at(-1)![0]}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return {
    booking: {
      propertyId: P,
      number,
      status: v.status ?? 'Active',
      createdDateTime: v.created,
      modifiedDateTime: v.created,
      currencyCode: 'EUR',
      roomStays: [
        {
          stayDates: { arrivalDateTime: `${arrival}T14:00`, departureDateTime: `${departure}T12:00` },
          ratePlans: [{ id: 'RP1', name: 'Flexible' }],
          roomType: { id: 'DBL', name: 'Double' },
          guestCount: { adultCount: 2, childAges: [] },
          guests: [],
          dailyRates: v.nights.map(([date, price]) => ({ ratePlanId: 'RP1', priceBeforeTax: price, date })),
          total: v.stay,
          services: v.stayServices ?? [],
          extraStayCharges: { earlyArrival: v.early ?? null, lateDeparture: null },
        },
      ],
      services: v.services ?? [],
      total: v.stay,
      taxes: v.taxes ?? [],
      cancellation: v.status === 'Cancelled' ? { penaltyAmount: '0', cancelledDateTime: v.created } : null,
      source: v.source,
      customer: null,
    },
  };
}

async function writeBooking(ctx: SyncContext, body: ReturnType<typeof booking>): Promise<void> {
  const parsed = parseGetBookingResponse(body);
  if (!parsed.ok) throw new Error(parsed.reason);
  const rows = bookingToRows(P, parsed.value, body, new Date(parsed.value.modifiedDateTime), false);
  await ctx.write((trx) => saveBookingVersion(trx, rows, bookingHistoryOf(rows)));
}

async function writePmsReservation(ctx: SyncContext, number: string, commission: unknown): Promise<void> {
  const body = {
    reservation: {
      number,
      customerLanguageCode: 'en',
      modifyDateTime: '2026-01-01T10:00:00Z',
      currencyCode: 'EUR',
      creationSource: { id: '1', name: 'Channel' },
      reservationStatus: 'Confirmed',
      roomStays: [],
      agentCommission: commission,
    },
  };
  const parsed = parseReservationResponse(body);
  if (!parsed.ok) throw new Error(parsed.reason);
  const rows = pmsReservationToRows(P, parsed.value, body.reservation, { personalData: false, pseudonymKey: undefined, fetchedAt: new Date() });
  await ctx.write((trx) => savePmsReservation(trx, rows));
}

/** The example of docs/tables-and-reporting.md, "Revenue breakdown". */
async function writeExample(ctx: SyncContext): Promise<void> {
  const vat = { index: 1, name: 'VAT', description: 'VAT 10 %' };
  const cityTax = { index: 2, name: 'City tax', description: 'per person and night' };
  // B1: 3 nights at 100, 100, 120 (net 320); the stay's taxes VAT 32.00 and city tax 6.00;
  // breakfast 60.00 + VAT 6.00 for the stay; parking 30.00 (no tax) for the booking; early
  // arrival 50.00 + VAT 5.00; an OTA commission of 48.00.
  await writeBooking(
    ctx,
    booking('B1', {
      created: '2026-01-01T10:00:00Z',
      source: { type: 'Channel', code: 'BDC' },
      nights: [
        ['2026-02-27', '100.00'],
        ['2026-02-28', '100.00'],
        ['2026-03-01', '120.00'],
      ],
      stay: total('320.00', '358.00', [
        { amount: '32.00', index: 1 },
        { amount: '6.00', index: 2 },
      ]),
      stayServices: [
        {
          id: 'S1',
          name: 'Breakfast',
          description: 'Breakfast',
          kind: 'Meal',
          inclusive: false,
          mealPlanCode: 'BB',
          total: { priceBeforeTax: '60.00', priceAfterTax: '66.00', taxAmount: '6.00', taxes: [{ amount: '6.00', index: 1 }] },
        },
      ],
      services: [{ id: 'S2', name: 'Parking', description: 'Parking', total: { priceBeforeTax: '30.00', priceAfterTax: '30.00', taxAmount: '0', taxes: [] } }],
      early: { overriddenDateTime: '2026-02-27T10:00', total: total('50.00', '55.00', [{ amount: '5.00', index: 1 }]) },
      taxes: [vat, cityTax],
    }),
  );
  await writePmsReservation(ctx, 'B1', { percent: null, calculationSource: 'Ota', amount: { value: 48, currencyCode: 'EUR' }, discount: null });
  // B2: cancelled; counts nowhere but in channel_performance's cancellations.
  await writeBooking(
    ctx,
    booking('B2', {
      status: 'Cancelled',
      created: '2026-01-01T12:00:00Z',
      source: { type: 'Channel', code: 'BDC' },
      nights: [['2026-02-28', '200.00']],
      stay: total('200.00', '200.00'),
    }),
  );
  await writePmsReservation(ctx, 'B2', { percent: 15, calculationSource: 'Pms', amount: { value: 30, currencyCode: 'EUR' }, discount: null });
  // B3: one night at 80, no taxes, its commission in another currency (not taken off).
  await writeBooking(
    ctx,
    booking('B3', { created: '2026-01-02T09:00:00Z', source: { type: 'BookingEngine' }, nights: [['2026-02-28', '80.00']], stay: total('80.00', '80.00') }),
  );
  await writePmsReservation(ctx, 'B3', {
    percent: 10,
    calculationSource: 'Pms',
    amount: { value: 8, currencyCode: 'USD' },
    discount: { value: 2, currencyCode: 'USD' },
  });
}

describe('revenue breakdown', () => {
  it('splits each night into rooms, extras, taxes and commission as the docs work it out', async () => {
    h = await startHarness();
    const ctx = await h.context();
    await writeExample(ctx);
    const reporting = reportingSchemaOf(h.schema);

    // The commission typed whole.
    expect(
      await h.sql(
        `SELECT number, agent_commission_amount::text AS amount, agent_commission_source AS source, agent_commission_currency AS currency,
                agent_commission_percent::text AS percent, agent_commission_discount::text AS discount
           FROM pms_reservations ORDER BY number`,
      ),
    ).toEqual([
      { number: 'B1', amount: '48', source: 'Ota', currency: 'EUR', percent: null, discount: null },
      { number: 'B2', amount: '30', source: 'Pms', currency: 'EUR', percent: '15', discount: null },
      { number: 'B3', amount: '8', source: 'Pms', currency: 'USD', percent: '10', discount: '2' },
    ]);

    // B1 night by night: each amount spread 100 : 100 : 120, rounded cumulatively.
    expect(
      await h.sql(
        `SELECT stay_date::text, room_revenue_net::text, room_taxes::text, services_net::text, services_taxes::text, early_late_net::text,
                early_late_taxes::text, commission::text, commission_source
           FROM "${reporting}".booking_night_revenue WHERE property_id = $1 AND number = 'B1' ORDER BY stay_date`,
        [P],
      ),
    ).toEqual([
      {
        stay_date: '2026-02-27',
        room_revenue_net: '100.00',
        room_taxes: '11.88',
        services_net: '28.13',
        services_taxes: '1.88',
        early_late_net: '50.00',
        early_late_taxes: '5.00',
        commission: '15.00',
        commission_source: 'Ota',
      },
      {
        stay_date: '2026-02-28',
        room_revenue_net: '100.00',
        room_taxes: '11.87',
        services_net: '28.12',
        services_taxes: '1.87',
        early_late_net: '0',
        early_late_taxes: '0',
        commission: '15.00',
        commission_source: 'Ota',
      },
      {
        stay_date: '2026-03-01',
        room_revenue_net: '120.00',
        room_taxes: '14.25',
        services_net: '33.75',
        services_taxes: '2.25',
        early_late_net: '0',
        early_late_taxes: '0',
        commission: '18.00',
        commission_source: 'Ota',
      },
    ]);

    const nights = await h.sql(
      `SELECT stay_date::text, room_nights, room_revenue_net::text, extras_net::text, services_net::text, early_late_net::text,
              room_taxes::text, extras_taxes::text, taxes::text, revenue_net::text, revenue_gross::text, commission::text,
              revenue_net_of_commission::text
         FROM "${reporting}".revenue_breakdown WHERE property_id = $1 ORDER BY stay_date`,
      [P],
    );
    expect(nights).toEqual([
      {
        stay_date: '2026-02-27',
        room_nights: '1',
        room_revenue_net: '100.00',
        extras_net: '78.13',
        services_net: '28.13',
        early_late_net: '50.00',
        room_taxes: '11.88',
        extras_taxes: '6.88',
        taxes: '18.76',
        revenue_net: '178.13',
        revenue_gross: '196.89',
        commission: '15.00',
        revenue_net_of_commission: '163.13',
      },
      {
        stay_date: '2026-02-28',
        room_nights: '2',
        room_revenue_net: '180.00',
        extras_net: '28.12',
        services_net: '28.12',
        early_late_net: '0',
        room_taxes: '11.87',
        extras_taxes: '1.87',
        taxes: '13.74',
        revenue_net: '208.12',
        revenue_gross: '221.86',
        commission: '15.00',
        revenue_net_of_commission: '193.12',
      },
      {
        stay_date: '2026-03-01',
        room_nights: '1',
        room_revenue_net: '120.00',
        extras_net: '33.75',
        services_net: '33.75',
        early_late_net: '0',
        room_taxes: '14.25',
        extras_taxes: '2.25',
        taxes: '16.50',
        revenue_net: '153.75',
        revenue_gross: '170.25',
        commission: '18.00',
        revenue_net_of_commission: '135.75',
      },
    ]);

    const months = await h.sql(
      `SELECT month::text, room_nights::text, room_revenue_net::text, extras_net::text, taxes::text, revenue_gross::text, commission::text,
              revenue_net_of_commission::text, commission_share_of_room_revenue::text
         FROM "${reporting}".revenue_breakdown_monthly WHERE property_id = $1 ORDER BY month`,
      [P],
    );
    expect(months).toEqual([
      {
        month: '2026-02-01',
        room_nights: '3',
        room_revenue_net: '280.00',
        extras_net: '106.25',
        taxes: '32.50',
        revenue_gross: '418.75',
        commission: '30.00',
        revenue_net_of_commission: '356.25',
        commission_share_of_room_revenue: '0.1071',
      },
      {
        month: '2026-03-01',
        room_nights: '1',
        room_revenue_net: '120.00',
        extras_net: '33.75',
        taxes: '16.50',
        revenue_gross: '170.25',
        commission: '18.00',
        revenue_net_of_commission: '135.75',
        commission_share_of_room_revenue: '0.1500',
      },
    ]);

    const taxes = await h.sql(
      `SELECT stay_date::text, tax_name, amount::text FROM "${reporting}".tax_breakdown WHERE property_id = $1 ORDER BY stay_date, tax_name`,
      [P],
    );
    expect(taxes).toEqual([
      { stay_date: '2026-02-27', tax_name: 'City tax', amount: '1.88' },
      { stay_date: '2026-02-27', tax_name: 'VAT', amount: '16.88' },
      { stay_date: '2026-02-28', tax_name: 'City tax', amount: '1.87' },
      { stay_date: '2026-02-28', tax_name: 'VAT', amount: '11.87' },
      { stay_date: '2026-03-01', tax_name: 'City tax', amount: '2.25' },
      { stay_date: '2026-03-01', tax_name: 'VAT', amount: '14.25' },
    ]);

    const channels = await h.sql(
      `SELECT channel_code, booking_date::text, bookings, cancelled_bookings, room_revenue_net::text, commission::text, commission_by_ota::text,
              commission_by_pms::text, bookings_with_commission, bookings_with_pms_reservation, room_revenue_net_of_commission::text
         FROM "${reporting}".channel_performance WHERE property_id = $1 ORDER BY channel_code`,
      [P],
    );
    expect(channels).toEqual([
      {
        channel_code: 'BDC',
        booking_date: '2026-01-01',
        bookings: '2',
        cancelled_bookings: '1',
        room_revenue_net: '320.00',
        commission: '48',
        commission_by_ota: '48',
        commission_by_pms: '0',
        bookings_with_commission: '1',
        bookings_with_pms_reservation: '1',
        room_revenue_net_of_commission: '272.00',
      },
      {
        channel_code: 'BookingEngine',
        booking_date: '2026-01-02',
        bookings: '1',
        cancelled_bookings: '0',
        room_revenue_net: '80.00',
        commission: '0',
        commission_by_ota: '0',
        commission_by_pms: '0',
        bookings_with_commission: '0',
        bookings_with_pms_reservation: '1',
        room_revenue_net_of_commission: '80.00',
      },
    ]);
  });
});
