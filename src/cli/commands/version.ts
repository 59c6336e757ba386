/**
 * `--version`: what this release is, for an operator before and after an upgrade. The release
 * is package.json's version (read at run time from the installed package, so the line is true of
 * the files that run); with it the last migration the release applies to a mirror and its
 * mapping version, whose change makes the next start rebuild the typed tables from raw.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { packageRoot } from '../../config/config.js';
import { MAPPING_VERSION } from '../../mapping/version.js';
import { migrationNames, migrationsFolder } from '../../store/migration-files.js';

/** `staysync 0.2.0 (migrations up to 0017_pseudonyms, mapping version 4)`. */
export async function versionLine(): Promise<string> {
  const pkg = JSON.parse(await readFile(resolve(packageRoot, 'package.json'), 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error(`${resolve(packageRoot, 'package.json')} has no version`);
  const last = (await migrationNames(migrationsFolder)).at(-1) ?? 'none';
  return `staysync ${pkg.version} (migrations up to ${last}, mapping version ${MAPPING_VERSION})`;
}
