/**
 * The real entry point (`node dist/cli/main.js`) as the container runs it: exit statuses, clear
 * configuration errors, SIGKILL at random points, token loss and --recover, SIGTERM.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { configFile, daemonEnv, freePort, logRecords, metricValue, runCli, startCli, waitFor } from '../helpers/cli.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fastRateLimits, mirrorSnapshot, SIM_CLIENT_ID, SIM_CLIENT_SECRET, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;

afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('configuration and usage errors', () => {
  it('exits 2 naming the bad key, without a stack trace', async () => {
    // Independent processes: started together.
    const emptyUrlFile = join(mkdtempSync(join(tmpdir(), 'staysync-cli-secret-')), 'url');
    writeFileSync(emptyUrlFile, '\n');
    const [badPort, badFile, badUrl, noSecret, emptyUrl, noPasswordFile] = await Promise.all([
      runCli(['migrate'], { STAYSYNC_OPS_PORT: 'abc' }),
      runCli(['migrate'], {
        STAYSYNC_CONFIG: configFile({ rateLimits: { bookingList: [{ limit: -1, windowMs: 1000 }] }, sync: { pollCron: 5 } }),
      }),
      runCli(['migrate'], { DATABASE_URL: 'mysql://nope' }),
      runCli(['sync', '--once'], { DATABASE_URL: 'postgres://127.0.0.1:1/x', STAYSYNC_CLIENT_ID: 'x', STAYSYNC_PROPERTY_IDS: '1' }),
      runCli(['migrate'], { DATABASE_URL_FILE: emptyUrlFile }),
      // Read before the database is opened (none answers there).
      runCli(['grant-reader', 'bi'], { DATABASE_URL: 'postgres://127.0.0.1:1/x', STAYSYNC_READER_PASSWORD_FILE: '/nonexistent/password' }),
    ]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('STAYSYNC_OPS_PORT: expected a whole number');

    expect(badFile.code).toBe(2);
    expect(badFile.stderr).toContain('rateLimits.bookingList.0.limit');
    expect(badFile.stderr).toContain('sync.pollCron');

    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toContain('database.url (from DATABASE_URL): expected a postgres:// URL');

    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toContain('STAYSYNC_CLIENT_SECRET');

    expect(emptyUrl.code).toBe(2);
    expect(emptyUrl.stderr).toContain(`DATABASE_URL_FILE: ${emptyUrlFile} is empty`);
    expect(noPasswordFile.code).toBe(2);
    expect(noPasswordFile.stderr).toContain('STAYSYNC_READER_PASSWORD_FILE: cannot read /nonexistent/password (ENOENT)');

    for (const r of [badPort, badFile, badUrl, noSecret, emptyUrl, noPasswordFile]) expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('exits 1 with a sentence naming the setting when the ops port is taken or the database does not exist', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const { createServer } = await import('node:net');
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '0.0.0.0', () => r()));
    const port = (taken.address() as { port: number }).port;
    try {
      const busy = await runCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) } }));
      expect(busy.code).toBe(1);
      expect(busy.stdout).toContain(
        `the ops endpoint could not listen on 0.0.0.0:${port}: the port is in use; set ops.port (STAYSYNC_OPS_PORT) to a free port`,
      );
      expect(busy.stdout + busy.stderr).not.toMatch(/\n\s+at /);
    } finally {
      taken.close();
    }
    const url = new URL(h.dbUrl);
    url.pathname = '/staysync_no_such_database';
    const missing = await runCli(['sync', '--once'], daemonEnv(h, { env: { DATABASE_URL: url.toString() } }));
    expect(missing.code).toBe(1);
    expect(
      logRecords(missing.stdout)
        .map((l) => l.msg)
        .join('\n'),
    ).toMatch(
      /the database postgres:\/\/\S+\/staysync_no_such_database \(DATABASE_URL\) refused us: 3D000: database "staysync_no_such_database" does not exist\. Check DATABASE_URL/,
    );
    expect(missing.stdout + missing.stderr).not.toMatch(/\n\s+at /);
  });

  it('follows the connections of a connections directory (secret in a file); one with refused credentials fails alone, named', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 12 }] } });
    await h.migrate();
    const dir = mkdtempSync(join(tmpdir(), 'staysync-conns-'));
    writeFileSync(join(dir, 'secret-a'), `${SIM_CLIENT_SECRET}\n`);
    writeFileSync(join(dir, 'hotel-a.json'), JSON.stringify({ clientId: SIM_CLIENT_ID, clientSecretFile: join(dir, 'secret-a'), propertyIds: ['500100'] }));
    // The shorthand's variables are ignored once connections are defined: wrong ones prove it.
    const env = {
      ...daemonEnv(h),
      STAYSYNC_CONNECTIONS_DIR: dir,
      STAYSYNC_CLIENT_SECRET: 'not-the-secret',
      STAYSYNC_PROPERTY_IDS: '999',
    };
    const one = await runCli(['sync', '--once'], env);
    expect(one.code, one.stderr).toBe(0);
    expect(await h.sql('SELECT number FROM bookings')).toHaveLength(12);
    expect(await h.sql('SELECT DISTINCT connection FROM sync_cursors')).toEqual([{ connection: 'hotel-a' }]);

    writeFileSync(join(dir, 'hotel-b.json'), JSON.stringify({ clientId: 'other', clientSecret: 'x', propertyIds: ['500200'] }));
    const two = await runCli(['sync', '--once'], env);
    expect(two.code).toBe(1);
    const refused = logRecords(two.stdout).find((r) => r.level === 'error' && r.msg.includes('refused the API client credentials'));
    expect(refused?.connection).toBe('hotel-b');
    expect(two.stdout + two.stderr).not.toMatch(/\n\s+at /);
    const runs = await h.sql<{ connection: string; outcome: string }>(
      'SELECT connection, outcome FROM sync_runs WHERE id > (SELECT min(id) FROM sync_runs) ORDER BY connection',
    );
    expect(runs).toEqual([
      { connection: 'hotel-a', outcome: 'ok' },
      { connection: 'hotel-b', outcome: 'failed' },
    ]);
  });

  // --help of every command, its exit status 0 and `--help` alone: cli-help.test.ts.
  it('exits 2 on bad usage; --help names the exit statuses', async () => {
    const [unknown, noOnce, badRecover, help] = await Promise.all([
      runCli(['frobnicate'], {}),
      runCli(['sync'], {}),
      runCli(['run', '--recover=yesterday'], {}),
      runCli(['--help'], {}),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command frobnicate');
    expect(noOnce.code).toBe(2);
    expect(noOnce.stderr).toContain('sync needs --once');
    expect(badRecover.code).toBe(2);
    expect(help.stdout).toContain('exit status: 0 done, 1 failure, 2 bad usage or configuration, 3 token lost');
  });
});

describe('the daemon process', () => {
  it('survives SIGKILL at random points, ten times in one sync, and ends equal without duplicates', async () => {
    // 250 bookings at 60 details a second: the ten killed runs, each killed within 400 ms of
    // its sync's start, cannot finish the sync between them (at most about 240 details even
    // on an idle machine), so every kill lands in the same unfinished sync, as with more.
    const total = 250;
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 150 },
          { id: '500200', bookingCount: 100 },
        ],
      },
    });
    const env = daemonEnv(h, {
      config: {
        rateLimits: {
          ...fastRateLimits,
          bookingDetails: [
            { limit: 5, windowMs: 50 },
            { limit: 60, windowMs: 1000 },
          ],
        },
      },
      env: { STAYSYNC_LOG_LEVEL: 'info' },
    });
    const kills: number[] = [];
    for (let i = 0; i < 10; i++) {
      const { child, done, output } = startCli(['sync', '--once'], env);
      let timer: NodeJS.Timeout | undefined;
      if (i === 0) {
        // The first run: at a random point of its start (the migrations, on a fresh schema).
        timer = setTimeout(() => child.kill('SIGKILL'), 300 + Math.floor(Math.random() * 900));
      } else {
        // The others: at a random point of their sync (a fixed delay from the spawn would
        // mostly hit the start of the process, before any write of the sync).
        await waitFor('the sync to start', () => child.exitCode !== null || logRecords(output()).some((l) => l.msg === 'sync started'), 60_000, 20);
        timer = setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 400));
      }
      const r = await done;
      clearTimeout(timer);
      if (r.signal === 'SIGKILL') kills.push(i);
      else expect(r.code, r.stderr + r.stdout.slice(-2000)).toBe(0);
    }
    // Most runs were killed mid-sync (a run may finish first only near the end).
    expect(kills.length).toBeGreaterThanOrEqual(8);
    // The last run is not killed: at the test's usual budget.
    const final = await runCli(['sync', '--once'], daemonEnv(h));
    expect(final.code, final.stderr).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const counts = await h.sql<{ t: string; n: string }>(
      `SELECT 'summaries' AS t, count(*) AS n FROM booking_summaries
       UNION ALL SELECT 'bookings', count(*) FROM bookings
       UNION ALL SELECT 'queue', count(*) FROM booking_detail_queue`,
    );
    expect(Object.fromEntries(counts.map((c) => [c.t, Number(c.n)]))).toEqual({ summaries: total, bookings: total, queue: 0 });
    // Each killed run left its sync_runs row open, closed as killed by the next run; the
    // completed ones closed theirs. Kills landed in a sync's work (the row is written just
    // after "sync started", so one killed at once may have none).
    const runs = await h.sql<{ outcome: string | null }>('SELECT outcome FROM sync_runs');
    expect(runs.filter((r) => r.outcome === 'ok').length).toBeGreaterThanOrEqual(1);
    expect(runs.filter((r) => r.outcome === 'killed').length).toBeGreaterThanOrEqual(1);
  });

  it('a lost token: sync --once syncs the rest and exits 3, run goes on and shows it, run --recover --property recovers it', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 40 },
          { id: '500200', bookingCount: 20 },
        ],
      },
    });
    const env = daemonEnv(h);
    expect((await runCli(['sync', '--once'], env)).code).toBe(0);
    h.sim.faults.continueTokenRejections.set('500100', Infinity);
    h.sim.mutate({ count: 5, newCount: 3 });
    const part = async (id: string) => (await mirrorSnapshot(h!)).filter((b) => b.key.startsWith(`${id}/`));
    const truth = (id: string) => simulatorSnapshot(h!.sim).filter((b) => b.key.startsWith(`${id}/`));

    const lost = await runCli(['sync', '--once'], env);
    expect(lost.code, lost.stderr).toBe(3);
    const lines = logRecords(lost.stdout).map((l) => l.msg);
    expect(lines).toContainEqual(expect.stringMatching(/^property 500100: token lost: .*staysync run --recover --property 500100/));
    expect(lines).toContainEqual(expect.stringMatching(/^sync --once finished, but the booking list of property 500100 needs a recovery/));
    expect(await part('500200')).toEqual(truth('500200'));

    // The daemon goes on without that booking list: ready, the other property followed, the lost one shown.
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) } }));
    const base = `http://127.0.0.1:${port}`;
    await waitFor('the daemon to be ready', () => fetch(`${base}/readyz`).then((r) => r.ok), 30_000);
    h.sim.mutate({ count: 3, newCount: 2, propertyId: '500200' });
    await waitFor("the other property's changes", async () => JSON.stringify(await part('500200')) === JSON.stringify(truth('500200')), 30_000);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metricValue(metrics, 'staysync_property_state{property_id="500100",stream="booking_summaries",state="needs_recover"}')).toBe(1);
    expect(metricValue(metrics, 'staysync_property_state{property_id="500200",stream="booking_summaries",state="needs_recover"}')).toBe(0);
    const status = await runCli(['status', '--json'], env);
    const parsed = JSON.parse(status.stdout) as { properties: { propertyId: string; state: string; recover: string | null }[] };
    expect(parsed.properties.map((p) => [p.propertyId, p.state, p.recover])).toEqual([
      ['500100', 'needs_recover', 'staysync run --recover --property 500100'],
      ['500200', 'active', null],
    ]);
    const text = await runCli(['status'], env);
    expect(text.stdout).toMatch(
      /property 500100: NEEDS RECOVER: the provider answered HTTP 400 .*\. Recover its booking list: staysync run --recover --property 500100/,
    );
    daemon.child.kill('SIGTERM');
    expect((await daemon.done).code).toBe(0);

    // A property no connection follows is refused before anything starts.
    const unknown = await runCli(['run', '--recover', '--property', '999'], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('--property 999: no API connection follows property 999');

    // The command status gives: the list restarts from its last modification minus two days.
    h.sim.faults.continueTokenRejections.delete('500100');
    const recoverPort = await freePort();
    const recovering = startCli(['run', '--recover', '--property', '500100'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(recoverPort) } }));
    await waitFor('the recovered property mirrored', async () => JSON.stringify(await part('500100')) === JSON.stringify(truth('500100')), 60_000);
    const after = await (await fetch(`http://127.0.0.1:${recoverPort}/metrics`)).text();
    expect(metricValue(after, 'staysync_continue_tokens_recovered_total{connection="default"}')).toBe(1);
    recovering.child.kill('SIGTERM');
    expect((await recovering.done).code).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const states = await h.sql<{ state: string }>("SELECT state FROM sync_cursors WHERE stream = 'booking_summaries'");
    expect(states.map((s) => s.state)).toEqual(['active', 'active']);
  });

  it('serves /healthz, /readyz and /metrics while running and stops cleanly on SIGTERM', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 50 }] } });
    const port = await freePort();
    const { child, done } = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) } }));
    const base = `http://127.0.0.1:${port}`;
    await waitFor('the daemon to be ready', () => fetch(`${base}/readyz`).then((r) => r.ok), 30_000);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    // Wait for the first pass to finish, then check the metrics say so.
    await waitFor('the first pass', async () => Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]?.n) === 50, 30_000);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metricValue(metrics, 'staysync_details_written_total{connection="default"}')).toBe(50);
    expect(metricValue(metrics, 'staysync_provider_requests_total{connection="default",scope="bookingDetails"}')).toBeGreaterThanOrEqual(50);
    expect(metricValue(metrics, 'staysync_connection_state{connection="default",state="running"}')).toBe(1);
    child.kill('SIGTERM');
    const r = await done;
    expect(r.code).toBe(0);
    const runs = await h.sql<{ command: string; outcome: string }>('SELECT command, outcome FROM sync_runs');
    expect(runs).toEqual([{ command: 'run', outcome: 'stopped' }]);
  });
});
