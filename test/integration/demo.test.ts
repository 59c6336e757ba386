/**
 * `npm run demo` as a new user runs it: it syncs the built-in simulator into the local
 * PostgreSQL server, prints how to connect with the read-only login (the URL without password,
 * the password's file), and keeps following; meanwhile another program (psql, a reporting
 * tool) reads the reporting views with that login; Ctrl-C ends it all with exit 0. No password
 * is printed.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
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
  it('prints the read-only login that another client uses to read reporting.daily_kpis while the daemon runs, and no password', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'staysync-demo-'));
    chmodSync(dataDir, 0o755); // as root the server runs as the OS user postgres
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const [pgPort, opsPort] = [await freePort(), await freePort()];
    // 60 bookings, not the default 600: the same steps (a first sync, a second of only the
    // changes, the reports, the login, the daemon following), without the minutes that the
    // default's first sync waits for the scaled provider's rate windows.
    const child = spawn(process.execPath, [resolve('dist-tools/tools/demo/main.js'), '--bookings', '60'], {
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
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));

    const passwordFile = await waitFor('the password file', () => /^DEMO_PASSWORD_FILE=(\S+)$/m.exec(output)?.[1], 120_000);
    const url = /^DEMO_DATABASE_URL=(\S+)$/m.exec(output)?.[1];
    expect(url).toBe(`postgres://staysync_reader@127.0.0.1:${pgPort}/postgres`);
    expect(passwordFile).toBe(join(dataDir, 'reader.credentials'));
    expect(output).toContain(`PGPASSWORD="$(cat ${passwordFile})" psql '${url}' -c 'select * from reporting.daily_kpis limit 5'`);
    // Where the revenue dashboard is, and the data source Grafana imports it with: the same login.
    expect(output).toContain('the dashboard config/grafana/staysync-revenue.json. In Grafana, Dashboards → Import');
    expect(output).toContain(`host 127.0.0.1:${pgPort}, database postgres, user staysync_reader, its password in ${passwordFile}`);
    const password = readFileSync(passwordFile, 'utf8').trim();
    const superuserPassword = readFileSync(join(dataDir, 'postgres.credentials'), 'utf8').trim();

    const withPassword = new URL(url!);
    withPassword.password = password;
    const client = new pg.Client({ connectionString: withPassword.toString() });
    await client.connect();
    try {
      const kpis = await client.query('select * from reporting.daily_kpis limit 5');
      expect(kpis.rows.length).toBe(5);
      expect(kpis.fields.map((f) => f.name)).toEqual(expect.arrayContaining(['property_id', 'stay_date', 'currency_code', 'rooms_sold']));
      // The daemon is still following: a change the simulator makes arrives while the client watches
      // (the reader login reads the mirror's tables without personal data in staysync_readable).
      const before = Number((await client.query('select count(*) as n from staysync_readable.bookings')).rows[0].n);
      await waitFor(
        'a new booking followed',
        async () => Number((await client.query('select count(*) as n from staysync_readable.bookings')).rows[0].n) > before,
        60_000,
        500,
      );
    } finally {
      await client.end();
    }

    child.kill('SIGINT');
    expect(await exited, output.slice(-2000)).toBe(0);
    expect(output.includes(password), "the reader's password in the demo's output").toBe(false);
    expect(output.includes(superuserPassword), "the superuser's password in the demo's output").toBe(false);
  });
});
