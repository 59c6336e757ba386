/**
 * Payloads generated from the provider's OpenAPI document (the mirrored subset in
 * test/fixtures/openapi), with json-schema-faker.
 *
 * The document is OpenAPI 3.0; json-schema-faker reads JSON Schema. `toJsonSchema` converts
 * one into the other for a generation MODE (how often optional fields are there, whether
 * nullable fields are null, whether enums get values the document does not list), and hands
 * numbers, integers, date-times, times, enums and strings to formats of our own, so that the
 * payloads carry what a real provider may send and a default generator would not:
 * - every number as TEXT (money with four decimals, 17 and more significant digits, exponent
 *   forms), placed in the body with JSON.rawJSON so that the body carries it exactly;
 * - int64 values beyond 2^53, int32 values at the edges of their range;
 * - every date-time form: `T`, `t` or a space; minutes with or without seconds and a fraction
 *   of 1 to 7 digits; no zone, `Z`, `z`, `+03:00`, `-0530`, `+05`;
 * - where the document gives a date or date-time format only in prose (the PMS API's
 *   "in ISO-8601 YYYY-MM-DDThh:mm format"), that format in every form above, and sometimes
 *   other text: the document's type there is a bare string, so any text is valid;
 * - strings with quotes, backslashes, line breaks, non-ASCII letters and emoji;
 * - enum strings the document does not list (the provider adds values).
 * What the document constrains (`required`, `type`, `nullable`, `minLength`, `enum` apart from
 * the open values, `additionalProperties: false`) is kept: every payload is valid against it
 * (see `validate`, which checks that independently of the generator).
 */
import { readFileSync } from 'node:fs';
import { generateSync, type JsonSchema, type Random } from 'json-schema-faker';
import { isJsonNumber, jsonNumber } from '../../src/provider/json.js';

// ---------------------------------------------------------------------------- the document

/** An OpenAPI 3.0 schema object as the document writes it. */
export type OpenApiSchema = { [k: string]: unknown };

export const FIXTURE_URL = new URL('../fixtures/openapi/exely-connect-mirrored.json', import.meta.url);

interface OpenApiDocument {
  paths: Record<string, { get: { responses: { '200': { content: { 'application/json': { schema: OpenApiSchema } } } } } }>;
  components: { schemas: Record<string, OpenApiSchema> };
}

export const document = JSON.parse(readFileSync(FIXTURE_URL, 'utf8')) as OpenApiDocument;

/** The 200 response schema of a mirrored GET operation, by its path in the document. */
export function responseSchema(path: string): OpenApiSchema {
  const op = document.paths[path];
  if (!op) throw new Error(`GET ${path} is not in the fixture`);
  return op.get.responses['200'].content['application/json'].schema;
}

/** The operations the mirror reads, by what the suite calls them. */
export const operations = {
  bookingsPage: '/v1/properties/{propertyId}/bookings',
  booking: '/v1/properties/{propertyId}/bookings/{number}',
  propertyPage: '/v1/properties',
  property: '/v1/properties/{propertyId}',
  cancellationRules: '/v1/properties/{propertyId}/cancellation-rules',
  extraStayRules: '/v1/properties/{propertyId}/extra-stay-rules',
  mealPlans: '/v1/meal-plans',
  roomTypeCategories: '/v1/room-type-categories',
  roomAmenityCategories: '/v1/room-amenity-categories',
  paymentMethods: '/payment-methods',
  propertyAmenityTypes: '/property-amenity-types',
  propertyKinds: '/property-kinds',
  pmsReservation: '/v2/properties/{propertyId}/reservations/{number}',
} as const;
export type Operation = keyof typeof operations;

/** A schema of the operation's response, or a component schema by name. */
export function schemaOf(what: Operation | `#${string}`): OpenApiSchema {
  return what.startsWith('#') ? { $ref: `#/components/schemas/${what.slice(1)}` } : responseSchema(operations[what as Operation]);
}

