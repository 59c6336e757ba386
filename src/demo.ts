/**
 * `npm run demo`: the daemon's sync against the built-in simulator of the provider, on the
 * local PostgreSQL server that staysync runs (or DATABASE_URL when set), a look at what was
 * mirrored and how to query it, then the daemon following the provider's changes until Ctrl-C,
 * with the URL that psql and reporting tools use meanwhile (`--exit` ends after the look).
 * Nothing leaves this machine: the simulator and the database listen on 127.0.0.1.
 */
import { resolve } from 'node:path';
import { loadConfig, type RateWindow } from './config.js';
import { ExitCode, syncCommand } from './commands.js';
import { openDatabase, rawQuery } from './db/database.js';
import { createLogger } from './log.js';
import { startSimulator } from './simulator/index.js';
import { defaultRateLimits } from './simulator/rate-limit.js';

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
    title: 'Bookings per property and status',
    query: `SELECT property_id, status, count(*) AS bookings, sum(price_after_tax) AS revenue
  FROM bookings GROUP BY property_id, status ORDER BY property_id, status`,
  },
  {
    title: 'Room nights and average daily rate per month of stay (active bookings)',
    query: `SELECT date_trunc('month', r.stay_date)::date AS month, count(*) AS room_nights,
       round(avg(r.price_before_tax), 2) AS adr
  FROM booking_daily_rates r JOIN bookings b USING (property_id, number)
 WHERE b.status = 'Active'
 GROUP BY 1 ORDER BY 1 DESC LIMIT 6`,
  },
  {
    title: 'Arrivals of the next 14 days',
    query: `SELECT property_name, number, arrival_at, departure_at, room_type_name, rate_plan_name, adult_count
  FROM booking_room_stays_named
 WHERE status = 'Active' AND arrival_at >= now()::date AND arrival_at < now()::date + 14
 ORDER BY arrival_at LIMIT 8`,
  },
  {
    title: 'In house now (PMS): room, guest, channel and price of the booking',
    query: `SELECT s.property_id, s.room_name, s.room_type_name, r.customer_last_name, s.actual_check_in_at,
       s.check_out_at, b.source_code AS channel, b.price_after_tax
  FROM pms_room_stays_named s
  JOIN pms_reservations r USING (property_id, number)
  LEFT JOIN bookings b USING (property_id, number)
 WHERE s.status = 'CheckedIn'
 ORDER BY s.property_id, s.room_name LIMIT 8`,
  },
  {
    title: 'Occupancy and revenue of the next 7 nights (PMS statistics)',
    query: `SELECT property_id, stay_date, currency_code, occupancy_rate, occupancy_room_count, room_revenue, revenue
  FROM daily_occupancy
 WHERE stay_date >= now()::date AND stay_date < now()::date + 7
 ORDER BY property_id, stay_date LIMIT 8`,
  },
];

function printTable(rows: Record<string, unknown>[]): void {
  if (rows.length === 0) {
    console.log('  (no rows)');
    return;
  }
  const cols = Object.keys(rows[0]!);
  const cell = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null ? '' : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  console.log('  ' + cols.map((c, i) => c.padEnd(widths[i]!)).join('  '));
  for (const r of rows) console.log('  ' + cols.map((c, i) => cell(r[c]).padEnd(widths[i]!)).join('  '));
}

async function main(): Promise<number> {
  const sim = await startSimulator({
    properties: [
      { id: '500100', bookingCount: 300 },
      { id: '500200', bookingCount: 200 },
      { id: '7291', bookingCount: 100 },
    ],
    rateLimits: scaled,
  });
  const config = loadConfig({
    overrides: {
      database: { dataDir: process.env.STAYSYNC_DATA_DIR ?? resolve('data/demo') },
      provider: { url: sim.url, referenceDataUrl: sim.url, clientId: 'sim-client', clientSecret: 'sim-secret' },
      propertyIds: sim.propertyIds(),
      rateLimits: scaled,
      sync: { progressIntervalMs: 2000, pollCron: '*/5 * * * * *' },
      log: { level: process.env.STAYSYNC_LOG_LEVEL ?? 'info' },
    },
  });
  const logger = createLogger(config.log.level);
  const stop = new AbortController();
  const never = new AbortController().signal;
  const env = { config, logger, signal: stop.signal, graceSignal: never, out: (l: string) => console.log(l) };
  // Held for the whole demo, so that the local server stays up between the steps (each command shares it).
  const h = await openDatabase(config, logger);
  let changes: NodeJS.Timeout | undefined;
  try {
    console.log(`\nstaysync demo: simulator at ${sim.url} with ${sim.bookings().length} bookings in ${sim.propertyIds().length} properties;`);
    console.log(`rate limits scaled 1/${SCALE} (an hour lasts a minute); database: ${h.description}\n`);
    let code = await syncCommand(env, 'once', { mode: 'none' });
    if (code !== ExitCode.ok) return code;
    console.log('\nThe provider changes 40 bookings and takes 10 new ones; the next sync fetches only those:\n');
    sim.mutate({ count: 40, newCount: 10 });
    code = await syncCommand(env, 'once', { mode: 'none' });
    if (code !== ExitCode.ok) return code;

    for (const e of examples) {
      console.log(`\n-- ${e.title}\n${e.query};\n`);
      printTable(await rawQuery(h.db, e.query));
    }
    console.log(`
What was mirrored lives in the schema "${config.database.schema}": bookings, booking_room_stays,
booking_daily_rates, booking_services, booking_guests, booking_taxes, booking_discounts;
the content: properties, room_types, rate_plans, services, cancellation_rules, extra_stay_rules
and the reference lists; views that name what bookings reference (booking_room_stays_named,
booking_daily_rates_named, booking_services_named); the PMS side: pms_reservations,
pms_room_stays (pms_room_stays_named), pms_guests, pms_rooms, daily_occupancy, webhook_events;
and the bookkeeping: sync_cursors, booking_detail_queue, pms_reservation_queue, sync_runs,
content_refreshes, quarantine. The hotel figures are ready in the schema "${config.database.reportingSchema}".

Against your own provider account and PostgreSQL:
  DATABASE_URL=postgres://user@host/db STAYSYNC_CLIENT_ID=… STAYSYNC_CLIENT_SECRET=… \\
  STAYSYNC_PROPERTY_IDS=1024,7291 npm start
then query with psql, Metabase, Grafana or Power BI (see README.md for more SQL).`);
    if (process.argv.includes('--exit')) return ExitCode.ok;

    // Following: the daemon keeps the mirror current while reporting tools read it.
    changes = setInterval(() => sim.mutate({ count: 3, newCount: 1 }), 10_000);
    const interrupt = () => stop.abort(new Error('stopped by the user'));
    process.once('SIGINT', interrupt);
    process.once('SIGTERM', interrupt);
    console.log(`
The daemon now follows the provider (which changes a few bookings every 10 s). From another
terminal, while it runs:
  psql '${h.url}' -c 'select * from ${config.database.reportingSchema}.daily_kpis limit 5'
Ctrl-C stops the daemon, the simulator and the database server.
DEMO_DATABASE_URL=${h.url}
`);
    return await syncCommand(env, 'daemon', { mode: 'none' });
  } finally {
    clearInterval(changes);
    await h.close();
    await sim.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`demo failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
