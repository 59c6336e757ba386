/**
 * Scenario E: change events, from the PMS change to the row in PostgreSQL. The daemon runs
 * (`run`) with every schedule set to a date that does not come (polling, content and
 * occupancy), so that after its first sync only events bring changes. Once the mirror holds
 * every reservation, the simulator's webhooks are pointed at the daemon's receiver and PMS
 * changes (check-ins, check-outs, room changes) are made one at a time at random moments;
 * each is timed from its event's creationTime to the moment pms_reservations shows a
 * modified_at at least the reservation's new modifyDateTime (polled every POLL_MS). Then the
 * daemon's own latency histogram is read from /metrics, and SIGTERM must end it with 0.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startSimulator, type RequestLogEntry, type Simulator } from '../simulator/index.js';
import { mulberry32 } from '../simulator/random.js';
import { formatLines, logText, secs, statusText, type Line } from './report.js';
import { abortableSleep as sleep } from '../../src/util/clock.js';
import { freePort } from '../../src/util/free-port.js';
import { childEnv, CLI_PATH, CLIENT, dropBenchSchemas, LogCollector, RunFailedError, type DaemonLog, type Limits } from './run.js';
import { histogramQuantileBound, quantile, readHistogram, type HistogramReading } from './stats.js';

/** Fires once a year (1 January, 00:00): no scheduled poll or refresh comes during the bench. */
export const NEVER_CRON = '0 0 1 1 *';
const PROPERTY_ID = '500100';
/** How often the bench looks at pms_reservations while changes are in flight. */
const POLL_MS = 15;
/** A reservation is changed again only this long after its last change (modifyDateTime has whole seconds). */
const REST_MS = 2_000;
/** A change not seen in the mirror this long after the last change counts as unmeasured. */
const SETTLE_MS = 30_000;
const LATENCY_METRIC = 'staysync_webhook_event_latency_seconds';

export type ChangeKind = 'check-in' | 'check-out' | 'room change';

export interface MeasuredChange {
  kind: ChangeKind;
  number: string;
  /** The event's creationTime (ms). */
  createdMs: number;
  /** The reservation's modifyDateTime after the change (ms): the row is updated when modified_at reaches it. */
  targetMs: number;
  /** When the bench saw the row updated (ms), if it did. */
  seenMs?: number;
  eventTypes: string[];
}

