/**
 * The Grafana dashboard that ships in config/grafana/ against what the daemon really exports.
 * A real daemon (the CLI as a child process) syncs from the simulator with faults that make
 * every metric family have samples (404s and malformed payloads park queue rows and fill the
 * quarantine, spurious 429s, a change event); /metrics is scraped all along. Then every
 * PromQL expression of the dashboard (panel targets and template variables) is taken apart:
 * each metric it names must have samples in the scrape, each label it matches on, groups by
 * or shows in a legend must be a label of those samples. A panel naming a metric the daemon
 * does not export (a typo, a renamed metric) fails here, not on an operator's screen.
 *
 * The PromQL is read by a small tokenizer rather than a full parser: the dashboard's
 * expressions are selectors, rate/increase, aggregations with `by`, histogram_quantile and
 * arithmetic, which it covers; an unknown function name fails the test rather than pass.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, opsGet, startCli, waitFor } from '../helpers/cli.js';
import { startHarness, type Harness } from '../helpers/harness.js';

const dashboardPath = resolve('config/grafana/staysync-dashboard.json');

// ------------------------------------------------------------------ the text exposition format

/** Sample name → the label names seen on its samples (over every scrape given). */
type Scrape = Map<string, Set<string>>;

/** Parses Prometheus text exposition (version 0.0.4) into sample names and their label names. */
function parseExposition(text: string, into: Scrape = new Map()): Scrape {
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    if (!name) throw new Error(`not a sample line: ${line}`);
    const labels = into.get(name) ?? new Set<string>();
    into.set(name, labels);
    let i = name.length;
    if (line[i] === '{') {
      i++;
      for (;;) {
        while (line[i] === ' ' || line[i] === ',') i++;
        if (line[i] === '}') break;
        const label = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i))?.[0];
        if (!label || line[i + label.length] !== '=' || line[i + label.length + 1] !== '"') throw new Error(`bad label at ${i} in: ${line}`);
        labels.add(label);
        i += label.length + 2;
        // The value: up to the closing quote, with \\, \" and \n escaped.
        while (i < line.length && line[i] !== '"') i += line[i] === '\\' ? 2 : 1;
        if (line[i] !== '"') throw new Error(`unterminated label value in: ${line}`);
        i++;
      }
      i++;
    }
    const value = line.slice(i).trim().split(/\s+/)[0];
    if (value === undefined || (Number.isNaN(Number(value.replace(/^\+Inf$/, 'Infinity').replace(/^-Inf$/, '-Infinity'))) && value !== 'NaN')) {
      throw new Error(`bad sample value in: ${line}`);
    }
  }
  return into;
}

// ------------------------------------------------------------------ PromQL

const aggregations = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
const functions = new Set([
  ...aggregations,
  ...'abs absent absent_over_time ceil changes clamp clamp_max clamp_min day_of_month day_of_week day_of_year days_in_month delta deriv exp floor histogram_avg histogram_count histogram_fraction histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters double_exponential_smoothing hour idelta increase irate label_join label_replace ln log2 log10 minute month predict_linear rate resets round scalar sgn sort sort_desc sort_by_label sort_by_label_desc sqrt time timestamp vector year avg_over_time min_over_time max_over_time sum_over_time count_over_time quantile_over_time stddev_over_time stdvar_over_time last_over_time present_over_time mad_over_time acos acosh asin asinh atan atanh cos cosh sin sinh tan tanh deg pi rad label_values'.split(
    ' ',
  ),
]);
const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'atan2']);
/** Labels Prometheus attaches to every series of a target when it scrapes: never in /metrics itself. */
const targetLabels = new Set(['job', 'instance']);

interface ExprUse {
  /** Metric names the expression selects. */
  metrics: string[];
  /** Label matchers: metric (or '' for a bare `{...}`) and the labels matched on. */
  matchers: { metric: string; labels: string[] }[];
  /** `by (...)` / `without (...)` clauses: the labels, and the metrics of the aggregated expression. */
  groupings: { labels: string[]; metrics: string[] }[];
  /** Labels of `on (...)` / `ignoring (...)` / `group_left (...)`: on some metric of the expression. */
  joins: string[];
  problems: string[];
}

function closingParen(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '(') depth++;
    else if (s[i] === ')' && --depth === 0) return i;
  }
  return -1;
}

function openingParen(s: string, close: number): number {
  let depth = 0;
  for (let i = close; i >= 0; i--) {
    if (s[i] === ')') depth++;
    else if (s[i] === '(' && --depth === 0) return i;
  }
  return -1;
}

