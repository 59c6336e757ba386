/** Running the real entry point (`node dist/cli/main.js`) as a child process, as the container does. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fastRateLimits, SIM_CLIENT_ID, SIM_CLIENT_SECRET, TEST_POLL_INTERVAL, type Harness } from './harness.js';
import { reportingSchemaOf } from './database.js';
import { freePort } from '../../src/util/free-port.js';

const cli = resolve('dist/cli/main.js');

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const live = new Set<ChildProcess>();
/**
 * Kills the CLI processes a test left running. After each test file (test/helpers/file-setup.ts:
 * the integration files share their modules, so a hook registered here would run after the
 * first file only), and at the worker's exit.
 */
export const killLeftovers = () => {
  for (const child of live) child.kill('SIGKILL');
};
process.once('exit', killLeftovers);

/**
 * Node's compile cache for the run, when the global setup made one: a start then reads the
 * bundle's compiled code instead of compiling it again (some 250 starts a run).
 */
const compileCache: Record<string, string> = process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};

/** Starts the CLI with only PATH and `env` in its environment (and the run's compile cache). */
export function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; done: Promise<Run>; output: () => string } {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? '', ...compileCache, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A test that fails before it stops its daemon must not leave it running against the shared server.
  live.add(child);
  child.on('exit', () => live.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done, output: () => stdout + stderr };
}

export const runCli = (args: string[], env: Record<string, string>): Promise<Run> => startCli(args, env).done;

/** Writes `content` as a JSON config file in a fresh temporary folder; returns its path. */
export function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'staysync-cli-')), 'config.json');
  writeFileSync(path, JSON.stringify(content));
  return path;
}

/**
 * The environment of a daemon pointed at the harness's simulator and schema, with the
 * harness's short windows. `config` adds keys to the config file; `env` overrides variables
 * (an empty STAYSYNC_PROPERTY_IDS lets the content API decide).
 *
 * The daemon follows the bookings and the content only, unless `allStreams`: the PMS streams
 * cost about eight requests a booking, and the occupancy and room-inventory refreshes 26 a
 * property, none of which a test of the daemon's machinery (stopping, retries, leases, the
 * ports) is about; on two cores they made a third of such a test's CPU. The tests of those
 * streams, and of what the whole daemon costs or keeps (a quiet hotel, a backup, erasure, the
 * API areas), pass `allStreams`.
 */
export function daemonEnv(
  harness: Pick<Harness, 'dbUrl' | 'schema' | 'sim'>,
  opts: { config?: Record<string, unknown>; env?: Record<string, string>; allStreams?: boolean } = {},
): Record<string, string> {
  const bookingsAndContent: Record<string, string> = opts.allStreams
    ? {}
    : { STAYSYNC_PMS_ENABLED: 'false', STAYSYNC_OCCUPANCY_ENABLED: 'false', STAYSYNC_ROOM_INVENTORY_ENABLED: 'false' };
  return {
    DATABASE_URL: harness.dbUrl,
    STAYSYNC_DB_SCHEMA: harness.schema,
    STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(harness.schema),
    STAYSYNC_PROVIDER_URL: harness.sim.url,
    STAYSYNC_REFERENCE_DATA_URL: harness.sim.url,
    STAYSYNC_CLIENT_ID: SIM_CLIENT_ID,
    STAYSYNC_CLIENT_SECRET: SIM_CLIENT_SECRET,
    STAYSYNC_PROPERTY_IDS: harness.sim.propertyIds().join(','),
    STAYSYNC_CONFIG: configFile({
      rateLimits: fastRateLimits,
      ops: { port: 0 },
      ...opts.config,
      sync: { pollIntervalMs: TEST_POLL_INTERVAL, ...(opts.config?.sync as object | undefined) },
      // A token request after another (a second connection, a retry) goes within 100 ms, not 5 s.
      replicas: { tokenGateSpacingMs: 100, ...(opts.config?.replicas as object | undefined) },
      // A process that finds the schema's lock taken (another's migration) asks again within 250 ms, not 5 s.
      database: { leaseRetryMs: 250, ...(opts.config?.database as object | undefined) },
    }),
    STAYSYNC_LOG_LEVEL: 'warn',
    ...bookingsAndContent,
    ...opts.env,
  };
}

/** A TCP port that was free a moment ago (for the daemon's ops endpoint). */
export { freePort };

/** Polls `check` every `everyMs` until it returns a truthy value; throws after `timeoutMs` naming `what`. */
export async function waitFor<T>(what: string, check: () => Promise<T> | T, timeoutMs = 30_000, everyMs = 100): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The JSON log lines a process wrote (pino, one object per line). */
export function logRecords(output: string): { level: string; msg: string; [k: string]: unknown }[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as { level: string; msg: string }];
      } catch {
        return [];
      }
    });
}

/** GET on the daemon's ops endpoint: status and body, or status 0 when nothing answers. */
export async function opsGet(port: number, path: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}

/**
 * The value of a sample in a Prometheus text exposition: `name` or `name{a="x",b="y"}`. A line
 * matches when it has that name and at least those labels (others, such as `connection`, may
 * be there too); the values of all matching lines are summed. Undefined when none matches.
 */
export function metricValue(text: string, sample: string): number | undefined {
  const wanted = parseSample(sample);
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const space = line.lastIndexOf(' ');
    const got = parseSample(line.slice(0, space));
    if (got.name !== wanted.name) continue;
    if (![...wanted.labels].every(([k, v]) => got.labels.get(k) === v)) continue;
    sum = (sum ?? 0) + Number(line.slice(space + 1));
  }
  return sum;
}

function parseSample(sample: string): { name: string; labels: Map<string, string> } {
  const brace = sample.indexOf('{');
  if (brace < 0) return { name: sample, labels: new Map() };
  const labels = new Map<string, string>();
  for (const m of sample.slice(brace + 1, -1).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels.set(m[1]!, m[2]!);
  return { name: sample.slice(0, brace), labels };
}

/**
 * A daemon (`run`) receiving change events on 127.0.0.1, where it needs no authentication:
 * `port` is its ops endpoint, `hooks` its webhook receiver. Resolves once it is ready.
 */
export async function startReceivingDaemon(
  harness: Harness,
  opts: { env?: Record<string, string>; config?: Record<string, unknown>; allStreams?: boolean } = {},
): Promise<{ daemon: ReturnType<typeof startCli>; port: number; hooks: number }> {
  const port = await freePort();
  const hooks = await freePort();
  const env = {
    STAYSYNC_OPS_PORT: String(port),
    STAYSYNC_WEBHOOKS_ENABLED: 'true',
    STAYSYNC_WEBHOOK_HOST: '127.0.0.1',
    STAYSYNC_WEBHOOK_PORT: String(hooks),
    STAYSYNC_LOG_LEVEL: 'info',
    ...opts.env,
  };
  const daemon = startCli(['run'], daemonEnv(harness, { env, config: opts.config ?? {}, allStreams: opts.allStreams }));
  await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200, 60_000);
  return { daemon, port, hooks };
}
