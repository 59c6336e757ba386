import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../simulator/random.js';
import {
  counterTotal,
  cpuTicksOf,
  exponentialGapMs,
  FLEET_DEFAULTS,
  FLEET_GOALS,
  fleetLines,
  freshnessOf,
  hotCount,
  lsnBytes,
  phaseFigures,
  pickHotel,
  type FleetChange,
  type FleetRunResult,
  type PhaseFigures,
  type Snapshot,
} from '../fleet.js';
import { defaultRateLimits } from '../../simulator/index.js';

describe('the change process', () => {
  it('makes about the asked number of changes an hour (Poisson gaps)', () => {
    const rng = mulberry32(1);
    const gaps = Array.from({ length: 20_000 }, () => exponentialGapMs(rng, 1000));
    const meanMs = gaps.reduce((s, g) => s + g, 0) / gaps.length;
    // 1,000 an hour: 3.6 s apart on average.
    expect(meanMs).toBeGreaterThan(3_500);
    expect(meanMs).toBeLessThan(3_700);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(0);
  });

  it('gives 80 % of the changes to the 10 % busiest hotels, the rest to the others', () => {
    const rng = mulberry32(2);
    const hotels = 1000;
    const hot = hotCount(hotels, 0.1);
    expect(hot).toBe(100);
    const picks = Array.from({ length: 50_000 }, () => pickHotel(rng, hotels, 0.1, 0.8));
    const share = picks.filter((h) => h < hot).length / picks.length;
    expect(share).toBeGreaterThan(0.79);
    expect(share).toBeLessThan(0.81);
    expect(Math.max(...picks)).toBe(hotels - 1);
    expect(Math.min(...picks)).toBe(0);
    // The cold hotels share theirs evenly: none far from 10,000 / 900 ≈ 11 changes.
    const cold = new Map<number, number>();
    for (const h of picks) if (h >= hot) cold.set(h, (cold.get(h) ?? 0) + 1);
    expect(cold.size).toBeGreaterThan(880);
  });

  it('keeps at least one busy hotel, and one hotel is always the one', () => {
    expect(hotCount(5, 0.1)).toBe(1);
    const rng = mulberry32(3);
    for (let i = 0; i < 100; i++) expect(pickHotel(rng, 1, 0.1, 0.8)).toBe(0);
  });
});

describe('what the bench reads', () => {
  it('takes utime + stime from /proc/<pid>/stat, a command with spaces and parentheses included', () => {
    // Fields: pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const line = '4242 (node (main) x) S 1 4242 4242 0 -1 4194304 1500 0 3 0 1234 567 0 0 20 0 11 0 100 0 0';
    expect(cpuTicksOf(line)).toBe(1234 + 567);
    expect(() => cpuTicksOf('garbage')).toThrow(/stat/);
  });

  it('reads a pg_lsn as a byte position', () => {
    expect(lsnBytes('0/10')).toBe(16n);
    expect(lsnBytes('16/B374D848') - lsnBytes('16/B374D000')).toBe(0x848n);
    expect(lsnBytes('1/0') - lsnBytes('0/FFFFFFFF')).toBe(1n);
    expect(() => lsnBytes('16-B3')).toThrow(/pg_lsn/);
  });

  it('sums a counter over its labels, and says when a daemon does not expose it', () => {
    const text = [
      '# HELP staysync_database_transactions_total Transactions',
      '# TYPE staysync_database_transactions_total counter',
      'staysync_database_transactions_total{pool="main"} 120',
      'staysync_database_transactions_total{pool="metrics"} 3',
      'staysync_database_transactions_total_created 1700000000',
      'other_total 5',
    ].join('\n');
    expect(counterTotal(text, 'staysync_database_transactions_total')).toBe(123);
    expect(counterTotal('other_total 5\n', 'staysync_database_transactions_total')).toBeUndefined();
  });
});

