/**
 * The sentences staysync prints on a failure, collected from src/ by a small tokenizer below (the project's TypeScript 7 has no parser API for scripts),
 * for docs/troubleshooting.md and its test. The rule:
 *
 * 1. Log lines at warn, error or fatal: a call `<x>.warn(…)`, `<x>.error(…)` or `<x>.fatal(…)`
 *    whose receiver is a logger (its last name is `log`, `logger` or ends in `Log`). pino takes
 *    the message as the last argument (after an optional object of fields).
 * 2. Errors whose message reaches the user as it is: `new C(message, …)` and `super(message, …)`
 *    inside class C, for C in USER_FACING_ERRORS (the classes the CLI ends with a sentence, see
 *    src/cli/exit.ts, and those whose message a command prints or logs).
 * 3. Lines for the reader roles, pushed onto a `warnings` array (src/store/database.ts logs
 *    each at warn).
 * 4. Text written to stderr: `process.stderr.write(…)`.
 *
 * A message is text when it is a string or template literal, a `+` of parts, a condition
 * (each branch is a message of its own), a name declared `const name = <text>` in the same
 * file, or a call of a function of the same file (what its `return`s give). Each `${…}` (and
 * each part that is not text) becomes a placeholder `<>`. A message with no text of its own
 * besides placeholders (`err.message`, `${e.message}${cause}`) passes on the
 * message of an error: that error's construction is collected by rule 2, not the forwarding line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

export const USER_FACING_ERRORS = new Set([
  // Ended with a sentence and exit status 1 or 2 (src/cli/exit.ts, isExpectedFailure).
  'ConfigError',
  'AuthenticationError',
  'DatabaseConfigurationError',
  'DatabaseUnavailableError',
  'DatabaseGaveUpError',
  'ProviderGaveUpError',
  'HeldElsewhereError',
  'OpsPortError',
  'LocalServerError',
  // Its message follows the setting that names the file, in a ConfigError (readSecretFile).
  'FileReadError',
  // Printed by the command that meets them, or logged by the sync.
  'UsageError',
  'SelectorError',
  'ReaderRefusedError',
  'ReaderBusyError',
  'MigrationError',
  'ContinueTokenLostError',
  'ContinueTokenRetryError',
  'PropertyFailedError',
  'NothingToFollowError',
  'NotGrantedError',
  'RefreshIncompleteError',
]);

export interface FailureMessage {
  /** The message with `<>` for each placeholder, whitespace collapsed. */
  pattern: string;
  kind: 'log' | 'error' | 'stderr';
  /** Where: src/….ts:line. */
  at: string;
}

const PLACEHOLDER = '<>';

/** A message's pattern: text as it is, `<>` where a value goes, whitespace collapsed. */
export function normalise(text: string): string {
  return text.replace(/(<>)+/g, PLACEHOLDER).replace(/\s+/g, ' ').trim();
}

// ------------------------------------------------------------------ a tokenizer for TypeScript sources

type Token =
  | { kind: 'name'; text: string; at: number }
  | { kind: 'punct'; text: string; at: number }
  | { kind: 'string'; text: string; at: number }
  /** A template literal: its text parts, between which a `${…}` goes. */
  | { kind: 'template'; parts: string[]; at: number }
  | { kind: 'other'; text: string; at: number };

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '0': '\0' };

