/**
 * Where JSON text first goes wrong, told without quoting it. JSON.parse's messages carry an
 * excerpt of the text around the error; in a config file that excerpt can be part of a
 * secret. jsonSyntaxError gives the line, the column and a description drawn from a fixed
 * list (PROBLEMS), so nothing of the text itself reaches a log or a terminal.
 */

/**
 * Arrays and objects nested deeper than this are refused, as a limit on shape: no recursive
 * reader of the parsed value (a JSON.parse reviver, the zod schemas) can then run out of
 * stack. No provider body or config file comes near it.
 */
export const MAX_JSON_DEPTH = 512;

export interface JsonSyntaxError {
  /** 1-based. A line ends at \n, \r\n or a lone \r. */
  line: number;
  /** 1-based, in UTF-16 code units: a character beyond U+FFFF (an emoji) counts as two. */
  column: number;
  /** One of PROBLEMS: never any text of the input. */
  problem: string;
}

const PROBLEMS = {
  end: 'unexpected end of the text',
  character: 'unexpected character',
  byteOrderMark: 'unexpected byte order mark (save the file as UTF-8 without one)',
  value: 'expected a value',
  literal: 'expected true, false or null',
  name: "expected a property name in double quotes or '}'",
  nameAfterComma: 'expected a property name in double quotes',
  colon: "expected ':' after the property name",
  objectNext: "expected ',' or '}'",
  arrayNext: "expected ',' or ']'",
  afterValue: 'unexpected character after the JSON value',
  unterminatedString: 'unterminated string',
  controlCharacter: 'line break or control character in a string (write it as an escape)',
  escape: 'invalid escape in a string',
  number: 'invalid number',
  tooDeep: `nested too deeply (more than ${MAX_JSON_DEPTH} levels of arrays and objects)`,
} as const;
type Problem = (typeof PROBLEMS)[keyof typeof PROBLEMS];

interface Found {
  /** Offset of the error in the text (its length for an unexpected end). */
  at: number;
  problem: Problem;
}

/** The first syntax error of `text` as JSON, or undefined when JSON.parse would read it (and it is nested at most MAX_JSON_DEPTH deep). */
export function jsonSyntaxError(text: string): JsonSyntaxError | undefined {
  const found = firstError(text);
  return found && { ...lineAndColumn(text, found.at), problem: found.problem };
}

// Character codes.
const TAB = 0x09;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const SPACE = 0x20;
const QUOTE = 0x22;
const PLUS = 0x2b;
const COMMA = 0x2c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const COLON = 0x3a;
const OPEN_BRACKET = 0x5b;
const BACKSLASH = 0x5c;
const CLOSE_BRACKET = 0x5d;
const LOWER_E = 0x65;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const BYTE_ORDER_MARK = 0xfeff;

const LITERALS = ['true', 'false', 'null'];

/**
 * A loop over the text with the open containers on a stack (no recursion): each round reads
 * one value, then the commas, closers and property names up to where the next value starts.
 */
