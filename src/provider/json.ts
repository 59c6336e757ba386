/**
 * Lossless JSON: provider bodies are parsed so that every number keeps the text it was sent
 * as. `JSON.parse` alone goes through a float: `28.0000` would become 28 and a 17-digit amount
 * would be rounded. Here each number becomes a raw JSON value (`JSON.rawJSON(source)`) that
 * carries its source text; `JSON.stringify` writes it back verbatim, so `raw` columns and the
 * quarantine hold the numbers as sent, and the schemas hand the same text to numeric columns.
 * (JSON.rawJSON and the reviver's source access need Node.js 22 or later.)
 */
import { MAX_JSON_DEPTH } from '../util/json-syntax.js';

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
 *
 * Every body of a webhook or a provider response comes through here, so the work is linear in
 * the text whatever it holds: an unterminated string is refused as soon as the scan reaches
 * the end, and arrays and objects nested deeper than MAX_JSON_DEPTH are refused, so that no
 * recursive reader downstream (the reviver, the schemas) can run out of stack.
 */
export function parseJsonLossless(text: string): unknown {
  // The scan's checks (strings, numbers, depth) hold for the reviver's path too.
  const marked = markNumbers(text);
  if (text.includes('\\u0000')) return parseWithReviver(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(marked);
  } catch (err) {
    // The message should name positions and excerpts of the text as sent, not of the marked one.
    JSON.parse(text);
    throw err;
  }
  return unmark(parsed);
}

/**
 * The text with every number token outside strings written as a marked string. One pass,
 * linear: a string's end is found with indexOf, and a quote closes it when an even number
 * of backslashes precedes it (each run of backslashes is counted once, for the quote it
 * precedes). Structure and literals are left to JSON.parse; only what the scan itself must
 * get right is checked here.
 */
function markNumbers(text: string): string {
  let marked = '';
  /** `text` before this index is in `marked`. */
  let copied = 0;
  let depth = 0;
  for (let i = 0; i < text.length;) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i) + 1;
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39) /* 0-9 */) {
      const end = numberEnd(text, i);
      marked += `${text.slice(copied, i)}"\\u0000#${text.slice(i, end)}"`;
      copied = i = end;
    } else {
      if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
        if (++depth > MAX_JSON_DEPTH)
          throw new SyntaxError(`JSON nested too deeply: more than ${MAX_JSON_DEPTH} levels of arrays and objects at position ${i}`);
      } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
        depth--;
      }
      i++;
    }
  }
  return marked + text.slice(copied);
}

/** Index of the quote that closes the string opened at `open`. */
function stringEnd(text: string, open: number): number {
  for (let close = text.indexOf('"', open + 1); close !== -1; close = text.indexOf('"', close + 1)) {
    // The opening quote stops the count: it is not a backslash.
    let backslashes = 0;
    while (text.charCodeAt(close - 1 - backslashes) === 0x5c /* \ */) backslashes++;
    if (backslashes % 2 === 0) return close;
  }
  throw new SyntaxError(`Unterminated string in JSON at position ${open}`);
}

/**
 * End of the number token starting at `start`, after checking it against the JSON grammar.
 * A zero ends the integer part: the digits after a leading zero are a token of their own,
 * which JSON.parse then refuses.
 */
function numberEnd(text: string, start: number): number {
  let i = start;
  if (text.charCodeAt(i) === 0x2d /* - */) i++;
  let from = i;
  i = text.charCodeAt(i) === 0x30 /* 0 */ ? i + 1 : digitsEnd(text, i);
  if (i === from) throw new SyntaxError(`No number after minus sign in JSON at position ${i}`);
  if (text.charCodeAt(i) === 0x2e /* . */) {
    from = ++i;
    i = digitsEnd(text, i);
    if (i === from) throw new SyntaxError(`Unterminated fractional number in JSON at position ${i}`);
  }
  if ((text.charCodeAt(i) | 0x20) === 0x65 /* e or E */) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === 0x2b /* + */ || sign === 0x2d /* - */) i++;
    from = i;
    i = digitsEnd(text, i);
    if (i === from) throw new SyntaxError(`Exponent part is missing a number in JSON at position ${i}`);
  }
  return i;
}

function digitsEnd(text: string, start: number): number {
  let i = start;
  for (let c = text.charCodeAt(i); c >= 0x30 && c <= 0x39 /* 0-9 */; c = text.charCodeAt(++i));
  return i;
}

/** Turns the marked strings of a parsed value into JsonNumbers, in place; a loop over a stack of containers, not a recursion. */
function unmark(root: unknown): unknown {
  if (isMarked(root)) return toNumber(root);
  const containers: object[] = [];
  if (root !== null && typeof root === 'object') containers.push(root);
  for (let container = containers.pop(); container !== undefined; container = containers.pop()) {
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const value: unknown = container[i];
        if (isMarked(value)) container[i] = toNumber(value);
        else if (value !== null && typeof value === 'object') containers.push(value);
      }
      continue;
    }
    const record = container as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const value = record[key];
      // Every key is an own data property (JSON.parse defines them), `__proto__` included: the
      // assignment writes that property, never the prototype.
      if (isMarked(value)) record[key] = toNumber(value);
      else if (value !== null && typeof value === 'object') containers.push(value);
    }
  }
  return root;
}

function isMarked(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(MARK);
}

function toNumber(marked: string): JsonNumber {
  return api.rawJSON(marked.slice(MARK.length));
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

/**
 * JSON text of a parsed value with every object's keys in sorted order and numbers as sent:
 * the same text for the same content whatever order the keys came in, so a payload as the
 * provider sent it and as PostgreSQL stores it (jsonb orders keys its own way) give one text.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object' || api.isRawJSON(value)) return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .flatMap((k) => {
      const v = (value as Record<string, unknown>)[k];
      return v === undefined ? [] : [`${JSON.stringify(k)}:${canonicalJson(v)}`];
    });
  return `{${entries.join(',')}}`;
}
