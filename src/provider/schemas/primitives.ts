/**
 * Building blocks of the tolerant provider schemas (see schemas.ts for the rules they follow).
 * Numbers arrive as JsonNumber values (json.ts) and leave as their exact text, so money keeps
 * every digit and its scale on its way to a numeric column; plain JS numbers and numeric
 * strings are accepted too (tests, and providers that quote numbers).
 */
import { z } from 'zod';
import { isJsonNumber } from '../json.js';

// ---------------------------------------------------------------------------- numbers

const numericText = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** The text of a JSON number, a JS number or a numeric string; undefined for anything else. */
export function numberTextOf(v: unknown): string | undefined {
  if (isJsonNumber(v)) return v.rawJSON;
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : undefined;
  if (typeof v === 'string' && numericText.test(v.trim())) return v.trim();
  return undefined;
}

/** The integer a number's text denotes (`7`, `7.0`, `7e0`), as a decimal string; undefined when it is not integral. */
function integerTextOf(v: unknown): string | undefined {
  const text = numberTextOf(v);
  if (text === undefined) return undefined;
  if (/^-?\d+$/.test(text)) return text.replace(/^(-?)0+(?=\d)/, '$1');
  const n = Number(text);
  return Number.isSafeInteger(n) ? String(n) : undefined;
}

/**
 * A value converted in one pass (check and conversion are one call: these run for every number
 * of every payload): `convert` gives undefined when the value is not acceptable.
 */
function converted<T>(convert: (v: unknown) => T | undefined, message: string) {
  return z.unknown().transform((v, ctx): T => {
    const out = convert(v);
    if (out === undefined) {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    }
    return out;
  });
}

/** A JSON number, kept as its exact decimal text (for numeric columns). */
export const num = converted(numberTextOf, 'expected a number');

/** A 32-bit style integer (counts, positions, indexes), as a JS number. */
export const int = converted((v) => {
  const t = integerTextOf(v);
  return t !== undefined && Number.isSafeInteger(Number(t)) ? Number(t) : undefined;
}, 'expected an integer');

/** A 64-bit integer (OpenAPI format int64), kept as its decimal text: it may exceed 2^53. */
export const bigInt = converted(integerTextOf, 'expected an integer');

/** An id sent as number or string, kept as string (a numeric id keeps every digit). */
export const id = z
  .custom<unknown>((v) => (typeof v === 'string' ? v.length > 0 : integerTextOf(v) !== undefined), {
    error: 'expected an id (non-empty string or integer)',
  })
  .transform((v) => (typeof v === 'string' ? v : integerTextOf(v)!));

export const optString = z
  .string()
  .nullish()
  .transform((v) => v ?? null);
export const optNum = num.nullish().transform((v) => v ?? null);
export const optInt = int.nullish().transform((v) => v ?? null);
export const optBigInt = bigInt.nullish().transform((v) => v ?? null);
/**
 * A reference to something else (an id that is not this object's key), or null. The document
 * lets such strings be empty: an empty string is kept as sent, it is not this object's key.
 */
export const optId = z
  .custom<unknown>((v) => typeof v === 'string' || integerTextOf(v) !== undefined, { error: 'expected an id (string or integer)' })
  .transform((v) => (typeof v === 'string' ? v : integerTextOf(v)!))
  .nullish()
  .transform((v) => v ?? null);
export const optBool = z
  .boolean()
  .nullish()
  .transform((v) => v ?? null);

// ---------------------------------------------------------------------------- dates and times

