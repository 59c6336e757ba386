/**
 * The tests' migrated template (helpers/mirror-template.ts) on a server whose login may not
 * create databases: refused with the server's reason, nothing named for the workers, so each
 * harness migrates a schema of its own instead. And what a killed run left behind (its template
 * and its copies), which the next run's setup drops.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { onServer, query, testDatabaseUrl } from '../helpers/database.js';
import { copyMirrorTemplate, createMirrorTemplate, dropLeftovers } from '../helpers/mirror-template.js';
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

  it('drops what killed runs left (their templates and copies) and nothing of a run that may be going on', async () => {
    const server = await testDatabaseUrl();
    const id = () => randomBytes(4).toString('hex');
    const copyOf = (template: string) => `t_${template.slice('staysync_template_'.length)}_${randomBytes(5).toString('hex')}`;
    const template = async (owner: object | undefined) => {
      const name = `staysync_template_${id()}`;
      await onServer(server, `CREATE DATABASE "${name}"`);
      if (owner) await onServer(server, `COMMENT ON DATABASE "${name}" IS '${JSON.stringify(owner)}'`);
      const copy = copyOf(name);
      await onServer(server, `CREATE DATABASE "${copy}"`);
      return [name, copy];
    };
    const now = new Date().toISOString();
    const gonePid = spawnSync(process.execPath, ['-e', '']).pid;
    const killedHere = await template({ host: hostname(), pid: gonePid, at: now });
    const longAgo = await template({ host: 'elsewhere', pid: 1, at: new Date(Date.now() - 13 * 3600_000).toISOString() });
    const elsewhereNow = await template({ host: 'elsewhere', pid: 1, at: now });
    const runningHere = await template({ host: hostname(), pid: process.pid, at: now });
    const unsigned = await template(undefined);
    const orphan = `t_${id()}_${randomBytes(5).toString('hex')}`;
    await onServer(server, `CREATE DATABASE "${orphan}"`);
    const ours = await copyMirrorTemplate(server);
    const oursName = new URL(ours!.url).pathname.slice(1);

    await dropLeftovers(server);
    const all = (await query<{ datname: string }>(server, 'public', 'SELECT datname FROM pg_database')).map((r) => r.datname);
    const kept = (names: string[]) => names.filter((n) => all.includes(n));
    try {
      expect(kept([...killedHere, ...longAgo, orphan])).toEqual([]);
      expect(kept([...elsewhereNow, ...runningHere, ...unsigned, oursName, process.env.STAYSYNC_TEST_MIRROR_TEMPLATE!])).toEqual([
        ...elsewhereNow,
        ...runningHere,
        ...unsigned,
        oursName,
        process.env.STAYSYNC_TEST_MIRROR_TEMPLATE!,
      ]);
    } finally {
      for (const name of [...elsewhereNow, ...runningHere, ...unsigned].reverse()) await onServer(server, `DROP DATABASE IF EXISTS "${name}"`);
    }
  });
});
