/**
 * Lossless JSON parsing: numbers keep their text, strings and structure are those of JSON.parse,
 * whichever of the two paths (marked tokens, or the reviver for text with an escaped NUL) runs.
 */
import { describe, expect, it } from 'vitest';
import { canonicalJson, isJsonNumber, parseJsonLossless } from '../../src/provider/json.js';
import { mulberry32, type Rng } from '../../tools/simulator/random.js';
import { MAX_JSON_DEPTH } from '../../src/util/json-syntax.js';

const roundTrip = (text: string) => JSON.stringify(parseJsonLossless(text));

describe('parseJsonLossless', () => {
  it('keeps every number as sent: scale, 17 significant digits, exponents, integers beyond 2^53', () => {
    const text = '{"a":28.0000,"b":12345678901234567.25,"c":-1.5E+3,"d":9007199254740993,"e":[0,-0,1e-7],"f":0.0}';
    expect(roundTrip(text)).toBe(text);
    const v = parseJsonLossless(text) as Record<string, unknown>;
    expect(isJsonNumber(v.a)).toBe(true);
    expect((v.a as { rawJSON: string }).rawJSON).toBe('28.0000');
  });

  it('leaves digits inside strings alone, escapes included', () => {
    const text = '{"n":"12.50","q":"say \\"7\\" twice: 1,2","k":{"10":"x"},"u":"\\u00e9 3"}';
    expect(parseJsonLossless(text)).toEqual(JSON.parse(text));
  });

  it('reads text with an escaped NUL exactly (a string may then not be taken for a number)', () => {
    const text = '{"s":"\\u0000#5","n":5.50}';
    const v = parseJsonLossless(text) as Record<string, unknown>;
    expect(v.s).toBe('\u0000#5');
    expect((v.n as { rawJSON: string }).rawJSON).toBe('5.50');
  });

  it('keeps a __proto__ key as data, not as the prototype', () => {
    const v = parseJsonLossless('{"__proto__":7.0,"x":1}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__', 'x']);
    expect(JSON.stringify(v)).toBe('{"__proto__":7.0,"x":1}');
  });

  it('refuses what is not JSON, as JSON.parse does', () => {
    for (const bad of ['{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":+1}', '{"a":1', '<html>', '{"a":NaN}']) {
      expect(() => parseJsonLossless(bad), bad).toThrow(SyntaxError);
    }
  });
});

