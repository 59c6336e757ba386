/**
 * Scenario "fleet": what following many hotels costs, at real time. The simulator serves
 * --fleet-connections API connections with one property each (a few bookings, so the catch-up
 * is quick), each with the production booking windows of its own; two replicas of the daemon
 * (`run`, child processes as deployed, one IP) follow them from a connections directory into
 * one PostgreSQL database of the bench's own (so that pg_stat_database counts only them).
 *
 * Phases, after the catch-up (every booking mirrored, every list caught up):
 * - after the catch-up: nothing changes for --fleet-settle-minutes (3), while the replicas
 *   share the connections out and the start-up settles (a backfill is no change: every
 *   property is quiet from its catch-up on);
 * - quiet: nothing changes for --fleet-quiet-minutes;
 * - busy: a change process of --fleet-changes-per-hour changes an hour (Poisson), 10 % of the
 *   hotels making 80 % of them, each change timed from the moment it is made to its row in
 *   `bookings`, for --fleet-busy-minutes;
 * - backfill: the change process goes on while one more connection, a hotel of
 *   --fleet-backfill-bookings bookings, is added to the running fleet (its file written into the
 *   connections directory), for --fleet-backfill-minutes.
 * Per phase: list requests per property per hour (the simulator's counts per client), all
 * provider requests per hour, database transactions per second (xact_commit of the bench's
 * database, less the bench's own queries, and the daemons' staysync_database_transactions_total),
 * WAL bytes per hour (pg_current_wal_lsn: the server's, whatever else runs on it), CPU of each
 * replica (/proc/<pid>/stat utime + stime) and its peak RSS, freshness (p50, p95, max) and token
 * requests per hour, against the goals of issue 26.
 *
 * Tokens: 1,000 connections with the provider's 15-minute tokens ask about 4,300 tokens an hour
 * and 1,000 at the start, far above the 300 an hour (15 a minute) the token endpoint gives one
 * IP address (tokenCapacity: about 70 connections). A real fleet of this size leaves through
 * several addresses; this bench has one, so the simulator and the daemons both use the token
 * windows FLEET_TOKEN_WINDOWS (3/s as in production, the minute and hour windows 20 times
 * higher), and the bench shows that the replicas together stay within them (the token gate)
 * with no 429. Tokens live 900 s, as the provider's do.
 *
 * --fleet-daemon runs another build of the daemon (its dist/cli/main.js), e.g. the code before
 * issue 26, against the same scenario; one without staysync_database_transactions_total is
 * measured by pg_stat_database alone.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Config, RateWindow } from '../../src/config/config.js';
import { defaultRateLimits, startSimulator } from '../simulator/index.js';
import { mulberry32, type Rng } from '../simulator/random.js';
import { abortableSleep as sleep } from '../../src/util/clock.js';
import { freePort } from '../../src/util/free-port.js';
import { tokenCapacity } from '../../src/provider/token-capacity.js';
import { mb, secs, type Line } from './report.js';
import { readMemory } from './rss.js';
import { maxInWindow, stampTokenIssues } from './scale.js';
import { quantile } from './stats.js';
import { childEnv, CLI_PATH, dropBenchSchemas, RunFailedError, spawnDaemon, type Limits, type SpawnedDaemon } from './run.js';

export const FLEET_DEFAULTS = {
  connections: 1000,
  /** Bookings of each hotel of the fleet: few, so that the catch-up is quick. */
  bookingsPerHotel: 5,
  /**
   * After the catch-up, before the quiet phase: the replicas share the connections out (500
   * handovers of 1,000 take ten heartbeats, 75 s, and each a new token and engine start on
   * the replica that takes it), the start-up settles.
   */
  settleMinutes: 3,
  quietMinutes: 10,
  busyMinutes: 10,
  backfillMinutes: 10,
  changesPerHour: 1000,
  backfillBookings: 50_000,
  replicas: 2,
  /** The share of hotels that make most changes, and the share of changes they make. */
  hotShare: 0.1,
  hotChangeShare: 0.8,
  /** The provider's token lifetime (expires_in). */
  tokenTtlSeconds: 900,
} as const;

/**
 * The token windows of this bench, in the simulator and in the daemons' rateLimits.token:
 * 3/s as in production, 300/min and 6,000/h instead of 15/min and 300/h (see the header).
 */
export const FLEET_TOKEN_WINDOWS: RateWindow[] = [
  { limit: 3, windowMs: 1_000 },
  { limit: 300, windowMs: 60_000 },
  { limit: 6_000, windowMs: 3_600_000 },
];

/** The goals of issue 26 for a fleet of quiet hotels. */
export const FLEET_GOALS = {
  quietListPerHour: 120,
  quietTransactionsPerSecond: 5,
  quietCpuShare: 0.1,
  rssBytes: 300 * 1024 * 1024,
  freshnessP95Ms: 30_000,
  freshnessMaxMs: 60_000,
} as const;

/** How often the bench looks at `bookings` while changes are in flight. */
const POLL_MS = 250;
/** After the last change: how long the bench waits for the changes not seen yet. */
const DRAIN_MS = 90_000;
const TRANSACTIONS_METRIC = 'staysync_database_transactions_total';

