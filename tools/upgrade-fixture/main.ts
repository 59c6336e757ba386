/**
 * Makes the upgrade fixture (`npm run upgrade-fixture`): a mirror built by an earlier release,
 * dumped as plain SQL into test/fixtures/upgrade/, for the test that upgrades it in place
 * (test/integration/upgrade.test.ts). Needs DATABASE_URL: a PostgreSQL server whose major version
 * is the one of `pg_dump` on PATH (the dump is made by that pg_dump); the role of the URL must be
 * allowed to create databases and roles.
 *
 *   node dist-tools/tools/upgrade-fixture/main.js [--release v0.1.0] [--commit <sha>]
 *
 * 1. The release's files are taken from git (`git archive` of the tag, or of the commit hard-coded
 *    in fixture.ts when the clone has no tags) into a temporary folder, never into the checkout.
 * 2. Its node_modules: the checkout's, when the release's package-lock.json locks the same packages;
 *    otherwise `npm ci` in the temporary folder. Then its own build (dist/ and dist-tools/).
 * 3. The release's own simulator, in this process, with a fixed seed, two small properties and a
 *    data clock standing still at the recorded instants (fixture.ts, DataClock).
 * 4. The release's `sync --once` into a fresh database (schemas staysync and reporting, as the
 *    release names them by default); some bookings changed; a second `sync --once` (history); the
 *    release's `grant-reader` for a role (the reader the upgrade test then checks).
 * 5. `pg_dump --no-owner --inserts` of that database, psql's meta-commands removed and the role
 *    renamed to FIXTURE_READER_ROLE, gzipped, beside a manifest of what the test must know.
 * The database, the role, the simulator and the temporary folder are removed at the end.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { packageRoot, type RateLimitScope, type RateWindow } from '../../src/config/config.js';
import type * as SimulatorModule from '../simulator/index.js';
import { defaultRateLimits, type BookingAmendment } from '../simulator/index.js';
import { cleanDump, DataClock, FIXTURE_READER_ROLE, FIXTURE_RELEASE, fixturePaths, type FixtureAmendment, type FixtureManifest } from './fixture.js';

const SEED = 25;
const PROPERTIES = [
  { id: '500100', bookingCount: 30 },
  { id: '500200', bookingCount: 30 },
];
const CLIENT = { clientId: 'fixture-client', clientSecret: `fixture-secret-${randomBytes(8).toString('hex')}` };
/** The production windows divided by 60 (as `npm run simulator -- --scale 60`): the syncs take seconds. */
const RATE_LIMITS = Object.fromEntries(
  Object.entries(defaultRateLimits).map(([scope, windows]) => [
    scope,
    windows.map((w) => ({ limit: w.limit, windowMs: Math.max(1, Math.round(w.windowMs / 60)) })),
  ]),
) as Record<RateLimitScope, RateWindow[]>;
/** Which bookings change between the two syncs: by position among a property's numbers. */
const AMENDED: { index: number; amendment: BookingAmendment | 'cancel-or-reinstate' }[] = [
  { index: 2, amendment: 'reprice' },
  { index: 5, amendment: 'move' },
  { index: 8, amendment: 'cancel-or-reinstate' },
  { index: 11, amendment: 'upgrade' },
];

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function git(args: string[]): string {
  return execFileSync('git', ['-C', packageRoot, ...args], { encoding: 'utf8' }).trim();
}

/** The release's commit: its tag when this clone has it (and it names the hard-coded commit), else that commit. */
function releaseCommit(release: string, commit: string | undefined): string {
  const wanted = commit ?? (release === FIXTURE_RELEASE.tag ? FIXTURE_RELEASE.commit : undefined);
  let tagged: string | undefined;
  try {
    tagged = git(['rev-parse', '--verify', '--quiet', `refs/tags/${release}^{commit}`]);
  } catch {
    tagged = undefined;
  }
  if (tagged && wanted && tagged !== wanted) throw new Error(`the tag ${release} names ${tagged}, not ${wanted}: which one is the release?`);
  const sha = tagged ?? wanted;
  if (!sha) throw new Error(`no tag ${release} in this clone and no --commit`);
  git(['cat-file', '-e', `${sha}^{commit}`]);
  return sha;
}