const snap = (over: Partial<Snapshot>): Snapshot => ({
  t: 0,
  accepted: {},
  listByClient: {},
  tokens: 0,
  token429: 0,
  rejected429: 0,
  xactCommit: 0,
  otherXactCommit: 0,
  rowsWritten: 0,
  sessions: 0,
  walBytes: 0n,
  benchQueries: 0,
  daemonTransactions: [undefined, undefined],
  cpuTicks: [0, 0],
  rssBytes: [undefined, undefined],
  ...over,
});

describe('a phase from its two snapshots', () => {
  it('gives rates per hour and per second, the bench’s own queries left out', () => {
    const a = snap({ t: 1_000, listByClient: { a: 10, b: 10 }, accepted: { bookingList: 20 }, xactCommit: 100, benchQueries: 5, cpuTicks: [100, 200] });
    const b = snap({
      t: 601_000,
      listByClient: { a: 30, b: 11 },
      accepted: { bookingList: 41, bookingDetails: 3 },
      tokens: 70,
      xactCommit: 100 + 600 + 50,
      benchQueries: 55,
      walBytes: 1_000_000n,
      rowsWritten: 7,
      sessions: 60,
      cpuTicks: [100 + 3_000, 200 + 600],
    });
    const f = phaseFigures(a, b, ['a', 'b', 'c'], 100);
    // Ten minutes: counts × 6 an hour; c made none.
    expect(f.listPerHour).toEqual([120, 6, 0]);
    expect(f.requestsPerHour).toEqual({ bookingList: 126, bookingDetails: 18 });
    expect(f.tokensPerHour).toBe(420);
    // 650 commits, 50 of them the bench's: 600 in 600 s.
    expect(f.transactionsPerSecond).toBe(1);
    expect(f.walBytesPerHour).toBe(6_000_000);
    expect(f.rowsWrittenPerHour).toBe(42);
    expect(f.sessionsPerSecond).toBe(0.1);
    // 3,000 ticks at 100/s in 600 s: 5 % of a core; 600: 1 %.
    expect(f.cpuShare).toEqual([0.05, 0.01]);
    expect(f.daemonTransactionsPerSecond).toBeUndefined();
  });

  it('adds the daemons’ own transaction counts when every replica exposes them', () => {
    const f = phaseFigures(snap({ daemonTransactions: [10, 20] }), snap({ t: 10_000, daemonTransactions: [30, 50] }), [], 100);
    expect(f.daemonTransactionsPerSecond).toBe(5);
  });
});

