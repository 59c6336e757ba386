/**
 * A booking version as history: the figures of the version that reports read (status, dates,
 * rooms, room types, amounts), what changed from the version before, and its nights on the
 * books. Pure: the store (src/store/repositories/history.ts) writes what this gives, in the
 * transaction of the booking's details, and `rebuild` derives it again from raw.
 *
 * Rules (docs/history.md):
 * - a version is valid from its provider modifiedDateTime until the next version's (type 2 by
 *   the provider's time, not fetch time);
 * - its nights are on the books when the booking is not cancelled (as daily_kpis counts them);
 * - a booking first seen after it changed gets reconstructed versions before its first fetched
 *   one: on the books from its creation, cancelled from its cancellation, as that version says.
 */
import type {
  BookingHistory,
  BookingRows,
  FactDelta,
  HistoryRederived,
  HistoryPlan,
  HistoryVersion,
  NightFact,
  NightRow,
  OpenNight,
  StoredHistory,
  VersionFacts,
  VersionRow,
} from '../store/schema.js';
import type { ChangeKind } from '../store/states.js';
import { equalDecimals, formatDecimal, parseDecimal, sum } from '../util/decimal.js';

export const CANCELLED = 'Cancelled';

/** A version as the store writes it: its figures and its nights. */
export interface BookingVersion {
  facts: VersionFacts;
  /** Every night of the version (cancelled or not); `onTheBooks` says whether they count. */
  nights: NightFact[];
  onTheBooks: boolean;
}

/** A numeric column's value as the mapping gives it (money is text there). */
const text = (v: string | number | null | undefined): string | null => (v === null || v === undefined ? null : String(v));

const dateOf = (localTime: string | null | undefined): string | null => (localTime ? localTime.slice(0, 10) : null);

function total(values: readonly (string | null)[]): string | null {
  const known = values.filter((v): v is string => v !== null).map(parseDecimal);
  return known.length === 0 ? null : formatDecimal(sum(known));
}

/** The version the rows of a booking's details are (rows from bookingToRows). */
export function bookingVersionOf(rows: BookingRows): BookingVersion {
  const b = rows.booking;
  const stays = new Map(rows.roomStays.map((s) => [s.stay_index, s]));
  const nights: NightFact[] = rows.dailyRates.map((r) => ({
    stay_index: r.stay_index,
    stay_date: r.stay_date.slice(0, 10),
    currency_code: b.currency_code ?? null,
    room_type_id: stays.get(r.stay_index)?.room_type_id ?? null,
    net_amount: text(r.price_before_tax),
    gross_amount: text(r.gross_amount),
  }));
  return {
    facts: {
      status: b.status,
      created_at: (b.created_at as string | null | undefined) ?? null,
      cancelled_at: (b.cancelled_at as string | null | undefined) ?? null,
      modified_at: b.modified_at as string,
      currency_code: b.currency_code ?? null,
      arrival_date: dateOf(b.arrival_at),
      departure_date: dateOf(b.departure_at),
      rooms: b.room_stay_count,
      room_nights: nights.length,
      room_type_ids: rows.roomStays.map((s) => s.room_type_id ?? null),
      room_revenue_net: total(nights.map((n) => n.net_amount)),
      room_revenue_gross: total(nights.map((n) => n.gross_amount)),
      total_net: text(b.price_before_tax),
      total_gross: text(b.price_after_tax),
    },
    nights,
    onTheBooks: b.status !== CANCELLED,
  };
}

const sameAmount = (a: string | null, b: string | null) => (a === null || b === null ? a === b : equalDecimals(parseDecimal(a), parseDecimal(b)));
const sameList = <T>(a: readonly T[], b: readonly T[]) => a.length === b.length && a.every((v, i) => v === b[i]);
const nightKey = (n: NightFact) => `${n.stay_index}\u0000${n.stay_date}`;

/**
 * What changed from `before` to `after` (both versions' figures and nights); `created` when
 * there is no version before. `other` when nothing a report reads changed.
 */
export function changesBetween(before: { facts: VersionFacts; nights: readonly NightFact[] } | null, after: BookingVersion): ChangeKind[] {
  if (!before) return ['created'];
  const was = before.facts;
  const now = after.facts;
  const changes: ChangeKind[] = [];
  const wasCancelled = was.status === CANCELLED;
  const isCancelled = now.status === CANCELLED;
  if (!wasCancelled && isCancelled) changes.push('cancelled');
  if (wasCancelled && !isCancelled) changes.push('reinstated');
  const beforeNights = new Map(before.nights.map((n) => [nightKey(n), n]));
  const datesMoved =
    was.arrival_date !== now.arrival_date ||
    was.departure_date !== now.departure_date ||
    beforeNights.size !== after.nights.length ||
    after.nights.some((n) => !beforeNights.has(nightKey(n)));
  if (datesMoved) changes.push('dates');
  if (was.rooms !== now.rooms) changes.push('rooms');
  if (!sameList(was.room_type_ids, now.room_type_ids)) changes.push('room_type');
  const repriced =
    was.currency_code !== now.currency_code ||
    !sameAmount(was.total_net, now.total_net) ||
    !sameAmount(was.total_gross, now.total_gross) ||
    after.nights.some((n) => {
      const b = beforeNights.get(nightKey(n));
      return b !== undefined && (!sameAmount(b.net_amount, n.net_amount) || !sameAmount(b.gross_amount, n.gross_amount));
    });
  if (repriced) changes.push('price');
  return changes.length > 0 ? changes : ['other'];
}