// ---------------------------------------------------------------------------- modes

export interface Mode {
  name: string;
  /** Probability that an optional property is there (1: always, 0: never). */
  optionals: number;
  /** Nullable values: always null, never null, or either. */
  nulls: 'all' | 'none' | 'some';
  /** Probability that an enum value is one the document does not list. */
  unknownEnums: number;
}

/**
 * The modes payloads cycle through, by seed: every nullable field null (with and without the
 * optional ones), only what is required, everything there and non-null, and mixtures.
 */
export const MODES: readonly Mode[] = [
  { name: 'mixed', optionals: 0.5, nulls: 'some', unknownEnums: 0.15 },
  { name: 'all-null', optionals: 1, nulls: 'all', unknownEnums: 0 },
  { name: 'required-only', optionals: 0, nulls: 'none', unknownEnums: 0 },
  { name: 'full', optionals: 1, nulls: 'none', unknownEnums: 0 },
  { name: 'required-or-null', optionals: 0, nulls: 'all', unknownEnums: 0.5 },
  { name: 'mixed-open-enums', optionals: 0.7, nulls: 'some', unknownEnums: 0.6 },
];

export const modeOf = (seed: number): Mode => MODES[seed % MODES.length]!;

// ---------------------------------------------------------------------------- conversion

const COMPONENT = '#/components/schemas/';
/** Keywords the converter understands; any other one in the document stops the suite (it would be ignored silently otherwise). */
const KNOWN = new Set([
  '$ref',
  'type',
  'format',
  'nullable',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'minLength',
  'allOf',
  'description',
  'example',
]);

/** Generated numbers travel as strings with this prefix until they become JSON.rawJSON values. */
const NUMBER_MARK = '\u0000num:';

interface Converted {
  schema: JsonSchema;
  /** Enum values by the name of the format that generates them. */
  enums: Map<string, readonly string[]>;
}

const cache = new Map<string, Converted>();

