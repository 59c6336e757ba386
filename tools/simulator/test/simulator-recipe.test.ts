/**
 * The recipe of docs/development.md "Trying it against the simulator", as an operator follows it: the
 * standalone simulator (dist-tools/tools/simulator/main.js, what `npm run simulator` runs) with a time
 * scale, then the daemon with exactly the variables the simulator prints. The full sync must
 * finish with no 429: the daemon paces itself by the same scaled windows as the simulator.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logRecords, runCli, waitFor } from '../../../test/helpers/cli.js';
import { dropSchema, query, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../../../test/helpers/database.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('the simulator recipe', () => {
  it('prints the daemon command with the scaled windows; the daemon syncs with them, no 429', async () => {
    const configPath = join(mkdtempSync(join(tmpdir(), 'staysync-sim-')), 'staysync.json');
    const sim = spawn(
      process.execPath,
      [resolve('dist-tools/tools/simulator/main.js'), '--scale', '60', '--port', '0', '--properties', '2', '--bookings', '40', '--daemon-config', configPath],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    sim.stdout.on('data', (d) => (out += d));
    sim.stderr.on('data', (d) => (out += d));
    const exited = new Promise((r) => sim.on('exit', r));
    cleanups.push(async () => {
      sim.kill('SIGTERM');
      await exited;
    });
    await waitFor('the simulator to print the daemon command', () => out.includes('npx staysync sync --once'), 15_000);

    // The windows written for the daemon: the production ones, 60 times shorter.
    const written = JSON.parse(readFileSync(configPath, 'utf8')) as { rateLimits: Record<string, { limit: number; windowMs: number }[]> };
    expect(written.rateLimits['bookingDetails']).toEqual([
      { limit: 10, windowMs: 17 },
      { limit: 200, windowMs: 1000 },
      { limit: 4000, windowMs: 60_000 },
    ]);
    expect(Object.keys(written.rateLimits).sort()).toEqual(['bookingDetails', 'bookingList', 'integrationStorage', 'standard', 'token']);

    // The variables as printed (`NAME=value` words of the command lines).
    const env: Record<string, string> = {};
    for (const m of out.matchAll(/\b(STAYSYNC_[A-Z_]+)=(\S+)/g)) env[m[1]!] = m[2]!;
    expect(Object.keys(env).sort()).toEqual([
      'STAYSYNC_CLIENT_ID',
      'STAYSYNC_CLIENT_SECRET',
      'STAYSYNC_CONFIG',
      'STAYSYNC_PROPERTY_IDS',
      'STAYSYNC_PROVIDER_URL',
      'STAYSYNC_REFERENCE_DATA_URL',
    ]);
    expect(env['STAYSYNC_CONFIG']).toBe(configPath);
    expect(env['STAYSYNC_PROVIDER_URL']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env['STAYSYNC_REFERENCE_DATA_URL']).toBe(env['STAYSYNC_PROVIDER_URL']);

    const url = await testDatabaseUrl();
    const schema = uniqueSchema('simrecipe');
    cleanups.push(() => dropSchema(url, schema));
    const run = await runCli(['sync', '--once'], {
      ...env,
      DATABASE_URL: url,
      STAYSYNC_DB_SCHEMA: schema,
      STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(schema),
      STAYSYNC_LOG_LEVEL: 'info',
    });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const [row] = await query<{ n: string }>(url, schema, 'SELECT count(*) AS n FROM bookings');
    expect(Number(row!.n)).toBe(80);

    // The closing line counts the provider's answers: with the same windows on both sides, no 429.
    const finished = logRecords(run.stdout + run.stderr).find((r) => r.msg.startsWith('sync finished'));
    expect(finished?.['provider']).toMatchObject({ responses429: 0 });
  });
});
