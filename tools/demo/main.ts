/**
 * `npm run demo`: the daemon's sync against the built-in simulator of the provider, on the
 * local PostgreSQL server that staysync runs (or DATABASE_URL when set), a look at what was
 * mirrored and how to query it, then the daemon following the provider's changes until Ctrl-C,
 * with how psql and reporting tools connect meanwhile: the read-only login, its password read
 * from its file (the demo prints no password) (`--exit` ends after the look; `--bookings <n>`
 * makes the provider smaller or larger than its 600 bookings).
 * Nothing leaves this machine: the simulator and the database listen on 127.0.0.1.
 */
import { openConfiguredDatabase } from '../../src/local-pg/open-database.js';
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, type RateWindow } from '../../src/config/config.js';
import { ExitCode } from '../../src/cli/exit.js';
import { syncCommand } from '../../src/cli/commands/sync.js';
import { rawQuery } from '../common/database.js';
import { createLogger } from '../../src/util/log.js';
import { startSimulator } from '../simulator/index.js';
import { defaultRateLimits } from '../simulator/rate-limit.js';

/** The production windows, with an hour lasting a minute, so the demo takes seconds. */
const SCALE = 60;
const scaled = Object.fromEntries(
  Object.entries(defaultRateLimits).map(([scope, windows]) => [
    scope,
    windows.map((w: RateWindow) => ({ limit: w.limit, windowMs: Math.max(1, Math.round(w.windowMs / SCALE)) })),
  ]),
);

const examples: { title: string; query: string }[] = [
  {
    title: 'Bookings per property, status and currency (money is added up per currency only)',
    query: `SELECT property_id, status, currency_code, count(*) AS bookings, sum(price_after_tax) AS revenue_gross
  FROM bookings GROUP BY property_id, status, currency_code ORDER BY property_id, status, currency_code`,
  },
  {
    title: "KPIs of the next 7 nights, from each property's local today (reporting.daily_kpis)",
    query: `SELECT property_id, stay_date, currency_code, rooms_sold, rooms_available, occupancy, adr_net, adr_gross, revpar_net
  FROM reporting.daily_kpis
 WHERE days_from_today BETWEEN 0 AND 6
 ORDER BY property_id, stay_date, currency_code LIMIT 10`,
  },
  {
    title: 'Pickup: how the books of the next 30 nights changed over the last 7 days, net of cancellations (reporting.pickup)',
    query: `SELECT p.property_id, p.currency_code, sum(p.room_nights) AS room_nights, sum(p.room_revenue_net) AS revenue_net,
       sum(p.room_revenue_gross) AS revenue_gross, -sum(p.room_nights) FILTER (WHERE p.room_nights < 0) AS room_nights_lost
  FROM reporting.pickup p JOIN reporting.property_clock c USING (property_id)
 WHERE p.pickup_date > c.today - 7 AND p.stay_date >= c.today AND p.stay_date < c.today + 30
 GROUP BY 1, 2 ORDER BY 1, 2`,
  },
  {
    title: 'Cancellations and lead time by channel (reporting.channel_performance)',
    query: `SELECT property_id, channel_code, channel_name, currency_code, sum(bookings) AS bookings,
       round(sum(cancelled_bookings)::numeric / sum(bookings), 3) AS cancellation_rate,
       round(sum(lead_time_days_sum)::numeric / sum(bookings), 1) AS avg_lead_time_days,
       sum(room_revenue_net) AS revenue_net
  FROM reporting.channel_performance
 GROUP BY 1, 2, 3, 4 ORDER BY 1, 5 DESC LIMIT 10`,
  },
  {
    title: 'Arrivals of the next 14 days (property-local dates)',
    query: `SELECT s.property_name, s.number, s.arrival_at, s.departure_at, s.room_type_name, s.rate_plan_name, s.adult_count
  FROM booking_room_stays_named s JOIN reporting.property_clock c USING (property_id)
 WHERE s.status = 'Active' AND s.arrival_at >= c.today AND s.arrival_at < c.today + 14
 ORDER BY s.arrival_at LIMIT 8`,
  },
  {
    title: 'In house now (PMS): room, guest, channel and price of the booking',
    query: `SELECT s.property_id, s.room_name, s.room_type_name, r.customer_last_name, s.actual_check_in_at,
       s.check_out_at, b.source_code AS channel, b.price_after_tax, b.currency_code
  FROM pms_room_stays_named s
  JOIN pms_reservations r USING (property_id, number)
  LEFT JOIN bookings b USING (property_id, number)
 WHERE s.status = 'CheckedIn'
 ORDER BY s.property_id, s.room_name LIMIT 8`,
  },
  {
    title: 'How complete the mirror is (reporting.mirror_completeness)',
    query: `SELECT property_id, phase, complete, bookings_listed, bookings_fetched, fetched_share
  FROM reporting.mirror_completeness ORDER BY property_id`,
  },
];

