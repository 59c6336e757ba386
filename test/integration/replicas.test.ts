/**
 * Replicas: several daemons share the API connections of one schema through leases in
 * PostgreSQL. Each connection is synced by one replica at a time, balanced by count; when a
 * replica is killed, the others take its connections within the takeover time, without any
 * interleaving of commits for a property; a clean stop hands them over at once; `sync --once`
 * names the holders; `status` reads without a lease and without DDL.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { mirrorSnapshot, simulatorSnapshot, startHarness, type Harness } from '../helpers/harness.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.js';

let h: Harness | undefined;
let server: PostgresServer | undefined;
afterEach(async () => {
  await h?.close();
  await server?.close();
  h = undefined;
  server = undefined;
});

const count = async (sql: string): Promise<number> => Number((await h!.sql<{ n: string }>(sql))[0]!.n);

/** Every row a writer commits into these tables leaves an audit row in the same transaction. */
async function installAudit(harness: Harness): Promise<void> {
  await harness.sql(`CREATE TABLE audit (tbl text NOT NULL, op text NOT NULL, app text NOT NULL, key text, property_id text)`);
  await harness.sql(`
    CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO audit (tbl, op, app, key, property_id) VALUES (
        TG_TABLE_NAME, TG_OP, current_setting('application_name'),
        coalesce(to_jsonb(NEW) ->> 'property_id', to_jsonb(OLD) ->> 'property_id') || '/' || coalesce(to_jsonb(NEW) ->> 'number', to_jsonb(OLD) ->> 'number') || '@' || coalesce(to_jsonb(NEW) ->> 'modified_at', ''),
        coalesce(to_jsonb(NEW) ->> 'property_id', to_jsonb(OLD) ->> 'property_id'));
      RETURN NULL;
    END $$`);
  for (const t of ['bookings', 'booking_summaries', 'booking_detail_queue', 'sync_cursors']) {
    await harness.sql(`CREATE TRIGGER audit_${t} AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION audit_row()`);
  }
}

/**
 * 15 details a second per connection: 150 bookings take each connection 10 s at its budget,
 * well past the kill (A holds the four, B starts and takes two, a sync --once runs: a few
 * seconds), as 700 at 60 a second did, with a fifth of the rows for the machine to write.
 */
const DETAILS_PER_SECOND = 15;
const CONNECTIONS = ['c1', 'c2', 'c3', 'c4'].map((name, i) => ({
  name,
  clientId: `client-${name}`,
  clientSecret: `secret-${name}`,
  propertyIds: [String(500100 + i * 100)],
  // A contracted details budget of its own: slow enough that a takeover happens mid-sync.
  rateLimits: { bookingDetails: [{ limit: DETAILS_PER_SECOND, windowMs: 1000 }] },
}));
const TAKEOVER_MS = 2000;

/** A connections directory with one file per connection. */
function connectionsDir(list: typeof CONNECTIONS): string {
  const dir = mkdtempSync(join(tmpdir(), 'staysync-replicas-'));
  for (const c of list)
    writeFileSync(
      join(dir, `${c.name}.json`),
      JSON.stringify({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds, rateLimits: c.rateLimits }),
    );
  return dir;
}

/** Who holds each connection's lease now (only unexpired leases of live replicas). */
async function holders(): Promise<Map<string, string>> {
  const rows = await h!.sql<{ connection: string; holder: string }>(
    `SELECT c.connection, c.holder FROM sync_connections c JOIN sync_replicas r USING (replica_id) WHERE c.lease_expires_at > now() AND r.expires_at > now()`,
  );
  return new Map(rows.map((r) => [r.connection, r.holder]));
}

