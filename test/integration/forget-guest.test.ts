/**
 * `forget-guest` (src/privacy/forget-guest.ts), against the simulator and real PostgreSQL: one
 * guest is erased from every table of the mirror, the figures stay, the erasure is logged with
 * a keyed hash and no value, and the provider's next versions of the same booking and
 * reservation do not bring the guest back.
 */
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetGuest, parseSelector } from '../../src/privacy/forget-guest.js';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.js';
import { erasedAmong } from '../../src/store/repositories/erasures.js';
import { daemonEnv, freePort, runCli } from '../helpers/cli.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;

/** The guest the test erases: values found nowhere else, so that a scan for them is exact. */
const GUEST = {
  firstName: 'Zephyrine',
  lastName: 'Quaxley-Forgetme',
  email: 'Zephyrine.Q+stay@Example.org',
  phone: '+41 79 555 01 23',
  birthDate: '1971-07-19',
};
const VALUES = [GUEST.firstName, GUEST.lastName, GUEST.email.toLowerCase(), GUEST.phone, GUEST.birthDate];

/**
 * A mirror where GUEST is the customer of one booking and of its PMS reservation (the same
 * number), and a guest of the booking's first room stay; synced with every stream.
 */
async function mirrorWithGuest(personalData: boolean, pseudonymKey?: string): Promise<{ number: string }> {
  h = await startHarness({
    sim: { properties: [{ id: P, bookingCount: 12 }] },
    config: { pms: { personalData }, privacy: pseudonymKey ? { pseudonymKey } : {} },
  });
  const reservation = h.sim
    .pmsReservations(P)
    .find((r) => r.customer?.pmsPersonId && r.reservationStatus !== 'Cancelled' && h!.sim.bookings(P).some((b) => b.number === r.number));
  expect(reservation).toBeDefined();
  const number = reservation!.number;
  h.sim.faults.rewriteBody = (path, body) => {
    if (path === `/api/read-reservation/v1/properties/${P}/bookings/${number}`) {
      const b = (body as { booking: AnyRecord }).booking;
      b.customer = { firstName: GUEST.firstName, lastName: GUEST.lastName };
      b.roomStays[0].guests = [{ firstName: GUEST.firstName, lastName: GUEST.lastName }, ...(b.roomStays[0].guests ?? []).slice(1)];
      return body;
    }
    if (path === `/api/pms/v2/properties/${P}/reservations/${number}`) {
      const r = (body as { reservation: AnyRecord }).reservation;
      r.customer = {
        ...r.customer,
        personName: { firstName: GUEST.firstName, lastName: GUEST.lastName },
        emails: [{ address: GUEST.email }],
        phones: [{ phoneNumber: GUEST.phone }],
        birthDate: GUEST.birthDate,
      };
      r.customerComment = `call ${GUEST.firstName} on ${GUEST.phone}`;
      return body;
    }
    return undefined;
  };
  const ctx = await h.context();
  expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
  await h.release(ctx);
  return { number };
}

/** Every row of every table of the mirror schema whose text holds one of `values` (case-insensitive): table → count. */
async function traces(values: readonly string[]): Promise<Record<string, number>> {
  const tables = await h!.sql<{ table: string }>(
    `SELECT table_name AS table FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`,
    [h!.schema],
  );
  expect(tables.length).toBeGreaterThan(40);
  const found: Record<string, number> = {};
  for (const { table } of tables) {
    const [r] = await h!.sql<{ n: string }>(
      `SELECT count(*) AS n FROM "${table}" t WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) v WHERE strpos(lower(t::text), lower(v)) > 0)`,
      [values],
    );
    if (Number(r!.n) > 0) found[table] = Number(r!.n);
  }
  return found;
}

/** The booking's figures and the property's nightly facts: what an erasure must not change. */
async function figures(number: string): Promise<unknown> {
  return {
    booking: await h!.sql(
      'SELECT status, modified_at, arrival_at, departure_at, price_before_tax, price_after_tax, tax_amount, currency_code, source_code FROM bookings WHERE number = $1',
      [number],
    ),
    nights: await h!.sql('SELECT * FROM booking_daily_rates WHERE number = $1 ORDER BY stay_index, position', [number]),
    stays: await h!.sql('SELECT amount, check_in_at, check_out_at, status FROM pms_room_stays WHERE number = $1 ORDER BY position', [number]),
    facts: await h!.sql('SELECT * FROM nightly_facts ORDER BY 1, 2, 3, 4'),
  };
}

