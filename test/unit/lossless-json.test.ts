/**
 * Lossless JSON parsing: numbers keep their text, strings and structure are those of JSON.parse,
 * whichever of the two paths (marked tokens, or the reviver for text with an escaped NUL) runs.
 */
import { describe, expect, it } from 'vitest';
import { isJsonNumber, parseJsonLossless } from '../../src/provider/json.js';

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