/** Converts `root` (with the document's component schemas) for `mode`. */
export function toJsonSchema(root: OpenApiSchema, mode: Mode): Converted {
  const key = `${mode.name}|${JSON.stringify(root)}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const enums = new Map<string, readonly string[]>();
  const enumFormat = (values: readonly string[]): string => {
    const name = `x-enum-${enums.size}`;
    enums.set(name, values);
    return name;
  };
  const nullable = (schema: JsonSchema): JsonSchema =>
    mode.nulls === 'all' ? { type: 'null' } : mode.nulls === 'none' ? schema : { anyOf: [schema, { type: 'null' }] };

  const convert = (s: OpenApiSchema, at: string): JsonSchema => {
    for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw new Error(`${at}: keyword ${k} is not supported by the conformance generator`);
    let out: JsonSchema;
    if (typeof s.$ref === 'string') {
      if (!s.$ref.startsWith(COMPONENT)) throw new Error(`${at}: unsupported $ref ${s.$ref}`);
      out = { $ref: `#/$defs/${s.$ref.slice(COMPONENT.length)}` };
    } else if (Array.isArray(s.allOf)) {
      // The document uses allOf with one $ref to put `nullable` beside a reference.
      if (s.allOf.length !== 1) throw new Error(`${at}: allOf with ${s.allOf.length} schemas is not supported`);
      out = convert(s.allOf[0] as OpenApiSchema, `${at}/allOf/0`);
    } else if (Array.isArray(s.enum)) {
      if (s.type !== 'string' || !s.enum.every((v) => typeof v === 'string')) throw new Error(`${at}: only string enums are supported`);
      out = { type: 'string', format: enumFormat(s.enum) };
    } else {
      switch (s.type) {
        case 'object': {
          const props = (s.properties ?? {}) as Record<string, OpenApiSchema>;
          const required = (s.required ?? []) as string[];
          for (const r of required) if (!(r in props)) throw new Error(`${at}: required property ${r} has no schema`);
          out = {
            type: 'object',
            properties: Object.fromEntries(Object.entries(props).map(([k, v]) => [k, convert(v, `${at}/properties/${k}`)])),
            required,
            // Extra properties are not what this suite is about (the tolerant schemas keep them):
            // the document's `false` is kept, and where it says nothing no extra ones are made.
            additionalProperties: false,
          };
          break;
        }
        case 'array':
          out = { type: 'array', items: convert(s.items as OpenApiSchema, `${at}/items`) };
          break;
        case 'string': {
          const min = typeof s.minLength === 'number' ? s.minLength : 0;
          if (min > 1) throw new Error(`${at}: minLength ${min} is not supported`);
          if (s.format !== undefined && s.format !== 'date-time' && s.format !== 'time')
            throw new Error(`${at}: string format ${JSON.stringify(s.format)} is not supported`);
          // Some strings give their format in prose only (the PMS API: "in ISO-8601 YYYY-MM-DDThh:mm format").
          const prose = typeof s.description === 'string' ? s.description : '';
          const format =
            s.format === 'date-time'
              ? 'x-date-time'
              : /YYYY-MM-DDThh:mm/.test(prose)
                ? 'x-prose-date-time'
                : /YYYY-MM-DD\b/.test(prose)
                  ? 'x-prose-date'
                  : s.format === 'time'
                    ? 'x-time'
                    : min === 1
                      ? 'x-text-nonempty'
                      : 'x-text';
          out = { type: 'string', format };
          break;
        }
        case 'number':
          out = { type: 'string', format: 'x-number' };
          break;
        case 'integer':
          out = { type: 'string', format: s.format === 'int64' ? 'x-int64' : 'x-int32' };
          break;
        case 'boolean':
          out = { type: 'boolean' };
          break;
        default:
          throw new Error(`${at}: type ${String(s.type)} is not supported`);
      }
    }
    return s.nullable === true ? nullable(out) : out;
  };

  // Only the schemas the root reaches: the generator resolves every definition it is given.
  const $defs: Record<string, JsonSchema> = {};
  const reach = (s: unknown): void => {
    if (Array.isArray(s)) return s.forEach(reach);
    if (s === null || typeof s !== 'object') return;
    for (const [k, v] of Object.entries(s)) {
      if (k === '$ref' && typeof v === 'string') {
        const name = v.slice(COMPONENT.length);
        if (name in $defs) continue;
        const target = document.components.schemas[name];
        if (!target) throw new Error(`unknown $ref ${v}`);
        $defs[name] = convert(target, v);
        reach(target);
      } else reach(v);
    }
  };
  reach(root);
  const converted: Converted = { schema: { $defs, ...(convert(root, '#') as object) }, enums };
  cache.set(key, converted);
  return converted;
}

// ---------------------------------------------------------------------------- values

const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const digits = (r: Random, n: number) => Array.from({ length: n }, () => String(r.int(0, 9))).join('');
const nonZeroDigits = (r: Random, n: number) => String(r.int(1, 9)) + digits(r, n - 1);

