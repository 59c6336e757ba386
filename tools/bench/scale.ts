/**
 * Scenario G: many API connections, on one replica and on several. The simulator serves C
 * clients (one property each, its own contracted details budget, the token endpoint's budget
 * per IP); the daemons (`run`, child processes as deployed, all on this machine: one IP)
 * follow them from a connections directory of C files, until every booking is mirrored.
 *
 * Measured per run: the total details rate from the first detail answered to the last, against
 * the sum of the connections' details budgets; the token requests against the per-IP token
 * budget (the simulator answers 429 to any over it, so 0 × 429 is the proof); 429s of every
 * client; peak RSS of each replica. With several replicas, one is then killed (SIGKILL) and the
 * time until the others hold all its connections' leases is the takeover time.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { RateWindow } from '../../src/config/config.js';
import { startSimulator } from '../simulator/index.js';
import { abortableSleep as sleep } from '../../src/util/clock.js';
import { freePort } from '../../src/util/free-port.js';
import { mb, secs, type Line } from './report.js';
import { childEnv, CLI_PATH, dropBenchSchemas, RunFailedError, spawnDaemon, type Limits, type SpawnedDaemon } from './run.js';

export const SCALE_DEFAULTS = {
  connections: 200,
  bookingsPerConnection: 15,
  /** Each connection's contracted details budget: 1 every 2 s (the sum, 100/s for 200, is what this machine can write). */
  detailWindows: [{ limit: 1, windowMs: 2_000 }] as RateWindow[],
  replicas: [1, 3],
  /** The default takeover time: the bench shows it holds. */
  takeoverMs: 30_000,
};