describe('replicas sharing the connections of a schema', () => {
  it('two replicas, four connections: each synced by one replica; after SIGKILL the survivor takes them within the takeover time; commits never interleave; the mirror equals the simulator within every budget', async () => {
    server = await startPostgresServer({ settings: { track_commit_timestamp: 'on' } });
    h = await startHarness({
      databaseUrl: server.url,
      sim: {
        clients: CONNECTIONS.map((c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds, rateLimits: c.rateLimits })),
        properties: CONNECTIONS.map((c) => ({ id: c.propertyIds[0]!, bookingCount: 10 * DETAILS_PER_SECOND })),
      },
    });
    await h.migrate();
    await installAudit(h);
    const dir = connectionsDir(CONNECTIONS);
    const env = (port: number) =>
      daemonEnv(h!, {
        env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info', STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_TAKEOVER_MS: String(TAKEOVER_MS) },
      });
    const [portA, portB] = [await freePort(), await freePort()];
    const a = startCli(['run'], env(portA));
    let b: ReturnType<typeof startCli> | undefined;
    try {
      await waitFor('A to hold the four connections', async () => (await holders()).size === 4);
      b = startCli(['run'], env(portB));
      const pidA = `pid ${a.child.pid}`;
      const pidB = `pid ${b.child.pid}`;
      // Balanced by count: A hands two over, B takes them. The wait allows for the busiest minute
      // of a run (this file starts with the three other longest, and its own server); on a
      // timeout it says who holds what and what each replica logged.
      await waitFor(
        'two connections each',
        async () => {
          const held = [...(await holders()).values()];
          return held.filter((x) => x.endsWith(pidA)).length === 2 && held.filter((x) => x.endsWith(pidB)).length === 2;
        },
        60_000,
      ).catch(async (err: Error) => {
        const tail = (out: string) =>
          logRecords(out)
            .map((r) => String(r.msg))
            .slice(-15);
        throw new Error(
          `${err.message}; holders: ${JSON.stringify(Object.fromEntries(await holders()))}; A (${pidA}): ${JSON.stringify(tail(a.output()))}; B (${pidB}): ${JSON.stringify(tail(b!.output()))}`,
        );
      });
      expect((await opsGet(portB, '/readyz')).status).toBe(200);
      expect(logRecords(a.output()).some((r) => /^handing (connection c\d|\d+ connections) over to another replica/.test(r.msg))).toBe(true);
      // sync --once does not wait: it names the holder of each connection and exits 1.
      const once = await runCli(['sync', '--once'], env(await freePort()));
      expect(once.code).toBe(1);
      const busy = logRecords(once.stdout)
        .map((l) => l.msg)
        .filter((m) => /^another staysync process \(\S+ pid \d+, since .*\) is syncing connection c\d into schema/.test(m));
      expect(busy).toHaveLength(4);

      const before = await count('SELECT count(*) AS n FROM bookings');
      expect(before).toBeLessThan(h.sim.bookings().length);
      a.child.kill('SIGKILL');
      const killedAt = Date.now();
      await waitFor('B to hold the four connections', async () => [...(await holders()).values()].filter((x) => x.endsWith(pidB)).length === 4, 20_000, 50);
      const takeover = Date.now() - killedAt;
      expect(takeover, `takeover took ${takeover} ms`).toBeLessThanOrEqual(TAKEOVER_MS + 1000);

      const total = h.sim.bookings().length;
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === total, 90_000);
      await waitFor('an empty queue', async () => (await count('SELECT count(*) AS n FROM booking_detail_queue')) === 0);
    } finally {
      b?.child.kill('SIGTERM');
      a.child.kill('SIGKILL');
    }
    expect((await b.done).code).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    // No request over any connection's budget: the simulator answered none of them 429.
    expect(h.sim.stats.rejected429ByClient).toEqual({});

    // Per property, in commit order: the first replica's writes, then the second's; never mixed.
    const audit = await h.sql<{ app: string; property_id: string }>(
      `SELECT app, property_id FROM audit WHERE property_id IS NOT NULL ORDER BY pg_xact_commit_timestamp(xmin), xmin::text::bigint`,
    );
    for (const c of CONNECTIONS) {
      const writers = audit.filter((r) => r.property_id === c.propertyIds[0]).map((r) => r.app.replace(/^staysync \S+ /, ''));
      const sequence = writers.filter((w, i) => i === 0 || writers[i - 1] !== w);
      expect(sequence.length, `${c.name}: ${sequence.join(' → ')}`).toBeLessThanOrEqual(2);
      if (sequence.length === 2) expect(sequence[1]).toContain(`pid ${b.child.pid}`);
    }
    const twice = await h.sql(`SELECT key, count(*) FROM audit WHERE tbl = 'bookings' AND op = 'INSERT' GROUP BY key HAVING count(*) > 1`);
    expect(twice).toEqual([]);
  });

  it('SIGTERM hands the connections over: the other replica takes them within a heartbeat, not the takeover time', async () => {
    h = await startHarness({
      sim: {
        clients: CONNECTIONS.slice(0, 2).map((c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds })),
        properties: CONNECTIONS.slice(0, 2).map((c) => ({ id: c.propertyIds[0]!, bookingCount: 30 })),
      },
    });
    const dir = connectionsDir(CONNECTIONS.slice(0, 2));
    const takeover = 8000;
    const env = daemonEnv(h, {
      env: { STAYSYNC_LOG_LEVEL: 'info', STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_TAKEOVER_MS: String(takeover) },
    });
    const a = startCli(['run'], env);
    let b: ReturnType<typeof startCli> | undefined;
    try {
      await waitFor('A to hold both', async () => (await holders()).size === 2);
      b = startCli(['run'], env);
      const pidB = `pid ${b.child.pid}`;
      await waitFor('one each', async () => [...(await holders()).values()].filter((x) => x.endsWith(pidB)).length === 1, 20_000);
      a.child.kill('SIGTERM');
      const stoppedAt = Date.now();
      expect((await a.done).code).toBe(0);
      await waitFor('B to hold both', async () => [...(await holders()).values()].filter((x) => x.endsWith(pidB)).length === 2, 10_000, 50);
      expect(Date.now() - stoppedAt).toBeLessThan(takeover / 2);
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === 60, 30_000);
    } finally {
      a.child.kill('SIGTERM');
      b?.child.kill('SIGTERM');
    }
    expect((await b.done).code).toBe(0);
  });

  it('sync --once renews its leases while it runs longer than a lease lasts, and a daemon does not count it among the replicas it balances with', async () => {
    h = await startHarness({
      sim: {
        clients: CONNECTIONS.slice(0, 3).map((c) => ({
          clientId: c.clientId,
          clientSecret: c.clientSecret,
          propertyIds: c.propertyIds,
          rateLimits: c.rateLimits,
        })),
        // The sync --once follows 500100: 45 bookings at its 15 details a second, 2 to 3 s,
        // several times a lease. The daemon's properties need only be synced, not long.
        properties: CONNECTIONS.slice(0, 3).map((c, i) => ({ id: c.propertyIds[0]!, bookingCount: i === 0 ? 3 * DETAILS_PER_SECOND : 20 })),
      },
    });
    // Leases of 600 ms (takeover 800 ms): the sync takes 2 to 3 s, so only renewals keep it going.
    const once = connectionsDir(CONNECTIONS.slice(0, 1));
    const env = (dir: string) => daemonEnv(h!, { env: { STAYSYNC_LOG_LEVEL: 'info', STAYSYNC_CONNECTIONS_DIR: dir, STAYSYNC_TAKEOVER_MS: '800' } });
    // The daemon follows two other connections: had it counted sync --once as a replica, it would hand one over.
    const daemon = startCli(['run'], env(connectionsDir(CONNECTIONS.slice(1, 3))));
    try {
      await waitFor('the daemon to hold its connections', async () => (await holders()).size === 2);
      const r = await runCli(['sync', '--once'], env(once));
      expect(r.code, r.stdout.slice(-2000)).toBe(0);
      expect(await count(`SELECT count(*) AS n FROM bookings WHERE property_id = '500100'`)).toBe(3 * DETAILS_PER_SECOND);
      expect(logRecords(daemon.output()).filter((l) => l.msg.startsWith('handing '))).toEqual([]);
      for (const name of ['c2', 'c3']) expect((await holders()).get(name)).toMatch(new RegExp(`pid ${daemon.child.pid}$`));
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
  });

  it('/metrics never holds up the heartbeat: while its table reads wait on a lock for 8 s, scrapes every 300 ms answer within 2 s with the last snapshot and its age, one read at a time on a connection of its own that gives up after 5 s, and the lease is renewed on its cadence and never lapses', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    const port = await freePort();
    // Leases of 1.5 s renewed every 500 ms: a heartbeat held up for more than a second loses them.
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info', STAYSYNC_TAKEOVER_MS: '2000' } }));
    const locker = new pg.Client({ connectionString: h.dbUrl, options: `-c search_path=${h.schema}` });
    const watcher = new pg.Client({ connectionString: h.dbUrl, options: `-c search_path=${h.schema}` });
    const heartbeats = new Set<string>();
    const lapses: string[] = [];
    const waiting = { control: 0, metrics: 0 };
    const scrapes: { status: number; ms: number; age: number | undefined }[] = [];
    try {
      await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200, 60_000);
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === 20);
      await watcher.connect();
      await locker.connect();
      // A snapshot read while nothing is in the way.
      expect((await opsGet(port, '/metrics')).status).toBe(200);

      // An operator's VACUUM FULL (or any ALTER TABLE) on a table the metrics read: every read of it waits.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE quarantine IN ACCESS EXCLUSIVE MODE');
      const lockedAt = Date.now();
      let watching = true;
      const watch = (async () => {
        while (watching) {
          const r = await watcher.query<{ heartbeat_at: Date; replica_alive: boolean; leases_held: boolean }>(
            `SELECT r.heartbeat_at, r.expires_at > now() AS replica_alive, bool_and(c.lease_expires_at > now()) AS leases_held
               FROM sync_replicas r JOIN sync_connections c USING (replica_id) GROUP BY r.replica_id`,
          );
          const row = r.rows[0];
          if (!row) lapses.push('no replica holds a lease');
          else {
            heartbeats.add(row.heartbeat_at.toISOString());
            if (!row.replica_alive || !row.leases_held) lapses.push(`at ${Date.now() - lockedAt} ms`);
          }
          const w = await watcher.query<{ app: string; n: string }>(
            // This daemon's sessions only: other test files' daemons (their token gates, start-up locks) wait on locks of their own.
            `SELECT split_part(application_name, ' ', 2) AS app, count(*) AS n FROM pg_stat_activity
              WHERE application_name LIKE 'staysync %' AND application_name LIKE $1 AND wait_event_type = 'Lock' GROUP BY 1`,
            [`% pid ${daemon.child.pid}`],
          );
          for (const x of w.rows) if (x.app === 'control' || x.app === 'metrics') waiting[x.app] = Math.max(waiting[x.app], Number(x.n));
          await new Promise((r2) => setTimeout(r2, 100));
        }
      })();
      while (Date.now() - lockedAt < 8_000) {
        const started = performance.now();
        const r = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) }).then(
          async (res) => ({ status: res.status, body: await res.text() }),
          () => ({ status: 0, body: '' }),
        );
        scrapes.push({ status: r.status, ms: performance.now() - started, age: metricValue(r.body, 'staysync_metrics_snapshot_age_seconds') });
        await new Promise((r2) => setTimeout(r2, 300));
      }
      await locker.query('ROLLBACK');
      // Watched a little longer: a heartbeat held up by the lock would show as a gap ending now.
      await new Promise((r2) => setTimeout(r2, 1_500));
      watching = false;
      await watch;

      // The heartbeat kept its cadence: no gap near the lease's 1.5 s, never a lapse.
      const beats = [...heartbeats].map((t) => Date.parse(t)).sort((a, b) => a - b);
      const gaps = beats.slice(1).map((t, i) => t - beats[i]!);
      expect(beats.length).toBeGreaterThanOrEqual(10);
      expect(Math.max(...gaps), `gaps between heartbeats: ${gaps.join(', ')} ms`).toBeLessThan(1_200);
      expect(lapses).toEqual([]);
      // The heartbeat's pool never waited on the lock; the metrics' connection did, alone.
      expect(waiting).toEqual({ control: 0, metrics: 1 });
      // Every scrape answered, soon, with the snapshot taken before the lock, older each time.
      expect(scrapes.filter((x) => x.status !== 200)).toEqual([]);
      expect(Math.max(...scrapes.map((x) => x.ms))).toBeLessThan(2_000);
      expect(scrapes.at(-1)!.age).toBeGreaterThan(7);
      // The lock gone, the next read succeeds and the snapshot is fresh again; the read that waited 5 s was counted.
      const fresh = await waitFor(
        'a fresh snapshot',
        async () => {
          const body = (await opsGet(port, '/metrics')).body;
          return (metricValue(body, 'staysync_metrics_snapshot_age_seconds') ?? 99) < 2 ? body : undefined;
        },
        10_000,
      );
      expect(metricValue(fresh, 'staysync_metrics_snapshot_failures_total')).toBe(1);
      expect(metricValue(fresh, 'staysync_lease_losses_total')).toBe(0);
    } finally {
      daemon.child.kill('SIGTERM');
      await locker.end().catch(() => undefined);
      await watcher.end().catch(() => undefined);
    }
    const r = await daemon.done;
    expect(r.code).toBe(0);
    const logs = logRecords(r.stdout);
    // The read that waited gave up after 5 s: said once, and once when a read succeeds again.
    expect(logs.filter((l) => l.msg.startsWith('the table gauges of /metrics could not be read'))).toHaveLength(1);
    expect(logs.filter((l) => l.msg.startsWith('the table gauges of /metrics are read again'))).toHaveLength(1);
    expect(logs.filter((l) => l.msg.startsWith('lost the lease'))).toEqual([]);
  });

  it('status reads without the lease and without DDL', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] }, emptySchema: true });
    const env = daemonEnv(h);
    // No schema yet: status says so, exits 1, and creates nothing.
    const none = await runCli(['status'], env);
    expect(none.code).toBe(1);
    expect(logRecords(none.stdout).map((l) => l.msg)).toContainEqual(
      expect.stringMatching(/has no staysync schema ".*" yet: start `staysync run` or run `staysync migrate` first/),
    );
    const schemas = await h.sql<{ n: string }>(`SELECT count(*) AS n FROM pg_namespace WHERE nspname = $1`, [h.schema]);
    expect(Number(schemas[0]!.n)).toBe(0);

    // While a daemon holds the lease, status answers and names the holder.
    const port = await freePort();
    const daemon = startCli(['run'], daemonEnv(h, { env: { STAYSYNC_OPS_PORT: String(port) } }));
    try {
      await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200);
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === 20);
      const status = await runCli(['status'], env);
      expect(status.code, status.stdout + status.stderr).toBe(0);
      expect(status.stdout).toMatch(new RegExp(`Replicas: 1 \\(\\S+ pid ${daemon.child.pid} since \\S+, 1 connection\\)`));
      expect(status.stdout).toMatch(new RegExp(`Running: run on \\S+ pid ${daemon.child.pid} since`));
      expect(status.stdout).toMatch(/500100\s+active/);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
    const after = await runCli(['status'], env);
    expect(after.stdout).toMatch(/Replicas: none/);
    expect(after.stdout).toMatch(/Last run: run on .*, stopped/);
  });
});
