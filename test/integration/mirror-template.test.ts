/**
 * The tests' migrated template (helpers/mirror-template.ts) on a server whose login may not
 * create databases: refused with the server's reason, nothing named for the workers, so each
 * harness migrates a schema of its own instead. And the copies a killed run left behind, which the
 * next run's setup drops.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { onServer, query, testDatabaseUrl } from '../helpers/database.js';
import { copyMirrorTemplate, createMirrorTemplate, dropOrphanCopies } from '../helpers/mirror-template.js';
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

  it("drops the copies whose template is gone (a run that was killed), and no other run's", async () => {
    const server = await testDatabaseUrl();
    const orphan = `t_00000000_${randomBytes(5).toString('hex')}`;
    await onServer(server, `CREATE DATABASE "${orphan}"`);
    const live = await copyMirrorTemplate(server);
    expect(live).toBeDefined();
    const liveName = new URL(live!.url).pathname.slice(1);
    const exists = async (name: string) =>
      (await query<{ n: number }>(server, 'public', 'SELECT count(*)::int AS n FROM pg_database WHERE datname = $1', [name]))[0]!.n;
    await dropOrphanCopies(server);
    expect({ orphan: await exists(orphan), live: await exists(liveName) }).toEqual({ orphan: 0, live: 1 });
  });
});
