/**
 * Scenario F: freshness at real time scale. The daemon runs (`run`, a child process as
 * deployed) with the production booking list and details windows and adaptive polling, against
 * the simulator; content, PMS and occupancy are off (they use another budget). Once the mirror
 * holds every booking and every booking list is caught up, the simulator changes one booking at
 * a time (a random booking of a random property) at random moments,
 * and each change is timed from the moment it was made to the moment `bookings` shows the
 * booking at its new modified_at (the database polled every POLL_MS). Run once with one
 * property and once with P properties on one API connection (one budget), each at its own
 * pace (ChangePace).
 *
 * What to expect: the list budget allows one request every 1.2 s (3,000/h, the tightest
 * window), shared round robin by the caught-up properties, so a change waits on average half
 * a round (P × 0.6 s) for the poll that finds it, then one detail fetch, fetched first.
 * Goals: median under 2 s for one property, under P × 0.6 s + 1 s for P; no 429.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { mulberry32 } from '../simulator/random.js';
import { sustainableGapMs } from '../../src/sync/runtime/list-scheduler.js';
import { formatLines, logText, secs, statusText, type Line } from './report.js';
import { abortableSleep as sleep } from '../../src/util/clock.js';
import { freePort } from '../../src/util/free-port.js';
import { childEnv, CLI_PATH, CLIENT, dropBenchSchemas, LogCollector, RunFailedError, type DaemonLog, type Limits } from './run.js';
import { histogramQuantileBound, quantile, readHistogram, type HistogramReading } from './stats.js';

/** How often the bench looks at `bookings` while changes are in flight. */
const POLL_MS = 50;
/**
 * How many changes a run makes and how far apart (uniformly at random, ms).
 * - One property: few, slowly, so that each is over before the next.
 * - P properties: a change waits up to a round of P × 1.2 s, uniformly, so the median of n
 *   changes varies by about ±P × 1.2 s / √n (95%: ±4.4 s with 30, ±1.5 s with 240). Many
 *   changes, faster, are needed to tell a median from a goal only 1 s above half a round.
 *   The pace (about 86 a minute) stays inside the details budget's minute window (200) even
 *   in the first minute, which the first sync of 100 bookings has half used.
 */
export interface ChangePace {
  changes: number;
  gapMinMs: number;
  gapMaxMs: number;
}
export const ONE_PROPERTY_PACE: ChangePace = { changes: 30, gapMinMs: 1_500, gapMaxMs: 4_000 };
export const MANY_PROPERTIES_PACE: ChangePace = { changes: 240, gapMinMs: 400, gapMaxMs: 1_000 };
export const paceText = (p: ChangePace): string => `${p.changes} changes ${p.gapMinMs / 1000}–${p.gapMaxMs / 1000} s apart`;
const LAG_METRIC = 'staysync_change_lag_seconds';

export interface FreshChange {
  propertyId: string;
  number: string;
  /** When the bench made the change (ms). */
  madeMs: number;
  /** Its new modifiedDateTime (whole seconds, ms): the row is updated when modified_at reaches it. */
  targetMs: number;
  /**
   * When the bench saw the row at that version or a later one (ms): the start of the query
   * that showed it. A booking changed again before its first change was seen counts both
   * changes when the row reaches the first one's version, as a reader of the mirror sees it.
   */
  seenMs?: number;
  /** Changed again before this change was seen. */
  superseded?: boolean;
}

