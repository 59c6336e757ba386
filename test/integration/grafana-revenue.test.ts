/**
 * The revenue dashboard that ships in config/grafana/staysync-revenue.json, against a mirror
 * whose figures are worked out by hand. Bookings are written version by version through the
 * daemon's own write path (as pace.test.ts does), a reader is made as `grant-reader` makes it
 * (no personal data, every property), and every SQL of the dashboard (each panel's and the
 * property selector's) runs as that reader after its Grafana macros and variables are
 * expanded, for the property chosen and a fixed time range: the 90 nights from today. Each
 * panel must return the figures below; a panel the test does not know fails it, and so does a
 * macro or variable the expander does not know (Grafana would send it unexpanded or
 * differently).
 *
 * The views read the clock (on the books now, pickup of the last 7 days, pace's closes already
 * passed), so the fixture is laid out around today: T is the UTC date when the test starts
 * (the property has no time zone in content: UTC), day T+5 is "T+5", and every booking is made
 * at 10:00 (09:00 for E) on a day before T, so it is in the past whenever the test runs.
 *
 * Property P ("Hotel Example", 10 rooms in the PMS rooms list), one room a booking, no taxes:
 *
 * | booking | currency | channel | made | night(s) at net price | later |
 * |---|---|---|---|---|---|
 * | A | EUR | BGC (Booking.com) | T-30 | T+5 100.00, T+6 100.00 | |
 * | B | EUR | EXP (Expedia) | T-3 | T+5 120.00 | |
 * | C | EUR | BGC | T-20 | T+20 150.00 | cancelled T-1 |
 * | D | EUR | BookingEngine (no code) | T-10 | T+20 90.00 | re-priced to 110.00 on T-2 |
 * | E | EUR | EXP | T-1 09:00 | T+89 200.00, T+90 200.00 | |
 * | F | EUR | BGC | T-50 | T-1 70.00 | |
 * | G | USD | BGC | T-15 | T+6 130.00 | |
 * | H | EUR | EXP | T-7 | T+30 95.00 | cancelled T-6 |
 * | L1 | EUR | BGC | T-380 | T-359 (= T+5 - 364) 80.00 | |
 * | L2 | EUR | BGC | T-362 | T-359 90.00 | |
 * | L3 | EUR | BGC | T-400 | T-344 (= T+20 - 364) 100.00 | cancelled T-350 |
 *
 * Property Q ("Other Hotel", in Asia/Tokyo, 9 hours ahead of UTC): Q1 made T-5 for T+5 at
 * 500.00, Q0 made T-30 for T-1 at 60.00 (its local dates); in no figure of P.
 *
 * The time range holds the nights T to T+89: F (T-1) and E's second night (T+90) are outside.
 * "Same time last year" is the night 364 days earlier as it stood 364 days ago (at T-364 and
 * the time of day of the test): L1 was on the books then, L2 (made T-362) not yet, L3 still
 * (cancelled later, at T-350).
 */
import pg from 'pg';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exactTypes } from '../../src/store/database.js';
import { grantReader } from '../../src/store/reader-role.js';
import { oneRoomBooking, writeBookingVersion, type OneRoomVersion } from '../helpers/booking-versions.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { dropRoles } from '../helpers/readers.js';

const dashboardPath = resolve('config/grafana/staysync-revenue.json');
const P = '700300';
const Q = '700301';
const READER = `grafana_${process.pid}`;
const PASSWORD = 'grafana-reader-secret';

// ------------------------------------------------------------------ the dashboard's SQL

interface Target {
  refId: string;
  rawSql: string;
  format: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
}
interface Variable {
  name: string;
  type: string;
  query: unknown;
  datasource?: { type: string; uid: string };
}
interface Dashboard {
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Variable[] };
  time: { from: string; to: string };
}

interface Expansion {
  /** $__timeFrom() and $__timeTo(): the time range as Grafana's PostgreSQL data source writes it. */
  from: string;
  to: string;
  /** Single-valued variables by name. */
  variables: Record<string, string>;
}

