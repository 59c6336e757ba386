/**
 * Backups: history cannot be fetched again (the provider serves only each booking's latest
 * version), so the mirror is backed up as docs/operations.md says and restored as an operator
 * would: `pg_dump --format=custom` of the mirror's schema while the daemon runs, `pg_restore`
 * into a new database, `status` there, then the daemon continues on it (`sync --once`, the real
 * CLI). The mirror ends equal to the provider, every version of the dump is still there, the
 * changes since the dump are mirrored (their latest versions: one in between is lost, as the
 * page says) and the reporting schema, which the dump leaves out, is made again.
 *
 * pg_dump and pg_restore come from PATH: they cannot dump a server of a newer major version
 * than theirs, so with such a server (the embedded PostgreSQL 17 of a run without DATABASE_URL
 * beside a PostgreSQL 15 client) the test is skipped and says why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { exactTypes } from '../../src/store/database.js';
import { secretSchemaOf } from '../../src/config/schema-names.js';
import { daemonEnv, freePort, logRecords, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { createScratchDatabase, reportingSchemaOf, testDatabaseUrl } from '../helpers/database.js';
import { mirrorPmsVersions, mirrorSnapshot, simulatorPmsVersions, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';

/** Why pg_dump and pg_restore of PATH cannot back up the test server, or undefined when they can. */
async function cannotDump(url: string): Promise<string | undefined> {
  const majorOf = (tool: string) => {
    const run = spawnSync(tool, ['--version'], { encoding: 'utf8' });
    return run.error ? undefined : Number(/\b(\d+)(\.\d+)*\b/.exec(run.stdout)?.[1]);
  };
  const dump = majorOf('pg_dump');
  const restore = majorOf('pg_restore');
  if (dump === undefined || restore === undefined) return 'pg_dump and pg_restore are not on PATH';
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const server = Math.floor(Number((await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]!.v) / 10_000);
  await client.end();
  if (server > Math.min(dump, restore)) {
    return `pg_dump ${dump} cannot dump a PostgreSQL ${server} server: run it with DATABASE_URL naming a server of version ${dump} or older (CI's PostgreSQL 15)`;
  }
  return undefined;
}

const skipReason = await cannotDump(await testDatabaseUrl());
if (skipReason) process.stdout.write(`backup.test.ts skipped: ${skipReason}\n`);

let h: Harness | undefined;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await h?.close();
  h = undefined;
});

type VersionRow = { key: string; valid_to: string | null; synced_at: string; modified_at: string; [k: string]: unknown };

/** Every booking version, keyed `property/number#version`, every column as text. */
async function versions(url: string, schema: string): Promise<Map<string, VersionRow>> {
  const client = new pg.Client({ connectionString: url, types: exactTypes });
  await client.connect();
  try {
    const { rows } = await client.query<{ key: string; row: VersionRow }>(
      `SELECT v.property_id || '/' || v.number || '#' || v.version AS key, to_jsonb(v) AS row FROM "${schema}".booking_versions v ORDER BY 1`,
    );
    return new Map(rows.map((r) => [r.key, { ...r.row, key: r.key }]));
  } finally {
    await client.end();
  }
}

/** Runs one statement on a database. */
async function onDatabase(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** Waits for the next second: each change of a booking in a second of its own, its versions told apart by their time. */
const nextSecond = () => new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 20));

/** The versions of one booking, oldest first. */
const versionsOf = (all: Map<string, VersionRow>, propertyId: string, number: string) =>
  [...all.values()].filter((v) => v.key.startsWith(`${propertyId}/${number}#`));

