/**
 * Personal data under the policy of src/mapping/personal-data.ts, against the simulator and
 * real PostgreSQL: with pms.personalData off, a PMS reservation that fails validation is
 * quarantined without its customer's e-mail, phone, birth date or documents (names stay, as in
 * the mirror); with it on, the body is kept as sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { streamNames } from '../../src/store/states.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;

/** What the test puts on the quarantined reservation's customer: each value must not be kept with personal data off. */
const PERSONAL = {
  email: 'ada.erase-me@example.com',
  phone: '+41790000123',
  birthDate: '1970-01-02',
  document: 'X1234567-PASSPORT',
};

/** Syncs the PMS side with one reservation served invalid (its room stays not a list), its customer carrying PERSONAL. */
async function quarantineOne(personalData: boolean): Promise<{ number: string; lastName: string; rows: AnyRecord[] }> {
  h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 12 }] }, config: { pms: { personalData } } });
  const ctx = await h.context();
  const target = h.sim.pmsReservations(P).find((r) => r.customer?.personName?.lastName);
  expect(target).toBeDefined();
  const number = target!.number;
  const lastName = target!.customer!.personName!.lastName!;
  h.sim.faults.rewriteBody = (path, body) => {
    if (path !== `/api/pms/v2/properties/${P}/reservations/${number}`) return undefined;
    const served = body as { reservation: AnyRecord };
    served.reservation.roomStays = 'not a list';
    served.reservation.customer = {
      ...served.reservation.customer,
      emails: [{ address: PERSONAL.email }],
      phones: [{ phoneNumber: PERSONAL.phone }],
      birthDate: PERSONAL.birthDate,
      documents: [{ number: PERSONAL.document }],
    };
    return served;
  };
  expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
  const rows = await h.sql<AnyRecord>('SELECT stream, entity_key, reason, raw_body FROM quarantine WHERE entity_key = $1', [number]);
  return { number, lastName, rows };
}

describe('personal data in quarantine', () => {
  it('keeps a quarantined PMS reservation without its customer’s personal data when pms.personalData is off', async () => {
    const { number, lastName, rows } = await quarantineOne(false);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.stream).toBe(streamNames.pmsReservations);
    const body = rows[0]!.raw_body as string;
    for (const value of Object.values(PERSONAL)) expect(body).not.toContain(value);
    // The rest is there to say what failed: the reservation, its number, the customer's name.
    const kept = JSON.parse(body) as { reservation: AnyRecord };
    expect(kept.reservation.number).toBe(number);
    expect(kept.reservation.roomStays).toBe('not a list');
    expect(kept.reservation.customer.personName.lastName).toBe(lastName);
    expect(kept.reservation.customer).not.toHaveProperty('emails');
    expect(kept.reservation.customer).not.toHaveProperty('birthDate');
  });

  it('keeps the body as sent when pms.personalData is on', async () => {
    const { rows } = await quarantineOne(true);
    expect(rows).toHaveLength(1);
    const body = rows[0]!.raw_body as string;
    expect(body).toContain(PERSONAL.email);
    expect(body).toContain(PERSONAL.birthDate);
  });
});
