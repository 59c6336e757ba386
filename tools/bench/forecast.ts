/**
 * Scenario "forecast" (the pickup forecast, backtested): one hotel of --forecast-rooms rooms
 * (200) in Europe/Berlin, its demand simulated night by night from 2023-12-01 to a year past the
 * simulation's "now" (2026-06-01 08:00 local): weekly and yearly seasonality, a slow trend, a
 * demand shock of its own for each night, bookings arriving along a lead-time curve (business
 * nights booked late, leisure nights early), stays of 1 to 3 nights, some re-priced and some
 * cancelled. Requests are taken in the order they arrive and refused when a night of the stay is
 * full, so what is sold is constrained by the rooms, as in a real hotel.
 *
 * The bookings are loaded into the mirror's history tables (booking_versions and
 * booking_night_history, as the repositories write them: a re-price closes each night's row and
 * opens another, a cancellation closes them) in a real PostgreSQL, with the reporting layer. The
 * load is checked: the books at each night's close, read from history, equal what the
 * simulation sold.
 *
 * Then, for each of the 364 nights before "now", forecasts made 7, 14 and 30 days ahead (at
 * 08:00 local) by reporting.forecast_at, the same SQL as the view, against what the night
 * finally sold; beside two naive forecasts: the books alone at that moment, and same time last
 * year's final (the same weekday 364 days before). Printed: the mean absolute percentage error
 * of each, for rooms and for room revenue (net). Goal: pickup beats both at every lead time.
 * And the cost: forecast_at(now, 90) for the hotel, EXPLAIN ANALYZE, median of 5 runs.
 */
import { mulberry32, type Rng } from '../simulator/random.js';
import type { Line } from './report.js';
import { openSqlMirror } from './sql-mirror.js';
import { quantile, timed } from './stats.js';

export const FORECAST_DEFAULTS = {
  rooms: 200,
  seed: 27,
  /** The first night simulated (local date). */
  firstNight: '2023-12-01',
  /** The simulation's "now" (local wall time): no booking, change or cancellation after it exists yet. */
  now: '2026-06-01T08:00',
  /** Nights simulated past "now" (what the books hold ahead). */
  nightsAhead: 365,
  /** Past nights backtested (those before "now"'s date). */
  evaluatedNights: 364,
  leads: [7, 14, 30],
  timeZone: 'Europe/Berlin',
  /** The hour (local) each backtest forecast is made at. */
  forecastHour: 8,
  runs: 5,
};

export const FORECAST_PROPERTY = '600100';

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** A local wall time as milliseconds (the local fields read as if UTC: no time zone arithmetic here). */
const localMs = (iso: string): number => Date.parse(`${iso.length === 10 ? `${iso}T00:00` : iso}:00Z`);
const dateOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);
const stampOf = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

export interface HotelOptions {
  rooms: number;
  seed: number;
  firstNight: string;
  now: string;
  nightsAhead: number;
}

/** A booking the hotel accepted (times local, ms). */
export interface SimBooking {
  number: string;
  /** The nights of the stay (local dates), consecutive. */
  nights: string[];
  created: number;
  /** Net rate of each night as booked. */
  rates: number[];
  /** A re-price before arrival: the new rates from `at` on. */
  reprice?: { at: number; rates: number[] };
  cancelledAt?: number;
}

export interface Hotel {
  bookings: SimBooking[];
  /** Booking requests refused because a night was full. */
  refused: number;
  /** What each night finally sold (the books at its close), for the nights before "now". */
  finals: Map<string, { rooms: number; net: number }>;
  /** The simulation's "now" (local wall time, ms). */
  nowMs: number;
}

/** Demand of arrivals by weekday (0 = Sunday): a city hotel, busy midweek and on Fridays. */
const ARRIVAL_DEMAND = [0.55, 0.95, 1.05, 1.05, 0.95, 1.15, 1.0];
/** Price by weekday of the night. */
const NIGHT_PRICE = [0.9, 1.0, 1.02, 1.02, 1.0, 1.12, 1.15];
const STAY_LENGTHS = [
  [1, 0.55],
  [2, 0.3],
  [3, 0.15],
] as const;
const MEAN_STAY = STAY_LENGTHS.reduce((s, [n, p]) => s + n * p, 0);

