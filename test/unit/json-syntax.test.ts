/**
 * jsonSyntaxError: the first error of JSON text by line and column, told in words of its own,
 * never with any of the text (config files hold secrets).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../tools/simulator/random.js';
import { jsonSyntaxError, MAX_JSON_DEPTH } from '../../src/util/json-syntax.js';

const fixtures = join(import.meta.dirname, '../fixtures/provider');

describe('jsonSyntaxError', () => {
  it('finds nothing in valid JSON', () => {
    for (const text of ['{}', '[]', ' 0 ', '-0.5e+10', '"\\u00e9\\/\\"\\\\"', 'true', 'null', '[1,[2,{"a":[false]}],"x"]', '{"a":{"b":{}},"c":[]}\r\n']) {
      expect(jsonSyntaxError(text), text).toBeUndefined();
    }
    for (const name of readdirSync(fixtures)) expect(jsonSyntaxError(readFileSync(join(fixtures, name), 'utf8')), name).toBeUndefined();
  });

  it.each([
    ['', 1, 1, 'unexpected end of the text'],
    ['{\n  "a": 1,\n  "b": 2\n', 4, 1, 'unexpected end of the text'],
    ['{\n  "a": 1,\n}', 3, 1, 'expected a property name in double quotes'],
    ["{'a': 1}", 1, 2, "expected a property name in double quotes or '}'"],
    ['{\n  "a" 1\n}', 2, 7, "expected ':' after the property name"],
    ['{"a": 1 "b": 2}', 1, 9, "expected ',' or '}'"],
    ['[1, 2\n 3]', 2, 2, "expected ',' or ']'"],
    ['[1, 2,]', 1, 7, 'expected a value'],
    ['{\r\n  "a": tru\r\n}', 2, 8, 'expected true, false or null'],
    ['{"a": undefined}', 1, 7, 'unexpected character'],
    ['{"a": 1} x', 1, 10, 'unexpected character after the JSON value'],
    ['{"a": 01}', 1, 7, 'invalid number'],
    ['{"a": 1.}', 1, 7, 'invalid number'],
    ['{"a": -}', 1, 7, 'invalid number'],
    ['{"a": .5}', 1, 7, 'unexpected character'],
    ['{\n  "a": "b\n"}', 2, 10, 'line break or control character in a string (write it as an escape)'],
    ['{\n  "a": "b}', 2, 8, 'unterminated string'],
    ['["a\\', 1, 2, 'unterminated string'],
    ['["a\\x"]', 1, 4, 'invalid escape in a string'],
    ['["\\u12g4"]', 1, 3, 'invalid escape in a string'],
    ['\uFEFF{}', 1, 1, 'unexpected byte order mark (save the file as UTF-8 without one)'],
    ['// comment\n{}', 1, 1, 'unexpected character'],
    ['{"a":1}\r"b"', 2, 1, 'unexpected character after the JSON value'],
    ['\r\r\n\n  }', 4, 3, 'expected a value'],
  ])('%j: line %i, column %i, %s', (text, line, column, problem) => {
    expect(jsonSyntaxError(text)).toEqual({ line, column, problem });
  });

  it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels, at the bracket one too deep, without recursion`, () => {
    const depth = (levels: number) => '[{"a":'.repeat(levels / 2) + '0' + '}]'.repeat(levels / 2);
    expect(jsonSyntaxError(depth(MAX_JSON_DEPTH))).toBeUndefined();
    expect(jsonSyntaxError(`[${depth(MAX_JSON_DEPTH)}]`)?.problem).toMatch(/^nested too deeply/);
    // The first bracket is level 1, the last of the second line level MAX_JSON_DEPTH + 1.
    expect(jsonSyntaxError(`[\n${'['.repeat(MAX_JSON_DEPTH)}]`)).toEqual({
      line: 2,
      column: MAX_JSON_DEPTH,
      problem: expect.stringMatching(/^nested too deeply/),
    });
    expect(jsonSyntaxError('['.repeat(1_000_000))?.problem).toMatch(/^nested too deeply/);
  });

  it('agrees with JSON.parse on every mutation of real bodies: an error exactly when JSON.parse refuses the text', () => {
    const rng = mulberry32(7);
    const inserts = ['"', '\\', ',', ':', '{', '}', '[', ']', '0', '-', '.', 'e', 'x', ' ', '\n', '\u0001', 'u', 't'];
    for (const name of readdirSync(fixtures)) {
      const text = readFileSync(join(fixtures, name), 'utf8');
      for (let n = 0; n < 300; n++) {
        const at = Math.floor(rng() * text.length);
        const insert = inserts[Math.floor(rng() * inserts.length)]!;
        const mutated = rng() < 0.4 ? text.slice(0, at) + text.slice(at + 1) : text.slice(0, at) + insert + text.slice(at + (rng() < 0.5 ? 1 : 0));
        let valid = true;
        try {
          JSON.parse(mutated);
        } catch {
          valid = false;
        }
        expect(jsonSyntaxError(mutated) === undefined, JSON.stringify(mutated.slice(Math.max(0, at - 20), at + 20))).toBe(valid);
      }
    }
  });

  it('never tells any character of a secret next to or inside the error', () => {
    // Characters that no problem text uses, so that one of them in a problem could only come from the input.
    const secret = 'ZQ3XK4WV6Y79';
    const config = (broken: string) => `{\n  "clientId": "partner",\n  "clientSecret": ${broken},\n  "baseUrl": "https://api.example.test"\n}\n`;
    const shapes = [
      `"${secret}`,
      `${secret}`,
      `'${secret}'`,
      `"${secret}\\q"`,
      `"${secret}\n"`,
      `"${secret}" "${secret}"`,
      `"${secret.slice(0, 6)}\\u${secret.slice(6, 9)}"`,
      `-${secret}`,
      `"x"}${secret}`,
    ];
    for (const shape of shapes) {
      const found = jsonSyntaxError(config(shape));
      expect(found, shape).toBeDefined();
      for (const c of secret) expect(found!.problem, shape).not.toContain(c);
    }
  });

  it('takes time linear in the text: a megabyte of an open string, of escapes, of commas', () => {
    for (const text of ['"' + '\\"'.repeat(1 << 19), '[' + '"\\\\",'.repeat(1 << 18), '[' + '0,'.repeat(1 << 19)]) {
      const start = performance.now();
      expect(jsonSyntaxError(text)).toBeDefined();
      expect(performance.now() - start).toBeLessThan(1000);
    }
  });
});
