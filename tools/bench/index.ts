/**
 * `npm run bench`: staysync against the simulator, measured against the rate limits.
 *
 *   npm run bench -- [--bookings 20000] [--properties 4] [--scale 60] [--page-size 1000]
 *                            [--memory-sizes 2000,20000,100000] [--memory-all-streams] [--memory-history-pairs 0] [--concurrency 8]
 *                            [--content-properties 500] [--content-scale 10]
 *                            [--pms-bookings 2000] [--pms-properties 2] [--pms-scale 60] [--pms-backfill-from 2009-01-01] [--pms-year]
 *                            [--webhook-bookings 300] [--webhook-changes 50] [--webhook-scale 10]
 *                            [--freshness-properties 20] [--freshness-bookings 100] [--freshness-changes 30,240]
 *                            [--scale-connections 200] [--scale-bookings 15] [--scale-replicas 1,3]
 *                            [--reporting-bookings 1000000] [--reporting-properties 100] [--reporting-runs 7] [--reporting-keep]
 *                            [--erasure-bookings 1000000] [--forecast-rooms 200] [--forecast-seed 27]
 *                            [--fleet-connections 1000] [--fleet-bookings 5] [--fleet-settle-minutes 3] [--fleet-quiet-minutes 10] [--fleet-busy-minutes 10]
 *                            [--fleet-backfill-minutes 10] [--fleet-changes-per-hour 1000] [--fleet-backfill-bookings 50000]
 *                            [--fleet-replicas 2] [--fleet-daemon dist/cli/main.js]
 *                            [--only parser,budget,memory,content,pms,webhooks,freshness,scale,reporting,erasure,forecast,fleet]
 *                            [--skip-parser] [--skip-budget] [--skip-memory] [--skip-content] [--skip-pms] [--skip-webhooks] [--skip-freshness] [--skip-scale]
 *                            [--skip-reporting] [--skip-erasure] [--skip-forecast]
 *
 * Scenario P (parser, parser.ts) runs first, in this process, in a few seconds: the MB/s of
 * parseJsonLossless on an ordinary body of booking details responses (about 6 MB), against the
 * regular-expression tokenizer it replaced (kept there as a reference) and JSON.parse; then the
 * time each takes to refuse a string that never ends (1 MB; the former one at 32 and 64 KB,
 * since it is quadratic). It needs no database: `--only parser` runs without one.
 * Scenario A (budget fidelity): the production limits with time compressed by --scale
 * (60: an hour is a minute), the same windows in the simulator and the daemon; one `sync
 * --once` run, compared with what a perfect client could do (theory.ts). --page-size sets the
 * daemon's sync.summariesPageSize: at 10, the backfill's list pages, not the details, meet their
 * budget first, and the list's share of its binding window is measured instead.
 * Scenario B (memory): limits 100 times higher, so only the machine bounds speed; peak RSS
 * of `sync --once` at each size, and the ratio of each size to the smallest.
 * A and B run with pms.enabled and occupancy.enabled false (BOOKINGS_ONLY below); B with
 * --memory-all-streams runs with the daemon's defaults instead (content, the PMS mirror from
 * pms.backfillFrom and the occupancy refresh on), for the peak RSS of a whole `sync --once`.
 * --memory-history-pairs N then runs N pairs at the last of --memory-sizes, with history and
 * without it, for the details written per second history costs (history-cost.ts).
 * Scenario C (content): one content refresh of --content-properties properties, standard
 * windows scaled by --content-scale; requests, 429s, duration against the minimum (content.ts).
 * Scenario D (PMS backfill, pms.ts): `sync --once` with STAYSYNC_PROPERTY_IDS, content and
 * occupancy off, windows scaled by --pms-scale (slow enough that the standard budget, not this
 * machine, paces it), backfill from --pms-backfill-from; PMS searches against the fewest
 * possible, reservation, invoice, guest and loyalty-card fetches against what the simulator
 * holds, 429s, standard-scope time against the theoretical minimum (and what it comes to at the
 * production limits), and the mirror against the simulator. `--pms-year`: a year of a 200-room
 * hotel (one property, about 21,000 reservations, backfill from a year ago).
 * Scenario E (webhook latency, webhooks.ts): the daemon `run` with its schedules off; after its
 * first sync, PMS changes 100–600 ms apart, each timed from its event to the updated row in
 * PostgreSQL (median, p95), the daemon's own latency histogram, and exit 0 on SIGTERM.
 * Scenario F (freshness, freshness.ts): the daemon `run` with the production booking list and
 * details windows (no scale) and adaptive polling; after its first sync, bookings change one at
 * a time at random moments, each timed from the change to its row in `bookings`; once with 1
 * property, once with --freshness-properties on one connection, side by side (--freshness-bookings
 * in each run; --freshness-changes: changes in the one-property run and in the P-property run).
 * Median against 2 s (1 property) and P × 0.6 s + 1 s. F starts after B and runs alongside
 * C and E; D follows once F is over (order A, B, C, E, D, F).
 * Scenario G (scale, scale.ts): --scale-connections API connections (one property and
 * --scale-bookings bookings each, each with a contracted details budget of 1 per 2 s), followed
 * from a connections directory by one replica, then by three on this machine (one IP): the
 * total details rate against the sum of the budgets, token requests against the per-IP token
 * budget, 429s, peak RSS per replica, and with three replicas the takeover after SIGKILL of
 * one (default takeover time, 30 s). The list and token windows are scaled by --scale. G runs
 * last, alone: its replicas take the whole machine.
 * Scenario H (reporting and history, reporting.ts): --reporting-bookings bookings (1,000,000)
 * over --reporting-properties properties (100), about three versions each (made, re-priced,
 * moved, cancelled, reinstated), stay dates over five years, generated in SQL as the
 * repositories write them (no HTTP, no daemon), and checked before anything is timed
 * (nightly_facts against the open night rows, on_the_books(now()) against daily_kpis, a sample
 * against planHistory); then daily_kpis for one property and for all of them over a month,
 * on_the_books for one property and 365 nights, pace for one property and a year, and
 * channel_performance, each the median of --reporting-runs EXPLAIN ANALYZE runs (execution +
 * planning) after two warm-up runs; and the bytes of history per booking version. H runs after
 * G, alone; --reporting-keep leaves its schema in place to look at plans by hand.
 * Scenario I (erasure, erasure.ts): a mirror of --erasure-bookings bookings (1,000,000) with
 * their PMS reservations, profiles, storage bookings, quarantined bodies and change events,
 * generated in SQL as H's; how long forget-guest holds the erasure lock alone (a dry run, by
 * e-mail, by booking) and how long a write of guest data waits meanwhile, beside the same for
 * the lock held through a whole erasure (as before). I runs after H, alone.
 * Scenario "forecast" (forecast.ts): the pickup forecast (reporting.forecast_at) backtested on a
 * hotel of --forecast-rooms rooms whose demand is simulated (--forecast-seed) with weekly and
 * yearly seasonality, a drifting market, a lead-time curve, cancellations and re-prices, loaded
 * into the history tables in SQL; forecasts made 7, 14 and 30 days ahead for 364 past nights
 * against what each night sold, the mean absolute percentage error beside the books alone and
 * same time last year's final; and forecast_at(now, 90) timed. About a minute; after I, alone.
 * Scenario "fleet" (fleet.ts) runs only when named (`--only fleet`, about 50 minutes at real
 * time): --fleet-connections API connections of one property each (--fleet-bookings bookings),
 * followed by --fleet-replicas replicas from a connections directory into a database of its own,
 * at the production limits (the token endpoint's minute and hour windows raised 20 times, the
 * same in the simulator and the daemons: one IP cannot carry 1,000 connections' tokens); after
 * the catch-up and --fleet-settle-minutes (3: the replicas share the connections out),
 * --fleet-quiet-minutes with no change, --fleet-busy-minutes of
 * --fleet-changes-per-hour changes (10 % of the hotels making 80 %), then --fleet-backfill-minutes
 * while a hotel of --fleet-backfill-bookings joins and the changes go on. Per phase: list
 * requests per property per hour, provider requests, database transactions per second, WAL bytes
 * per hour, CPU and RSS per replica, change → row (p50, p95, max) and token requests, against
 * the goals of issue 26. --fleet-daemon drives another build of the daemon (e.g. an older one).
 * `--only` takes a comma list of parser (P), budget (A), memory (B), content (C), pms (D),
 * webhooks (E), freshness (F), scale (G), reporting (H), erasure (I), forecast and fleet, e.g. `--only pms`;
 * the --skip-* flags leave one out (fleet runs only with --only).
 *
 * Exit status: 0 when every run finished (a MISS is a measurement, not a failure), 1 when a
 * run failed, 2 on bad flags. DATABASE_URL defaults to postgres://postgres@127.0.0.1:5432/test;
 * each run uses a fresh schema `bench_<random>`, dropped afterwards.
 */
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { rateLimitScopes } from '../../src/config/config.js';
import { defaultRateLimits } from '../simulator/index.js';
import { analyseBudgetRun, formatLines, logText, mb, RSS_FLAT_RATIO, RSS_GOAL_BYTES, secs, windowsText, type Line } from './report.js';
import { checkDatabase, containerMemoryText, redactUrl, RunFailedError, runSyncOnce, type Limits, type RunOptions, type RunResult } from './run.js';
import { runContentBench } from './content.js';
import { PMS_DEFAULTS, PMS_YEAR, pmsLines, runPmsBench } from './pms.js';
import { runWebhookBench, WEBHOOK_DEFAULTS, webhookLines } from './webhooks.js';
import {
  FRESHNESS_DEFAULTS,
  freshnessLines,
  freshnessTimeoutMs,
  MANY_PROPERTIES_PACE,
  ONE_PROPERTY_PACE,
  paceText,
  runFreshnessBench,
  type ChangePace,
} from './freshness.js';
import { minTimeFor, scaleWindows } from './theory.js';
import { runScaleBench, SCALE_DEFAULTS, scaleLines } from './scale.js';
import { PARSER_DEFAULTS, parserLines, runParserBench } from './parser.js';
import { REPORTING_DEFAULTS, reportingLines, runReportingBench } from './reporting.js';
import { ERASURE_DEFAULTS, erasureLines, runErasureBench } from './erasure.js';
import { FLEET_DEFAULTS, fleetLines, runFleetBench } from './fleet.js';
import { FORECAST_DEFAULTS, forecastLines, runForecastBench } from './forecast.js';
import { expectHistory, historyCostLines, keepHistory, leaveHistoryOut, type HistoryPair } from './history-cost.js';

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test';

