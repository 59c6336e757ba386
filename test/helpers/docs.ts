/**
 * The documentation as the docs-match-code tests read it: the pages (docs/*.md and README.md),
 * their fenced code blocks, their backtick spans and their tables. Plain string work: the pages
 * are Markdown of one style (Prettier keeps it so).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface DocPage {
  /** Relative to the repository: `docs/operations.md`, `README.md`. */
  path: string;
  text: string;
}

/** Every page of the documentation. */
export function docPages(): DocPage[] {
  const paths = [
    'README.md',
    ...readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join('docs', f)),
  ];
  return paths.map((path) => ({ path, text: readFileSync(path, 'utf8') }));
}

export interface CodeBlock {
  page: string;
  /** The fence's language (`sh`, `sql`, `yaml`), '' for none. */
  lang: string;
  text: string;
}

/** A fenced code block: its language and text. A fence left open runs to the end of the page, as CommonMark has it. */
const FENCED = /^```([a-z]*)\n([\s\S]*?)(?:^```$|(?![\s\S]))/gm;

/** The fenced code blocks of a page. */
export function codeBlocks(page: DocPage): CodeBlock[] {
  return [...page.text.matchAll(FENCED)].map((m) => ({ page: page.path, lang: m[1]!, text: m[2]! }));
}

/** The page without its fenced code blocks (the prose, its tables and their backtick spans). */
export function prose(page: DocPage): string {
  return page.text.replace(FENCED, '');
}

/** The backtick spans of the prose (what is between single backticks). */
export function spans(page: DocPage): string[] {
  return [...prose(page).matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
}

export interface MarkdownTable {
  page: string;
  /** The line of the page the header is on (1-based), for messages. */
  line: number;
  header: string[];
  rows: string[][];
}

/** Splits a table row at its cell borders (a `\|` inside a cell is not one). */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

/** The Markdown tables of a page (outside code blocks). */
export function tables(page: DocPage): MarkdownTable[] {
  const lines = page.text.split('\n');
  const out: MarkdownTable[] = [];
  let inCode = false;
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.startsWith('```')) inCode = !inCode;
    if (inCode) continue;
    if (lines[i]!.startsWith('|') && /^\|(\s*:?-+:?\s*\|)+\s*$/.test(lines[i + 1] ?? '')) {
      const table: MarkdownTable = { page: page.path, line: i + 1, header: cells(lines[i]!), rows: [] };
      let j = i + 2;
      for (; j < lines.length && lines[j]!.startsWith('|'); j++) table.rows.push(cells(lines[j]!));
      out.push(table);
      i = j - 1;
    }
  }
  return out;
}

/** The backticked names of a table cell: `a`, `b(x)` → a, b (what is before a parenthesis or a brace). */
export function cellNames(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/[({].*$/, '').trim());
}