describe('a backup of the mirror', () => {
  it.skipIf(skipReason !== undefined)(
    'dumped while the daemon runs, restored into a new database: the daemon continues there, the mirror equals the provider, the history up to the dump intact',
    async () => {
      const P = '500100';
      h = await startHarness({
        sim: {
          properties: [
            { id: P, bookingCount: 40 },
            { id: '500200', bookingCount: 40 },
          ],
        },
      });
      const harness = h;
      const config = { occupancy: { daysBack: 10, daysAhead: 10 } };
      const equalToProvider = (sql: Pick<Harness, 'sql'>) => async () => isDeepStrictEqual(await mirrorSnapshot(sql), simulatorSnapshot(harness.sim));

      // A daemon syncs the mirror; the provider changes some bookings: history.
      const port = await freePort();
      const daemon = startCli(['run'], daemonEnv(h, { allStreams: true, env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' }, config }));
      cleanups.push(() => void daemon.child.kill('SIGKILL'));
      await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200, 60_000);
      await waitFor('the first sync', equalToProvider(h), 60_000);
      const numbers = h.sim
        .bookings(P)
        .filter((b) => b.status === 'Active')
        .map((b) => b.number)
        .sort();
      const [x, y, z] = [numbers[3]!, numbers[6]!, numbers[9]!];
      h.sim.amendBooking(P, x, 'reprice');
      h.sim.amendBooking(P, y, 'move');
      await waitFor('the changes before the dump', equalToProvider(h), 60_000);

      // The backup, of the mirror's schema, while the daemon runs.
      const atDump = await versions(h.dbUrl, h.schema);
      const dir = mkdtempSync(join(tmpdir(), 'staysync-backup-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const file = join(dir, 'mirror.dump');
      // The mirror's schema and its secret one (the erasure key), as docs/operations.md says.
      const dumped = spawnSync(
        'pg_dump',
        ['--dbname', h.dbUrl, '--format=custom', `--schema=${h.schema}`, `--schema=${secretSchemaOf(h.schema)}`, '--file', file],
        {
          encoding: 'utf8',
        },
      );
      expect(dumped.status, dumped.stderr).toBe(0);
      expect(statSync(file).size).toBeGreaterThan(0);
      expect(versionsOf(atDump, P, x)).toHaveLength(2);

      // After the dump the provider goes on: x changes twice (the daemon records both versions
      // here), z once, two bookings are new. Then the database is lost and the daemon stopped.
      await nextSecond();
      h.sim.amendBooking(P, x, 'upgrade');
      await waitFor('x upgraded', equalToProvider(h), 60_000);
      const lostModifiedAt = h.sim.bookings(P).find((b) => b.number === x)!.modifiedDateTime;
      await nextSecond();
      h.sim.amendBooking(P, x, 'cancel');
      h.sim.amendBooking(P, z, 'reprice');
      h.sim.mutate({ count: 0, newCount: 2, propertyId: P });
      await waitFor('the changes after the dump', equalToProvider(h), 60_000);
      expect(versionsOf(await versions(h.dbUrl, h.schema), P, x)).toHaveLength(4);
      daemon.child.kill('SIGTERM');
      expect((await daemon.done).code).toBe(0);

      // A restore that leaves the secret schema out has no erasure key: the daemon refuses to
      // start there with the sentence that says what to restore, and writes nothing.
      const keyless = await createScratchDatabase(await testDatabaseUrl(), 'staysync_keyless');
      cleanups.push(() => keyless.drop());
      // (pg_restore --schema restores that schema's objects, not the schema itself.)
      await onDatabase(keyless.url, `CREATE SCHEMA "${h.schema}"`);
      const partial = spawnSync('pg_restore', ['--dbname', keyless.url, '--no-owner', `--schema=${h.schema}`, file], { encoding: 'utf8' });
      expect(partial.status, partial.stderr).toBe(0);
      const refused = await runCli(['sync', '--once'], daemonEnv({ dbUrl: keyless.url, schema: h.schema, sim: h.sim }, { allStreams: true, config }));
      expect(refused.code).toBe(1);
      expect(refused.stdout + refused.stderr).toContain(`the erasure key is missing: ${secretSchemaOf(h.schema)}.erasure_key is not in`);
      expect(await versions(keyless.url, h.schema)).toEqual(atDump);

      // The restore, into a new database.
      const restored = await createScratchDatabase(await testDatabaseUrl(), 'staysync_restore');
      cleanups.push(() => restored.drop());
      const pgRestore = spawnSync('pg_restore', ['--dbname', restored.url, '--no-owner', file], { encoding: 'utf8' });
      expect(pgRestore.status, pgRestore.stderr).toBe(0);
      const there = { dbUrl: restored.url, schema: h.schema, sim: h.sim };
      const sqlThere = {
        sql: async <T extends Record<string, unknown>>(text: string, params: unknown[] = []) => {
          const client = new pg.Client({ connectionString: restored.url, options: `-c search_path=${h!.schema},public`, types: exactTypes });
          await client.connect();
          try {
            return (await client.query<T>(text, params)).rows;
          } finally {
            await client.end();
          }
        },
      };
      expect(await versions(restored.url, h.schema)).toEqual(atDump);

      // What `status` says there before the daemon runs: the mirror as it was at the dump.
      const env = daemonEnv(there, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' }, config });
      const before = await runCli(['status', '--json'], env);
      expect(before.code, before.stderr).toBe(0);
      const statusBefore = JSON.parse(before.stdout) as Record<string, any>;
      // The daemon that ran at the dump: its run open, its replica syncing the connection (until
      // its heartbeat expires), every property caught up at the dump's list position.
      expect(statusBefore.lastRun).toMatchObject({ command: 'run', pid: daemon.child.pid, finishedAt: null, outcome: null });
      expect(statusBefore.connections).toEqual([
        expect.objectContaining({ connection: 'default', state: 'running', syncedBy: expect.stringContaining(`pid ${daemon.child.pid}`) }),
      ]);
      expect(statusBefore.properties.map((p: Record<string, unknown>) => [p.propertyId, p.state, p.caughtUp])).toEqual([
        [P, 'active', true],
        ['500200', 'active', true],
      ]);

      // The daemon continues on the restored database.
      const continued = await runCli(['sync', '--once'], env);
      expect(continued.code, continued.stdout + continued.stderr).toBe(0);
      // The daemon of the dump was of this host and is gone: its registration is removed at once and its run closed.
      const said = logRecords(continued.stdout).map((l) => l.msg);
      expect(said).toContain('a staysync process of this host that is gone left its registration: removed, its connections are free');
      expect(said).toContain('closed 1 run(s) left open by a process that was killed (outcome killed)');
      expect(said.some((m) => /rebuilding the typed tables|migrations applied/.test(m))).toBe(false);
      expect(await mirrorSnapshot(sqlThere)).toEqual(simulatorSnapshot(h.sim));
      expect(await mirrorPmsVersions(sqlThere)).toEqual(simulatorPmsVersions(h.sim));

      // Every version of the dump is still there as it was; those open at the dump are closed by the next one.
      const after = await versions(restored.url, h.schema);
      for (const [key, row] of atDump) {
        const now = after.get(key);
        if (row.valid_to === null && now?.valid_to !== null) expect({ ...now, valid_to: null, synced_at: row.synced_at }, key).toEqual(row);
        else expect(now, key).toEqual(row);
      }
      // x's latest version is there; the one between the dump and the restore is not (the provider serves only the latest).
      const xs = versionsOf(after, P, x);
      expect(xs).toHaveLength(3);
      expect(xs.map((v) => new Date(v.modified_at).toISOString())).not.toContain(new Date(lostModifiedAt).toISOString());
      expect(xs.at(-2)!.valid_to).toBe(xs.at(-1)!.valid_from);
      expect(versionsOf(after, P, z)).toHaveLength(versionsOf(atDump, P, z).length + 1);

      // The reporting schema, left out of the dump, is made again.
      const [kpis] = await sqlThere.sql<{ n: string }>(`SELECT count(*) AS n FROM "${reportingSchemaOf(h.schema)}".daily_kpis`);
      expect(Number(kpis!.n)).toBeGreaterThan(0);

      // And `status`: the run of the dump closed as killed, the last one finished, the position moved on.
      const afterStatus = await runCli(['status', '--json'], env);
      expect(afterStatus.code, afterStatus.stderr).toBe(0);
      const statusAfter = JSON.parse(afterStatus.stdout) as Record<string, any>;
      expect(statusAfter.lastRun).toMatchObject({ command: 'sync --once', outcome: 'ok' });
      expect(statusAfter.replicas).toEqual([]);
      const positionOf = (status: Record<string, any>) => status.properties.find((p: Record<string, unknown>) => p.propertyId === P).position as string;
      expect(Date.parse(positionOf(statusAfter))).toBeGreaterThan(Date.parse(positionOf(statusBefore)));
      const [killed] = await sqlThere.sql<{ outcome: string }>('SELECT outcome FROM sync_runs WHERE pid = $1', [daemon.child.pid]);
      expect(killed).toEqual({ outcome: 'killed' });
    },
  );
});
