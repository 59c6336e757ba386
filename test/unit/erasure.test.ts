/**
 * Erasure of any guest payload (src/mapping/erasure.ts erasablePayload, erasableQuarantineBody):
 * the identities of every person in a body, and the body with the erased ones erased, through
 * the personal-data policy.
 */
import { describe, expect, it } from 'vitest';
import {
  ERASED_BODY,
  erasableInvoices,
  erasablePayload,
  erasableQuarantineBody,
  erasePersonsIn,
  payerIdentitiesOf,
  payerIdentity,
  type Identity,
} from '../../src/mapping/erasure.js';
import type { PmsInvoice } from '../../src/provider/schemas/pms.js';
import { WITHHELD_BODY } from '../../src/mapping/personal-data.js';
import { streamNames } from '../../src/store/states.js';

const ada = {
  personName: { firstName: 'Ada', lastName: 'Lovelace' },
  pmsPersonId: '42',
  emails: [{ address: ' Ada@Example.COM' }],
  phones: [{ phoneNumber: '+44 20 7946 0001' }],
};
const booking = {
  booking: {
    number: 'N-1',
    customer: { firstName: 'Ada', lastName: 'Lovelace' },
    customerComment: 'late arrival',
    guaranteeInfo: { loyalty: { cards: [{ cardNumber: '1234', loyaltySystemId: 'TL' }] } },
    roomStays: [
      {
        guests: [
          { firstName: 'Ada', lastName: 'Lovelace' },
          { firstName: 'Charles', lastName: 'Babbage' },
        ],
        total: 1.5,
      },
    ],
  },
};
const refs = (ids: readonly Identity[]) => ids.map((i) => `${i.kind}:${i.value.replaceAll('\u0000', '|')}`);

describe('erasablePayload', () => {
  it('knows every person of a payload by e-mail, phone, person id and, in a booking, by name; erases only the listed ones, with what is theirs', () => {
    const p = erasablePayload(booking, { personalData: true, booking: { propertyId: '7', number: 'N-1' } });
    expect(refs(p.identities)).toEqual(['booking_person:7|N-1|ada|lovelace', 'booking_person:7|N-1|ada|lovelace', 'booking_person:7|N-1|charles|babbage']);
    const erased = p.withErasures((id) => id.value.includes('lovelace')) as typeof booking;
    expect(erased.booking.customer).toEqual({ firstName: '(erased)', lastName: '(erased)' });
    expect(erased.booking.customerComment).toBeNull();
    expect(erased.booking.guaranteeInfo.loyalty.cards).toEqual([{ cardNumber: null, loyaltySystemId: 'TL' }]);
    expect(erased.booking.roomStays[0]!.guests).toEqual([
      { firstName: '(erased)', lastName: '(erased)' },
      { firstName: 'Charles', lastName: 'Babbage' },
    ]);
    // Nothing listed: the payload as the policy keeps it.
    expect(p.withErasures(() => false)).toEqual(p.rows);
    expect(booking.booking.customer.firstName).toBe('Ada');
  });

  it('reads a PMS person anywhere, and a profile at the top of its body', () => {
    const event = erasablePayload({ PropertyId: '7', contacts: [ada] }, { personalData: false });
    expect(refs(event.identities)).toEqual(['email:ada@example.com', 'phone:+442079460001', 'person:42']);
    expect(event.rows).toEqual({ PropertyId: '7', contacts: [{ personName: { firstName: 'Ada', lastName: 'Lovelace' }, pmsPersonId: '42' }] });
    const profile = erasablePayload(ada, { personalData: true, topIsPerson: true });
    expect(refs(profile.identities)).toEqual(['email:ada@example.com', 'phone:+442079460001', 'person:42']);
    expect(profile.withErasures((id) => id.kind === 'person')).toEqual({
      personName: { firstName: '(erased)', lastName: '(erased)' },
      pmsPersonId: '42',
      emails: [],
      phones: [],
    });
  });

  it('erases persons picked in a stored payload once (an erased person is not picked again)', () => {
    const once = erasePersonsIn(booking, (p) => p.firstName === 'Ada');
    expect(once.erased).toBe(2);
    expect(erasePersonsIn(once.payload, () => true).erased).toBe(1);
    expect(erasePersonsIn(once.payload, (p) => p.firstName === 'Ada').erased).toBe(0);
  });
});

