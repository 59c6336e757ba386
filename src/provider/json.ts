/**
 * Lossless JSON: provider bodies are parsed so that every number keeps the text it was sent
 * as. `JSON.parse` alone goes through a float: `28.0000` would become 28 and a 17-digit amount
 * would be rounded. Here each number becomes a raw JSON value (`JSON.rawJSON(source)`) that
 * carries its source text; `JSON.stringify` writes it back verbatim, so `raw` columns and the
 * quarantine hold the numbers as sent, and the schemas hand the same text to numeric columns.
 * (JSON.rawJSON and the reviver's source access need Node.js 22 or later.)
 */

/** A number as sent by the provider: a frozen object whose `rawJSON` is the number's text. */
export interface JsonNumber {
  readonly rawJSON: string;
}

interface RawJsonApi {
  rawJSON(text: string): JsonNumber;
  isRawJSON(value: unknown): value is JsonNumber;
}
const api = JSON as unknown as JSON & RawJsonApi;

/** False on a Node.js too old for lossless parsing (checked once at start, with a sentence). */
export const losslessJsonSupported = typeof api.rawJSON === 'function' && typeof api.isRawJSON === 'function';

/**
 * A string or a number token of JSON text. Strings are matched whole, so that digits inside
 * them are never taken for numbers.
 */
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** Numbers are first carried as strings with this prefix (`\u0000#`); see parseJsonLossless. */
const MARK = '\u0000#';

/**
 * Parses JSON text; numbers become JsonNumber values carrying their source text.
 *
 * A reviver with source access calls back for every value and is about twice as slow as
 * this: each number token is rewritten into a string with a prefix no provider string has
 * (it starts with a NUL character), the native parser reads the result, and a walk turns the
 * marked strings into JsonNumbers. Text that does contain an escaped NUL (`\u0000`), which
 * could spell the prefix, takes the reviver, which is exact in every case.
 */
export function parseJsonLossless(text: string): unknown {
  if (text.includes('\\u0000')) return parseWithReviver(text);
  const marked = text.replace(TOKEN, (token) => (token.charCodeAt(0) === 34 ? token : `"\\u0000#${token}"`));
  return unmark(JSON.parse(marked) as unknown);
}

function unmark(value: unknown): unknown {
  if (typeof value === 'string') return value.startsWith(MARK) ? api.rawJSON(value.slice(MARK.length)) : value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unmark(value[i]);
    return value;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const before = record[key];
      const after = unmark(before);
      if (after === before) continue;
      // JSON.parse makes `__proto__` an own property; a plain assignment would set the prototype.
      if (key === '__proto__') Object.defineProperty(record, key, { value: after, enumerable: true, writable: true, configurable: true });
      else record[key] = after;
    }
  }
  return value;
}

function parseWithReviver(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && context?.source !== undefined ? api.rawJSON(context.source) : value,
  );
}

export function isJsonNumber(value: unknown): value is JsonNumber {
  return value !== null && typeof value === 'object' && api.isRawJSON(value);
}

/** Wraps a number's text as a JsonNumber (tests and the simulator's generators build exact bodies with it). */
export function jsonNumber(text: string): JsonNumber {
  return api.rawJSON(text);
}
