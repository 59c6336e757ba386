/**
 * The upgrade fixture: a mirror made by an earlier release (test/fixtures/upgrade/<release>.sql.gz,
 * a plain-SQL pg_dump) and what the test needs to stand the provider back up as that release saw
 * it (<release>.json): the simulator's seed and properties, the instant its data was generated
 * at and the bookings changed afterwards, each at its instant. Written by main.ts, read by
 * test/integration/upgrade*.test.ts: one home for the format.
 *
 * The simulator's data depends on its clock (creation and modification times are drawn back
 * from "now"), so the data clock stands still at the recorded instants while the data is
 * generated and while each booking changes, and runs with real time otherwise (rate limits,
 * tokens, the Date header). Today's simulator given the same seed, properties and instants
 * serves what the release's served.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { BookingAmendment } from '../simulator/index.js';

/** The release the fixture is made from: its tag, and its commit for a clone without tags. */
export const FIXTURE_RELEASE = { tag: 'v0.1.0', commit: '4158ef1af2243f1b2a20d6a03f2f00d2bc723984' } as const;

/** Where the fixture lives, from the repository's root. */
export const FIXTURE_DIR = join('test', 'fixtures', 'upgrade');

/** The role name the dump's GRANTs carry; a test restoring it renames it (roles are cluster-wide). */
export const FIXTURE_READER_ROLE = 'staysync_fixture_reader';

export interface FixtureAmendment {
  propertyId: string;
  number: string;
  amendment: BookingAmendment;
  /** The data clock's time of the change (ms since the epoch). */
  atMs: number;
}

export interface FixtureManifest {
  release: string;
  commit: string;
  /** The release's `package.json` version (it had no --version). */
  packageVersion: string;
  madeAt: string;
  /** `SELECT version()` of the server the release wrote to, and `pg_dump --version`. */
  postgres: string;
  pgDump: string;
  /** The mirror's and the reporting layer's schemas, as the release named them by default. */
  schema: string;
  reportingSchema: string;
  /** The reader role of the dump's GRANTs (FIXTURE_READER_ROLE), which the release's grant-reader created. */
  readerRole: string;
  /** The migrations the release had applied (kysely_migration), and its mapping version. */
  migrations: string[];
  mappingVersion: string;
  simulator: {
    seed: number;
    properties: { id: string; bookingCount: number }[];
    /** The data clock's time when the simulator generated its data. */
    generatedAtMs: number;
    /** Changes between the release's first and second sync, in order. */
    amendments: FixtureAmendment[];
  };
  /** Rows of some tables in the dump, for a reader of the manifest and as a check of the restore. */
  rows: Record<string, number>;
}

/**
 * The simulator's clock: still at `at` until `release()`, then real time, and still again at
 * each `freeze(at)`. It never goes back: a frozen time is never before a time it told.
 */
export class DataClock {
  private frozenAt: number | undefined;
  private told = 0;

  constructor(at: number) {
    this.frozenAt = at;
  }

  readonly now = (): number => {
    const t = this.frozenAt ?? Date.now();
    this.told = Math.max(this.told, t);
    return t;
  };

  freeze(at: number): void {
    if (at < this.told) throw new Error(`the data clock cannot go back from ${new Date(this.told).toISOString()} to ${new Date(at).toISOString()}`);
    this.frozenAt = at;
  }

  /** Real time again, once it has passed the frozen time (at once when it already has). */
  async release(): Promise<void> {
    const at = this.frozenAt;
    if (at !== undefined && Date.now() <= at) await new Promise((r) => setTimeout(r, at - Date.now() + 1));
    this.frozenAt = undefined;
  }
}

/** The paths of a release's fixture under `root` (the repository). */
export function fixturePaths(root: string, release: string = FIXTURE_RELEASE.tag): { dump: string; manifest: string } {
  return { dump: resolve(root, FIXTURE_DIR, `${release}.sql.gz`), manifest: resolve(root, FIXTURE_DIR, `${release}.json`) };
}

export function readManifest(root: string, release: string = FIXTURE_RELEASE.tag): FixtureManifest {
  return JSON.parse(readFileSync(fixturePaths(root, release).manifest, 'utf8')) as FixtureManifest;
}

/**
 * The dump as SQL any client can run, with the reader role renamed to `readerRole` (which must
 * exist before it runs: roles are not in a dump).
 */
export function readDump(root: string, readerRole: string, release: string = FIXTURE_RELEASE.tag): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(readerRole)) throw new Error(`not a plain role name: ${readerRole}`);
  const text = gunzipSync(readFileSync(fixturePaths(root, release).dump)).toString('utf8');
  return text.replace(new RegExp(`\\b${FIXTURE_READER_ROLE}\\b`, 'g'), readerRole);
}

/**
 * pg_dump's plain output made runnable by any client and any restoring role: psql's
 * meta-commands (`\restrict`, `\unrestrict`, `\connect`), which only psql understands, removed;
 * the default privileges of the role that owned the schemas given to whoever restores them
 * (`--no-owner` makes it the owner), and the reader role given its fixed name.
 */
export function cleanDump(text: string, roles: { reader: string; owner: string }): string {
  return text
    .split('\n')
    .filter((l) => !l.startsWith('\\'))
    .join('\n')
    .replaceAll(`ALTER DEFAULT PRIVILEGES FOR ROLE ${roles.owner} `, 'ALTER DEFAULT PRIVILEGES FOR ROLE CURRENT_USER ')
    .replace(new RegExp(`\\b${roles.reader}\\b`, 'g'), FIXTURE_READER_ROLE);
}
