/**
 * Scenario "forecast" (tools/bench/forecast.ts): the simulated hotel has the shape the backtest
 * relies on, and the error arithmetic is the one printed. The scenario end to end on a real
 * PostgreSQL: test/integration/forecast-bench.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { forecastErrors, simulateHotel, type ForecastPoint } from '../forecast.js';

const small = { rooms: 30, seed: 5, firstNight: '2024-01-01', now: '2026-01-01T08:00', nightsAhead: 60 };

describe('the simulated hotel', () => {
  const hotel = simulateHotel(small);
  const finals = [...hotel.finals.entries()];
  const mean = (pick: (date: string) => boolean) => {
    const xs = finals.filter(([d]) => pick(d)).map(([, f]) => f.rooms);
    return xs.reduce((s, x) => s + x, 0) / xs.length;
  };
  const dow = (d: string) => new Date(`${d}T00:00:00Z`).getUTCDay();

  it('is the same for the same seed, and never sells more rooms than it has', () => {
    expect(simulateHotel(small).bookings.length).toBe(hotel.bookings.length);
    expect(simulateHotel({ ...small, seed: 6 }).bookings.length).not.toBe(hotel.bookings.length);
    expect(Math.max(...finals.map(([, f]) => f.rooms))).toBeLessThanOrEqual(small.rooms);
    // No booking, change or cancellation after "now".
    const now = Date.parse('2026-01-01T08:00:00Z');
    for (const b of hotel.bookings) {
      expect(b.created).toBeLessThanOrEqual(now);
      if (b.cancelledAt !== undefined) expect(b.cancelledAt).toBeLessThanOrEqual(now);
    }
  });

  it('has weekly and yearly seasonality, cancellations and re-prices', () => {
    // Sunday nights are the quietest of the week; July is busier than January.
    expect(mean((d) => dow(d) === 0)).toBeLessThan(0.85 * mean((d) => dow(d) === 2));
    expect(mean((d) => d.slice(5, 7) === '07')).toBeGreaterThan(1.2 * mean((d) => d.slice(5, 7) === '01'));
    const cancelled = hotel.bookings.filter((b) => b.cancelledAt !== undefined).length / hotel.bookings.length;
    expect(cancelled).toBeGreaterThan(0.05);
    expect(cancelled).toBeLessThan(0.3);
    expect(hotel.bookings.some((b) => b.reprice)).toBe(true);
  });

  it('books weekend arrivals further ahead than midweek ones', () => {
    const leads = (days: number[]) => {
      const xs = hotel.bookings
        .filter((b) => days.includes(dow(b.nights[0]!)))
        .map((b) => (Date.parse(`${b.nights[0]}T00:00:00Z`) - b.created) / 86_400_000)
        .sort((a, b) => a - b);
      return xs[Math.floor(xs.length / 2)]!;
    };
    expect(leads([5, 6])).toBeGreaterThan(2 * leads([1, 2, 3]));
  });
});

describe('the error arithmetic', () => {
  it('is the mean absolute percentage error of each forecast against the final, per lead', () => {
    const finals = new Map([
      ['2026-03-20', { rooms: 100, net: 10_000 }],
      ['2026-03-27', { rooms: 50, net: 4_000 }],
      // Same time last year of each: 364 days before.
      ['2025-03-21', { rooms: 80, net: 9_000 }],
      ['2025-03-28', { rooms: 60, net: 4_000 }],
    ]);
    const points: ForecastPoint[] = [
      { night: '2026-03-20', lead: 7, pickupRooms: 90, otbRooms: 70, pickupNet: 11_000, otbNet: 7_000 },
      { night: '2026-03-27', lead: 7, pickupRooms: 55, otbRooms: 40, pickupNet: 4_000, otbNet: 3_000 },
      // A lead not asked for, and a night without its final: left out.
      { night: '2026-03-20', lead: 3, pickupRooms: 0, otbRooms: 0, pickupNet: 0, otbNet: 0 },
      { night: '2026-04-03', lead: 7, pickupRooms: 0, otbRooms: 0, pickupNet: 0, otbNet: 0 },
    ];
    const [e] = forecastErrors(points, finals, [7]);
    // Rooms: pickup (10 % + 10 %) / 2, books alone (30 % + 20 %) / 2, last year (20 % + 20 %) / 2.
    expect(e!.nights).toBe(2);
    expect(e!.rooms.pickup).toBeCloseTo(10, 9);
    expect(e!.rooms.otb).toBeCloseTo(25, 9);
    expect(e!.rooms.stly).toBeCloseTo(20, 9);
    // Revenue: (10 % + 0 %) / 2, (30 % + 25 %) / 2, (10 % + 0 %) / 2; pickup's bias (-10 % + 10 %) / 2 in rooms.
    expect(e!.revenue.pickup).toBeCloseTo(5, 9);
    expect(e!.revenue.otb).toBeCloseTo(27.5, 9);
    expect(e!.revenue.stly).toBeCloseTo(5, 9);
    expect(e!.pickupBias.rooms).toBeCloseTo(0, 9);
  });
});