/** A package-lock.json without the project's own version: the same text, the same node_modules. */
function lockedDependencies(path: string): string {
  const lock = JSON.parse(readFileSync(path, 'utf8')) as { version?: string; packages?: Record<string, { version?: string }> };
  delete lock.version;
  delete lock.packages?.['']?.version;
  return JSON.stringify(lock);
}

/** The release's files in a temporary folder, with node_modules and its own build. */
function checkOut(sha: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'staysync-release-'));
  say(`extracting ${sha} into ${dir}`);
  execFileSync('sh', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'sh', packageRoot, sha, dir]);
  const sameLock = lockedDependencies(join(dir, 'package-lock.json')) === lockedDependencies(join(packageRoot, 'package-lock.json'));
  if (sameLock && existsSync(join(packageRoot, 'node_modules'))) {
    symlinkSync(realpathSync(join(packageRoot, 'node_modules')), join(dir, 'node_modules'));
  } else {
    say('its package-lock.json differs from this checkout: npm ci in the temporary folder');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  const tsc = join(dir, 'node_modules', 'typescript', 'bin', 'tsc');
  say('building the release (dist/ and dist-tools/)');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
  execFileSync(process.execPath, [tsc, '-p', 'tools/tsconfig.json'], { cwd: dir, stdio: 'inherit' });
  return dir;
}

