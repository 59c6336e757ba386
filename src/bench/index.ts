/**
 * `npm run bench`: staysync against the simulator, measured against the rate limits.
 *
 *   node dist/bench/index.js [--bookings 20000] [--properties 4] [--scale 60]
 *                            [--memory-sizes 2000,20000,100000] [--concurrency 8]
 *                            [--only budget,memory,content] [--skip-budget] [--skip-memory] [--skip-content]
 *
 * Scenario A (budget fidelity): the production limits with time compressed by --scale
 * (60: an hour is a minute), the same windows in the simulator and the daemon; one `sync
 * --once` run, compared with what a perfect client could do (theory.ts).
 * Scenario B (memory): limits 100 times higher, so only the machine bounds speed; peak RSS
 * of `sync --once` at each size, and the ratio of each size to the smallest.
 * `--only memory` runs scenario B alone; `--only` takes a comma list of budget (A), memory (B)
 * and content (C), and the --skip-* flags leave one out.
 *
 * Exit status: 0 when every run finished (a MISS is a measurement, not a failure), 1 when a
 * run failed, 2 on bad flags. DATABASE_URL defaults to postgres://postgres@127.0.0.1:5432/test;
 * each run uses a fresh schema `bench_<random>`, dropped afterwards.
 */
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { rateLimitScopes } from '../config.js';
import { defaultRateLimits } from '../simulator/index.js';
import { analyseBudgetRun, formatLines, logText, mb, RSS_FLAT_RATIO, RSS_GOAL_BYTES, secs, windowsText, type Line } from './report.js';
import { checkDatabase, containerMemoryText, redactUrl, RunFailedError, runSyncOnce, type Limits, type RunResult } from './run.js';
import { runContentBench } from './content.js';
import { minTimeFor, scaleWindows } from './theory.js';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

interface Options {
  bookings: number;
  properties: number;
  scale: number;
  memorySizes: number[];
  skipBudget: boolean;
  skipMemory: boolean;
  concurrency: number;
  contentProperties: number;
  /** Scenario C's own time scale: slow enough that the budget, not this machine, paces it. */
  contentScale: number;
  skipContent: boolean;
}

class UsageError extends Error {}

const usage = `usage: node dist/bench/index.js [--bookings 20000] [--properties 4] [--scale 60]
                                 [--memory-sizes 2000,20000,100000] [--concurrency 8]
                                 [--content-properties 500] [--content-scale 10]
                                 [--only budget,memory,content] [--skip-budget] [--skip-memory] [--skip-content]`;

