/**
 * The writer lease: one process writes into a schema at a time. A second daemon waits (and is
 * not ready), `sync --once` says who holds it; when the holder's lease session is killed, the
 * holder stops writing at once and the other takes over without any interleaving of their
 * commits; `status` reads without the lease and without DDL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
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
  await harness.sql(`CREATE TABLE audit (tbl text NOT NULL, op text NOT NULL, app text NOT NULL, key text)`);
  await harness.sql(`
    CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO audit (tbl, op, app, key) VALUES (
        TG_TABLE_NAME, TG_OP, current_setting('application_name'),
        coalesce(to_jsonb(NEW) ->> 'number', to_jsonb(OLD) ->> 'number') || '@' || coalesce(to_jsonb(NEW) ->> 'modified_at', ''));
      RETURN NULL;
    END $$`);
  for (const t of ['bookings', 'booking_summaries', 'booking_detail_queue', 'sync_cursors']) {
    await harness.sql(`CREATE TRIGGER audit_${t} AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION audit_row()`);
  }
}

describe('the writer lease', () => {
  it('a killed lease session stops the holder at once; the waiting daemon takes over; their commits never interleave', async () => {
    server = await startPostgresServer({ settings: { track_commit_timestamp: 'on' } });
    h = await startHarness({ databaseUrl: server.url, sim: { properties: [{ id: '500100', bookingCount: 1500 }, { id: '500200', bookingCount: 1000 }] } });
    await h.migrate();
    await installAudit(h);
    const env = (port: number) => daemonEnv(h!, { env: { STAYSYNC_OPS_PORT: String(port), STAYSYNC_LOG_LEVEL: 'info' }, config: { database: { leaseRetryMs: 300 } } });
    const [portA, portB] = [await freePort(), await freePort()];
    const a = startCli(['run'], env(portA));
    let b: ReturnType<typeof startCli> | undefined;
    try {
      await waitFor('A to write bookings', async () => (await count('SELECT count(*) AS n FROM bookings')) > 300);

      // B waits for the lease: alive, not ready, saying who holds it.
      b = startCli(['run'], env(portB));
      await waitFor('B to wait for the lease', () => /holds the lease of schema .*: waiting for it/.test(b!.output()));
      const readyB = await opsGet(portB, '/readyz');
      expect(readyB.status).toBe(503);
      expect(readyB.body).toContain('waiting for the writer lease');
      // sync --once does not wait: it names the holder and exits 1.
      const once = await runCli(['sync', '--once'], env(await freePort()));
      expect(once.code).toBe(1);
      expect(logRecords(once.stdout).map((l) => l.msg)).toContainEqual(
        expect.stringMatching(new RegExp(`another staysync process \\(\\S+ pid ${a.child.pid}, since .*\\) is syncing into schema ${h.schema}`)),
      );

      // Kill A's lease session (again and again, as a flaky network would) until B holds the lease.
      const pidB = b.child.pid!;
      await waitFor(
        'B to take the lease',
        async () => {
          await h!.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'staysync lease %pid ${a.child.pid}'`);
          const holder = await h!.sql<{ holder: string }>(`SELECT holder FROM sync_lease`);
          return holder[0]?.holder.endsWith(`pid ${pidB}`);
        },
        20_000,
        50,
      );
      await waitFor('A to wait for the lease', () => /holds the lease of schema .*: waiting for it/.test(a.output()));
      await waitFor('B to be ready', async () => (await opsGet(portB, '/readyz')).status === 200);
      expect((await opsGet(portA, '/readyz')).status).toBe(503);
      const before = await count('SELECT count(*) AS n FROM bookings');
      await waitFor('B to write bookings', async () => (await count('SELECT count(*) AS n FROM bookings')) > before + 200);

      // B stops: A takes the lease back and finishes.
      b.child.kill('SIGTERM');
      expect((await b.done).code).toBe(0);
      const total = h.sim.bookings().length;
      await waitFor('every booking', async () => (await count('SELECT count(*) AS n FROM bookings')) === total, 60_000);
      await waitFor('an empty queue', async () => (await count('SELECT count(*) AS n FROM booking_detail_queue')) === 0);
    } finally {
      b?.child.kill('SIGTERM');
      a.child.kill('SIGTERM');
    }
    const ra = await a.done;
    expect(ra.code).toBe(0);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const logsA = logRecords(ra.stdout).map((l) => l.msg);
    expect(logsA).toContainEqual(expect.stringMatching(/^lost the writer lease of schema .*: its database session ended/));
    expect(logsA).toContainEqual(expect.stringMatching(/^writer lease of schema .* taken again; resuming/));

    // Commit order of every audited row: A's commits, then B's, then A's again; never mixed.
    const audit = await h.sql<{ app: string; tbl: string; key: string }>(
      `SELECT app, tbl, key FROM audit ORDER BY pg_xact_commit_timestamp(xmin), xmin::text::bigint`,
    );
    const writer = (app: string) => (app.endsWith(`pid ${a.child.pid}`) ? 'A' : app.endsWith(`pid ${b!.child.pid}`) ? 'B' : app);
    const sequence = audit.map((r) => writer(r.app)).filter((w, i, all) => i === 0 || all[i - 1] !== w);
    expect(sequence).toEqual(['A', 'B', 'A']);
    // No booking version was written twice.
    const twice = await h.sql(`SELECT key, count(*) FROM audit WHERE tbl = 'bookings' GROUP BY key HAVING count(*) > 1`);
    expect(twice).toEqual([]);
  });

  it('status reads without the lease and without DDL', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }] } });
    const env = daemonEnv(h);
    // No schema yet: status says so, exits 1, and creates nothing.
    const none = await runCli(['status'], env);
    expect(none.code).toBe(1);
    expect(logRecords(none.stdout).map((l) => l.msg)).toContainEqual(expect.stringMatching(/has no staysync schema ".*" yet: start `staysync run` or run `staysync migrate` first/));
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
      expect(status.stdout).toMatch(new RegExp(`Lease: held by \\S+ pid ${daemon.child.pid} since`));
      expect(status.stdout).toMatch(new RegExp(`Running: run on \\S+ pid ${daemon.child.pid} since`));
      expect(status.stdout).toMatch(/500100\s+active/);
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
    const after = await runCli(['status'], env);
    expect(after.stdout).toMatch(/Lease: free/);
    expect(after.stdout).toMatch(/Last run: run on .*, stopped/);
  });
});
