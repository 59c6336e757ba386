/**
 * One bench run: a simulator in this process (so its counters can be read), `staysync sync
 * --once` as a child process (so its peak RSS is its own), a fresh database schema and a
 * temporary config file, both removed afterwards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
// The bench checks the daemon's result from outside, on a connection of its own (the one
// place outside src/db that talks to PostgreSQL directly).
import pg from 'pg';
import { packageRoot, type RateLimitScope } from '../../src/config/config.js';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { PeakMemorySampler } from './rss.js';
import type { Window } from './theory.js';
import { schemasNamedAfter } from '../../src/config/schema-names.js';

export type Limits = Record<RateLimitScope, Window[]>;

export interface RunOptions {
  label: string;
  properties: { id: string; bookingCount: number }[];
  /** The same windows go to the simulator and to the daemon's config. */
  limits: Limits;
  databaseUrl: string;
  detailConcurrency: number;
  /** sync.summariesPageSize of the daemon; default its own (1,000). Small pages make the list budget, not the details', the bound. */
  summariesPageSize?: number;
  /** The child is killed (and the run failed) after this long. */
  timeoutMs: number;
  seed: number;
  /** Called every `progressEveryMs` with a one-line status while the child runs. */
  onProgress?: (line: string) => void;
  progressEveryMs?: number;
  /** Aborting kills the child (the run then fails) and still cleans up. */
  signal?: AbortSignal;
  /** Top-level keys added to the daemon's config file (e.g. pms, content, occupancy); a key given here replaces the bench's own. */
  config?: Record<string, unknown>;
  /** Called with the simulator before the child is spawned (e.g. to count its requests). */
  onSimulator?: (sim: Simulator) => void;
  /** Appended to each progress line. */
  progressExtra?: () => string;
  /**
   * Called once the child exited 0 with the mirror complete, before the schema is dropped:
   * reads what the mirror holds. Its error fails the run.
   */
  inspect?: (c: pg.Client, schema: string, sim: Simulator) => Promise<void>;
  /**
   * Called before the child is spawned, with the run's schema migrated (by `staysync migrate`,
   * in the child's environment) for it to change (e.g. triggers that leave history out).
   */
  prepareSchema?: (c: pg.Client, schema: string) => Promise<void>;
}

/** First and last accepted request of one scope, ms after the child was spawned. */
export interface ActivePeriod {
  count: number;
  firstMs: number;
  lastMs: number;
}

/** How full one window ever got: the most requests seen inside any span of windowMs. */
export interface WindowFill extends Window {
  maxSeen: number;
}

export interface DaemonLog {
  warnings: number;
  errors: number;
  /** Distinct messages of warn and above, with how often each came (at most 10). */
  messages: { level: string; msg: string; count: number }[];
  /** The last lines of output, shown when the run failed. */
  tail: string;
}

export interface RunResult {
  label: string;
  bookings: number;
  exitCode: number | null;
  exitSignal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Spawn to exit of `sync --once`. */
  wallMs: number;
  peakRssBytes: number | undefined;
  list: ActivePeriod;
  details: ActivePeriod;
  token: ActivePeriod;
  /** Content, PMS and analytics requests (the standard scope). */
  standard: ActivePeriod;
  /** Per configured window of the scope, the fullest it ever was. */
  detailFill: WindowFill[];
  listFill: WindowFill[];
  standardFill: WindowFill[];
  rejected429: number;
  byStatus: Record<number, number>;
  /** Detail requests per booking number as the simulator saw them. */
  distinctBookingsFetched: number;
  maxCallsForOneBooking: number;
  /** What the mirror holds afterwards. */
  mirroredBookings: number;
  queuePending: number;
  log: DaemonLog;
}

/** The daemon as deployed: the production build (dist/), which `npm run build:tools` makes first. */
export const CLI_PATH = resolve(packageRoot, 'dist', 'cli', 'main.js');
export const CLIENT = { clientId: 'bench-client', clientSecret: 'bench-secret' };

/** A run that could not be measured (the child failed, timed out, or the mirror is incomplete). */
export class RunFailedError extends Error {
  override name = 'RunFailedError';
  constructor(
    message: string,
    readonly result?: RunResult,
  ) {
    super(message);
  }
}

/** Accepted-request times per scope, stamped the moment the simulator counts them. */
class AcceptTimes {
  readonly periods = new Map<string, ActivePeriod>();
  private readonly stamps = new Map<string, TimeSeries>();
  constructor(private readonly origin: () => number) {}

