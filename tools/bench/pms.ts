/**
 * Scenario D: the PMS backfill of `sync --once` (STAYSYNC_PROPERTY_IDS set) with the windows
 * scaled in time. Content and daily occupancy are off, so that the standard scope carries the
 * PMS work only (the reservation search, the reservations, guest profiles, the rooms, and one
 * content read per property for its time zone); the booking streams run as they always do.
 * The simulator's requests are counted as they arrive (its request log is replaced by a
 * counter, so no cap applies), and compared with what the simulator holds: the fewest search
 * pages the backfill needs, one fetch per reservation, one per guest profile.
 */
import type { RequestLogEntry, Simulator } from '../simulator/index.js';
import { formatLines, logText, secs, statusText, windowsText, type Line } from './report.js';
import { runSyncOnce, type Limits, type RunResult } from './run.js';
import { DAY_MS, minSearchRequests } from './stats.js';
import { minTimeFor } from './theory.js';

const SEARCH = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/search\/?$/;
const RESERVATION = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/([^/]+)\/?$/;
const GUEST = /^\/api\/pms\/v2\/properties\/([^/]+)\/guests\/([^/]+)\/?$/;
const INVOICES = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/([^/]+)\/invoices\/?$/;
const LOYALTY_CARDS = /^\/api\/pms\/v2\/properties\/([^/]+)\/guests\/([^/]+)\/loyalty-cards\/?$/;
const ROOMS = /^\/api\/pms\/v2\/properties\/([^/]+)\/rooms\/?$/;

/** Requests of one kind: answered 200, answered anything else, and per key (reservation number, person id) the 200s. */
class KindCount {
  ok = 0;
  other = 0;
  readonly byKey = new Map<string, number>();

  add(status: number, key?: string): void {
    if (status !== 200) {
      this.other++;
      return;
    }
    this.ok++;
    if (key !== undefined) this.byKey.set(key, (this.byKey.get(key) ?? 0) + 1);
  }

  get total(): number {
    return this.ok + this.other;
  }

  get maxForOne(): number {
    let m = 0;
    for (const n of this.byKey.values()) m = Math.max(m, n);
    return m;
  }
}

/** Counts the PMS requests the simulator answers, by kind. */
export class PmsRequestCounter {
  readonly search = new KindCount();
  readonly reservation = new KindCount();
  readonly guest = new KindCount();
  readonly invoices = new KindCount();
  readonly loyaltyCards = new KindCount();
  readonly rooms = new KindCount();
  /** Other standard-scope paths (the content property read for the time zone, ...), by path shape. */
  readonly otherPaths = new Map<string, number>();

  /**
   * Replaces the simulator's request log with one that counts each entry and keeps none
   * (the log keeps at most 10,000 entries; a backfill makes more requests than that).
   */
  attach(sim: Simulator): void {
    const log: RequestLogEntry[] = [];
    log.push = (...entries: RequestLogEntry[]): number => {
      for (const e of entries) this.add(e);
      return 0;
    };
    sim.stats.requestLog = log;
  }

  add(e: RequestLogEntry): void {
    let m: RegExpExecArray | null;
    if (SEARCH.test(e.path)) this.search.add(e.status);
    else if ((m = RESERVATION.exec(e.path))) this.reservation.add(e.status, `${m[1]}/${decodeURIComponent(m[2]!)}`);
    else if ((m = GUEST.exec(e.path))) this.guest.add(e.status, `${m[1]}/${decodeURIComponent(m[2]!)}`);
    else if ((m = INVOICES.exec(e.path))) this.invoices.add(e.status, `${m[1]}/${decodeURIComponent(m[2]!)}`);
    else if ((m = LOYALTY_CARDS.exec(e.path))) this.loyaltyCards.add(e.status, `${m[1]}/${decodeURIComponent(m[2]!)}`);
    else if (ROOMS.test(e.path)) this.rooms.add(e.status);
    else if (e.path.startsWith('/api/content/') || e.path.startsWith('/api/reference-data/') || e.path.startsWith('/api/pms')) {
      const shape = e.path.replace(/\/properties\/[^/]+/, '/properties/{id}');
      this.otherPaths.set(shape, (this.otherPaths.get(shape) ?? 0) + 1);
    }
  }

  get otherTotal(): number {
    let n = 0;
    for (const v of this.otherPaths.values()) n += v;
    return n;
  }
}