export interface FreshnessBenchOptions {
  label: string;
  properties: number;
  /** Bookings of the run, spread over its properties. */
  bookings: number;
  pace: ChangePace;
  limits: Limits;
  databaseUrl: string;
  /** The run is abandoned (failed) after this long. */
  timeoutMs: number;
  seed: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface FreshnessRunResult {
  label: string;
  properties: number;
  bookings: number;
  /** Spawn to every booking mirrored and every list caught up. */
  firstSyncMs: number;
  changes: FreshChange[];
  /** The first change to the end of the measurement. */
  measuringMs: number;
  /** Booking list requests the provider accepted from the first change to the end of the measurement. */
  listRequests: number;
  detailRequests: number;
  histogram: HistogramReading | undefined;
  rejected429: number;
  byStatus: Record<number, number>;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  log: DaemonLog;
}

/** `total` bookings over `count` properties (ids as the simulator's main.ts makes them). */
function spread(total: number, count: number): { id: string; bookingCount: number }[] {
  return Array.from({ length: count }, (_, i) => ({ id: String(500_100 + i * 100), bookingCount: Math.floor(total / count) + (i < total % count ? 1 : 0) }));
}

/** Every booking's modifiedDateTime, by property and number. */
function versions(sim: Simulator, ids: readonly string[]): Map<string, { propertyId: string; number: string; modified: string }> {
  const out = new Map<string, { propertyId: string; number: string; modified: string }>();
  for (const id of ids) for (const b of sim.bookings(id)) out.set(`${id}/${b.number}`, { propertyId: id, number: b.number, modified: b.modifiedDateTime });
  return out;
}

/** How long after the last change the bench waits for what is still unseen: two polling rounds and some. */
export function settleMs(properties: number, limits: Limits): number {
  return 2 * properties * sustainableGapMs(limits.bookingList) + 10_000;
}

export async function runFreshnessBench(opts: FreshnessBenchOptions): Promise<FreshnessRunResult> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  const configPath = join(tmpdir(), `staysync-bench-${suffix}.json`);
  const properties = spread(opts.bookings, opts.properties);
  const ids = properties.map((p) => p.id);
  const sim = await startSimulator({ clients: [CLIENT], properties, rateLimits: opts.limits, seed: opts.seed });
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const logs = new LogCollector();
  const db = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'staysync-bench' });
  let child: ReturnType<typeof spawn> | undefined;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  const progress = opts.onProgress ?? (() => undefined);
  try {
    await db.connect();
    const port = await freePort();
    await writeFile(
      configPath,
      JSON.stringify({
        rateLimits: opts.limits,
        ops: { port, host: '127.0.0.1' },
        content: { enabled: false },
        pms: { enabled: false },
        occupancy: { enabled: false },
      }),
    );
    const spawnedAt = Date.now();
    child = spawn(process.execPath, [CLI_PATH, 'run'], {
      env: childEnv({ databaseUrl: opts.databaseUrl, properties }, sim, schema, configPath),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const c = child;
    exited = new Promise((resolve, reject) => {
      c.once('error', reject);
      c.once('exit', (code, sig) => resolve({ code, signal: sig }));
    });
    c.stdout!.on('data', (d: Buffer) => logs.push(d));
    c.stderr!.on('data', (d: Buffer) => logs.push(d));
    const running = () => c.exitCode === null && c.signalCode === null;

    // ---- first sync: every booking mirrored, every list caught up, nothing queued ----
    progress(`${opts.label}: waiting for the first sync (${opts.bookings} bookings, ${opts.properties} properties)`);
    for (;;) {
      if (!running()) throw new RunFailedError(`${opts.label}: the daemon exited with ${c.exitCode ?? c.signalCode} during its first sync`);
      const r = await db
        .query<{ b: string; up: string; q: string }>(
          `SELECT (SELECT count(*) FROM "${schema}".bookings) AS b,
                  (SELECT count(*) FROM "${schema}".sync_cursors WHERE stream = 'booking_summaries' AND caught_up) AS up,
                  (SELECT count(*) FROM "${schema}".booking_detail_queue) AS q`,
        )
        .catch(() => undefined);
      const row = r?.rows[0];
      if (row && Number(row.b) === opts.bookings && Number(row.up) === opts.properties && Number(row.q) === 0) break;
      await sleep(200, signal);
    }
    const firstSyncMs = Date.now() - spawnedAt;

    // ---- changes, one at a time, each timed from the change to its row ----
    const rng = mulberry32(opts.seed);
    const changes: FreshChange[] = [];
    /** Changes not seen yet, by property and booking (a booking may have two). */
    const pending = new Map<string, FreshChange[]>();
    let polling = true;
    let settleDeadline = Infinity;
    let pollFailed: Error | undefined;
    const listBefore = sim.stats.accepted['bookingList'] ?? 0;
    const detailsBefore = sim.stats.accepted['bookingDetails'] ?? 0;
    const startedAt = Date.now();
    const poller = (async () => {
      while (polling || pending.size > 0) {
        if (pending.size > 0) {
          const waiting = [...pending.values()].map((list) => list[0]!);
          // The snapshot of the query is taken when it starts: a row it shows was there then.
          const at = Date.now();
          const r = await db.query<{ property_id: string; number: string; modified_at: Date }>(
            `SELECT property_id, number, modified_at FROM "${schema}".bookings WHERE (property_id, number) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
            [waiting.map((w) => w.propertyId), waiting.map((w) => w.number)],
          );
          for (const row of r.rows) {
            const key = `${row.property_id}/${row.number}`;
            const list = pending.get(key) ?? [];
            for (const m of list) if (row.modified_at.getTime() >= m.targetMs) m.seenMs = at;
            const left = list.filter((m) => m.seenMs === undefined);
            if (left.length > 0) pending.set(key, left);
            else pending.delete(key);
          }
        }
        if (!polling && Date.now() > settleDeadline) break;
        await sleep(POLL_MS);
      }
    })().catch((err: unknown) => {
      pollFailed = err as Error;
    });
    try {
      const { changes: wanted, gapMinMs, gapMaxMs } = opts.pace;
      for (let i = 0; i < wanted && !signal.aborted; i++) {
        await sleep(gapMinMs + Math.floor(rng() * (gapMaxMs - gapMinMs + 1)), signal);
        if (!running()) throw new RunFailedError(`${opts.label}: the daemon exited with ${c.exitCode ?? c.signalCode} during the changes`);
        const before = versions(sim, ids);
        const madeMs = Date.now();
        sim.mutate({ count: 1 });
        const after = versions(sim, ids);
        const changed = [...after.entries()].find(([key, v]) => before.get(key)?.modified !== v.modified);
        if (!changed) continue;
        const [key, v] = changed;
        const earlier = pending.get(key) ?? [];
        for (const m of earlier) m.superseded = true;
        const change: FreshChange = { propertyId: v.propertyId, number: v.number, madeMs, targetMs: Date.parse(v.modified) };
        changes.push(change);
        pending.set(key, [...earlier, change]);
        if ((i + 1) % (wanted >= 100 ? 50 : 10) === 0)
          progress(`${opts.label}: ${i + 1}/${wanted} changes made, ${[...pending.values()].reduce((n, l) => n + l.length, 0)} not in the mirror yet`);
      }
    } finally {
      settleDeadline = Date.now() + settleMs(opts.properties, opts.limits);
      polling = false;
      await poller;
    }
    if (pollFailed) throw new Error(`reading bookings failed: ${pollFailed.message}`);
    const measuringMs = Date.now() - startedAt;
    const listRequests = (sim.stats.accepted['bookingList'] ?? 0) - listBefore;
    const detailRequests = (sim.stats.accepted['bookingDetails'] ?? 0) - detailsBefore;

    // ---- the daemon's own view, then SIGTERM ----
    let histogram: HistogramReading | undefined;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
      histogram = readHistogram(await res.text(), LAG_METRIC);
    } catch {
      histogram = undefined;
    }
    c.kill('SIGTERM');
    const killer = setTimeout(() => running() && c.kill('SIGKILL'), 30_000);
    const exit = await exited;
    clearTimeout(killer);
    return {
      label: opts.label,
      properties: opts.properties,
      bookings: opts.bookings,
      firstSyncMs,
      changes,
      measuringMs,
      listRequests,
      detailRequests,
      histogram,
      rejected429: sim.stats.rejected429,
      byStatus: { ...sim.stats.byStatus },
      exit,
      log: logs.finish(),
    };
  } catch (err) {
    const message = err instanceof RunFailedError ? err.message : `${opts.label}: ${(err as Error).message}`;
    const tail = logs.finish().tail.trimEnd();
    const shown =
      tail === ''
        ? ''
        : `\n  --- last output of the daemon ---\n${tail
            .split('\n')
            .slice(-30)
            .map((l) => `  | ${l}`)
            .join('\n')}`;
    throw new RunFailedError(`${message}${shown}`);
  } finally {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child!.exitCode === null && child!.signalCode === null && child!.kill('SIGKILL'), 5_000);
      await exited?.catch(() => undefined);
      clearTimeout(t);
    }
    await db.end().catch(() => undefined);
    await sim.close();
    await rm(configPath, { force: true });
    await dropBenchSchemas(opts.databaseUrl, schema);
  }
}

/** The goal on the median for P properties on one connection: half a polling round plus the detail fetch. */
export function freshnessGoalMs(properties: number): number {
  return properties === 1 ? 2_000 : properties * 600 + 1_000;
}

const ms = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)} ms` : 'n/a');

/**
 * A distribution-free 95% confidence interval of the median: the order statistics n/2 ∓ 0.98·√n
 * (the normal approximation of the binomial). With 30 changes spread evenly over a polling
 * round of 24 s it is about ±4 s wide, with 240 about ±1.5 s.
 */
export function medianInterval(values: readonly number[]): [number, number] | undefined {
  const n = values.length;
  if (n < 6) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const lo = Math.max(1, Math.floor(n / 2 - 0.98 * Math.sqrt(n)));
  const hi = Math.min(n, Math.ceil(n / 2 + 1 + 0.98 * Math.sqrt(n)));
  return [sorted[lo - 1]!, sorted[hi - 1]!];
}

const ciText = (values: readonly number[]): string => {
  const ci = medianInterval(values);
  return ci ? `${(ci[0] / 1000).toFixed(1)}–${(ci[1] / 1000).toFixed(1)} s` : 'n/a';
};
const boundText = (b: number): string => (Number.isFinite(b) ? `<= ${b} s` : 'above the largest bucket');

/** The figures of one run of scenario F. */
export function freshnessLines(r: FreshnessRunResult, wanted: number, limits: Limits): { lines: string[]; notes: string[] } {
  const measured = r.changes.filter((c) => c.seenMs !== undefined);
  const superseded = r.changes.filter((c) => c.superseded).length;
  const unseen = r.changes.length - measured.length;
  const latencies = measured.map((c) => c.seenMs! - c.madeMs);
  const median = quantile(latencies, 0.5);
  const goal = freshnessGoalMs(r.properties);
  const gapMs = sustainableGapMs(limits.bookingList);
  const perMinute = r.listRequests / Math.max(1e-3, r.measuringMs / 60_000);
  const budgetPerMinute = 60_000 / gapMs;
  const minuteWindow = limits.bookingList.find((w) => w.windowMs === 60_000);
  const p = r.properties;
  const lines: Line[] = [
    {
      label: 'changes measured',
      value: `${measured.length}/${wanted}`,
      detail: `${superseded} of them changed again before seen; ${unseen} not seen within ${secs(settleMs(p, limits))} of the last change`,
      goal: '',
      verdict: measured.length > 0 && unseen === 0 ? '' : 'MISS',
    },
    {
      label: 'change → row median',
      value: ms(median),
      detail: `95% CI ${ciText(latencies)}; change made in the simulator → bookings.modified_at at the new version (polled every ${POLL_MS} ms)`,
      goal: p === 1 ? '(goal < 2 s)' : `(goal < ${p} × 0.6 s + 1 s = ${secs(goal)})`,
      verdict: measured.length > 0 && median < goal ? 'PASS' : 'MISS',
    },
    { label: 'change → row p95', value: ms(quantile(latencies, 0.95)), detail: `min ${ms(Math.min(...latencies))}`, goal: '', verdict: '' },
    { label: 'change → row max', value: ms(Math.max(...latencies)), detail: '', goal: '', verdict: '' },
    {
      label: '429 responses',
      value: String(r.rejected429),
      detail: statusText(r.byStatus),
      goal: '(goal 0)',
      verdict: r.rejected429 === 0 ? 'PASS' : 'MISS',
    },
    {
      label: 'list requests',
      value: `${perMinute.toFixed(1)}/min`,
      detail:
        `${r.listRequests} in ${secs(r.measuringMs)}; budget ${budgetPerMinute.toFixed(0)}/min sustained (one per ${(gapMs / 1000).toFixed(1)} s)` +
        (minuteWindow ? `, ${minuteWindow.limit}/min window` : ''),
      goal: `(at most ${budgetPerMinute.toFixed(0)}/min)`,
      verdict: perMinute <= budgetPerMinute * 1.02 ? 'PASS' : 'MISS',
    },
  ];
  const h = r.histogram;
  lines.push({
    label: 'daemon lag histogram',
    value: h && h.count > 0 ? `${((h.sum / h.count) * 1000).toFixed(0)} ms` : 'n/a',
    detail:
      h && h.count > 0
        ? `mean of ${h.count} fresh changes (${LAG_METRIC}, from the whole-second modifiedDateTime: up to 1 s more), median ${boundText(histogramQuantileBound(h, 0.5))}, p95 ${boundText(histogramQuantileBound(h, 0.95))}`
        : `${LAG_METRIC} not read`,
    goal: '',
    verdict: '',
  });
  const notes = [
    `first sync ${secs(r.firstSyncMs)}; ${r.detailRequests} detail requests during the changes; SIGTERM: exit ${r.exit.code ?? r.exit.signal}; ` +
      `half a polling round (${p} × ${(gapMs / 1000).toFixed(1)} s / 2, the mean wait with equal turns): ${secs(p * gapMs * 0.5)}, the poll and the detail fetch on top`,
    logText(r),
  ];
  return { lines: formatLines(lines), notes };
}

/** Scenario F's defaults (index.ts flags). */
export const FRESHNESS_DEFAULTS = { properties: 20, bookings: 100 } as const;

/** How long a run may take at most: the first sync, its changes at their slowest, and the settling. */
export function freshnessTimeoutMs(properties: number, pace: ChangePace, limits: Limits): number {
  return 120_000 + pace.changes * pace.gapMaxMs + settleMs(properties, limits);
}
