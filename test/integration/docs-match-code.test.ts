/**
 * The tables, views and functions the documentation names exist in a freshly migrated
 * database, and every one of the mirror is documented: docs/tables-and-reporting.md is their
 * home. (Commands, flags, variables and metrics: test/unit/docs-match-code.test.ts.)
 *
 * The catalog: the relations (tables, views) and functions of the mirror's schema, of its
 * reporting schema and of its secret schema, after `migrate()` (which also applies the
 * reporting views and the readers' policy). The readable schema's views are generated, one per
 * relation of the mirror, and are not listed again.
 *
 * What counts as naming an object, strictly (a new kind of mention gets a rule here):
 * - a row of a Markdown table whose first header cell is `table`, `view` or `helper` (any
 *   page): every backticked name of its first cell (`name`, `name(args)`, `schema.name`);
 * - a schema-qualified name anywhere in the pages, code blocks included: `reporting.x`,
 *   `staysync.x`, `staysync_readable.x`, `staysync_secret.x` (the default schema names); not
 *   a file name (`reporting.ts`, `staysync.dump`) nor a quoted setting (`'staysync.connection'`);
 * - in an `sql` block, its `--` comments left out: the name after FROM or JOIN (not a function
 *   call, nor `EXTRACT(x FROM y)` or `IS DISTINCT FROM y`), unless the block defines it
 *   (WITH … AS), and the table of dbt's `source('staysync', 'x')`;
 * - in the `yaml` block of docs/dbt.md: every `- name:` of a source's `tables:`.
 * Documented: a name in the first cell of such a table row in docs/tables-and-reporting.md.
 * Which tables have `synced_at`: the list of those without it in tables-and-reporting.md is the
 * catalog's, and the tables dbt.md's two lists name have it, or have not, as they say.
 *
 * And the example queries work for whom they are written: every SELECT (or WITH) of an `sql`
 * block is planned (EXPLAIN) by a reader without personal data, on the search path
 * `staysync_readable, reporting` (what `grant-reader <role>` gives); one that names the mirror's
 * schema (`staysync.x`) is for a reader granted --personal-data, and is planned by one. A
 * column a reader may not read, a view that is not there, fails. dbt's templates (`{{ … }}`)
 * and the statements that are not queries (SET, UPDATE) are left out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase } from '../../src/store/database.js';
import { readableSchemaOf, secretSchemaOf } from '../../src/config/schema-names.js';
import { grantReader } from '../../src/store/reader-role.js';
import { createLogger } from '../../src/util/log.js';
import { dropSchema, query, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../helpers/database.js';
import { cellNames, codeBlocks, docPages, tables, type DocPage } from '../helpers/docs.js';
import { connectAs, dropRoles } from '../helpers/readers.js';

/** The default schema names the pages use, and the test's own schema each stands for. */
type SchemaKind = 'mirror' | 'reporting' | 'secret' | 'readable';
const DOC_SCHEMAS: Record<string, SchemaKind> = { staysync: 'mirror', reporting: 'reporting', staysync_secret: 'secret', staysync_readable: 'readable' };

/** Objects issue 27 added: the test must see them in the catalog and in the documentation. */
const ISSUE_27 = [
  'pms_invoices',
  'pms_invoice_items',
  'pms_companies',
  'pms_guest_loyalty_cards',
  'room_type_inventory_days',
  'stay_units',
  'pms_accommodation_inventories',
  'daily_occupancy_history',
  'receivables',
  'receivables_aging',
  'forecast',
  'forecast_at',
  'segment_mix',
  'segment_mix_monthly',
  'block_pickup',
  'daily_kpis_by_room_type',
  'stay_units_reconciliation',
  'occupancy_as_of',
  'occupancy_pace',
];

const pages = docPages();
const PASSWORD = 'docs-reader-secret';
const reference = pages.find((p) => p.path === 'docs/tables-and-reporting.md')!;

/** Tables whose rows are objects of the database. */
const objectTables = (page: DocPage) => tables(page).filter((t) => ['table', 'view', 'helper'].includes(t.header[0]!));

interface Mention {
  page: string;
  /** The schema kind when the page qualified the name. */
  schema?: SchemaKind;
  name: string;
  how: string;
}

function qualified(schema: string, name: string): { schema?: SchemaKind; name: string } {
  return schema in DOC_SCHEMAS ? { schema: DOC_SCHEMAS[schema]!, name } : { name };
}

