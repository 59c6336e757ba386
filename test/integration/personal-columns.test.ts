/**
 * One list of the columns that can hold guests' personal data (src/store/personal-columns.ts),
 * held to the migrated mirror: every text, JSON and text-array column of its tables is either
 * a personal column (readers see it only with --personal-data) or listed as holding none, and
 * neither list names a column the mirror does not have. A payload stored as received (`raw`,
 * `payload`, a quarantined body) holds whatever the provider sends about its guests: personal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { openDatabase } from '../../src/store/database.js';
import { COLUMNS_WITHOUT_PERSONAL_DATA, PERSONAL_COLUMNS } from '../../src/store/personal-columns.js';
import { createLogger } from '../../src/util/log.js';
import { dropSchema, query, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../helpers/database.js';

describe('personal columns', () => {
  let url: string;
  let schema: string;
  let columns: { table: string; column: string }[];
  let every: { table: string; column: string; text: boolean }[];

  beforeAll(async () => {
    url = await testDatabaseUrl();
    schema = uniqueSchema('cols');
    const config = loadConfig({ env: {}, overrides: { database: { url, schema, reportingSchema: reportingSchemaOf(schema) } } });
    const h = await openDatabase(config, createLogger('silent'));
    try {
      await h.migrate();
    } finally {
      await h.close();
    }
    // The mirror's tables, wherever staysync keeps them (the mirror schema and the schemas named
    // after it), the reporting layer aside (views of the mirror, and the time zones).
    every = await query<{ table: string; column: string; text: boolean }>(
      url,
      schema,
      `SELECT c.relname AS table, a.attname AS column,
              t.typcategory = 'S' OR t.typname IN ('json', 'jsonb')
              OR (t.typcategory = 'A' AND (SELECT e.typcategory = 'S' OR e.typname IN ('json', 'jsonb') FROM pg_type e WHERE e.oid = t.typelem)) AS text
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         JOIN pg_type t ON t.oid = a.atttypid
        WHERE (n.nspname = $1 OR n.nspname LIKE $1 || '\\_%') AND n.nspname <> $2 AND c.relkind IN ('r', 'p')
        ORDER BY 1, a.attnum`,
      [schema, reportingSchemaOf(schema)],
    );
    columns = every.filter((x) => x.text);
  });
  afterAll(async () => {
    if (schema) await dropSchema(url, schema);
  });

  it('classifies every text, JSON and text-array column of the mirror as personal or as holding no personal data', () => {
    const listed = (lists: Readonly<Record<string, readonly string[]>>, t: string, c: string) => lists[t]?.includes(c) ?? false;
    const unclassified = columns.filter((x) => !listed(PERSONAL_COLUMNS, x.table, x.column) && !listed(COLUMNS_WITHOUT_PERSONAL_DATA, x.table, x.column));
    expect(unclassified.map((x) => `${x.table}.${x.column}`)).toEqual([]);
    const both = columns.filter((x) => listed(PERSONAL_COLUMNS, x.table, x.column) && listed(COLUMNS_WITHOUT_PERSONAL_DATA, x.table, x.column));
    expect(both.map((x) => `${x.table}.${x.column}`)).toEqual([]);
  });

  it('names no column the mirror does not have', () => {
    const have = new Set(every.map((x) => `${x.table}.${x.column}`));
    const stale = [PERSONAL_COLUMNS, COLUMNS_WITHOUT_PERSONAL_DATA].flatMap((lists) =>
      Object.entries(lists).flatMap(([t, cs]) => cs.map((c) => `${t}.${c}`).filter((k) => !have.has(k))),
    );
    expect(stale).toEqual([]);
  });

  it('counts every payload kept as received as personal: raw of guest payloads, change events, quarantined bodies', () => {
    for (const [table, column] of [
      ['bookings', 'raw'],
      ['booking_summaries', 'raw'],
      ['booking_services', 'raw'],
      ['pms_reservations', 'raw'],
      ['pms_guests', 'raw'],
      ['pms_guest_loyalty_cards', 'raw'],
      ['integration_storage_bookings', 'raw'],
      ['webhook_events', 'payload'],
      ['quarantine', 'raw_body'],
    ] as const)
      expect(PERSONAL_COLUMNS[table] ?? [], `${table}.${column}`).toContain(column);
  });
});