function printTable(rows: Record<string, unknown>[]): void {
  if (rows.length === 0) {
    console.log('  (no rows)');
    return;
  }
  const cols = Object.keys(rows[0]!);
  const cell = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  console.log('  ' + cols.map((c, i) => c.padEnd(widths[i]!)).join('  '));
  for (const r of rows) console.log('  ' + cols.map((c, i) => cell(r[c]).padEnd(widths[i]!)).join('  '));
}

/** The provider's bookings in all; half, a third and a sixth of them in its three properties. */
const DEFAULT_BOOKINGS = 600;

/**
 * `--bookings <n>`: how many bookings the simulated provider has (default 600). Fewer make a
 * quicker first sync (the demo's test runs it with 60); the steps and what they print are the same.
 */
function bookingsOption(): number {
  const at = process.argv.indexOf('--bookings');
  if (at < 0) return DEFAULT_BOOKINGS;
  const n = Number(process.argv[at + 1]);
  if (!Number.isInteger(n) || n < 6 || n > 100_000)
    throw new Error(`--bookings needs a whole number from 6 to 100000, not ${process.argv[at + 1] ?? 'nothing'}`);
  return n;
}

async function main(): Promise<number> {
  const total = bookingsOption();
  const sim = await startSimulator({
    // Every API granted, and a token whose api_accesses names the two the documents show, as the
    // provider's sample does: the daemon tries the others (docs/operations.md).
    clients: [{ clientId: 'sim-client', clientSecret: 'sim-secret', claim: ['reservation_api', 'content'] }],
    properties: [
      { id: '500100', bookingCount: Math.round(total / 2) },
      { id: '500200', bookingCount: Math.round(total / 3) },
      { id: '7291', bookingCount: total - Math.round(total / 2) - Math.round(total / 3) },
    ],
    rateLimits: scaled,
  });
  const config = loadConfig({
    overrides: {
      database: { dataDir: process.env.STAYSYNC_DATA_DIR ?? resolve('data/demo') },
      provider: { url: sim.url, referenceDataUrl: sim.url, clientId: 'sim-client', clientSecret: 'sim-secret' },
      propertyIds: sim.propertyIds(),
      rateLimits: scaled,
      // Scaled windows would allow a poll every 20 ms: once a second is fresh enough to watch.
      sync: { progressIntervalMs: 2000, pollIntervalMs: { min: 1000, max: 60_000 } },
      log: { level: process.env.STAYSYNC_LOG_LEVEL ?? 'info' },
    },
  });
  const logger = createLogger(config.log.level, undefined, config.log.format);
  const stop = new AbortController();
  const never = new AbortController().signal;
  const env = { config, logger, signal: stop.signal, graceSignal: never, out: (l: string) => console.log(l) };
  // Held for the whole demo, so that the local server stays up between the steps (each command shares it).
  const h = await openConfiguredDatabase(config, logger);
  let changes: NodeJS.Timeout | undefined;
  try {
    console.log(`\nstaysync demo: simulator at ${sim.url} with ${sim.bookings().length} bookings in ${sim.propertyIds().length} properties;`);
    console.log(`rate limits scaled 1/${SCALE} (an hour lasts a minute); database: ${h.description}\n`);
    let code = await syncCommand(env, 'once', { mode: 'none' });
    if (code !== ExitCode.ok) return code;
    // 40 changed and 10 new of the default 600: the same share of another size.
    const changed = Math.max(1, Math.round(total / 15));
    const created = Math.max(1, Math.round(total / 60));
    console.log(`\nThe provider changes ${changed} bookings and takes ${created} new one${created === 1 ? '' : 's'}; the next sync fetches only those:\n`);
    sim.mutate({ count: changed, newCount: created });
    code = await syncCommand(env, 'once', { mode: 'none' });
    if (code !== ExitCode.ok) return code;

    for (const e of examples) {
      // The examples name the default reporting schema; STAYSYNC_REPORTING_SCHEMA may choose another.
      const query = e.query.replaceAll('reporting.', `${config.database.reportingSchema}.`);
      console.log(`\n-- ${e.title}\n${query};\n`);
      printTable(await rawQuery(h.db, query));
    }
    console.log(`
What was mirrored lives in the schema "${config.database.schema}": bookings, booking_room_stays,
booking_daily_rates, booking_services, booking_guests, booking_taxes, booking_discounts;
the content: properties, room_types, rate_plans, services, cancellation_rules, extra_stay_rules
and the reference lists; views that name what bookings reference (booking_room_stays_named,
booking_daily_rates_named, booking_services_named); the PMS side: pms_reservations,
pms_room_stays (pms_room_stays_named), pms_guests, pms_rooms, daily_occupancy, webhook_events;
and the bookkeeping: sync_cursors, booking_detail_queue, pms_reservation_queue, sync_runs,
content_refreshes, quarantine, sync_connections, sync_replicas. The hotel figures are ready in the schema "${config.database.reportingSchema}".

Against your own provider account and PostgreSQL:
  DATABASE_URL=postgres://user@host/db STAYSYNC_CLIENT_ID=… STAYSYNC_CLIENT_SECRET=… \\
  STAYSYNC_PROPERTY_IDS=1024,7291 npm start
then query with psql, Metabase, Grafana or Power BI (see docs/tables-and-reporting.md for more SQL).`);
    if (process.argv.includes('--exit')) return ExitCode.ok;

    // Following: the daemon keeps the mirror current while reporting tools read it.
    changes = setInterval(() => sim.mutate({ count: 3, newCount: 1 }), 10_000);
    const interrupt = () => stop.abort(new Error('stopped by the user'));
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    const query = `-c 'select * from ${config.database.reportingSchema}.daily_kpis limit 5'`;
    const reader = h.localServer?.reader;
    const grafana = grafanaHowTo(config.database.reportingSchema, reader);
    console.log(
      reader
        ? `
The daemon now follows the provider (which changes a few bookings every 10 s). From another
terminal, while it runs, with the read-only login for reporting tools (the superuser, whose
password is in postgres.credentials, is for administration only):
  PGPASSWORD="$(cat ${shellWord(shownPath(reader.passwordFile))})" psql '${reader.url}' ${query}
${grafana}
Ctrl-C stops the daemon, the simulator and the database server.
DEMO_DATABASE_URL=${reader.url}
DEMO_PASSWORD_FILE=${reader.passwordFile}
`
        : `
The daemon now follows the provider (which changes a few bookings every 10 s). From another
terminal, while it runs (\`staysync grant-reader <role>\` makes a read-only login for reporting tools):
  psql "$DATABASE_URL" ${query}
${grafana}
Ctrl-C stops the daemon and the simulator.
`,
    );
    return await syncCommand(env, 'daemon', { mode: 'none' });
  } finally {
    clearInterval(changes);
    await h.close();
    await sim.close();
  }
}

