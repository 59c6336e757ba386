/**
 * Loyalty cards of PMS persons, against the simulator and real PostgreSQL: read with the
 * person's profile, card numbers only with personal data on, cleared when the person is erased
 * (forget-guest, retention), quarantined when they do not parse (the numbers stripped as the
 * policy says), and not read at all with pms.loyaltyCards off, which is the default without
 * personal data; `status` says what the PMS backfill still has to read, and how long it takes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { forgetGuest, parseSelector } from '../../src/privacy/forget-guest.js';
import { retentionPass } from '../../src/privacy/retention.js';
import { retryQuarantine } from '../../src/replay/quarantine-retry.js';
import { rebuild } from '../../src/replay/rebuild.js';
import { readableSchemaOf } from '../../src/config/schema-names.js';
import { daemonEnv, runCli } from '../helpers/cli.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;
const cardsPath = (personId: string) => `/api/pms/v2/properties/${P}/guests/${personId}/loyalty-cards`;

/** Every person of the simulated reservations with the cards the simulator serves, by person id. */
function simulatedCards(h: Harness): Map<string, { programId: string | null; cardNumber: string | null }[]> {
  const out = new Map<string, { programId: string | null; cardNumber: string | null }[]>();
  for (const r of h.sim.pmsReservations(P)) {
    const ids = [r.customer?.pmsPersonId, ...r.roomStays.flatMap((s) => s.guestsIds)].filter((x): x is string => !!x);
    for (const id of ids) out.set(id, h.sim.pmsLoyaltyCards(P, id) ?? []);
  }
  return out;
}

/** Cards in the mirror's order: by person, then position. */
const byPerson = (a: { pms_person_id: string; position: number }, b: { pms_person_id: string; position: number }) =>
  a.pms_person_id.localeCompare(b.pms_person_id) || a.position - b.position;

const mirroredCards = (h: Harness) =>
  h.sql<AnyRecord>(`SELECT pms_person_id, position, program_id, card_number FROM pms_guest_loyalty_cards ORDER BY pms_person_id, position`);