/** The tokens of `src`: names, punctuation, string and template literals (decoded), numbers and regular expressions as `other`. */
function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  /** A `/` starts a regular expression after these (else it divides). */
  const beforeRegex = (): boolean => {
    const prev = tokens.at(-1);
    if (!prev) return true;
    if (prev.kind === 'punct') return !/^[)\]}]$/.test(prev.text);
    return prev.kind === 'name' && /^(return|typeof|case|in|of|void|throw|yield|await)$/.test(prev.text);
  };
  const readQuoted = (quote: string): string => {
    let text = '';
    i++;
    while (i < src.length && src[i] !== quote) {
      if (src[i] === '\\') {
        const c = src[i + 1]!;
        if (c === '\n') text += '';
        else text += ESCAPES[c] ?? c;
        i += 2;
      } else text += src[i++];
    }
    i++;
    return text;
  };
  /** From a backtick: the parts, skipping each `${…}` (which may hold strings, templates and braces). */
  const readTemplate = (): string[] => {
    const parts = [''];
    i++;
    while (i < src.length && src[i] !== '`') {
      if (src[i] === '\\') {
        const c = src[i + 1]!;
        parts.push(parts.pop()! + (ESCAPES[c] ?? c));
        i += 2;
      } else if (src[i] === '$' && src[i + 1] === '{') {
        i += 2;
        let depth = 1;
        while (i < src.length && depth > 0) {
          const c = src[i]!;
          if (c === '{') depth++;
          else if (c === '}') depth--;
          if (depth === 0) break;
          if (c === "'" || c === '"') readQuoted(c);
          else if (c === '`') readTemplate();
          else i++;
        }
        i++;
        parts.push('');
      } else parts.push(parts.pop()! + src[i++]!);
    }
    i++;
    return parts;
  };
  while (i < src.length) {
    const c = src[i]!;
    const at = i;
    if (/\s/.test(c)) i++;
    else if (src.startsWith('//', i)) i = src.indexOf('\n', i) === -1 ? src.length : src.indexOf('\n', i);
    else if (src.startsWith('/*', i)) i = src.indexOf('*/', i + 2) + 2;
    else if (c === "'" || c === '"') tokens.push({ kind: 'string', text: readQuoted(c), at });
    else if (c === '`') tokens.push({ kind: 'template', parts: readTemplate(), at });
    else if (/[A-Za-z_$]/.test(c)) {
      const m = /^[\w$]+/.exec(src.slice(i, i + 200))![0];
      tokens.push({ kind: 'name', text: m, at });
      i += m.length;
    } else if (/[0-9]/.test(c)) {
      const m = /^[\w.]+/.exec(src.slice(i, i + 100))![0];
      tokens.push({ kind: 'other', text: m, at });
      i += m.length;
    } else if (c === '/' && beforeRegex()) {
      let inClass = false;
      i++;
      while (i < src.length && (src[i] !== '/' || inClass)) {
        if (src[i] === '\\') i++;
        else if (src[i] === '[') inClass = true;
        else if (src[i] === ']') inClass = false;
        i++;
      }
      i++;
      while (/[a-z]/.test(src[i] ?? '')) i++;
      tokens.push({ kind: 'other', text: 'regex', at });
    } else if (src.startsWith('?.', i) && !/[0-9]/.test(src[i + 2] ?? '')) {
      tokens.push({ kind: 'punct', text: '?.', at });
      i += 2;
    } else if (src.startsWith('=>', i) || src.startsWith('??', i) || src.startsWith('===', i) || src.startsWith('!==', i)) {
      const op = ['===', '!=='].find((o) => src.startsWith(o, i)) ?? src.slice(i, i + 2);
      tokens.push({ kind: 'punct', text: op, at });
      i += op.length;
    } else {
      tokens.push({ kind: 'punct', text: c, at });
      i++;
    }
  }
  return tokens;
}

const OPEN: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/** The arguments of the call whose `(` is tokens[open]: each a list of tokens. */
function argumentsAt(tokens: readonly Token[], open: number): Token[][] {
  const args: Token[][] = [[]];
  const stack: string[] = [];
  for (let i = open + 1; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && OPEN[t.text]) stack.push(OPEN[t.text]!);
    else if (t.kind === 'punct' && stack.length > 0 && t.text === stack.at(-1)) stack.pop();
    else if (t.kind === 'punct' && t.text === ')' && stack.length === 0) break;
    else if (t.kind === 'punct' && t.text === ',' && stack.length === 0) {
      args.push([]);
      continue;
    }
    args.at(-1)!.push(t);
  }
  return args.filter((a) => a.length > 0);
}

/** Splits an expression's tokens at a top-level operator. */
function splitTop(tokens: readonly Token[], op: string): Token[][] {
  const parts: Token[][] = [[]];
  let depth = 0;
  for (const t of tokens) {
    if (t.kind === 'punct' && OPEN[t.text]) depth++;
    else if (t.kind === 'punct' && /^[)\]}]$/.test(t.text)) depth--;
    if (depth === 0 && t.kind === 'punct' && t.text === op) parts.push([]);
    else parts.at(-1)!.push(t);
  }
  return parts;
}