const labelList = (inner: string) =>
  inner
    .split(',')
    .map((l) => l.trim())
    .filter(Boolean);

/** The metric names of an expression without strings, ranges, matchers and clauses. */
function bareMetrics(s: string, problems: string[]): string[] {
  const out: string[] = [];
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const id = m[0];
    const before = s[m.index - 1];
    // 0.95, 1e3, 5m (durations are gone with the ranges, but offsets keep theirs).
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    const call = /^\s*\(/.test(s.slice(m.index + id.length));
    if (call) {
      if (!functions.has(id)) problems.push(`unknown PromQL function ${id}()`);
      continue;
    }
    if (keywords.has(id.toLowerCase()) || functions.has(id)) continue;
    out.push(id);
  }
  return out;
}

/** Takes one PromQL expression apart (Grafana's $variables and $__ macros allowed). */
function analysePromql(expr: string): ExprUse {
  const problems: string[] = [];
  // Strings first (label values and regexes may hold anything), then Grafana's variables and ranges.
  let s = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""');
  s = s.replace(/\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?/g, '0');
  s = s.replace(/\[[^\]]*\]/g, '');
  let depth = 0;
  for (const c of s) {
    depth += c === '(' ? 1 : c === ')' ? -1 : 0;
    if (depth < 0) break;
  }
  if (depth !== 0 || (s.match(/\{/g)?.length ?? 0) !== (s.match(/\}/g)?.length ?? 0)) problems.push('unbalanced brackets');

  const matchers: ExprUse['matchers'] = [];
  s = s.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g, (_all, metric: string | undefined, inner: string) => {
    const labels: string[] = [];
    for (const part of inner
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      const m = /^([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*""$/.exec(part);
      if (m) labels.push(m[1]!);
      else problems.push(`not a label matcher: ${part}`);
    }
    matchers.push({ metric: metric ?? '', labels });
    return metric ? ` ${metric} ` : ' ';
  });

  const groupings: ExprUse['groupings'] = [];
  const joins: string[] = [];
  const clause = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
  for (const m of s.matchAll(clause)) {
    const labels = labelList(m[2]!);
    if (m[1] === 'by' || m[1] === 'without') {
      const start = m.index;
      const end = start + m[0].length;
      const prefix = /([a-zA-Z_]+)\s*$/.exec(s.slice(0, start))?.[1];
      let argument: string;
      if (prefix && aggregations.has(prefix)) {
        // sum by (l) (expr)
        const open = s.indexOf('(', end);
        argument = open >= 0 ? s.slice(open, closingParen(s, open) + 1) : '';
      } else {
        // sum (expr) by (l)
        const close = s.slice(0, start).trimEnd().length - 1;
        argument = s[close] === ')' ? s.slice(openingParen(s, close), close + 1) : '';
      }
      if (!argument) problems.push(`cannot find what ${m[0]} aggregates`);
      groupings.push({ labels, metrics: bareMetrics(argument.replace(clause, ' '), []) });
    } else joins.push(...labels);
  }
  const metrics = bareMetrics(s.replace(clause, ' '), problems);
  return { metrics: [...new Set(metrics)], matchers, groupings, joins, problems };
}

/** What a set of expressions needs that the scrape lacks: one sentence per problem. */
function checkAgainstScrape(exprs: { where: string; expr: string; legend?: string }[], scrape: Scrape): string[] {
  const issues: string[] = [];
  const has = (metric: string, label: string) => targetLabels.has(label) || (scrape.get(metric)?.has(label) ?? false);
  for (const { where, expr, legend } of exprs) {
    const use = analysePromql(expr);
    for (const p of use.problems) issues.push(`${where}: ${p} in ${expr}`);
    if (use.metrics.length === 0) issues.push(`${where}: names no metric: ${expr}`);
    for (const metric of use.metrics) if (!scrape.has(metric)) issues.push(`${where}: ${metric} is not exported by the daemon`);
    for (const { metric, labels } of use.matchers) {
      for (const label of labels) {
        if (metric === '' || !scrape.has(metric)) continue;
        if (!has(metric, label)) issues.push(`${where}: ${metric} has no label ${label}`);
      }
    }
    for (const g of use.groupings) {
      for (const label of g.labels)
        for (const metric of g.metrics)
          if (scrape.has(metric) && !has(metric, label)) issues.push(`${where}: groups ${metric} by ${label}, which it does not have`);
    }
    for (const label of use.joins) if (!use.metrics.some((m) => has(m, label))) issues.push(`${where}: joins on ${label}, which none of its metrics has`);
    for (const m of legend?.matchAll(/\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g) ?? []) {
      const label = m[1]!;
      // After an aggregation only its `by` labels are left.
      const grouped = use.groupings.length > 0 ? use.groupings.some((g) => g.labels.includes(label)) : use.metrics.some((metric) => has(metric, label));
      if (!grouped) issues.push(`${where}: legend {{${label}}} is not a label of the result of ${expr}`);
    }
  }
  return issues;
}

