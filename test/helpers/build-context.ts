/**
 * What `docker build` sends its builder, and what the Dockerfile's COPY and ADD take, told
 * without a Docker engine (test/unit/build-context.test.ts).
 *
 * The .dockerignore rules as Docker applies them (BuildKit's dockerignore reader and
 * github.com/moby/patternmatcher):
 * - a line starting with `#` is a comment; the others are trimmed, blank ones skipped;
 * - `!` makes a pattern an exception: what it matches is sent again;
 * - a pattern is cleaned as a path (`./a//b/` is `a/b`) and is relative to the context's root
 *   (a leading `/` is dropped);
 * - it is Go's filepath.Match (`*` and `?` within one path segment, `[…]` a class, `\` an
 *   escape) with `**`, any number of segments (none too);
 * - a pattern that matches a folder matches everything in it;
 * - the last pattern that matches a path decides.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

interface Pattern {
  /** The pattern as cleaned, without its `!`. */
  text: string;
  /** An exception (`!…`): what it matches is sent. */
  exception: boolean;
  matches: (path: string) => boolean;
}

/** The patterns of a .dockerignore file, as Docker reads them (cleaned; `!` kept in front of an exception). */
export function dockerignorePatterns(text: string): string[] {
  const patterns: string[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = i === 0 ? raw.replace(/^\uFEFF/, '') : raw;
    // A comment only where the line starts with it, before the line is trimmed.
    if (line.startsWith('#')) continue;
    let pattern = line.trim();
    if (pattern === '') continue;
    const exception = pattern.startsWith('!');
    if (exception) pattern = pattern.slice(1).trim();
    if (pattern !== '') {
      pattern = cleanPath(pattern);
      if (pattern.length > 1 && pattern.startsWith('/')) pattern = pattern.slice(1);
    }
    patterns.push(exception ? `!${pattern}` : pattern);
  }
  return patterns;
}

/** Go's filepath.Clean: no `.` segments, `..` resolved, no doubled or trailing `/`; `.` for nothing. */
function cleanPath(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 && normal.endsWith('/') ? normal.slice(0, -1) : normal;
}

/** Characters a pattern means as themselves that a regular expression would not. */
const LITERAL_IN_REGEXP = new Set('.+()|{}$'.split(''));

/**
 * One pattern as patternmatcher compiles it: the same shortcuts (a literal path, `a/**` a
 * prefix, `**` + a literal a suffix) and, for the rest, the same regular expression.
 */
function compile(text: string): (path: string) => boolean {
  type Kind = 'exact' | 'prefix' | 'suffix' | 'regexp';
  let kind: Kind = 'exact';
  let re = '^';
  // By code point, as Go's scanner reads runes.
  const chars = Array.from(text);
  for (let i = 0, n = 0; i < chars.length; n++) {
    const ch = chars[i++]!;
    if (ch === '*' && chars[i] === '*') {
      i++;
      // `**/` is `**`.
      if (chars[i] === '/') i++;
      if (i >= chars.length) {
        // `**` at the end: everything below, as in .gitignore.
        if (kind === 'exact') kind = 'prefix';
        else {
          re += '.*';
          kind = 'regexp';
        }
      } else {
        re += '(.*/)?';
        kind = 'regexp';
      }
      if (n === 0) kind = 'suffix';
    } else if (ch === '*') {
      re += '[^/]*';
      kind = 'regexp';
    } else if (ch === '?') {
      re += '[^/]';
      kind = 'regexp';
    } else if (LITERAL_IN_REGEXP.has(ch)) {
      re += `\\${ch}`;
    } else if (ch === '\\') {
      re += i < chars.length ? `\\${chars[i++]!}` : '\\\\';
    } else if (ch === '[' || ch === ']') {
      re += ch;
      kind = 'regexp';
    } else {
      re += ch;
    }
  }
  switch (kind) {
    case 'exact':
      return (path) => path === text;
    case 'prefix':
      return (path) => path.startsWith(text.slice(0, -2));
    case 'suffix': {
      const suffix = text.slice(2);
      // `**/foo` matches `foo` itself too.
      return (path) => path.endsWith(suffix) || (suffix.startsWith('/') && path === suffix.slice(1));
    }
    case 'regexp': {
      const regexp = new RegExp(`${re}$`);
      return (path) => regexp.test(path);
    }
  }
}

/** A matcher of .dockerignore patterns (dockerignorePatterns): `ignored(path)` for a path relative to the context's root. */
export class IgnoreRules {
  readonly patterns: readonly Pattern[];

  constructor(patterns: string[]) {
    this.patterns = patterns.map((p) => {
      const exception = p.startsWith('!');
      const text = exception ? p.slice(1) : p;
      return { text, exception, matches: compile(text) };
    });
  }

