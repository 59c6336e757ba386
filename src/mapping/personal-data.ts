/**
 * Personal data of PMS persons (customers and guests). Names are always mirrored; e-mails,
 * phones, birth dates, citizenship and identity documents only when `pms.personalData` is on.
 * When it is off they are removed from the typed columns AND from `raw`, so that nothing of
 * them is stored anywhere. The list of keys is the one place that decides what is personal.
 */
import { isJsonNumber, parseJsonLossless } from '../provider/json.js';
import { streamNames } from '../store/states.js';

/**
 * What of a PMS person is stored: its personal data only with `personalData` (pms.personalData);
 * its pseudonyms (src/mapping/pseudonyms.ts) whenever there is a `pseudonymKey`
 * (privacy.pseudonymKey), personal data on or off, computed from the person as received.
 */
export interface PersonalDataPolicy {
  personalData: boolean;
  pseudonymKey: string | undefined;
}

/** Keys of a PMS person that hold personal data beyond the name. */
export const PERSONAL_KEYS = ['emails', 'phones', 'birthDate', 'citizenship', 'documents', 'personalDocument', 'identityDocument', 'birthAddress'] as const;

const isPersonalKey = (key: string): boolean => (PERSONAL_KEYS as readonly string[]).includes(key);

/** A copy of a person object without its personal keys (the object itself is not changed). */
export function stripPerson(person: unknown): unknown {
  if (typeof person !== 'object' || person === null || Array.isArray(person)) return person;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(person)) if (!isPersonalKey(k)) out[k] = v;
  return out;
}

/** A copy of a reservation object whose customer has no personal keys. */
export function stripReservation(reservation: unknown): unknown {
  if (typeof reservation !== 'object' || reservation === null || Array.isArray(reservation)) return reservation;
  const r = reservation as Record<string, unknown>;
  return 'customer' in r ? { ...r, customer: stripPerson(r.customer) } : r;
}

/** What a quarantined body holds in place of one that is not JSON, when personal data is off. */
export const WITHHELD_BODY =
  '(not kept: the body is not JSON, so what in it is personal data cannot be told apart, and pms.personalData is off; the reason says what failed)';

/** A copy of a JSON value without the personal keys of PERSONAL_KEYS, wherever they are. */
export function stripPersonalKeysDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stripPersonalKeysDeep);
  // A number keeps its text (a JsonNumber of the lossless parser): not an object to walk.
  if (typeof value !== 'object' || value === null || isJsonNumber(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (!isPersonalKey(k)) out[k] = stripPersonalKeysDeep(v);
  return out;
}

/** The streams whose quarantined payloads can hold PMS persons (reservations, guest profiles, what events fetch). */
const PMS_PERSON_STREAMS: readonly string[] = [streamNames.pmsReservations, streamNames.pmsGuests, streamNames.webhookEvents];

/**
 * The body a payload of `stream` that failed is kept with in quarantine. With personal data
 * off, a PMS payload is kept without the personal keys of its persons (as the mirror keeps
 * them: names only), and one that is not JSON is not kept at all: the quarantine must not be
 * the one place where a guest's e-mail is stored.
 */
export function quarantinedBody(stream: string, rawBody: string, personalData: boolean): string {
  if (personalData || !PMS_PERSON_STREAMS.includes(stream)) return rawBody;
  let parsed: unknown;
  try {
    parsed = parseJsonLossless(rawBody);
  } catch {
    return WITHHELD_BODY;
  }
  return JSON.stringify(stripPersonalKeysDeep(parsed));
}