/** What the simulator holds, to compare the requests with. */
export interface PmsTruth {
  /** Reservations modified since backfillFrom: each must be mirrored. */
  inSpan: number;
  /** Reservations the mirror holds (those in the span, and a few modified just before it: time zones blur the edge). */
  mirrored: number;
  /** Mirrored rows the simulator does not have, or modified more than EDGE_MS before backfillFrom. */
  unexpected: number;
  /** In-span reservations missing from the mirror. */
  missing: number;
  /** Distinct guest profiles the mirrored reservations reference besides their customers. */
  guests: number;
  /** Distinct persons of the mirrored reservations (customers and guests): each one's loyalty cards are read once. */
  persons: number;
  /** Windows over every property (each property's span is the same). */
  searchWindows: number;
  minSearches: number;
  properties: number;
  /** Rows per property: mirrored / in span. */
  byProperty: { propertyId: string; rows: number; inSpan: number }[];
}

export interface PmsBenchResult {
  run: RunResult;
  counts: PmsRequestCounter;
  truth: PmsTruth;
  mirroredGuests: number;
  /** Reservations whose invoices were read (invoices_read_at set), invoices and loyalty cards mirrored. */
  invoiced: number;
  invoiceRows: number;
  cardRows: number;
}

export interface PmsBenchOptions {
  properties: { id: string; bookingCount: number }[];
  limits: Limits;
  databaseUrl: string;
  /** pms.backfillFrom of the daemon (YYYY-MM-DD). */
  backfillFrom: string;
  detailConcurrency: number;
  timeoutMs: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * How far before backfillFrom a mirrored reservation may have been modified: the daemon reads
 * its first window in the property's local time (and widens it by the largest UTC offset while
 * the zone is unknown), so a day's worth of earlier modifications may come along.
 */
const EDGE_MS = 2 * DAY_MS;

/** Compares the mirror's reservation numbers with the simulator's reservations. */
function truthOf(sim: Simulator, propertyIds: readonly string[], fromMs: number, toMs: number, rows: Map<string, Set<string>>): PmsTruth {
  const t: PmsTruth = {
    inSpan: 0,
    mirrored: 0,
    unexpected: 0,
    missing: 0,
    guests: 0,
    persons: 0,
    searchWindows: 0,
    minSearches: 0,
    properties: propertyIds.length,
    byProperty: [],
  };
  const guests = new Set<string>();
  const persons = new Set<string>();
  for (const id of propertyIds) {
    const all = sim.pmsReservations(id);
    const held = rows.get(id) ?? new Set<string>();
    const modified = new Map(all.map((r) => [r.number, Date.parse(r.modifyDateTime)]));
    let inSpan = 0;
    for (const r of all) {
      const ms = modified.get(r.number)!;
      if (ms >= fromMs) {
        inSpan++;
        if (!held.has(r.number)) t.missing++;
      }
      if (!held.has(r.number)) continue;
      const customer = r.customer?.pmsPersonId;
      if (customer) persons.add(`${id}/${customer}`);
      for (const s of r.roomStays) for (const g of s.guestsIds) if (g !== customer) guests.add(`${id}/${g}`);
    }
    for (const number of held) {
      const ms = modified.get(number);
      if (ms === undefined || ms < fromMs - EDGE_MS) t.unexpected++;
    }
    t.inSpan += inSpan;
    t.mirrored += held.size;
    t.byProperty.push({ propertyId: id, rows: held.size, inSpan });
    const min = minSearchRequests(
      all.map((r) => ({ modifiedMs: modified.get(r.number)!, cancelled: r.reservationStatus === 'Cancelled' })),
      fromMs,
      toMs,
    );
    t.searchWindows += min.windows;
    t.minSearches += min.requests;
  }
  t.guests = guests.size;
  t.persons = new Set([...persons, ...guests]).size;
  return t;
}

