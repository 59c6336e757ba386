/**
 * Scenario H (reporting and history): a mirror of --reporting-bookings bookings (1,000,000 by
 * default) over --reporting-properties properties (100), about three versions each, stay dates
 * over five years, and the reporting views timed on it.
 *
 * The load goes through no HTTP and no repository: at three million versions the daemon's own
 * write path (one statement per booking) would take hours on this machine. The rows are
 * generated in SQL (generate_series, seeded random()), as the repositories write them for
 * bookings made, re-priced, moved, cancelled and reinstated (one room stay each, the same rate
 * every night of a version):
 *
 *   version 1  created      Active, rate r, nights A .. A+n-1, room type t
 *   version 2  price        rate r + 15
 *   version 3  dates        the stay moved 1 to 3 days later (the nights it keeps keep their rows)
 *   version 4  cancelled    every night leaves the books
 *   version 5  reinstated   back on the books, in the next room type (room_type)
 *
 * a booking having 1 to 5 of them (3 on average). Written: bookings, booking_room_stays and
 * booking_daily_rates (its current version), booking_versions, booking_night_history,
 * nightly_facts (counted from the current versions' nights, not from the history rows), and
 * properties (content, with time zones) and pms_rooms (rooms available). The indexes of the
 * loaded tables are dropped for the load and created again from their own definitions. No
 * day-close snapshots (otb_snapshot_*): pace reads history, its slower source.
 *
 * Before anything is timed, the data is checked: nightly_facts equals the open rows of
 * booking_night_history, on_the_books(now()) equals daily_kpis, and for a sample of bookings
 * the versions and night rows equal what src/mapping/history.ts (planHistory, the plan the
 * repositories write) makes of the same versions in turn.
 *
 * Each query is timed by EXPLAIN (ANALYZE, TIMING OFF): execution plus planning time, the
 * median of --reporting-runs runs after two warm-up runs; the wall time of the query itself
 * from this client (rows transferred) is printed beside it.
 *
 * The same queries are timed as reader roles scoped to properties (grant-reader --properties,
 * row-level security: src/store/reader-policy.ts), each with the queried property among its
 * own: a hotel's login (1 of --reporting-properties), a customer's (2) and a group's (half),
 * in turn with the owner's runs (the daemon's role, which row-level security exempts), and
 * each one's median is printed with its ratio to the owner's: the goal is at most 1.10.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Config } from '../../src/config/config.js';
import { planHistory, type BookingVersion } from '../../src/mapping/history.js';
import type { NightFact, OpenNight, StoredHistory } from '../../src/store/schema.js';
import { createLogger } from '../../src/util/log.js';
import { openDatabase } from '../../src/store/database.js';
import { grantReader } from '../../src/store/reader-role.js';
import type { Line } from './report.js';
import { withPg } from './run.js';
import { openSqlMirror } from './sql-mirror.js';
import { quantile, timed } from './stats.js';

export const REPORTING_DEFAULTS = { bookings: 1_000_000, properties: 100, runs: 7, warmupRuns: 2, sample: 300 };

/** The goals of the issue, in ms; and the most a scoped reader's median may be of the owner's. */
export const REPORTING_GOALS = { kpisOne: 20, kpisAll: 300, otb: 100, pace: 300, scopedRatio: 1.1 };

export interface ReportingBenchOptions {
  bookings: number;
  properties: number;
  runs: number;
  databaseUrl: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
  /** Keep the schema afterwards (for looking at plans by hand); its name is printed. */
  keep?: boolean;
}

export interface Timing {
  label: string;
  sql: string;
  /** EXPLAIN ANALYZE execution + planning time of each timed run, ms. */
  explainMs: number[];
  /** Wall time of the plain query from this client, ms. */
  wallMs: number[];
  rows: number;
  goalMs: number | undefined;
  /** The same query as each scoped reader role (REPORTING_SCOPES), timed in turn with the owner's runs. */
  scoped: { scope: string; explainMs: number[]; wallMs: number[]; rows: number }[];
}

/**
 * The reader roles scenario H times besides the owner, each scoped to the queried property and
 * the next ones: a hotel's login, a customer's two hotels (as `--properties 1024,7291`), and a
 * group's half of the properties.
 */
export const REPORTING_SCOPES: readonly { scope: string; properties: (all: number) => number }[] = [
  { scope: 'a hotel', properties: () => 1 },
  { scope: 'a customer', properties: () => 2 },
  { scope: 'a group', properties: (all) => Math.max(1, Math.round(all / 2)) },
];

export interface TableSize {
  table: string;
  rows: number;
  heapBytes: number;
  indexBytes: number;
  totalBytes: number;
}

