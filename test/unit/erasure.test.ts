/**
 * Erasure of any guest payload (src/mapping/erasure.ts erasablePayload, erasableQuarantineBody):
 * the identities of every person in a body, and the body with the erased ones erased, through
 * the personal-data policy.
 */
import { describe, expect, it } from 'vitest';
import { ERASED_BODY, erasablePayload, erasableQuarantineBody, erasePersonsIn, type Identity } from '../../src/mapping/erasure.js';
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