export interface ScaleBenchOptions {
  label: string;
  connections: number;
  bookingsPerConnection: number;
  replicas: number;
  /** The process's windows; bookingDetails is each connection's own (contracted) budget. */
  limits: Limits;
  takeoverMs: number;
  /** With several replicas: kill one once the mirror is complete and time the takeover. */
  killOne: boolean;
  databaseUrl: string;
  timeoutMs: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ScaleRunResult {
  label: string;
  connections: number;
  replicas: number;
  bookings: number;
  /** Spawn to every booking mirrored. */
  syncMs: number;
  detailRequests: number;
  /** First to last detail answered. */
  detailsMs: number;
  /** The sum of the connections' details budgets (requests per second, the tightest window). */
  budgetPerSecond: number;
  /**
   * The least time a perfect client could take from its first detail to its last: connections
   * get their tokens one after the other at the per-IP token budget's pace (the last one when
   * the last token was issued), then each fetches its bookings at its own details budget.
   */
  theoryMs: number;
  tokensIssued: number;
  /** The most token requests seen inside any one window of each token window. */
  tokenWindowFill: { limit: number; windowMs: number; maxSeen: number }[];
  rejected429: number;
  peakRssBytes: (number | undefined)[];
  /** SIGKILL of one replica to every connection held by the others; undefined when not measured. */
  takeoverMs: number | undefined;
  exits: { code: number | null; signal: NodeJS.Signals | null }[];
}

type Replica = SpawnedDaemon;

export async function runScaleBench(opts: ScaleBenchOptions): Promise<ScaleRunResult> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  const dir = join(tmpdir(), `staysync-bench-${suffix}`);
  const connectionsDir = join(dir, 'connections');
  const configPath = join(dir, 'config.json');
  const progress = opts.onProgress ?? (() => undefined);
  const clients = Array.from({ length: opts.connections }, (_, i) => ({
    name: `c${String(i).padStart(4, '0')}`,
    clientId: `bench-client-${i}`,
    clientSecret: `bench-secret-${i}-${suffix}`,
    propertyIds: [String(500_100 + i * 100)],
    rateLimits: { bookingDetails: opts.limits.bookingDetails },
  }));
  const properties = clients.map((c) => ({ id: c.propertyIds[0]!, bookingCount: opts.bookingsPerConnection }));
  const sim = await startSimulator({ clients, properties, rateLimits: opts.limits, seed: 7 });
  const total = opts.connections * opts.bookingsPerConnection;
  // Token requests by arrival time (the simulator counts tokens it issued).
  const tokenTimes: number[] = [];
  const detailTimes = { first: Number.NaN, last: Number.NaN };
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const db = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'staysync-bench' });
  const replicas: Replica[] = [];
  try {
    await mkdir(connectionsDir, { recursive: true });
    for (const c of clients) {
      await writeFile(
        join(connectionsDir, `${c.name}.json`),
        JSON.stringify({ clientId: c.clientId, clientSecret: c.clientSecret, propertyIds: c.propertyIds, rateLimits: c.rateLimits }),
      );
    }
    await writeFile(
      configPath,
      JSON.stringify({
        rateLimits: opts.limits,
        content: { enabled: false },
        pms: { enabled: false },
        occupancy: { enabled: false },
        webhooks: { enabled: false },
      }),
    );
    await db.connect();
    watchCounters(sim, tokenTimes, detailTimes);
    const spawnedAt = Date.now();
    for (let i = 0; i < opts.replicas; i++) {
      const port = await freePort();
      const env = {
        ...childEnv({ databaseUrl: opts.databaseUrl, properties: [] }, sim, schema, configPath),
        STAYSYNC_CONNECTIONS_DIR: connectionsDir,
        STAYSYNC_OPS_PORT: String(port),
        STAYSYNC_TAKEOVER_MS: String(opts.takeoverMs),
      };
      replicas.push(spawnDaemon(CLI_PATH, env, 200));
    }
    const running = (r: Replica) => r.child.exitCode === null && r.child.signalCode === null;

    progress(`${opts.label}: ${opts.replicas} replica(s), ${opts.connections} connections, ${total} bookings`);
    let lastReport = Date.now();
    for (;;) {
      const dead = replicas.find((r) => !running(r));
      if (dead)
        throw new RunFailedError(
          `${opts.label}: a replica exited with ${dead.child.exitCode ?? dead.child.signalCode} during the sync:\n${dead.logs.finish().tail.slice(-2000)}`,
        );
      const r = await db
        .query<{ b: string; q: string }>(
          `SELECT (SELECT count(*) FROM "${schema}".bookings) AS b, (SELECT count(*) FROM "${schema}".booking_detail_queue) AS q`,
        )
        .catch(() => undefined);
      const row = r?.rows[0];
      if (row && Number(row.b) === total && Number(row.q) === 0) break;
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        progress(`${opts.label}: ${row?.b ?? 0}/${total} bookings, ${tokenTimes.length} tokens issued`);
      }
      await sleep(250, signal);
    }
    const syncMs = Date.now() - spawnedAt;

    let takeoverMs: number | undefined;
    if (opts.killOne && replicas.length > 1) {
      const victim = replicas[0]!;
      const victimHolder = `pid ${victim.child.pid}`;
      // Wait until the victim holds its share, so that the takeover moves real connections.
      for (;;) {
        const h = await db.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".sync_connections WHERE holder LIKE $1 AND lease_expires_at > now()`, [
          `%${victimHolder}`,
        ]);
        if (Number(h.rows[0]?.n ?? 0) > 0) break;
        await sleep(250, signal);
      }
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      for (;;) {
        const h = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM "${schema}".sync_connections c JOIN "${schema}".sync_replicas r USING (replica_id)
           WHERE c.lease_expires_at > now() AND r.expires_at > now() AND c.holder NOT LIKE $1`,
          [`%${victimHolder}`],
        );
        if (Number(h.rows[0]?.n ?? 0) === opts.connections) break;
        await sleep(100, signal);
      }
      takeoverMs = Date.now() - killedAt;
    }

    for (const r of replicas) if (running(r)) r.child.kill('SIGTERM');
    const exits = await Promise.all(replicas.map((r) => r.exited));
    for (const r of replicas) await r.memory.stop();
    const tokenWindowFill = opts.limits.token.map((w) => ({ ...w, maxSeen: maxInWindow(tokenTimes, w.windowMs) }));
    const tightest = Math.min(...opts.limits.bookingDetails.map((w) => (w.limit * 1000) / w.windowMs));
    const firstTokens = tokenTimes.slice(0, opts.connections);
    const tokenRampMs = firstTokens.length > 0 ? firstTokens.at(-1)! - firstTokens[0]! : 0;
    const theoryMs = tokenRampMs + ((opts.bookingsPerConnection - 1) * 1000) / tightest;
    return {
      label: opts.label,
      connections: opts.connections,
      replicas: opts.replicas,
      bookings: total,
      syncMs,
      detailRequests: sim.stats.accepted['bookingDetails'] ?? 0,
      detailsMs: detailTimes.last - detailTimes.first,
      budgetPerSecond: tightest * opts.connections,
      theoryMs,
      tokensIssued: sim.stats.tokensIssued,
      tokenWindowFill,
      rejected429: sim.stats.rejected429,
      peakRssBytes: replicas.map((r) => r.memory.peakBytes),
      takeoverMs,
      exits,
    };
  } finally {
    for (const r of replicas) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
    await Promise.all(replicas.map((r) => r.exited.catch(() => undefined)));
    await db.end().catch(() => undefined);
    await dropBenchSchemas(opts.databaseUrl, schema);
    await sim.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Stamps token issues and the first and last detail answer as the simulator counts them. */
function watchCounters(sim: Awaited<ReturnType<typeof startSimulator>>, tokenTimes: number[], details: { first: number; last: number }): void {
  const stats = sim.stats;
  stampTokenIssues(stats, tokenTimes);
  const accepted = { ...stats.accepted };
  stats.accepted = new Proxy(accepted, {
    set: (obj, key, value: number) => {
      if (key === 'bookingDetails') {
        const t = Date.now();
        if (Number.isNaN(details.first)) details.first = t;
        details.last = t;
      }
      obj[key as string] = value;
      return true;
    },
  });
}

/** Pushes the time of each token the simulator issues onto `tokenTimes` (it only counts them). */
export function stampTokenIssues(stats: { tokensIssued: number }, tokenTimes: number[]): void {
  let issued = stats.tokensIssued;
  Object.defineProperty(stats, 'tokensIssued', {
    get: () => issued,
    set: (v: number) => {
      for (let i = issued; i < v; i++) tokenTimes.push(Date.now());
      issued = v;
    },
  });
}

/** The most of `times` (ascending) inside any one window of `windowMs`. */
export function maxInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  let i = 0;
  for (let j = 0; j < times.length; j++) {
    while (times[i]! <= times[j]! - windowMs) i++;
    best = Math.max(best, j - i + 1);
  }
  return best;
}

/** The report lines of one run. */
export function scaleLines(r: ScaleRunResult, takeoverGoalMs: number): Line[] {
  const rate = r.detailRequests / Math.max(1e-3, r.detailsMs / 1000);
  const ratio = rate / r.budgetPerSecond;
  const timeRatio = r.detailsMs / Math.max(1, r.theoryMs);
  const lines: Line[] = [
    {
      label: 'details per second',
      value: rate.toFixed(1),
      detail: `${r.detailRequests} details in ${secs(r.detailsMs)}, ${(ratio * 100).toFixed(0)} % of the sum of the budgets (${r.budgetPerSecond.toFixed(0)}/s); all ${r.bookings} bookings mirrored ${secs(r.syncMs)} after start`,
      goal: '',
      verdict: '',
    },
    {
      label: 'time over theoretical',
      value: timeRatio.toFixed(3),
      detail: `theoretical ${secs(r.theoryMs)}: the tokens of all connections at the per-IP pace, then each connection's bookings at its details budget`,
      goal: '(goal <= 1.1)',
      verdict: timeRatio <= 1.1 ? 'PASS' : 'MISS',
    },
    {
      label: 'token requests',
      value: String(r.tokensIssued),
      detail: r.tokenWindowFill.map((w) => `${w.maxSeen}/${w.limit} in ${w.windowMs} ms`).join(', ') + ' at most (the per-IP budget)',
      goal: '(goal within it)',
      verdict: r.tokenWindowFill.every((w) => w.maxSeen <= w.limit) ? 'PASS' : 'MISS',
    },
    {
      label: '429 responses',
      value: String(r.rejected429),
      detail: 'all clients, token endpoint included',
      goal: '(goal 0)',
      verdict: r.rejected429 === 0 ? 'PASS' : 'MISS',
    },
    {
      label: 'peak RSS per replica',
      value: r.peakRssBytes.map((b) => mb(b)).join(', '),
      detail: `${Math.round(r.connections / r.replicas)} connections each`,
      goal: '(goal < 200 MB)',
      verdict: r.peakRssBytes.every((b) => b !== undefined && b < 200 * 1024 * 1024) ? 'PASS' : 'MISS',
    },
  ];
  if (r.takeoverMs !== undefined) {
    lines.push({
      label: 'takeover after SIGKILL',
      value: secs(r.takeoverMs),
      detail: 'until the other replicas hold every connection',
      goal: `(goal <= ${secs(takeoverGoalMs)})`,
      verdict: r.takeoverMs <= takeoverGoalMs ? 'PASS' : 'MISS',
    });
  }
  const bad = r.exits.filter((e, i) => !(i === 0 && r.takeoverMs !== undefined) && e.code !== 0);
  if (bad.length > 0)
    lines.push({
      label: 'exit',
      value: bad.map((e) => e.code ?? e.signal).join(', '),
      detail: 'SIGTERM should end each replica with 0',
      goal: '',
      verdict: 'MISS',
    });
  return lines;
}
