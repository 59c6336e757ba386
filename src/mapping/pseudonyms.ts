/**
 * Pseudonyms of guests: a keyed hash (HMAC-SHA-256, hex) of a person's normalised e-mail and
 * phone, so that analysts can count and follow repeat guests without the e-mail or the phone
 * (migrations/0017_pseudonyms.sql, reporting view guests_by_pseudonym). Pure: no I/O.
 *
 * Keyed, never a plain hash: e-mails are guessable (first.last@ a few providers), so an
 * unkeyed SHA-256 of one is reversed by hashing the guesses and comparing. Without the key
 * (privacy.pseudonymKey, STAYSYNC_PSEUDONYM_KEY) there is no pseudonym at all. Whoever holds
 * the key can still test a known e-mail against a pseudonym: keep it from the analysts.
 */
import { createHmac } from 'node:crypto';

/** An e-mail as it is hashed: trimmed and lower-cased (`Ada@Example.com ` and `ada@example.com` are one guest); null when empty. */
export function normaliseEmail(email: string | null | undefined): string | null {
  const v = email?.trim().toLowerCase() ?? '';
  return v === '' ? null : v;
}

/**
 * A phone number as it is hashed: its digits only, with a leading + kept (`+41 79 000 01 23`
 * and `+41790000123` are one guest); null when it has no digit. Nothing more: `0041…`,
 * `+41…` and `079…` stay three numbers, as telling them apart needs the country.
 */
export function normalisePhone(phone: string | null | undefined): string | null {
  const v = phone?.trim() ?? '';
  const digits = v.replace(/[^0-9]/g, '');
  if (digits === '') return null;
  return v.startsWith('+') ? `+${digits}` : digits;
}

/**
 * HMAC-SHA-256 (hex) of an already normalised value under `key` (its text as UTF-8); null
 * when the key or the value is absent.
 */
export function pseudonym(key: string | undefined, normalised: string | null): string | null {
  if (!key || normalised === null) return null;
  return createHmac('sha256', key).update(normalised, 'utf8').digest('hex');
}

/** The pseudonym of an e-mail (normalised first); null without the key or the e-mail. */
export const emailPseudonym = (key: string | undefined, email: string | null | undefined): string | null => pseudonym(key, normaliseEmail(email));

/** The pseudonym of a phone number (normalised first); null without the key or a digit. */
export const phonePseudonym = (key: string | undefined, phone: string | null | undefined): string | null => pseudonym(key, normalisePhone(phone));

/**
 * A text reduced to what a database can compare without the normalisation above: the two
 * characters outside ASCII whose lower case is ASCII (U+0130 İ, U+212A Kelvin K) as that
 * letter, then only printable ASCII (no spaces, tabs, no-break spaces, letters outside ASCII),
 * lower-cased. Of a normalised e-mail it is what the store's matchKeySql makes of the e-mail as
 * stored, however it was written (test/integration/email-normalisation.test.ts holds the two
 * equal): so the store finds candidates by it, a superset, and the caller keeps those whose
 * normalised value is equal. Not a normalisation: it is never stored, hashed or compared alone.
 */
export function matchKey(text: string): string {
  return text
    .replace(/[\u0130\u212a]/g, (c) => (c === '\u0130' ? 'i' : 'k'))
    .replace(/[^\x21-\x7e]/g, '')
    .replace(/[A-Z]/g, (c) => c.toLowerCase());
}