/**
 * Grafana's PostgreSQL macros and variables, as far as the dashboard uses them:
 * `$__timeFrom()` and `$__timeTo()` become the range's bounds as quoted UTC timestamps
 * ('2026-03-01T00:00:00Z', as the data source's macro engine formats them); `${name}` (a single value, no format) is the value as is (the
 * reporting schema); `${name:sqlstring}` is the value quoted as an SQL string, quotes doubled.
 * Anything else with a `$` fails: a macro or format Grafana expands in a way not checked here.
 */
function expand(sql: string, e: Expansion): string {
  const withMacros = sql.replace(/\$__(\w+)(\([^)]*\))?/g, (m, name: string, args: string | undefined) => {
    if (name === 'timeFrom' && args === '()') return `'${e.from}'`;
    if (name === 'timeTo' && args === '()') return `'${e.to}'`;
    throw new Error(`a macro the test does not expand: ${m}`);
  });
  const out = withMacros.replace(/\$\{(\w+)(?::(\w+))?\}|\$(\w+)|\[\[(\w+)\]\]/g, (m, braced: string | undefined, format: string | undefined) => {
    const value = braced !== undefined ? e.variables[braced] : undefined;
    if (value === undefined) throw new Error(`a variable the test does not expand: ${m}`);
    if (format === undefined) return value;
    if (format === 'sqlstring') return `'${value.replaceAll("'", "''")}'`;
    throw new Error(`a variable format the test does not expand: ${m}`);
  });
  if (out.includes('$')) throw new Error(`left unexpanded: ${out}`);
  return out;
}

const dashboard = JSON.parse(readFileSync(dashboardPath, 'utf8')) as Dashboard;
const queryPanels = dashboard.panels.filter((p) => p.type !== 'row');

// ------------------------------------------------------------------ the fixture

const DAY = 86_400_000;
let T: string;
/** The date `offset` days from T. */
const d = (offset: number) => new Date(Date.parse(`${T}T00:00:00Z`) + offset * DAY).toISOString().slice(0, 10);
/** 10:00 (or `time`) UTC on the day `offset` days from T. */
const at = (offset: number, time = '10:00') => `${d(offset)}T${time}:00Z`;

let h: Harness;
let reader: pg.Client;

type Version = OneRoomVersion & { currency?: string; source?: { type: string; code?: string } };

async function write(property: string, number: string, v: Version): Promise<void> {
  const body = oneRoomBooking(property, number, v);
  if (v.currency) body.booking.currencyCode = v.currency;
  // A booking of the booking engine has no channel code: its point-of-sale type names it.
  if (v.source) Object.assign(body.booking, { source: v.source });
  await writeBookingVersion(await ctx(), property, body);
}

let context: Awaited<ReturnType<Harness['context']>> | undefined;
const ctx = async () => (context ??= await h.context());

