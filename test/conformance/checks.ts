/**
 * Comparing mirrored rows with the payloads they came from, value by value, in PostgreSQL.
 *
 * Each check pairs a column's value (read with row_to_json, so every numeric keeps its text)
 * with what the payload says, and one query decides all of them by type:
 * - numeric: equal as numbers AND with the same scale (`28.0000` is not `28`; `1E+2` is `100`,
 *   which is how PostgreSQL reads it too);
 * - instant: the same point in time (a date-time without a zone is UTC, as the document says);
 * - local: the same wall-clock time (the zone, when there is one, is not applied);
 * - date: the calendar date as written;
 * - float: the same double (columns of type double precision);
 * - json: the same JSON as PostgreSQL's jsonb prints it (numbers with their scale, keys in
 *   jsonb's order);
 * - text, bool, int: equal.
 * The wall-clock and date parts are read here with a parser of the suite's own, not the
 * daemon's, so that a mistake in one is not repeated in the other.
 */
import pg from 'pg';
import { exactTypes } from '../../src/store/database.js';
import { isJsonNumber, parseJsonLossless } from '../../src/provider/json.js';

export type Kind = 'text' | 'numeric' | 'instant' | 'local' | 'date' | 'float' | 'json' | 'bool' | 'int';

interface Check {
  where: string;
  kind: Kind;
  actual: string | null;
  expected: string | null;
}

/** The text of a value as a check compares it; null for null and absent. */
export function textOf(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (isJsonNumber(v)) return v.rawJSON;
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean' || typeof v === 'number' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

// ---------------------------------------------------------------------------- date-times

const DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

function parts(s: string) {
  const m = DATE_TIME.exec(s);
  if (!m) throw new Error(`the suite cannot read the date-time ${JSON.stringify(s)}`);
  const [, date, hh, mm, ss, fraction, zone] = m;
  let offset: string | null = null;
  if (zone !== undefined) {
    if (/^z$/i.test(zone)) offset = '+00:00';
    else {
      const d = zone.slice(1).replace(':', '');
      offset = `${zone[0]}${d.slice(0, 2)}:${d.length > 2 ? d.slice(2) : '00'}`;
    }
  }
  return { date: date!, time: hh === undefined ? null : `${hh}:${mm}:${ss ?? '00'}${fraction ?? ''}`, offset };
}

/**
 * Whether a text is a date-time the mirror can type: a form the suite reads, with a time, of
 * a day that exists (from year 1), hours to 23, minutes and seconds to 59, a zone to ±23:59.
 * Any other text (the PMS API's date-times are bare strings in the document) leaves the typed
 * column NULL and stays in raw.
 */
export function isReadableDateTime(s: string): boolean {
  const m = DATE_TIME.exec(s);
  if (!m || m[2] === undefined) return false;
  const [y, mo, d] = m[1]!.split('-').map(Number) as [number, number, number];
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d);
  if (y < 1 || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d) return false;
  if (Number(m[2]) > 23 || Number(m[3]) > 59 || Number(m[4] ?? 0) > 59) return false;
  const zone = /^[+-](\d{2}):?(\d{2})?$/.exec(m[6] ?? '');
  return !zone || (Number(zone[1]) <= 23 && Number(zone[2] ?? 0) <= 59);
}

/** The instant a date-time denotes, for PostgreSQL (no zone: UTC). */
export function instant(s: string | null | undefined): string | null {
  if (s === null || s === undefined) return null;
  const p = parts(s);
  return `${p.date} ${p.time ?? '00:00:00'}${p.offset ?? '+00:00'}`;
}

/** The wall-clock time a date-time is written with, zone ignored. */
export function wallClock(s: string | null | undefined): string | null {
  if (s === null || s === undefined) return null;
  const p = parts(s);
  return `${p.date} ${p.time ?? '00:00:00'}`;
}

/** The calendar date a date-time is written with. */
export function calendarDate(s: string | null | undefined): string | null {
  return s === null || s === undefined ? null : parts(s).date;
}

/** Orders wall-clock texts (fractions padded so that the text order is the time order). */
export const wallClockKey = (s: string) => {
  const [date, time] = s.split(' ');
  const [hms, fraction = ''] = time!.split('.');
  return `${date} ${hms}.${fraction.padEnd(9, '0')}`;
};

// ---------------------------------------------------------------------------- checks

/** The actual value of a row that is not there: its checks are left out (the missing row is reported once). */
export const MISSING = Symbol('no row');

export class Checks {
  readonly items: Check[] = [];
  /** Problems found without a value comparison (missing or extra rows). */
  readonly problems: string[] = [];

  add(where: string, kind: Kind, actual: unknown, expected: unknown): void {
    if (actual === MISSING) return;
    this.items.push({ where, kind, actual: textOf(actual), expected: textOf(expected) });
  }