const instant = (text: string | null) => {
  const ms = text === null ? NaN : new Date(text).getTime();
  return Number.isNaN(ms) ? null : ms;
};

/**
 * The versions that stand before the first fetched version of a booking first seen after it
 * changed (its modifiedDateTime later than its createdDateTime): on the books from its
 * creation, and, when that version is cancelled, cancelled from its cancellation (from the
 * creation when the cancellation is not later). Empty for a booking first seen as created, or
 * whose times cannot be read.
 */
export function reconstructedVersions(first: BookingVersion): HistoryVersion[] {
  const created = instant(first.facts.created_at);
  const modified = instant(first.facts.modified_at);
  if (created === null || modified === null || created >= modified) return [];
  const from = first.facts.created_at!;
  const asBooked: VersionFacts = { ...first.facts, status: first.onTheBooks ? first.facts.status : 'Active', cancelled_at: null };
  const cancelled = first.onTheBooks ? null : instant(first.facts.cancelled_at);
  if (cancelled !== null && cancelled <= created) {
    return [{ facts: first.facts, validFrom: from, reconstructed: true, changes: ['created'], onTheBooks: false }];
  }
  const out: HistoryVersion[] = [{ facts: asBooked, validFrom: from, reconstructed: true, changes: ['created'], onTheBooks: true }];
  if (cancelled !== null && cancelled < modified) {
    out.push({ facts: first.facts, validFrom: first.facts.cancelled_at!, reconstructed: true, changes: ['cancelled'], onTheBooks: false });
  }
  return out;
}

// ------------------------------------------------------------------ what a write adds to history

const sameNight = (a: NightFact, b: NightFact) =>
  a.stay_index === b.stay_index &&
  a.stay_date === b.stay_date &&
  a.currency_code === b.currency_code &&
  a.room_type_id === b.room_type_id &&
  sameAmount(a.net_amount, b.net_amount) &&
  sameAmount(a.gross_amount, b.gross_amount);

const ZERO = '0';

function factDeltas(removed: readonly NightFact[], added: readonly NightFact[]): FactDelta[] {
  const byKey = new Map<string, { stay_date: string; currency_code: string | null; rooms: number; free: number; net: string[]; gross: string[] }>();
  const apply = (n: NightFact, sign: 1 | -1) => {
    const key = `${n.stay_date}\u0000${n.currency_code ?? '\u0001'}`;
    let d = byKey.get(key);
    if (!d) byKey.set(key, (d = { stay_date: n.stay_date, currency_code: n.currency_code, rooms: 0, free: 0, net: [], gross: [] }));
    d.rooms += sign;
    if (n.net_amount !== null && parseDecimal(n.net_amount).units === 0n) d.free += sign;
    const neg = (v: string) => (v.startsWith('-') ? v.slice(1) : `-${v}`);
    if (n.net_amount !== null) d.net.push(sign > 0 ? n.net_amount : neg(n.net_amount));
    if (n.gross_amount !== null) d.gross.push(sign > 0 ? n.gross_amount : neg(n.gross_amount));
  };
  for (const n of removed) apply(n, -1);
  for (const n of added) apply(n, 1);
  const out: FactDelta[] = [];
  for (const d of byKey.values()) {
    const net = d.net.length > 0 ? formatDecimal(sum(d.net.map(parseDecimal))) : ZERO;
    const gross = d.gross.length > 0 ? formatDecimal(sum(d.gross.map(parseDecimal))) : ZERO;
    if (d.rooms === 0 && d.free === 0 && parseDecimal(net).units === 0n && parseDecimal(gross).units === 0n) continue;
    out.push({
      stay_date: d.stay_date,
      currency_code: d.currency_code,
      rooms_sold: d.rooms,
      complimentary_rooms: d.free,
      room_revenue_net: net,
      room_revenue_gross: gross,
    });
  }
  return out;
}

/**
 * What writing `incoming` adds to the history `stored` (null for a booking without history):
 * null when it adds nothing (a re-fetch of the current version). Otherwise the versions to
 * insert (reconstructed ones first for a booking first seen after it changed), and the nights
 * that leave and join the books at each version's valid_from, with the nightly facts they
 * change. Nights a version leaves as they were keep their rows: a version that changes nothing
 * a report reads adds no night.
 */