beforeAll(async () => {
  h = await startHarness({ sim: { properties: [] } });
  [{ t: T }] = (await h.sql<{ t: string }>(`SELECT (now() AT TIME ZONE 'UTC')::date::text AS t`)) as [{ t: string }];
  const BGC = { type: 'Channel', code: 'BGC' };
  const EXP = { type: 'Channel', code: 'EXP' };
  const ENGINE = { type: 'BookingEngine' };
  // Last year, in the order things happened.
  await write(P, 'L3', { created: at(-400), nights: [[d(-344), '100.00']], source: BGC });
  await write(P, 'L1', { created: at(-380), nights: [[d(-359), '80.00']], source: BGC });
  await write(P, 'L2', { created: at(-362), nights: [[d(-359), '90.00']], source: BGC });
  await write(P, 'L3', { created: at(-400), modified: at(-350), cancelled: at(-350), nights: [[d(-344), '100.00']], source: BGC });
  // This year.
  await write(P, 'F', { created: at(-50), nights: [[d(-1), '70.00']], source: BGC });
  await write(P, 'A', {
    created: at(-30),
    nights: [
      [d(5), '100.00'],
      [d(6), '100.00'],
    ],
    source: BGC,
  });
  await write(P, 'C', { created: at(-20), nights: [[d(20), '150.00']], source: BGC });
  await write(P, 'G', { created: at(-15), nights: [[d(6), '130.00']], currency: 'USD', source: BGC });
  await write(P, 'D', { created: at(-10), nights: [[d(20), '90.00']], source: ENGINE });
  await write(P, 'H', { created: at(-7), nights: [[d(30), '95.00']], source: EXP });
  await write(P, 'H', { created: at(-7), modified: at(-6), cancelled: at(-6), nights: [[d(30), '95.00']], source: EXP });
  await write(Q, 'Q0', { created: at(-30), nights: [[d(-1), '60.00']], source: BGC });
  await write(Q, 'Q1', { created: at(-5), nights: [[d(5), '500.00']], source: BGC });
  await write(P, 'B', { created: at(-3), nights: [[d(5), '120.00']], source: EXP });
  await write(P, 'D', { created: at(-10), modified: at(-2), nights: [[d(20), '110.00']], source: ENGINE });
  await write(P, 'C', { created: at(-20), modified: at(-1), cancelled: at(-1), nights: [[d(20), '150.00']], source: BGC });
  await write(P, 'E', {
    created: at(-1, '09:00'),
    nights: [
      [d(89), '200.00'],
      [d(90), '200.00'],
    ],
    source: EXP,
  });
  await h.sql(`INSERT INTO properties (property_id, name, raw, content_hash) VALUES ($1, 'Hotel Example', '{}', 'x'), ($2, 'Other Hotel', '{}', 'x')`, [P, Q]);
  await h.sql(`UPDATE properties SET time_zone = 'Asia/Tokyo' WHERE property_id = $1`, [Q]);
  await h.sql(`INSERT INTO pms_rooms (property_id, room_id, raw, content_hash) SELECT $1, 'R' || i, '{}', 'x' FROM generate_series(1, 10) i`, [P]);

  // The login a reporting tool gets from `staysync grant-reader <role>`: no personal data, every property.
  await grantReader((await ctx()).db, {
    role: READER,
    password: PASSWORD,
    schema: h.schema,
    reportingSchema: h.config.database.reportingSchema,
  });
  const u = new URL(h.dbUrl);
  u.username = READER;
  u.password = PASSWORD;
  // Numbers and dates as text, exactly as PostgreSQL writes them (numeric's scale included).
  reader = new pg.Client({ connectionString: u.toString(), types: exactTypes });
  await reader.connect();
}, 60_000);

afterAll(async () => {
  await reader?.end();
  if (h) await dropRoles((text) => h.sql(text), [READER]);
  await h?.close();
});

/**
 * The time range "now/d" to "now+89d/d" (the nights T to T+89) as Grafana's PostgreSQL data
 * source writes it (RFC 3339 in UTC, fractions of a second when there are some), with the
 * browser in UTC; and with the browser in Tokyo, whose day starts at 15:00 UTC the day before.
 */
const inUtc = () => ({ from: `${d(0)}T00:00:00Z`, to: `${d(89)}T23:59:59.999Z` });
const inTokyo = () => ({ from: `${d(-1)}T15:00:00Z`, to: `${d(89)}T14:59:59.999Z` });

/** Runs a dashboard SQL as the reader, expanded for a property (P) and a time range (T to T+89 in UTC). */
async function run(sql: string, property = P, range = inUtc()): Promise<Record<string, string | null>[]> {
  const expanded = expand(sql, { ...range, variables: { reporting: h.config.database.reportingSchema, property } });
  return (await reader.query<Record<string, string | null>>(expanded)).rows;
}

function panelSql(title: string): string {
  const panel = queryPanels.find((p) => p.title === title);
  if (!panel?.targets || panel.targets.length !== 1) throw new Error(`no panel with one query: ${title}`);
  return panel.targets[0]!.rawSql;
}

/** A night of the time series panels: the date of T+offset as a timestamp, the way the reader reads it. */
const night = (offset: number) => `${d(offset)} 00:00:00`;

// ------------------------------------------------------------------ the tests