function firstError(text: string): Found | undefined {
  /** The closing character of each open container, innermost last. */
  const closers: number[] = [];
  let i = skipWhitespace(text, 0);
  for (;;) {
    // A value starts at i.
    if (i >= text.length) return { at: i, problem: PROBLEMS.end };
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (closers.length === MAX_JSON_DEPTH) return { at: i, problem: PROBLEMS.tooDeep };
      const closer = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
      i = skipWhitespace(text, i + 1);
      if (text.charCodeAt(i) !== closer) {
        closers.push(closer);
        if (closer === CLOSE_BRACKET) continue;
        const member = memberStart(text, i, PROBLEMS.name);
        if (typeof member !== 'number') return member;
        i = member;
        continue;
      }
      // An empty array or object: a whole value.
      i++;
    } else if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (typeof end !== 'number') return end;
      i = end;
    } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
      const end = numberEnd(text, i);
      if (end === undefined) return { at: i, problem: PROBLEMS.number };
      i = end;
    } else {
      const literal = LITERALS.find((word) => word.charCodeAt(0) === c);
      if (literal === undefined) {
        const structural = c === CLOSE_BRACE || c === CLOSE_BRACKET || c === COMMA || c === COLON;
        return { at: i, problem: structural ? PROBLEMS.value : c === BYTE_ORDER_MARK ? PROBLEMS.byteOrderMark : PROBLEMS.character };
      }
      if (!text.startsWith(literal, i)) return { at: i, problem: PROBLEMS.literal };
      i += literal.length;
    }
    // A value ended before i: close containers until a comma leads to the next value.
    for (;;) {
      i = skipWhitespace(text, i);
      const closer = closers.at(-1);
      if (closer === undefined) return i < text.length ? { at: i, problem: PROBLEMS.afterValue } : undefined;
      const next = text.charCodeAt(i);
      if (next === closer) {
        closers.pop();
        i++;
        continue;
      }
      if (next !== COMMA) return { at: i, problem: i >= text.length ? PROBLEMS.end : closer === CLOSE_BRACE ? PROBLEMS.objectNext : PROBLEMS.arrayNext };
      i = skipWhitespace(text, i + 1);
      if (closer === CLOSE_BRACE) {
        const member = memberStart(text, i, PROBLEMS.nameAfterComma);
        if (typeof member !== 'number') return member;
        i = member;
      }
      break;
    }
  }
}

/** Reads `"name" :` from i (at no whitespace); returns where the member's value starts. */
function memberStart(text: string, i: number, missingName: Problem): number | Found {
  if (text.charCodeAt(i) !== QUOTE) return { at: i, problem: i >= text.length ? PROBLEMS.end : missingName };
  const end = stringEnd(text, i);
  if (typeof end !== 'number') return end;
  const colon = skipWhitespace(text, end);
  if (text.charCodeAt(colon) !== COLON) return { at: colon, problem: colon >= text.length ? PROBLEMS.end : PROBLEMS.colon };
  return skipWhitespace(text, colon + 1);
}

function skipWhitespace(text: string, start: number): number {
  let i = start;
  for (let c = text.charCodeAt(i); c === SPACE || c === LINE_FEED || c === CARRIAGE_RETURN || c === TAB; c = text.charCodeAt(++i));
  return i;
}

/** The index after the string opened at `open`. */
function stringEnd(text: string, open: number): number | Found {
  for (let i = open + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) return i + 1;
    if (c < SPACE) return { at: i, problem: PROBLEMS.controlCharacter };
    if (c !== BACKSLASH) continue;
    const escaped = text.charAt(i + 1);
    if (escaped === '') break;
    if (escaped === 'u') {
      if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return { at: i, problem: PROBLEMS.escape };
      i += 5;
    } else if ('"\\/bfnrt'.includes(escaped)) {
      i++;
    } else {
      return { at: i, problem: PROBLEMS.escape };
    }
  }
  return { at: open, problem: PROBLEMS.unterminatedString };
}

/** The index after the number starting at `start`, or undefined when it is not a JSON number (`01`, `1.`, `-`, `1e`). */
function numberEnd(text: string, start: number): number | undefined {
  let i = start;
  if (text.charCodeAt(i) === MINUS) i++;
  const first = text.charCodeAt(i);
  if (first === ZERO) i++;
  else if (first > ZERO && first <= NINE) i = digitsEnd(text, i);
  else return undefined;
  if (isDigit(text.charCodeAt(i))) return undefined;
  if (text.charCodeAt(i) === DOT) {
    const from = i + 1;
    i = digitsEnd(text, from);
    if (i === from) return undefined;
  }
  if ((text.charCodeAt(i) | 0x20) === LOWER_E) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    const from = i;
    i = digitsEnd(text, from);
    if (i === from) return undefined;
  }
  return i;
}

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE;
}

function digitsEnd(text: string, start: number): number {
  let i = start;
  while (isDigit(text.charCodeAt(i))) i++;
  return i;
}

function lineAndColumn(text: string, at: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < at; i++) {
    const c = text.charCodeAt(i);
    if (c === LINE_FEED || (c === CARRIAGE_RETURN && text.charCodeAt(i + 1) !== LINE_FEED)) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: at - lineStart + 1 };
}