export async function runPmsBench(opts: PmsBenchOptions): Promise<PmsBenchResult> {
  const counts = new PmsRequestCounter();
  const propertyIds = opts.properties.map((p) => p.id);
  const fromMs = Date.parse(`${opts.backfillFrom}T00:00:00Z`);
  let startedAt = 0;
  let truth: PmsTruth | undefined;
  let mirroredGuests = 0;
  let invoiced = 0;
  let invoiceRows = 0;
  let cardRows = 0;
  const run = await runSyncOnce({
    label: 'scenario D',
    properties: opts.properties,
    limits: opts.limits,
    databaseUrl: opts.databaseUrl,
    detailConcurrency: opts.detailConcurrency,
    timeoutMs: opts.timeoutMs,
    seed: 4,
    config: {
      // The whole backfill, loyalty cards included (their default follows pms.personalData, off):
      // what a hotel with personal data on reads, and the figures of docs/replicas-and-sizing.md.
      pms: { backfillFrom: opts.backfillFrom, loyaltyCards: true },
      content: { enabled: false },
      occupancy: { enabled: false },
    },
    onSimulator: (sim) => {
      counts.attach(sim);
      startedAt = Date.now();
    },
    progressExtra: () =>
      `${counts.search.total} PMS searches, ${counts.reservation.total} reservations, ${counts.invoices.total} invoices, ${counts.guest.total} guests, ${counts.loyaltyCards.total} loyalty cards`,
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    inspect: async (c, schema, sim) => {
      const res = await c.query<{ property_id: string; number: string }>(`SELECT property_id, number FROM "${schema}".pms_reservations`);
      const rows = new Map<string, Set<string>>();
      for (const r of res.rows) {
        let set = rows.get(r.property_id);
        if (!set) rows.set(r.property_id, (set = new Set()));
        set.add(r.number);
      }
      // No change happens during the run: what the simulator holds now is what was there.
      truth = truthOf(sim, propertyIds, fromMs, startedAt, rows);
      const g = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".pms_guests`);
      mirroredGuests = Number(g.rows[0]?.n ?? 0);
      const m = await c.query<{ invoiced: string; invoices: string; cards: string }>(
        `SELECT (SELECT count(*) FROM "${schema}".pms_reservations WHERE invoices_read_at IS NOT NULL) AS invoiced,
                (SELECT count(*) FROM "${schema}".pms_invoices) AS invoices, (SELECT count(*) FROM "${schema}".pms_guest_loyalty_cards) AS cards`,
      );
      invoiced = Number(m.rows[0]?.invoiced ?? 0);
      invoiceRows = Number(m.rows[0]?.invoices ?? 0);
      cardRows = Number(m.rows[0]?.cards ?? 0);
    },
  });
  return { run, counts, truth: truth!, mirroredGuests, invoiced, invoiceRows, cardRows };
}