describe('the revenue dashboard (config/grafana/staysync-revenue.json)', () => {
  it('is a Grafana dashboard on a PostgreSQL data source chosen by a variable, every panel and query on it', () => {
    expect(dashboard.schemaVersion).toBe(39); // as the operations dashboard
    expect(dashboard.time).toEqual({ from: 'now/d', to: 'now+89d/d' }); // tonight and the next 89 nights
    const variables = dashboard.templating.list;
    expect(variables.map((v) => [v.name, v.type])).toEqual([
      ['datasource', 'datasource'],
      ['reporting', 'textbox'],
      ['property', 'query'],
    ]);
    expect(variables[0]!.query).toBe('grafana-postgresql-datasource');
    expect(variables[2]!.datasource).toEqual({ type: 'grafana-postgresql-datasource', uid: '${datasource}' });
    for (const p of queryPanels) {
      expect(p.datasource, p.title).toEqual({ type: 'grafana-postgresql-datasource', uid: '${datasource}' });
      for (const t of p.targets ?? []) expect(t.datasource, p.title).toEqual(p.datasource);
    }
    // Every panel is checked below: a new one without its figures fails here.
    expect(queryPanels.map((p) => p.title).sort()).toEqual(
      [
        'On the books against same time last year, by night',
        'On the books against same time last year, in total',
        'Pace: the nights of the time range, days before',
        'Pickup of the last 7 days, by night',
        'Pickup of the last 7 days, in total',
        'Occupancy, by night',
        'ADR and RevPAR, by night',
        'Channel mix',
        'Cancellations by channel',
      ].sort(),
    );
  });

  it('expands the macros and variables it uses, and fails on any other', () => {
    const e = { from: 'F', to: 'T', variables: { reporting: 'rep', property: "o'k" } };
    expect(expand('$__timeFrom() $__timeTo() ${reporting}.x ${property:sqlstring}', e)).toBe(`'F' 'T' rep.x 'o''k'`);
    expect(() => expand('$__timeFilter(stay_date)', e)).toThrow(/macro/);
    expect(() => expand('$property', e)).toThrow(/variable/);
    expect(() => expand('${property:csv}', e)).toThrow(/format/);
    expect(() => expand('${unknown}', e)).toThrow(/variable/);
  });

  it('lists the properties in the property selector, as the reader', async () => {
    const selector = dashboard.templating.list.find((v) => v.name === 'property')!;
    expect(await run(selector.query as string)).toEqual([
      { __value: P, __text: 'Hotel Example' },
      { __value: Q, __text: 'Other Hotel' },
    ]);
  });

  it('shows on the books against same time last year, by night and in total', async () => {
    const byNight = await run(panelSql('On the books against same time last year, by night'));
    // One row a night, T to T+89: zeros but for these nights (counts of room-nights, any currency).
    expect(byNight).toHaveLength(90);
    expect(byNight[0]!.time).toBe(night(0));
    expect(byNight[89]!.time).toBe(night(89));
    const nonZero = byNight.filter((r) => r['On the books'] !== '0' || r['Same time last year'] !== '0');
    expect(nonZero).toEqual([
      { time: night(5), 'On the books': '2', 'Same time last year': '1' }, // A, B (not Q1); L1 (L2 made later)
      { time: night(6), 'On the books': '2', 'Same time last year': '0' }, // A (EUR), G (USD)
      { time: night(20), 'On the books': '1', 'Same time last year': '1' }, // D (C cancelled); L3, cancelled only later
      { time: night(89), 'On the books': '1', 'Same time last year': '0' }, // E's first night (its second is T+90)
    ]);

    // EUR: A 200.00 + B 120.00 + D 110.00 + E 200.00 = 630.00 in 5 room-nights; last year
    // L1 80.00 + L3 100.00 = 180.00 in 2. USD: G, 130.00.
    expect(await run(panelSql('On the books against same time last year, in total'))).toEqual([
      {
        Currency: 'EUR',
        'Room nights': '5',
        'Room nights STLY': '2',
        'Room revenue net': '630.00',
        'Room revenue net STLY': '180.00',
        'Room revenue vs STLY': '450.00',
      },
      {
        Currency: 'USD',
        'Room nights': '1',
        'Room nights STLY': '0',
        'Room revenue net': '130.00',
        'Room revenue net STLY': '0',
        'Room revenue vs STLY': '130.00',
      },
    ]);
  });

  it('shows the pace of the nights of the time range', async () => {
    // A close k days before night N has passed when N - k < T: offsets 0 to 3 not yet for any
    // night with bookings (T+5 is the first); 7 and 14 for T+5 and T+6; 30 for T+20 too; 60
    // for T+30 too (H, cancelled, is in none of the closes); 90 for T+89 too. At the close of day N - k:
    //   k = 7 (T-2 for T+5, T-1 for T+6): A, B; A, G → 4; STLY (T-366) L1 → 1
    //   k = 14 (T-9, T-8): A; A, G → 3; STLY (T-373) L1 → 1
    //   k = 30 (T-25, T-24, T-10): A; A; C and D (made T-10) → 4; STLY L3 at T-374 → 1, L1 not made at T-389
    //   k = 60 (T-55, T-54, T-40, T-30): nothing made yet, this year or last
    //   k = 90 (T-85, T-84, T-70, T-60, T-1): E, made T-1 → 1
    expect(await run(panelSql('Pace: the nights of the time range, days before'))).toEqual([
      { 'Days before': '90', Nights: '5', 'This year': '1', 'Same time last year': '0' },
      { 'Days before': '60', Nights: '4', 'This year': '0', 'Same time last year': '0' },
      { 'Days before': '30', Nights: '3', 'This year': '4', 'Same time last year': '1' },
      { 'Days before': '14', Nights: '2', 'This year': '3', 'Same time last year': '1' },
      { 'Days before': '7', Nights: '2', 'This year': '4', 'Same time last year': '1' },
    ]);
  });

  it('shows the pickup of the last 7 days (T-6 to T)', async () => {
    // B (T-3) +1 on T+5; C cancelled (T-1) -1 on T+20, D re-priced (T-2) 0 rooms and +20.00;
    // E (T-1) +1 on T+89; H cancelled (T-6) -1 on T+30, its making (T-7) is a day before the
    // window. A, C, D, G were made before T-6; Q1 is another property's.
    expect(await run(panelSql('Pickup of the last 7 days, by night'))).toEqual([
      { time: night(5), 'Rooms picked up': '1' },
      { time: night(20), 'Rooms picked up': '-1' },
      { time: night(30), 'Rooms picked up': '-1' },
      { time: night(89), 'Rooms picked up': '1' },
    ]);
    // Gained B, E; lost C, H. 120.00 - 150.00 + 20.00 + 200.00 - 95.00 = 95.00
    expect(await run(panelSql('Pickup of the last 7 days, in total'))).toEqual([
      { Currency: 'EUR', Gained: '2', Lost: '2', Net: '0', 'Room revenue net': '95.00' },
    ]);
  });

  it('shows occupancy, ADR and RevPAR of the nights (10 rooms)', async () => {
    const occupancy = await run(panelSql('Occupancy, by night'));
    expect(occupancy).toHaveLength(90);
    // Rooms sold of every currency over the 10 rooms: T+5 A, B; T+6 A, G; T+20 D; T+89 E.
    expect(occupancy.filter((r) => r.Occupancy !== '0')).toEqual([
      { time: night(5), Occupancy: '0.2000' },
      { time: night(6), Occupancy: '0.2000' },
      { time: night(20), Occupancy: '0.1000' },
      { time: night(89), Occupancy: '0.1000' },
    ]);
    // ADR = room revenue / paid rooms, RevPAR = room revenue / 10, per currency.
    expect(await run(panelSql('ADR and RevPAR, by night'))).toEqual([
      { time: night(5), metric: 'ADR EUR', value: '110.00' }, // (100.00 + 120.00) / 2
      { time: night(5), metric: 'RevPAR EUR', value: '22.00' },
      { time: night(6), metric: 'ADR EUR', value: '100.00' },
      { time: night(6), metric: 'ADR USD', value: '130.00' },
      { time: night(6), metric: 'RevPAR EUR', value: '10.00' },
      { time: night(6), metric: 'RevPAR USD', value: '13.00' },
      { time: night(20), metric: 'ADR EUR', value: '110.00' }, // D as re-priced
      { time: night(20), metric: 'RevPAR EUR', value: '11.00' },
      { time: night(89), metric: 'ADR EUR', value: '200.00' },
      { time: night(89), metric: 'RevPAR EUR', value: '20.00' },
    ]);
  });

  it('shows the channel mix and the cancellations by channel', async () => {
    const byChannel = (rows: Record<string, string | null>[]) =>
      [...rows].sort((a, b) => `${a.Channel} ${a.Currency}`.localeCompare(`${b.Channel} ${b.Currency}`));
    // 6 room-nights on the books: Booking.com A's 2 (EUR) and G (USD), Expedia B and E's first
    // night, the booking engine D. Shares of the 6.
    expect(byChannel(await run(panelSql('Channel mix')))).toEqual([
      { Channel: 'Booking engine (direct)', Currency: 'EUR', 'Room nights': '1', 'Share of room nights': '0.1667', 'Room revenue net': '110.00' },
      { Channel: 'Booking.com', Currency: 'EUR', 'Room nights': '2', 'Share of room nights': '0.3333', 'Room revenue net': '200.00' },
      { Channel: 'Booking.com', Currency: 'USD', 'Room nights': '1', 'Share of room nights': '0.1667', 'Room revenue net': '130.00' },
      { Channel: 'Expedia', Currency: 'EUR', 'Room nights': '2', 'Share of room nights': '0.3333', 'Room revenue net': '320.00' },
    ]);
    // Cancelled: C, 1 of the 3 room-nights booked through Booking.com in EUR for these nights
    // (A's 2, C); H, 1 of Expedia's 3 (B, E's first night, H). Those two first.
    const cancellations = await run(panelSql('Cancellations by channel'));
    const one = (lost: string) => ({ 'Cancelled bookings': '1', 'Cancelled room nights': '1', 'Cancellation rate': '0.3333', 'Room revenue lost net': lost });
    const none = { 'Cancelled bookings': '0', 'Cancelled room nights': '0', 'Cancellation rate': '0.0000', 'Room revenue lost net': '0' };
    expect(cancellations.slice(0, 2)).toEqual([
      { Channel: 'Booking.com', Currency: 'EUR', ...one('150.00') },
      { Channel: 'Expedia', Currency: 'EUR', ...one('95.00') },
    ]);
    expect(byChannel(cancellations.slice(2))).toEqual([
      { Channel: 'Booking engine (direct)', Currency: 'EUR', ...none },
      { Channel: 'Booking.com', Currency: 'USD', ...none },
    ]);
  });

  it('shows another property its own figures only, its nights in its own time zone', async () => {
    // Q, looked at from Tokyo: the range starts at T 00:00 in Tokyo (15:00 UTC on T-1), the
    // night T for Q. Q1, one room on T+5 at 500.00, made T-5 (within the last 7 days); Q0's
    // night T-1 is before the range (it would be in if the range's start were read as a UTC date).
    const totals = await run(panelSql('On the books against same time last year, in total'), Q, inTokyo());
    expect(totals).toEqual([
      {
        Currency: 'EUR',
        'Room nights': '1',
        'Room nights STLY': '0',
        'Room revenue net': '500.00',
        'Room revenue net STLY': '0',
        'Room revenue vs STLY': '500.00',
      },
    ]);
    expect(await run(panelSql('Pickup of the last 7 days, by night'), Q, inTokyo())).toEqual([{ time: night(5), 'Rooms picked up': '1' }]);
    // The day did not change while the test ran (T would be stale: run it again).
    const [{ t }] = (await h.sql<{ t: string }>(`SELECT (now() AT TIME ZONE 'UTC')::date::text AS t`)) as [{ t: string }];
    expect(t).toBe(T);
  });
});