/** Yearly seasonality, -1 (mid-January) to 1 (mid-July). */
export const season = (ms: number): number => {
  const d = new Date(ms);
  const dayOfYear = (ms - Date.UTC(d.getUTCFullYear(), 0, 1)) / DAY;
  return Math.cos((2 * Math.PI * (dayOfYear - 196)) / 365.25);
};

const normal = (rng: Rng): number => {
  const u = Math.max(rng(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rng());
};
const exponential = (rng: Rng, mean: number): number => -mean * Math.log(Math.max(1 - rng(), 1e-12));
const money = (x: number): number => Math.round(x * 100) / 100;

/**
 * Lead time in days of a booking arriving on `arrival`: business arrivals (Monday to Thursday)
 * mostly within a week, leisure ones (Friday to Sunday) weeks ahead, longer in summer.
 */
export function leadDays(rng: Rng, arrival: number): number {
  const dow = new Date(arrival).getUTCDay();
  const leisure = dow === 0 || dow === 5 || dow === 6;
  const summer = 1 + 0.3 * Math.max(0, season(arrival));
  const days = leisure
    ? rng() < 0.3
      ? exponential(rng, 8)
      : exponential(rng, 50 * summer)
    : rng() < 0.55
      ? exponential(rng, 6)
      : exponential(rng, 28 * summer);
  return Math.min(365, Math.floor(days));
}

/**
 * The hotel: booking requests for every arrival night, then taken in the order they were made,
 * refused when a night of the stay is full; re-prices and cancellations at their moments.
 */
export function simulateHotel(o: HotelOptions): Hotel {
  const rng = mulberry32(o.seed);
  const first = localMs(o.firstNight);
  const nowMs = localMs(o.now);
  const last = localMs(dateOf(nowMs)) + o.nightsAhead * DAY;
  interface Request extends SimBooking {
    lead: number;
  }
  const requests: Request[] = [];
  let n = 0;
  // The market's level (log), drifting week by week (AR(1), about 10 % up or down, for months at a
  // time: a convention season, a competitor opening, the economy): this year is not last year.
  let market = 0;
  for (let arrival = first; arrival <= last; arrival += DAY) {
    const years = (arrival - first) / (365.25 * DAY);
    const dow = new Date(arrival).getUTCDay();
    if (dow === 1) market = 0.95 * market + 0.03 * normal(rng);
    // A demand shock of the night (an event in town, a slow week), and now and then a big one.
    const shock = Math.exp(0.12 * normal(rng)) * (rng() < 0.03 ? 1.35 : 1);
    const expected = ((o.rooms * 0.74) / MEAN_STAY) * ARRIVAL_DEMAND[dow]! * (1 + 0.28 * season(arrival)) * (1 + 0.03 * years) * Math.exp(market) * shock;
    // Prices follow the market halfway.
    const marketPrice = Math.exp(0.5 * market);
    const count = Math.max(0, Math.round(expected + Math.sqrt(expected) * normal(rng)));
    for (let i = 0; i < count; i++) {
      let u = rng();
      const length = STAY_LENGTHS.find(([, p]) => (u -= p) < 0)?.[0] ?? 1;
      const lead = leadDays(rng, arrival);
      const day = arrival - lead * DAY;
      // Made during the day (07:00 to 23:00), on the day of arrival before 20:00.
      const created = lead === 0 ? day + Math.floor(rng() * 20 * HOUR) : day + 7 * HOUR + Math.floor(rng() * 16 * HOUR);
      const leadPrice = lead <= 2 ? 1.08 : lead >= 60 ? 0.92 : 1;
      const noise = 1 + 0.06 * (rng() - 0.5);
      const nights: string[] = [];
      const rates: number[] = [];
      for (let k = 0; k < length; k++) {
        const night = arrival + k * DAY;
        nights.push(dateOf(night));
        rates.push(money(120 * NIGHT_PRICE[new Date(night).getUTCDay()]! * (1 + 0.18 * season(night)) * (1 + 0.03 * years) * marketPrice * leadPrice * noise));
      }
      const request: Request = { number: `F${String(++n).padStart(7, '0')}`, nights, created, rates, lead };
      // Changes happen between two hours after the booking and 16:00 on the day of arrival.
      const until = arrival + 16 * HOUR;
      const span = until - created - 2 * HOUR;
      if (span > 2 * HOUR && rng() < 0.08 + 0.22 * Math.min(1, lead / 90)) request.cancelledAt = created + 2 * HOUR + Math.floor(rng() * span);
      if (span > 2 * HOUR && rng() < 0.05) {
        const at = created + 2 * HOUR + Math.floor(rng() * span);
        const factor = 0.9 + 0.2 * rng();
        // A re-price after the cancellation, or within two hours of it, is not made.
        if (request.cancelledAt === undefined || at < request.cancelledAt - 2 * HOUR) request.reprice = { at, rates: rates.map((r) => money(r * factor)) };
      }
      requests.push(request);
    }
  }
  // Taken in the order they were made; a cancellation gives its rooms back.
  type Event = { at: number; kind: 0 | 1; r: Request };
  const events: Event[] = [];
  for (const r of requests) {
    if (r.created > nowMs) continue;
    events.push({ at: r.created, kind: 1, r });
    if (r.cancelledAt !== undefined) events.push({ at: r.cancelledAt, kind: 0, r });
  }
  events.sort((a, b) => a.at - b.at || a.kind - b.kind);
  const held = new Map<string, number>();
  const accepted = new Set<Request>();
  let refused = 0;
  for (const e of events) {
    if (e.kind === 1) {
      if (e.r.nights.some((d) => (held.get(d) ?? 0) >= o.rooms)) {
        refused++;
        continue;
      }
      accepted.add(e.r);
      for (const d of e.r.nights) held.set(d, (held.get(d) ?? 0) + 1);
    } else if (accepted.has(e.r) && e.at <= nowMs) {
      for (const d of e.r.nights) held.set(d, held.get(d)! - 1);
    }
  }
  const bookings: SimBooking[] = [];
  const finals = new Map<string, { rooms: number; net: number }>();
  const today = dateOf(nowMs);
  for (const r of accepted) {
    const b: SimBooking = { number: r.number, nights: r.nights, created: r.created, rates: r.rates };
    if (r.reprice && r.reprice.at <= nowMs) b.reprice = r.reprice;
    if (r.cancelledAt !== undefined && r.cancelledAt <= nowMs) b.cancelledAt = r.cancelledAt;
    bookings.push(b);
    // Changes are made before arrival: a past night's final is the booking's last rates, unless cancelled.
    if (b.cancelledAt !== undefined) continue;
    const rates = b.reprice?.rates ?? b.rates;
    b.nights.forEach((d, i) => {
      if (d >= today) return;
      const f = finals.get(d) ?? { rooms: 0, net: 0 };
      f.rooms++;
      f.net = money(f.net + rates[i]!);
      finals.set(d, f);
    });
  }
  bookings.sort((a, b) => a.created - b.created);
  return { bookings, refused, finals, nowMs };
}

/** The rows of the history tables for the bookings (times local, converted by the database). */
export function historyRows(bookings: readonly SimBooking[]) {
  const v = { number: [] as string[], version: [] as number[], from: [] as string[], to: [] as (string | null)[], status: [] as string[] };
  const vx = {
    created: [] as string[],
    cancelled: [] as (string | null)[],
    arrival: [] as string[],
    departure: [] as string[],
    nights: [] as number[],
    net: [] as string[],
    gross: [] as string[],
    changes: [] as string[],
  };
  const h = { number: [] as string[], date: [] as string[], net: [] as string[], gross: [] as string[], from: [] as string[], to: [] as (string | null)[] };
  const sum = (rates: number[]) => money(rates.reduce((s, r) => s + r, 0));
  const gross = (x: number) => money(x * 1.1).toFixed(2);
  for (const b of bookings) {
    const versions: { at: number; status: string; rates: number[]; changes: string }[] = [
      { at: b.created, status: 'Active', rates: b.rates, changes: 'created' },
    ];
    if (b.reprice) versions.push({ at: b.reprice.at, status: 'Active', rates: b.reprice.rates, changes: 'price' });
    if (b.cancelledAt !== undefined) versions.push({ at: b.cancelledAt, status: 'Cancelled', rates: b.reprice?.rates ?? b.rates, changes: 'cancelled' });
    const departure = dateOf(localMs(b.nights.at(-1)!) + DAY);
    versions.forEach((x, i) => {
      const next = versions[i + 1]?.at;
      v.number.push(b.number);
      v.version.push(i + 1);
      v.from.push(stampOf(x.at));
      v.to.push(next === undefined ? null : stampOf(next));
      v.status.push(x.status);
      vx.created.push(stampOf(b.created));
      vx.cancelled.push(b.cancelledAt === undefined ? null : stampOf(b.cancelledAt));
      vx.arrival.push(b.nights[0]!);
      vx.departure.push(departure);
      vx.nights.push(b.nights.length);
      vx.net.push(sum(x.rates).toFixed(2));
      vx.gross.push(gross(sum(x.rates)));
      vx.changes.push(x.changes);
    });
    // Each night on the books from the booking to the re-price (then at its new rate) or the cancellation.
    const end = b.cancelledAt === undefined ? null : stampOf(b.cancelledAt);
    b.nights.forEach((d, i) => {
      h.number.push(b.number);
      h.date.push(d);
      h.net.push(b.rates[i]!.toFixed(2));
      h.gross.push(gross(b.rates[i]!));
      h.from.push(stampOf(b.created));
      h.to.push(b.reprice ? stampOf(b.reprice.at) : end);
      if (b.reprice) {
        h.number.push(b.number);
        h.date.push(d);
        h.net.push(b.reprice.rates[i]!.toFixed(2));
        h.gross.push(gross(b.reprice.rates[i]!));
        h.from.push(stampOf(b.reprice.at));
        h.to.push(end);
      }
    });
  }
  return { versions: { ...v, ...vx }, nights: h };
}

export interface ErrorFigures {
  lead: number;
  nights: number;
  /** Mean absolute percentage error, %: pickup, books alone, same time last year. */
  rooms: { pickup: number; otb: number; stly: number };
  revenue: { pickup: number; otb: number; stly: number };
  /** Mean signed percentage error of pickup (forecast above the actual: positive), %. */
  pickupBias: { rooms: number; revenue: number };
}

export interface ForecastPoint {
  night: string;
  lead: number;
  pickupRooms: number;
  otbRooms: number;
  pickupNet: number;
  otbNet: number;
}

/** MAPE per lead time of the pickup forecast and the two naive ones, against the finals. */
export function forecastErrors(
  points: readonly ForecastPoint[],
  finals: ReadonlyMap<string, { rooms: number; net: number }>,
  leads: readonly number[],
): ErrorFigures[] {
  const stlyOf = (night: string) => finals.get(dateOf(localMs(night) - 364 * DAY));
  return leads.map((lead) => {
    const ape = {
      rp: [] as number[],
      ro: [] as number[],
      rs: [] as number[],
      vp: [] as number[],
      vo: [] as number[],
      vs: [] as number[],
      br: [] as number[],
      bv: [] as number[],
    };
    for (const p of points) {
      if (p.lead !== lead) continue;
      const actual = finals.get(p.night);
      const stly = stlyOf(p.night);
      if (!actual || !stly || actual.rooms === 0 || actual.net === 0) continue;
      ape.rp.push(Math.abs(p.pickupRooms - actual.rooms) / actual.rooms);
      ape.ro.push(Math.abs(p.otbRooms - actual.rooms) / actual.rooms);
      ape.rs.push(Math.abs(stly.rooms - actual.rooms) / actual.rooms);
      ape.vp.push(Math.abs(p.pickupNet - actual.net) / actual.net);
      ape.vo.push(Math.abs(p.otbNet - actual.net) / actual.net);
      ape.vs.push(Math.abs(stly.net - actual.net) / actual.net);
      ape.br.push((p.pickupRooms - actual.rooms) / actual.rooms);
      ape.bv.push((p.pickupNet - actual.net) / actual.net);
    }
    const mean = (xs: number[]) => (xs.length === 0 ? Number.NaN : (100 * xs.reduce((s, x) => s + x, 0)) / xs.length);
    return {
      lead,
      nights: ape.rp.length,
      rooms: { pickup: mean(ape.rp), otb: mean(ape.ro), stly: mean(ape.rs) },
      revenue: { pickup: mean(ape.vp), otb: mean(ape.vo), stly: mean(ape.vs) },
      pickupBias: { rooms: mean(ape.br), revenue: mean(ape.bv) },
    };
  });
}

export interface ForecastBenchOptions {
  databaseUrl: string;
  rooms?: number;
  seed?: number;
  /** Past nights backtested (364). */
  evaluatedNights?: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ForecastBenchResult {
  rooms: number;
  bookings: number;
  refused: number;
  cancelled: number;
  repriced: number;
  versions: number;
  nightRows: number;
  firstNight: string;
  now: string;
  meanOccupancy: number;
  fullNights: number;
  pastNights: number;
  loadMs: number;
  check: { ok: boolean; detail: string };
  errors: ErrorFigures[];
  evaluated: { from: string; to: string };
  backtestMs: number;
  forecasts: number;
  /** forecast_at(now, 90) for the hotel: EXPLAIN ANALYZE execution + planning, ms, each run. */
  forecastMs: number[];
  forecastRows: number;
  /** Pages of booking_night_history all-visible after the VACUUM, of all. */
  visible: { all: number; pages: number };
}

const CHUNK = 20_000;

export async function runForecastBench(opts: ForecastBenchOptions): Promise<ForecastBenchResult> {
  const say = opts.onProgress ?? (() => undefined);
  const rooms = opts.rooms ?? FORECAST_DEFAULTS.rooms;
  const evaluatedNights = opts.evaluatedNights ?? FORECAST_DEFAULTS.evaluatedNights;
  const tz = FORECAST_DEFAULTS.timeZone;
  say('scenario forecast: simulating the hotel');
  const hotel = simulateHotel({
    rooms,
    seed: opts.seed ?? FORECAST_DEFAULTS.seed,
    firstNight: FORECAST_DEFAULTS.firstNight,
    now: FORECAST_DEFAULTS.now,
    nightsAhead: FORECAST_DEFAULTS.nightsAhead,
  });
  const rows = historyRows(hotel.bookings);
  const mirror = await openSqlMirror({ databaseUrl: opts.databaseUrl, signal: opts.signal, name: 'staysync-bench-forecast' });
  const { client: c, reportingSchema } = mirror;
  try {
    await c.query(`SET synchronous_commit TO off`);
    const load = await timed(async () => {
      await c.query(
        `INSERT INTO properties (property_id, name, currency, time_zone, raw, content_hash) VALUES ($1, 'Forecast bench hotel', 'EUR', $2, '{}', 'bench')`,
        [FORECAST_PROPERTY, tz],
      );
      const v = rows.versions;
      for (let i = 0; i < v.number.length; i += CHUNK) {
        if (opts.signal?.aborted) throw new Error('interrupted');
        say(`scenario forecast: loading booking_versions ${i}/${v.number.length}`);
        const s = <T>(xs: T[]) => xs.slice(i, i + CHUNK);
        await c.query(
          `INSERT INTO booking_versions (property_id, number, version, valid_from, valid_to, modified_at, reconstructed, fetched_at, content_hash,
             status, created_at, cancelled_at, currency_code, arrival_date, departure_date, rooms, room_nights, room_type_ids,
             room_revenue_net, room_revenue_gross, total_net, total_gross, changes)
           SELECT $1, x.number, x.version, x.f AT TIME ZONE $2, x.t AT TIME ZONE $2, x.f AT TIME ZONE $2, false, (x.f AT TIME ZONE $2) + interval '3 seconds',
                  md5(x.number || '/' || x.version), x.status, x.created AT TIME ZONE $2, x.cancelled AT TIME ZONE $2, 'EUR', x.arrival, x.departure,
                  1, x.nights, ARRAY['DBL'], x.net, x.gross, x.net, x.gross, ARRAY[x.changes]
             FROM unnest($3::text[], $4::int[], $5::timestamp[], $6::timestamp[], $7::text[], $8::timestamp[], $9::timestamp[], $10::date[], $11::date[],
                         $12::int[], $13::numeric[], $14::numeric[], $15::text[])
                  AS x(number, version, f, t, status, created, cancelled, arrival, departure, nights, net, gross, changes)`,
          [
            FORECAST_PROPERTY,
            tz,
            s(v.number),
            s(v.version),
            s(v.from),
            s(v.to),
            s(v.status),
            s(v.created),
            s(v.cancelled),
            s(v.arrival),
            s(v.departure),
            s(v.nights),
            s(v.net),
            s(v.gross),
            s(v.changes),
          ],
        );
      }
      const h = rows.nights;
      for (let i = 0; i < h.number.length; i += CHUNK) {
        if (opts.signal?.aborted) throw new Error('interrupted');
        say(`scenario forecast: loading booking_night_history ${i}/${h.number.length}`);
        const s = <T>(xs: T[]) => xs.slice(i, i + CHUNK);
        await c.query(
          `INSERT INTO booking_night_history (property_id, number, stay_index, stay_date, currency_code, room_type_id, net_amount, gross_amount, valid_from, valid_to)
           SELECT $1, x.number, 0, x.d, 'EUR', 'DBL', x.net, x.gross, x.f AT TIME ZONE $2, x.t AT TIME ZONE $2
             FROM unnest($3::text[], $4::date[], $5::numeric[], $6::numeric[], $7::timestamp[], $8::timestamp[]) AS x(number, d, net, gross, f, t)`,
          [FORECAST_PROPERTY, tz, s(h.number), s(h.date), s(h.net), s(h.gross), s(h.from), s(h.to)],
        );
      }
      await c.query('ANALYZE booking_versions, booking_night_history, properties');
    });
    // As autovacuum leaves a mirror: its pages all-visible, so that the index on the nights answers
    // alone. A VACUUM cannot mark rows newer than the oldest snapshot of any session of the
    // server (other tests and benches share it), so it is repeated until it can, for a minute at most.
    say('scenario forecast: vacuuming');
    let visible = { all: 0, pages: 1 };
    for (let i = 0; i < 30 && visible.all < visible.pages; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 2_000));
      await c.query('VACUUM booking_night_history');
      const [v] = (
        await c.query<{ all: number; pages: number }>(
          `SELECT relallvisible AS "all", relpages AS pages FROM pg_class WHERE oid = 'booking_night_history'::regclass`,
        )
      ).rows;
      visible = v!;
    }

    // ---- the load, checked: the books at each past night's close = what the simulation sold ----
    const today = dateOf(hotel.nowMs);
    const firstEvaluated = dateOf(localMs(today) - evaluatedNights * DAY);
    const closes = await c.query<{ night: string; rooms: number; net: string }>(
      `SELECT g.night::date::text AS night, count(h.stay_date)::int AS rooms, COALESCE(sum(h.net_amount), 0)::text AS net
         FROM generate_series($2::date, $3::date - 1, interval '1 day') AS g(night)
         LEFT JOIN booking_night_history h
           ON h.property_id = $1 AND h.stay_date = g.night::date
          AND h.valid_from <= ((g.night::date + 1)::timestamp AT TIME ZONE $4)
          AND (h.valid_to IS NULL OR h.valid_to > ((g.night::date + 1)::timestamp AT TIME ZONE $4))
        GROUP BY g.night ORDER BY g.night`,
      [FORECAST_PROPERTY, FORECAST_DEFAULTS.firstNight, today, tz],
    );
    let differ = 0;
    let firstDiff = '';
    for (const r of closes.rows) {
      const f = hotel.finals.get(r.night) ?? { rooms: 0, net: 0 };
      if (f.rooms !== r.rooms || Math.abs(f.net - Number(r.net)) > 0.005) {
        differ++;
        firstDiff ||= `${r.night}: history ${r.rooms} rooms ${r.net}, simulation ${f.rooms} rooms ${f.net.toFixed(2)}`;
      }
    }
    const check = {
      ok: differ === 0 && closes.rows.length > 0,
      detail: `${closes.rows.length} past nights: ${differ} differ${firstDiff ? ` (first: ${firstDiff})` : ''}`,
    };

    // ---- the backtest: one query, each day's forecast made at 08:00 local, the leads asked for ----
    say('scenario forecast: backtesting');
    const leads = FORECAST_DEFAULTS.leads;
    const maxLead = Math.max(...leads);
    const backtest = await timed(() =>
      c.query<{ night: string; lead: number; rooms: string; otb: number; net: string; otb_net: string }>(
        `SELECT f.stay_date::text AS night, f.lead_days AS lead, f.room_nights_forecast::text AS rooms, f.room_nights_on_the_books::int AS otb,
                f.room_revenue_net_forecast::text AS net, f.room_revenue_net_on_the_books::text AS otb_net
           FROM generate_series($2::date - $4::int, $3::date - $5::int, interval '1 day') AS d(day)
          CROSS JOIN LATERAL "${reportingSchema}".forecast_at((d.day::date + make_time($6, 0, 0)) AT TIME ZONE $7, $4 + 1) f
          WHERE f.property_id = $1 AND f.lead_days = ANY ($8::int[]) AND f.stay_date >= $2::date AND f.stay_date <= $3::date`,
        [FORECAST_PROPERTY, firstEvaluated, dateOf(localMs(today) - DAY), maxLead, Math.min(...leads), FORECAST_DEFAULTS.forecastHour, tz, leads],
      ),
    );
    const points: ForecastPoint[] = backtest.value.rows.map((r) => ({
      night: r.night,
      lead: r.lead,
      pickupRooms: Number(r.rooms),
      otbRooms: r.otb,
      pickupNet: Number(r.net),
      otbNet: Number(r.otb_net),
    }));
    const errors = forecastErrors(points, hotel.finals, leads);

    // ---- the cost: the view's SQL for the hotel at "now" ----
    say('scenario forecast: timing forecast_at(now, 90)');
    const forecastMs: number[] = [];
    let forecastRows = 0;
    const sql = `SELECT * FROM "${reportingSchema}".forecast_at(($2::timestamp) AT TIME ZONE $3, 90) WHERE property_id = $1`;
    const args = [FORECAST_PROPERTY, FORECAST_DEFAULTS.now.replace('T', ' '), tz];
    for (let i = 0; i < 2 + FORECAST_DEFAULTS.runs; i++) {
      const plan = await c.query<{ 'QUERY PLAN': [{ 'Planning Time': number; 'Execution Time': number; Plan: { 'Actual Rows': number } }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
        args,
      );
      const p = plan.rows[0]!['QUERY PLAN'][0];
      forecastRows = p.Plan['Actual Rows'];
      if (i >= 2) forecastMs.push(p['Planning Time'] + p['Execution Time']);
    }

    const past = [...hotel.finals.entries()].filter(([d]) => d >= FORECAST_DEFAULTS.firstNight);
    return {
      rooms,
      bookings: hotel.bookings.length,
      refused: hotel.refused,
      cancelled: hotel.bookings.filter((b) => b.cancelledAt !== undefined).length,
      repriced: hotel.bookings.filter((b) => b.reprice).length,
      versions: rows.versions.number.length,
      nightRows: rows.nights.number.length,
      firstNight: FORECAST_DEFAULTS.firstNight,
      now: FORECAST_DEFAULTS.now,
      meanOccupancy: past.reduce((s, [, f]) => s + f.rooms, 0) / Math.max(1, past.length) / rooms,
      fullNights: past.filter(([, f]) => f.rooms >= rooms).length,
      pastNights: closes.rows.length,
      loadMs: load.ms,
      check,
      errors,
      evaluated: { from: firstEvaluated, to: dateOf(localMs(today) - DAY) },
      backtestMs: backtest.ms,
      forecasts: points.length,
      forecastMs,
      forecastRows,
      visible,
    };
  } finally {
    await mirror.close();
  }
}

const pct = (x: number) => `${x.toFixed(1)} %`;

/** The lines of scenario forecast. */
export function forecastLines(r: ForecastBenchResult): { lines: Line[]; notes: string[] } {
  const lines: Line[] = [
    {
      label: 'hotel',
      value: `${r.rooms} rooms`,
      detail:
        `nights from ${r.firstNight} to a year past ${r.now.replace('T', ' ')} (local, ${FORECAST_DEFAULTS.timeZone}); ${r.pastNights} past nights, ` +
        `mean occupancy ${(100 * r.meanOccupancy).toFixed(1)} %, ${r.fullNights} full`,
      goal: '',
      verdict: '',
    },
    {
      label: 'bookings',
      value: String(r.bookings),
      detail: `${r.refused} requests refused (full), ${r.cancelled} cancelled, ${r.repriced} re-priced; ${r.versions} versions, ${r.nightRows} night rows, loaded in ${(r.loadMs / 1000).toFixed(1)} s`,
      goal: '',
      verdict: '',
    },
    { label: 'history = simulation', value: r.check.ok ? 'yes' : 'NO', detail: r.check.detail, goal: '(goal yes)', verdict: r.check.ok ? 'PASS' : 'MISS' },
  ];
  for (const e of r.errors) {
    for (const [what, f] of [
      ['rooms', e.rooms],
      ['revenue', e.revenue],
    ] as const) {
      const beats = f.pickup < f.otb && f.pickup < f.stly;
      lines.push({
        label: `${e.lead} days ahead, ${what}`,
        value: pct(f.pickup),
        detail: `MAPE of pickup; books alone ${pct(f.otb)}, same time last year ${pct(f.stly)}; pickup's bias ${(what === 'rooms' ? e.pickupBias.rooms : e.pickupBias.revenue).toFixed(1)} %; ${e.nights} nights`,
        goal: '(goal: below both)',
        verdict: beats ? 'PASS' : 'MISS',
      });
    }
  }
  const median = quantile(r.forecastMs, 0.5);
  lines.push({
    label: 'forecast_at(now, 90)',
    value: `${median.toFixed(1)} ms`,
    detail: `the view's SQL for the hotel, ${r.forecastRows} rows; EXPLAIN ANALYZE execution + planning, median of ${r.forecastMs.length} (max ${Math.max(...r.forecastMs).toFixed(1)} ms)`,
    goal: '(goal < 1000 ms)',
    verdict: median < 1000 ? 'PASS' : 'MISS',
  });
  lines.push({
    label: 'backtest',
    value: `${(r.backtestMs / 1000).toFixed(1)} s`,
    detail: `${r.forecasts} forecasts of nights ${r.evaluated.from} to ${r.evaluated.to}, one query (forecast_at for each day)`,
    goal: '',
    verdict: '',
  });
  const notes = [
    `forecasts made at ${String(FORECAST_DEFAULTS.forecastHour).padStart(2, '0')}:00 local ${FORECAST_DEFAULTS.leads.join(', ')} days before each night; MAPE = mean of |forecast - final| / final over the nights; final = the books at the night's close`,
    'books alone: what was on the books at that moment; same time last year: the final of the same weekday 364 days before',
    `booking_night_history after VACUUM: ${r.visible.all} of ${r.visible.pages} pages all-visible (index-only scans read no table page where they are)`,
  ];
  return { lines, notes };
}
