/**
 * A mirror built by an earlier release upgrades in place. The fixture (test/fixtures/upgrade/,
 * made by tools/upgrade-fixture/ from the tagged release) is restored into a database of its
 * own, the provider is stood back up as that release saw it, and today's daemon (`sync --once`,
 * the real CLI) runs on it: the migrations the release did not have apply, the typed tables are
 * rebuilt for the newer mapping, the mirror equals the provider, the history the release kept
 * stays and a change after the upgrade adds to it. What the release's reader role may read after
 * the upgrade is upgrade-readers.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { keptPayload } from '../../src/mapping/personal-data.js';
import { MAPPING_VERSION } from '../../src/mapping/version.js';
import { migrationNames, migrationsFolder } from '../../src/store/migration-files.js';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { mirrorPmsVersions, mirrorSnapshot, simulatorPmsVersions, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';
import { restoreRelease, type RestoredRelease } from '../helpers/upgrade.js';

let r: RestoredRelease | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await r?.close();
  r = undefined;
  await h?.close();
  h = undefined;
});

type VersionRow = { key: string; version: number; valid_from: string; valid_to: string | null; modified_at: string; status: string; [k: string]: unknown };

/** Every booking version, keyed `property/number#version`, with the columns that say what the version was. */
async function versions(release: RestoredRelease): Promise<Map<string, VersionRow>> {
  const rows = await release.sql<VersionRow>(
    `SELECT property_id || '/' || number || '#' || version AS key, version, valid_from::text, valid_to::text, modified_at::text, reconstructed,
            fetched_at::text, content_hash, synced_at::text, status, created_at::text, cancelled_at::text, currency_code, arrival_date::text, departure_date::text,
            rooms, room_nights, room_type_ids, room_revenue_net::text, room_revenue_gross::text, total_net::text, total_gross::text, changes
       FROM booking_versions ORDER BY 1`,
  );
  return new Map(rows.map((row) => [row.key, row]));
}

/** Every booking's raw as stored, by key. */
async function storedRaw(release: RestoredRelease): Promise<Record<string, unknown>> {
  const rows = await release.sql<{ key: string; raw: { booking: unknown } }>(`SELECT property_id || '/' || number AS key, raw FROM bookings`);
  return Object.fromEntries(rows.map((row) => [row.key, row.raw.booking]));
}

/** Every booking the provider serves, as today's personal-data policy keeps it (personal data off). */
function keptRaw(release: RestoredRelease): Record<string, unknown> {
  return Object.fromEntries(release.sim.propertyIds().flatMap((p) => release.sim.bookings(p).map((b) => [`${p}/${b.number}`, keptPayload(b, false)] as const)));
}