// ------------------------------------------------------------------ the dashboard

interface Target {
  refId?: string;
  expr?: string;
  legendFormat?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id?: number;
  type: string;
  title?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
  gridPos?: { x: number; y: number; w: number; h: number };
}
interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string }; datasource?: { uid?: string } }[] };
}

const loadDashboard = () => JSON.parse(readFileSync(dashboardPath, 'utf8')) as Dashboard;

/** Every panel, rows' collapsed panels included. */
const allPanels = (d: Dashboard): Panel[] => d.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

/** Every PromQL expression of the dashboard: panel targets and query variables (label_values(metric, label)). */
function dashboardExprs(d: Dashboard): { where: string; expr: string; legend?: string }[] {
  const out: { where: string; expr: string; legend?: string }[] = [];
  for (const p of allPanels(d))
    for (const t of p.targets ?? []) out.push({ where: `panel ${p.id} "${p.title}" ${t.refId}`, expr: t.expr ?? '', legend: t.legendFormat });
  for (const v of d.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const m = /^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$/.exec(q);
    if (!m) {
      out.push({ where: `variable ${v.name}`, expr: q });
      continue;
    }
    // label_values(selector, label): the selector as an expression, the label as a legend would show it.
    out.push({ where: `variable ${v.name}`, expr: m[1]!, legend: `{{${m[2]}}}` });
  }
  return out;
}