// ---------------------------------------------------------------- pure parts (tested)

/** The wait before the next change of a Poisson process of `perHour` changes an hour (ms). */
export function exponentialGapMs(rng: Rng, perHour: number): number {
  return (-Math.log(1 - rng()) * 3_600_000) / perHour;
}

/** How many hotels of `hotels` are the busy ones (at least one). */
export function hotCount(hotels: number, hotShare: number): number {
  return Math.min(hotels, Math.max(1, Math.round(hotels * hotShare)));
}

/**
 * The hotel (index) of the next change: with probability `hotChangeShare` one of the first
 * hotCount(hotels, hotShare) hotels, else one of the others, uniformly within each group.
 */
export function pickHotel(rng: Rng, hotels: number, hotShare: number, hotChangeShare: number): number {
  const hot = hotCount(hotels, hotShare);
  if (hot === hotels || rng() < hotChangeShare) return Math.floor(rng() * hot);
  return hot + Math.floor(rng() * (hotels - hot));
}

/** utime + stime of a /proc/<pid>/stat line, in clock ticks (the fields after the command's closing parenthesis). */
export function cpuTicksOf(stat: string): number {
  const rest = stat
    .slice(stat.lastIndexOf(')') + 2)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state): utime is field 14, stime field 15.
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) throw new Error(`not a /proc/<pid>/stat line: ${JSON.stringify(stat.slice(0, 80))}`);
  return utime + stime;
}

