/**
 * The code's picture of the database and the migrated database are one: a fresh schema is
 * migrated, and its catalog compared with
 * - the kysely table types of src/store/schema.ts (the tables of the mirror's schema and of its
 *   secret schema): the same tables, the same columns, a type
 *   each column's values come back as (text as string, timestamptz as Date, numeric and bigint
 *   as exact text, jsonb as unknown, ...), the same nullability;
 * - the lists of src/store/states.ts: every CHECK constraint of a column to a list holds
 *   exactly the list `checkedColumns` names for it, every listed column has one, and the
 *   column's type in schema.ts is that list's union.
 * So neither a migration nor the code can change a table or a state alone.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as states from '../../src/store/states.js';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase } from '../../src/store/database.js';
import { createLogger } from '../../src/util/log.js';
import { secretSchemaOf } from '../../src/config/schema-names.js';
import { dropSchema, query, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../helpers/database.js';

interface CatalogColumn {
  table: string;
  column: string;
  /** The data type, or for an array the type of its elements with [] (`int4[]`). */
  dataType: string;
  nullable: boolean;
}

/** What a column's values come back as in TypeScript, by PostgreSQL type (the pool's parsers: store/database.ts). */
const selectTypeOf: Record<string, string> = {
  text: 'string',
  'character varying': 'string',
  character: 'string',
  uuid: 'string',
  integer: 'number',
  smallint: 'number',
  'double precision': 'number',
  real: 'number',
  bigint: 'string',
  numeric: 'string',
  boolean: 'boolean',
  'timestamp with time zone': 'Date',
  'timestamp without time zone': 'string',
  date: 'string',
  jsonb: 'unknown',
  json: 'unknown',
  'text[]': 'string[]',
  'int4[]': 'number[]',
  bytea: 'Buffer',
};

/** A TypeScript select type in its plainest spelling: the elements of a text[] may be NULL, and may be typed so. */
const plain = (type: string) => type.replace(/^\(string \| null\)\[\]$/, 'string[]');

/** Splits `A, B<C, D>, E` at its top-level commas. */
function topLevelArgs(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '<' || c === '(' || c === '[' || c === '{') depth++;
    else if (c === '>' || c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  out.push(text.slice(start).trim());
  return out;
}

interface TsColumn {
  /** The type its values come back as, without null. */
  base: string;
  nullable: boolean;
}

/** The tables of schema.ts's `Database`, with each column's select type. */
export function tablesOfSchemaTs(source: string): Map<string, Map<string, TsColumn>> {
  const text = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const aliases = new Map<string, string>();
  for (const m of text.matchAll(/^\s*(?:export )?type (\w+) = ([^;]+);/gm)) aliases.set(m[1]!, m[2]!.trim());
  const interfaces = new Map<string, Map<string, string>>();
  for (const m of text.matchAll(/^\s*export interface (\w+) \{([^}]*)\}/gm)) {
    const cols = new Map<string, string>();
    for (const line of m[2]!.split(';')) {
      const c = /^\s*(\w+)\??:\s*([\s\S]+?)\s*$/.exec(line);
      if (c) cols.set(c[1]!, c[2]!.replace(/\s+/g, ' '));
    }
    interfaces.set(m[1]!, cols);
  }
  /** The select and insert types of a column's type (through aliases, ColumnType and Generated). */
  const resolve = (type: string, seen = 0): { select: string; insert: string } => {
    const t = type.trim();
    const generic = /^(ColumnType|Generated)<([\s\S]+)>$/.exec(t);
    if (generic) {
      const [select, insert] = topLevelArgs(generic[2]!);
      return { select: resolve(select!, seen + 1).select, insert: insert ?? select! };
    }
    const alias = aliases.get(t);
    if (alias !== undefined && seen < 10) return resolve(alias, seen + 1);
    return { select: t, insert: t };
  };
  const unionOf = (t: string) => t.split('|').map((p) => p.trim());
  const tables = new Map<string, Map<string, TsColumn>>();
  for (const [table, iface] of interfaces.get('Database') ?? []) {
    const cols = new Map<string, TsColumn>();
    for (const [col, type] of interfaces.get(iface) ?? []) {
      const { select, insert } = resolve(type);
      const parts = unionOf(select);
      const base = parts.filter((p) => p !== 'null').join(' | ');
      // `unknown` (jsonb) holds null already: whether it may be NULL is what it takes on insert.
      cols.set(col, { base, nullable: base === 'unknown' ? unionOf(insert).includes('null') : parts.includes('null') });
    }
    tables.set(table, cols);
  }
  return tables;
}

