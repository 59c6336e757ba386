/**
 * `staysync --version` (and `-V`) through the real entry point, as an operator runs it before
 * and after an upgrade: the release (package.json's version), the last migration the release
 * applies and its mapping version (a newer one than the mirror's rebuilds the typed tables at
 * the next start). It needs no configuration and no database.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAPPING_VERSION } from '../../src/mapping/version.js';
import { runCli } from '../helpers/cli.js';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
const lastMigration = readdirSync('migrations')
  .filter((f) => f.endsWith('.sql'))
  .sort()
  .at(-1)!
  .replace(/\.sql$/, '');

describe('staysync --version', () => {
  it('prints the release, its last migration and its mapping version, with no configuration nor database, exit 0', async () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+$/);
    const line = `staysync ${pkg.version} (migrations up to ${lastMigration}, mapping version ${MAPPING_VERSION})\n`;
    for (const flag of ['--version', '-V']) {
      // An environment that would fail any command needing the configuration or the database.
      const run = await runCli([flag], { STAYSYNC_CONFIG: '/nonexistent/staysync.json', DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect({ flag, code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ flag, code: 0, stdout: line, stderr: '' });
    }
  });

  it('is named in the usage text', async () => {
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--version, -V\s+print the release/);
  });
});