/** The figures of scenario D. */
export function pmsLines(
  r: PmsBenchResult,
  standardWindows: Parameters<typeof minTimeFor>[0],
  productionWindows: Parameters<typeof minTimeFor>[0],
): { lines: string[]; notes: string[] } {
  const { counts: c, truth: t, run } = r;
  const lines: Line[] = [];
  const searchRatio = c.search.total / Math.max(1, t.minSearches);
  lines.push({
    label: 'PMS search requests',
    value: String(c.search.total),
    detail:
      `minimum ${t.minSearches} (${t.properties} properties × ${t.searchWindows / t.properties} windows of 365 days × 2 states = ${2 * t.searchWindows}` +
      `${t.minSearches > 2 * t.searchWindows ? `, + ${t.minSearches - 2 * t.searchWindows} further pages of 100` : ''}), ratio ${searchRatio.toFixed(2)}`,
    goal: '(goal <= 1.10)',
    verdict: searchRatio <= 1.1 ? 'PASS' : 'MISS',
  });
  const perReservation = c.reservation.total / Math.max(1, t.mirrored);
  lines.push({
    label: 'reservation fetches',
    value: perReservation.toFixed(2),
    detail: `per reservation: ${c.reservation.total} fetches, ${t.mirrored} reservations mirrored, ${c.reservation.byKey.size} distinct, at most ${c.reservation.maxForOne} for one`,
    goal: '(goal 1.00)',
    verdict: c.reservation.total === t.mirrored && c.reservation.byKey.size === t.mirrored ? 'PASS' : 'MISS',
  });
  lines.push({
    label: 'guest profile requests',
    value: String(c.guest.total),
    detail: `${t.guests} profiles referenced besides the customers, ${c.guest.byKey.size} distinct fetched, ${r.mirroredGuests} rows in pms_guests`,
    goal: `(goal ${t.guests})`,
    verdict: c.guest.total === t.guests && c.guest.byKey.size === t.guests ? 'PASS' : 'MISS',
  });
  lines.push({
    label: 'invoice requests',
    value: String(c.invoices.total),
    detail: `one per reservation: ${c.invoices.byKey.size} distinct, at most ${c.invoices.maxForOne} for one; ${r.invoiced} reservations with invoices read, ${r.invoiceRows} invoices mirrored`,
    goal: `(goal ${t.mirrored})`,
    verdict: c.invoices.total === t.mirrored && c.invoices.byKey.size === t.mirrored && r.invoiced === t.mirrored ? 'PASS' : 'MISS',
  });
  lines.push({
    label: 'loyalty card requests',
    value: String(c.loyaltyCards.total),
    detail: `one per person (${t.persons} customers and guests), ${c.loyaltyCards.byKey.size} distinct, at most ${c.loyaltyCards.maxForOne} for one; ${r.cardRows} cards mirrored`,
    goal: `(goal ${t.persons})`,
    verdict: c.loyaltyCards.total === t.persons && c.loyaltyCards.byKey.size === t.persons ? 'PASS' : 'MISS',
  });
  const other = [...c.otherPaths.entries()].map(([p, n]) => `${n} ${p.replace(/^\/api\//, '')}`).join(', ');
  lines.push({
    label: 'other standard requests',
    value: String(c.rooms.total + c.otherTotal),
    detail: `${c.rooms.total} rooms pages${other ? `, ${other}` : ''}`,
    goal: '',
    verdict: '',
  });
  lines.push({
    label: '429 responses',
    value: String(run.rejected429),
    detail: statusText(run.byStatus),
    goal: '(goal 0)',
    verdict: run.rejected429 === 0 ? 'PASS' : 'MISS',
  });
  const n = run.standard.count;
  const theoryMs = minTimeFor(standardWindows, n);
  const spanMs = Math.max(0, run.standard.lastMs - run.standard.firstMs);
  const ratio = spanMs / Math.max(1, theoryMs);
  lines.push({
    label: 'standard time / theoretical',
    value: ratio.toFixed(3),
    detail: `(${secs(spanMs)} first to last of ${n} standard requests / ${secs(theoryMs)})`,
    goal: '(goal <= 1.10)',
    verdict: ratio <= 1.1 ? 'PASS' : 'MISS',
  });
  const productionMs = minTimeFor(productionWindows, n);
  lines.push({
    label: 'at the production limits',
    value: hours(productionMs),
    detail: `${n} standard requests at ${windowsText(productionWindows)}: ${(n / Math.max(1, t.mirrored)).toFixed(2)} per reservation (search, reservation, invoices, guest profiles, loyalty cards)`,
    goal: '',
    verdict: '',
  });
  const edge = t.mirrored - (t.inSpan - t.missing) - t.unexpected;
  lines.push({
    label: 'mirror',
    value: `${t.mirrored}/${t.inSpan}`,
    detail:
      `pms_reservations rows / simulator reservations modified since backfillFrom (${t.byProperty.map((m) => `${m.propertyId}: ${m.rows}/${m.inSpan}`).join(', ')}); ` +
      `${t.missing} missing${edge > 0 ? `, ${edge} from just before backfillFrom` : ''}${t.unexpected > 0 ? `, ${t.unexpected} unexpected` : ''}`,
    goal: '(goal equal)',
    verdict: t.missing === 0 && t.unexpected === 0 ? 'PASS' : 'MISS',
  });
  const notes = [
    `first standard request ${secs(run.standard.firstMs)} after spawn, last ${secs(run.standard.lastMs)}, exit ${secs(run.wallMs)}; ` +
      `${run.details.count} booking details, ${run.list.count} list pages; mirror ${run.mirroredBookings}/${run.bookings} bookings`,
    `standard window fill (fullest seen / limit): ${run.standardFill.map((f) => `${f.maxSeen}/${f.limit} per ${f.windowMs} ms`).join(', ')}`,
    logText(run),
  ];
  return { lines: formatLines(lines), notes };
}

/** A duration in hours, with a decimal below 10. */
function hours(ms: number): string {
  const h = ms / 3_600_000;
  return h < 10 ? `${h.toFixed(1)} h` : `${Math.round(h)} h`;
}

/** Scenario D's defaults (index.ts flags). */
export const PMS_DEFAULTS = { bookings: 2000, properties: 2, scale: 60, backfillFrom: '2009-01-01' } as const;

/**
 * `--pms-year`: a year of one 200-room hotel. 200 rooms × 365 nights × 75 % occupancy / 2.6
 * nights a stay ≈ 21,000 reservations a year; the simulator spreads a property's bookings over
 * its years since 2009 skewed to recent ones (about a quarter fall in the last year), so 84,000
 * bookings hold about 21,000 reservations modified in the last year, the backfill's span.
 */
export const PMS_YEAR = { bookings: 84_000, properties: 1, backfillDays: 365 } as const;
