/**
 * The token endpoint's per-IP budget shared by replicas through PostgreSQL: two gates of one
 * egress together never admit more than a window allows; another egress has its own budget.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/store/database.js';
import { TOKEN_GATE_GUARD_MS, TokenGate } from '../../src/cluster/token-gate.js';
import { systemClock } from '../../src/util/clock.js';
import { fastRateLimits, startHarness, type Harness } from '../helpers/harness.js';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { startPostgresServer, type PostgresServer } from '../helpers/postgres-server.js';

let h: Harness | undefined;
let other: Harness | undefined;
let db: DatabaseHandle | undefined;
let server: PostgresServer | undefined;
afterEach(async () => {
  await db?.close();
  await h?.close();
  await other?.close();
  await server?.close();
  db = undefined;
  h = undefined;
  other = undefined;
  server = undefined;
});

const WINDOWS = [
  { limit: 3, windowMs: 600 },
  { limit: 5, windowMs: 2000 },
];

describe('the shared token budget', () => {
  it('admits, across two replicas of one egress, no more than each window allows; another egress is not counted', async () => {
    h = await startHarness();
    await h.migrate();
    db = await openDatabase(h.config, h.logger);
    // Spacing of 50 ms: each admission its own transaction, as in a fleet's replica that waits for another's.
    const gate = (egress: string) => new TokenGate({ db: db!.control, egress, windows: WINDOWS, clock: systemClock, logger: h!.logger, spacingMs: 50 });
    const [a, b, other] = [gate('10.0.0.1'), gate('10.0.0.1'), gate('10.0.0.2')];
    const signal = new AbortController().signal;
    const started = Date.now();
    const admittedAt: number[] = [];
    // Two replicas, four requests each, at once.
    await Promise.all(
      [a, b].map(async (g) => {
        for (let i = 0; i < 4; i++) {
          await g.admit(signal);
          admittedAt.push(Date.now() - started);
        }
      }),
    );
    admittedAt.sort((x, y) => x - y);
    // Within any 600 ms, at most 3; within any 2 s, at most 5. The times are taken here, when
    // each admission's promise resolves, so a busy machine (the full suite beside other work)
    // can note one late and shorten a gap: 100 ms of slack, while a gate that let one through
    // without waiting would shorten it by a good part of the window.
    const SLACK_MS = 100;
    // Each window is counted TOKEN_GATE_GUARD_MS longer, for the time between admission and arrival.
    for (let i = 3; i < admittedAt.length; i++) expect(admittedAt[i]! - admittedAt[i - 3]!).toBeGreaterThanOrEqual(600 + TOKEN_GATE_GUARD_MS - SLACK_MS);
    for (let i = 5; i < admittedAt.length; i++) expect(admittedAt[i]! - admittedAt[i - 5]!).toBeGreaterThanOrEqual(2000 + TOKEN_GATE_GUARD_MS - SLACK_MS);
    expect(a.stats.admitted + b.stats.admitted).toBe(8);
    expect(a.stats.waits + b.stats.waits).toBeGreaterThan(0);

    // Another egress has room at once.
    const t0 = Date.now();
    await other.admit(signal);
    expect(Date.now() - t0).toBeLessThan(300);
    // The table keeps the longest window only (older requests are removed as new ones come).
    const rows = await h.sql<{ egress: string; oldest_ms: number }>(
      `SELECT egress, extract(epoch FROM clock_timestamp() - min(sent_at)) * 1000 AS oldest_ms FROM token_requests GROUP BY egress ORDER BY egress`,
    );
    expect(rows.map((r) => r.egress)).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(Number(rows[0]!.oldest_ms)).toBeLessThan(2000 + 1000);
  });

  it('admits the requests waiting in a process together: at most one transaction per spacing, except while a full window is waited for', async () => {
    h = await startHarness();
    await h.migrate();
    db = await openDatabase(h.config, h.logger);
    const signal = new AbortController().signal;
    const roomy = new TokenGate({
      db: db.control,
      egress: 'roomy',
      windows: [{ limit: 100, windowMs: 60_000 }],
      clock: systemClock,
      logger: h.logger,
      spacingMs: 1_000,
    });
    // A renewal wave: 20 requests at once go in one transaction.
    await Promise.all(Array.from({ length: 20 }, () => roomy.admit(signal)));
    expect(roomy.stats).toMatchObject({ admitted: 20, transactions: 1 });
    // Then one request every 100 ms for 3 s: about one transaction a second, not one each.
    const trickle: Promise<void>[] = [];
    for (let i = 0; i < 30; i++) {
      trickle.push(roomy.admit(signal));
      await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(trickle);
    expect(roomy.stats.admitted).toBe(50);
    expect(roomy.stats.transactions).toBeGreaterThanOrEqual(1 + 3);
    expect(roomy.stats.transactions).toBeLessThanOrEqual(1 + 5);
    const rows = await h.sql<{ n: string }>(`SELECT count(*) AS n FROM token_requests WHERE egress = 'roomy'`);
    expect(rows[0]!.n).toBe('50');

    // A full window is waited for as long as it takes, not for the spacing (5 s here): 10
    // requests at 3 per 600 ms go in four admissions about 850 ms apart.
    const tight = new TokenGate({ db: db.control, egress: 'tight', windows: WINDOWS, clock: systemClock, logger: h.logger, spacingMs: 5_000 });
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 10 }, () => tight.admit(signal)));
    expect(Date.now() - t0).toBeLessThan(4_500);
    expect(tight.stats).toMatchObject({ admitted: 10, transactions: 4 });

    // A catch-up's requests, a full batch (3, the smallest window) at a time, do not wait for
    // the spacing: three batches of 3 go within the windows' pace, not 5 s apart.
    const catchUp = new TokenGate({
      db: db.control,
      egress: 'catch-up',
      windows: [
        { limit: 3, windowMs: 500 },
        { limit: 100, windowMs: 60_000 },
      ],
      clock: systemClock,
      logger: h.logger,
      spacingMs: 5_000,
    });
    const t1 = Date.now();
    for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: 3 }, () => catchUp.admit(signal)));
    expect(Date.now() - t1).toBeLessThan(4_000);
    expect(catchUp.stats.admitted).toBe(9);

    // A request that gives up while it waits leaves the gate; the others are admitted. Two
    // requests just after an admission wait for the spacing: 1 s on a gate of their own (on
    // `tight` they waited its 5 s).
    const spaced = new TokenGate({ db: db.control, egress: 'spaced', windows: WINDOWS, clock: systemClock, logger: h.logger, spacingMs: 1_000 });
    await spaced.admit(signal);
    const stop = new AbortController();
    const given = spaced.admit(stop.signal);
    const kept = spaced.admit(signal);
    stop.abort(new Error('stopped'));
    await expect(given).rejects.toThrow('stopped');
    await kept;
    expect(spaced.stats.admitted).toBe(2);
  });

  it("lets token requests go on the process's own budget while the database is down, says so once, and counts again when it is back", async () => {
    server = await startPostgresServer();
    h = await startHarness({ databaseUrl: server.url });
    await h.migrate();
    db = await openDatabase(h.config, h.logger);
    const gate = new TokenGate({ db: db.control, egress: 'e', windows: WINDOWS, clock: systemClock, logger: h.logger, spacingMs: 50 });
    const signal = new AbortController().signal;
    await gate.admit(signal);
    expect(gate.stats.admitted).toBe(1);

    await server.stop();
    const t0 = Date.now();
    await gate.admit(signal);
    await gate.admit(signal);
    expect(Date.now() - t0).toBeLessThan(15_000);
    const said = () => h!.logLines.filter((l) => l.includes('the shared token budget is unavailable'));
    expect(said()).toHaveLength(1);
    expect(gate.stats.admitted).toBe(1);

    await server.start();
    // The pool reconnects; the next admission is counted in the table again.
    for (let i = 0; i < 50 && gate.stats.admitted < 2; i++) {
      await gate.admit(signal);
      if (gate.stats.admitted < 2) await new Promise((r) => setTimeout(r, 200));
    }
    expect(gate.stats.admitted).toBe(2);
    expect(said()).toHaveLength(1);
    const rows = await h.sql<{ n: string }>(`SELECT count(*) AS n FROM token_requests WHERE egress = 'e'`);
    expect(rows[0]!.n).toBe('2');
  });

  it('is said at start: how many connections the egress keeps authenticated, and a warning when this process follows more', async () => {
    // Two schemas and simulators, so that the two runs go at once (on one schema the second would wait for the first's lock).
    const [one, two] = await Promise.all([1, 2].map(() => startHarness({ sim: { properties: [{ id: '500100', bookingCount: 3 }] } })));
    h = one!;
    other = two!;
    const said = async (harness: Harness, config: Record<string, unknown>, egress: string) => {
      const r = await runCli(['sync', '--once'], daemonEnv(harness, { config, env: { STAYSYNC_LOG_LEVEL: 'info', STAYSYNC_EGRESS: egress } }));
      expect(r.code, r.stdout + r.stderr).toBe(0);
      return logRecords(r.stdout).filter((x) => x['capacity'] !== undefined);
    };
    const [[info], [warn]] = await Promise.all([
      // The test limits: 3 token requests per 600 ms or so, far more than one connection needs.
      said(one!, {}, '10.0.0.1'),
      // One token request an hour per IP holds no connection with 15-minute tokens: said as a warning.
      said(two!, { rateLimits: { ...fastRateLimits, token: [{ limit: 1, windowMs: 3_600_000 }] } }, '10.0.0.2'),
    ]);
    expect(info).toMatchObject({ level: 'info', egress: '10.0.0.1', connections: 1 });
    expect(Number(info!['capacity'])).toBeGreaterThan(1);
    expect(info!.msg).toMatch(
      /^token endpoint: .* a token every \d+ (min|s) per connection: at most \d+ connections behind egress 10\.0\.0\.1, shared by every replica/,
    );
    expect(warn).toMatchObject({ level: 'warn', connections: 1, capacity: 0 });
    expect(warn!.msg).toContain('1 connection needs more access tokens than the token endpoint gives one IP address');
  }, 60_000);
});
