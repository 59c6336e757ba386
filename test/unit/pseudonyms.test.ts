/**
 * Guests' pseudonyms (src/mapping/pseudonyms.ts): how e-mails and phones are normalised, the
 * keyed hash checked against node:crypto, and what the PMS mapping fills with and without the
 * key and personal data.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { reservationRows } from '../../src/mapping/pms.js';
import { emailPseudonym, normaliseEmail, normalisePhone, phonePseudonym, pseudonym } from '../../src/mapping/pseudonyms.js';
import { parseReservationResponse } from '../../src/provider/schemas/pms.js';

const KEY = 'k'.repeat(16) + '-a-test-key-of-32-characters';
const hmac = (value: string) => createHmac('sha256', KEY).update(value).digest('hex');

describe('normalisation', () => {
  it('trims and lower-cases an e-mail; empty is no e-mail', () => {
    expect(normaliseEmail('  Ada.Lovelace@Example.COM\t')).toBe('ada.lovelace@example.com');
    expect(normaliseEmail('ada@example.com')).toBe('ada@example.com');
    expect(normaliseEmail('   ')).toBeNull();
    expect(normaliseEmail('')).toBeNull();
    expect(normaliseEmail(null)).toBeNull();
    expect(normaliseEmail(undefined)).toBeNull();
  });

  it('keeps the digits of a phone and a leading +; no digit is no phone', () => {
    expect(normalisePhone(' +41 (79) 000-01.23 ')).toBe('+41790000123');
    expect(normalisePhone('+41790000123')).toBe('+41790000123');
    expect(normalisePhone('079 000 01 23')).toBe('0790000123');
    // A + that does not lead is not kept; nor are letters (an extension's "ext").
    expect(normalisePhone('41+79')).toBe('4179');
    expect(normalisePhone('+1 555 0100 ext 7')).toBe('+155501007');
    expect(normalisePhone(' + ')).toBeNull();
    expect(normalisePhone('n/a')).toBeNull();
    expect(normalisePhone(null)).toBeNull();
  });
});

describe('pseudonyms', () => {
  it('are the HMAC-SHA-256 (hex) of the normalised value under the key, equal for equal normalised values', () => {
    expect(emailPseudonym(KEY, ' Ada@Example.com ')).toBe(hmac('ada@example.com'));
    expect(emailPseudonym(KEY, 'ADA@EXAMPLE.COM')).toBe(emailPseudonym(KEY, 'ada@example.com'));
    expect(phonePseudonym(KEY, '+41 79 000 01 23')).toBe(hmac('+41790000123'));
    expect(pseudonym(KEY, 'x')).toMatch(/^[0-9a-f]{64}$/);
    // Another key, other pseudonyms.
    expect(emailPseudonym(`${KEY}!`, 'ada@example.com')).not.toBe(emailPseudonym(KEY, 'ada@example.com'));
  });

  it('are null without a key (never an unkeyed hash) or without a value', () => {
    expect(emailPseudonym(undefined, 'ada@example.com')).toBeNull();
    expect(emailPseudonym('', 'ada@example.com')).toBeNull();
    expect(emailPseudonym(KEY, '  ')).toBeNull();
    expect(phonePseudonym(KEY, null)).toBeNull();
  });
});

describe('the PMS mapping', () => {
  const body = {
    reservation: {
      number: 'R-1',
      modifyDateTime: '2025-01-02T03:04:05Z',
      roomStays: [],
      customer: {
        pmsPersonId: 'P-1',
        personName: { lastName: 'Lovelace', firstName: 'Ada' },
        emails: [{ address: 'Ada@Example.com' }, { address: 'other@example.com' }],
        phones: [{ phoneNumber: '+44 20 7946 0000' }],
      },
    },
  };
  const parsed = parseReservationResponse(body, 'R-1');
  if (!parsed.ok) throw new Error(parsed.reason);
  const rowsWith = (personalData: boolean, pseudonymKey: string | undefined) =>
    reservationRows('500100', parsed.value, body.reservation, { personalData, pseudonymKey }, new Date()).rows;

  it('fills the pseudonyms of the first e-mail and phone with the key, personal data off: the values themselves are stored nowhere', () => {
    const { reservation, customer } = rowsWith(false, KEY);
    expect(reservation).toMatchObject({
      customer_email: null,
      customer_phone: null,
      customer_email_hash: hmac('ada@example.com'),
      customer_phone_hash: hmac('+442079460000'),
    });
    expect(customer).toMatchObject({ email: null, phone: null, email_hash: hmac('ada@example.com'), phone_hash: hmac('+442079460000') });
    expect(reservation.raw).not.toContain('Example.com');
    expect(customer!.raw).not.toContain('7946');
  });

  it('fills the same pseudonyms with personal data on, next to the values as sent', () => {
    const { reservation, customer } = rowsWith(true, KEY);
    expect(reservation).toMatchObject({ customer_email: 'Ada@Example.com', customer_email_hash: hmac('ada@example.com') });
    expect(customer).toMatchObject({ email: 'Ada@Example.com', phone_hash: hmac('+442079460000') });
  });

  it('fills none without the key', () => {
    const { reservation, customer } = rowsWith(true, undefined);
    expect(reservation).toMatchObject({ customer_email_hash: null, customer_phone_hash: null });
    expect(customer).toMatchObject({ email_hash: null, phone_hash: null });
  });
});