describe('PMS loyalty cards', () => {
  it('are mirrored with their programme; the numbers only with personal data on; every person read once', async () => {
    // 30 bookings: 84 persons, 8 of them with a card (the simulator's seed), enough for every
    // step below (the card reads, an erased holder, a second read, retention); 120 read 313 persons for the same.
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { personalData: true } } });
    h.sim.stats.requestLog = [];
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });

    const expected = [...simulatedCards(h)].flatMap(([id, cards]) =>
      cards.map((c, position) => ({ pms_person_id: id, position, program_id: c.programId, card_number: c.cardNumber })),
    );
    expect(expected.length).toBeGreaterThan(5);
    expect(await mirroredCards(h)).toEqual(expected.sort((a, b) => a.pms_person_id.localeCompare(b.pms_person_id) || a.position - b.position));
    // Each mirrored person's cards were read, once.
    const reads = h.sim.stats.requestLog.filter((e) => e.path.endsWith('/loyalty-cards'));
    expect(new Set(reads.map((e) => e.path)).size).toBe(reads.length);
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_guests WHERE loyalty_cards_read_at IS NULL`)).toEqual([{ n: 0 }]);
    expect(reads.length).toBe((await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_guests`))[0]!.n);

    // forget-guest of a card holder: the number goes, the programme stays.
    const holder = expected[0]!.pms_person_id;
    const done = await forgetGuest(ctx.db, parseSelector('person', holder), { dryRun: false });
    expect(done.persons).toBeGreaterThan(0);
    expect(await h.sql(`SELECT program_id, card_number FROM pms_guest_loyalty_cards WHERE pms_person_id = $1`, [holder])).toEqual(
      expected.filter((c) => c.pms_person_id === holder).map((c) => ({ program_id: c.program_id, card_number: null })),
    );
    // A later read of the erased person's cards keeps them without the number.
    await ctx.db.updateTable('pms_guests').set({ loyalty_cards_read_at: null }).execute();
    await ctx.db
      .updateTable('pms_reservations')
      .set({ modified_at: new Date('2000-01-01T00:00:00Z') })
      .execute();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await h.sql(`SELECT card_number FROM pms_guest_loyalty_cards WHERE pms_person_id = $1`, [holder])).toEqual(
      expected.filter((c) => c.pms_person_id === holder).map(() => ({ card_number: null })),
    );

    // Retention past every stay: no card number is left.
    await retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: 1, now: new Date('2100-01-01T00:00:00Z'), unrouted: true });
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards WHERE card_number IS NOT NULL`)).toEqual([{ n: 0 }]);
    expect((await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`))[0]!.n).toBe(expected.length);
  });

  it('without personal data the numbers are not kept, in the rows or in a quarantined page; quarantine retry mirrors a page that parses', async () => {
    // 30 bookings: 8 card holders (one broken page, the others mirrored), as 120 had 20.
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] } });
    const holders = [...simulatedCards(h)].filter(([, cards]) => cards.length > 0).map(([id]) => id);
    expect(holders.length).toBeGreaterThan(2);
    const broken = holders[0]!;
    h.sim.faults.rewriteBody = (path, body) => {
      if (path !== cardsPath(broken)) return undefined;
      const page = body as { loyaltyCards: AnyRecord[] };
      page.loyaltyCards[0]!.programId = { not: 'a text' };
      return page;
    };
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });

    const rows = await mirroredCards(h);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.card_number === null && r.program_id !== null)).toBe(true);
    expect(rows.some((r) => r.pms_person_id === broken)).toBe(false);
    const [q] = await h.sql<AnyRecord>(`SELECT stream, entity_key, raw_body FROM quarantine`);
    expect(q).toMatchObject({ stream: 'pms_loyalty_cards', entity_key: broken });
    const number = h.sim.pmsLoyaltyCards(P, broken)![0]!.cardNumber!;
    expect(q!.raw_body).not.toContain(number);
    expect(await h.sql(`SELECT loyalty_cards_read_at IS NULL AS unread FROM pms_guests WHERE pms_person_id = $1`, [broken])).toEqual([{ unread: true }]);

    // The page as the provider serves it now (it parses): retry mirrors it, numbers withheld still.
    await h.sql(`UPDATE quarantine SET raw_body = $1`, [
      JSON.stringify({ warnings: [], errors: [], loyaltyCards: h.sim.pmsLoyaltyCards(P, broken), hasNextPage: false, nextPageToken: null }),
    ]);
    const retried = await retryQuarantine({ handle: ctx, config: h.config, logger: h.logger });
    expect(retried.byStream['pms_loyalty_cards']).toMatchObject({ retried: 1, mirrored: 1 });
    expect(await h.sql(`SELECT program_id, card_number FROM pms_guest_loyalty_cards WHERE pms_person_id = $1`, [broken])).toEqual(
      h.sim.pmsLoyaltyCards(P, broken)!.map((c) => ({ program_id: c.programId, card_number: null })),
    );
  });

  it('by default, without personal data, no card is asked for; status says what the PMS backfill has left and how long it takes at the limits', async () => {
    // A card without personal data is its programme id alone, at one request per person: 42 % of
    // a PMS backfill's requests. Read by default only with personal data on.
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] } });
    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(h.sim.stats.requestLog.filter((e) => e.path.endsWith('/loyalty-cards'))).toEqual([]);
    const reservations = (await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_reservations`))[0]!.n as number;
    expect(reservations).toBeGreaterThan(10);
    const persons = (await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_guests`))[0]!.n as number;

    // As a backfill leaves them: 10 reservations' invoices not read yet.
    await h.sql(`UPDATE pms_reservations SET invoices_read_at = NULL WHERE number IN (SELECT number FROM pms_reservations ORDER BY number LIMIT 10)`);
    // status at the production limits (the tests' own are faster).
    const statusEnv = daemonEnv(h, { allStreams: true, config: { rateLimits: {} } });
    const status = await runCli(['status'], statusEnv);
    expect(status.code).toBe(0);
    const line = status.stdout.split('\n').find((l) => l.startsWith('PMS backfill of connection default'));
    expect(line).toBe(
      'PMS backfill of connection default, still to read: the invoices of 10 reservations; at least 10 standard requests, about 12s at its limit of 3,000 an hour. ' +
        'Loyalty cards are not read (pms.loyaltyCards is off; unset, it follows pms.personalData).',
    );
    expect(status.stdout).not.toMatch(/not read yet: .*loyalty cards/);
    const json = JSON.parse((await runCli(['status', '--json'], statusEnv)).stdout) as { pmsBackfill: AnyRecord[] };
    expect(json.pmsBackfill).toEqual([
      { connection: 'default', reservations: 0, invoices: 10, loyaltyCards: null, requests: 10, perHour: 3000, endsInSeconds: 12, endsIn: '12s' },
    ]);

    // Cards on: each person is one more request.
    const withCards = await runCli(['status'], { ...statusEnv, STAYSYNC_PMS_LOYALTY_CARDS: 'true' });
    expect(withCards.stdout).toContain(
      `PMS backfill of connection default, still to read: the invoices of 10 reservations, the loyalty cards of ${persons} persons; at least ${10 + persons} standard requests`,
    );
  });

  it('keep each card as received in raw: a field the typed columns do not have is not lost; the number only with personal data; erased with its person; rebuilt from raw', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { personalData: true } } });
    // A field the document does not show (yet): raw keeps what the provider sends.
    h.sim.faults.rewriteBody = (path, body) =>
      /\/guests\/[^/]+\/loyalty-cards$/.test(path)
        ? { ...(body as AnyRecord), loyaltyCards: (body as { loyaltyCards: AnyRecord[] }).loyaltyCards.map((c) => ({ ...c, tier: 'Gold' })) }
        : undefined;
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const sent = [...simulatedCards(h)].flatMap(([id, cards]) => cards.map((c, position) => ({ pms_person_id: id, position, raw: { ...c, tier: 'Gold' } })));
    expect(sent.length).toBeGreaterThan(5);
    const stored = () => h!.sql<AnyRecord>(`SELECT pms_person_id, position, raw FROM pms_guest_loyalty_cards ORDER BY pms_person_id, position`);
    expect(await stored()).toEqual(sent.sort(byPerson));
    // A reader without personal data does not see it (staysync_readable has no raw).
    expect(
      await h.sql(
        `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'pms_guest_loyalty_cards' AND column_name IN ('raw', 'card_number')`,
        [readableSchemaOf(h.schema)],
      ),
    ).toEqual([]);

    // forget-guest of a holder: the number leaves raw too, the rest stays.
    const holder = sent[0]!.pms_person_id;
    await forgetGuest(ctx.db, parseSelector('person', holder), { dryRun: false });
    const withoutNumber = (c: AnyRecord) => Object.fromEntries(Object.entries(c).filter(([k]) => k !== 'cardNumber'));
    expect(await h.sql(`SELECT raw FROM pms_guest_loyalty_cards WHERE pms_person_id = $1 ORDER BY position`, [holder])).toEqual(
      sent.filter((c) => c.pms_person_id === holder).map((c) => ({ raw: withoutNumber(c.raw) })),
    );

    // A rebuild derives the typed columns from raw again.
    await h.sql(`UPDATE pms_guest_loyalty_cards SET program_id = 'corrupted'`);
    await rebuild({ handle: ctx, config: h.config, logger: h.logger });
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards WHERE program_id = 'corrupted'`)).toEqual([{ n: 0 }]);
    expect(await mirroredCards(h)).toEqual(
      sent.map((c) => ({
        pms_person_id: c.pms_person_id,
        position: c.position,
        program_id: c.raw.programId,
        card_number: c.pms_person_id === holder ? null : c.raw.cardNumber,
      })),
    );

    // Retention past every stay: no raw keeps a number, every other field stays.
    await retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: 1, now: new Date('2100-01-01T00:00:00Z'), unrouted: true });
    expect(await stored()).toEqual(sent.map((c) => ({ ...c, raw: withoutNumber(c.raw) })));
    // And the next pass finds nothing left to erase.
    const again = await retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: 1, now: new Date('2100-01-01T00:00:00Z'), unrouted: true });
    expect(again.rowsTouched).toEqual({});
  });

  it('without personal data, raw keeps a card without its number', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { loyaltyCards: true } } });
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const rows = await h.sql<AnyRecord>(`SELECT pms_person_id, position, raw FROM pms_guest_loyalty_cards ORDER BY pms_person_id, position`);
    expect(rows.length).toBeGreaterThan(5);
    expect(rows).toEqual(
      [...simulatedCards(h)]
        .flatMap(([id, cards]) => cards.map((c, position) => ({ pms_person_id: id, position, raw: { programId: c.programId } })))
        .sort(byPerson),
    );
  });

  it('pms.loyaltyCards off: no card is asked for', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { loyaltyCards: false } } });
    h.sim.stats.requestLog = [];
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(h.sim.stats.requestLog.filter((e) => e.path.endsWith('/loyalty-cards'))).toEqual([]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`)).toEqual([{ n: 0 }]);
    expect((await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_reservations`))[0]!.n).toBeGreaterThan(0);
  });
});