  /**
   * Replaces `stats.accepted` with a proxy that stamps each increment. The simulator counts
   * a request synchronously when it takes a slot (at arrival, on its Date.now clock), so the
   * stamp is the arrival time to within a millisecond — sharper than polling the counter.
   */
  attach(sim: Simulator): void {
    const target: Record<string, number> = { ...sim.stats.accepted };
    sim.stats.accepted = new Proxy(target, {
      set: (obj, key, value: number) => {
        if (typeof key === 'string') {
          const t = this.origin();
          const p = this.periods.get(key);
          if (p) {
            p.count = value;
            p.lastMs = t;
          } else this.periods.set(key, { count: value, firstMs: t, lastMs: t });
          let series = this.stamps.get(key);
          if (!series) this.stamps.set(key, (series = new TimeSeries()));
          series.push(t);
        }
        obj[key as string] = value;
        return true;
      },
    });
  }

  get(scope: string): ActivePeriod {
    return this.periods.get(scope) ?? { count: 0, firstMs: Number.NaN, lastMs: Number.NaN };
  }

  /** Per window: the most accepted requests seen inside any one window of that length. */
  fill(scope: string, windows: readonly Window[]): WindowFill[] {
    const series = this.stamps.get(scope);
    return windows.map((w) => ({ ...w, maxSeen: series ? series.maxInWindow(w.windowMs) : 0 }));
  }
}

/** Ascending times in a growable Float64Array (8 bytes a request). */
class TimeSeries {
  private data = new Float64Array(1024);
  private n = 0;

  push(t: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = t;
  }

  /** Max over j of #{i : t_j - windowMs < t_i <= t_j}: the simulator's counting rule. */
  maxInWindow(windowMs: number): number {
    let best = 0;
    let i = 0;
    for (let j = 0; j < this.n; j++) {
      while (this.data[i]! <= this.data[j]! - windowMs) i++;
      best = Math.max(best, j - i + 1);
    }
    return best;
  }
}

/** A daemon child of a bench run: its process, its exit, its peak memory and its log. */
export interface SpawnedDaemon {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  memory: PeakMemorySampler;
  logs: LogCollector;
}

/** Starts `node <cliPath> run` with `env`, its log collected and its memory sampled every `sampleEveryMs`. */
export function spawnDaemon(cliPath: string, env: NodeJS.ProcessEnv, sampleEveryMs: number): SpawnedDaemon {
  const child = spawn(process.execPath, [cliPath, 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs = new LogCollector();
  child.stdout.on('data', (d: Buffer) => logs.push(d));
  child.stderr.on('data', (d: Buffer) => logs.push(d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, sig) => resolve({ code, signal: sig }));
  });
  const memory = new PeakMemorySampler(child.pid!, sampleEveryMs);
  memory.start();
  return { child, exited, memory, logs };
}

/** Folds the daemon's pino lines (JSON, one per line) into counts; keeps a bounded tail. */
export class LogCollector {
  private buffer = '';
  private tail = '';
  readonly summary: DaemonLog = { warnings: 0, errors: 0, messages: [], tail: '' };
  private readonly byMessage = new Map<string, { level: string; msg: string; count: number }>();

  push(chunk: Buffer): void {
    const text = chunk.toString('utf8');
    this.tail = (this.tail + text).slice(-8000);
    this.buffer += text;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      this.line(this.buffer.slice(0, nl));
      this.buffer = this.buffer.slice(nl + 1);
    }
    // A runaway line without newline must not grow without bound.
    if (this.buffer.length > 1_000_000) this.buffer = this.buffer.slice(-1000);
  }

  finish(): DaemonLog {
    if (this.buffer.trim() !== '') this.line(this.buffer);
    this.buffer = '';
    this.summary.messages = [...this.byMessage.values()].sort((a, b) => b.count - a.count).slice(0, 10);
    this.summary.tail = this.tail;
    return this.summary;
  }

  private line(raw: string): void {
    const s = raw.trim();
    if (s === '') return;
    let level = 'text';
    let msg = s.slice(0, 200);
    try {
      const j = JSON.parse(s) as { level?: unknown; msg?: unknown };
      if (typeof j.level === 'string') level = j.level;
      if (typeof j.msg === 'string') msg = j.msg;
    } catch {
      /* not JSON: a plain stderr line, counted as an error below */
    }
    if (level === 'warn') this.summary.warnings++;
    else if (level === 'error' || level === 'fatal' || level === 'text') this.summary.errors++;
    else return;
    const key = `${level}\u0000${msg}`;
    const e = this.byMessage.get(key);
    if (e) e.count++;
    else if (this.byMessage.size < 100) this.byMessage.set(key, { level, msg, count: 1 });
  }
}

/**
 * The memory settings the container runs the daemon with (the Dockerfile's NODE_OPTIONS and
 * MALLOC_* variables), so that the bench measures the daemon as it is deployed.
 */