describe('freshness of a phase', () => {
  const change = (phase: FleetChange['phase'], waitMs: number | undefined): FleetChange => ({
    propertyId: '1',
    number: 'n',
    phase,
    madeMs: 1_000,
    targetMs: 1_000,
    ...(waitMs === undefined ? {} : { seenMs: 1_000 + waitMs }),
  });

  it('takes only the phase’s changes', () => {
    const changes = [...Array.from({ length: 19 }, (_, i) => change('busy', (i + 1) * 1_000)), change('busy', 40_000), change('backfill', 90_000)];
    const f = freshnessOf(changes, 'busy');
    expect(f.made).toBe(20);
    expect(f.measured).toBe(20);
    expect(f.maxMs).toBe(40_000);
    expect(f.p50Ms).toBe(10_500);
  });

  it('counts a change never seen as the longest wait, not as no wait', () => {
    const f = freshnessOf([change('backfill', 1_000), change('backfill', undefined)], 'backfill');
    expect(f.measured).toBe(1);
    expect(f.maxMs).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('the report', () => {
  const phase = (over: Partial<PhaseFigures> = {}): PhaseFigures => ({
    ms: 600_000,
    listPerHour: [120, 120],
    requestsPerHour: { bookingList: 240 },
    tokensPerHour: 100,
    token429: 0,
    rejected429: 0,
    transactionsPerSecond: 1,
    daemonTransactionsPerSecond: 1,
    otherTransactionsPerSecond: 0,
    sessionsPerSecond: 0,
    walBytesPerHour: 1e6,
    rowsWrittenPerHour: 100,
    cpuShare: [0.02, 0.03],
    ...over,
  });
  const fresh = { made: 10, measured: 10, p50Ms: 5_000, p95Ms: 10_000, maxMs: 20_000 };
  const result = (over: Partial<FleetRunResult> = {}): FleetRunResult => ({
    opts: { ...FLEET_DEFAULTS, connections: 2, settleMinutes: 10, databaseUrl: 'postgres://x' },
    daemonPath: 'dist/cli/main.js',
    limits: { ...defaultRateLimits },
    catchUpMs: 1_000,
    settle: phase({ listPerHour: [3000, 3000], transactionsPerSecond: 50 }),
    quiet: phase(),
    busy: phase(),
    busyHotListPerHour: [3000],
    busyQuietListPerHour: [120],
    backfill: phase(),
    freshnessBusy: fresh,
    freshnessBackfill: fresh,
    backfillMirrored: 2_000,
    backfillCaughtUp: true,
    tokenWindowFill: defaultRateLimits.token.map((w) => ({ ...w, maxSeen: 1 })),
    tokensIssued: 10,
    token429: 0,
    peakRssBytes: [100e6, 100e6],
    quietRssBytes: [90e6, 90e6],
    daemonCountsTransactions: true,
    exits: [
      { code: 0, signal: null },
      { code: 0, signal: null },
    ],
    loadAverages: [],
    ...over,
  });
  const verdicts = (r: FleetRunResult) =>
    fleetLines(r)
      .sections.flatMap((s) => s.lines)
      .filter((l) => l.verdict !== '')
      .map((l) => `${l.label}: ${l.verdict}`);

  it('passes a fleet within every goal', () => {
    expect(verdicts(result()).filter((v) => v.endsWith('MISS'))).toEqual([]);
  });

  it('says MISS for each goal a run misses', () => {
    const r = result({
      quiet: phase({ listPerHour: [3000, 3000], transactionsPerSecond: FLEET_GOALS.quietTransactionsPerSecond + 1, cpuShare: [0.2, 0.05] }),
      peakRssBytes: [400e6, 100e6],
      freshnessBusy: { ...fresh, p95Ms: 31_000 },
      freshnessBackfill: { ...fresh, maxMs: Number.POSITIVE_INFINITY, measured: 9 },
      tokenWindowFill: defaultRateLimits.token.map((w) => ({ ...w, maxSeen: w.limit + 1 })),
    });
    const missed = verdicts(r).filter((v) => v.endsWith('MISS'));
    expect(missed).toEqual([
      'list requests/h per property: MISS',
      'transactions/s: MISS',
      'CPU per replica: MISS',
      'RSS per replica: MISS',
      'change → row: MISS',
      'change → row: MISS',
      'token requests: MISS',
    ]);
  });

  it('says MISS for 429s at the token endpoint even when the windows, stamped at issue, look full but not over', () => {
    const tokens = (r: FleetRunResult) => verdicts(r).filter((v) => v.startsWith('token requests'));
    expect(tokens(result({ token429: 3 }))).toEqual(['token requests: MISS']);
    expect(tokens(result())).toEqual(['token requests: PASS']);
  });

  it('says how each replica ended: PASS for 0, MISS for a signal', () => {
    const exit = (r: FleetRunResult) =>
      fleetLines(r)
        .sections.flatMap((s) => s.lines)
        .find((l) => l.label === 'exit');
    expect(exit(result())).toMatchObject({ value: '0, 0', verdict: 'PASS' });
    expect(
      exit(
        result({
          exits: [
            { code: 0, signal: null },
            { code: null, signal: 'SIGABRT' },
          ],
        }),
      ),
    ).toMatchObject({ value: '0, SIGABRT', verdict: 'MISS' });
  });

  it('says how many egress addresses the fleet needs at the production token limits', () => {
    const notes = fleetLines(result({ opts: { ...result().opts, connections: 1000 } })).notes.join('\n');
    expect(notes).toMatch(/one IP carries 70 connections/);
    expect(notes).toMatch(/needs 15 egress addresses/);
    expect(notes).toMatch(/about 4,286 tokens an hour/);
  });
});