describe('parseJsonLossless on hostile bodies', () => {
  const MB = 1 << 20;
  /** The time one call takes, and what it threw (undefined when it returned). */
  const timed = (text: string): { ms: number; thrown: unknown } => {
    const start = performance.now();
    let thrown: unknown;
    try {
      parseJsonLossless(text);
    } catch (err) {
      thrown = err;
    }
    return { ms: performance.now() - start, thrown };
  };

  // The bound guards against a hang (the former regular expression took about 11 minutes on
  // the first of these); it is no claim about speed.
  it.each([
    ['a string that never ends: " then \\" repeated', '"' + '\\"'.repeat(MB / 2)],
    ['a string that never ends: " then a run of backslashes', '"' + '\\'.repeat(MB)],
    ['runs of backslashes, each before a quote it escapes', `["${'\\\\\\\\\\\\\\"'.repeat(MB / 8)}`],
    ['quotes only', '"'.repeat(MB + 1)],
    ['quotes alternating with escaped quotes', '"\\"'.repeat(MB / 3)],
    ['brackets only', '['.repeat(MB)],
    ['objects opening without end', '{"a":'.repeat(MB / 5)],
    ['a minus sign repeated', '-'.repeat(MB)],
  ])('refuses %s (1 MB) with a SyntaxError in well under a second', (_name, text) => {
    const { ms, thrown } = timed(text);
    expect(thrown).toBeInstanceOf(SyntaxError);
    expect(ms).toBeLessThan(1000);
  });

  it.each([
    ['a 1 MB number', '1'.repeat(MB)],
    ['a string of escaped backslashes', `"${'\\\\'.repeat(MB / 2)}"`],
    ['a huge number of tiny strings', `[${'"",'.repeat(MB / 3)}"x"]`],
    ['a huge number of tiny numbers', `[${'1,'.repeat(MB / 8)}0]`],
  ])('reads %s in well under a second', (_name, text) => {
    const { ms, thrown } = timed(text);
    expect(thrown).toBeUndefined();
    expect(ms).toBeLessThan(1000);
  });

  it('refuses a string left open at once, with the position of its opening quote', () => {
    expect(() => parseJsonLossless('{"a":"x\\"}')).toThrow(/Unterminated string in JSON at position 5/);
  });

  it(`reads ${MAX_JSON_DEPTH} levels of arrays and objects and refuses one more, on either path`, () => {
    const nested = (levels: number, inner: string) => '[{"a":'.repeat(levels / 2) + inner + '}]'.repeat(levels / 2);
    expect(JSON.stringify(parseJsonLossless(nested(MAX_JSON_DEPTH, '1.0')))).toBe(nested(MAX_JSON_DEPTH, '1.0'));
    expect(() => parseJsonLossless(`[${nested(MAX_JSON_DEPTH, '1.0')}]`)).toThrow(/nested too deeply/);
    // An escaped NUL takes the reviver, which recurses too.
    expect(JSON.stringify(parseJsonLossless(nested(MAX_JSON_DEPTH, '"\\u0000"')))).toBe(nested(MAX_JSON_DEPTH, '"\\u0000"'));
    expect(() => parseJsonLossless(`[${nested(MAX_JSON_DEPTH, '"\\u0000"')}]`)).toThrow(/nested too deeply/);
  });

  it('refuses 200,000 levels of nesting with a SyntaxError, not a RangeError', () => {
    const levels = 200_000;
    for (const text of [
      '['.repeat(levels) + ']'.repeat(levels),
      '{"a":'.repeat(levels) + '0' + '}'.repeat(levels),
      '["\\u0000",' + '['.repeat(levels) + ']'.repeat(levels) + ']',
    ]) {
      const { thrown } = timed(text);
      expect(thrown).toBeInstanceOf(SyntaxError);
      expect((thrown as Error).message).toMatch(/nested too deeply/);
    }
  });

  it('throws what JSON.parse throws for the text as sent (positions and excerpts of that text)', () => {
    for (const bad of ['{"a":01}', '{"a":1,}', '[1 2]', '{"a":1.5.3}', '["x" 7]', '{"a":tru}']) {
      let expected: unknown;
      try {
        JSON.parse(bad);
      } catch (err) {
        expected = err;
      }
      expect(() => parseJsonLossless(bad), bad).toThrow((expected as Error).message);
    }
  });
});

/**
 * A random JSON value as text, with `canonical`, what JSON.stringify writes for it when its
 * numbers keep their text: compact, strings with JSON.stringify's escapes.
 */
interface GeneratedJson {
  text: string;
  canonical: string;
}

/** Pieces of string content: the text, and the characters it stands for. */
const STRING_PIECES: readonly (readonly [string, string])[] = [
  ['a', 'a'],
  ['Zz', 'Zz'],
  [' ', ' '],
  ['12.50', '12.50'],
  ['-7e3', '-7e3'],
  ['0', '0'],
  ['#', '#'],
  [',:[]{}', ',:[]{}'],
  ['é€', 'é€'],
  ['😀', '😀'],
  ['\\"', '"'],
  ['\\\\', '\\'],
  ['\\/', '/'],
  ['\\n', '\n'],
  ['\\t', '\t'],
  ['\\r\\b\\f', '\r\b\f'],
  ['\\u00e9', 'é'],
  ['\\u0041', 'A'],
  ['\\uD83D\\uDE00', '😀'],
  ['\\\\\\"', '\\"'],
  ['\\u0000', '\u0000'],
];
const WHITESPACE = [' ', '\n', '\t', '\r\n', '  '];

