/**
 * Building blocks of the tolerant provider schemas (see schemas.ts for the rules they follow):
 * ids as number or string, numbers, dates with or without time, optional objects and arrays.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------- primitives

/** An id sent as number or string, kept as string. */
export const id = z
  .union([z.string().min(1), z.number().int()], { error: 'expected an id (non-empty string or integer)' })
  .transform((v) => String(v));

/** A JSON number; numeric strings are accepted too (tolerance), anything else is not. */
export const num = z.union([z.number(), z.string().regex(/^-?\d+(\.\d+)?$/).transform(Number)], {
  error: 'expected a number',
});

export const optString = z.string().nullish().transform((v) => v ?? null);
export const optNum = num.nullish().transform((v) => v ?? null);
export const optId = id.nullish().transform((v) => v ?? null);

export function isRealDate(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

export const dateRe = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** A calendar date, with or without a time part: `2024-03-27` and `2024-03-27T00:00:00` → `2024-03-27`. */
export const dateOnly = z.string().transform((s, ctx) => {
  const m = dateRe.exec(s);
  if (!m || !isRealDate(Number(m[1]), Number(m[2]), Number(m[3]))) {
    ctx.addIssue({ code: 'custom', message: `expected a date YYYY-MM-DD, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return s.slice(0, 10);
});

/** Property-local date-time without zone, `YYYY-MM-DDTHH:mm` (optionally with seconds), kept as sent. */
export const localDateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/, 'expected a property-local date-time YYYY-MM-DDTHH:mm');

export const instantRe = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A UTC instant, kept as sent (`2024-03-27T11:41:04Z`). One without a zone designator is
 * read as UTC (the provider documents these fields as UTC) and gets a `Z` appended.
 */
export const utcDateTime = z.string().transform((s, ctx) => {
  if (!instantRe.test(s) || Number.isNaN(Date.parse(s))) {
    ctx.addIssue({ code: 'custom', message: `expected a UTC date-time like 2024-03-27T11:41:04Z, got ${JSON.stringify(s)}` });
    return z.NEVER;
  }
  return /(Z|[+-]\d{2}:?\d{2})$/i.test(s) ? s : `${s}Z`;
});
export const optUtcDateTime = utcDateTime.nullish().transform((v) => v ?? null);

/** An optional array: absent or null → []. */
export function list<T extends z.ZodType>(item: T) {
  return z.array(item).nullish().transform((v) => v ?? []);
}
/** An optional object: absent or null → null. */
export function nullable<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v) => v ?? null);
}

