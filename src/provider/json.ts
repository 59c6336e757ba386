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

/** Parses JSON text; numbers become JsonNumber values carrying their source text. */
export function parseJsonLossless(text: string): unknown {
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