/** A JSON number's text, in the forms a provider's serializer may write. */
export function numberText(r: Random): string {
  const sign = r.bool(0.15) ? '-' : '';
  switch (r.int(0, 9)) {
    case 0:
      return String(r.int(0, 100_000));
    case 1: // money with four decimals, .NET decimal style (28.0000)
      return `${sign}${r.int(0, 99_999)}.${r.bool(0.5) ? '0000' : digits(r, 4)}`;
    case 2:
      return `${sign}${r.int(0, 9_999)}.${digits(r, 2)}`;
    case 3: {
      // 17 significant digits, the decimal point anywhere among them
      const all = nonZeroDigits(r, 17);
      const point = r.int(1, 17);
      return point === 17 ? `${sign}${all}` : `${sign}${all.slice(0, point)}.${all.slice(point)}`;
    }
    case 4: // more digits than a double holds
      return `${sign}${nonZeroDigits(r, 17)}.${digits(r, 2)}`;
    case 5: {
      // exponent forms
      const mantissa = r.bool(0.5) ? String(r.int(1, 9)) : `${r.int(1, 9)}.${digits(r, r.int(1, 3))}`;
      const e = r.pick(['e', 'E']);
      const exp = r.pick(['', '+', '-']) + String(r.int(0, 12));
      return `${sign}${mantissa}${e}${exp}`;
    }
    case 6:
      return `${sign}0.${'0'.repeat(r.int(0, 8))}${nonZeroDigits(r, r.int(1, 4))}`;
    case 7:
      return r.pick(['0', '0.0', '0.00', '1', '100', '0.1', '-0.01']);
    default:
      return `${r.int(0, 9_999)}.${digits(r, r.int(1, 6))}`;
  }
}

const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };

export function int32Text(r: Random): string {
  switch (r.int(0, 5)) {
    case 0:
      return String(r.pick([0, 1, -1, INT32.max, INT32.min]));
    case 1:
      return String(r.int(INT32.min, INT32.max));
    default:
      return String(r.int(0, 500));
  }
}

export function int64Text(r: Random): string {
  switch (r.int(0, 4)) {
    case 0:
      return r.pick(['9007199254740993', '9223372036854775807', '-9223372036854775808', '18014398509481985', '0']);
    case 1:
      // 16 to 19 digits, below 2^63
      return `${r.bool(0.2) ? '-' : ''}${r.int(1, 8)}${digits(r, r.int(15, 18))}`;
    default:
      return String(r.int(0, 10_000));
  }
}

/** A date-time in one of the forms RFC 3339 / ISO 8601 writers produce. */
export function dateTimeText(r: Random): string {
  // .NET's DateTime.MinValue and MaxValue, as a provider sends for "no date".
  if (r.bool(0.03)) return r.pick(['0001-01-01T00:00:00', '0001-01-01T00:00:00Z', '9999-12-31T23:59:59', '9999-12-31T23:59:59.9999999']);
  const year = r.bool(0.05) ? r.pick([1970, 2000, 2038]) : r.int(2009, 2035);
  const month = r.int(1, 12);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!;
  const date = `${year}-${pad(month)}-${pad(r.int(1, days))}`;
  const sep = r.pick(['T', 'T', 'T', ' ', 't']);
  let time = `${pad(r.int(0, 23))}:${pad(r.int(0, 59))}`;
  const precision = r.int(0, 3);
  if (precision >= 1) time += `:${pad(r.int(0, 59))}`;
  if (precision >= 2) time += `.${digits(r, precision === 2 ? r.pick([1, 3, 6, 7]) : r.int(1, 7))}`;
  const zone = r.pick(['', '', 'Z', 'z', '+03:00', '-05:30', '-0530', '+0100', '+05', '+00:00', '+14:00', '-12:00']);
  return `${date}${sep}${time}${zone}`;
}

/**
 * Texts that are not an ISO-8601 date-time: dates as other serializers write them, a date
 * alone, ISO's basic form, dates and times that do not exist, and plain words.
 */
export const NOT_ISO_DATE_TIMES = [
  '11.07.2024 13:15',
  '07/11/2024 1:15 PM',
  'Thu, 11 Jul 2024 13:15:18 GMT',
  '/Date(1720703718000)/',
  '20240711T131518Z',
  '2024-07-11',
  '2024-02-30T10:00:00Z',
  '2024-07-11T25:00',
  '2024-07-11T13:15:60Z',
  '0000-01-01T00:00:00',
  'unknown',
  '',
] as const;

/** How often a string whose format only the document's prose gives is some other text. */
const PROSE_FORMAT_BROKEN = 0.25;