/** A pg_lsn ('16/B374D848') as a byte position. */
export function lsnBytes(lsn: string): bigint {
  const m = /^([0-9A-Fa-f]+)\/([0-9A-Fa-f]+)$/.exec(lsn);
  if (!m) throw new Error(`not a pg_lsn: ${JSON.stringify(lsn)}`);
  return (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`);
}

/** The sum of every sample of counter `name` in a Prometheus text exposition; undefined when absent. */
export function counterTotal(text: string, name: string): number | undefined {
  let total = 0;
  let seen = false;
  for (const line of text.split('\n')) {
    const m = /^(\w+)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    total += value;
    seen = true;
  }
  return seen ? total : undefined;
}

export const perHour = (count: number, ms: number): number => (count * 3_600_000) / Math.max(1, ms);

/** What the bench reads at each phase boundary. */
export interface Snapshot {
  t: number;
  /** Provider requests accepted, per scope. */
  accepted: Record<string, number>;
  /** Booking list requests accepted, per client id. */
  listByClient: Record<string, number>;
  tokens: number;
  /** 429 answers of the token endpoint (all 429s less those counted per client). */
  token429: number;
  rejected429: number;
  /** xact_commit of the bench's database, and of the other databases of the server. */
  xactCommit: number;
  otherXactCommit: number;
  /** tup_inserted + tup_updated + tup_deleted of the bench's database. */
  rowsWritten: number;
  /** Sessions opened on the bench's database (pg_stat_database.sessions): each one's start is a transaction xact_commit counts. */
  sessions: number;
  walBytes: bigint;
  /** The bench's own queries on the bench's database so far (each one a transaction). */
  benchQueries: number;
  /** Per replica: staysync_database_transactions_total (undefined: not exposed), CPU ticks, RSS. */
  daemonTransactions: (number | undefined)[];
  cpuTicks: (number | undefined)[];
  rssBytes: (number | undefined)[];
}

export interface PhaseFigures {
  ms: number;
  /** List requests per hour of each property in `properties` (client ids). */
  listPerHour: number[];
  requestsPerHour: Record<string, number>;
  tokensPerHour: number;
  token429: number;
  rejected429: number;
  transactionsPerSecond: number;
  /** The daemons' own count, when every replica exposes it. */
  daemonTransactionsPerSecond: number | undefined;
  otherTransactionsPerSecond: number;
  /** Sessions opened on the fleet's database per second (the bench's one is open throughout). */
  sessionsPerSecond: number;
  walBytesPerHour: number;
  rowsWrittenPerHour: number;
  /** Per replica: share of one core. */
  cpuShare: (number | undefined)[];
}

/** The figures of a phase from its two snapshots; `clients`: the client ids whose list requests count. */
export function phaseFigures(a: Snapshot, b: Snapshot, clients: readonly string[], ticksPerSecond: number): PhaseFigures {
  const ms = b.t - a.t;
  const requestsPerHour: Record<string, number> = {};
  for (const scope of new Set([...Object.keys(a.accepted), ...Object.keys(b.accepted)]))
    requestsPerHour[scope] = perHour((b.accepted[scope] ?? 0) - (a.accepted[scope] ?? 0), ms);
  const daemonDeltas = b.daemonTransactions.map((v, i) => (v === undefined || a.daemonTransactions[i] === undefined ? undefined : v - a.daemonTransactions[i]));
  return {
    ms,
    listPerHour: clients.map((c) => perHour((b.listByClient[c] ?? 0) - (a.listByClient[c] ?? 0), ms)),
    requestsPerHour,
    tokensPerHour: perHour(b.tokens - a.tokens, ms),
    token429: b.token429 - a.token429,
    rejected429: b.rejected429 - a.rejected429,
    transactionsPerSecond: (b.xactCommit - a.xactCommit - (b.benchQueries - a.benchQueries)) / (ms / 1000),
    daemonTransactionsPerSecond: daemonDeltas.every((d) => d !== undefined) ? daemonDeltas.reduce((s, d) => s + d, 0) / (ms / 1000) : undefined,
    otherTransactionsPerSecond: (b.otherXactCommit - a.otherXactCommit) / (ms / 1000),
    sessionsPerSecond: (b.sessions - a.sessions) / (ms / 1000),
    walBytesPerHour: perHour(Number(b.walBytes - a.walBytes), ms),
    rowsWrittenPerHour: perHour(b.rowsWritten - a.rowsWritten, ms),
    cpuShare: b.cpuTicks.map((v, i) => (v === undefined || a.cpuTicks[i] === undefined ? undefined : (v - a.cpuTicks[i]) / ticksPerSecond / (ms / 1000))),
  };
}

export interface FleetChange {
  propertyId: string;
  number: string;
  phase: 'busy' | 'backfill';
  madeMs: number;
  /** Its new modifiedDateTime (whole seconds): the row is current when modified_at reaches it. */
  targetMs: number;
  seenMs?: number;
}

export interface Freshness {
  made: number;
  measured: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

/** p50, p95 and max of change → row of the changes of one phase; an unseen change counts as the longest wait. */
export function freshnessOf(changes: readonly FleetChange[], phase: FleetChange['phase']): Freshness {
  const mine = changes.filter((c) => c.phase === phase);
  const seen = mine.filter((c) => c.seenMs !== undefined).map((c) => c.seenMs! - c.madeMs);
  const unseen = mine.length - seen.length;
  const all = unseen > 0 ? [...seen, ...Array<number>(unseen).fill(Number.POSITIVE_INFINITY)] : seen;
  return {
    made: mine.length,
    measured: seen.length,
    p50Ms: quantile(all, 0.5),
    p95Ms: quantile(all, 0.95),
    maxMs: all.length > 0 ? Math.max(...all) : Number.NaN,
  };
}

// ---------------------------------------------------------------- the run

export interface FleetBenchOptions {
  connections: number;
  bookingsPerHotel: number;
  settleMinutes: number;
  quietMinutes: number;
  busyMinutes: number;
  backfillMinutes: number;
  changesPerHour: number;
  backfillBookings: number;
  replicas: number;
  /** The daemon's entry point (dist/cli/main.js); default this checkout's. */
  daemonPath?: string;
  databaseUrl: string;
  seed?: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface FleetRunResult {
  opts: Omit<FleetBenchOptions, 'onProgress' | 'signal'>;
  daemonPath: string;
  limits: Limits;
  catchUpMs: number;
  /** The settleMinutes after the catch-up, every property busy from its catch-up. */
  settle: PhaseFigures;
  quiet: PhaseFigures;
  busy: PhaseFigures;
  /** The busy phase split: the hot hotels, and those with no change in the phase nor in the quietAfter before it. */
  busyHotListPerHour: number[];
  busyQuietListPerHour: number[];
  backfill: PhaseFigures;
  freshnessBusy: Freshness;
  freshnessBackfill: Freshness;
  /** Bookings of the added hotel mirrored by the end of the backfill phase, and its list pages caught up. */
  backfillMirrored: number;
  backfillCaughtUp: boolean;
  tokenWindowFill: { limit: number; windowMs: number; maxSeen: number }[];
  tokensIssued: number;
  /** 429 answers of the token endpoint over the whole run (the simulator counts them at arrival, the proof the windows above cannot give). */
  token429: number;
  peakRssBytes: (number | undefined)[];
  /** RSS of each replica at the end of the quiet phase. */
  quietRssBytes: (number | undefined)[];
  /** Whether the daemons expose staysync_database_transactions_total. */
  daemonCountsTransactions: boolean;
  exits: { code: number | null; signal: NodeJS.Signals | null }[];
  loadAverages: { phase: string; load: string }[];
}

interface Replica extends SpawnedDaemon {
  port: number;
}

function clockTicksPerSecond(): number {
  try {
    const v = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return v > 0 ? v : 100;
  } catch {
    return 100;
  }
}

async function cpuTicks(pid: number | undefined): Promise<number | undefined> {
  if (pid === undefined) return undefined;
  try {
    return cpuTicksOf(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The quiet phase's and the busy phase's list request counts are per client: one property each. */
const clientOf = (i: number): string => `fleet-client-${i}`;
const propertyOf = (i: number): string => String(500_100 + i * 100);

export async function runFleetBench(opts: FleetBenchOptions): Promise<FleetRunResult> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  const dbName = `bench_fleet_${suffix}`;
  const dir = join(tmpdir(), `staysync-bench-fleet-${suffix}`);
  const connectionsDir = join(dir, 'connections');
  const configPath = join(dir, 'config.json');
  const daemonPath = opts.daemonPath ?? CLI_PATH;
  const progress = opts.onProgress ?? (() => undefined);
  const seed = opts.seed ?? 26;
  const n = opts.connections;
  const ticksPerSecond = clockTicksPerSecond();
  const limits: Limits = { ...defaultRateLimits, token: FLEET_TOKEN_WINDOWS };
  const fleetDbUrl = (() => {
    const u = new URL(opts.databaseUrl);
    u.pathname = `/${dbName}`;
    return u.toString();
  })();

  // The fleet's clients, then the hotel added during the run (its client known from the start, its connection file written later).
  const clients = Array.from({ length: n + 1 }, (_, i) => ({
    name: `f${String(i).padStart(5, '0')}`,
    clientId: clientOf(i),
    clientSecret: `fleet-secret-${i}-${suffix}`,
    propertyIds: [propertyOf(i)],
  }));
  const properties = clients.map((c, i) => ({ id: c.propertyIds[0]!, bookingCount: i < n ? opts.bookingsPerHotel : opts.backfillBookings }));
  const backfillClient = clients[n]!;
  const backfillProperty = backfillClient.propertyIds[0]!;
  const fleetTotal = n * opts.bookingsPerHotel;

  const admin = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'staysync-bench' });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  progress(`fleet: generating ${n} hotels of ${opts.bookingsPerHotel} bookings and one of ${opts.backfillBookings}`);
  const sim = await startSimulator({ clients, properties, rateLimits: limits, seed, tokenTtlSeconds: FLEET_DEFAULTS.tokenTtlSeconds });
  const tokenTimes: number[] = [];
  stampTokenIssues(sim.stats, tokenTimes);
  const db = new pg.Client({ connectionString: fleetDbUrl, application_name: 'staysync-bench' });
  let benchQueries = 0;
  const query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
    benchQueries++;
    return db.query<R>(text, values);
  };
  const replicas: Replica[] = [];
  const signal = opts.signal ?? new AbortController().signal;
  const loadAverages: { phase: string; load: string }[] = [];
  const noteLoad = async (phase: string) => loadAverages.push({ phase, load: (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ') });
  let changing = false;
  let changeLoop: Promise<void> | undefined;
  let poller: Promise<void> | undefined;
  try {
    await db.connect();
    await mkdir(connectionsDir, { recursive: true });
    const writeConnection = (c: (typeof clients)[number]) =>
      writeFile(join(connectionsDir, `${c.name}.json`), JSON.stringify({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds }));
    for (const c of clients.slice(0, n)) await writeConnection(c);
    await writeFile(
      configPath,
      JSON.stringify({
        rateLimits: limits,
        content: { enabled: false },
        pms: { enabled: false },
        occupancy: { enabled: false },
        webhooks: { enabled: false },
      }),
    );
    for (let i = 0; i < opts.replicas; i++) {
      const port = await freePort();
      const env = {
        ...childEnv({ databaseUrl: fleetDbUrl, properties: [] }, sim, schema, configPath),
        STAYSYNC_CONNECTIONS_DIR: connectionsDir,
        STAYSYNC_OPS_PORT: String(port),
      };
      replicas.push({ ...spawnDaemon(daemonPath, env, 1_000), port });
    }
    const running = (r: Replica) => r.child.exitCode === null && r.child.signalCode === null;
    const checkAlive = (when: string) => {
      const dead = replicas.find((r) => !running(r));
      if (dead)
        throw new RunFailedError(
          `fleet: a replica exited with ${dead.child.exitCode ?? dead.child.signalCode} ${when}:\n${dead.logs.finish().tail.slice(-2000)}`,
        );
    };

    const snapshot = async (): Promise<Snapshot> => {
      await admin.query('SELECT pg_stat_clear_snapshot()');
      const stat = await admin.query<{ mine: string; other: string; rows: string; sessions: string; lsn: string }>(
        `SELECT sum(xact_commit) FILTER (WHERE datname = $1) AS mine, sum(xact_commit) FILTER (WHERE datname <> $1) AS other,
                sum(tup_inserted + tup_updated + tup_deleted) FILTER (WHERE datname = $1) AS rows,
                sum(sessions) FILTER (WHERE datname = $1) AS sessions, pg_current_wal_lsn()::text AS lsn
         FROM pg_stat_database`,
        [dbName],
      );
      const row = stat.rows[0]!;
      const daemonTransactions = await Promise.all(
        replicas.map(async (r) => {
          try {
            const res = await fetch(`http://127.0.0.1:${r.port}/metrics`, { signal: AbortSignal.timeout(10_000) });
            return counterTotal(await res.text(), TRANSACTIONS_METRIC);
          } catch {
            return undefined;
          }
        }),
      );
      const byClient = sim.stats.rejected429ByClient;
      return {
        t: Date.now(),
        accepted: { ...sim.stats.accepted },
        listByClient: Object.fromEntries(Object.entries(sim.stats.acceptedByClient).map(([c, s]) => [c, s['bookingList'] ?? 0])),
        tokens: tokenTimes.length,
        token429: sim.stats.rejected429 - Object.values(byClient).reduce((s, v) => s + v, 0),
        rejected429: sim.stats.rejected429,
        xactCommit: Number(row.mine ?? 0),
        otherXactCommit: Number(row.other ?? 0),
        rowsWritten: Number(row.rows ?? 0),
        sessions: Number(row.sessions ?? 0),
        walBytes: lsnBytes(row.lsn),
        benchQueries,
        daemonTransactions,
        cpuTicks: await Promise.all(replicas.map((r) => cpuTicks(r.child.pid))),
        rssBytes: await Promise.all(replicas.map(async (r) => (await readMemory(r.child.pid!))?.rssBytes)),
      };
    };

    // ---- catch-up ----
    const spawnedAt = Date.now();
    progress(`fleet: ${opts.replicas} replicas (${daemonPath}), ${n} connections, ${fleetTotal} bookings`);
    let lastReport = Date.now();
    for (;;) {
      checkAlive('during the catch-up');
      const r = await query<{ b: string; up: string; q: string }>(
        `SELECT (SELECT count(*) FROM "${schema}".bookings) AS b,
                (SELECT count(*) FROM "${schema}".sync_cursors WHERE stream = 'booking_summaries' AND caught_up) AS up,
                (SELECT count(*) FROM "${schema}".booking_detail_queue) AS q`,
      ).catch(() => undefined);
      const row = r?.rows[0];
      if (row && Number(row.b) === fleetTotal && Number(row.up) === n && Number(row.q) === 0) break;
      if (Date.now() - lastReport > 30_000) {
        lastReport = Date.now();
        progress(`fleet: catch-up ${row?.b ?? 0}/${fleetTotal} bookings, ${row?.up ?? 0}/${n} lists caught up, ${tokenTimes.length} tokens issued`);
      }
      await sleep(2_000, signal);
    }
    const catchUpMs = Date.now() - spawnedAt;
    progress(
      `fleet: caught up in ${secs(catchUpMs)}; ${opts.settleMinutes} minutes after it (the replicas share the connections out), then ${opts.quietMinutes} quiet minutes`,
    );
    const fleetClients = clients.slice(0, n).map((c) => c.clientId);
    const s0 = await snapshot();
    await sleep(opts.settleMinutes * 60_000, signal);
    checkAlive('after the catch-up');

    // ---- quiet ----
    const q0 = await snapshot();
    await sleep(opts.quietMinutes * 60_000, signal);
    checkAlive('during the quiet phase');
    const q1 = await snapshot();
    await noteLoad('quiet');
    progress(`fleet: quiet phase measured; ${opts.busyMinutes} busy minutes (${opts.changesPerHour} changes an hour)`);

    // ---- the change process, and the poller that times each change to its row ----
    const changes: FleetChange[] = [];
    const pending = new Map<string, FleetChange[]>();
    const lastChangeAt = new Map<number, number>();
    let phase: FleetChange['phase'] = 'busy';
    changing = true;
    const rng = mulberry32(seed);
    changeLoop = (async () => {
      while (changing && !signal.aborted) {
        await sleep(exponentialGapMs(rng, opts.changesPerHour), signal).catch(() => undefined);
        if (!changing || signal.aborted) break;
        const hotel = pickHotel(rng, n, FLEET_DEFAULTS.hotShare, FLEET_DEFAULTS.hotChangeShare);
        const id = propertyOf(hotel);
        const before = new Map(sim.bookings(id).map((b) => [b.number, b.modifiedDateTime]));
        const madeMs = Date.now();
        sim.mutate({ count: 1, propertyId: id });
        const changed = sim.bookings(id).find((b) => before.get(b.number) !== b.modifiedDateTime);
        if (!changed) continue;
        lastChangeAt.set(hotel, madeMs);
        const change: FleetChange = { propertyId: id, number: changed.number, phase, madeMs, targetMs: Date.parse(changed.modifiedDateTime) };
        changes.push(change);
        const key = `${id}/${changed.number}`;
        pending.set(key, [...(pending.get(key) ?? []), change]);
      }
    })();
    let polling = true;
    poller = (async () => {
      while (polling) {
        if (pending.size > 0) {
          const waiting = [...pending.values()].map((list) => list[0]!);
          const at = Date.now();
          const r = await query<{ property_id: string; number: string; modified_at: Date }>(
            `SELECT property_id, number, modified_at FROM "${schema}".bookings WHERE (property_id, number) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
            [waiting.map((w) => w.propertyId), waiting.map((w) => w.number)],
          );
          for (const row of r.rows) {
            const key = `${row.property_id}/${row.number}`;
            const list = pending.get(key) ?? [];
            for (const m of list) if (row.modified_at.getTime() >= m.targetMs) m.seenMs ??= at;
            const left = list.filter((m) => m.seenMs === undefined);
            if (left.length > 0) pending.set(key, left);
            else pending.delete(key);
          }
        }
        await sleep(POLL_MS);
      }
    })();

    // ---- busy ----
    const b0 = await snapshot();
    await sleep(opts.busyMinutes * 60_000, signal);
    checkAlive('during the busy phase');
    const b1 = await snapshot();
    await noteLoad('busy');
    const hot = hotCount(n, FLEET_DEFAULTS.hotShare);
    // Quiet throughout: no change in the phase (the quietAfter before it was the quiet phase).
    const quietThroughout = fleetClients.filter((_, i) => i >= hot && !lastChangeAt.has(i));
    const busyHotListPerHour = phaseFigures(b0, b1, fleetClients.slice(0, hot), ticksPerSecond).listPerHour;
    const busyQuietListPerHour = phaseFigures(b0, b1, quietThroughout, ticksPerSecond).listPerHour;

    // ---- backfill: one more hotel joins the running fleet ----
    progress(`fleet: busy phase measured; adding a hotel of ${opts.backfillBookings} bookings for ${opts.backfillMinutes} minutes`);
    phase = 'backfill';
    const f0 = await snapshot();
    await writeConnection(backfillClient);
    await sleep(opts.backfillMinutes * 60_000, signal);
    checkAlive('during the backfill phase');
    const f1 = await snapshot();
    await noteLoad('backfill');
    const bf = await query<{ b: string; up: string }>(
      `SELECT (SELECT count(*) FROM "${schema}".bookings WHERE property_id = $1) AS b,
              (SELECT count(*) FROM "${schema}".sync_cursors WHERE stream = 'booking_summaries' AND caught_up AND property_id = $1) AS up`,
      [backfillProperty],
    );

    // ---- the changes still in flight, then SIGTERM ----
    changing = false;
    await changeLoop;
    const drainUntil = Date.now() + DRAIN_MS;
    while (pending.size > 0 && Date.now() < drainUntil) await sleep(500, signal);
    polling = false;
    await poller;
    for (const r of replicas) if (running(r)) r.child.kill('SIGTERM');
    const killers = replicas.map((r) => setTimeout(() => running(r) && r.child.kill('SIGKILL'), 60_000));
    const exits = await Promise.all(replicas.map((r) => r.exited));
    killers.forEach(clearTimeout);
    for (const r of replicas) await r.memory.stop();

    return {
      opts: {
        connections: n,
        bookingsPerHotel: opts.bookingsPerHotel,
        settleMinutes: opts.settleMinutes,
        quietMinutes: opts.quietMinutes,
        busyMinutes: opts.busyMinutes,
        backfillMinutes: opts.backfillMinutes,
        changesPerHour: opts.changesPerHour,
        backfillBookings: opts.backfillBookings,
        replicas: opts.replicas,
        databaseUrl: opts.databaseUrl,
        seed,
      },
      daemonPath,
      limits,
      catchUpMs,
      settle: phaseFigures(s0, q0, fleetClients, ticksPerSecond),
      quiet: phaseFigures(q0, q1, fleetClients, ticksPerSecond),
      busy: phaseFigures(b0, b1, fleetClients, ticksPerSecond),
      busyHotListPerHour,
      busyQuietListPerHour,
      backfill: phaseFigures(f0, f1, fleetClients, ticksPerSecond),
      freshnessBusy: freshnessOf(changes, 'busy'),
      freshnessBackfill: freshnessOf(changes, 'backfill'),
      backfillMirrored: Number(bf.rows[0]?.b ?? 0),
      backfillCaughtUp: Number(bf.rows[0]?.up ?? 0) > 0,
      tokenWindowFill: limits.token.map((w) => ({ ...w, maxSeen: maxInWindow(tokenTimes, w.windowMs) })),
      tokensIssued: tokenTimes.length,
      token429: sim.stats.rejected429 - Object.values(sim.stats.rejected429ByClient).reduce((x, v) => x + v, 0),
      peakRssBytes: replicas.map((r) => r.memory.peakBytes),
      quietRssBytes: q1.rssBytes,
      daemonCountsTransactions: q1.daemonTransactions.every((v) => v !== undefined),
      exits,
      loadAverages,
    };
  } finally {
    changing = false;
    await changeLoop?.catch(() => undefined);
    for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await Promise.all(replicas.map((r) => r.exited.catch(() => undefined)));
    for (const r of replicas) await r.memory.stop();
    await db.end().catch(() => undefined);
    await dropBenchSchemas(fleetDbUrl, schema);
    await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`).catch((err: unknown) => {
      process.stderr.write(`bench: could not drop database ${dbName}: ${(err as Error).message}\n`);
    });
    await admin.end().catch(() => undefined);
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- the report

const ms = (x: number): string => (Number.isFinite(x) ? `${(x / 1000).toFixed(1)} s` : x === Number.POSITIVE_INFINITY ? 'unseen' : 'n/a');
const num = (x: number, digits = 0): string => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (x: number | undefined): string => (x === undefined ? 'n/a' : `${(x * 100).toFixed(1)} %`);
const mean = (xs: readonly number[]): number => (xs.length === 0 ? Number.NaN : xs.reduce((s, x) => s + x, 0) / xs.length);
const sum = (r: Record<string, number>): number => Object.values(r).reduce((s, x) => s + x, 0);

/** List requests per property per hour: mean, p95 and max over `values`. */
function listText(values: readonly number[]): string {
  if (values.length === 0) return 'no property';
  // The mean with a decimal: it is what the goal is judged on, and 120.3 is not 120.
  return `mean ${num(mean(values), 1)}, p95 ${num(quantile(values, 0.95))}, max ${num(Math.max(...values))} over ${values.length} properties`;
}

function requestsText(f: PhaseFigures): string {
  return Object.entries(f.requestsPerHour)
    .filter(([, v]) => v > 0)
    .map(([scope, v]) => `${scope} ${num(v)}`)
    .join(', ');
}

/** The lines of one phase: what it cost; `properties`: the fleet's size, for the figures per 1,000 properties. */
function costLines(f: PhaseFigures, quiet: boolean, counted: boolean, properties: number): Line[] {
  const perThousand = (x: number, digits: number) => (properties === 1000 ? '' : ` (${num((x * 1000) / properties, digits)} per 1,000 properties)`);
  const cpuTotal = f.cpuShare.every((c) => c !== undefined) ? f.cpuShare.reduce((x, c) => x + c, 0) : undefined;
  const cpuPerThousand =
    cpuTotal === undefined || properties === 1000
      ? ''
      : ` (${num((cpuTotal * 100 * 1000) / properties, 1)} % of a core per 1,000 properties, the replicas together)`;
  const cpuGoal = quiet ? `(goal <= ${FLEET_GOALS.quietCpuShare * 100} % each)` : '';
  return [
    {
      label: 'provider requests/h',
      value: num(sum(f.requestsPerHour)),
      detail: `${requestsText(f)}; ${f.rejected429} × 429`,
      goal: '',
      verdict: f.rejected429 === 0 ? '' : 'MISS',
    },
    {
      label: 'transactions/s',
      value: num(f.transactionsPerSecond, 2),
      detail:
        `pg_stat_database xact_commit of the fleet's database, less the bench's queries${perThousand(f.transactionsPerSecond, 2)}; ` +
        (counted && f.daemonTransactionsPerSecond !== undefined
          ? `${TRANSACTIONS_METRIC} of the replicas: ${num(f.daemonTransactionsPerSecond, 2)}/s`
          : `${TRANSACTIONS_METRIC}: not exposed`) +
        `; ${num(f.sessionsPerSecond, 2)} sessions opened/s (the start of each is a transaction PostgreSQL counts)`,
      goal: quiet ? `(goal <= ${FLEET_GOALS.quietTransactionsPerSecond})` : '',
      verdict: quiet ? (f.transactionsPerSecond <= FLEET_GOALS.quietTransactionsPerSecond ? 'PASS' : 'MISS') : '',
    },
    {
      label: 'WAL bytes/h',
      value: mb(f.walBytesPerHour),
      detail: `pg_current_wal_lsn, the whole server: other databases committed ${num(f.otherTransactionsPerSecond, 2)} transactions/s meanwhile`,
      goal: '',
      verdict: '',
    },
    {
      label: 'rows written/h',
      value: num(f.rowsWrittenPerHour),
      detail: `tup_inserted + tup_updated + tup_deleted of the fleet's database alone${perThousand(f.rowsWrittenPerHour, 0)}`,
      goal: '',
      verdict: '',
    },
    {
      label: 'CPU per replica',
      value: f.cpuShare.map(pct).join(', '),
      detail: `of one core, utime + stime from /proc/<pid>/stat${cpuPerThousand}`,
      goal: cpuGoal,
      verdict: quiet ? (f.cpuShare.every((c) => c !== undefined && c <= FLEET_GOALS.quietCpuShare) ? 'PASS' : 'MISS') : '',
    },
    {
      label: 'token requests/h',
      value: num(f.tokensPerHour),
      detail: `${f.token429} × 429 at the token endpoint`,
      goal: '',
      verdict: f.token429 === 0 ? '' : 'MISS',
    },
  ];
}

function freshnessLine(label: string, fr: Freshness): Line[] {
  const ok = fr.measured > 0 && fr.p95Ms < FLEET_GOALS.freshnessP95Ms && fr.maxMs < FLEET_GOALS.freshnessMaxMs;
  return [
    {
      label,
      value: `p95 ${ms(fr.p95Ms)}`,
      detail: `p50 ${ms(fr.p50Ms)}, max ${ms(fr.maxMs)}; ${fr.measured}/${fr.made} changes seen in bookings`,
      goal: `(goal p95 < ${FLEET_GOALS.freshnessP95Ms / 1000} s, max < ${FLEET_GOALS.freshnessMaxMs / 1000} s)`,
      verdict: ok ? 'PASS' : 'MISS',
    },
  ];
}

/** The report of a run: header lines, then per phase the figures against the goals. */
export function fleetLines(r: FleetRunResult): { sections: { title: string; lines: Line[] }[]; notes: string[] } {
  const o = r.opts;
  const quietList = r.quiet.listPerHour;
  // The production token windows, tokens renewed a minute early (config/default.json).
  const production = tokenCapacity({ rateLimits: { ...r.limits, token: defaultRateLimits.token }, provider: { tokenRenewBeforeExpiryMs: 60_000 } } as Pick<
    Config,
    'rateLimits' | 'provider'
  >);
  const needed = (o.connections * 3_600_000) / ((FLEET_DEFAULTS.tokenTtlSeconds - 60) * 1000);
  const sections = [
    {
      title: `after the catch-up (${o.settleMinutes} min, nothing changes; the replicas share the connections out)`,
      lines: [
        { label: 'list requests/h per property', value: num(mean(r.settle.listPerHour)), detail: listText(r.settle.listPerHour), goal: '', verdict: '' },
        ...costLines(r.settle, false, r.daemonCountsTransactions, o.connections).filter((l) => l.label !== 'token requests/h'),
      ] as Line[],
    },
    {
      title: `quiet phase (${o.quietMinutes} min, nothing changes)`,
      lines: [
        {
          label: 'list requests/h per property',
          value: num(mean(quietList)),
          detail: `${listText(quietList)} (one request more or less in ${o.quietMinutes} min is ${num(60 / o.quietMinutes)}/h)`,
          goal: `(goal <= ${FLEET_GOALS.quietListPerHour})`,
          verdict: mean(quietList) <= FLEET_GOALS.quietListPerHour ? 'PASS' : 'MISS',
        },
        ...costLines(r.quiet, true, r.daemonCountsTransactions, o.connections),
        {
          label: 'RSS per replica',
          value: r.quietRssBytes.map(mb).join(', '),
          detail: `at the end of the quiet phase; peak over the run ${r.peakRssBytes.map(mb).join(', ')}`,
          goal: `(goal < ${mb(FLEET_GOALS.rssBytes)})`,
          verdict: r.peakRssBytes.every((b) => b !== undefined && b < FLEET_GOALS.rssBytes) ? 'PASS' : 'MISS',
        },
      ] as Line[],
    },
    {
      title: `busy phase (${o.busyMinutes} min, ${o.changesPerHour} changes/h, ${FLEET_DEFAULTS.hotShare * 100} % of the hotels making ${FLEET_DEFAULTS.hotChangeShare * 100} %)`,
      lines: [
        { label: 'list requests/h, hot hotels', value: num(mean(r.busyHotListPerHour)), detail: listText(r.busyHotListPerHour), goal: '', verdict: '' },
        {
          label: 'list requests/h, unchanged',
          value: num(mean(r.busyQuietListPerHour)),
          detail: `${listText(r.busyQuietListPerHour)}: the hotels with no change in the phase`,
          goal: `(goal <= ${FLEET_GOALS.quietListPerHour})`,
          verdict: mean(r.busyQuietListPerHour) <= FLEET_GOALS.quietListPerHour ? 'PASS' : 'MISS',
        },
        ...costLines(r.busy, false, r.daemonCountsTransactions, o.connections),
        ...freshnessLine('change → row', r.freshnessBusy),
      ] as Line[],
    },
    {
      title: `backfill phase (${o.backfillMinutes} min: a hotel of ${o.backfillBookings} bookings joins, the changes go on)`,
      lines: [
        {
          label: 'added hotel mirrored',
          value: `${r.backfillMirrored}/${o.backfillBookings}`,
          detail: `${num(r.backfillMirrored / o.backfillMinutes)} bookings/min (its details budget: 200/min, 4,000/h); list ${r.backfillCaughtUp ? 'caught up' : 'not caught up yet'}`,
          goal: '',
          verdict: '',
        },
        ...costLines(r.backfill, false, r.daemonCountsTransactions, o.connections),
        ...freshnessLine('change → row', r.freshnessBackfill),
      ] as Line[],
    },
    {
      title: 'tokens over the whole run',
      lines: [
        {
          label: 'token requests',
          value: String(r.tokensIssued),
          detail:
            `${r.tokenWindowFill.map((w) => `${w.maxSeen}/${w.limit} in ${w.windowMs / 1000} s`).join(', ')} at most (stamped when issued), both replicas together (one IP); ` +
            `${r.token429} × 429 at the token endpoint (counted at arrival)`,
          goal: '(goal within rateLimits.token, no 429)',
          verdict: r.token429 === 0 && r.tokenWindowFill.every((w) => w.maxSeen <= w.limit) ? 'PASS' : 'MISS',
        },
      ] as Line[],
    },
  ];
  sections[4]!.lines.push({
    label: 'exit',
    value: r.exits.map((e) => e.code ?? e.signal).join(', '),
    detail: 'of each replica after SIGTERM',
    goal: '(goal 0 each)',
    verdict: r.exits.every((e) => e.code === 0) ? 'PASS' : 'MISS',
  });
  const notes = [
    `catch-up: ${secs(r.catchUpMs)} from the start of the replicas to every booking mirrored and every list caught up; daemon ${r.daemonPath}`,
    `token windows of this run (simulator and daemons): ${r.limits.token.map((w) => `${w.limit}/${w.windowMs / 1000} s`).join(', ')} per IP, relaxed from the production 3/s, 15/min, 300/h: ` +
      `${o.connections} connections with ${FLEET_DEFAULTS.tokenTtlSeconds / 60}-minute tokens renewed a minute early need about ${num(needed)} tokens an hour and ${o.connections} at the start; ` +
      `at the production limits one IP carries ${production.connections} connections (${production.explanation}), so this fleet needs ${Math.ceil(o.connections / Math.max(1, production.connections))} egress addresses`,
    `load average at the end of each phase: ${r.loadAverages.map((l) => `${l.phase} ${l.load}`).join('; ')}`,
  ];
  return { sections, notes };
}
