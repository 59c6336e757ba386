/**
 * Guests' pseudonyms (src/mapping/pseudonyms.ts): how e-mails and phones are normalised, and
 * the keyed hash checked against node:crypto.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emailPseudonym, normaliseEmail, normalisePhone, phonePseudonym, pseudonym } from '../../src/mapping/pseudonyms.js';

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