export interface ReportingBenchResult {
  schema: string;
  bookings: number;
  versions: number;
  nightRows: number;
  openNightRows: number;
  factRows: number;
  loadMs: number;
  /** Each step of the load, ms. */
  loadSteps: { step: string; ms: number }[];
  checks: { label: string; ok: boolean; detail: string }[];
  timings: Timing[];
  sizes: TableSize[];
  /** The stay dates the queries read. */
  month: string;
  otbFrom: string;
  paceFrom: string;
  asOf: string;
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The history tables and those the views read besides, whose indexes the load drops and makes again. */
const LOADED_TABLES = ['bookings', 'booking_room_stays', 'booking_daily_rates', 'booking_versions', 'booking_night_history', 'nightly_facts'];

/** The generated bookings: one row each, with the instants of its versions (t1 .. t5, NULL past its last). */
function planTableSql(bookings: number, properties: number): string {
  return `
CREATE UNLOGGED TABLE _bench_bookings AS
WITH r AS (
  SELECT n, random() AS r1, random() AS r2, random() AS r3, random() AS r4, random() AS r5, random() AS r6, random() AS r7, random() AS r8
    FROM generate_series(1, ${bookings}) AS n
), b AS (
  SELECT n,
         (500100 + (n % ${properties}) * 100)::text AS property_id,
         'H' || lpad(n::text, 9, '0') AS number,
         CASE WHEN (n % ${properties}) % 10 = 9 THEN 'USD' ELSE 'EUR' END AS currency,
         date_trunc('second', timestamptz '2022-01-01 00:00+00' + (now() - interval '1 day' - timestamptz '2022-01-01 00:00+00') * r1) AS created_at,
         floor(300 * r2 * r2)::int AS lead,
         1 + floor(4 * r3)::int AS nights,
         1 + floor(3 * r7)::int AS shift,
         (60 + floor(200 * r4))::numeric(12, 2) AS rate,
         floor(4 * r5)::int AS rt,
         1 + floor(5 * r6)::int AS k,
         CASE floor(4 * r8)::int WHEN 0 THEN 'BGC' WHEN 1 THEN 'EXP' WHEN 2 THEN 'HRS' END AS source_code
    FROM r
), s AS (
  SELECT b.*, (b.created_at AT TIME ZONE 'UTC')::date + b.lead AS arrival,
         -- Versions spread from the creation to the arrival (at most until yesterday), a second apart at least.
         greatest(0, floor(extract(epoch FROM least(((b.created_at AT TIME ZONE 'UTC')::date + b.lead + time '14:00') AT TIME ZONE 'UTC', now() - interval '1 day') - b.created_at)))::bigint AS span
    FROM b
)
SELECT s.n, s.property_id, s.number, s.currency, s.created_at, s.arrival, s.nights, s.shift, s.rate, s.rate + 15 AS rate2,
       round(s.rate * 1.1, 2) AS gross, round((s.rate + 15) * 1.1, 2) AS gross2,
       'RT' || s.rt AS rt, 'RT' || ((s.rt + 1) % 4) AS rt2, s.k, s.source_code,
       ARRAY(SELECT s.created_at + make_interval(secs => floor(s.span * (j - 1) / s.k) + (j - 1)) FROM generate_series(1, s.k) AS j ORDER BY j) AS t
  FROM s`;
}

/** Version `j` (an SQL expression) of the generated booking `b`: its figures. */
const versionColumns = (j: string) => `
  CASE WHEN ${j} = 1 THEN b.rate ELSE b.rate2 END AS rate,
  CASE WHEN ${j} = 1 THEN b.gross ELSE b.gross2 END AS gross,
  b.arrival + CASE WHEN ${j} >= 3 THEN b.shift ELSE 0 END AS arrival,
  CASE WHEN ${j} = 5 THEN b.rt2 ELSE b.rt END AS rt,
  CASE WHEN ${j} = 4 THEN 'Cancelled' ELSE 'Active' END AS status,
  CASE WHEN ${j} = 4 THEN b.t[4] END AS cancelled_at,
  CASE ${j} WHEN 1 THEN ARRAY['created'] WHEN 2 THEN ARRAY['price'] WHEN 3 THEN ARRAY['dates'] WHEN 4 THEN ARRAY['cancelled']
         ELSE ARRAY['reinstated', 'room_type'] END AS changes`;

const loadSteps: { step: string; sql: string }[] = [
  {
    step: 'booking_versions',
    sql: `
INSERT INTO booking_versions (property_id, number, version, valid_from, valid_to, modified_at, reconstructed, fetched_at, content_hash,
  status, created_at, cancelled_at, currency_code, arrival_date, departure_date, rooms, room_nights, room_type_ids,
  room_revenue_net, room_revenue_gross, total_net, total_gross, changes)
SELECT b.property_id, b.number, j, b.t[j], b.t[j + 1], b.t[j], false, b.t[j] + interval '3 seconds',
       encode(sha256(convert_to(b.number || '/' || j, 'UTF8')), 'hex'),
       v.status, b.created_at, v.cancelled_at, b.currency, v.arrival, v.arrival + b.nights, 1, b.nights, ARRAY[v.rt],
       v.rate * b.nights, v.gross * b.nights, v.rate * b.nights, v.gross * b.nights, v.changes
  FROM _bench_bookings b
  CROSS JOIN LATERAL generate_series(1, b.k) AS j
  CROSS JOIN LATERAL (SELECT ${versionColumns('j')}) v`,
  },
  {
    // The rows planHistory gives for these versions: a re-price closes every night and opens it
    // again; a move closes the nights it leaves and opens those it adds (the others keep their
    // rows); a cancellation closes every open night; a reinstatement in another room type opens them.
    step: 'booking_night_history',
    sql: `
INSERT INTO booking_night_history (property_id, number, stay_index, stay_date, currency_code, room_type_id, net_amount, gross_amount,
  valid_from, valid_to, reconstructed_until)
SELECT b.property_id, b.number, 0, x.stay_date, b.currency, x.rt, x.rate, x.gross, x.valid_from, x.valid_to, NULL
  FROM _bench_bookings b
  CROSS JOIN LATERAL generate_series(0, b.nights - 1) AS i
  CROSS JOIN LATERAL (
    SELECT b.arrival + i AS stay_date, b.rt, b.rate, b.gross, b.t[1] AS valid_from, b.t[2] AS valid_to
    UNION ALL
    SELECT b.arrival + i, b.rt, b.rate2, b.gross2, b.t[2],
           CASE WHEN b.k = 2 THEN NULL WHEN i >= b.shift THEN b.t[4] ELSE b.t[3] END
     WHERE b.k >= 2
    UNION ALL
    SELECT b.arrival + b.shift + i, b.rt, b.rate2, b.gross2, b.t[3], b.t[4]
     WHERE b.k >= 3 AND i >= b.nights - b.shift
    UNION ALL
    SELECT b.arrival + b.shift + i, b.rt2, b.rate2, b.gross2, b.t[5], NULL
     WHERE b.k = 5
  ) x`,
  },
  {
    step: 'bookings',
    sql: `
INSERT INTO bookings (property_id, number, status, created_at, modified_at, fetched_at, currency_code, arrival_at, departure_at,
  room_stay_count, price_before_tax, price_after_tax, tax_amount, total_prepaid, cancelled_at, cancellation_penalty, source_type,
  source_code, customer_first_name, customer_last_name, raw)
SELECT b.property_id, b.number, v.status, b.created_at, b.t[b.k], b.t[b.k] + interval '3 seconds', b.currency,
       v.arrival + time '15:00', v.arrival + b.nights + time '11:00', 1, v.rate * b.nights, v.gross * b.nights,
       (v.gross - v.rate) * b.nights, 0, v.cancelled_at, CASE WHEN v.status = 'Cancelled' THEN v.rate END,
       CASE WHEN b.source_code IS NULL THEN 'BookingEngine' ELSE 'Channel' END, b.source_code, 'Guest', 'Bench ' || b.n,
       jsonb_build_object('number', b.number, 'propertyId', b.property_id, 'status', v.status, 'currencyCode', b.currency)
  FROM _bench_bookings b
  CROSS JOIN LATERAL (SELECT ${versionColumns('b.k')}) v`,
  },
  {
    step: 'booking_room_stays',
    sql: `
INSERT INTO booking_room_stays (property_id, number, stay_index, provider_index, arrival_at, departure_at, room_type_id, rate_plan_id,
  adult_count, price_before_tax, price_after_tax, tax_amount)
SELECT b.property_id, b.number, 0, 0, v.arrival + time '15:00', v.arrival + b.nights + time '11:00', v.rt, 'RP1', 2,
       v.rate * b.nights, v.gross * b.nights, (v.gross - v.rate) * b.nights
  FROM _bench_bookings b
  CROSS JOIN LATERAL (SELECT ${versionColumns('b.k')}) v`,
  },
  {
    step: 'booking_daily_rates',
    sql: `
INSERT INTO booking_daily_rates (property_id, number, stay_index, position, stay_date, rate_plan_id, price_before_tax, gross_amount)
SELECT b.property_id, b.number, 0, i, v.arrival + i, 'RP1', v.rate, v.gross
  FROM _bench_bookings b
  CROSS JOIN LATERAL (SELECT ${versionColumns('b.k')}) v
  CROSS JOIN LATERAL generate_series(0, b.nights - 1) AS i`,
  },
  {
    // The current books from the current versions' nights (room_nights not cancelled), not from
    // booking_night_history: the check below compares the two.
    step: 'nightly_facts',
    sql: `
INSERT INTO nightly_facts (property_id, stay_date, currency_code, rooms_sold, complimentary_rooms, room_revenue_net, room_revenue_gross)
SELECT r.property_id, r.stay_date, b.currency_code, count(*), count(*) FILTER (WHERE r.price_before_tax = 0),
       sum(r.price_before_tax), sum(r.gross_amount)
  FROM booking_daily_rates r
  JOIN bookings b ON b.property_id = r.property_id AND b.number = r.number
 WHERE b.status <> 'Cancelled'
 GROUP BY r.property_id, r.stay_date, b.currency_code`,
  },
];

/** Content and rooms: a time zone per property (so local dates are not UTC dates), 40 rooms each. */
function contentSql(properties: number): string {
  return `
INSERT INTO properties (property_id, name, currency, time_zone, raw, content_hash)
SELECT (500100 + p * 100)::text, 'Bench hotel ' || p, CASE WHEN p % 10 = 9 THEN 'USD' ELSE 'EUR' END,
       (ARRAY['Europe/Berlin', 'Europe/London', 'America/New_York', 'Asia/Tokyo', 'UTC'])[1 + p % 5], '{}'::jsonb, 'bench'
  FROM generate_series(0, ${properties - 1}) AS p;
INSERT INTO pms_rooms (property_id, room_id, display_name, room_type_id, raw, content_hash)
SELECT (500100 + p * 100)::text, 'R' || r, (100 + r)::text, 'RT' || (r % 4), '{}'::jsonb, 'bench'
  FROM generate_series(0, ${properties - 1}) AS p, generate_series(1, 40) AS r`;
}

const median = (xs: readonly number[]) => quantile(xs, 0.5);

export async function runReportingBench(opts: ReportingBenchOptions): Promise<ReportingBenchResult> {
  const say = opts.onProgress ?? (() => undefined);
  const mirror = await openSqlMirror({ databaseUrl: opts.databaseUrl, signal: opts.signal, name: 'staysync-bench-reporting' });
  const { schema, reportingSchema, config, client: c } = mirror;
  try {
    await c.query(`SET TimeZone TO 'UTC'`);
    await c.query(`SET synchronous_commit TO off`);

    // ---- load ----
    const steps: { step: string; ms: number }[] = [];
    const step = async (name: string, text: string) => {
      if (opts.signal?.aborted) throw new Error('interrupted');
      say(`scenario H: loading ${name}`);
      const { ms } = await timed(() => c.query(text));
      steps.push({ step: name, ms });
    };
    const loadStart = performance.now();
    await c.query(`SET work_mem TO '256MB'`);
    await c.query(`SET maintenance_work_mem TO '1GB'`);
    // The loaded tables' indexes (not those of constraints), to drop for the load and make again.
    const indexes = await c.query<{ name: string; def: string }>(
      `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
        WHERE i.schemaname = $1 AND i.tablename = ANY($2)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
      [schema, LOADED_TABLES],
    );
    for (const i of indexes.rows) await c.query(`DROP INDEX ${ident(schema)}.${ident(i.name)}`);
    await c.query('SELECT setseed(0.42)');
    await step('plan of the bookings', planTableSql(opts.bookings, opts.properties));
    await step('content and rooms', contentSql(opts.properties));
    for (const s of loadSteps) await step(s.step, s.sql);
    await step('indexes', indexes.rows.map((i) => `${i.def};`).join('\n'));
    await c.query('DROP TABLE _bench_bookings');
    await step('vacuum analyze', `VACUUM (ANALYZE) ${[...LOADED_TABLES, 'properties', 'pms_rooms'].join(', ')}`);
    const loadMs = performance.now() - loadStart;
    await c.query('RESET work_mem');
    await c.query('RESET maintenance_work_mem');

    const counts = (
      await c.query<{ b: string; v: string; h: string; o: string; f: string }>(
        `SELECT (SELECT count(*) FROM bookings) AS b, (SELECT count(*) FROM booking_versions) AS v,
                (SELECT count(*) FROM booking_night_history) AS h, (SELECT count(*) FROM booking_night_history WHERE valid_to IS NULL) AS o,
                (SELECT count(*) FROM nightly_facts) AS f`,
      )
    ).rows[0]!;

    // ---- checks ----
    say('scenario H: checking the data');
    const checks: ReportingBenchResult['checks'] = [];
    const factsDiff = (
      await c.query<{ n: string }>(`
      WITH open AS (
        SELECT property_id, stay_date, currency_code, count(*) AS rooms_sold, count(*) FILTER (WHERE net_amount = 0) AS complimentary_rooms,
               COALESCE(sum(net_amount), 0) AS room_revenue_net, COALESCE(sum(gross_amount), 0) AS room_revenue_gross
          FROM booking_night_history WHERE valid_to IS NULL GROUP BY 1, 2, 3),
      facts AS (SELECT property_id, stay_date, currency_code, rooms_sold, complimentary_rooms, room_revenue_net, room_revenue_gross
                  FROM nightly_facts WHERE rooms_sold <> 0)
      SELECT (SELECT count(*) FROM (SELECT * FROM open EXCEPT SELECT * FROM facts) a) + (SELECT count(*) FROM (SELECT * FROM facts EXCEPT SELECT * FROM open) b) AS n`)
    ).rows[0]!.n;
    checks.push({
      label: 'nightly_facts = open nights',
      ok: factsDiff === '0',
      detail: `${factsDiff} rows differ between nightly_facts (from the current versions' nights) and the open rows of booking_night_history`,
    });
    const otbDiff = (
      await c.query<{ n: string }>(`
      WITH otb AS (SELECT property_id, stay_date, currency_code, room_nights, room_revenue_net, room_revenue_gross
                     FROM ${ident(reportingSchema)}.on_the_books(now()) WHERE room_nights > 0),
      kpis AS (SELECT property_id, stay_date, currency_code, rooms_sold, room_revenue_net, room_revenue_gross FROM ${ident(reportingSchema)}.daily_kpis)
      SELECT (SELECT count(*) FROM (SELECT * FROM otb EXCEPT SELECT * FROM kpis) a) + (SELECT count(*) FROM (SELECT * FROM kpis EXCEPT SELECT * FROM otb) b) AS n`)
    ).rows[0]!.n;
    checks.push({ label: 'on_the_books(now()) = daily_kpis', ok: otbDiff === '0', detail: `${otbDiff} rows differ, every property and night` });
    checks.push(await checkSample(c, REPORTING_DEFAULTS.sample));

    // ---- timings ----
    const today = (await c.query<{ d: string }>(`SELECT current_date::text AS d`)).rows[0]!.d;
    const month = `${today.slice(0, 7)}-01`;
    const nextMonth = (await c.query<{ d: string }>(`SELECT (date '${month}' + interval '1 month')::date::text AS d`)).rows[0]!.d;
    const asOf = (await c.query<{ t: string }>(`SELECT (now() - interval '30 days')::timestamptz(0)::text AS t`)).rows[0]!.t;
    const otbFrom = asOf.slice(0, 10);
    const paceFrom = (await c.query<{ d: string }>(`SELECT (current_date - 365)::text AS d`)).rows[0]!.d;
    const R = ident(reportingSchema);
    const one = "'500100'";
    const queries: { label: string; sql: string; goalMs: number | undefined }[] = [
      {
        label: 'daily_kpis, 1 property',
        sql: `SELECT * FROM ${R}.daily_kpis WHERE property_id = ${one} AND stay_date >= '${month}' AND stay_date < '${nextMonth}'`,
        goalMs: REPORTING_GOALS.kpisOne,
      },
      {
        label: `daily_kpis, ${opts.properties} properties`,
        sql: `SELECT * FROM ${R}.daily_kpis WHERE stay_date >= '${month}' AND stay_date < '${nextMonth}'`,
        goalMs: REPORTING_GOALS.kpisAll,
      },
      {
        label: 'on_the_books, 365 nights',
        sql: `SELECT * FROM ${R}.on_the_books('${asOf}') WHERE property_id = ${one} AND stay_date >= '${otbFrom}' AND stay_date < date '${otbFrom}' + 365`,
        goalMs: REPORTING_GOALS.otb,
      },
      {
        label: 'pace, 1 year',
        sql: `SELECT * FROM ${R}.pace WHERE property_id = ${one} AND stay_date >= '${paceFrom}' AND stay_date < current_date`,
        goalMs: REPORTING_GOALS.pace,
      },
      {
        label: 'channel_performance',
        sql: `SELECT * FROM ${R}.channel_performance WHERE property_id = ${one}`,
        goalMs: undefined,
      },
    ];
    // The scoped readers, made as grant-reader makes them: the queried property, with others.
    say('scenario H: granting the scoped reader roles');
    const readers = await scopedReaders(config, opts, schema);
    const timings: Timing[] = [];
    try {
      for (const q of queries) {
        if (opts.signal?.aborted) throw new Error('interrupted');
        say(`scenario H: timing ${q.label}`);
        // The owner and each reader in turn, run after run, each round starting one further on: a
        // drift of the machine, or a cost of coming right after another's run, meets all alike.
        const runners = [{ scope: 'owner', client: c }, ...readers];
        const runs = runners.map(() => ({ explainMs: [] as number[], wallMs: [] as number[], rows: 0 }));
        for (let i = 0; i < REPORTING_DEFAULTS.warmupRuns + opts.runs; i++) {
          for (let j = 0; j < runners.length; j++) {
            const k = (i + j) % runners.length;
            const r = runners[k]!;
            const plan = await r.client.query<{ 'QUERY PLAN': [{ 'Planning Time': number; 'Execution Time': number }] }>(
              `EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ${q.sql}`,
            );
            const p = plan.rows[0]!['QUERY PLAN'][0];
            const wall = await timed(() => r.client.query(q.sql));
            runs[k]!.rows = wall.value.rowCount ?? 0;
            if (i < REPORTING_DEFAULTS.warmupRuns) continue;
            runs[k]!.explainMs.push(p['Planning Time'] + p['Execution Time']);
            runs[k]!.wallMs.push(wall.ms);
          }
        }
        const [owner, ...scoped] = runs;
        timings.push({ ...q, ...owner!, scoped: scoped.map((x, k) => ({ scope: readers[k]!.scope, ...x })) });
      }
    } finally {
      for (const r of readers) await r.client.end().catch(() => undefined);
      await withPg(opts.databaseUrl, async (x) => {
        for (const r of readers) {
          await x.query(`DROP OWNED BY ${ident(r.role)}`).catch(() => undefined);
          await x.query(`DROP ROLE IF EXISTS ${ident(r.role)}`).catch(() => undefined);
        }
      });
    }

    // ---- storage ----
    const rowsOf: Record<string, string> = { booking_versions: counts.v, booking_night_history: counts.h, nightly_facts: counts.f };
    const sizes = await c.query<{ t: string; heap: string; idx: string; total: string }>(
      `SELECT t, pg_table_size(format('%I.%I', $1::text, t)::regclass) AS heap, pg_indexes_size(format('%I.%I', $1::text, t)::regclass) AS idx,
              pg_total_relation_size(format('%I.%I', $1::text, t)::regclass) AS total
         FROM unnest($2::text[]) AS t`,
      [schema, ['booking_versions', 'booking_night_history', 'nightly_facts']],
    );
    return {
      schema,
      bookings: Number(counts.b),
      versions: Number(counts.v),
      nightRows: Number(counts.h),
      openNightRows: Number(counts.o),
      factRows: Number(counts.f),
      loadMs,
      loadSteps: steps,
      checks,
      timings,
      sizes: sizes.rows.map((r) => ({
        table: r.t,
        rows: Number(rowsOf[r.t]),
        heapBytes: Number(r.heap),
        indexBytes: Number(r.idx),
        totalBytes: Number(r.total),
      })),
      month,
      otbFrom,
      paceFrom,
      asOf,
    };
  } finally {
    await mirror.close(opts.keep);
  }
}

/**
 * The reader roles of REPORTING_SCOPES, granted with grant-reader's own code, each connected
 * with its password (as the owner's client: UTC).
 */
async function scopedReaders(
  config: Config,
  opts: ReportingBenchOptions,
  schema: string,
): Promise<{ scope: string; role: string; properties: string[]; client: pg.Client }[]> {
  const all = Array.from({ length: opts.properties }, (_, p) => String(500100 + p * 100));
  const handle = await openDatabase(config, createLogger('warn'));
  const made: { scope: string; role: string; properties: string[]; client: pg.Client }[] = [];
  try {
    for (const { scope, properties: count } of REPORTING_SCOPES) {
      const role = `bench_reader_${randomBytes(4).toString('hex')}`;
      const password = randomBytes(18).toString('base64url');
      const properties = all.slice(0, Math.min(all.length, count(all.length)));
      await grantReader(handle.db, { role, password, schema, reportingSchema: config.database.reportingSchema, properties });
      const u = new URL(opts.databaseUrl);
      u.username = role;
      u.password = password;
      const client = new pg.Client({ connectionString: u.toString(), application_name: 'staysync-bench-reporting' });
      made.push({ scope: `${scope}, ${properties.length} ${properties.length === 1 ? 'property' : 'properties'}`, role, properties, client });
      await client.connect();
      await client.query(`SET TimeZone TO 'UTC'`);
    }
    return made;
  } catch (err) {
    for (const m of made) await m.client.end().catch(() => undefined);
    throw err;
  } finally {
    await handle.close();
  }
}

/**
 * A sample of bookings: their versions handed to planHistory one after the other, as the
 * repositories do write by write (the stored history being what the plans before wrote), and
 * the versions' changes and the night rows compared with what the SQL load wrote.
 */
async function checkSample(c: pg.Client, size: number): Promise<{ label: string; ok: boolean; detail: string }> {
  const iso = (col: string) => `to_char(${col}, 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`;
  const keys = await c.query<{ property_id: string; number: string }>(
    `SELECT property_id, number FROM bookings ORDER BY hashtext(number), number LIMIT ${size}`,
  );
  const versions = await c.query<{
    property_id: string;
    number: string;
    version: number;
    valid_from: string;
    valid_to: string | null;
    status: string;
    created_at: string;
    cancelled_at: string | null;
    currency_code: string;
    arrival_date: string;
    departure_date: string;
    rooms: number;
    room_nights: number;
    room_type_ids: string[];
    net: string;
    gross: string;
    total_net: string;
    total_gross: string;
    changes: string[];
  }>(
    `SELECT v.property_id, v.number, v.version, ${iso('v.valid_from')} AS valid_from, ${iso('v.valid_to')} AS valid_to, v.status,
            ${iso('v.created_at')} AS created_at, ${iso('v.cancelled_at')} AS cancelled_at, v.currency_code, v.arrival_date::text AS arrival_date,
            v.departure_date::text AS departure_date, v.rooms, v.room_nights, v.room_type_ids, v.room_revenue_net::text AS net,
            v.room_revenue_gross::text AS gross, v.total_net::text AS total_net, v.total_gross::text AS total_gross, v.changes
       FROM booking_versions v JOIN unnest($1::text[], $2::text[]) AS k(p, n) ON v.property_id = k.p AND v.number = k.n
      ORDER BY v.property_id, v.number, v.version`,
    [keys.rows.map((k) => k.property_id), keys.rows.map((k) => k.number)],
  );
  const stored = await c.query<{ property_id: string; number: string; line: string }>(
    `SELECT h.property_id, h.number,
            concat_ws('|', h.stay_index, h.stay_date, COALESCE(h.currency_code, ''), COALESCE(h.room_type_id, ''), COALESCE(h.net_amount::numeric(12, 2)::text, ''),
                      COALESCE(h.gross_amount::numeric(12, 2)::text, ''), ${iso('h.valid_from')}, COALESCE(${iso('h.valid_to')}, ''),
                      COALESCE(${iso('h.reconstructed_until')}, '')) AS line
       FROM booking_night_history h JOIN unnest($1::text[], $2::text[]) AS k(p, n) ON h.property_id = k.p AND h.number = k.n`,
    [keys.rows.map((k) => k.property_id), keys.rows.map((k) => k.number)],
  );
  const byBooking = new Map<string, typeof versions.rows>();
  for (const v of versions.rows) {
    const key = `${v.property_id}/${v.number}`;
    const list = byBooking.get(key);
    if (list) list.push(v);
    else byBooking.set(key, [v]);
  }
  const storedLines = new Map<string, string[]>();
  for (const r of stored.rows) {
    const key = `${r.property_id}/${r.number}`;
    const list = storedLines.get(key);
    if (list) list.push(r.line);
    else storedLines.set(key, [r.line]);
  }
  const money = (v: string | null) => (v === null ? '' : Number(v).toFixed(2));
  let differ = 0;
  let firstDiff = '';
  let checkedVersions = 0;
  for (const [key, list] of byBooking) {
    // What the repositories would hold, write by write.
    let history: StoredHistory | null = null;
    const rows: { night: OpenNight; valid_to: string | null }[] = [];
    const planned: { version: number; changes: string; validTo: string | null }[] = [];
    for (const v of list) {
      const nights: NightFact[] = [];
      const perNet = (Number(v.net) / v.room_nights).toFixed(2);
      const perGross = (Number(v.gross) / v.room_nights).toFixed(2);
      for (let d = new Date(`${v.arrival_date}T00:00:00Z`); d < new Date(`${v.departure_date}T00:00:00Z`); d = new Date(d.getTime() + 86_400_000)) {
        nights.push({
          stay_index: 0,
          stay_date: d.toISOString().slice(0, 10),
          currency_code: v.currency_code,
          room_type_id: v.room_type_ids[0] ?? null,
          net_amount: perNet,
          gross_amount: perGross,
        });
      }
      const incoming: BookingVersion = {
        facts: {
          status: v.status,
          created_at: v.created_at,
          cancelled_at: v.cancelled_at,
          modified_at: v.valid_from,
          currency_code: v.currency_code,
          arrival_date: v.arrival_date,
          departure_date: v.departure_date,
          rooms: v.rooms,
          room_nights: v.room_nights,
          room_type_ids: v.room_type_ids,
          room_revenue_net: v.net,
          room_revenue_gross: v.gross,
          total_net: v.total_net,
          total_gross: v.total_gross,
        },
        nights,
        onTheBooks: v.status !== 'Cancelled',
      };
      const plan = planHistory(history, incoming, `${key}/${v.version}`);
      if (!plan) throw new Error(`sample check: planHistory wrote nothing for version ${v.version} of ${key}`);
      const current = planned[planned.length - 1];
      if (current && plan.closeCurrentAt !== null) current.validTo = plan.closeCurrentAt;
      planned.push(...plan.versions.map((x) => ({ version: x.version, changes: x.changes.join(','), validTo: x.validTo })));
      for (const cl of plan.close) {
        const open = rows.find(
          (r) =>
            r.valid_to === null &&
            r.night.stay_index === cl.night.stay_index &&
            r.night.stay_date === cl.night.stay_date &&
            r.night.valid_from === cl.night.valid_from,
        );
        if (open) open.valid_to = cl.at;
      }
      for (const n of plan.insert) rows.push({ night: n, valid_to: n.valid_to });
      const last = plan.versions[plan.versions.length - 1]!;
      history = {
        version: last.version,
        facts: last.facts,
        contentHash: last.contentHash,
        nights,
        open: rows.filter((r) => r.valid_to === null).map((r) => r.night),
      };
      checkedVersions++;
    }
    const changes = planned.map((x) => `${x.version}:${x.changes}:${x.validTo ?? ''}`);
    const wantChanges = list.map((v) => `${v.version}:${v.changes.join(',')}:${v.valid_to ?? ''}`);
    const want = rows
      .map((r) =>
        [
          r.night.stay_index,
          r.night.stay_date,
          r.night.currency_code ?? '',
          r.night.room_type_id ?? '',
          money(r.night.net_amount),
          money(r.night.gross_amount),
          r.night.valid_from,
          r.valid_to ?? '',
          r.night.reconstructed_until ?? '',
        ].join('|'),
      )
      .sort();
    const got = [...(storedLines.get(key) ?? [])].sort();
    if (want.join('\n') !== got.join('\n') || wantChanges.join('\n') !== changes.join('\n')) {
      differ++;
      if (!firstDiff) firstDiff = `${key}: planHistory ${JSON.stringify({ changes, want })}, loaded ${JSON.stringify({ wantChanges, got })}`;
    }
  }
  return {
    label: 'sample = planHistory',
    ok: differ === 0 && byBooking.size > 0,
    detail:
      `${byBooking.size} bookings, ${checkedVersions} versions: ${differ} differ from planHistory's versions and night rows` +
      (firstDiff ? ` (first: ${firstDiff.slice(0, 600)})` : ''),
  };
}

const fmtMs = (ms: number) => (ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`);
const mib = (b: number) => `${(b / 1048576).toFixed(0)} MB`;

/** The lines of scenario H. */
export function reportingLines(r: ReportingBenchResult, runs: number): { lines: Line[]; notes: string[] } {
  const lines: Line[] = [];
  lines.push({
    label: 'load',
    value: `${(r.loadMs / 1000).toFixed(1)} s`,
    detail:
      `${r.bookings} bookings, ${r.versions} versions (${(r.versions / Math.max(1, r.bookings)).toFixed(2)} each), ` +
      `${r.nightRows} night rows (${r.openNightRows} open), ${r.factRows} nightly_facts rows; generated in SQL`,
    goal: '',
    verdict: '',
  });
  for (const ch of r.checks) {
    lines.push({ label: ch.label, value: ch.ok ? 'yes' : 'NO', detail: ch.detail, goal: '(goal yes)', verdict: ch.ok ? 'PASS' : 'MISS' });
  }
  for (const t of r.timings) {
    const m = median(t.explainMs);
    lines.push({
      label: t.label,
      value: fmtMs(m),
      detail: `${t.rows} rows; EXPLAIN ANALYZE execution + planning, median of ${runs} (min ${fmtMs(Math.min(...t.explainMs))}, max ${fmtMs(
        Math.max(...t.explainMs),
      )}); wall from a client ${fmtMs(median(t.wallMs))}`,
      goal: t.goalMs === undefined ? '(no goal)' : `(goal < ${t.goalMs} ms)`,
      verdict: t.goalMs === undefined ? '' : m < t.goalMs ? 'PASS' : 'MISS',
    });
    for (const x of t.scoped) {
      const ratio = median(x.explainMs) / m;
      lines.push({
        label: `  as ${x.scope}`,
        value: `${ratio.toFixed(2)}`,
        detail: `${fmtMs(median(x.explainMs))} against the owner's ${fmtMs(m)}; ${x.rows} rows; wall from a client ${fmtMs(median(x.wallMs))}`,
        goal: `(goal <= ${REPORTING_GOALS.scopedRatio.toFixed(2)})`,
        verdict: ratio <= REPORTING_GOALS.scopedRatio ? 'PASS' : 'MISS',
      });
    }
  }
  const history = r.sizes.filter((s) => s.table === 'booking_versions' || s.table === 'booking_night_history');
  const total = history.reduce((a, s) => a + s.totalBytes, 0);
  lines.push({
    label: 'history per version',
    value: `${Math.round(total / Math.max(1, r.versions))} B`,
    detail: `booking_versions + booking_night_history with their indexes, ${mib(total)} for ${r.versions} versions`,
    goal: '',
    verdict: '',
  });
  for (const s of r.sizes) {
    lines.push({
      label: `  ${s.table}`,
      value: `${Math.round(s.totalBytes / Math.max(1, r.versions))} B`,
      detail: `per version: ${s.rows} rows, table ${mib(s.heapBytes)} + indexes ${mib(s.indexBytes)} = ${mib(s.totalBytes)}${s.rows ? `, ${Math.round(s.totalBytes / s.rows)} B a row` : ''}`,
      goal: '',
      verdict: '',
    });
  }
  const notes = [
    `load steps: ${r.loadSteps.map((s) => `${s.step} ${(s.ms / 1000).toFixed(1)} s`).join(', ')}`,
    `queries: property 500100; daily_kpis for ${r.month.slice(0, 7)}; on_the_books as of ${r.asOf}, nights from ${r.otbFrom}; pace for stay dates from ${r.paceFrom} to yesterday (no day-close snapshots: from history)`,
    `"as …": the same query as a reader role of grant-reader --properties (row-level security), its median against the owner's, runs taken in turn`,
  ];
  return { lines, notes };
}