describe('erasableQuarantineBody', () => {
  it('erases the persons of a JSON body the list knows, through the policy', () => {
    const body = erasableQuarantineBody(
      streamNames.pmsReservations,
      '7',
      'N-1',
      JSON.stringify({ reservation: { customer: ada, total: 12.5 } }).replace('12.5', '12.50'),
      false,
    );
    expect(body.opaque).toBe(false);
    expect(refs(body.identities)).toContain('person:42');
    expect(body.rows).not.toContain('example.com');
    expect(body.rows).toContain('"total":12.50');
    expect(body.withErasures((id) => id.kind === 'email')).not.toMatch(/Ada|Lovelace/);
  });

  it('keeps a body that is not JSON only with personal data on, as one piece the e-mails and phones in it can erase', () => {
    const text = '<html>call Ada Lovelace, ada@example.com or +44 20 7946 0001';
    expect(erasableQuarantineBody(streamNames.bookingDetails, '7', 'N-1', text, false)).toMatchObject({ rows: WITHHELD_BODY, identities: [], opaque: false });
    const kept = erasableQuarantineBody(streamNames.bookingDetails, '7', 'N-1', text, true);
    expect(kept).toMatchObject({ rows: text, opaque: true });
    expect(refs(kept.identities)).toEqual(['email:ada@example.com', 'phone:+442079460001']);
    expect(kept.withErasures(() => true)).toBe(ERASED_BODY);
    // A profile's body is known by its person id, the entity key.
    expect(refs(erasableQuarantineBody(streamNames.pmsGuests, '7', '42', '<html>', true).identities)).toEqual(['person:42']);
    // Other streams hold no guests: as received.
    expect(erasableQuarantineBody(streamNames.content, null, null, text, false)).toMatchObject({ rows: text, identities: [], opaque: false });
  });
});

describe('invoice payers', () => {
  const invoice = (payer: string | null, pmsRoomStayId: string): PmsInvoice => ({
    number: `INV-${pmsRoomStayId}`,
    pmsRoomStayId,
    payer: { name: payer },
    items: [],
  });
  // The customer Ada paid her room, the company the second, Charles (a room's guest) his own.
  const parsed = [invoice('Ada Lovelace', 's1'), invoice('Analytical Engines Ltd', 's2'), invoice('Babbage  Charles', 's3')];
  const read = { parsed, raw: parsed.map((i) => ({ ...i, total: 1.5 })) };
  const reservation = { customerPersonId: '42', customerCompanyName: 'Analytical Engines Ltd', currencyCode: 'GBP' };
  const payersOf = (rows: { invoices: { payer_name?: string | null | undefined; raw: string }[] }) =>
    rows.invoices.map((i) => [i.payer_name, (JSON.parse(i.raw) as { payer: { name: string } }).payer.name]);

  it('knows a payer, named whole, by the words of the name in its reservation, in any order and case', () => {
    expect(refs([payerIdentity('7', 'N-1', ' Babbage  CHARLES')!])).toEqual(['booking_person:7|N-1|babbage charles']);
    expect(payerIdentity('7', 'N-1', 'Charles Babbage')).toEqual(payerIdentity('7', 'N-1', ' Babbage  CHARLES'));
    expect(payerIdentity('7', 'N-2', 'Charles Babbage')).not.toEqual(payerIdentity('7', 'N-1', 'Charles Babbage'));
    expect(payerIdentity('7', 'N-1', '  ')).toBeNull();
    // A person pays under their first and last names, with their middle name or without; an erased one under none.
    expect(refs(payerIdentitiesOf('7', 'N-1', { firstName: 'Ada', middleName: 'King', lastName: 'Lovelace' }))).toEqual([
      'booking_person:7|N-1|ada lovelace',
      'booking_person:7|N-1|ada king lovelace',
    ]);
    expect(payerIdentitiesOf('7', 'N-1', { firstName: '(erased)', lastName: '(erased)' })).toEqual([]);
  });

  it("erases a payer listed by name, whoever the customer is, and with an erased customer every payer but the customer's company", () => {
    const e = erasableInvoices('7', 'N-1', reservation, read);
    expect(refs(e.identities)).toEqual([
      'person:42',
      'booking_person:7|N-1|ada lovelace',
      'booking_person:7|N-1|analytical engines ltd',
      'booking_person:7|N-1|babbage charles',
    ]);
    expect(payersOf(e.rows)).toEqual([
      ['Ada Lovelace', 'Ada Lovelace'],
      ['Analytical Engines Ltd', 'Analytical Engines Ltd'],
      ['Babbage  Charles', 'Babbage  Charles'],
    ]);
    // Charles, a room's guest, is erased: his invoice alone.
    const charles = new Set(refs(payerIdentitiesOf('7', 'N-1', { firstName: 'Charles', lastName: 'Babbage' })));
    expect(payersOf(e.withErasures((id) => charles.has(refs([id])[0]!)))).toEqual([
      ['Ada Lovelace', 'Ada Lovelace'],
      ['Analytical Engines Ltd', 'Analytical Engines Ltd'],
      ['(erased)', '(erased)'],
    ]);
    // The customer is erased: every payer who may be her, not her company.
    expect(payersOf(e.withErasures((id) => id.kind === 'person'))).toEqual([
      ['(erased)', '(erased)'],
      ['Analytical Engines Ltd', 'Analytical Engines Ltd'],
      ['(erased)', '(erased)'],
    ]);
  });

  it('erases a listed payer in a quarantined page of invoices', () => {
    const body = erasableQuarantineBody(streamNames.pmsInvoices, '7', 'N-1', JSON.stringify({ invoices: read.raw }), false);
    expect(refs(body.identities)).toContain('booking_person:7|N-1|babbage charles');
    const erased = body.withErasures((id) => id.value.endsWith('babbage charles'));
    expect(erased).not.toContain('Babbage');
    expect(erased).toContain('Ada Lovelace');
  });
});