describe('forget-guest', () => {
  it('by e-mail erases the guest from every table, keeps the figures, logs a keyed hash, and a new version does not bring the guest back', async () => {
    const { number } = await mirrorWithGuest(true);
    expect(Object.keys(await traces(VALUES))).toEqual(expect.arrayContaining(['bookings', 'booking_guests', 'pms_reservations', 'pms_guests']));
    const before = await figures(number);

    const db = await openDatabase(h!.config, h!.logger);
    try {
      // A dry run changes nothing and says what would change.
      const dry = await forgetGuest(db.db, parseSelector('email', GUEST.email.toUpperCase()), { dryRun: true });
      expect(dry).toMatchObject({ dryRun: true, erasureId: null, persons: 1 });
      expect(dry.rowsTouched).toMatchObject({ bookings: 1, booking_guests: 1, pms_reservations: 1, pms_guests: 1 });
      expect(Object.keys(await traces(VALUES))).toContain('bookings');
      expect(await h!.sql('SELECT 1 FROM erasures')).toEqual([]);

      const done = await forgetGuest(db.db, parseSelector('email', ` ${GUEST.email} `), { dryRun: false });
      expect(done.rowsTouched).toEqual(dry.rowsTouched);
      expect(done.erasureId).toBeGreaterThan(0);
    } finally {
      await db.close();
    }

    expect(await traces(VALUES)).toEqual({});
    expect(await figures(number)).toEqual(before);
    expect(await h!.sql('SELECT customer_first_name, customer_last_name FROM bookings WHERE number = $1', [number])).toEqual([
      { customer_first_name: '(erased)', customer_last_name: '(erased)' },
    ]);
    const [log] = await h!.sql<AnyRecord>('SELECT reason, selector_kind, selector_hash, persons, rows_touched FROM erasures');
    expect(log).toMatchObject({ reason: 'request', selector_kind: 'email', persons: 1 });
    const [erasureKey] = await h!.sql<{ key: string }>('SELECT key FROM erasure_key');
    // The selector as HMAC-SHA-256 of the normalised e-mail under the mirror's key: never the value.
    expect(log!.selector_hash).toBe(createHmac('sha256', erasureKey!.key).update(`email:${GUEST.email.toLowerCase()}`).digest('hex'));
    expect(await h!.sql('SELECT kind FROM erased_identities ORDER BY kind')).toEqual(
      expect.arrayContaining([{ kind: 'booking_person' }, { kind: 'email' }, { kind: 'person' }, { kind: 'phone' }]),
    );

    // The provider changes the booking and the reservation: their new versions come with the guest, and are stored without.
    const [reservationBefore] = await h!.sql<AnyRecord>('SELECT modified_at FROM pms_reservations WHERE number = $1', [number]);
    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.pmsChangeRoom(P, number, 0);
    const ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    const [after] = await h!.sql<AnyRecord>('SELECT customer_first_name, modified_at FROM bookings WHERE number = $1', [number]);
    expect(after!.modified_at).not.toEqual((before as { booking: AnyRecord[] }).booking[0]!.modified_at);
    expect(after!.customer_first_name).toBe('(erased)');
    const [reservationAfter] = await h!.sql<AnyRecord>('SELECT modified_at, customer_last_name FROM pms_reservations WHERE number = $1', [number]);
    expect(reservationAfter!.modified_at).not.toEqual(reservationBefore!.modified_at);
    expect(reservationAfter!.customer_last_name).toBe('(erased)');
    expect(await traces(VALUES)).toEqual({});
  });

  it('by booking, with personal data off, erases its customer and guests; the command prints the tables and --dry-run changes nothing', async () => {
    const { number } = await mirrorWithGuest(false);
    const names = [GUEST.firstName, GUEST.lastName];
    expect(Object.keys(await traces(names))).toEqual(expect.arrayContaining(['bookings', 'booking_guests', 'pms_reservations']));
    // With personal data off, no e-mail, phone, birth date or comment was stored anywhere.
    expect(await traces([GUEST.email, GUEST.phone, GUEST.birthDate])).toEqual({});

    const env = daemonEnv(h!);
    const dry = await runCli(['forget-guest', '--booking', `${P}/${number}`, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^Dry run: nothing was changed\. Erasing the guests of booking .* would change \d+ rows/m);
    expect(dry.stdout).toMatch(/^ {2}bookings +1$/m);
    expect(Object.keys(await traces(names))).toContain('bookings');

    const run = await runCli(['forget-guest', `--booking=${P}/${number}`], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Erased the guests of booking .*: \d+ rows changed \(\d+ persons found\), logged as erasure 1:/m);
    expect(run.stdout).toMatch(/^ {2}booking_guests +\d+$/m);
    expect(await traces(names)).toEqual({});
    // Every guest of the booking, not only GUEST.
    expect(await h!.sql(`SELECT 1 FROM booking_guests WHERE number = $1 AND first_name <> '(erased)'`, [number])).toEqual([]);

    // Bad selectors: a usage error with the reason, and nothing erased.
    const bad = await runCli(['forget-guest', '--email', 'not-an-address'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--email "not-an-address" is not an e-mail address');
    const two = await runCli(['forget-guest', '--email', 'a@b.c', '--phone', '+41790000000'], env);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('forget-guest takes one of --email, --phone, --person, --booking');
    const badBooking = await runCli(['forget-guest', '--booking', 'no-slash'], env);
    expect(badBooking.code).toBe(2);
    expect(badBooking.stderr).toContain('--booking "no-slash" is not <propertyId>/<number>');
    const badPhone = await runCli(['forget-guest', '--phone', '12-3'], env);
    expect(badPhone.code).toBe(2);
    expect(badPhone.stderr).toContain('has fewer than 5 digits');
    expect(await h!.sql('SELECT erasure_id FROM erasures')).toHaveLength(1);

    // A database that does not answer, and a schema not migrated yet: exit 1 and the sentence, nothing erased.
    const down = await runCli(['forget-guest', '--person', '42'], { ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/test` });
    expect(down.code).toBe(1);
    expect(down.stdout + down.stderr).toMatch(/the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/test \(DATABASE_URL\) is unreachable/);
    const early = await runCli(['forget-guest', '--person', '42'], { ...env, STAYSYNC_DB_SCHEMA: `${h!.schema}_none` });
    expect(early.code).toBe(1);
    expect(early.stdout + early.stderr).toContain('run `staysync migrate` first');
  });

  it('by e-mail, with personal data off, finds the guest by pseudonym (the e-mail is stored nowhere) and keeps the next versions erased', async () => {
    const pseudonymKey = 'k'.repeat(40);
    const { number } = await mirrorWithGuest(false, pseudonymKey);
    const names = [GUEST.firstName, GUEST.lastName];
    expect(await traces([GUEST.email, GUEST.phone, GUEST.birthDate])).toEqual({});
    expect(Object.keys(await traces(names))).toEqual(expect.arrayContaining(['bookings', 'pms_reservations']));

    const db = await openDatabase(h!.config, h!.logger);
    try {
      // Without the key the e-mail finds nobody: it is stored nowhere.
      expect((await forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: true })).persons).toBe(0);
      const done = await forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: false, pseudonymKey });
      expect(done.persons).toBe(1);
      expect(done.rowsTouched).toMatchObject({ bookings: 1, pms_reservations: 1 });
    } finally {
      await db.close();
    }
    expect(await traces(names)).toEqual({});
    expect(await h!.sql('SELECT customer_email_hash FROM pms_reservations WHERE number = $1', [number])).toEqual([{ customer_email_hash: null }]);

    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.pmsChangeRoom(P, number, 0);
    const ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await traces(names)).toEqual({});
    expect(await h!.sql('SELECT customer_last_name, customer_email_hash FROM pms_reservations WHERE number = $1', [number])).toEqual([
      { customer_last_name: '(erased)', customer_email_hash: null },
    ]);
  });

  it('waits for a write of guest data in flight, and a write waits for it: the erasure lock', async () => {
    await mirrorWithGuest(false);
    const writer = new pg.Client({ connectionString: h!.dbUrl, options: `-c search_path=${h!.schema}` });
    await writer.connect();
    const db = await openDatabase(h!.config, h!.logger);
    try {
      // A write of guest data holds the lock shared from before it reads the erasure list until it commits.
      await writer.query('BEGIN');
      await writer.query(`SELECT pg_advisory_xact_lock_shared(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      let settled = false;
      const erasing = forgetGuest(db.db, parseSelector('person', 'no-such-person'), { dryRun: false }).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 700));
      expect(settled).toBe(false);
      await writer.query('COMMIT');
      expect((await erasing).erasureId).toBeGreaterThan(0);

      // And the other way: while an erasure runs, a write waits before it reads the list.
      await writer.query('BEGIN');
      await writer.query(`SELECT pg_advisory_xact_lock(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      let written = false;
      const ctx = await h!.context();
      const write = ctx.write((trx) => erasedAmong(trx, [{ kind: 'person', value: 'x' }])).finally(() => (written = true));
      await new Promise((r) => setTimeout(r, 700));
      expect(written).toBe(false);
      await writer.query('COMMIT');
      expect(await write).toEqual([false]);
    } finally {
      await writer.end();
      await db.close();
    }
  });
});