/**
 * Scenarios A and B measure the booking streams: the PMS mirror and the occupancy refresh are
 * off there (with them, `sync --once` would also backfill ~2.7 standard requests per booking,
 * hours of standard budget at 20,000 bookings). Scenario D measures the PMS backfill.
 */
const BOOKINGS_ONLY = { pms: { enabled: false }, occupancy: { enabled: false } };

interface Options {
  skipParser: boolean;
  bookings: number;
  properties: number;
  scale: number;
  memorySizes: number[];
  skipBudget: boolean;
  skipMemory: boolean;
  /** Scenario B with the PMS mirror and the occupancy refresh on (the daemon's defaults), not the booking streams alone. */
  memoryAllStreams: boolean;
  /** Pairs of runs at the last of memorySizes, with history and without (history-cost.ts); 0: none. */
  memoryHistoryPairs: number;
  concurrency: number;
  /** Scenario A's sync.summariesPageSize; undefined: the daemon's own. */
  pageSize: number | undefined;
  contentProperties: number;
  /** Scenario C's own time scale: slow enough that the budget, not this machine, paces it. */
  contentScale: number;
  skipContent: boolean;
  pmsBookings: number;
  pmsProperties: number;
  /** Scenario D's time scale: slow enough that the standard budget, not this machine, paces it. */
  pmsScale: number;
  pmsBackfillFrom: string;
  skipPms: boolean;
  webhookBookings: number;
  webhookChanges: number;
  /** Scenario E's time scale (1: the production windows). */
  webhookScale: number;
  skipWebhooks: boolean;
  /** Scenario F: P of its second run (the first has one property). */
  freshnessProperties: number;
  /** Scenario F: bookings of each run, spread over its properties. */
  freshnessBookings: number;
  /** Changes in the one-property run, and in the P-property run. */
  freshnessChanges: [number, number];
  skipFreshness: boolean;
  scaleConnections: number;
  scaleBookings: number;
  scaleReplicas: number[];
  skipScale: boolean;
  reportingBookings: number;
  reportingProperties: number;
  reportingRuns: number;
  /** Scenario H: leave the loaded schema in place (its name is printed), for looking at plans by hand. */
  reportingKeep: boolean;
  skipReporting: boolean;
  erasureBookings: number;
  skipErasure: boolean;
  forecastRooms: number;
  forecastSeed: number;
  skipForecast: boolean;
  fleetConnections: number;
  fleetBookings: number;
  /** Minutes between the catch-up and the quiet phase (the catch-up makes each property busy for sync.quietAfterMs). */
  fleetSettleMinutes: number;
  fleetQuietMinutes: number;
  fleetBusyMinutes: number;
  fleetBackfillMinutes: number;
  fleetChangesPerHour: number;
  fleetBackfillBookings: number;
  fleetReplicas: number;
  /** The daemon the fleet scenario runs (dist/cli/main.js of some build); default this checkout's. */
  fleetDaemon: string | undefined;
  /** Only with --only fleet: it takes the machine for about 40 minutes. */
  skipFleet: boolean;
}

