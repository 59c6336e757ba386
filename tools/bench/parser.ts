/**
 * Scenario P (parser): the throughput of parseJsonLossless, which reads every webhook body and
 * every provider response, on an ordinary body of booking details responses, against the
 * regular-expression tokenizer it replaced ("before", kept below as a reference) and against
 * plain JSON.parse; then the time each takes to refuse a string that never ends, the body that
 * took the regular expression quadratic time. Runs in this process, in a few seconds.
 */
import { parseJsonLossless } from '../../src/provider/json.js';
import { SimulatorStore } from '../simulator/data.js';
import type { Line } from './report.js';
import { quantile } from './stats.js';

const MB = 1048576;

export const PARSER_DEFAULTS = {
  /** The ordinary body: booking details responses of the simulator, compact, as it serves them. */
  bodyBytes: 6 * MB,
  warmupRuns: 2,
  timedRuns: 7,
  /** The hostile body for the parsers of today: a quote, then `\"` to this length. */
  hostileBytes: MB,
  /** The same for "before": at 1 MB it takes minutes, so it gets two small sizes, whose ratio shows the growth. */
  hostileBytesBefore: [32 * 1024, 64 * 1024],
} as const;

/**
 * REFERENCE ONLY, not product code: parseJsonLossless as it was before the linear scanner (its
 * path for text without an escaped NUL, the only path these bodies take). On a string that
 * never ends, the regular expression scans to the end of the text from every quote: quadratic.
 */
const BEFORE_TOKEN = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const BEFORE_MARK = '\u0000#';
const rawJson = (text: string): unknown => (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(text);

function parseBefore(text: string): unknown {
  const marked = text.replace(BEFORE_TOKEN, (token) => (token.charCodeAt(0) === 34 ? token : `"\\u0000#${token}"`));
  return unmarkBefore(JSON.parse(marked) as unknown);
}

function unmarkBefore(value: unknown): unknown {
  if (typeof value === 'string') return value.startsWith(BEFORE_MARK) ? rawJson(value.slice(BEFORE_MARK.length)) : value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = unmarkBefore(value[i]);
    return value;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const before = record[key];
      const after = unmarkBefore(before);
      if (after === before) continue;
      if (key === '__proto__') Object.defineProperty(record, key, { value: after, enumerable: true, writable: true, configurable: true });
      else record[key] = after;
    }
  }
  return value;
}

export interface ParserBenchResult {
  bodyBytes: number;
  responses: number;
  /** Median MB/s on the ordinary body. */
  throughput: { before: number; after: number; plain: number };
  /** The three give the same values (numbers compared by their text; JSON.parse's floats are not compared). */
  sameAsBefore: boolean;
  /** Milliseconds to refuse the hostile body. */
  hostileMs: { after: number; plain: number; before: { bytes: number; ms: number }[] };
}

export function runParserBench(onProgress: (line: string) => void): ParserBenchResult {
  const { text: body, responses } = ordinaryBody();
  const bodyBytes = Buffer.byteLength(body);
  onProgress(`scenario P: ${responses} booking details responses, ${(bodyBytes / MB).toFixed(1)} MB`);
  const mbPerSecond = (parse: (text: string) => unknown): number => {
    for (let n = 0; n < PARSER_DEFAULTS.warmupRuns; n++) parse(body);
    const ms: number[] = [];
    for (let n = 0; n < PARSER_DEFAULTS.timedRuns; n++) ms.push(elapsedMs(() => parse(body)));
    return bodyBytes / MB / (quantile(ms, 0.5) / 1000);
  };
  const throughput = { before: mbPerSecond(parseBefore), after: mbPerSecond(parseJsonLossless), plain: mbPerSecond(JSON.parse) };
  const sameAsBefore = JSON.stringify(parseJsonLossless(body)) === JSON.stringify(parseBefore(body));

  const refusalMs = (parse: (text: string) => unknown, bytes: number): number => {
    const text = unterminatedString(bytes);
    const start = performance.now();
    try {
      parse(text);
    } catch (err) {
      if (err instanceof SyntaxError) return performance.now() - start;
      throw err;
    }
    throw new Error(`scenario P: a string that never ends (${bytes} bytes) was not refused`);
  };
  onProgress(
    `scenario P: the former parser on strings that never end, ${PARSER_DEFAULTS.hostileBytesBefore.map((b) => `${b / 1024} KB`).join(' and ')} (a few seconds)`,
  );
  const hostileMs = {
    after: refusalMs(parseJsonLossless, PARSER_DEFAULTS.hostileBytes),
    plain: refusalMs(JSON.parse, PARSER_DEFAULTS.hostileBytes),
    before: PARSER_DEFAULTS.hostileBytesBefore.map((bytes) => ({ bytes, ms: refusalMs(parseBefore, bytes) })),
  };
  return { bodyBytes, responses, throughput, sameAsBefore, hostileMs };
}