  /**
   * Whether the context leaves `path` out: each pattern in turn, on the path or any folder
   * above it, the last that matches deciding (patternmatcher's MatchesOrParentMatches).
   */
  ignored(path: string): boolean {
    const parents = path.split('/').slice(0, -1);
    let ignored = false;
    for (const pattern of this.patterns) {
      // Only a pattern that could change the answer is tried.
      if (pattern.exception !== ignored) continue;
      const matches = pattern.matches(path) || parents.some((_, i) => pattern.matches(parents.slice(0, i + 1).join('/')));
      if (matches) ignored = !pattern.exception;
    }
    return ignored;
  }

  /**
   * Whether an exception could let back something inside the folder `dir`: its segments, up to
   * a `**`, match the folder's. A folder left out with no such exception is not entered (as the
   * builder does), so node_modules costs nothing.
   */
  mayLetBackBelow(dir: string): boolean {
    const segments = dir.split('/');
    return this.patterns.some((p) => {
      if (!p.exception) return false;
      const own = p.text.split('/');
      for (const [i, segment] of segments.entries()) {
        if (i >= own.length) return false;
        if (own[i]!.includes('**')) return true;
        if (!compile(own[i]!)(segment)) return false;
      }
      return true;
    });
  }
}

/**
 * The ignore file a build of `dockerfile` reads: `<Dockerfile>.dockerignore` beside it when
 * there is one (BuildKit prefers it), else `.dockerignore` at the context's root.
 */
export function ignoreRulesOf(context: string, dockerfile = 'Dockerfile'): IgnoreRules {
  const own = join(context, `${dockerfile}.dockerignore`);
  const file = existsSync(own) ? own : join(context, '.dockerignore');
  return new IgnoreRules(existsSync(file) ? dockerignorePatterns(readFileSync(file, 'utf8')) : []);
}

/** Every file (or link) under `root`, relative to it with `/`, but those `skip` says no to and what is inside them. */
export function filesUnder(root: string, skip: (path: string, isDir: boolean) => boolean = () => false): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
      if (skip(path, entry.isDirectory())) continue;
      if (entry.isDirectory()) walk(path);
      else out.push(path);
    }
  };
  walk('');
  return out.sort();
}

/** The files `docker build` sends from `context`: every file its ignore rules do not leave out. */
export function buildContextFiles(context: string, dockerfile = 'Dockerfile'): string[] {
  const rules = ignoreRulesOf(context, dockerfile);
  return filesUnder(context, (path, isDir) => isDir && rules.ignored(path) && !rules.mayLetBackBelow(path)).filter((path) => !rules.ignored(path));
}

/** A COPY or ADD that takes files from the build context (not `--from=` a stage, not a URL). */
export interface ContextCopy {
  /** The stage it is in (its `AS` name, or its number from 0). */
  stage: string;
  /** The instruction, for messages. */
  instruction: string;
  /** Its sources, relative to the context's root (as written: a file, a folder or a wildcard). */
  sources: string[];
}

/** Every COPY and ADD of a Dockerfile that reads the build context, in every stage. */
export function contextCopies(dockerfileText: string): ContextCopy[] {
  const lines = dockerfileText
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const copies: ContextCopy[] = [];
  let stages = -1;
  let stage = '';
  for (const line of lines) {
    const [op, ...rest] = line.split(/\s+/);
    const instruction = op!.toUpperCase();
    if (instruction === 'FROM') {
      stages += 1;
      stage = /\bAS\s+(\S+)/i.exec(line)?.[1] ?? String(stages);
      continue;
    }
    if (instruction !== 'COPY' && instruction !== 'ADD') continue;
    // The flags (--from=, --chown=, --link, …), then the exec form (a JSON array) or words.
    const flags = /^(?:--\S+\s+)*/.exec(rest.join(' '))![0];
    if (/(^|\s)--from=/.test(flags)) continue;
    const args = rest.join(' ').slice(flags.length);
    const words = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
    const sources = words
      .slice(0, -1)
      // Not a URL, a git repository or a here-document: those are not the context's.
      .filter((s) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(s) && !s.startsWith('git@') && !s.startsWith('<<'))
      .map((s) => cleanPath(s).replace(/^\/+/, '') || '.');
    if (sources.length > 0) copies.push({ stage, instruction: line, sources });
  }
  return copies;
}

/**
 * The files of `files` (paths relative to the context's root) that a COPY or ADD source takes:
 * the file itself, everything in the folder, or what a wildcard matches (and everything in a
 * folder it matches).
 */
export function takenBy(source: string, files: readonly string[]): string[] {
  if (source === '.') return [...files];
  const matches = compile(source);
  return files.filter((file) => {
    const segments = file.split('/');
    return segments.some((_, i) => matches(segments.slice(0, i + 1).join('/')));
  });
}