/** The scenarios by the names `--only` takes. */
const scenarioNames = ['budget', 'memory', 'content'] as const;
type ScenarioName = (typeof scenarioNames)[number];

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      bookings: { type: 'string', default: '20000' },
      properties: { type: 'string', default: '4' },
      scale: { type: 'string', default: '60' },
      'memory-sizes': { type: 'string', default: '2000,20000,100000' },
      only: { type: 'string' },
      'skip-budget': { type: 'boolean', default: false },
      'skip-memory': { type: 'boolean', default: false },
      'content-properties': { type: 'string', default: '500' },
      'content-scale': { type: 'string', default: '10' },
      'skip-content': { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '8' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const int = (name: string, v: string, min: number): number => {
    if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name}: expected a whole number >= ${min}, got ${JSON.stringify(v)}`);
    return Number(v);
  };
  const scale = Number(values.scale);
  if (!(scale > 0) || !Number.isFinite(scale)) throw new UsageError(`--scale: expected a positive number, got ${JSON.stringify(values.scale)}`);
  const properties = int('properties', values.properties, 1);
  // Ascending: the first size is the baseline of the ratios.
  const memorySizes = values['memory-sizes']
    .split(',')
    .map((s) => int('memory-sizes', s.trim(), properties))
    .sort((a, b) => a - b);
  let only: Set<ScenarioName> | undefined;
  if (values.only !== undefined) {
    only = new Set();
    for (const raw of values.only.split(',')) {
      const name = raw.trim();
      if (!(scenarioNames as readonly string[]).includes(name)) {
        throw new UsageError(`--only: expected a comma list of ${scenarioNames.join(', ')}, got ${JSON.stringify(values.only)}`);
      }
      only.add(name as ScenarioName);
    }
  }
  const skip = (name: ScenarioName, flag: boolean): boolean => flag || (only !== undefined && !only.has(name));
  return {
    bookings: int('bookings', values.bookings, properties),
    properties,
    scale,
    memorySizes,
    skipBudget: skip('budget', values['skip-budget']),
    skipMemory: skip('memory', values['skip-memory']),
    contentProperties: int('content-properties', values['content-properties'], 1),
    contentScale: int('content-scale', values['content-scale'], 1),
    skipContent: skip('content', values['skip-content']),
    concurrency: int('concurrency', values.concurrency, 1),
  };
}

/** `total` bookings spread over `count` properties (ids as the simulator's main.ts makes them). */
function spread(total: number, count: number): { id: string; bookingCount: number }[] {
  return Array.from({ length: count }, (_, i) => ({
    id: String(500_100 + i * 100),
    bookingCount: Math.floor(total / count) + (i < total % count ? 1 : 0),
  }));
}

function mapLimits(f: (ws: readonly { limit: number; windowMs: number }[]) => { limit: number; windowMs: number }[]): Limits {
  return Object.fromEntries(rateLimitScopes.map((s) => [s, f(defaultRateLimits[s])])) as Limits;
}

function humanScale(scale: number): string {
  const hourS = 3600 / scale;
  return hourS >= 60 ? `hour = ${(hourS / 60).toFixed(hourS % 60 === 0 ? 0 : 1)} min` : `hour = ${Number(hourS.toFixed(1))} s`;
}

const out = (line = ''): void => void process.stdout.write(`${line}\n`);
const progress = (line: string): void => void process.stderr.write(`  … ${line}\n`);

function failureReport(err: RunFailedError): void {
  out(`  RUN FAILED: ${err.message}`);
  const r = err.result;
  if (!r) return;
  out(`  ${logText(r)}`);
  out('  --- last output of the daemon ---');
  for (const l of r.log.tail.trimEnd().split('\n').slice(-40)) out(`  | ${l}`);
}

async function main(): Promise<number> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  const databaseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const pgVersion = await checkDatabase(databaseUrl);

  const abort = new AbortController();
  const onSignal = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  out(`staysync bench — ${new Date().toISOString()}, node ${process.version}, ${cpus().length} cores`);
  out(`daemon runs as deployed: ${containerMemoryText()} (from the Dockerfile)`);
  out(`database ${redactUrl(databaseUrl)} (PostgreSQL ${pgVersion}), a fresh schema per run`);
  let failed = false;

  // ---- Scenario A: budget fidelity ----
  if (!opts.skipBudget && !abort.signal.aborted) {
    const limits = mapLimits((ws) => scaleWindows(ws, opts.scale));
    const detailWindows = limits.bookingDetails;
    const listWindows = limits.bookingList;
    out(`scenario A: ${opts.bookings} bookings, ${opts.properties} properties, scale 1/${opts.scale} (${humanScale(opts.scale)}), detail concurrency ${opts.concurrency}`);
    out(`  windows   details ${windowsText(detailWindows)} | list ${windowsText(listWindows)} | token ${windowsText(limits.token)}`);
    const theoryMs = minTimeFor(detailWindows, opts.bookings);
    progress(`scenario A runs for about ${secs(theoryMs)} (theoretical minimum)`);
    try {
      const r = await runSyncOnce({
        label: 'scenario A',
        properties: spread(opts.bookings, opts.properties),
        limits,
        databaseUrl,
        detailConcurrency: opts.concurrency,
        timeoutMs: 3 * theoryMs + 120_000,
        seed: 1,
        onProgress: progress,
        signal: abort.signal,
      });
      const a = analyseBudgetRun(r, detailWindows, listWindows);
      for (const l of formatLines(a.lines)) out(l);
      for (const n of a.notes) out(`  ${n}`);
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      failed = true;
      failureReport(err);
    }
  }

  // ---- Scenario B: memory ----
  if (!opts.skipMemory && !abort.signal.aborted) {
    const relaxed = mapLimits((ws) => scaleWindows(ws, opts.scale).map((w) => ({ limit: w.limit * 100, windowMs: w.windowMs })));
    out(`scenario B: memory, limits 100× higher (details ${windowsText(relaxed.bookingDetails)}), ${opts.properties} properties`);
    const results: RunResult[] = [];
    const lines: Line[] = [];
    const smallest = opts.memorySizes[0];
    for (const size of opts.memorySizes) {
      if (abort.signal.aborted) break;
      try {
        const r = await runSyncOnce({
          label: `scenario B ${size}`,
          properties: spread(size, opts.properties),
          limits: relaxed,
          databaseUrl,
          detailConcurrency: opts.concurrency,
          // Machine-bound: generous, but a hang still ends.
          timeoutMs: 120_000 + size * 50,
          seed: 2,
          onProgress: progress,
          signal: abort.signal,
        });
        // Each size against the smallest (the first; no ratio when that run failed).
        results.push(r);
        const first = results[0]!.bookings === smallest ? results[0]! : undefined;
        const ratio = first && first !== r && first.peakRssBytes && r.peakRssBytes ? r.peakRssBytes / first.peakRssBytes : undefined;
        const underGoal = r.peakRssBytes !== undefined && r.peakRssBytes < RSS_GOAL_BYTES;
        const flat = ratio === undefined || ratio <= RSS_FLAT_RATIO;
        lines.push({
          label: `${size} bookings`,
          value: mb(r.peakRssBytes),
          detail:
            `peak RSS${ratio !== undefined ? `, ratio ${ratio.toFixed(2)} to ${smallest}` : ''}; ` +
            `${secs(r.wallMs)}, ${(r.details.count / Math.max(1e-3, (r.details.lastMs - r.details.firstMs) / 1000)).toFixed(0)} details/s, ${r.rejected429} × 429`,
          goal: ratio !== undefined ? `(goal < 200 MB, ratio <= ${RSS_FLAT_RATIO})` : '(goal < 200 MB)',
          verdict: r.peakRssBytes === undefined ? '' : underGoal && flat ? 'PASS' : 'MISS',
        });
      } catch (err) {
        if (!(err instanceof RunFailedError)) throw err;
        failed = true;
        for (const l of formatLines(lines)) out(l);
        lines.length = 0;
        failureReport(err);
      }
    }
    for (const l of formatLines(lines)) out(l);
  }
  // ---- Scenario C: content refresh of 500 properties ----
  if (!opts.skipContent && !abort.signal.aborted) {
    const contentLimits = mapLimits((ws) => scaleWindows(ws, opts.contentScale));
    out(
      `scenario C: content refresh of ${opts.contentProperties} properties with full content, scale 1/${opts.contentScale} (${humanScale(opts.contentScale)}), ` +
        `standard windows ${windowsText(contentLimits.standard)}`,
    );
    const c = await runContentBench({ properties: opts.contentProperties, limits: contentLimits, databaseUrl });
    const ratio = c.wallMs / Math.max(1, c.theoreticalMs);
    const cLines: Line[] = [
      {
        label: 'requests',
        value: String(c.requests),
        detail: `${c.acceptedStandard} counted by the provider (standard scope); ${c.properties} properties, ${c.changedRows} rows written, ${c.quarantined} quarantined`,
        goal: '',
        verdict: c.ok && c.properties === opts.contentProperties ? '' : 'MISS',
      },
      {
        label: '429 responses',
        value: String(c.rejected429),
        detail: '',
        goal: '(goal 0)',
        verdict: c.rejected429 === 0 ? 'PASS' : 'MISS',
      },
      {
        label: 'duration',
        value: secs(c.wallMs),
        detail: `theoretical minimum ${secs(c.theoreticalMs)} for ${c.requests} requests, ratio ${ratio.toFixed(2)}`,
        goal: '(within the limits)',
        verdict: '',
      },
    ];
    for (const l of formatLines(cLines)) out(l);
  }
  if (abort.signal.aborted) {
    out('bench interrupted');
    return 1;
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