/** Every mention of an object in the pages, by the rules of the header comment. */
function mentions(): Mention[] {
  const out: Mention[] = [];
  for (const page of pages) {
    for (const t of objectTables(page)) {
      for (const row of t.rows) {
        for (const n of cellNames(row[0]!)) {
          const [a, b] = n.split('.');
          out.push({ page: page.path, ...(b === undefined ? { name: a! } : qualified(a!, b)), how: `table row (line ${t.line})` });
        }
      }
    }
    for (const m of page.text.matchAll(/(?<![\w./='-])(staysync_readable|staysync_secret|staysync|reporting)\.([a-z_][a-z0-9_]*)\b/g)) {
      if (/^(ts|js|sql|md|json|yaml|dump)$/.test(m[2]!)) continue;
      out.push({ page: page.path, ...qualified(m[1]!, m[2]!), how: `qualified name ${m[0]}` });
    }
    for (const block of codeBlocks(page)) {
      if (block.lang === 'sql') {
        // Comments are prose ("-- from property_clock.today").
        const sql = block.text.replace(/--.*$/gm, '');
        const defined = new Set([...sql.matchAll(/\b([a-z_][a-z0-9_]*)\s+AS\s+(?:MATERIALIZED\s+)?\(/gi)].map((m) => m[1]!.toLowerCase()));
        for (const m of sql.matchAll(/(?<!\(\s*\w+\s+|DISTINCT\s+)\b(?:FROM|JOIN)\s+([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?)(?![\w.(]|\s*\()/gi)) {
          const [a, b] = m[1]!.split('.');
          if (b === undefined && defined.has(a!.toLowerCase())) continue;
          out.push({ page: page.path, ...(b === undefined ? { name: a! } : qualified(a!, b)), how: `sql: ${m[0].replace(/\s+/g, ' ')}` });
        }
        for (const m of sql.matchAll(/source\('staysync', '([a-z_0-9]+)'\)/g)) out.push({ page: page.path, name: m[1]!, how: `dbt ${m[0]}` });
      }
      if (block.lang === 'yaml' && page.path === 'docs/dbt.md') {
        // `tables:` then its `- name:` items, deeper than it; a line back at its depth or above ends it.
        let depth: number | undefined;
        for (const line of block.text.split('\n')) {
          const indent = line.length - line.trimStart().length;
          if (/^\s*tables:\s*$/.test(line)) depth = indent;
          else if (depth !== undefined && line.trim() !== '' && indent <= depth) depth = undefined;
          const m = /^\s*- name: ([a-z_0-9]+)\s*$/.exec(line);
          if (m && depth !== undefined) out.push({ page: page.path, name: m[1]!, how: 'dbt sources.yml table' });
        }
      }
    }
  }
  return out;
}

describe('the documentation and the database', () => {
  let url: string;
  let schema: string;
  const roles: string[] = [];
  /** The mirror's tables with and without a synced_at column. */
  const synced = new Set<string>();
  const notSynced = new Set<string>();
  /** Names of the relations and functions by schema kind. */
  const catalog: Record<SchemaKind, Set<string>> = { mirror: new Set(), reporting: new Set(), secret: new Set(), readable: new Set() };

  beforeAll(async () => {
    url = await testDatabaseUrl();
    schema = uniqueSchema('docs');
    const config = loadConfig({ env: {}, overrides: { database: { url, schema, reportingSchema: reportingSchemaOf(schema) } } });
    const h = await openDatabase(config, createLogger('silent'));
    try {
      await h.migrate();
      for (const [role, personalData] of [
        [`${schema}_plain`, false],
        [`${schema}_personal`, true],
      ] as const) {
        roles.push(role);
        await grantReader(h.db, { role, schema, reportingSchema: reportingSchemaOf(schema), password: PASSWORD, personalData });
      }
    } finally {
      await h.close();
    }
    const kinds: Record<string, SchemaKind> = {
      [schema]: 'mirror',
      [reportingSchemaOf(schema)]: 'reporting',
      [secretSchemaOf(schema)]: 'secret',
      [readableSchemaOf(schema)]: 'readable',
    };
    const rows = await query<{ schema: string; name: string }>(
      url,
      schema,
      `SELECT n.nspname AS schema, c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY ($1) AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
       UNION
       SELECT n.nspname, p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY ($1)`,
      [Object.keys(kinds)],
    );
    for (const r of rows) catalog[kinds[r.schema]!].add(r.name);
    for (const r of await query<{ name: string; synced: boolean }>(
      url,
      schema,
      `SELECT t.table_name AS name, EXISTS (SELECT 1 FROM information_schema.columns c
                 WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'synced_at') AS synced
         FROM information_schema.tables t WHERE t.table_schema = $1 AND t.table_type = 'BASE TABLE'`,
      [schema],
    ))
      (r.synced ? synced : notSynced).add(r.name);
  });

  afterAll(async () => {
    if (!schema) return;
    await dropRoles((text) => query(url, schema, text), roles);
    await dropSchema(url, schema);
  });

  it('the catalog holds what issue 27 added (the checks below go over it)', () => {
    const all = new Set([...catalog.mirror, ...catalog.reporting]);
    expect(ISSUE_27.filter((n) => !all.has(n))).toEqual([]);
    expect(catalog.mirror.size).toBeGreaterThan(70);
    expect(catalog.reporting.size).toBeGreaterThan(30);
  });

  it('every table, view and function the pages name exists', () => {
    const found = mentions();
    expect(found.length).toBeGreaterThan(200);
    const any = new Set([...catalog.mirror, ...catalog.reporting, ...catalog.secret]);
    const missing = found.filter((m) => !(m.schema === undefined ? any.has(m.name) : catalog[m.schema].has(m.name)));
    expect(missing.map((m) => `${m.page}: ${m.schema ? `${m.schema} ` : ''}${m.name} (${m.how})`)).toEqual([]);
  });

  it('every table, view and function of the mirror is documented in docs/tables-and-reporting.md', () => {
    const documented = new Set(objectTables(reference).flatMap((t) => t.rows.flatMap((r) => cellNames(r[0]!).map((n) => n.split('.').pop()!))));
    const undocumented = (['mirror', 'reporting', 'secret'] as const).flatMap((k) => [...catalog[k]].filter((n) => !documented.has(n)).map((n) => `${k} ${n}`));
    expect(undocumented).toEqual([]);
    expect(ISSUE_27.filter((n) => !documented.has(n))).toEqual([]);
  });

  it('the pages say which tables have synced_at as the catalog has it', () => {
    /** The backticked names of the page from `from` to `to` that are tables of the mirror. */
    const tablesBetween = (page: DocPage, from: string, to: string) => {
      const start = page.text.indexOf(from);
      const end = page.text.indexOf(to, start + from.length);
      expect(start, `${page.path}: "${from}"`).toBeGreaterThanOrEqual(0);
      expect(end, `${page.path}: "${to}"`).toBeGreaterThan(start);
      return [...page.text.slice(start, end).matchAll(/`([a-z_0-9]+)`/g)].map((m) => m[1]!).filter((n) => synced.has(n) || notSynced.has(n));
    };
    // tables-and-reporting.md names every table without it (kysely's own two aside: the migrator's, not staysync's).
    const without = tablesBetween(reference, 'Every table that mirrors the provider', 'has `synced_at`');
    expect(new Set(without)).toEqual(new Set([...notSynced].filter((n) => !n.startsWith('kysely_'))));
    // dbt.md: the tables its two lists name.
    const dbt = pages.find((p) => p.path === 'docs/dbt.md')!;
    const have = tablesBetween(dbt, 'These have `synced_at`:', 'These do not:');
    const haveNot = tablesBetween(dbt, 'These do not:', 'How it is kept:');
    expect(have.length).toBeGreaterThan(5);
    expect(have.filter((n) => !synced.has(n))).toEqual([]);
    expect(haveNot.length).toBeGreaterThan(5);
    expect(haveNot.filter((n) => !notSynced.has(n))).toEqual([]);
  });

  it('every example query is planned by the reader it is written for', async () => {
    const names: Record<string, string> = {
      reporting: reportingSchemaOf(schema),
      staysync_readable: readableSchemaOf(schema),
      staysync: schema,
    };
    // Unquoted in the connection options (a space would split them): the test schemas are plain identifiers.
    const path = `${readableSchemaOf(schema)},${reportingSchemaOf(schema)}`;
    const plain = await connectAs(url, `${schema}_plain`, PASSWORD, path);
    const personal = await connectAs(url, `${schema}_personal`, PASSWORD, path);
    const problems: string[] = [];
    let planned = 0;
    try {
      for (const block of pages.flatMap(codeBlocks).filter((b) => b.lang === 'sql' && !b.text.includes('{{'))) {
        const statements = block.text
          .replace(/--.*$/gm, '')
          .split(/;\s*$/m)
          .map((t) => t.trim())
          .filter((t) => /^(SELECT|WITH)\b/i.test(t));
        for (const text of statements) {
          const forPersonal = /(?<![\w./'-])staysync\./.test(text);
          const sql = text.replace(/(?<![\w./'-])(staysync_readable|staysync|reporting)\.(?=[a-z_])/g, (_, s: string) => `"${names[s]}".`);
          planned += 1;
          await (forPersonal ? personal : plain)
            .query(`EXPLAIN ${sql}`)
            .catch((err: Error) =>
              problems.push(`${block.page}: ${err.message} (as a reader ${forPersonal ? 'with' : 'without'} personal data): ${text.slice(0, 160)}`),
            );
        }
      }
    } finally {
      await plain.end();
      await personal.end();
    }
    expect(planned).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  });
});