function generateJson(rng: Rng, spaced: boolean): GeneratedJson {
  const int = (n: number) => Math.floor(rng() * n);
  const space = () => (spaced && rng() < 0.3 ? WHITESPACE[int(WHITESPACE.length)]! : '');
  const stringContent = (): { text: string; value: string } => {
    let text = '';
    let value = '';
    for (let n = int(5); n > 0; n--) {
      // An escaped NUL now and then: such text takes the reviver's path.
      const [t, v] = STRING_PIECES[int(rng() < 0.02 ? STRING_PIECES.length : STRING_PIECES.length - 1)]!;
      text += t;
      value += v;
    }
    return { text: `"${text}"`, value };
  };
  const digits = (n: number) => Array.from({ length: n }, () => String(int(10))).join('');
  const number = (): string => {
    const sign = rng() < 0.3 ? '-' : '';
    const whole = rng() < 0.2 ? '0' : String(1 + int(9)) + digits(rng() < 0.1 ? 15 + int(15) : int(6));
    const fraction = rng() < 0.5 ? `.${digits(1 + int(6))}` : '';
    const exponent = rng() < 0.25 ? `${rng() < 0.5 ? 'e' : 'E'}${['', '+', '-'][int(3)]}${digits(1 + int(3))}` : '';
    return sign + whole + fraction + exponent;
  };
  const value = (depth: number): GeneratedJson => {
    const kind = depth >= 5 ? 2 + int(3) : int(5);
    if (kind === 0) {
      const items = Array.from({ length: int(5) }, () => value(depth + 1));
      return {
        text: `[${space()}${items.map((item) => item.text).join(`${space()},${space()}`)}${space()}]`,
        canonical: `[${items.map((item) => item.canonical).join(',')}]`,
      };
    }
    if (kind === 1) {
      const names = new Set<string>();
      const members: { name: ReturnType<typeof stringContent>; value: GeneratedJson }[] = [];
      for (let n = int(5); n > 0; n--) {
        const name = rng() < 0.05 ? { text: '"__proto__"', value: '__proto__' } : stringContent();
        // Integer-like names come first in a JavaScript object; a repeated name keeps its last value.
        if (names.has(name.value) || /^(0|[1-9]\d*)$/.test(name.value)) continue;
        names.add(name.value);
        members.push({ name, value: value(depth + 1) });
      }
      return {
        text: `{${space()}${members.map((m) => `${m.name.text}${space()}:${space()}${m.value.text}`).join(`${space()},${space()}`)}${space()}}`,
        canonical: `{${members.map((m) => `${JSON.stringify(m.name.value)}:${m.value.canonical}`).join(',')}}`,
      };
    }
    if (kind === 2) {
      const s = stringContent();
      return { text: s.text, canonical: JSON.stringify(s.value) };
    }
    if (kind === 3) {
      const n = number();
      return { text: n, canonical: n };
    }
    const literal = ['true', 'false', 'null'][int(3)]!;
    return { text: literal, canonical: literal };
  };
  const generated = value(0);
  return { text: `${space()}${generated.text}${space()}`, canonical: generated.canonical };
}

/** Numbers as `{ number: text }`, for a comparison by text. */
function numbersAsText(value: unknown): unknown {
  if (isJsonNumber(value)) return { number: value.rawJSON };
  if (Array.isArray(value)) return value.map(numbersAsText);
  // fromEntries defines properties: `__proto__` stays a key.
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, numbersAsText(v)]));
  return value;
}

describe('parseJsonLossless on random JSON', () => {
  it('gives the text back as JSON.stringify writes it, and the structure of JSON.parse with numbers as sent', () => {
    const rng = mulberry32(20_240_601);
    for (let n = 0; n < 400; n++) {
      const { text, canonical } = generateJson(rng, n % 2 === 1);
      const parsed = parseJsonLossless(text);
      expect(JSON.stringify(parsed), text).toBe(canonical);
      const expected = JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
        typeof value === 'number' ? { number: context!.source } : value,
      ) as unknown;
      expect(numbersAsText(parsed), text).toEqual(expected);
    }
  });
});

describe('canonicalJson', () => {
  it('writes the same text for the same content whatever the order of the keys, numbers as sent', () => {
    const sent = parseJsonLossless('{"b": [1.50, {"y": null, "x": "é"}], "a": 28.0000, "aa": {"k": true}}');
    // As jsonb gives it back: shorter keys first, then by bytes; the same numbers.
    const stored = parseJsonLossless('{"a": 28.0000, "b": [1.50, {"x": "\\u00e9", "y": null}], "aa": {"k": true}}');
    expect(canonicalJson(sent)).toBe('{"a":28.0000,"aa":{"k":true},"b":[1.50,{"x":"é","y":null}]}');
    expect(canonicalJson(stored)).toBe(canonicalJson(sent));
  });

  it('tells apart what differs: a value, a number as sent, a key', () => {
    const base = canonicalJson(parseJsonLossless('{"a": 1.5, "b": "x"}'));
    expect(canonicalJson(parseJsonLossless('{"a": 1.50, "b": "x"}'))).not.toBe(base);
    expect(canonicalJson(parseJsonLossless('{"a": 1.5, "b": "y"}'))).not.toBe(base);
    expect(canonicalJson(parseJsonLossless('{"a": 1.5, "c": "x"}'))).not.toBe(base);
  });
});