export function containerMemoryEnv(): Record<string, string> {
  const dockerfile = readFileSync(resolve(packageRoot, 'Dockerfile'), 'utf8');
  const env: Record<string, string> = {};
  for (const m of dockerfile.matchAll(/\b(NODE_OPTIONS|MALLOC_[A-Z_]+)=("[^"]*"|\S+)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '');
  if (!env.NODE_OPTIONS) throw new Error('the Dockerfile sets no NODE_OPTIONS: the bench cannot run the daemon as deployed');
  return env;
}

/** The same, as one line for the report. */
export function containerMemoryText(): string {
  return Object.entries(containerMemoryEnv())
    .map(([k, v]) => (v.includes(' ') ? `${k}="${v}"` : `${k}=${v}`))
    .join(' ');
}

/** The environment of a daemon child: the caller's, without its staysync settings, plus the run's. */
export function childEnv(opts: { databaseUrl: string; properties: { id: string }[] }, sim: Simulator, schema: string, configPath: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  // Nothing of the caller's own staysync configuration may leak into the measured run.
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STAYSYNC_') && k !== 'DATABASE_URL') env[k] = v;
  const memory = containerMemoryEnv();
  // For looking inside a measured run (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" or
  // "--trace-gc"): added after the container's own flags.
  const extra = process.env.BENCH_DAEMON_NODE_OPTIONS?.trim();
  if (extra) memory.NODE_OPTIONS = `${memory.NODE_OPTIONS} ${extra}`;
  return {
    ...env,
    ...memory,
    DATABASE_URL: opts.databaseUrl,
    STAYSYNC_DB_SCHEMA: schema,
    STAYSYNC_REPORTING_SCHEMA: `${schema}_reporting`,
    STAYSYNC_PROVIDER_URL: sim.url,
    STAYSYNC_REFERENCE_DATA_URL: sim.url,
    STAYSYNC_CLIENT_ID: CLIENT.clientId,
    STAYSYNC_CLIENT_SECRET: CLIENT.clientSecret,
    STAYSYNC_PROPERTY_IDS: opts.properties.map((p) => p.id).join(','),
    STAYSYNC_LOG_LEVEL: 'warn',
    STAYSYNC_CONFIG: configPath,
  };
}

export async function withPg<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'staysync-bench' });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Drops a bench run's mirror schema with every schema staysync names after it (the reporting
 * schema, the readers' views, the secret one); says so on stderr when it cannot, never throws.
 */
export async function dropBenchSchemas(url: string, schema: string, reportingSchema = `${schema}_reporting`): Promise<void> {
  const names = [reportingSchema, ...schemasNamedAfter(schema), schema].map((x) => `"${x.replaceAll('"', '""')}"`);
  await withPg(url, (c) => c.query(`DROP SCHEMA IF EXISTS ${names.join(', ')} CASCADE`)).catch((err: unknown) => {
    process.stderr.write(`bench: could not drop schema ${schema}: ${(err as Error).message}\n`);
  });
}

/** Checks the database is reachable before anything is started; throws a sentence when not. */
export async function checkDatabase(url: string): Promise<string> {
  try {
    return await withPg(url, async (c) => {
      const r = await c.query<{ v: string }>("SELECT current_setting('server_version') AS v");
      return r.rows[0]?.v ?? '?';
    });
  } catch (err) {
    throw new Error(`cannot connect to ${redactUrl(url)}: ${(err as Error).message}. Set DATABASE_URL to a PostgreSQL the bench may create schemas in.`, {
      cause: err,
    });
  }
}

