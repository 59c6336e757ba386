/**
 * Bookings written version by version at chosen times, for the tests of what history gives
 * (pace, forecast): a one-room booking as the provider sends it, and its write as the booking
 * details stream does it.
 */
import { bookingToRows } from '../../src/mapping/bookings.js';
import { bookingHistoryOf } from '../../src/mapping/history.js';
import { parseGetBookingResponse } from '../../src/provider/schemas/bookings.js';
import { saveBookingVersion } from '../../src/store/repositories/bookings.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';

export interface OneRoomVersion {
  created: string;
  modified?: string;
  cancelled?: string;
  /** Each night: its date and its price (no taxes). */
  nights: [string, string][];
}

/** A booking of one room at `propertyId` as the provider sends it: its nights at their prices, no taxes. */
export function oneRoomBooking(propertyId: string, number: string, v: OneRoomVersion) {
  const total = v.nights.reduce((a, [, price]) => a + Number(price), 0).toFixed(2);
  const arrival = v.nights[0]![0];
  const departure = new Date(Date.parse(`${v.nights.at(-1)![0]}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
  return {
    booking: {
      propertyId,
      number,
      status: v.cancelled ? 'Cancelled' : 'Active',
      createdDateTime: v.created,
      modifiedDateTime: v.modified ?? v.created,
      currencyCode: 'EUR',
      roomStays: [
        {
          stayDates: { arrivalDateTime: `${arrival}T14:00`, departureDateTime: `${departure}T12:00` },
          ratePlans: [{ id: 'RP1', name: 'Flexible' }],
          roomType: { id: 'DBL', name: 'Double' },
          guestCount: { adultCount: 2, childAges: [] },
          guests: [],
          dailyRates: v.nights.map(([date, price]) => ({ ratePlanId: 'RP1', priceBeforeTax: price, date })),
          total: { priceBeforeTax: total, priceAfterTax: total, taxAmount: '0', taxes: [], discounts: [] },
          services: [],
          extraStayCharges: { earlyArrival: null, lateDeparture: null },
        },
      ],
      services: [],
      total: { priceBeforeTax: total, priceAfterTax: total, taxAmount: '0', taxes: [], discounts: [] },
      taxes: [],
      cancellation: v.cancelled ? { penaltyAmount: '0', cancelledDateTime: v.cancelled } : null,
      source: { type: 'Channel', code: 'BGC' },
      customer: null,
    },
  };
}

/** Writes a version of a booking of `propertyId` as the booking details stream does. */
export async function writeBookingVersion(ctx: SyncContext, propertyId: string, body: ReturnType<typeof oneRoomBooking>): Promise<void> {
  const parsed = parseGetBookingResponse(body);
  if (!parsed.ok) throw new Error(parsed.reason);
  const rows = bookingToRows(propertyId, parsed.value, body, new Date(parsed.value.modifiedDateTime), false);
  await ctx.write((trx) => saveBookingVersion(trx, rows, bookingHistoryOf(rows)));
}