/** The top-level `?` of a condition and its `:` (-1 when there is none). */
function conditionAt(expr: readonly Token[]): [number, number] {
  let depth = 0;
  let question = -1;
  let nested = 0;
  for (let i = 0; i < expr.length; i++) {
    const t = expr[i]!;
    if (t.kind !== 'punct') continue;
    if (OPEN[t.text]) depth++;
    else if (/^[)\]}]$/.test(t.text)) depth--;
    else if (depth === 0 && t.text === '?') {
      if (question < 0) question = i;
      else nested++;
    } else if (depth === 0 && t.text === ':' && question >= 0) {
      if (nested === 0) return [question, i];
      nested--;
    }
  }
  return [-1, -1];
}

/** The patterns an expression can produce, or null when it is not text. */
function textsOf(expr: readonly Token[], defs: Definitions, depth = 0): string[] | null {
  if (depth > 3 || expr.length === 0) return null;
  // a ? b : c, each branch a message (a nested condition in a branch is split in its turn).
  const [question, colon] = conditionAt(expr);
  if (question >= 0 && colon > question) {
    const a = textsOf(expr.slice(question + 1, colon), defs, depth);
    const b = textsOf(expr.slice(colon + 1), defs, depth);
    if (!a && !b) return null;
    return [...(a ?? [PLACEHOLDER]), ...(b ?? [PLACEHOLDER])];
  }
  const terms = splitTop(expr, '+');
  let texts = [''];
  let anyText = false;
  for (const term of terms) {
    let options: string[] | null = null;
    const [t] = term;
    if (term.length === 1 && t!.kind === 'string') options = [t!.text];
    else if (term.length === 1 && t!.kind === 'template') options = [t!.parts.join(PLACEHOLDER)];
    else if (term.length === 1 && t!.kind === 'name' && defs.consts.has(t!.text)) options = textsOf(defs.consts.get(t!.text)!, defs, depth + 1);
    else if (t?.kind === 'punct' && t.text === '(' && closing(term, 0) === term.length - 1) options = textsOf(term.slice(1, -1), defs, depth);
    else if (t?.kind === 'name' && defs.functions.has(t.text) && isPunct(term[1], '(') && closing(term, 1) === term.length - 1) {
      const returned = defs.functions.get(t.text)!.flatMap((r) => textsOf(r, defs, depth + 1) ?? []);
      options = returned.length > 0 ? returned : null;
    }
    if (options) anyText = true;
    texts = texts.flatMap((x) => (options ?? [PLACEHOLDER]).map((o) => x + o));
  }
  return anyText ? texts : null;
}

/** What names stand for in a file: its constants, and the expressions its functions return. */
interface Definitions {
  consts: Map<string, Token[]>;
  functions: Map<string, Token[][]>;
}

/** The index of the bracket that closes tokens[open]. */
function closing(tokens: readonly Token[], open: number): number {
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && OPEN[t.text]) depth++;
    else if (t.kind === 'punct' && /^[)\]}]$/.test(t.text) && --depth === 0) return i;
  }
  return -1;
}

/** An expression from tokens[start] to the first `;` (or `,` when `comma`) or unmatched closing bracket. */
function expressionAt(tokens: readonly Token[], start: number, comma: boolean): Token[] {
  const out: Token[] = [];
  let depth = 0;
  for (let k = start; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (t.kind === 'punct' && OPEN[t.text]) depth++;
    else if (t.kind === 'punct' && /^[)\]}]$/.test(t.text)) {
      if (depth === 0) break;
      depth--;
    }
    if (depth === 0 && t.kind === 'punct' && (t.text === ';' || (comma && t.text === ','))) break;
    out.push(t);
  }
  return out;
}

/** `function name(…) { … return <expression>; … }` of a file: the expressions each returns. */
function functionsOf(tokens: readonly Token[]): Map<string, Token[][]> {
  const found = new Map<string, Token[][]>();
  for (let i = 0; i + 2 < tokens.length; i++) {
    const name = nameOf(tokens[i + 1]);
    if (nameOf(tokens[i]) !== 'function' || !name || !isPunct(tokens[i + 2], '(')) continue;
    let body = closing(tokens, i + 2) + 1;
    while (body < tokens.length && !isPunct(tokens[body], '{')) body++;
    const end = closing(tokens, body);
    const returns: Token[][] = [];
    for (let k = body; k < end; k++) if (nameOf(tokens[k]) === 'return') returns.push(expressionAt(tokens, k + 1, false));
    found.set(name, returns);
  }
  return found;
}