/** A string the document describes as a date-time in prose only: mostly one, sometimes not. */
function proseDateTimeText(r: Random, dateOnly: boolean): string {
  if (!r.bool(PROSE_FORMAT_BROKEN)) return dateOnly ? dateTimeText(r).slice(0, 10) : dateTimeText(r);
  return r.bool(0.6) ? r.pick(NOT_ISO_DATE_TIMES) : text(r, false);
}

export function timeText(r: Random): string {
  const hm = `${pad(r.int(0, 23))}:${pad(r.int(0, 59))}`;
  return r.pick([hm, `${hm}:00`, `${hm}:${pad(r.int(0, 59))}`, `${hm}:00.000`, `${hm}:00+03:00`]);
}

const TEXTS = [
  'Deluxe Double',
  'Standard Twin Room',
  'Ünïcödé — «Grand Hôtel» Zürich',
  'Гостиница «Северная»',
  '日本語の部屋',
  'emoji 🏨🛏️',
  'quote " and \\ backslash',
  "O'Brien",
  'line\nbreak\r\nand\ttab',
  '  padded  ',
  '<b>html</b> &amp;',
  "'; DROP TABLE bookings; --",
  'null',
  'true',
  '0001',
  '1e5',
  'a',
  'x'.repeat(300),
];

export function text(r: Random, nonEmpty: boolean): string {
  if (!nonEmpty && r.bool(0.08)) return '';
  if (r.bool(0.4)) return r.pick(TEXTS);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_ ';
  const n = r.int(1, 24);
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[r.int(0, alphabet.length - 1)];
  return s;
}

/** A value the enum does not list: what the provider sends after adding a status or method. */
const unknownEnum = (r: Random) => r.pick(['FutureValue', 'Pending', 'unknown', 'NEW_VALUE_2030', 'Ähnlich']);

// ---------------------------------------------------------------------------- generation

export interface Payload {
  seed: number;
  mode: Mode;
  /** The payload: numbers are JSON.rawJSON values carrying their text. */
  value: any;
  /** The body as the provider sends it. */
  body: string;
}

/** Turns the generator's number marks into JSON.rawJSON values (in place where possible). */
function materialize(v: unknown): unknown {
  if (typeof v === 'string') return v.startsWith(NUMBER_MARK) ? jsonNumber(v.slice(NUMBER_MARK.length)) : v;
  if (Array.isArray(v)) return v.map(materialize);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, materialize(x)]));
  return v;
}

/** One payload of `what`, deterministic for its seed. */
export function generate(what: Operation | `#${string}`, seed: number, mode: Mode = modeOf(seed)): Payload {
  const { schema, enums } = toJsonSchema(schemaOf(what), mode);
  const formats: Record<string, (r: Random) => string> = {
    'x-number': (r) => NUMBER_MARK + numberText(r),
    'x-int32': (r) => NUMBER_MARK + int32Text(r),
    'x-int64': (r) => NUMBER_MARK + int64Text(r),
    'x-date-time': dateTimeText,
    'x-prose-date-time': (r) => proseDateTimeText(r, false),
    'x-prose-date': (r) => proseDateTimeText(r, true),
    'x-time': timeText,
    'x-text': (r) => text(r, false),
    'x-text-nonempty': (r) => text(r, true),
  };
  for (const [name, values] of enums) formats[name] = (r) => (mode.unknownEnums > 0 && r.bool(mode.unknownEnums) ? unknownEnum(r) : r.pick(values));
  const raw = generateSync(schema, {
    seed,
    formats,
    maxDefaultItems: 3,
    maxDepth: 40,
    ...(mode.optionals >= 1 ? { alwaysFakeOptionals: true } : { optionalsProbability: mode.optionals }),
  });
  const value = materialize(raw);
  return { seed, mode, value, body: JSON.stringify(value) };
}

