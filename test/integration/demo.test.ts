/**
 * `npm run demo` as a new user runs it: it syncs the built-in simulator into the local
 * PostgreSQL server, prints the URL, and keeps following; meanwhile another program (psql, a
 * reporting tool) reads the reporting views with that URL; Ctrl-C ends it all with exit 0.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, waitFor } from '../helpers/cli.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

describe('npm run demo', () => {
  it('prints a URL that another client uses to read reporting.daily_kpis while the daemon runs', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'staysync-demo-'));
    chmodSync(dataDir, 0o755); // as root the server runs as the OS user postgres
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const [pgPort, opsPort] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [resolve('dist/demo.js')], {
      env: {
        PATH: process.env.PATH ?? '',
        STAYSYNC_DATA_DIR: dataDir,
        STAYSYNC_LOCAL_PG_PORT: String(pgPort),
        STAYSYNC_OPS_PORT: String(opsPort),
        STAYSYNC_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    cleanups.push(() => void child.kill('SIGKILL'));
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));

    const url = await waitFor('the URL', () => /^DEMO_DATABASE_URL=(\S+)$/m.exec(output)?.[1], 120_000);
    expect(url).toMatch(new RegExp(`^postgres://postgres:[^@]+@127\\.0\\.0\\.1:${pgPort}/postgres$`));
    expect(output).toContain(`psql '${url}' -c 'select * from reporting.daily_kpis limit 5'`);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const kpis = await client.query('select * from reporting.daily_kpis limit 5');
      expect(kpis.rows.length).toBe(5);
      expect(kpis.fields.map((f) => f.name)).toEqual(expect.arrayContaining(['property_id', 'stay_date', 'currency_code', 'rooms_sold']));
      // The daemon is still following: a change the simulator makes arrives while the client watches.
      const before = Number((await client.query('select count(*) as n from staysync.bookings')).rows[0].n);
      await waitFor('a new booking followed', async () => Number((await client.query('select count(*) as n from staysync.bookings')).rows[0].n) > before, 60_000, 500);
    } finally {
      await client.end();
    }

    child.kill('SIGINT');
    expect(await exited, output.slice(-2000)).toBe(0);
  });
});