describe('Grafana dashboard', () => {
  it('is a well-formed dashboard: unique panel ids, the ${datasource} variable on every panel and target, sane layout', () => {
    const d = loadDashboard();
    expect(d.title).toBe('staysync');
    expect(d.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    const ds = d.templating.list.find((v) => v.name === 'datasource');
    expect(ds).toMatchObject({ type: 'datasource', query: 'prometheus' });
    // No data source uid of someone's Grafana: the dashboard imports anywhere.
    expect(readFileSync(dashboardPath, 'utf8')).not.toMatch(/"uid":\s*"(?!\$\{datasource\}|staysync")/);

    const panels = allPanels(d);
    const ids = panels.map((p) => p.id);
    expect(ids.every((id) => Number.isInteger(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const withQueries = panels.filter((p) => p.type !== 'row');
    expect(withQueries.length).toBeGreaterThan(20);
    for (const p of withQueries) {
      const where = `panel ${p.id} "${p.title}"`;
      expect(p.title, where).toBeTruthy();
      expect(p.datasource, where).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(p.targets?.length, where).toBeGreaterThan(0);
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, `${where}: refIds`).toBe(refIds.length);
      for (const t of p.targets!) {
        expect(t.datasource, `${where} ${t.refId}`).toEqual({ type: 'prometheus', uid: '${datasource}' });
        expect(t.expr?.trim(), `${where} ${t.refId}`).toBeTruthy();
      }
      const g = p.gridPos!;
      expect(g.x >= 0 && g.w > 0 && g.x + g.w <= 24 && g.h > 0 && g.y >= 0, `${where}: gridPos ${JSON.stringify(g)}`).toBe(true);
    }
    for (const v of d.templating.list.filter((v) => v.type === 'query')) expect(v.datasource?.uid, `variable ${v.name}`).toBe('${datasource}');
  });

  it('covers what an operator needs: readiness, latency by scope, 429s, queues and their oldest change per property, freshness and sweeps, the process', () => {
    const exprs = dashboardExprs(loadDashboard()).map((e) => e.expr);
    const uses = (re: RegExp) =>
      expect(
        exprs.some((e) => re.test(e)),
        String(re),
      ).toBe(true);
    for (const m of [
      'staysync_ready',
      'staysync_lease_held',
      'staysync_database_up',
      'staysync_provider_failures_total',
      'staysync_property_state',
      'staysync_quarantine_payloads',
    ])
      uses(new RegExp(`\\b${m}\\b`));
    uses(/histogram_quantile\(0\.5, sum by \(le, scope\) \(rate\(staysync_provider_request_duration_seconds_bucket/);
    uses(/histogram_quantile\(0\.95, sum by \(le, scope\) \(rate\(staysync_provider_request_duration_seconds_bucket/);
    uses(/staysync_provider_request_duration_seconds_count\{[^}]*status="429"/);
    for (const q of ['detail_queue', 'pms_queue']) {
      uses(new RegExp(`by \\(property_id\\) \\(staysync_${q}_pending\\b`));
      uses(new RegExp(`by \\(property_id\\) \\(staysync_${q}_oldest_pending_age_seconds\\b`));
    }
    uses(/staysync_webhook_event_latency_seconds_bucket/);
    uses(/histogram_quantile\(0\.5, sum by \(le, property_id\) \(rate\(staysync_change_lag_seconds_bucket/);
    for (const m of [
      'staysync_last_poll_timestamp_seconds',
      'staysync_newest_change_age_seconds',
      'staysync_sweep_late_changes_total',
      'staysync_sweep_last_finished_timestamp_seconds',
    ])
      uses(new RegExp(`\\b${m}\\b`));
    for (const m of ['process_resident_memory_bytes', 'process_cpu_user_seconds_total', 'nodejs_eventloop_lag_p99_seconds']) uses(new RegExp(`\\b${m}\\b`));
  });

  it('the checker itself: finds metrics and labels, and reports what the scrape lacks', () => {
    const use = analysePromql(
      'histogram_quantile(0.95, sum by (le, scope) (rate(staysync_x_bucket{job=~"$job", status="429"}[$__rate_interval]))) / on (scope) group_left sum(y) by (scope) + time()',
    );
    expect(use.metrics).toEqual(['staysync_x_bucket', 'y']);
    expect(use.matchers).toEqual([{ metric: 'staysync_x_bucket', labels: ['job', 'status'] }]);
    expect(use.groupings).toEqual([
      { labels: ['le', 'scope'], metrics: ['staysync_x_bucket'] },
      { labels: ['scope'], metrics: ['y'] },
    ]);
    expect(use.joins).toEqual(['scope']);
    expect(analysePromql('rat(x[5m])').problems).toEqual(['unknown PromQL function rat()']);
    expect(analysePromql('sum(rate(x[5m])').problems).toEqual(['unbalanced brackets']);

    const scrape = parseExposition(
      '# HELP a_total x\n# TYPE a_total counter\na_total{cause="dns",b="x,}\\"y"} 3\nh_bucket{le="+Inf",scope="token"} 1\nh_count{scope="token"} 1\n',
    );
    expect(scrape).toEqual(
      new Map([
        ['a_total', new Set(['cause', 'b'])],
        ['h_bucket', new Set(['le', 'scope'])],
        ['h_count', new Set(['scope'])],
      ]),
    );
    expect(checkAgainstScrape([{ where: 'ok', expr: 'sum by (cause) (rate(a_total{instance="i"}[5m]))', legend: '{{cause}}' }], scrape)).toEqual([]);
    expect(checkAgainstScrape([{ where: 'p', expr: 'rate(staysync_not_exported_total[5m])' }], scrape)).toEqual([
      'p: staysync_not_exported_total is not exported by the daemon',
    ]);
    expect(checkAgainstScrape([{ where: 'p', expr: 'sum by (host) (a_total{scope="x"})', legend: '{{state}}' }], scrape)).toEqual([
      'p: a_total has no label scope',
      'p: groups a_total by host, which it does not have',
      'p: legend {{state}} is not a label of the result of sum by (host) (a_total{scope="x"})',
    ]);
  });
});

describe('Grafana dashboard against a live /metrics scrape', () => {
  let h: Harness | undefined;
  let stopDaemon: (() => Promise<unknown>) | undefined;
  afterEach(async () => {
    await stopDaemon?.();
    stopDaemon = undefined;
    await h?.close();
    h = undefined;
  });

  it('every metric and label of every panel is in what a syncing daemon exports', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 30 },
          { id: '500200', bookingCount: 20 },
        ],
      },
    });
    const sim = h.sim;
    // Faults that leave rows behind, so that every family has samples: a booking whose details
    // answer 404 (parked not_found), one whose details fail validation (quarantine), a PMS
    // reservation that fails validation (parked in the PMS queue), and a few 429s.
    sim.faults.notFoundBookingNumbers.add(sim.bookings('500100')[0]!.number);
    sim.faults.malformedBookingNumbers.add(sim.bookings('500200')[0]!.number);
    const brokenPms = sim.pmsReservations('500100')[0]!.number;
    sim.faults.rewriteBody = (path, body) =>
      path === `/api/pms/v2/properties/500100/reservations/${brokenPms}` ? { ...(body as object), reservation: 'n/a' } : undefined;
    sim.faults.spurious429Rate = 0.05;

    const port = await freePort();
    const hooks = await freePort();
    // A sweep every few seconds, so that its families have samples once a late write is found.
    const sweep = { enabled: true, everyMs: 3_000, lookbackMs: 3_600_000 };
    const webhooks = { enabled: true, host: '127.0.0.1', port: hooks };
    const daemon = startCli(['run'], daemonEnv(h, { allStreams: true, env: { STAYSYNC_OPS_PORT: String(port) }, config: { sync: { sweep }, webhooks } }));
    stopDaemon = async () => {
      daemon.child.kill('SIGTERM');
      await daemon.done;
    };
    await waitFor('the daemon to be ready', async () => (await opsGet(port, '/readyz')).status === 200, 30_000);

    // Scrape all along: a gauge of a queue that drains has samples only while it holds rows.
    const scrape: Scrape = new Map();
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        const res = await opsGet(port, '/metrics');
        if (res.status === 200) parseExposition(res.body, scrape);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      const count = async (sql: string) => Number((await h!.sql<{ n: string }>(sql))[0]!.n);
      await waitFor('the first PMS sync', async () => (await count('SELECT count(*) AS n FROM pms_reservations')) > 0, 45_000);
      const number = sim.pmsReservations('500200')[0]!.number;
      const res = await fetch(`http://127.0.0.1:${hooks}/webhooks/provider`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([
          {
            eventId: crypto.randomUUID(),
            eventType: 'webpms:check_out',
            creationTime: new Date().toISOString(),
            payload: { BookingNumber: number, PropertyId: '500200' },
          },
        ]),
      });
      expect(res.status).toBe(200);
      // Once the lists are caught up: a fresh change (the change-lag histogram) and a write that
      // becomes visible late (found by a sweep).
      await waitFor(
        'the booking lists caught up',
        async () => (await count(`SELECT count(*) AS n FROM sync_cursors WHERE stream = 'booking_summaries' AND caught_up`)) === 2,
        45_000,
      );
      // The fresh change moves 500100's continueToken to now: the late write is then behind it.
      // And the backfill's details written: a change to a booking whose details still wait in the
      // queue is fetched as that backfill row, and a first write of a booking records no lag. Under
      // a loaded CI the lists were caught up long before the details (seen: the changed booking's
      // first version was its changed one, and no lag was recorded). The 404 and the invalid
      // booking end parked, not pending.
      await waitFor(
        'the details of the backfill written',
        async () => (await count(`SELECT count(*) AS n FROM booking_detail_queue WHERE state = 'pending'`)) === 0,
        45_000,
      );
      // A chosen booking, not a random one: a random change can land on the booking whose details
      // answer 404 (bookings[0]), which writes nothing and records no lag.
      sim.amendBooking('500100', sim.bookings('500100')[1]!.number, 'reprice');
      await waitFor('a fresh change mirrored', async () => (await count('SELECT count(*) AS n FROM change_lags')) > 0, 45_000);
      sim.mutateLate({ propertyId: '500100', count: 1, lagMs: 60_000 });
      await waitFor('a late change found by a sweep', async () => (await count('SELECT coalesce(sum(late_changes), 0) AS n FROM booking_sweeps')) > 0, 45_000);
      await waitFor(
        'the parked rows, the quarantine and the change event',
        async () =>
          (await count(`SELECT count(*) AS n FROM booking_detail_queue WHERE state = 'not_found'`)) > 0 &&
          (await count(`SELECT count(*) AS n FROM booking_detail_queue WHERE state = 'quarantined'`)) > 0 &&
          (await count(`SELECT count(*) AS n FROM pms_reservation_queue WHERE state = 'quarantined'`)) > 0 &&
          (await count(`SELECT count(*) AS n FROM webhook_events WHERE state = 'processed'`)) === 1,
        45_000,
      );
      // The reconciliation gauge needs the PMS statistics, whose refresh comes after the content,
      // rooms, companies and accommodation refreshes at start (later on a loaded machine).
      // Its cursor is written once every window of the horizon is.
      await waitFor(
        'the daily occupancy refreshed',
        async () => (await count(`SELECT count(*) AS n FROM sync_cursors WHERE stream = 'daily_occupancy' AND last_poll_at IS NOT NULL`)) > 0,
        45_000,
      );
      // Two more scrapes after the table gauges' one-second cache.
      await new Promise((r) => setTimeout(r, 2500));
    } finally {
      scraping = false;
      await scraper;
    }

    expect(scrape.get('staysync_provider_request_duration_seconds_bucket')).toEqual(new Set(['le', 'scope', 'status']));
    const issues = checkAgainstScrape(dashboardExprs(loadDashboard()), scrape);
    expect(issues).toEqual([]);
  });
});