export function isRealDate(y: number, m: number, d: number): boolean {
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999, which would reject
  // 0001-01-01 (.NET's DateTime.MinValue, which providers send for "no date").
  const t = new Date(0);
  t.setUTCFullYear(y, m - 1, d);
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/**
 * Every RFC 3339 / ISO-8601 form of a date with an optional time: `T` or a space, minutes with
 * or without seconds and fraction, and a zone that is absent, `Z`, `±HH`, `±HHMM` or `±HH:MM`.
 */
const dateTimeRe = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

export interface DateTimeParts {
  /** `YYYY-MM-DD` as written. */
  date: string;
  /** `HH:mm:ss[.fraction]` as written (seconds added when absent); null for a date alone. */
  time: string | null;
  /** `Z` or `±HH:MM`; null when the value has no zone. */
  zone: string | null;
}

/** Splits a date or date-time into its parts; null when it is not one (or not a real date). */
export function dateTimeParts(s: string): DateTimeParts | null {
  const m = dateTimeRe.exec(s.trim());
  if (!m) return null;
  const [, y, mo, d, hh, mm, ss, fraction, zone] = m;
  if (!isRealDate(Number(y), Number(mo), Number(d))) return null;
  if (hh !== undefined && (Number(hh) > 24 || Number(mm) > 59 || Number(ss ?? 0) > 60)) return null;
  let z: string | null = null;
  if (zone !== undefined) {
    if (/^z$/i.test(zone)) z = 'Z';
    else {
      const digits = zone.slice(1).replace(':', '');
      const h = digits.slice(0, 2);
      const min = digits.length > 2 ? digits.slice(2) : '00';
      if (Number(h) > 23 || Number(min) > 59) return null;
      z = `${zone[0]}${h}:${min}`;
    }
  }
  return {
    date: `${y}-${mo}-${d}`,
    time: hh === undefined ? null : `${hh}:${mm}:${ss ?? '00'}${fraction ?? ''}`,
    zone: z,
  };
}

/**
 * A calendar date, with or without a time part: `2024-03-27`, `2024-03-27T00:00:00` and
 * `2024-03-27T00:00:00+03:00` all mean 2024-03-27. A zone does not move the date: the
 * provider writes the property's calendar day, so the day as written is the day meant.
 */
export const dateOnly = z.string().transform((s, ctx) => {
  const p = dateTimeParts(s);
  if (!p) {
    ctx.addIssue({ code: 'custom', message: `expected a date YYYY-MM-DD, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return p.date;
});

/**
 * A property-local date-time. The typed value is the wall-clock time as written,
 * `YYYY-MM-DDTHH:mm:ss[.fraction]`; a zone, when the provider sends one, is dropped here and
 * kept in `raw` (the wall clock at the property is what reports ask for).
 */
export const localDateTime = z.string().transform((s, ctx) => {
  const p = dateTimeParts(s);
  if (!p || p.time === null) {
    ctx.addIssue({ code: 'custom', message: `expected a property-local date-time YYYY-MM-DDTHH:mm, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return `${p.date}T${p.time}`;
});

/**
 * An instant. One without a zone is read as UTC (the provider documents these fields as UTC);
 * the result is `YYYY-MM-DDTHH:mm:ss[.fraction]` with `Z` or `±HH:MM`, which PostgreSQL and
 * `new Date()` both read exactly.
 */
export const utcDateTime = z.string().transform((s, ctx) => {
  const p = dateTimeParts(s);
  if (!p || p.time === null) {
    ctx.addIssue({ code: 'custom', message: `expected a UTC date-time like 2024-03-27T11:41:04Z, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return `${p.date}T${p.time}${p.zone ?? 'Z'}`;
});
export const optUtcDateTime = utcDateTime.nullish().transform((v) => v ?? null);

// ---------------------------------------------------------------------------- containers

/** An optional array: absent or null → []. */
export function list<T extends z.ZodType>(item: T) {
  return z
    .array(item)
    .nullish()
    .transform((v) => v ?? []);
}
/**
 * A value checked against `schema` and handed on exactly as received, for JSON columns that
 * keep a part of the payload as sent (a parsed copy would turn numbers into text and add
 * nulls for absent fields). Issues keep their paths.
 */
export function asSent<T extends z.ZodType>(schema: T) {
  return z.unknown().superRefine((v, ctx) => {
    const r = schema.safeParse(v);
    if (!r.success) for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  });
}

/**
 * An object schema whose parsed value serializes (JSON.stringify) to the object exactly as
 * received, numbers and all: the mapping reads the typed fields, and wherever the parsed
 * entity is written to a `raw` column or hashed, what is written is the payload as sent (the
 * parsed copy would have ids as strings, numbers as text and nulls for absent fields). The
 * typed fields are unchanged; only JSON.stringify sees the difference.
 */
export function serializesAsSent<T extends z.ZodType>(schema: T) {
  return z.unknown().transform((input, ctx): z.output<T> => {
    const r = schema.safeParse(input);
    if (!r.success) {
      for (const issue of r.error.issues) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
      return z.NEVER;
    }
    const out = r.data as unknown;
    if (out !== null && typeof out === 'object') Object.defineProperty(out, 'toJSON', { value: () => input, enumerable: false });
    return out as z.output<T>;
  });
}

/** An optional object: absent or null → null. */
export function nullable<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => v ?? null);
}

/** The key of an unparsed payload's id field (string or number), for quarantine rows; null when there is none. */
export function idTextOf(v: unknown): string | null {
  if (typeof v === 'string') return v === '' ? null : v;
  return numberTextOf(v) ?? null;
}
