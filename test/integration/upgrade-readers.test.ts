/**
 * A reader role granted by the release before `reader_grants` (migrations/0015_reader_grants.sql)
 * follows today's policy after the upgrade. That release's grant-reader gave SELECT on every
 * table and view and default privileges for the tables added later, so without more the role
 * reads every personal column and the erasure key a later migration makes. The fixture's mirror
 * (test/fixtures/upgrade/, with the role of the release's grant-reader) is restored, today's
 * daemon upgrades it (`sync --once`), and the role is tried by connecting as it.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PERSONAL_COLUMNS } from '../../src/store/personal-columns.js';
import { secretSchemaOf } from '../../src/config/schema-names.js';
import { runCli } from '../helpers/cli.js';
import { restoreRelease, type RestoredRelease } from '../helpers/upgrade.js';

let r: RestoredRelease | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
});

/** What a statement run as the role gives: its rows, or the error's SQLSTATE and message. */
async function asRole(release: RestoredRelease, text: string): Promise<{ rows: number } | { code: string; message: string }> {
  const u = new URL(release.dbUrl);
  u.username = release.reader.role;
  u.password = release.reader.password;
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  try {
    return { rows: (await client.query(text)).rowCount ?? 0 };
  } catch (err) {
    return { code: (err as { code?: string }).code ?? '', message: (err as Error).message };
  } finally {
    await client.end();
  }
}

describe("the release's reader roles after the upgrade", () => {
  it('read neither the erasure key nor any personal column', async () => {
    r = await restoreRelease();
    const { schema } = r;
    // Before the upgrade the role reads what that release let it read: everything, personal columns included.
    expect(await asRole(r, `SELECT customer_first_name FROM ${schema}.bookings LIMIT 1`)).toEqual({ rows: 1 });

    const upgraded = await runCli(['sync', '--once'], r.env);
    expect(upgraded.code, upgraded.stdout + upgraded.stderr).toBe(0);
    expect(await r.sql(`SELECT 1 FROM ${secretSchemaOf(schema)}.erasure_key`)).toHaveLength(1);

    // Every column it must not read, each tried alone: all of them refused (insufficient privilege).
    const secret = [...Object.entries(PERSONAL_COLUMNS), ['erasure_key', ['key']] as const].flatMap(([table, columns]) => columns.map((c) => `${table}.${c}`));
    const readable: string[] = [];
    for (const column of secret) {
      const [table, name] = column.split('.');
      const got = await asRole(r, `SELECT ${name} FROM ${table === 'erasure_key' ? secretSchemaOf(schema) : schema}.${table} LIMIT 1`);
      if (!('code' in got) || got.code !== '42501') readable.push(column);
    }
    expect(readable, 'what the role of the release before still reads').toEqual([]);
  });
});
