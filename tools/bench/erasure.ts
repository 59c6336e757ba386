/**
 * Scenario I (erasure): how long `forget-guest` holds the erasure lock alone, and how long a
 * write of guest data waits meanwhile, on a mirror of --erasure-bookings bookings (1,000,000).
 *
 * The mirror is generated in SQL, as scenario H loads its own (reporting.ts): no HTTP, no
 * daemon; the indexes of the loaded tables are dropped for the load and made again. Each
 * booking has its PMS reservation of the same number (the customer with e-mail and phone, as
 * with pms.personalData on, in the typed columns and in raw), one room stay whose guest is the
 * customer, a summary and one version; 70 % as many PMS persons, so 30 % of them are repeat
 * guests with two reservations (a person's two stays are `n` and `n + persons`); besides,
 * 100,000 integration-storage bookings, 10,000 quarantined bodies naming a customer, and
 * 100,000 processed change events.
 *
 * While each erasure runs, a writer does what every write of guest data does first (the
 * erasure lock shared, the key, the lookup of the erasure list: erasedAmong) every few
 * milliseconds on a connection of its own, and each of its calls is timed: the longest is how
 * long a write waited for the erasure. Timed:
 *   - a dry run by e-mail (it never takes the lock);
 *   - an erasure by e-mail of a repeat guest (two reservations, two bookings);
 *   - an erasure by booking;
 *   - for comparison, the lock held alone for the time of a whole erasure, as forget-guest did
 *     before it found the guest without it (another session holds it while a dry run runs).
 */
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { forgetGuest, parseSelector, type ForgetResult } from '../../src/privacy/forget-guest.js';
import { openDatabase } from '../../src/store/database.js';
import { erasedAmong } from '../../src/store/repositories/erasures.js';
import type { Database } from '../../src/store/schema.js';
import { secretSchemaOf } from '../../src/config/schema-names.js';
import { createLogger } from '../../src/util/log.js';
import type { Line } from './report.js';
import { openSqlMirror } from './sql-mirror.js';
import { quantile, timed } from './stats.js';

export const ERASURE_DEFAULTS = { bookings: 1_000_000, properties: 100, writerPauseMs: 2 };