class UsageError extends Error {}

const usage = `usage: npm run bench -- [--bookings 20000] [--properties 4] [--scale 60] [--page-size 1000]
                                 [--memory-sizes 2000,20000,100000] [--memory-all-streams] [--memory-history-pairs 0] [--concurrency 8]
                                 [--content-properties 500] [--content-scale 10]
                                 [--pms-bookings 2000] [--pms-properties 2] [--pms-scale 60] [--pms-backfill-from 2009-01-01] [--pms-year]
                                 [--webhook-bookings 300] [--webhook-changes 50] [--webhook-scale 10]
                                 [--freshness-properties 20] [--freshness-bookings 100] [--freshness-changes 30,240]
                                 [--scale-connections 200] [--scale-bookings 15] [--scale-replicas 1,3]
                                 [--reporting-bookings 1000000] [--reporting-properties 100] [--reporting-runs 7] [--reporting-keep]
                                 [--erasure-bookings 1000000] [--forecast-rooms 200] [--forecast-seed 27]
                                 [--fleet-connections 1000] [--fleet-bookings 5] [--fleet-settle-minutes 3] [--fleet-quiet-minutes 10] [--fleet-busy-minutes 10]
                                 [--fleet-backfill-minutes 10] [--fleet-changes-per-hour 1000] [--fleet-backfill-bookings 50000]
                                 [--fleet-replicas 2] [--fleet-daemon dist/cli/main.js]
                                 [--only parser,budget,memory,content,pms,webhooks,freshness,scale,reporting,erasure,forecast,fleet]
                                 [--skip-parser] [--skip-budget] [--skip-memory] [--skip-content] [--skip-pms] [--skip-webhooks] [--skip-freshness] [--skip-scale]
                                 [--skip-reporting] [--skip-erasure] [--skip-forecast]`;

