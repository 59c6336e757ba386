/**
 * The tests' migrated template (helpers/mirror-template.ts) on a server whose login may not
 * create databases: refused with the server's reason, nothing named for the workers, so each
 * harness migrates a schema of its own instead.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { onServer, testDatabaseUrl } from '../helpers/database.js';
import { createMirrorTemplate } from '../helpers/mirror-template.js';
import { startHarness } from '../helpers/harness.js';
import { migrationNames, migrationsFolder } from '../../src/store/migration-files.js';

const role = `no_createdb_${randomBytes(4).toString('hex')}`;
afterAll(async () => onServer(await testDatabaseUrl(), `DROP ROLE IF EXISTS ${role}`));

describe('the mirror template', () => {
  it('is refused, with the reason, to a login that may not create databases; the harness then gives an empty schema', async () => {
    const server = await testDatabaseUrl();
    await onServer(server, `CREATE ROLE ${role} LOGIN NOCREATEDB PASSWORD 'pw'`);
    const asRole = new URL(server);
    asRole.username = role;
    asRole.password = 'pw';
    const named = process.env.STAYSYNC_TEST_MIRROR_TEMPLATE;
    const result = await createMirrorTemplate(asRole.toString());
    expect(result).toEqual({ refused: expect.stringMatching(/permission denied to create database/) });
    // The template the global setup made is still the one named.
    expect(process.env.STAYSYNC_TEST_MIRROR_TEMPLATE).toBe(named);

    // And a harness without a template migrates a schema of its own in the test database.
    delete process.env.STAYSYNC_TEST_MIRROR_TEMPLATE;
    try {
      const h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
      try {
        expect(h.dbUrl).toBe(server);
        expect(await h.sql(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [h.schema])).toEqual([]);
        await h.migrate();
        const files = await migrationNames(migrationsFolder);
        expect(await h.sql(`SELECT count(*)::int AS n FROM kysely_migration`)).toEqual([{ n: files.length }]);
      } finally {
        await h.close();
      }
    } finally {
      process.env.STAYSYNC_TEST_MIRROR_TEMPLATE = named;
    }
  });
});