export interface WebhookBenchOptions {
  bookings: number;
  changes: number;
  limits: Limits;
  databaseUrl: string;
  /** The whole scenario is abandoned (the run failed) after this long. */
  timeoutMs: number;
  seed: number;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface WebhookBenchResult {
  reservations: number;
  /** Spawn to the mirror holding every reservation and booking. */
  firstSyncMs: number;
  changes: MeasuredChange[];
  histogram: HistogramReading | undefined;
  events: { emitted: number; byState: Record<string, number> };
  deliveries: { attempts: number; failed: number; largestBatch: number };
  rejected429: number;
  byStatus: Record<number, number>;
  /** Standard-scope requests accepted from the first change to the end. */
  standardDuringChanges: number;
  /** Every request from the first change to the end, by path shape (ids as {id}), most first. */
  requestsDuringChanges: [string, number][];
  exit: { code: number | null; signal: NodeJS.Signals | null; afterMs: number };
  log: DaemonLog;
}

/** Polls `check` until truthy; throws naming `what` after `timeoutMs`. */
async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number, everyMs: number, signal?: AbortSignal): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for ${what}`);
    await sleep(everyMs, signal);
  }
}

/** A request path with its ids (segments with a digit, API versions aside) as {id}, without the /api/ prefix. */
export function pathShape(path: string): string {
  return path
    .replace(/^\/api\//, '')
    .split('/')
    .map((seg) => (/\d/.test(seg) && !/^v\d+$/.test(seg) ? '{id}' : seg))
    .join('/');
}

/** Milliseconds of an event creationTime (3 or 7 fraction digits). */
function eventMs(creationTime: string): number {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?Z$/.exec(creationTime);
  if (!m) return Date.parse(creationTime);
  return Date.parse(`${m[1]}${(m[2] ?? '.000').slice(0, 4).padEnd(4, '0')}Z`);
}

interface Candidate {
  number: string;
  stay: number;
}

/** Makes one random PMS change that the mirror can show; undefined when none could be made. */
function makeChange(sim: Simulator, rng: () => number, resting: Map<string, number>): MeasuredChange | undefined {
  const now = Date.now();
  const byKind: Record<ChangeKind, Candidate[]> = { 'check-in': [], 'check-out': [], 'room change': [] };
  const previous = new Map<string, number>();
  for (const r of sim.pmsReservations(PROPERTY_ID)) {
    if (r.reservationStatus === 'Cancelled') continue;
    // Its new modifyDateTime must be later than the mirrored one, to the second.
    const modified = Date.parse(r.modifyDateTime);
    if (modified >= now - REST_MS || (resting.get(r.number) ?? 0) > now - REST_MS) continue;
    previous.set(r.number, modified);
    r.roomStays.forEach((s, stay) => {
      if (s.actualCheckInDateTime === null) byKind['check-in'].push({ number: r.number, stay });
      else if (s.actualCheckOutDateTime === null) byKind['check-out'].push({ number: r.number, stay });
      if (s.actualCheckOutDateTime === null && s.roomId !== null) byKind['room change'].push({ number: r.number, stay });
    });
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const kinds = (Object.keys(byKind) as ChangeKind[]).filter((k) => byKind[k].length > 0);
    if (kinds.length === 0) return undefined;
    const kind = kinds[Math.floor(rng() * kinds.length)]!;
    const list = byKind[kind];
    const [c] = list.splice(Math.floor(rng() * list.length), 1);
    const before = sim.webhooks.events().length;
    const madeAt = Date.now();
    try {
      if (kind === 'check-in') sim.pmsCheckIn(PROPERTY_ID, c!.number, c!.stay);
      else if (kind === 'check-out') sim.pmsCheckOut(PROPERTY_ID, c!.number, c!.stay);
      else sim.pmsChangeRoom(PROPERTY_ID, c!.number, c!.stay);
    } catch {
      continue; // e.g. no other free room of that type: another candidate
    }
    const events = sim.webhooks
      .events()
      .slice(before)
      .filter((e) => e.eventType.startsWith('webpms:') && e.payload['BookingNumber'] === c!.number);
    const after = sim.pmsReservation(PROPERTY_ID, c!.number)!;
    resting.set(c!.number, Date.now());
    return {
      kind,
      number: c!.number,
      createdMs: events.length > 0 ? Math.min(...events.map((e) => eventMs(e.creationTime))) : madeAt,
      targetMs: Date.parse(after.modifyDateTime),
      eventTypes: events.map((e) => e.eventType),
    };
  }
  return undefined;
}

export async function runWebhookBench(opts: WebhookBenchOptions): Promise<WebhookBenchResult> {
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  const configPath = join(tmpdir(), `staysync-bench-${suffix}.json`);
  const properties = [{ id: PROPERTY_ID, bookingCount: opts.bookings }];
  const sim = await startSimulator({ clients: [CLIENT], properties, rateLimits: opts.limits, seed: opts.seed });
  const deadline = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
  const logs = new LogCollector();
  const db = new pg.Client({ connectionString: opts.databaseUrl, application_name: 'staysync-bench' });
  let child: ReturnType<typeof spawn> | undefined;
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }> | undefined;
  const progress = opts.onProgress ?? (() => undefined);
  try {
    await db.connect();
    const port = await freePort();
    const hooks = await freePort();
    await writeFile(
      configPath,
      JSON.stringify({
        rateLimits: opts.limits,
        ops: { port, host: '127.0.0.1' },
        // On loopback the receiver needs no authentication: the simulator is on this machine.
        webhooks: { enabled: true, host: '127.0.0.1', port: hooks },
        sync: { pollCron: NEVER_CRON },
        pms: { pollCron: NEVER_CRON },
        content: { refreshCron: NEVER_CRON },
        occupancy: { refreshCron: NEVER_CRON },
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
      c.once('exit', (code, sig) => resolve({ code, signal: sig, at: Date.now() }));
    });
    c.stdout!.on('data', (d: Buffer) => logs.push(d));
    c.stderr!.on('data', (d: Buffer) => logs.push(d));
    const running = () => c.exitCode === null && c.signalCode === null;

    // ---- first sync: every reservation and booking mirrored, then the requests stop ----
    const reservations = sim.pmsReservations(PROPERTY_ID).length;
    const bookings = sim.bookings(PROPERTY_ID).length;
    progress(`scenario E: waiting for the first sync (${reservations} reservations, ${bookings} bookings)`);
    await waitUntil(
      'the first sync (every reservation and booking in the mirror)',
      async () => {
        if (!running()) throw new RunFailedError(`scenario E: the daemon exited with ${c.exitCode ?? c.signalCode} during its first sync`);
        const r = await db.query<{ r: string; b: string }>(
          `SELECT (SELECT count(*) FROM "${schema}".pms_reservations) AS r, (SELECT count(*) FROM "${schema}".bookings) AS b`,
        );
        return Number(r.rows[0]?.r) === reservations && Number(r.rows[0]?.b) === bookings;
      },
      opts.timeoutMs,
      200,
      signal,
    ).catch((err: unknown) => {
      if (!running()) throw new RunFailedError(`scenario E: the daemon exited with ${c.exitCode ?? c.signalCode} during its first sync`);
      throw err;
    });
    const firstSyncMs = Date.now() - spawnedAt;
    // The rest of the first sync (rooms, occupancy, booking details) ends: no request for 1.5 s.
    const total = () => Object.values(sim.stats.accepted).reduce((s, n) => s + n, 0);
    let last = total();
    let quietSince = Date.now();
    await waitUntil(
      'the daemon to fall quiet after its first sync',
      async () => {
        const now = total();
        if (now !== last) {
          last = now;
          quietSince = Date.now();
        }
        return Date.now() - quietSince >= 1_500;
      },
      opts.timeoutMs,
      100,
      signal,
    );

    // ---- changes, each timed from its event to the row ----
    const requests = new Map<string, number>();
    const log: RequestLogEntry[] = [];
    log.push = (...entries: RequestLogEntry[]): number => {
      for (const e of entries) {
        const key = `${pathShape(e.path)}${e.status === 200 ? '' : ` (${e.status})`}`;
        requests.set(key, (requests.get(key) ?? 0) + 1);
      }
      return 0;
    };
    sim.stats.requestLog = log;
    sim.webhooks.configure({ url: `http://127.0.0.1:${hooks}/webhooks/provider` });
    const standardBefore = sim.stats.accepted['standard'] ?? 0;
    const rng = mulberry32(opts.seed);
    const changes: MeasuredChange[] = [];
    const pending = new Map<string, MeasuredChange>();
    const resting = new Map<string, number>();
    let polling = true;
    let settleDeadline = Infinity;
    let pollFailed: Error | undefined;
    const poller = (async () => {
      while (polling || pending.size > 0) {
        if (pending.size > 0) {
          const numbers = [...pending.keys()];
          const r = await db.query<{ number: string; modified_at: Date | null }>(
            `SELECT number, modified_at FROM "${schema}".pms_reservations WHERE property_id = $1 AND number = ANY($2)`,
            [PROPERTY_ID, numbers],
          );
          const at = Date.now();
          for (const row of r.rows) {
            const m = pending.get(row.number);
            if (m && row.modified_at && row.modified_at.getTime() >= m.targetMs) {
              m.seenMs = at;
              pending.delete(row.number);
            }
          }
        }
        if (!polling && Date.now() > settleDeadline) break;
        await sleep(POLL_MS);
      }
    })().catch((err: unknown) => {
      pollFailed = err as Error;
    });
    try {
      for (let i = 0; i < opts.changes && !signal.aborted; i++) {
        await sleep(100 + Math.floor(rng() * 501), signal);
        const change = makeChange(sim, rng, resting);
        if (!change) break;
        changes.push(change);
        pending.set(change.number, change);
        if ((i + 1) % 10 === 0) progress(`scenario E: ${i + 1}/${opts.changes} changes made, ${pending.size} not in the mirror yet`);
      }
    } finally {
      settleDeadline = Date.now() + SETTLE_MS;
      polling = false;
      await poller;
    }
    if (pollFailed) throw new Error(`reading pms_reservations failed: ${pollFailed.message}`);
    await Promise.race([sim.webhooks.idle(), sleep(5_000)]);

    // ---- the daemon's own view, then SIGTERM ----
    let histogram: HistogramReading | undefined;
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
      histogram = readHistogram(await res.text(), LATENCY_METRIC);
    } catch {
      histogram = undefined;
    }
    const states = await db.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM "${schema}".webhook_events GROUP BY state`);
    const standardDuringChanges = (sim.stats.accepted['standard'] ?? 0) - standardBefore;
    const termAt = Date.now();
    c.kill('SIGTERM');
    const killer = setTimeout(() => running() && c.kill('SIGKILL'), 30_000);
    const exit = await exited;
    clearTimeout(killer);
    const attempts = sim.webhooks.log;
    return {
      reservations,
      firstSyncMs,
      changes,
      histogram,
      events: { emitted: sim.webhooks.events().length, byState: Object.fromEntries(states.rows.map((r) => [r.state, Number(r.n)])) },
      deliveries: {
        attempts: attempts.length,
        failed: attempts.filter((a) => a.status === undefined || a.status < 200 || a.status >= 300).length,
        largestBatch: Math.max(0, ...attempts.map((a) => a.eventIds.length)),
      },
      rejected429: sim.stats.rejected429,
      byStatus: { ...sim.stats.byStatus },
      standardDuringChanges,
      requestsDuringChanges: [...requests.entries()].sort((a, b) => b[1] - a[1]),
      exit: { code: exit.code, signal: exit.signal, afterMs: exit.at - termAt },
      log: logs.finish(),
    };
  } catch (err) {
    const message = err instanceof RunFailedError ? err.message : `scenario E: ${(err as Error).message}`;
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

const boundText = (b: number): string => (Number.isFinite(b) ? `<= ${b} s` : 'above the largest bucket');
const ms = (x: number): string => (Number.isFinite(x) ? `${Math.round(x)} ms` : 'n/a');

/** The figures of scenario E. */
export function webhookLines(r: WebhookBenchResult, wanted: number): { lines: string[]; notes: string[] } {
  const measured = r.changes.filter((c) => c.seenMs !== undefined);
  const latencies = measured.map((c) => c.seenMs! - c.createdMs);
  const median = quantile(latencies, 0.5);
  const p95 = quantile(latencies, 0.95);
  const kinds = (k: ChangeKind) => r.changes.filter((c) => c.kind === k).length;
  const lines: Line[] = [
    {
      label: 'changes measured',
      value: `${measured.length}/${wanted}`,
      detail: `${kinds('check-in')} check-ins, ${kinds('check-out')} check-outs, ${kinds('room change')} room changes; ${r.changes.length - measured.length} not seen within ${SETTLE_MS / 1000} s`,
      goal: `(goal ${wanted})`,
      verdict: measured.length === wanted ? 'PASS' : 'MISS',
    },
    {
      label: 'latency median',
      value: ms(median),
      detail: `event creationTime → pms_reservations.modified_at >= new modifyDateTime (polled every ${POLL_MS} ms)`,
      goal: '(goal < 2 s)',
      verdict: measured.length > 0 && median < 2000 ? 'PASS' : 'MISS',
    },
    {
      label: 'latency p95',
      value: ms(p95),
      detail: `min ${ms(Math.min(...latencies))}, max ${ms(Math.max(...latencies))}`,
      goal: '',
      verdict: '',
    },
  ];
  const h = r.histogram;
  lines.push({
    label: 'daemon histogram',
    value: h && h.count > 0 ? `${((h.sum / h.count) * 1000).toFixed(0)} ms` : 'n/a',
    detail:
      h && h.count > 0
        ? `mean of ${h.count} events (${LATENCY_METRIC}), median ${boundText(histogramQuantileBound(h, 0.5))}, p95 ${boundText(histogramQuantileBound(h, 0.95))}`
        : `${LATENCY_METRIC} not read`,
    goal: '',
    verdict: '',
  });
  lines.push({
    label: '429 responses',
    value: String(r.rejected429),
    detail: statusText(r.byStatus),
    goal: '(goal 0)',
    verdict: r.rejected429 === 0 ? 'PASS' : 'MISS',
  });
  lines.push({
    label: 'SIGTERM',
    value: `exit ${r.exit.code ?? r.exit.signal}`,
    detail: `${ms(r.exit.afterMs)} after the signal`,
    goal: '(goal exit 0)',
    verdict: r.exit.code === 0 ? 'PASS' : 'MISS',
  });
  const states = Object.entries(r.events.byState)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  const notes = [
    `first sync ${secs(r.firstSyncMs)} (${r.reservations} reservations); ${r.events.emitted} events emitted, webhook_events: ${states || 'none'}; ` +
      `${r.deliveries.attempts} deliveries (${r.deliveries.failed} not acknowledged, largest batch ${r.deliveries.largestBatch}); ` +
      `${r.standardDuringChanges} standard requests during the changes`,
    `requests during the changes: ${r.requestsDuringChanges.map(([p, n]) => `${n} ${p}`).join(', ')}; ` +
      `${r.changes.filter((c) => c.eventTypes.length > 1).length} changes announced by two webpms events or more, ${r.changes.filter((c) => c.eventTypes.length === 0).length} by none`,
    logText(r),
  ];
  return { lines: formatLines(lines), notes };
}

/** Scenario E's defaults (index.ts flags). */
export const WEBHOOK_DEFAULTS = { bookings: 300, changes: 50, scale: 10 } as const;