/** The URL without its password, for output. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparseable DATABASE_URL)';
  }
}

/** Runs `sync --once` once against a fresh simulator and schema; always cleans up. */
export async function runSyncOnce(opts: RunOptions): Promise<RunResult> {
  const bookings = opts.properties.reduce((s, p) => s + p.bookingCount, 0);
  const suffix = randomBytes(4).toString('hex');
  const schema = `bench_${suffix}`;
  const configPath = join(tmpdir(), `staysync-bench-${suffix}.json`);
  const sim = await startSimulator({
    clients: [CLIENT],
    properties: opts.properties,
    rateLimits: opts.limits,
    seed: opts.seed,
  });
  opts.onSimulator?.(sim);
  let spawnedAt = 0;
  // Date.now, the simulator's own clock, so window fills use its arithmetic.
  const times = new AcceptTimes(() => Date.now() - spawnedAt);
  times.attach(sim);
  const logs = new LogCollector();
  try {
    await writeFile(
      configPath,
      JSON.stringify(
        {
          rateLimits: opts.limits,
          sync: {
            progressIntervalMs: 5000,
            detailConcurrency: opts.detailConcurrency,
            ...(opts.summariesPageSize === undefined ? {} : { summariesPageSize: opts.summariesPageSize }),
          },
          ops: { port: 0 },
          ...opts.config,
        },
        null,
        2,
      ),
    );

    if (opts.prepareSchema) {
      const migrated = await new Promise<number | null>((resolve, reject) => {
        const m = spawn(process.execPath, [CLI_PATH, 'migrate'], { env: childEnv(opts, sim, schema, configPath), stdio: 'ignore' });
        m.once('error', reject);
        m.once('exit', (code) => resolve(code));
      });
      if (migrated !== 0) throw new Error(`${opts.label}: staysync migrate exited with ${migrated}`);
      await withPg(opts.databaseUrl, (c) => opts.prepareSchema!(c, schema));
    }
    spawnedAt = Date.now();
    const child = spawn(process.execPath, [CLI_PATH, 'sync', '--once'], {
      env: childEnv(opts, sim, schema, configPath),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
    });
    child.stdout.on('data', (c: Buffer) => logs.push(c));
    child.stderr.on('data', (c: Buffer) => logs.push(c));
    const sampler = child.pid !== undefined ? new PeakMemorySampler(child.pid, 50) : undefined;
    sampler?.start();

    let timedOut = false;
    const kill = () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        // A second signal makes the CLI exit at once (cli.ts); SIGKILL if even that hangs.
        setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'), 5000).unref();
      }
    };
    const timeout = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    opts.signal?.addEventListener('abort', kill, { once: true });
    const progress =
      opts.onProgress &&
      setInterval(() => {
        const d = sim.stats.accepted['bookingDetails'] ?? 0;
        const l = sim.stats.accepted['bookingList'] ?? 0;
        const s = ((Date.now() - spawnedAt) / 1000).toFixed(0);
        const extra = opts.progressExtra ? `, ${opts.progressExtra()}` : '';
        opts.onProgress!(`${opts.label}: ${s} s, ${d}/${bookings} detail calls, ${l} list calls${extra}, ${sim.stats.rejected429} × 429`);
      }, opts.progressEveryMs ?? 15_000);

    let exit: { code: number | null; signal: NodeJS.Signals | null; at: number };
    try {
      exit = await exited;
    } finally {
      clearTimeout(timeout);
      if (progress) clearInterval(progress);
      opts.signal?.removeEventListener('abort', kill);
      await sampler?.stop();
    }
    const log = logs.finish();

    const { mirroredBookings, queuePending } = await withPg(opts.databaseUrl, async (c) => {
      const exists = await c.query('SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2', [schema, 'bookings']);
      if (exists.rowCount === 0) return { mirroredBookings: 0, queuePending: 0 };
      const b = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".bookings`);
      const q = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".booking_detail_queue WHERE state = 'pending'`);
      return { mirroredBookings: Number(b.rows[0]?.n ?? 0), queuePending: Number(q.rows[0]?.n ?? 0) };
    });

    let maxCalls = 0;
    for (const n of sim.stats.detailCallsByNumber.values()) maxCalls = Math.max(maxCalls, n);
    const result: RunResult = {
      label: opts.label,
      bookings,
      exitCode: exit.code,
      exitSignal: exit.signal,
      timedOut,
      wallMs: exit.at - spawnedAt,
      peakRssBytes: sampler?.peakBytes,
      list: times.get('bookingList'),
      details: times.get('bookingDetails'),
      token: times.get('token'),
      standard: times.get('standard'),
      detailFill: times.fill('bookingDetails', opts.limits.bookingDetails),
      listFill: times.fill('bookingList', opts.limits.bookingList),
      standardFill: times.fill('standard', opts.limits.standard),
      rejected429: sim.stats.rejected429,
      byStatus: { ...sim.stats.byStatus },
      distinctBookingsFetched: sim.stats.detailCallsByNumber.size,
      maxCallsForOneBooking: maxCalls,
      mirroredBookings,
      queuePending,
      log,
    };
    if (timedOut) throw new RunFailedError(`${opts.label}: sync --once did not finish within ${Math.round(opts.timeoutMs / 1000)} s; killed`, result);
    if (exit.code !== 0) {
      throw new RunFailedError(`${opts.label}: sync --once exited with ${exit.code ?? exit.signal} after ${(result.wallMs / 1000).toFixed(1)} s`, result);
    }
    if (mirroredBookings !== bookings || queuePending !== 0) {
      throw new RunFailedError(
        `${opts.label}: sync --once exited 0 but the mirror holds ${mirroredBookings} of ${bookings} bookings with ${queuePending} detail fetches pending`,
        result,
      );
    }
    if (opts.inspect) {
      try {
        await withPg(opts.databaseUrl, (c) => opts.inspect!(c, schema, sim));
      } catch (err) {
        throw new RunFailedError(`${opts.label}: ${(err as Error).message}`, result);
      }
    }
    return result;
  } finally {
    await sim.close();
    await rm(configPath, { force: true });
    await dropBenchSchemas(opts.databaseUrl, schema);
  }
}