/** Runs the release's CLI; throws with its output unless it exits 0. */
async function releaseCli(dir: string, args: string[], env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [join(dir, 'dist', 'cli', 'main.js'), ...args], { cwd: dir, env: { PATH: process.env.PATH ?? '', ...env } });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the release's \`${args.join(' ')}\` exited ${code}:\n${output}`);
  return output;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { release: { type: 'string' }, commit: { type: 'string' } }, strict: true });
  const release = values.release ?? FIXTURE_RELEASE.tag;
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl)
    throw new Error('DATABASE_URL is not set: the fixture is written by the release into a PostgreSQL server whose major version is the one of pg_dump');
  const sha = releaseCommit(release, values.commit);
  const pgDump = execFileSync('pg_dump', ['--version'], { encoding: 'utf8' }).trim();

  const database = `staysync_fixture_${randomBytes(5).toString('hex')}`;
  const role = `staysync_fixture_reader_${randomBytes(5).toString('hex')}`;
  const dbUrl = withDatabase(serverUrl, database);
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  let dir: string | undefined;
  let sim: SimulatorModule.Simulator | undefined;
  let roleMade = false;
  try {
    dir = checkOut(sha);
    const packageVersion = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
    const simulator = (await import(pathToFileURL(join(dir, 'dist-tools', 'tools', 'simulator', 'index.js')).href)) as typeof SimulatorModule;
    const generatedAtMs = Math.floor(Date.now() / 1000) * 1000;
    const clock = new DataClock(generatedAtMs);
    sim = await simulator.startSimulator({ seed: SEED, properties: PROPERTIES, clients: [CLIENT], rateLimits: RATE_LIMITS, now: clock.now });
    await clock.release();
    say(`the release's simulator at ${sim.url}: ${PROPERTIES.map((p) => `${p.id} (${p.bookingCount} bookings)`).join(', ')}, seed ${SEED}`);

    await admin.query(`CREATE DATABASE "${database}"`);
    const configPath = join(dir, 'staysync.json');
    // A month either side of today of the PMS's occupancy, not the default two years: a small dump.
    writeFileSync(configPath, JSON.stringify({ rateLimits: RATE_LIMITS, occupancy: { daysBack: 30, daysAhead: 30 } }));
    const env = {
      DATABASE_URL: dbUrl,
      STAYSYNC_PROVIDER_URL: sim.url,
      STAYSYNC_REFERENCE_DATA_URL: sim.url,
      STAYSYNC_CLIENT_ID: CLIENT.clientId,
      STAYSYNC_CLIENT_SECRET: CLIENT.clientSecret,
      STAYSYNC_PROPERTY_IDS: sim.propertyIds().join(','),
      STAYSYNC_CONFIG: configPath,
      STAYSYNC_LOG_LEVEL: 'warn',
    };
    say(`the release's sync --once into ${database}`);
    await releaseCli(dir, ['sync', '--once'], env);

    // Some bookings change, each at an instant of its own, for a history of two versions.
    const amendments: FixtureAmendment[] = [];
    let at = Math.ceil(Date.now() / 1000) * 1000 + 1000;
    for (const p of PROPERTIES) {
      const numbers = sim
        .bookings(p.id)
        .map((b) => b.number)
        .sort();
      for (const { index, amendment } of AMENDED) {
        const number = numbers[index]!;
        const status = sim.bookings(p.id).find((b) => b.number === number)!.status;
        const kind: BookingAmendment = amendment === 'cancel-or-reinstate' ? (status === 'Cancelled' ? 'reinstate' : 'cancel') : amendment;
        clock.freeze(at);
        sim.amendBooking(p.id, number, kind);
        amendments.push({ propertyId: p.id, number, amendment: kind, atMs: at });
        at += 1000;
      }
    }
    await clock.release();
    say(`${amendments.length} bookings changed; the release's sync --once again`);
    await releaseCli(dir, ['sync', '--once'], env);

    roleMade = true;
    await releaseCli(dir, ['grant-reader', role], { ...env, STAYSYNC_READER_PASSWORD: randomBytes(18).toString('base64url') });
    say(`the release's grant-reader ${role}`);

    const mirror = new pg.Client({ connectionString: dbUrl });
    await mirror.connect();
    let manifest: FixtureManifest;
    let dumpOwner = '';
    try {
      const migrations = (await mirror.query<{ name: string }>('SELECT name FROM staysync.kysely_migration ORDER BY name')).rows.map((r) => r.name);
      const mapping = (await mirror.query<{ value: string }>(`SELECT value FROM staysync.mirror_settings WHERE name = 'mapping_version'`)).rows[0]?.value;
      const rows: Record<string, number> = {};
      for (const table of [
        'bookings',
        'booking_versions',
        'booking_summaries',
        'pms_reservations',
        'pms_guests',
        'properties',
        'daily_occupancy',
        'quarantine',
      ]) {
        rows[table] = Number((await mirror.query<{ n: string }>(`SELECT count(*) AS n FROM staysync.${table}`)).rows[0]!.n);
      }
      const { postgres, owner } = (await mirror.query<{ postgres: string; owner: string }>('SELECT version() AS postgres, current_user AS owner')).rows[0]!;
      dumpOwner = owner;
      manifest = {
        release,
        commit: sha,
        packageVersion,
        madeAt: new Date().toISOString(),
        postgres,
        pgDump,
        schema: 'staysync',
        reportingSchema: 'reporting',
        readerRole: FIXTURE_READER_ROLE,
        migrations,
        mappingVersion: mapping ?? 'none',
        simulator: { seed: SEED, properties: PROPERTIES, generatedAtMs, amendments },
        rows,
      };
    } finally {
      await mirror.end();
    }

    // Plain SQL, so that the test can run it through its own client; INSERTs rather than COPY
    // (COPY ... FROM stdin is psql's); no owner, as a restore into another cluster is done.
    const dump = execFileSync('pg_dump', ['--dbname', dbUrl, '--no-owner', '--inserts', '--rows-per-insert=100'], {
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    const paths = fixturePaths(packageRoot, release);
    const gz = gzipSync(cleanDump(dump, { reader: role, owner: dumpOwner }), { level: 9 });
    mkdirSync(dirname(paths.dump), { recursive: true });
    writeFileSync(paths.dump, gz);
    writeFileSync(paths.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
    say(`wrote ${paths.dump} (${gz.length} bytes, ${dump.length} bytes of SQL) and ${paths.manifest}`);
  } finally {
    await sim?.close();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    if (roleMade) await admin.query(`DROP ROLE IF EXISTS "${role}"`);
    await admin.end();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`upgrade fixture: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
