/**
 * A mirror made by an earlier release, restored as an operator would find it before an upgrade:
 * the fixture's dump (tools/upgrade-fixture/) run into a database of its own, with the reader
 * role its GRANTs name created first under a name of this test's (roles are cluster-wide), and
 * the provider stood back up as that release saw it: today's simulator with the fixture's seed,
 * properties, data clock and changes.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { packageRoot } from '../../src/config/config.js';
import { exactTypes } from '../../src/store/database.js';
import { startSimulator, type Simulator } from '../../tools/simulator/index.js';
import { DataClock, readDump, readManifest, type FixtureManifest } from '../../tools/upgrade-fixture/fixture.js';
import { daemonEnv } from './cli.js';
import { createScratchDatabase, testDatabaseUrl } from './database.js';
import { fastRateLimits, SIM_CLIENT_ID, SIM_CLIENT_SECRET } from './harness.js';

export interface RestoredRelease {
  manifest: FixtureManifest;
  /** The database the dump was restored into (dropped by close()). */
  dbUrl: string;
  schema: string;
  reportingSchema: string;
  /** The release's reader role, as this test named it, and its password. */
  reader: { role: string; password: string };
  sim: Simulator;
  /** The environment of today's daemon on the restored mirror and the simulator. */
  env: Record<string, string>;
  /** One query on the restored database, search_path the mirror's schema. */
  sql<T extends Record<string, unknown> = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

/** Restores the fixture of `release` (default: the one tools/upgrade-fixture/fixture.ts names). */
export async function restoreRelease(release?: string): Promise<RestoredRelease> {
  const manifest = readManifest(packageRoot, release);
  const serverUrl = await testDatabaseUrl();
  const reader = { role: `staysync_old_reader_${randomBytes(5).toString('hex')}`, password: randomBytes(12).toString('hex') };
  const db = await createScratchDatabase(serverUrl, 'staysync_upgrade');
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  let sim: Simulator | undefined;
  try {
    // The release's grant-reader made a login role; a restore into another cluster recreates it
    // first (pg_dumpall --roles-only), or the dump's GRANTs fail.
    await admin.query(`CREATE ROLE ${reader.role} LOGIN PASSWORD '${reader.password}'`);
    const restore = new pg.Client({ connectionString: db.url });
    await restore.connect();
    try {
      await restore.query(readDump(packageRoot, reader.role, release));
    } finally {
      await restore.end();
    }

    const { seed, properties, generatedAtMs, amendments } = manifest.simulator;
    const clock = new DataClock(generatedAtMs);
    sim = await startSimulator({
      seed,
      properties,
      clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET }],
      rateLimits: fastRateLimits,
      now: clock.now,
    });
    for (const a of amendments) {
      clock.freeze(a.atMs);
      sim.amendBooking(a.propertyId, a.number, a.amendment);
    }
    await clock.release();
  } catch (err) {
    await sim?.close();
    await db.drop();
    await admin.query(`DROP ROLE IF EXISTS ${reader.role}`);
    await admin.end();
    throw err;
  }
  const schema = manifest.schema;
  const started = sim;
  return {
    manifest,
    dbUrl: db.url,
    schema,
    reportingSchema: manifest.reportingSchema,
    reader,
    sim: started,
    env: daemonEnv(
      { dbUrl: db.url, schema, sim: started },
      // The release's occupancy window (tools/upgrade-fixture/main.ts).
      { env: { STAYSYNC_REPORTING_SCHEMA: manifest.reportingSchema, STAYSYNC_LOG_LEVEL: 'info' }, config: { occupancy: { daysBack: 30, daysAhead: 30 } } },
    ),
    async sql(text, params = []) {
      const client = new pg.Client({ connectionString: db.url, options: `-c search_path=${schema},public`, types: exactTypes });
      await client.connect();
      try {
        return (await client.query(text, params)).rows;
      } finally {
        await client.end();
      }
    },
    async close() {
      await started.close();
      await db.drop();
      await admin.query(`DROP ROLE IF EXISTS ${reader.role}`);
      await admin.end();
    },
  };
}