export interface ErasureBenchOptions {
  bookings: number;
  properties: number;
  databaseUrl: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface ErasureRun {
  label: string;
  /** The erasure's own duration, ms. */
  totalMs: number;
  /** How long it held the erasure lock alone (forget-guest's own figure: from the lock granted to the commit), ms. */
  lockHeldMs: number;
  /** Rounds of listing (null: the comparison, which holds the lock itself). */
  rounds: number | null;
  rowsTouched: Record<string, number>;
  /** The writer's calls while it ran, and how long each took, ms. */
  writes: number[];
  /** Of those, the calls that overlapped a time the lock was held alone, ms. */
  writesWhileLocked: number[];
}

export interface ErasureBenchResult {
  schema: string;
  bookings: number;
  rows: Record<string, number>;
  loadMs: number;
  loadSteps: { step: string; ms: number }[];
  /** The writer's calls with no erasure running: what a write costs by itself, ms. */
  idleWrites: number[];
  runs: ErasureRun[];
  checks: { label: string; ok: boolean; detail: string }[];
}

const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The tables the load writes, whose indexes (not those of constraints) it drops and makes again. */
const LOADED_TABLES = [
  'bookings',
  'booking_guests',
  'booking_versions',
  'booking_summaries',
  'pms_reservations',
  'pms_room_stays',
  'pms_guests',
  'integration_storage_bookings',
  'quarantine',
  'webhook_events',
];

/** Booking `n` (1..N) of property `n % P`; its customer is person `n % M` (M = 70 % of N, a multiple of P: a person's stays share a property). */
function loadSteps(bookings: number, properties: number): { step: string; sql: string }[] {
  const persons = Math.max(properties, Math.floor((bookings * 0.7) / properties) * properties);
  const common = `
    SELECT n, (500100 + (n % ${properties}) * 100)::text AS property_id, 'E' || lpad(n::text, 9, '0') AS number, (n % ${persons}) AS person,
           timestamptz '2023-01-01 00:00+00' + make_interval(secs => n * 60) AS modified_at,
           date '2023-02-01' + (n % 900) AS arrival
      FROM generate_series(1, ${bookings}) AS n`;
  const person = (
    p: string,
  ) => `jsonb_build_object('pmsPersonId', 'P' || ${p}, 'personName', jsonb_build_object('firstName', 'Guest', 'lastName', 'Bench ' || ${p}),
      'emails', jsonb_build_array(jsonb_build_object('address', 'guest' || ${p} || '@example.org')),
      'phones', jsonb_build_array(jsonb_build_object('phoneNumber', '+41 79 ' || lpad(${p}::text, 7, '0'))))`;
  return [
    {
      step: 'bookings',
      sql: `INSERT INTO bookings (property_id, number, status, modified_at, fetched_at, currency_code, arrival_at, departure_at, room_stay_count,
              price_before_tax, customer_first_name, customer_last_name, raw)
            SELECT property_id, number, 'Active', modified_at, modified_at + interval '3 seconds', 'EUR', arrival + time '15:00', arrival + 2 + time '11:00', 1,
                   200, 'Guest', 'Bench ' || person,
                   jsonb_build_object('booking', jsonb_build_object('number', number, 'propertyId', property_id, 'status', 'Active',
                     'customer', jsonb_build_object('firstName', 'Guest', 'lastName', 'Bench ' || person),
                     'roomStays', jsonb_build_array(jsonb_build_object('guests', jsonb_build_array(jsonb_build_object('firstName', 'Guest', 'lastName', 'Bench ' || person))))))
              FROM (${common}) b`,
    },
    {
      step: 'booking_guests',
      sql: `INSERT INTO booking_guests (property_id, number, stay_index, position, first_name, last_name)
            SELECT property_id, number, 0, 0, 'Guest', 'Bench ' || person FROM (${common}) b`,
    },
    {
      step: 'booking_versions',
      sql: `INSERT INTO booking_versions (property_id, number, version, valid_from, modified_at, reconstructed, fetched_at, content_hash, status,
              rooms, room_nights, room_type_ids, changes)
            SELECT property_id, number, 1, modified_at, modified_at, false, modified_at + interval '3 seconds', md5(number), 'Active', 1, 2, ARRAY['RT1'], ARRAY['created']
              FROM (${common}) b`,
    },
    {
      step: 'booking_summaries',
      sql: `INSERT INTO booking_summaries (property_id, number, status, modified_at, listed_at, raw)
            SELECT property_id, number, 'Active', modified_at, modified_at + interval '1 second',
                   jsonb_build_object('number', number, 'status', 'Active', 'modifiedDateTime', modified_at)
              FROM (${common}) b`,
    },
    {
      step: 'pms_reservations',
      sql: `INSERT INTO pms_reservations (property_id, number, modified_at, customer_person_id, customer_first_name, customer_last_name,
              customer_email, customer_phone, room_stay_count, fetched_at, raw)
            SELECT property_id, number, modified_at, 'P' || person, 'Guest', 'Bench ' || person, 'guest' || person || '@example.org',
                   '+41 79 ' || lpad(person::text, 7, '0'), 1, modified_at + interval '3 seconds',
                   jsonb_build_object('number', number, 'customer', ${person('person')})
              FROM (${common}) b`,
    },
    {
      step: 'pms_room_stays',
      sql: `INSERT INTO pms_room_stays (property_id, number, position, status, check_in_at, check_out_at, guest_person_ids, amenities)
            SELECT property_id, number, 0, 'CheckedOut', arrival + time '15:00', arrival + 2 + time '11:00', ARRAY['P' || person], '{}'
              FROM (${common}) b`,
    },
    {
      step: 'pms_guests',
      sql: `INSERT INTO pms_guests (property_id, pms_person_id, first_name, last_name, email, phone, fetched_at, raw)
            SELECT (500100 + (p % ${properties}) * 100)::text, 'P' || p, 'Guest', 'Bench ' || p, 'guest' || p || '@example.org',
                   '+41 79 ' || lpad(p::text, 7, '0'), now(), ${person('p')}
              FROM generate_series(0, ${persons - 1}) AS p`,
    },
    {
      step: 'integration_storage_bookings',
      sql: `INSERT INTO integration_storage_bookings (property_id, booking_id, booking_number, status, fetched_at, raw)
            SELECT property_id, 'S' || n, number, 'Confirmed', modified_at,
                   jsonb_build_object('id', 'S' || n, 'uniqueIds', jsonb_build_array(jsonb_build_object('id', number, 'idContext', 'External')))
              FROM (${common}) b WHERE n % 10 = 0`,
    },
    {
      step: 'quarantine',
      sql: `INSERT INTO quarantine (stream, property_id, entity_key, reason, reason_hash, raw_body)
            SELECT 'booking_details', property_id, number, 'bench', md5('bench'),
                   jsonb_build_object('booking', jsonb_build_object('number', number, 'customer', jsonb_build_object('firstName', 'Guest', 'lastName', 'Bench ' || person)))::text
              FROM (${common}) b WHERE n % 100 = 7`,
    },
    {
      step: 'webhook_events',
      sql: `INSERT INTO webhook_events (event_id, event_type, payload, property_id, entity_key, state, received_at, attempts, next_attempt_at)
            SELECT 'ev' || n, 'webpms:check_in', jsonb_build_object('BookingNumber', number, 'PropertyId', property_id), property_id, number, 'processed',
                   now(), 0, now()
              FROM (${common}) b WHERE n % 10 = 3`,
    },
  ];
}

export async function runErasureBench(opts: ErasureBenchOptions): Promise<ErasureBenchResult> {
  const say = opts.onProgress ?? (() => undefined);
  const mirror = await openSqlMirror({
    databaseUrl: opts.databaseUrl,
    signal: opts.signal,
    overrides: { pms: { personalData: true } },
    name: 'staysync-bench-erasure',
  });
  const { schema, config, client: c } = mirror;
  const logger = createLogger('warn');
  const pool = new pg.Pool({
    connectionString: opts.databaseUrl,
    max: 1,
    options: `-c search_path=${schema},${secretSchemaOf(schema)}`,
    application_name: 'staysync-bench-writer',
  });
  const writerDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const handle = await openDatabase(config, logger);
  const calls: { at: number; ms: number }[] = [];
  let writing = false;
  let writer: Promise<void> = Promise.resolve();
  try {
    await c.query(`SET synchronous_commit TO off`);
    await c.query(`SET maintenance_work_mem TO '1GB'`);

    // ---- load ----
    const steps: { step: string; ms: number }[] = [];
    const step = async (name: string, text: string) => {
      if (opts.signal?.aborted) throw new Error('interrupted');
      say(`scenario I: loading ${name}`);
      const { ms } = await timed(() => c.query(text));
      steps.push({ step: name, ms });
    };
    const loadStart = performance.now();
    const indexes = await c.query<{ name: string; def: string }>(
      `SELECT i.indexname AS name, i.indexdef AS def FROM pg_indexes i
        WHERE i.schemaname = $1 AND i.tablename = ANY($2)
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = format('%I.%I', i.schemaname, i.indexname)::regclass)`,
      [schema, LOADED_TABLES],
    );
    for (const i of indexes.rows) await c.query(`DROP INDEX ${ident(schema)}.${ident(i.name)}`);
    for (const s of loadSteps(opts.bookings, opts.properties)) await step(s.step, s.sql);
    await step('indexes', indexes.rows.map((i) => `${i.def};`).join('\n') || 'SELECT 1');
    await step('vacuum analyze', `VACUUM (ANALYZE) ${LOADED_TABLES.join(', ')}`);
    const loadMs = performance.now() - loadStart;
    await c.query('RESET maintenance_work_mem');
    const rows: Record<string, number> = {};
    for (const t of LOADED_TABLES) rows[t] = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${ident(t)}`)).rows[0]!.n);

    // ---- the writer: a write of guest data's first steps, timed call by call ----
    writing = true;
    writer = (async () => {
      while (writing) {
        const at = performance.now();
        await writerDb.transaction().execute((trx) => erasedAmong(trx, [{ kind: 'email', value: 'writer@bench.example' }]));
        calls.push({ at, ms: performance.now() - at });
        await new Promise((r) => setTimeout(r, ERASURE_DEFAULTS.writerPauseMs));
      }
    })();
    const writesDuring = (from: number, to: number) => calls.filter((x) => x.at + x.ms >= from && x.at <= to).map((x) => x.ms);
    await new Promise((r) => setTimeout(r, 2_000));
    const idleWrites = calls.map((x) => x.ms);

    const runs: ErasureRun[] = [];
    const erase = async (label: string, kind: 'email' | 'booking', value: string, dryRun: boolean): Promise<ForgetResult> => {
      if (opts.signal?.aborted) throw new Error('interrupted');
      say(`scenario I: ${label}`);
      const from = performance.now();
      // When each listing committed: the lock was held alone the lockHeldMs before (added up over the rounds).
      const listed: number[] = [];
      const r = await forgetGuest(handle.db, parseSelector(kind, value), { dryRun, onListed: async () => void listed.push(performance.now()) });
      const to = performance.now();
      await new Promise((res) => setTimeout(res, 50));
      const perRound = r.lockHeldMs / Math.max(1, listed.length);
      const whileLocked = [...new Set(listed.flatMap((at) => writesDuring(at - perRound, at)))];
      runs.push({
        label,
        totalMs: to - from,
        lockHeldMs: r.lockHeldMs,
        rounds: r.rounds,
        rowsTouched: r.rowsTouched,
        writes: writesDuring(from, to),
        writesWhileLocked: whileLocked,
      });
      return r;
    };
    const persons = Math.max(opts.properties, Math.floor((opts.bookings * 0.7) / opts.properties) * opts.properties);
    // A repeat guest: persons 0 .. N - M - 1 have two stays.
    const repeat = Math.min(4242, opts.bookings - persons - 1);
    await erase('dry run, by e-mail', 'email', `guest${repeat}@example.org`, true);
    const byEmail = await erase('by e-mail (a repeat guest)', 'email', `guest${repeat}@example.org`, false);
    const other = Math.min(777_777, opts.bookings);
    await erase('by booking', 'booking', `${500100 + (other % opts.properties) * 100}/E${String(other).padStart(9, '0')}`, false);

    // For comparison: the lock held alone for the time of a whole erasure, as before.
    say('scenario I: the lock held for a whole erasure (as before)');
    const third = Math.min(31_337, opts.bookings - 1) % persons;
    const holder = new pg.Client({ connectionString: opts.databaseUrl, options: `-c search_path=${schema}` });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT pg_advisory_xact_lock(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      const from = performance.now();
      const r = await forgetGuest(handle.db, parseSelector('email', `guest${third}@example.org`), { dryRun: true });
      await holder.query('COMMIT');
      const to = performance.now();
      await new Promise((res) => setTimeout(res, 50));
      runs.push({
        label: 'the whole erasure under the lock (as before)',
        totalMs: to - from,
        lockHeldMs: to - from,
        rounds: null,
        rowsTouched: r.rowsTouched,
        writes: writesDuring(from, to),
        writesWhileLocked: writesDuring(from, to),
      });
    } finally {
      await holder.end();
    }
    writing = false;
    await writer;

    // ---- checks ----
    const left = (
      await c.query<{ n: string }>(
        `SELECT (SELECT count(*) FROM bookings WHERE customer_last_name = $1) + (SELECT count(*) FROM booking_guests WHERE last_name = $1)
              + (SELECT count(*) FROM pms_reservations WHERE customer_last_name = $1 OR customer_email = $2)
              + (SELECT count(*) FROM pms_guests WHERE last_name = $1 OR email = $2) AS n`,
        [`Bench ${repeat}`, `guest${repeat}@example.org`],
      )
    ).rows[0]!.n;
    const checks = [
      {
        label: 'the repeat guest erased',
        ok: left === '0' && (byEmail.rowsTouched.pms_reservations ?? 0) === 2 && (byEmail.rowsTouched.bookings ?? 0) === 2,
        detail: `${left} rows still name them; reservations erased ${byEmail.rowsTouched.pms_reservations ?? 0}, bookings ${byEmail.rowsTouched.bookings ?? 0} (2 each expected)`,
      },
    ];
    return { schema, bookings: rows.bookings ?? 0, rows, loadMs, loadSteps: steps, idleWrites, runs, checks };
  } finally {
    writing = false;
    await writer.catch(() => undefined);
    await handle.close();
    await writerDb.destroy();
    await mirror.close();
  }
}

const fmtMs = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 100 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`);

/** The lines of scenario I. */
export function erasureLines(r: ErasureBenchResult): { lines: Line[]; notes: string[] } {
  const lines: Line[] = [];
  lines.push({
    label: 'load',
    value: `${(r.loadMs / 1000).toFixed(1)} s`,
    detail: Object.entries(r.rows)
      .map(([t, n]) => `${t} ${n}`)
      .join(', '),
    goal: '',
    verdict: '',
  });
  lines.push({
    label: 'a write alone',
    value: fmtMs(quantile(r.idleWrites, 0.5)),
    detail: `median of ${r.idleWrites.length} calls (lock shared, key, lookup), max ${fmtMs(Math.max(...r.idleWrites))}`,
    goal: '',
    verdict: '',
  });
  for (const run of r.runs) {
    const w = run.writes.length > 0 ? run.writes : [0];
    const rowsChanged = Object.values(run.rowsTouched).reduce((a, b) => a + b, 0);
    lines.push({
      label: run.label,
      value: `lock ${fmtMs(run.lockHeldMs)}`,
      detail:
        `erasure ${fmtMs(run.totalMs)} (${rowsChanged} rows${run.label.startsWith('dry') ? ' it would change' : ''}` +
        `${run.rounds === null ? '' : `, ${run.rounds} round${run.rounds === 1 ? '' : 's'} of listing`}); ` +
        `a concurrent write took at most ${fmtMs(Math.max(...w))} (p99 ${fmtMs(quantile(w, 0.99))}, ${run.writes.length} writes meanwhile; ` +
        `${run.writesWhileLocked.length} overlapped the lock, at most ${fmtMs(Math.max(0, ...run.writesWhileLocked))})`,
      goal: '',
      verdict: '',
    });
  }
  for (const ch of r.checks)
    lines.push({ label: ch.label, value: ch.ok ? 'yes' : 'NO', detail: ch.detail, goal: '(goal yes)', verdict: ch.ok ? 'PASS' : 'MISS' });
  const notes = [`load steps: ${r.loadSteps.map((s) => `${s.step} ${(s.ms / 1000).toFixed(1)} s`).join(', ')}`];
  return { lines, notes };
}