export function planHistory(stored: StoredHistory | null, incoming: BookingVersion, contentHash: string, fetched = true): HistoryPlan | null {
  if (stored && stored.contentHash !== null && stored.contentHash === contentHash) return null;
  const steps: { v: HistoryVersion; fetched: boolean }[] = [];
  if (stored) {
    steps.push({
      v: {
        facts: incoming.facts,
        validFrom: incoming.facts.modified_at,
        reconstructed: false,
        changes: changesBetween(stored, incoming),
        onTheBooks: incoming.onTheBooks,
      },
      fetched,
    });
  } else {
    const before = reconstructedVersions(incoming);
    for (const v of before) steps.push({ v, fetched: false });
    const last = before[before.length - 1];
    const changes = last ? changesBetween({ facts: last.facts, nights: incoming.nights }, incoming) : (['created'] as ChangeKind[]);
    steps.push({
      v: { facts: incoming.facts, validFrom: incoming.facts.modified_at, reconstructed: false, changes, onTheBooks: incoming.onTheBooks },
      fetched,
    });
  }
  const firstVersion = (stored?.version ?? 0) + 1;
  const versions: VersionRow[] = steps.map(({ v, fetched: f }, i) => ({
    ...v,
    version: firstVersion + i,
    validTo: steps[i + 1]?.v.validFrom ?? null,
    fetched: f,
    contentHash: f ? contentHash : null,
  }));

  // The nights: the open rows carried through each version in turn.
  const seenFrom = incoming.facts.modified_at;
  let open: { row: NightRow; stored: boolean }[] = (stored?.open ?? []).map((n) => ({ row: { ...n, valid_to: null }, stored: true }));
  const close: { night: OpenNight; at: string }[] = [];
  const insert: NightRow[] = [];
  for (const { v } of steps) {
    const wanted = v.onTheBooks ? incoming.nights : [];
    const kept: typeof open = [];
    const matched = new Set<number>();
    const candidates = new Map<string, number[]>();
    wanted.forEach((n, k) => {
      const list = candidates.get(nightKey(n));
      if (list) list.push(k);
      else candidates.set(nightKey(n), [k]);
    });
    for (const o of open) {
      const i = (candidates.get(nightKey(o.row)) ?? []).find((k) => !matched.has(k) && sameNight(wanted[k]!, o.row));
      if (i !== undefined) {
        matched.add(i);
        kept.push(o);
      } else if (o.stored) {
        close.push({ night: o.row, at: v.validFrom });
      } else {
        insert.push({ ...o.row, valid_to: v.validFrom });
      }
    }
    wanted.forEach((n, k) => {
      if (!matched.has(k))
        kept.push({ row: { ...n, valid_from: v.validFrom, valid_to: null, reconstructed_until: v.reconstructed ? seenFrom : null }, stored: false });
    });
    open = kept;
  }
  const added = open.filter((o) => !o.stored).map((o) => o.row);
  insert.push(...added);
  return {
    versions,
    closeCurrentAt: stored ? versions[0]!.validFrom : null,
    close,
    insert,
    facts: factDeltas(
      close.map((c) => c.night),
      added,
    ),
  };
}

/** What the store needs to write the history of a booking's details (rows from bookingToRows). */
export function bookingHistoryOf(rows: BookingRows): BookingHistory {
  const version = bookingVersionOf(rows);
  return { plan: (stored, contentHash) => planHistory(stored, version, contentHash) };
}

const sameInstant = (a: string | null, b: string | null) => (a === null || b === null ? a === b : instant(a) === instant(b));

/** True when two versions' figures are the same (times as instants, amounts as numbers). */
function sameFigures(a: VersionFacts, b: VersionFacts): boolean {
  return (
    a.status === b.status &&
    a.currency_code === b.currency_code &&
    a.arrival_date === b.arrival_date &&
    a.departure_date === b.departure_date &&
    a.rooms === b.rooms &&
    a.room_nights === b.room_nights &&
    sameList(a.room_type_ids, b.room_type_ids) &&
    sameInstant(a.created_at, b.created_at) &&
    sameInstant(a.cancelled_at, b.cancelled_at) &&
    sameAmount(a.room_revenue_net, b.room_revenue_net) &&
    sameAmount(a.room_revenue_gross, b.room_revenue_gross) &&
    sameAmount(a.total_net, b.total_net) &&
    sameAmount(a.total_gross, b.total_gross)
  );
}

/**
 * History re-derived from what is stored: past versions stay as they were (history only grows),
 * the current version's figures and its open nights are derived again from the current payload
 * (each night keeps the instant it joined the books), and a booking without history gets its
 * history. Null when nothing differs.
 */
export function rederiveHistory(stored: (StoredHistory & { validFrom: string }) | null, current: BookingVersion, contentHash: string): HistoryRederived | null {
  if (!stored) return { kind: 'started', plan: planHistory(null, current, contentHash)! };
  const since = new Map(stored.open.map((n) => [nightKey(n), n]));
  const open: NightRow[] = (current.onTheBooks ? current.nights : []).map((n) => {
    const was = since.get(nightKey(n));
    return { ...n, valid_from: was?.valid_from ?? stored.validFrom, reconstructed_until: was?.reconstructed_until ?? null, valid_to: null };
  });
  const sameOpen = open.length === stored.open.length && open.every((n) => since.has(nightKey(n)) && sameNight(n, since.get(nightKey(n))!));
  if (sameFigures(stored.facts, current.facts) && sameOpen && stored.contentHash === contentHash) return null;
  return { kind: 'corrected', facts: current.facts, contentHash, open };
}