export function parserLines(r: ParserBenchResult): Line[] {
  const { before, after, plain } = r.throughput;
  const hostileSize = `${PARSER_DEFAULTS.hostileBytes / MB} MB`;
  const [smaller, larger] = [r.hostileMs.before.at(0)!, r.hostileMs.before.at(-1)!];
  const growth = Math.log(larger.ms / smaller.ms) / Math.log(larger.bytes / smaller.bytes);
  // Quadratic: time grows with the square of the size.
  const projectedMs = larger.ms * (PARSER_DEFAULTS.hostileBytes / larger.bytes) ** 2;
  return [
    {
      label: 'before (regex tokenizer)',
      value: `${before.toFixed(1)} MB/s`,
      detail: 'reference: the former parser (copied into tools/bench/parser.ts)',
      goal: '',
      verdict: '',
    },
    {
      label: 'after (parseJsonLossless)',
      value: `${after.toFixed(1)} MB/s`,
      detail: `${(after / before).toFixed(2)} × before`,
      goal: '(goal >= before)',
      verdict: after >= before ? 'PASS' : 'MISS',
    },
    { label: 'JSON.parse', value: `${plain.toFixed(1)} MB/s`, detail: 'for reference: numbers become floats', goal: '', verdict: '' },
    {
      label: 'same values',
      value: r.sameAsBefore ? 'yes' : 'NO',
      detail: 'after and before, numbers compared by their text',
      goal: '(goal yes)',
      verdict: r.sameAsBefore ? 'PASS' : 'MISS',
    },
    {
      label: 'unterminated, after',
      value: ms(r.hostileMs.after),
      detail: `${hostileSize}: a quote, then \\" repeated; refused (SyntaxError)`,
      goal: '(goal < 1 s)',
      verdict: r.hostileMs.after < 1000 ? 'PASS' : 'MISS',
    },
    { label: 'unterminated, JSON.parse', value: ms(r.hostileMs.plain), detail: `${hostileSize}, for reference`, goal: '', verdict: '' },
    ...r.hostileMs.before.map((b): Line => ({ label: 'unterminated, before', value: ms(b.ms), detail: `${b.bytes / 1024} KB only`, goal: '', verdict: '' })),
    {
      label: 'before, growth',
      value: `n^${growth.toFixed(1)}`,
      detail: `time against size, ${smaller.bytes / 1024} to ${larger.bytes / 1024} KB; ${hostileSize} projected at about ${(projectedMs / 60_000).toFixed(0)} min`,
      goal: '',
      verdict: '',
    },
  ];
}

/** Details responses (`{"booking": ...}`) of simulated bookings in an array, up to the body size. */
function ordinaryBody(): { text: string; responses: number } {
  const propertyId = '500100';
  const store = new SimulatorStore({ seed: 11, properties: [{ id: propertyId, bookingCount: 20_000 }], now: () => Date.UTC(2024, 5, 1) });
  const property = store.stores.get(propertyId)!;
  const responses: string[] = [];
  let bytes = 2;
  for (const booking of property.order) {
    if (bytes >= PARSER_DEFAULTS.bodyBytes) break;
    const response = JSON.stringify({ booking: store.details(property, booking) });
    responses.push(response);
    bytes += response.length + 1;
  }
  return { text: `[${responses.join(',')}]`, responses: responses.length };
}

function unterminatedString(bytes: number): string {
  return `"${'\\"'.repeat(Math.floor((bytes - 1) / 2))}`;
}

function elapsedMs(f: () => void): number {
  const start = performance.now();
  f();
  return performance.now() - start;
}

function ms(x: number): string {
  return x < 10 ? `${x.toFixed(1)} ms` : `${Math.round(x)} ms`;
}
