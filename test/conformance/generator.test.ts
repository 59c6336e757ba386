/**
 * The generator the conformance suite relies on: its payloads are what the OpenAPI document
 * allows (checked by a validator of the suite's own), they are the same for the same seed,
 * and together they carry what the suite claims to test: nulls, absent optional fields,
 * every date-time form, money with four decimals and 17+ significant digits, int64 values
 * beyond 2^53 and enum values the document does not list.
 */
import { describe, expect, it } from 'vitest';
import { isJsonNumber, parseJsonLossless } from '../../src/provider/json.js';
import { document, generate, generateMany, operations, schemaOf, validate, type Operation } from './generator.js';

type Any = any;

/** Every value in a payload, with its key. */
function* walk(v: unknown, key = ''): Generator<[string, unknown]> {
  yield [key, v];
  if (isJsonNumber(v)) return;
  if (Array.isArray(v)) for (const x of v) yield* walk(x, key);
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) yield* walk(x, k);
}

describe('conformance generator', () => {
  it('makes payloads the document allows, the same for the same seed', () => {
    const problems: string[] = [];
    for (const op of Object.keys(operations) as Operation[]) {
      for (const p of generateMany(op, 40, 7)) {
        const issues = validate(schemaOf(op), p.value, { openEnums: p.mode.unknownEnums > 0 });
        if (issues.length > 0) problems.push(`${op} seed ${p.seed} (${p.mode.name}): ${issues.slice(0, 3).join('; ')}`);
      }
    }
    expect(problems).toEqual([]);
    expect(generate('booking', 42).body).toBe(generate('booking', 42).body);
    expect(generate('booking', 42).body).not.toBe(generate('booking', 43).body);
  });

  it('the validator rejects what the document does not allow', () => {
    const b = generate('booking', 3).value; // a full payload
    expect(validate(schemaOf('booking'), b)).toEqual([]);
    const broken: Any = parseJsonLossless(generate('booking', 3).body);
    delete broken.booking.number;
    broken.booking.roomStays = null;
    broken.booking.currencyCode = '';
    broken.booking.extra = 1;
    expect(validate(schemaOf('booking'), broken).sort()).toEqual([
      '$.booking.currencyCode: shorter than 1',
      '$.booking.extra: not in the document',
      '$.booking.number: required but absent',
      '$.booking.roomStays: null where the document does not allow it',
    ]);
    expect(validate(schemaOf('booking'), { booking: { ...b.booking, status: 'Someday' } }, { openEnums: false })).toEqual([
      '$.booking.status: Someday is not one of Active, Cancelled, Unconfirmed',
    ]);
  });

  it('covers nulls, absent optional fields, every date-time form, exact money, big integers and open enums', () => {
    const dateTimes: string[] = [];
    const numbers: string[] = [];
    const statuses = new Set<string>();
    let nulls = 0;
    let withoutCustomer = 0;
    const ops: Operation[] = ['booking', 'bookingsPage', 'propertyPage', 'cancellationRules', 'extraStayRules'];
    for (const op of ops) {
      for (const p of generateMany(op, 80, 11)) {
        if (op === 'booking') {
          statuses.add(p.value.booking.status);
          if (!('customer' in p.value.booking)) withoutCustomer += 1;
        }
        for (const [, v] of walk(p.value)) {
          if (v === null) nulls += 1;
          else if (isJsonNumber(v)) numbers.push(v.rawJSON);
          else if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}/.test(v)) dateTimes.push(v);
        }
      }
    }
    expect(nulls).toBeGreaterThan(100);
    expect(withoutCustomer).toBeGreaterThan(10);
    const forms: Record<string, RegExp> = {
      'T, seconds, no zone': /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/,
      'no seconds': /^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d(?:[Zz+-]|$)/,
      'space instead of T': /^\d{4}-\d\d-\d\d \d\d:/,
      'lower-case t': /^\d{4}-\d\d-\d\dt\d\d:/,
      'fraction of 7 digits': /:\d\d\.\d{7}(?:[Zz+-]|$)/,
      Z: /Z$/,
      '+03:00': /\+03:00$/,
      '-0530': /-0530$/,
      '+05': /\+05$/,
      'year 0001': /^0001-/,
    };
    for (const [name, re] of Object.entries(forms)) expect(dateTimes.filter((d) => re.test(d)).length, name).toBeGreaterThan(0);
    const kinds: Record<string, (t: string) => boolean> = {
      'four decimals': (t) => /^-?\d+\.\d{4}$/.test(t),
      'four zero decimals (28.0000)': (t) => /^-?\d+\.0000$/.test(t),
      '17 significant digits': (t) => t.replace(/^-?0*\.?0*/, '').replace('.', '').length === 17 && !/e/i.test(t),
      'more than 17 significant digits': (t) => /^-?\d+\.\d+$/.test(t) && t.replace(/^-?0*\.?0*/, '').replace('.', '').length > 17,
      exponent: (t) => /e/i.test(t),
      'int64 beyond 2^53': (t) => /^-?\d+$/.test(t) && (BigInt(t) > 2n ** 53n || BigInt(t) < -(2n ** 53n)),
    };
    for (const [name, test] of Object.entries(kinds)) expect(numbers.filter(test).length, name).toBeGreaterThan(0);
    const documented = document.components.schemas.ReservationApi_BookingStatus!.enum as string[];
    expect([...statuses].some((s) => !documented.includes(s))).toBe(true);
    expect(documented.every((s) => statuses.has(s))).toBe(true);
  });
});
