/**
 * Daily occupancy statistics as the simulator's PMS Analytics endpoint serves them: one pure
 * function of the property's stays, so tests (the simulator's and the daemon's) can compute
 * the same truth from `Simulator.occupancyInput()`.
 */
import { dayNumber, dayString } from './local-time.js';
import { hashString, mix } from './random.js';
import type { DailyOccupancy, DailyOccupancyReport } from './pms-types.js';

/** One night of a stay: the room price (net of taxes), and meal and other services charged for it. */
export interface OccupancyNight {
  room: number;
  meal: number;
  other: number;
}

/** One room stay of a PMS reservation, as the statistics see it. */
export interface OccupancyStay {
  /** The reservation's number. */
  number: string;
  /** Property-local date of the first night (the planned check-in date). */
  arrivalDate: string;
  /** Property-local planned check-out date (the day after the last night). */
  departureDate: string;
  /** The reservation is cancelled: the stay counts nowhere. */
  cancelled: boolean;
  /** Property-local date the reservation was created (for otbDate). */
  createdDate: string;
  adults: number;
  children: number;
  /** One entry per night, from arrivalDate on. A night whose room price is 0 is complimentary. */
  nights: OccupancyNight[];
}

/** Everything computeDailyOccupancy needs besides the dates. */
export interface OccupancyInput {
  propertyId: string;
  currencyCode: string;
  /** Rooms of the property (the PMS rooms list). */
  propertyRoomCount: number;
  stays: OccupancyStay[];
}

const cents = (x: number) => Math.round(x * 100);

/**
 * Rooms planned out of order on `date`: a small number fixed by the property and the date
 * (0 to 1 + 3% of the rooms). The served closedRoomCount is this, lowered when the rooms
 * occupied that night leave fewer free.
 */
export function plannedClosedRooms(propertyId: string, date: string, propertyRoomCount: number): number {
  const max = 1 + Math.floor(propertyRoomCount * 0.03);
  return mix(hashString(propertyId), hashString(date), 0xc105ed) % (max + 1);
}

/**
 * Statistics for every date from `startDate` to `endDate` (inclusive, `YYYY-MM-DD`), counting
 * only stays of reservations created on or before `otbDate` when it is given:
 * - occupancyRoomCount: stays occupying the night (arrival <= date < departure) with a room price > 0;
 * - complimentaryOccupancyRoomCount: the same with a room price of 0;
 * - arrivalCount: stays arriving that date; guestCount: adults + children of the occupying stays;
 * - roomRevenue: the nights' room prices; mealRevenue: their meal services, left out on a date
 *   without any (the specification lists the field with no description and no promise that it
 *   is there; the OpenAPI document calls it required); revenue: room + meal + other;
 * - closedRoomCount: plannedClosedRooms, at most the rooms left free that night;
 * - occupancyRate: (occupied + complimentary) / (rooms - closed), four decimals, at most 1.
 * A date with nothing occupied has an item of zeros (and no mealRevenue).
 */
export function computeDailyOccupancy(input: OccupancyInput, startDate: string, endDate: string, otbDate?: string): DailyOccupancyReport {
  const first = dayNumber(startDate);
  const last = dayNumber(endDate);
  if (Number.isNaN(first) || Number.isNaN(last) || last < first) throw new Error(`bad date range ${startDate}..${endDate}`);
  const otb = otbDate === undefined ? undefined : dayNumber(otbDate);
  if (otb !== undefined && Number.isNaN(otb)) throw new Error(`bad otbDate ${otbDate}`);
  const days = last - first + 1;
  const acc = Array.from({ length: days }, () => ({ occupied: 0, comp: 0, arrivals: 0, guests: 0, room: 0, meal: 0, other: 0 }));
  for (const s of input.stays) {
    if (s.cancelled) continue;
    if (otb !== undefined && dayNumber(s.createdDate) > otb) continue;
    const arrival = dayNumber(s.arrivalDate);
    if (arrival >= first && arrival <= last) acc[arrival - first]!.arrivals++;
    s.nights.forEach((night, i) => {
      const day = arrival + i;
      if (day < first || day > last) return;
      const a = acc[day - first]!;
      const room = cents(night.room);
      if (room > 0) a.occupied++;
      else a.comp++;
      a.guests += s.adults + s.children;
      a.room += room;
      a.meal += cents(night.meal);
      a.other += cents(night.other);
    });
  }
  const rooms = input.propertyRoomCount;
  const dailyOccupancies: DailyOccupancy[] = acc.map((a, i) => {
    const date = dayString(first + i);
    const closed = Math.min(plannedClosedRooms(input.propertyId, date, rooms), Math.max(0, rooms - a.occupied - a.comp));
    const open = rooms - closed;
    const rate = open > 0 ? Math.min(1, Math.round(((a.occupied + a.comp) / open) * 10_000) / 10_000) : 0;
    return {
      date,
      occupancyRate: rate,
      closedRoomCount: closed,
      occupancyRoomCount: a.occupied,
      complimentaryOccupancyRoomCount: a.comp,
      roomRevenue: a.room / 100,
      revenue: (a.room + a.meal + a.other) / 100,
      ...(a.meal > 0 ? { mealRevenue: a.meal / 100 } : {}),
      arrivalCount: a.arrivals,
      guestCount: a.guests,
    };
  });
  return { currencyCode: input.currencyCode, propertyRoomCount: rooms, dailyOccupancies };
}
