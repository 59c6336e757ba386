/**
 * An independent model of the figures the reporting views give, computed here from the bookings
 * the simulator serves (not from the mirror): every night of a booking with its share of the
 * stay's taxes, in exact cents. The simulator's amounts have at most two decimals.
 */
import type { BookingPayload } from '../../tools/simulator/index.js';

// ------------------------------------------------------------------ exact arithmetic

export const cents = (x: number | null | undefined): number => Math.round((x ?? 0) * 100);
/** numerator / denominator rounded half away from zero, as PostgreSQL rounds numeric. */
export function roundDiv(numerator: number, denominator: number): number {
  const n = BigInt(numerator);
  const d = BigInt(denominator);
  const neg = n < 0n !== d < 0n;
  const an = n < 0n ? -n : n;
  const ad = d < 0n ? -d : d;
  const q = (2n * an + ad) / (2n * ad);
  return Number(neg ? -q : q);
}
/** numerator / denominator rounded to `places` decimals, as a number. */
export const ratio = (numerator: number, denominator: number, places: number): number => roundDiv(numerator * 10 ** places, denominator) / 10 ** places;
export const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export const DAY = 86_400_000;
export const dayNo = (date: string): number => Date.parse(`${date}T00:00:00Z`) / DAY;
export const addDays = (date: string, n: number): string => new Date((dayNo(date) + n) * DAY).toISOString().slice(0, 10);
export function localDate(instant: string | number, zone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(instant));
}

// ------------------------------------------------------------------ the independent model

/** Names of the point-of-sale codes the mirror documents (migrations/0006_reporting.sql), by hand. */
export const POS_NAMES: Record<string, string | null> = {
  BGC: 'Booking.com',
  EXP: 'Expedia',
  AGD: 'Agoda',
  OTK: 'Ostrovok',
  CTP: 'Trip.com',
  OTG: null,
  PA2: null,
  BookingEngine: 'Booking engine (direct)',
  PMS: 'PMS (entered at the property)',
  Other: 'Other',
  Channel: 'Channel (no code)',
};

export interface Night {
  number: string;
  stayIndex: number;
  nightIndex: number;
  date: string;
  cancelled: boolean;
  currency: string;
  roomTypeId: string;
  ratePlanId: string;
  channelCode: string;
  channelName: string;
  net: number; // cents
  tax: number; // cents
  gross: number; // cents
  bookingDate: string;
  arrivalDate: string;
  leadTime: number;
}

export interface Fact {
  number: string;
  cancelled: boolean;
  currency: string;
  channelCode: string;
  channelName: string;
  bookingDate: string;
  arrivalDate: string;
  leadTime: number;
  roomNights: number;
  net: number;
  gross: number;
  penalty: number | null;
  daysCancelledBeforeArrival: number | null;
}

/**
 * Every night of a booking as the provider served it. A stay's taxes (after minus before tax)
 * go to its nights in proportion to their net prices (evenly when all are zero), rounded to the
 * cent cumulatively: a night's share is the rounded share of the nights up to it minus that of
 * the nights before it.
 */
export function nightsOf(b: BookingPayload, zone: string, pmsChannel: string | null): Night[] {
  const channelCode = b.source.code ?? b.source.type;
  const channelName = POS_NAMES[channelCode] ?? pmsChannel ?? channelCode;
  const bookingDate = localDate(b.createdDateTime, zone);
  const out: Night[] = [];
  b.roomStays.forEach((stay, stayIndex) => {
    const arrivalDate = stay.stayDates.arrivalDateTime.slice(0, 10);
    const stayTax = cents(stay.total.priceAfterTax) - cents(stay.total.priceBeforeTax);
    const nets = stay.dailyRates.map((r) => cents(r.priceBeforeTax));
    const netSum = nets.reduce((a, x) => a + x, 0);
    const upTo = (i: number) => (netSum !== 0 ? roundDiv(stayTax * nets.slice(0, i).reduce((a, x) => a + x, 0), netSum) : roundDiv(stayTax * i, nets.length));
    const shares = nets.map((_, i) => upTo(i + 1) - upTo(i));
    stay.dailyRates.forEach((r, nightIndex) => {
      out.push({
        number: b.number,
        stayIndex,
        nightIndex,
        date: r.date.slice(0, 10),
        cancelled: b.status === 'Cancelled',
        currency: b.currencyCode,
        roomTypeId: stay.roomType.id,
        ratePlanId: r.ratePlanId,
        channelCode,
        channelName,
        net: nets[nightIndex]!,
        tax: shares[nightIndex]!,
        gross: nets[nightIndex]! + shares[nightIndex]!,
        bookingDate,
        arrivalDate,
        leadTime: dayNo(arrivalDate) - dayNo(bookingDate),
      });
    });
  });
  return out;
}