/** The scenarios by the names `--only` takes. */
const scenarioNames = ['parser', 'budget', 'memory', 'content', 'pms', 'webhooks', 'freshness', 'scale', 'reporting', 'erasure', 'forecast', 'fleet'] as const;
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
      'skip-parser': { type: 'boolean', default: false },
      'skip-budget': { type: 'boolean', default: false },
      'skip-memory': { type: 'boolean', default: false },
      'memory-all-streams': { type: 'boolean', default: false },
      'memory-history-pairs': { type: 'string', default: '0' },
      'content-properties': { type: 'string', default: '500' },
      'content-scale': { type: 'string', default: '10' },
      'skip-content': { type: 'boolean', default: false },
      'pms-bookings': { type: 'string', default: String(PMS_DEFAULTS.bookings) },
      'pms-properties': { type: 'string', default: String(PMS_DEFAULTS.properties) },
      'pms-scale': { type: 'string', default: String(PMS_DEFAULTS.scale) },
      'pms-backfill-from': { type: 'string', default: PMS_DEFAULTS.backfillFrom },
      'pms-year': { type: 'boolean', default: false },
      'skip-pms': { type: 'boolean', default: false },
      'webhook-bookings': { type: 'string', default: String(WEBHOOK_DEFAULTS.bookings) },
      'webhook-changes': { type: 'string', default: String(WEBHOOK_DEFAULTS.changes) },
      'webhook-scale': { type: 'string', default: String(WEBHOOK_DEFAULTS.scale) },
      'skip-webhooks': { type: 'boolean', default: false },
      'freshness-properties': { type: 'string', default: String(FRESHNESS_DEFAULTS.properties) },
      'freshness-bookings': { type: 'string', default: String(FRESHNESS_DEFAULTS.bookings) },
      'freshness-changes': { type: 'string', default: `${ONE_PROPERTY_PACE.changes},${MANY_PROPERTIES_PACE.changes}` },
      'skip-freshness': { type: 'boolean', default: false },
      'scale-connections': { type: 'string', default: String(SCALE_DEFAULTS.connections) },
      'scale-bookings': { type: 'string', default: String(SCALE_DEFAULTS.bookingsPerConnection) },
      'scale-replicas': { type: 'string', default: SCALE_DEFAULTS.replicas.join(',') },
      'skip-scale': { type: 'boolean', default: false },
      'reporting-bookings': { type: 'string', default: String(REPORTING_DEFAULTS.bookings) },
      'reporting-properties': { type: 'string', default: String(REPORTING_DEFAULTS.properties) },
      'reporting-runs': { type: 'string', default: String(REPORTING_DEFAULTS.runs) },
      'reporting-keep': { type: 'boolean', default: false },
      'skip-reporting': { type: 'boolean', default: false },
      'erasure-bookings': { type: 'string', default: String(ERASURE_DEFAULTS.bookings) },
      'skip-erasure': { type: 'boolean', default: false },
      'forecast-rooms': { type: 'string', default: String(FORECAST_DEFAULTS.rooms) },
      'forecast-seed': { type: 'string', default: String(FORECAST_DEFAULTS.seed) },
      'skip-forecast': { type: 'boolean', default: false },
      'fleet-connections': { type: 'string', default: String(FLEET_DEFAULTS.connections) },
      'fleet-bookings': { type: 'string', default: String(FLEET_DEFAULTS.bookingsPerHotel) },
      'fleet-settle-minutes': { type: 'string', default: String(FLEET_DEFAULTS.settleMinutes) },
      'fleet-quiet-minutes': { type: 'string', default: String(FLEET_DEFAULTS.quietMinutes) },
      'fleet-busy-minutes': { type: 'string', default: String(FLEET_DEFAULTS.busyMinutes) },
      'fleet-backfill-minutes': { type: 'string', default: String(FLEET_DEFAULTS.backfillMinutes) },
      'fleet-changes-per-hour': { type: 'string', default: String(FLEET_DEFAULTS.changesPerHour) },
      'fleet-backfill-bookings': { type: 'string', default: String(FLEET_DEFAULTS.backfillBookings) },
      'fleet-replicas': { type: 'string', default: String(FLEET_DEFAULTS.replicas) },
      'fleet-daemon': { type: 'string' },
      concurrency: { type: 'string', default: '8' },
      'page-size': { type: 'string' },
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
  const changePair = (v: string): [number, number] => {
    const parts = v.split(',').map((x) => x.trim());
    if (parts.length !== 2)
      throw new UsageError(`--freshness-changes: expected two whole numbers, for one property and for P properties (e.g. 30,200), got ${JSON.stringify(v)}`);
    return [int('freshness-changes', parts[0]!, 1), int('freshness-changes', parts[1]!, 1)];
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
  // --pms-year: a year of a 200-room hotel (pms.ts, PMS_YEAR), unless the other flags say otherwise.
  const year = values['pms-year'];
  const yearFrom = new Date(Date.now() - PMS_YEAR.backfillDays * 86_400_000).toISOString().slice(0, 10);
  const backfillFrom = year && argv.every((a) => !a.startsWith('--pms-backfill-from')) ? yearFrom : values['pms-backfill-from'];
  if (year) {
    if (argv.every((a) => !a.startsWith('--pms-bookings'))) values['pms-bookings'] = String(PMS_YEAR.bookings);
    if (argv.every((a) => !a.startsWith('--pms-properties'))) values['pms-properties'] = String(PMS_YEAR.properties);
  }
  if (!/^\d{4}-\d{2}-\d{2}$/.test(backfillFrom) || Number.isNaN(Date.parse(`${backfillFrom}T00:00:00Z`))) {
    throw new UsageError(`--pms-backfill-from: expected a date YYYY-MM-DD, got ${JSON.stringify(backfillFrom)}`);
  }
  const pmsProperties = int('pms-properties', values['pms-properties'], 1);
  return {
    skipParser: skip('parser', values['skip-parser']),
    bookings: int('bookings', values.bookings, properties),
    properties,
    scale,
    memorySizes,
    skipBudget: skip('budget', values['skip-budget']),
    skipMemory: skip('memory', values['skip-memory']),
    memoryAllStreams: values['memory-all-streams'],
    memoryHistoryPairs: int('memory-history-pairs', values['memory-history-pairs'], 0),
    contentProperties: int('content-properties', values['content-properties'], 1),
    contentScale: int('content-scale', values['content-scale'], 1),
    skipContent: skip('content', values['skip-content']),
    concurrency: int('concurrency', values.concurrency, 1),
    pageSize: values['page-size'] === undefined ? undefined : int('page-size', values['page-size'], 1),
    pmsBookings: int('pms-bookings', values['pms-bookings'], pmsProperties),
    pmsProperties,
    pmsScale: int('pms-scale', values['pms-scale'], 1),
    pmsBackfillFrom: backfillFrom,
    skipPms: skip('pms', values['skip-pms']),
    webhookBookings: int('webhook-bookings', values['webhook-bookings'], 1),
    webhookChanges: int('webhook-changes', values['webhook-changes'], 1),
    webhookScale: int('webhook-scale', values['webhook-scale'], 1),
    skipWebhooks: skip('webhooks', values['skip-webhooks']),
    freshnessProperties: int('freshness-properties', values['freshness-properties'], 1),
    freshnessBookings: int('freshness-bookings', values['freshness-bookings'], Number(values['freshness-properties']) || 1),
    freshnessChanges: changePair(values['freshness-changes']),
    skipFreshness: skip('freshness', values['skip-freshness']),
    scaleConnections: int('scale-connections', values['scale-connections'], 1),
    scaleBookings: int('scale-bookings', values['scale-bookings'], 1),
    scaleReplicas: values['scale-replicas'].split(',').map((x) => int('scale-replicas', x.trim(), 1)),
    skipScale: skip('scale', values['skip-scale']),
    reportingBookings: int('reporting-bookings', values['reporting-bookings'], Number(values['reporting-properties']) || 1),
    reportingProperties: int('reporting-properties', values['reporting-properties'], 1),
    reportingRuns: int('reporting-runs', values['reporting-runs'], 1),
    reportingKeep: values['reporting-keep'],
    skipReporting: skip('reporting', values['skip-reporting']),
    erasureBookings: int('erasure-bookings', values['erasure-bookings'], ERASURE_DEFAULTS.properties * 10),
    skipErasure: skip('erasure', values['skip-erasure']),
    forecastRooms: int('forecast-rooms', values['forecast-rooms'], 1),
    forecastSeed: int('forecast-seed', values['forecast-seed'], 0),
    skipForecast: skip('forecast', values['skip-forecast']),
    fleetConnections: int('fleet-connections', values['fleet-connections'], 1),
    fleetBookings: int('fleet-bookings', values['fleet-bookings'], 1),
    fleetSettleMinutes: int('fleet-settle-minutes', values['fleet-settle-minutes'], 0),
    fleetQuietMinutes: int('fleet-quiet-minutes', values['fleet-quiet-minutes'], 1),
    fleetBusyMinutes: int('fleet-busy-minutes', values['fleet-busy-minutes'], 1),
    fleetBackfillMinutes: int('fleet-backfill-minutes', values['fleet-backfill-minutes'], 1),
    fleetChangesPerHour: int('fleet-changes-per-hour', values['fleet-changes-per-hour'], 1),
    fleetBackfillBookings: int('fleet-backfill-bookings', values['fleet-backfill-bookings'], 1),
    fleetReplicas: int('fleet-replicas', values['fleet-replicas'], 1),
    fleetDaemon: values['fleet-daemon'] === undefined ? undefined : resolve(values['fleet-daemon']),
    // The fleet takes the machine for about 50 minutes: only when asked for by name.
    skipFleet: only === undefined || !only.has('fleet'),
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
  for (const l of failureText(err)) out(l);
}

/** What a failed run prints: the sentence, and the end of the daemon's output. */
function failureText(err: RunFailedError): string[] {
  const r = err.result;
  if (!r) return [`  RUN FAILED: ${err.message}`];
  return [
    `  RUN FAILED: ${err.message}`,
    `  ${logText(r)}`,
    '  --- last output of the daemon ---',
    ...r.log.tail
      .trimEnd()
      .split('\n')
      .slice(-40)
      .map((l) => `  | ${l}`),
  ];
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
  const needsDatabase = ![
    opts.skipBudget,
    opts.skipMemory,
    opts.skipContent,
    opts.skipPms,
    opts.skipWebhooks,
    opts.skipFreshness,
    opts.skipScale,
    opts.skipReporting,
    opts.skipErasure,
    opts.skipForecast,
    opts.skipFleet,
  ].every(Boolean);
  const pgVersion = needsDatabase ? await checkDatabase(databaseUrl) : undefined;

  const abort = new AbortController();
  const onSignal = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  out(`staysync bench — ${new Date().toISOString()}, node ${process.version}, ${cpus().length} cores`);
  if (pgVersion !== undefined) {
    out(`daemon runs as deployed: ${containerMemoryText()} (from the Dockerfile)`);
    out(`database ${redactUrl(databaseUrl)} (PostgreSQL ${pgVersion}), a fresh schema per run`);
  }
  let failed = false;

  // ---- Scenario P: parser throughput ----
  if (!opts.skipParser && !abort.signal.aborted) {
    out(
      `scenario P: parser, MB/s on an ordinary body of booking details responses (median of ${PARSER_DEFAULTS.timedRuns} runs after ${PARSER_DEFAULTS.warmupRuns} warm-up runs), ` +
        'then the time to refuse a string that never ends',
    );
    const p = runParserBench(progress);
    out(`  body: ${p.responses} details responses of the simulator in an array, compact, ${(p.bodyBytes / 1048576).toFixed(1)} MB`);
    for (const l of formatLines(parserLines(p))) out(l);
  }

  // ---- Scenario A: budget fidelity ----
  if (!opts.skipBudget && !abort.signal.aborted) {
    const limits = mapLimits((ws) => scaleWindows(ws, opts.scale));
    const detailWindows = limits.bookingDetails;
    const listWindows = limits.bookingList;
    out(
      `scenario A: ${opts.bookings} bookings, ${opts.properties} properties, scale 1/${opts.scale} (${humanScale(opts.scale)}), detail concurrency ${opts.concurrency}` +
        `${opts.pageSize === undefined ? '' : `, list pages of ${opts.pageSize}`}; PMS and occupancy off`,
    );
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
        ...(opts.pageSize === undefined ? {} : { summariesPageSize: opts.pageSize }),
        timeoutMs: 3 * theoryMs + 120_000,
        seed: 1,
        config: BOOKINGS_ONLY,
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
    out(
      `scenario B: memory, limits 100× higher (details ${windowsText(relaxed.bookingDetails)}), ${opts.properties} properties; ` +
        (opts.memoryAllStreams ? 'PMS and occupancy on (--memory-all-streams)' : 'PMS and occupancy off'),
    );
    const results: RunResult[] = [];
    const lines: Line[] = [];
    const smallest = opts.memorySizes[0];
    /** One run of scenario B at `size`. */
    const runB = (size: number, label: string, history?: Pick<RunOptions, 'prepareSchema' | 'inspect'>) =>
      runSyncOnce({
        label,
        properties: spread(size, opts.properties),
        limits: relaxed,
        databaseUrl,
        detailConcurrency: opts.concurrency,
        // Machine-bound: generous, but a hang still ends.
        timeoutMs: 120_000 + size * 50,
        seed: 2,
        // --memory-all-streams: the daemon's defaults (content, PMS from 2009, occupancy on).
        config: opts.memoryAllStreams ? {} : BOOKINGS_ONLY,
        onProgress: progress,
        signal: abort.signal,
        ...history,
      });
    for (const size of opts.memorySizes) {
      if (abort.signal.aborted) break;
      try {
        const r = await runB(size, `scenario B ${size}`);
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

    // What history costs: pairs at the last size, with history and without (history-cost.ts).
    const size = opts.memorySizes[opts.memorySizes.length - 1]!;
    if (opts.memoryHistoryPairs > 0 && !abort.signal.aborted) {
      out(
        `scenario B, history on the write path: ${opts.memoryHistoryPairs} pairs at ${size} bookings, with history and without it ` +
          `(the database leaving out every row of booking_versions, booking_night_history and pms_stay_versions)`,
      );
      const pairs: HistoryPair[] = [];
      const rate = (r: RunResult) => r.details.count / Math.max(1e-3, (r.details.lastMs - r.details.firstMs) / 1000);
      try {
        for (let i = 0; i < opts.memoryHistoryPairs && !abort.signal.aborted; i++) {
          const label = `scenario B ${size}, pair ${i + 1}`;
          const withHistory = rate(await runB(size, `${label}, with history`, { prepareSchema: keepHistory, inspect: expectHistory(true) }));
          const withoutHistory = rate(await runB(size, `${label}, without history`, { prepareSchema: leaveHistoryOut, inspect: expectHistory(false) }));
          pairs.push({ withHistory, withoutHistory });
        }
      } catch (err) {
        if (!(err instanceof RunFailedError)) throw err;
        failed = true;
        failureReport(err);
      }
      for (const l of formatLines(historyCostLines(size, pairs))) out(l);
    }
  }
  // ---- Scenario F: freshness at real time scale, started here, reported last ----
  // Its runs wait on real seconds (a few requests a second, little CPU): they go alongside C
  // and E, whose goals leave room for a little contention; not alongside A and D, whose
  // bursts need the machine to themselves to converge near the theoretical time (1.07 and
  // 1.23 with F beside them), nor alongside B, which takes the whole machine.
  const freshness = !opts.skipFreshness && !abort.signal.aborted ? runScenarioF(opts, databaseUrl, abort.signal) : undefined;

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

  // ---- Scenario E: webhook latency ----
  if (!opts.skipWebhooks && !abort.signal.aborted) {
    const hookLimits = mapLimits((ws) => scaleWindows(ws, opts.webhookScale));
    out(
      `scenario E: webhook latency, daemon \`run\`, 1 property with ${opts.webhookBookings} bookings, ${opts.webhookChanges} PMS changes 100–600 ms apart, ` +
        `scale 1/${opts.webhookScale} (${humanScale(opts.webhookScale)}); polling off`,
    );
    try {
      const e = await runWebhookBench({
        bookings: opts.webhookBookings,
        changes: opts.webhookChanges,
        limits: hookLimits,
        databaseUrl,
        timeoutMs: 300_000,
        seed: 5,
        onProgress: progress,
        signal: abort.signal,
      });
      const { lines, notes } = webhookLines(e, opts.webhookChanges);
      for (const l of lines) out(l);
      for (const n of notes) out(`  ${n}`);
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      failed = true;
      failureReport(err);
    }
  }

  // F is over before D, whose bursts of standard requests need the machine (1.23 over the
  // theoretical time with F beside it); its report comes last.
  const freshnessReport = freshness ? await freshness : undefined;

  // ---- Scenario D: PMS backfill ----
  if (!opts.skipPms && !abort.signal.aborted) {
    const pmsLimits = mapLimits((ws) => scaleWindows(ws, opts.pmsScale));
    out(
      `scenario D: PMS backfill of ${opts.pmsBookings} bookings, ${opts.pmsProperties} properties, from ${opts.pmsBackfillFrom}, scale 1/${opts.pmsScale} (${humanScale(opts.pmsScale)}), ` +
        `standard windows ${windowsText(pmsLimits.standard)}; content and occupancy off`,
    );
    try {
      const d = await runPmsBench({
        properties: spread(opts.pmsBookings, opts.pmsProperties),
        limits: pmsLimits,
        databaseUrl,
        backfillFrom: opts.pmsBackfillFrom,
        detailConcurrency: opts.concurrency,
        // About 4.4 standard requests per reservation (the reservation, its invoices, ~0.9 guest
        // profiles, ~1.5 persons' loyalty cards, searches): at most every booking's.
        timeoutMs: 3 * minTimeFor(pmsLimits.standard, opts.pmsBookings * 5) + 120_000,
        onProgress: progress,
        signal: abort.signal,
      });
      const { lines, notes } = pmsLines(d, pmsLimits.standard, mapLimits((ws) => [...ws]).standard);
      for (const l of lines) out(l);
      for (const n of notes) out(`  ${n}`);
    } catch (err) {
      if (!(err instanceof RunFailedError)) throw err;
      failed = true;
      failureReport(err);
    }
  }

  // ---- Scenario F's report ----
  if (freshnessReport) {
    for (const l of freshnessReport.lines) out(l);
    if (freshnessReport.failed) failed = true;
  }

  // ---- Scenario G: many connections, one replica and several ----
  if (!opts.skipScale && !abort.signal.aborted) {
    const scaled = mapLimits((ws) => scaleWindows(ws, opts.scale));
    const limits = { ...scaled, bookingDetails: SCALE_DEFAULTS.detailWindows };
    out(
      `scenario G: ${opts.scaleConnections} API connections, ${opts.scaleBookings} bookings each, details ${windowsText(limits.bookingDetails)} per connection, ` +
        `list and token windows scaled 1/${opts.scale} (token ${windowsText(limits.token)} per IP); daemons \`run\` on this machine (one IP); content, PMS and occupancy off`,
    );
    for (const replicas of opts.scaleReplicas) {
      if (abort.signal.aborted) break;
      out(`  ${replicas} replica${replicas === 1 ? '' : 's'}:`);
      try {
        const g = await runScaleBench({
          label: `scenario G (${replicas})`,
          connections: opts.scaleConnections,
          bookingsPerConnection: opts.scaleBookings,
          replicas,
          limits,
          takeoverMs: SCALE_DEFAULTS.takeoverMs,
          killOne: replicas > 1,
          databaseUrl,
          timeoutMs: 600_000,
          onProgress: progress,
          signal: abort.signal,
        });
        for (const l of formatLines(scaleLines(g, SCALE_DEFAULTS.takeoverMs))) out(l);
      } catch (err) {
        if (!(err instanceof RunFailedError)) throw err;
        failed = true;
        failureReport(err);
      }
    }
  }
  // ---- Scenario H: reporting and history, alone (its load and its timings take the database) ----
  if (!opts.skipReporting && !abort.signal.aborted) {
    out(
      `scenario H: reporting and history, ${opts.reportingBookings} bookings over ${opts.reportingProperties} properties, about 3 versions each, generated in SQL; ` +
        `queries timed by EXPLAIN (ANALYZE, TIMING OFF), median of ${opts.reportingRuns} runs after ${REPORTING_DEFAULTS.warmupRuns} warm-up runs`,
    );
    try {
      const h = await runReportingBench({
        bookings: opts.reportingBookings,
        properties: opts.reportingProperties,
        runs: opts.reportingRuns,
        databaseUrl,
        keep: opts.reportingKeep,
        onProgress: progress,
        signal: abort.signal,
      });
      const { lines, notes } = reportingLines(h, opts.reportingRuns);
      for (const l of formatLines(lines)) out(l);
      for (const n of notes) out(`  ${n}`);
      if (opts.reportingKeep) out(`  schema kept: ${h.schema} (reporting views in ${h.schema}_reporting)`);
      if (h.checks.some((c) => !c.ok)) failed = true;
    } catch (err) {
      if (abort.signal.aborted) throw err;
      failed = true;
      out(`  RUN FAILED: ${(err as Error).message}`);
    }
  }

  // ---- Scenario I: erasure, alone (its load and its timings take the database) ----
  if (!opts.skipErasure && !abort.signal.aborted) {
    out(
      `scenario I: erasure, ${opts.erasureBookings} bookings over ${ERASURE_DEFAULTS.properties} properties with their PMS reservations, profiles and more, generated in SQL; ` +
        `forget-guest timed with a write of guest data every ${ERASURE_DEFAULTS.writerPauseMs} ms beside it`,
    );
    try {
      const r = await runErasureBench({
        bookings: opts.erasureBookings,
        properties: ERASURE_DEFAULTS.properties,
        databaseUrl,
        onProgress: progress,
        signal: abort.signal,
      });
      const { lines, notes } = erasureLines(r);
      for (const l of formatLines(lines)) out(l);
      for (const n of notes) out(`  ${n}`);
      if (r.checks.some((c) => !c.ok)) failed = true;
    } catch (err) {
      if (abort.signal.aborted) throw err;
      failed = true;
      out(`  RUN FAILED: ${(err as Error).message}`);
    }
  }

  // ---- Scenario forecast: the pickup forecast backtested, alone (its load and its timings take the database) ----
  if (!opts.skipForecast && !abort.signal.aborted) {
    out(
      `scenario forecast: the pickup forecast (reporting.forecast_at) backtested on a simulated hotel of ${opts.forecastRooms} rooms (seed ${opts.forecastSeed}), ` +
        `its history loaded in SQL; forecasts ${FORECAST_DEFAULTS.leads.join(', ')} days ahead of ${FORECAST_DEFAULTS.evaluatedNights} past nights against their finals`,
    );
    try {
      const r = await runForecastBench({
        databaseUrl,
        rooms: opts.forecastRooms,
        seed: opts.forecastSeed,
        onProgress: progress,
        signal: abort.signal,
      });
      const { lines, notes } = forecastLines(r);
      for (const l of formatLines(lines)) out(l);
      for (const n of notes) out(`  ${n}`);
      if (!r.check.ok) failed = true;
    } catch (err) {
      if (abort.signal.aborted) throw err;
      failed = true;
      out(`  RUN FAILED: ${(err as Error).message}`);
    }
  }

  // ---- Scenario fleet: a thousand hotels at real time, alone ----
  if (!opts.skipFleet && !abort.signal.aborted) {
    out(
      `scenario fleet: ${opts.fleetConnections} API connections of one property (${opts.fleetBookings} bookings each), ${opts.fleetReplicas} replicas \`run\` from a connections directory, ` +
        `production limits at real time (token windows raised, see the notes); after the catch-up and ${opts.fleetSettleMinutes} min, ${opts.fleetQuietMinutes} min quiet, ${opts.fleetBusyMinutes} min busy ` +
        `(${opts.fleetChangesPerHour} changes/h), ${opts.fleetBackfillMinutes} min with a hotel of ${opts.fleetBackfillBookings} bookings added; content, PMS and occupancy off`,
    );
    try {
      const r = await runFleetBench({
        connections: opts.fleetConnections,
        bookingsPerHotel: opts.fleetBookings,
        settleMinutes: opts.fleetSettleMinutes,
        quietMinutes: opts.fleetQuietMinutes,
        busyMinutes: opts.fleetBusyMinutes,
        backfillMinutes: opts.fleetBackfillMinutes,
        changesPerHour: opts.fleetChangesPerHour,
        backfillBookings: opts.fleetBackfillBookings,
        replicas: opts.fleetReplicas,
        daemonPath: opts.fleetDaemon,
        databaseUrl,
        onProgress: progress,
        signal: abort.signal,
      });
      const { sections, notes } = fleetLines(r);
      for (const s of sections) {
        out(`  ${s.title}:`);
        for (const l of formatLines(s.lines)) out(l);
      }
      for (const n of notes) out(`  ${n}`);
    } catch (err) {
      if (!(err instanceof RunFailedError) && !abort.signal.aborted) {
        failed = true;
        out(`  RUN FAILED: ${(err as Error).message}`);
      } else if (err instanceof RunFailedError) {
        failed = true;
        failureReport(err);
      } else throw err;
    }
  }

  if (abort.signal.aborted) {
    out('bench interrupted');
    return 1;
  }
  return failed ? 1 : 0;
}

/** Scenario F: its two runs side by side; the report's lines, printed when the other scenarios are done. */
async function runScenarioF(opts: Options, databaseUrl: string, signal: AbortSignal): Promise<{ lines: string[]; failed: boolean }> {
  const lines: string[] = [];
  const say = (line: string): void => void lines.push(line);
  let failed = false;
  // The production windows as they are: freshness is a matter of real seconds.
  const realLimits = mapLimits((ws) => ws.map((w) => ({ ...w })));
  const sizes = [...new Set([1, opts.freshnessProperties])];
  const paceOf = (p: number): ChangePace =>
    p === 1 ? { ...ONE_PROPERTY_PACE, changes: opts.freshnessChanges[0] } : { ...MANY_PROPERTIES_PACE, changes: opts.freshnessChanges[1] };
  say(
    `scenario F: freshness, daemon \`run\` with adaptive polling, production windows (no scale: list ${windowsText(realLimits.bookingList)} | details ${windowsText(realLimits.bookingDetails)}), ` +
      `${opts.freshnessBookings} bookings per run, on one connection: ${sizes.map((p) => `${p} propert${p === 1 ? 'y' : 'ies'} with ${paceText(paceOf(p))}`).join(', ')}`,
  );
  // The runs go side by side: each has its own simulator (its own budget), daemon and schema,
  // and spends its time waiting for real seconds, so neither slows the other measurably.
  const runs = await Promise.allSettled(
    sizes.map((p) => {
      const pace = paceOf(p);
      return runFreshnessBench({
        label: `scenario F (${p})`,
        properties: p,
        bookings: opts.freshnessBookings,
        pace,
        limits: realLimits,
        databaseUrl,
        timeoutMs: freshnessTimeoutMs(p, pace, realLimits),
        seed: 6 + p,
        onProgress: progress,
        signal,
      });
    }),
  );
  sizes.forEach((p, i) => {
    const each =
      opts.freshnessBookings % p === 0
        ? String(opts.freshnessBookings / p)
        : `${Math.floor(opts.freshnessBookings / p)}–${Math.ceil(opts.freshnessBookings / p)}`;
    say(`  ${p === 1 ? `1 property, ${opts.freshnessBookings} bookings` : `${p} properties, ${each} bookings each`}:`);
    const run = runs[i]!;
    if (run.status === 'fulfilled') {
      const report = freshnessLines(run.value, paceOf(p).changes, realLimits);
      for (const l of report.lines) say(l);
      for (const n of report.notes) say(`  ${n}`);
    } else {
      failed = true;
      if (run.reason instanceof RunFailedError) lines.push(...failureText(run.reason));
      else say(`  RUN FAILED: ${run.reason instanceof Error ? run.reason.message : String(run.reason)}`);
    }
  });
  return { lines, failed };
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