/** `const name = <expression>;` of a file (a name declared twice is left out: which one is meant is not known). */
function constsOf(tokens: readonly Token[]): Map<string, Token[]> {
  const found = new Map<string, Token[] | null>();
  for (let i = 0; i + 3 < tokens.length; i++) {
    const name = nameOf(tokens[i + 1]);
    if (nameOf(tokens[i]) !== 'const' || !name || !isPunct(tokens[i + 2], '=')) continue;
    found.set(name, found.has(name) ? null : expressionAt(tokens, i + 3, true));
  }
  return new Map([...found].filter((e): e is [string, Token[]] => e[1] !== null));
}

/** The names a logger goes by in src/ (rule 1). */
export const LOGGER = /^(log|logger|\w*Log)$/;
const isPunct = (t: Token | undefined, text: string) => t?.kind === 'punct' && t.text === text;
const nameOf = (t: Token | undefined) => (t?.kind === 'name' ? t.text : null);

/** Every failure message of the source files under `srcDir` (see the rule at the top). */
export function failureMessages(srcDir = resolve('src')): FailureMessage[] {
  const files = readdirSync(srcDir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => {
      const path = join(e.parentPath, e.name);
      const src = readFileSync(path, 'utf8');
      return { path, src, tokens: tokenize(src) };
    });
  // Classes that make their message in their constructor (`super(…)`): their `new` passes values, not the message.
  const ownConstructor = new Set<string>();
  for (const { tokens } of files) {
    let currentClass: string | null = null;
    for (let i = 0; i < tokens.length; i++) {
      if (nameOf(tokens[i]) === 'class' && nameOf(tokens[i + 1])) currentClass = nameOf(tokens[i + 1]);
      if (nameOf(tokens[i]) === 'super' && isPunct(tokens[i + 1], '(') && currentClass) ownConstructor.add(currentClass);
    }
  }
  const out: FailureMessage[] = [];
  for (const { path, src, tokens } of files) {
    const defs: Definitions = { consts: constsOf(tokens), functions: functionsOf(tokens) };
    const where = (at: number) => `${relative(resolve(srcDir, '..'), path)}:${src.slice(0, at).split('\n').length}`;
    const add = (kind: FailureMessage['kind'], arg: Token[] | undefined, at: number) => {
      if (!arg) return;
      for (const text of textsOf(arg, defs) ?? []) {
        const pattern = normalise(text);
        // Placeholders alone: the message of an error, passed on.
        if (pattern.replaceAll(PLACEHOLDER, '').replace(/[\s.:;,()]/g, '') === '') continue;
        out.push({ pattern, kind, at: where(at) });
      }
    };
    let currentClass: string | null = null;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (nameOf(t) === 'class' && nameOf(tokens[i + 1])) currentClass = nameOf(tokens[i + 1]);
      // receiver . method (
      const method = nameOf(tokens[i + 2]);
      const receiver = nameOf(t);
      if (receiver && (isPunct(tokens[i + 1], '.') || isPunct(tokens[i + 1], '?.')) && method && isPunct(tokens[i + 3], '(')) {
        const args = argumentsAt(tokens, i + 3);
        if ((method === 'warn' || method === 'error' || method === 'fatal') && LOGGER.test(receiver)) add('log', args.at(-1), t.at);
        if (method === 'push' && receiver === 'warnings') for (const a of args) add('log', a, t.at);
        if (method === 'write' && receiver === 'stderr' && nameOf(tokens[i - 2]) === 'process') add('stderr', args[0], t.at);
      }
      if (receiver === 'super' && isPunct(tokens[i + 1], '(') && currentClass && USER_FACING_ERRORS.has(currentClass))
        add('error', argumentsAt(tokens, i + 1)[0], t.at);
      const made = nameOf(tokens[i + 1]) ?? '';
      if (receiver === 'new' && USER_FACING_ERRORS.has(made) && !ownConstructor.has(made) && isPunct(tokens[i + 2], '('))
        add('error', argumentsAt(tokens, i + 2)[0], t.at);
    }
  }
  return out;
}