/** The unions of states.ts by type name, with their values. */
function unionsOfStates(): Map<string, readonly string[]> {
  const source = readFileSync('src/store/states.ts', 'utf8');
  const exported = states as unknown as Record<string, readonly string[]>;
  const unions = new Map<string, readonly string[]>();
  for (const m of source.matchAll(/^export type (\w+) = \(typeof (\w+)\)\[number\];/gm)) unions.set(m[1]!, exported[m[2]!]!);
  return unions;
}

/** `CHECK ((state = ANY (ARRAY['a'::text, 'b'::text])))` → ['a', 'b']. */
function checkValues(def: string): string[] | undefined {
  const m = /ARRAY\[(.*)\]/.exec(def);
  return m ? [...m[1]!.matchAll(/'((?:[^']|'')*)'::text/g)].map((x) => x[1]!.replace(/''/g, "'")) : undefined;
}

describe('schema drift', () => {
  let url: string;
  let schema: string;
  let columns: CatalogColumn[];
  let checks: { table: string; column: string; def: string }[];

  beforeAll(async () => {
    url = await testDatabaseUrl();
    schema = uniqueSchema('drift');
    const config = loadConfig({ env: {}, overrides: { database: { url, schema, reportingSchema: reportingSchemaOf(schema) } } });
    const h = await openDatabase(config, createLogger('silent'));
    try {
      await h.migrate();
    } finally {
      await h.close();
    }
    columns = (
      await query<{ table_name: string; column_name: string; data_type: string; udt_name: string; is_nullable: string }>(
        url,
        schema,
        `SELECT c.table_name, c.column_name, c.data_type, c.udt_name, c.is_nullable FROM information_schema.columns c
           JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
          WHERE c.table_schema IN ($1, $2) AND c.table_name NOT LIKE 'kysely_%' ORDER BY c.table_name, c.ordinal_position`,
        [schema, secretSchemaOf(schema)],
      )
    ).map((r) => ({
      table: r.table_name,
      column: r.column_name,
      dataType: r.data_type === 'ARRAY' ? `${r.udt_name.replace(/^_/, '')}[]` : r.data_type,
      nullable: r.is_nullable === 'YES',
    }));
    checks = await query<{ table: string; column: string; def: string }>(
      url,
      schema,
      `SELECT cl.relname AS table, a.attname AS column, pg_get_constraintdef(co.oid) AS def
         FROM pg_constraint co JOIN pg_class cl ON cl.oid = co.conrelid JOIN pg_namespace n ON n.oid = cl.relnamespace
         JOIN pg_attribute a ON a.attrelid = co.conrelid AND a.attnum = ANY (co.conkey)
        WHERE co.contype = 'c' AND n.nspname IN ($1, $2) AND array_length(co.conkey, 1) = 1`,
      [schema, secretSchemaOf(schema)],
    );
  });
  afterAll(async () => {
    if (schema) await dropSchema(url, schema);
  });

  it('schema.ts has every table and column of the migrated schema, with the type and nullability its values come back with', () => {
    const ts = tablesOfSchemaTs(readFileSync('src/store/schema.ts', 'utf8'));
    const unions = unionsOfStates();
    const problems: string[] = [];
    const catalogTables = new Set(columns.map((c) => c.table));
    for (const t of catalogTables) if (!ts.has(t)) problems.push(`table ${t}: in the database, not in schema.ts`);
    for (const t of ts.keys()) if (!catalogTables.has(t)) problems.push(`table ${t}: in schema.ts, not in the database`);
    for (const c of columns) {
      const col = ts.get(c.table)?.get(c.column);
      if (!ts.has(c.table)) continue;
      if (!col) {
        problems.push(`${c.table}.${c.column}: in the database, not in schema.ts`);
        continue;
      }
      const expected = selectTypeOf[c.dataType];
      // A column of a state union is text; an array of one (booking_versions.changes) text[].
      const element = col.base.endsWith('[]') ? col.base.slice(0, -2) : null;
      const base = unions.has(col.base) ? 'string' : element !== null && unions.has(element) ? 'string[]' : plain(col.base);
      if (expected === undefined) problems.push(`${c.table}.${c.column}: the test does not know the type ${c.dataType}`);
      else if (base !== expected) problems.push(`${c.table}.${c.column}: ${c.dataType} comes back as ${expected}, schema.ts says ${col.base}`);
      if (col.nullable !== c.nullable)
        problems.push(`${c.table}.${c.column}: ${c.nullable ? 'nullable' : 'NOT NULL'} in the database, ${col.nullable ? 'nullable' : 'not'} in schema.ts`);
    }
    for (const [t, cols] of ts)
      for (const col of cols.keys())
        if (catalogTables.has(t) && !columns.some((c) => c.table === t && c.column === col)) problems.push(`${t}.${col}: in schema.ts, not in the database`);
    expect(problems).toEqual([]);
  });

  it('every CHECK list of a column is the list of states.ts, and schema.ts types the column with its union', () => {
    const ts = tablesOfSchemaTs(readFileSync('src/store/schema.ts', 'utf8'));
    const unions = unionsOfStates();
    const problems: string[] = [];
    const listed = new Map(checks.map((c) => [`${c.table}.${c.column}`, checkValues(c.def)]));
    for (const [key, values] of listed) {
      if (values === undefined) continue;
      const expected = states.checkedColumns[key];
      if (!expected) problems.push(`${key}: a CHECK list in the database, not in checkedColumns`);
      else if ([...values].sort().join() !== [...expected].sort().join())
        problems.push(`${key}: the database allows ${values.join(', ')}; states.ts ${expected.join(', ')}`);
    }
    for (const [key, expected] of Object.entries(states.checkedColumns)) {
      if (!listed.get(key)) {
        problems.push(`${key}: in checkedColumns, no CHECK list in the database`);
        continue;
      }
      const [table, column] = key.split('.') as [string, string];
      const col = ts.get(table)?.get(column);
      const union = col && (unions.get(col.base) ?? (col.base.endsWith('[]') ? unions.get(col.base.slice(0, -2)) : undefined));
      if (!union || union.join() !== expected.join()) problems.push(`${key}: schema.ts types it ${col?.base ?? '(missing)'}, not the union of its list`);
    }
    expect(problems).toEqual([]);
  });

  it('reads schema.ts as it is written (the parser can fail)', () => {
    const ts = tablesOfSchemaTs(`
      type Stamp = ColumnType<Date, Date | string, Date | string>;
      export interface ATable {
        /** a comment; with a semicolon */
        id: Generated<number>;
        at: Stamp;
        state: ColumnType<CursorState, CursorState | undefined, CursorState>;
        note: string | null;
      }
      export interface Database { a: ATable; }`);
    expect([...ts.get('a')!]).toEqual([
      ['id', { base: 'number', nullable: false }],
      ['at', { base: 'Date', nullable: false }],
      ['state', { base: 'CursorState', nullable: false }],
      ['note', { base: 'string', nullable: true }],
    ]);
  });
});