/**
 * Where the revenue dashboard is and how Grafana loads it: imported from its file, on a
 * PostgreSQL data source that logs in as the reader. The file is found from this module's
 * place (tools/demo/, or its build in dist-tools/tools/demo/), whatever the current directory.
 */
function grafanaHowTo(reportingSchema: string, reader: { url: string; passwordFile: string } | undefined): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  let file: string | undefined;
  for (let up = 0; up < 5 && !file; up++, dir = dirname(dir)) {
    const candidate = join(dir, 'config', 'grafana', 'staysync-revenue.json');
    if (existsSync(candidate)) file = candidate;
  }
  if (!file) return '';
  const login = reader ? new URL(reader.url) : undefined;
  const source = login
    ? `host ${login.host}, database ${login.pathname.slice(1)}, user ${decodeURIComponent(login.username)}, its password in ${shownPath(reader!.passwordFile)}, TLS disabled`
    : 'the login of `staysync grant-reader <role>`';
  const schema = reportingSchema === 'reporting' ? '' : `; set the dashboard's hidden variable "reporting" to ${reportingSchema}`;
  return `
Revenue at a glance in Grafana: the dashboard ${shownPath(file)}. In Grafana, Dashboards → Import,
upload that file and pick a PostgreSQL data source that reads the mirror: ${source}${schema}.`;
}

/** A path as the user typed it: relative to the current directory when inside it. */
function shownPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

/** A word for a POSIX shell: quoted unless it is plain. */
function shellWord(word: string): string {
  return /^[\w./@%+=:,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`demo failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