describe('an upgrade in place', () => {
  it('upgrades a mirror of the release before: migrations, the rebuild, the mirror equal to the provider, history kept and going on', async () => {
    r = await restoreRelease();
    const { manifest } = r;

    // The restored mirror is the release's, and today's simulator serves what the release saw.
    const applied = async () => (await r!.sql<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name')).map((m) => m.name);
    expect(await applied()).toEqual(manifest.migrations);
    const mapping = async () => (await r!.sql<{ value: string }>(`SELECT value FROM mirror_settings WHERE name = 'mapping_version'`))[0]?.value;
    expect(await mapping()).toBe(manifest.mappingVersion);
    expect(Number(manifest.mappingVersion)).toBeLessThan(MAPPING_VERSION);
    expect((await r.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]!.n).toBe(String(manifest.rows.bookings));
    expect(await mirrorSnapshot(r), 'the simulator no longer serves the data of the fixture: see docs/development.md, "The upgrade fixture"').toEqual(
      simulatorSnapshot(r.sim),
    );
    // Raw as the release's policy kept it, which today's keeps otherwise: the rebuild has work to do.
    expect(await storedRaw(r)).not.toEqual(keptRaw(r));
    const before = await versions(r);
    expect(before.size).toBe(manifest.rows.booking_versions);
    // The release kept two versions of each booking changed between its two syncs.
    for (const a of manifest.simulator.amendments) expect(before.has(`${a.propertyId}/${a.number}#2`), `${a.number} has a second version`).toBe(true);

    // Today's daemon on it.
    const upgraded = await runCli(['sync', '--once'], r.env);
    expect(upgraded.code, upgraded.stdout + upgraded.stderr).toBe(0);
    const log = logRecords(upgraded.stdout);
    const all = await migrationNames(migrationsFolder);
    expect(await applied()).toEqual(all);
    expect(log.map((l) => l.msg)).toContainEqual(`migrations applied: ${all.filter((m) => !manifest.migrations.includes(m)).join(', ')}`);
    // The rebuild for the newer mapping ran, said so, and recorded the version.
    expect(log.map((l) => l.msg)).toContainEqual(
      `the mapping from raw payloads to typed rows is newer than the mirror's (version ${manifest.mappingVersion} → ${MAPPING_VERSION}): rebuilding the typed tables from raw and retrying the quarantine before syncing, without provider requests`,
    );
    const rebuilt = log.find((l) => l.msg.startsWith(`mapping version ${MAPPING_VERSION} recorded: `));
    expect(rebuilt?.msg).toMatch(/: [1-9]\d* rows rebuilt from raw/);
    expect(await mapping()).toBe(String(MAPPING_VERSION));

    // The mirror equals the provider, raw as today's personal-data policy keeps it, nothing quarantined.
    expect(await mirrorSnapshot(r)).toEqual(simulatorSnapshot(r.sim));
    expect(await mirrorPmsVersions(r)).toEqual(simulatorPmsVersions(r.sim));
    expect(await storedRaw(r)).toEqual(keptRaw(r));
    expect(await r.sql('SELECT stream, entity_key, reason FROM quarantine')).toEqual([]);

    // History kept: every version the release recorded is there as it was; the rebuild derives
    // the current version's content hash and figures again from raw (the personal-data policy of
    // the new mapping changed raw), and the figures come out the same.
    const after = await versions(r);
    const rederived = (row: VersionRow | undefined) => row && { ...row, content_hash: 'rederived', synced_at: 'rederived' };
    for (const [key, row] of before) {
      if (row.valid_to === null) expect(rederived(after.get(key)), key).toEqual(rederived(row));
      else expect(after.get(key), key).toEqual(row);
    }

    // History goes on: a change after the upgrade is a new version of its booking.
    const changed = r.sim.bookings('500100').find((b) => !manifest.simulator.amendments.some((a) => a.number === b.number) && b.status === 'Active')!;
    r.sim.amendBooking('500100', changed.number, 'reprice');
    const served = r.sim.bookings('500100').find((b) => b.number === changed.number)!;
    const next = await runCli(['sync', '--once'], r.env);
    expect(next.code, next.stdout + next.stderr).toBe(0);
    expect(logRecords(next.stdout).some((l) => /rebuilding the typed tables/.test(l.msg))).toBe(false);
    expect(await mirrorSnapshot(r)).toEqual(simulatorSnapshot(r.sim));
    const mine = [...(await versions(r)).values()].filter((v) => v.key.startsWith(`500100/${changed.number}#`));
    const last = mine.at(-1)!;
    expect(mine.length).toBe([...before.keys()].filter((k) => k.startsWith(`500100/${changed.number}#`)).length + 1);
    expect(new Date(last.valid_from).toISOString()).toBe(new Date(served.modifiedDateTime).toISOString());
    expect(last.valid_to).toBeNull();
    expect(mine.at(-2)!.valid_to).toBe(last.valid_from);
  });
});

describe('going back to an older release', () => {
  it('is refused with a sentence: the schema is newer than the release, the way back is the backup; nothing changed', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const env = daemonEnv(h, { config: { pms: { enabled: false }, occupancy: { enabled: false } } });
    expect((await runCli(['migrate'], env)).code).toBe(0);
    // What a newer release leaves: a migration this one does not have.
    const newer = '9999_from_a_newer_release';
    await h.sql(`INSERT INTO kysely_migration (name, timestamp) VALUES ($1, now()::text)`, [newer]);
    const last = (await migrationNames(migrationsFolder)).at(-1)!;
    const rows = async () => (await h!.sql<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name')).map((m) => m.name);
    const before = await rows();
    for (const command of [['migrate'], ['sync', '--once']]) {
      const run = await runCli(command, env);
      expect(run.code, command.join(' ')).toBe(1);
      expect(logRecords(run.stdout).map((l) => l.msg)).toContainEqual(
        `the schema "${h.schema}" was migrated by a newer staysync (it has ${newer}; this one knows migrations up to ${last}): run that release or a newer one. ` +
          'Going back to an older release is a restore of the backup made before the upgrade (docs/operations.md, "Upgrade")',
      );
    }
    expect(await rows()).toEqual(before);
    expect(await h.sql('SELECT count(*)::int AS n FROM bookings')).toEqual([{ n: 0 }]);
  });
});