  /** Checks that `rows` has exactly the keys `expected` has; returns the row for each key present. */
  rowsFor<R>(what: string, rows: Map<string, R>, expectedKeys: Iterable<string>): Map<string, R> {
    const want = new Set(expectedKeys);
    for (const k of want) if (!rows.has(k)) this.problems.push(`${what} ${k}: no row`);
    for (const k of rows.keys()) if (!want.has(k)) this.problems.push(`${what} ${k}: a row the payloads do not have`);
    return rows;
  }

  /**
   * Runs every comparison in PostgreSQL. Returns the mismatches grouped by column (the same
   * column of every booking or property is one group), each group with how many of its
   * checks failed and its first example; empty when every value matched.
   */
  async mismatches(client: pg.Client): Promise<string[]> {
    const failed: Check[] = [];
    const chunk = 20_000;
    for (let i = 0; i < this.items.length; i += chunk) {
      const part = this.items.slice(i, i + chunk);
      const { rows } = await client.query<{ i: string }>(
        `SELECT i FROM (
           SELECT t.i, CASE
               WHEN t.actual IS NULL AND t.expected IS NULL THEN true
               WHEN t.actual IS NULL OR t.expected IS NULL THEN false
               WHEN t.kind = 'text' THEN t.actual = t.expected
               WHEN t.kind = 'numeric' THEN t.actual::numeric = t.expected::numeric AND scale(t.actual::numeric) = scale(t.expected::numeric)
               WHEN t.kind = 'int' THEN t.actual::numeric = t.expected::numeric
               WHEN t.kind = 'float' THEN t.actual::float8 = t.expected::float8
               WHEN t.kind = 'instant' THEN t.actual::timestamptz = t.expected::timestamptz
               WHEN t.kind = 'local' THEN t.actual::timestamp = t.expected::timestamp
               WHEN t.kind = 'date' THEN t.actual::date = t.expected::date
               WHEN t.kind = 'json' THEN t.actual::jsonb::text = t.expected::jsonb::text
               WHEN t.kind = 'bool' THEN t.actual::boolean = t.expected::boolean
             END AS ok
           FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS t(kind, actual, expected, i)) x
         WHERE NOT ok ORDER BY i`,
        [part.map((c) => c.kind), part.map((c) => c.actual), part.map((c) => c.expected)],
      );
      for (const r of rows) failed.push(part[Number(r.i) - 1]!);
    }
    const group = (where: string) =>
      where
        .replace(/"(?:[^"\\]|\\.)*"/g, '…')
        .replace(/\[\d+\]/g, '[]')
        .replace(/\b(round|position|term|arrival dates|early_check_in|late_check_out|amenity) \d+/g, '$1 …');
    const totals = new Map<string, number>();
    for (const c of this.items) totals.set(group(c.where), (totals.get(group(c.where)) ?? 0) + 1);
    const groups = new Map<string, { count: number; first: Check }>();
    for (const c of failed) {
      const g = groups.get(group(c.where));
      if (g) g.count += 1;
      else groups.set(group(c.where), { count: 1, first: c });
    }
    const clip = (v: string | null) => (v === null ? 'NULL' : JSON.stringify(v.length > 300 ? `${v.slice(0, 300)}…` : v));
    const problems = new Map<string, number>();
    for (const p of this.problems) problems.set(group(p), (problems.get(group(p)) ?? 0) + 1);
    return [
      ...[...problems].map(([p, n]) => `${p} (${n} times)`),
      ...[...groups].map(
        ([g, { count, first }]) =>
          `${g} (${first.kind}): ${count} of ${totals.get(g)} differ; e.g. ${first.where}: mirrored ${clip(first.actual)}, payload ${clip(first.expected)}`,
      ),
    ];
  }
}

// ---------------------------------------------------------------------------- reading rows

/** A client on the test's schema that reads numerics, int8 and timestamps as text. */
export async function connect(url: string, schema: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema},public`, types: exactTypes });
  await client.connect();
  return client;
}

export type Row = Record<string, unknown>;

/**
 * The rows of a query, each read through row_to_json and the lossless parser: numeric values
 * arrive as their exact text, jsonb columns as JSON, timestamps in ISO form.
 */
export async function rowsOf(client: pg.Client, sql: string, params: unknown[] = []): Promise<Row[]> {
  const { rows } = await client.query<{ j: string }>(`SELECT row_to_json(q)::text AS j FROM (${sql}) q`, params);
  return rows.map((r) => parseJsonLossless(r.j) as Row);
}

/** Rows keyed by `key(row)`. */
export function byKey(rows: Row[], key: (r: Row) => string): Map<string, Row> {
  return new Map(rows.map((r) => [key(r), r]));
}
