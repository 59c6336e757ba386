/**
 * docs/troubleshooting.md stays complete: every sentence staysync prints on a failure (the rule
 * is in test/helpers/failure-messages.ts: log lines at warn/error/fatal, messages of the errors
 * the CLI ends with or prints, stderr lines) has a row in the page, every row of the page is
 * still printed by the code, and every exit status has its row.
 *
 * A row of the page is a table row whose first cell is a code span: the message, with
 * `<name>` where the code puts a value.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failureMessages, LOGGER, normalise } from '../helpers/failure-messages.js';

const page = readFileSync(new URL('../../docs/troubleshooting.md', import.meta.url), 'utf8');
/** Read once: the sources take a second to tokenize. */
const inSources = failureMessages();

/** `<anything>` and `<>` alike: where a value goes. */
const comparable = (pattern: string) => normalise(pattern.replace(/<[^<>]*>/g, '<>'));

/** The first cells of the page's table rows that are code spans (one or two backticks). */
function pageMessages(markdown: string): string[] {
  const out: string[] = [];
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*(``?)\s?(.+?)\s?\1\s*\|/.exec(line);
    if (m) out.push(m[2]!);
  }
  return out;
}

describe('the failure messages of the code', () => {
  it('are collected by the rule: literals, templates, joins, conditions, names of constants; forwarded messages left out', () => {
    const found = inSources.map((m) => m.pattern);
    // One of each form the rule reads, from the sources as they are: a plain literal, a template
    // with values, a condition's branches, a `const` named as the message, a `+` of parts,
    // an error's own constructor, a stderr line.
    expect(found).toContain('webhook batch refused: not a JSON array');
    expect(found).toContain('lost the lock of schema <>: <>. Stopped writing; taking it again');
    expect(found).toContain('no property to follow: STAYSYNC_PROPERTY_IDS is empty and content.enabled is false');
    expect(found).toContain('webhook receiver listening on <>:<>: <>');
    expect(found.some((p) => p.startsWith('<> not granted to this API connection: ') && p.endsWith('> Public APIs tab'))).toBe(true);
    expect(found).toContain(
      'property <>: token lost: <>. Its booking list stops until it is recovered; the other properties and streams go on. ' +
        'To resume it from its last mirrored modification minus two days: <> ' +
        '(or sync --once --recover --property <>; --recover=<ISO time> chooses the point; sync.autoRecover does it by itself)',
    );
    expect(found).toContain('staysync: grant-reader refused: <>');
    // `logger.error(err.message)` passes an error's message on: no pattern of its own.
    expect(found).not.toContain('<>');
    expect(found.length).toBeGreaterThan(150);
  });

  it('miss no warn, error or fatal call: each is made on a name the rule reads as a logger', () => {
    // Every `<x>.warn(`, `<x>.error(`, `<x>.fatal(` in src/, with what comes before the dot.
    const calls = readdirSync('src', { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.ts'))
      .flatMap((e) =>
        [...readFileSync(join(e.parentPath, e.name), 'utf8').matchAll(/([\w$)\]]+)\??\.(?:warn|error|fatal)\(/g)].map((m) => ({
          file: e.name,
          receiver: m[1]!,
        })),
      );
    expect(calls.length).toBeGreaterThan(80);
    expect(calls.filter((c) => !LOGGER.test(c.receiver))).toEqual([]);
  });
});

describe('docs/troubleshooting.md', () => {
  const documented = pageMessages(page);
  const inPage = new Set(documented.map(comparable));

  it('has a row for every failure message of the code', () => {
    const missing = [...new Map(inSources.map((m) => [comparable(m.pattern), m])).values()]
      .filter((m) => !inPage.has(comparable(m.pattern)))
      .map((m) => `${m.at}: ${m.pattern}`);
    expect(missing, 'messages without a row in docs/troubleshooting.md').toEqual([]);
  });

  it('has no row for a message the code no longer prints', () => {
    const inCode = new Set(inSources.map((m) => comparable(m.pattern)));
    expect(documented.filter((d) => !inCode.has(comparable(d)))).toEqual([]);
  });

  it('has a row for every exit status', () => {
    const source = readFileSync(new URL('../../src/cli/exit.ts', import.meta.url), 'utf8');
    const block = /export const ExitCode = \{([\s\S]*?)\} as const/.exec(source)![1]!;
    const codes = [...block.matchAll(/^\s*\w+: (\d+),/gm)].map((m) => m[1]!);
    expect(codes.length).toBeGreaterThanOrEqual(5);
    for (const code of codes) expect(page, `exit status ${code}`).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });
});
