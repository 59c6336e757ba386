/**
 * The layout's rules, read from the sources' own imports (docs/architecture.md states them):
 * - src/ holds what the production image runs: every file is reached from the entry point,
 *   and none imports from outside src/ (tools/, test/);
 * - no import cycle inside src/, and imports point down the layers (util, config, provider,
 *   store, then mapping/cluster/local-pg, sync, replay/ops, cli);
 * - only the store (src/store/) speaks to PostgreSQL: nothing else imports pg or kysely;
 * - the mapping from provider payloads to rows (src/mapping/) is pure: besides itself it imports
 *   only the provider's schemas and JSON parser, the store's table types and states, and util/
 *   (not the rest of the store, nor the provider client, nor the sync, cluster, ops or replay).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve('.');
const src = join(root, 'src');

/** Module specifiers of one source file: static imports and re-exports, side-effect imports, import(). */
export function importsOf(source: string): string[] {
  const noComments = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const specs = new Set<string>();
  const patterns = [/\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const re of patterns) for (const m of noComments.matchAll(re)) specs.add(m[1]!);
  return [...specs];
}

interface SourceFile {
  /** Relative to src/. */
  path: string;
  /** Files of the project it imports, relative to src/ (outside src/ they start with ..). */
  local: string[];
  /** Packages it imports (node: built-ins left out). */
  packages: string[];
}

function sourceFiles(): Map<string, SourceFile> {
  const files = new Map<string, SourceFile>();
  for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const specs = importsOf(readFileSync(file, 'utf8'));
    const local = specs
      .filter((s) => s.startsWith('.'))
      .map((s) => {
        // NodeNext: sources import './x.js' for './x.ts'.
        const target = resolve(dirname(file), s).replace(/\.js$/, '.ts');
        if (!existsSync(target)) throw new Error(`${relative(root, file)} imports ${s}, which is not a source file`);
        return relative(src, target);
      });
    const packages = specs
      .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
      .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!));
    files.set(relative(src, file), { path: relative(src, file), local, packages });
  }
  return files;
}

/** The cycles of the import graph (each as the files around it, its first file first). */
function cycles(files: Map<string, SourceFile>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of files.get(f)?.local ?? []) {
      if (state.get(d) === 'open') found.push(stack.slice(stack.indexOf(d)));
      else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...files.keys()].sort()) if (!state.has(f)) visit(f);
  return found;
}

const inFolder = (path: string, folder: string) => path.startsWith(`${folder}${sep}`);

describe('the layout', () => {
  const files = sourceFiles();

  it('reads the imports of a source file', () => {
    expect(
      importsOf(
        `import { a } from './a.js';\nimport type {\n  B,\n} from '../b/index.js';\nexport * from "./c.js";\nimport './d.js';\nconst e = await import('./e.js');\n// import { f } from './f.js';\nimport pg from 'pg';`,
      ),
    ).toEqual(['./a.js', '../b/index.js', './c.js', 'pg', './d.js', './e.js']);
  });

  it('src/ is what the image runs: every file is reached from the entry point, none imports from outside src/', () => {
    expect(files.size).toBeGreaterThan(50);
    const reached = new Set<string>();
    const todo = [join('cli', 'main.ts')];
    while (todo.length > 0) {
      const f = todo.pop()!;
      if (reached.has(f)) continue;
      reached.add(f);
      todo.push(...(files.get(f)?.local ?? []));
    }
    expect([...files.keys()].filter((f) => !reached.has(f)).sort()).toEqual([]);
    const outside = [...files.values()].flatMap((f) => f.local.filter((d) => d.startsWith('..')).map((d) => `${f.path} imports ${d}`));
    expect(outside).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(files).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const fake = new Map<string, SourceFile>([
      ['a.ts', { path: 'a.ts', local: ['b.ts'], packages: [] }],
      ['b.ts', { path: 'b.ts', local: ['c.ts'], packages: [] }],
      ['c.ts', { path: 'c.ts', local: ['a.ts'], packages: [] }],
    ]);
    expect(cycles(fake)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });

  it('imports point down: no folder of src/ imports one of a layer above it', () => {
    // Bottom to top; a folder may import its own layer's folder and those below.
    const layers = [['util'], ['config'], ['provider'], ['store'], ['mapping', 'cluster', 'local-pg'], ['privacy'], ['sync'], ['replay', 'ops'], ['cli']];
    const layerOf = (path: string) => layers.findIndex((l) => l.includes(path.split(sep)[0]!));
    const upward = [...files.values()].flatMap((f) =>
      f.local
        .filter((d) => {
          const [from, to] = [layerOf(f.path), layerOf(d)];
          return from < to || (from === to && f.path.split(sep)[0] !== d.split(sep)[0]);
        })
        .map((d) => `${f.path} imports ${d}`),
    );
    expect([...files.keys()].filter((f) => layerOf(f) < 0)).toEqual([]);
    expect(upward).toEqual([]);
  });

  it('only the store imports pg or kysely', () => {
    const offending = [...files.values()].filter((f) => !inFolder(f.path, 'store') && f.packages.some((p) => p === 'pg' || p === 'kysely')).map((f) => f.path);
    expect(offending.sort()).toEqual([]);
  });

  it('the mapping is pure: it imports only the mapping, the provider schemas and JSON, the store schema and states, and util/', () => {
    const mapping = [...files.values()].filter((f) => inFolder(f.path, 'mapping'));
    expect(mapping.length).toBeGreaterThan(3);
    const allowed = (d: string) =>
      inFolder(d, 'mapping') ||
      inFolder(d, join('provider', 'schemas')) ||
      d === join('provider', 'json.ts') ||
      d === join('store', 'schema.ts') ||
      d === join('store', 'states.ts') ||
      inFolder(d, 'util');
    const offending = mapping.flatMap((f) => f.local.filter((d) => !allowed(d)).map((d) => `${f.path} imports ${d}`));
    expect(offending).toEqual([]);
  });
});