/** `count` payloads of `what`, seeds `firstSeed`, `firstSeed + 1`, ... */
export function generateMany(what: Operation | `#${string}`, count: number, firstSeed = 1): Payload[] {
  return Array.from({ length: count }, (_, i) => generate(what, firstSeed + i));
}

/** Re-serializes a payload after the suite changed it (a unique key, a page link). */
export function withValue(p: Payload, value: unknown): Payload {
  return { ...p, value, body: JSON.stringify(value) };
}

// ---------------------------------------------------------------------------- validation

/**
 * Checks `value` against an OpenAPI schema of the document, with the enums closed or open:
 * the independent check that the generated payloads are what the document allows. Returns
 * the problems, each with its path (none: valid).
 */
export function validate(schema: OpenApiSchema, value: unknown, opts: { openEnums: boolean } = { openEnums: true }, at = '$'): string[] {
  if (value === null) return schema.nullable === true ? [] : [`${at}: null where the document does not allow it`];
  if (typeof schema.$ref === 'string') {
    const target = document.components.schemas[schema.$ref.slice(COMPONENT.length)];
    if (!target) return [`${at}: unknown $ref ${schema.$ref}`];
    return validate(target, value, opts, at);
  }
  if (Array.isArray(schema.allOf)) return (schema.allOf as OpenApiSchema[]).flatMap((s) => validate(s, value, opts, at));
  if (Array.isArray(schema.enum)) {
    if (typeof value !== 'string') return [`${at}: expected an enum string`];
    return opts.openEnums || schema.enum.includes(value) ? [] : [`${at}: ${value} is not one of ${schema.enum.join(', ')}`];
  }
  switch (schema.type) {
    case 'object': {
      if (value === undefined || typeof value !== 'object' || Array.isArray(value) || isJsonNumber(value)) return [`${at}: expected an object`];
      const props = (schema.properties ?? {}) as Record<string, OpenApiSchema>;
      const o = value as Record<string, unknown>;
      const problems = ((schema.required ?? []) as string[]).filter((k) => !(k in o)).map((k) => `${at}.${k}: required but absent`);
      for (const [k, v] of Object.entries(o)) {
        const p = props[k];
        if (p) problems.push(...validate(p, v, opts, `${at}.${k}`));
        else if (schema.additionalProperties === false) problems.push(`${at}.${k}: not in the document`);
      }
      return problems;
    }
    case 'array':
      return Array.isArray(value) ? value.flatMap((v, i) => validate(schema.items as OpenApiSchema, v, opts, `${at}[${i}]`)) : [`${at}: expected an array`];
    case 'string': {
      if (typeof value !== 'string') return [`${at}: expected a string`];
      // JSON Schema counts code points, not UTF-16 units: the spread splits a string into code points.
      // oxlint-disable-next-line typescript/no-misused-spread
      if (typeof schema.minLength === 'number' && [...value].length < schema.minLength) return [`${at}: shorter than ${schema.minLength}`];
      if (schema.format === 'date-time' && !/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}(:?\d{2})?)?$/.test(value))
        return [`${at}: not a date-time: ${value}`];
      return [];
    }
    case 'number':
    case 'integer': {
      const t = isJsonNumber(value) ? value.rawJSON : typeof value === 'number' ? String(value) : undefined;
      if (t === undefined) return [`${at}: expected a number`];
      if (schema.type === 'integer') {
        if (!/^-?\d+$/.test(t)) return [`${at}: not an integer: ${t}`];
        const n = BigInt(t);
        const [lo, hi] = schema.format === 'int64' ? [-(2n ** 63n), 2n ** 63n - 1n] : [-(2n ** 31n), 2n ** 31n - 1n];
        if (n < lo || n > hi) return [`${at}: ${t} is out of the ${String(schema.format)} range`];
      }
      return [];
    }
    case 'boolean':
      return typeof value === 'boolean' ? [] : [`${at}: expected a boolean`];
    default:
      return [`${at}: type ${String(schema.type)} is not checked`];
  }
}
