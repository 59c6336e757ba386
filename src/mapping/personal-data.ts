/**
 * The one policy for guests' personal data in the payloads staysync stores: what of a payload
 * is personal, and what of it is kept. Every writer of a guest payload goes through it: the
 * typed columns (bookings.ts, pms.ts), `raw`, the quarantine (quarantinedBody) and the
 * erasures (erasure.ts). The columns these can land in are listed in
 * src/store/personal-columns.ts.
 *
 * - A person (the value of a PERSON_KEYS key, or a PMS guest profile) is kept by allow-list:
 *   its name fields always, its contact fields only with personal data on (`pms.personalData`),
 *   nothing else. A field the provider adds to a person later is not stored until it is added
 *   here.
 * - Outside persons, the PERSONAL_VALUE_KEYS (free text about a guest, loyalty card numbers,
 *   contact fields) are kept only with personal data on, wherever they are.
 * - Everything else of the payload is kept as received.
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

/** Keys whose value is a person or a list of persons, in the payloads of guests' stays. */
export const PERSON_KEYS: readonly string[] = ['customer', 'guests', 'guest', 'persons', 'person', 'contacts', 'contact', 'booker', 'payer', 'travellers'];

/**
 * What of a person is always kept: the name, and the person's id, gender and guest status.
 * `name` is a name given whole (an invoice's payer: a person or a company).
 */
export const PERSON_NAME_FIELDS: readonly string[] = ['firstName', 'lastName', 'middleName', 'name', 'personName', 'pmsPersonId', 'gender', 'status'];

/** The name fields: replaced by a marker when a person is erased (erasure.ts). */
export const NAME_FIELDS: readonly string[] = ['firstName', 'lastName', 'middleName', 'name'];

/** What of a person is kept only with personal data on: how to reach or identify them. */
export const PERSON_CONTACT_FIELDS: readonly string[] = [
  'emails',
  'phones',
  'birthDate',
  'citizenship',
  'documents',
  'personalDocument',
  'identityDocument',
  'birthAddress',
  'address',
  'addresses',
];

/** Keys kept only with personal data on wherever they are: free text about a guest, card numbers, contact fields. */
export const PERSONAL_VALUE_KEYS: readonly string[] = ['customerComment', 'comment', 'comments', 'cardNumber', ...PERSON_CONTACT_FIELDS];

/** A JSON object (not an array, not a number kept as its text). */
export const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !isJsonNumber(v);

/** A person as kept: its name fields, and its contact fields with personal data on. A copy. */
export function keptPerson(person: unknown, personalData: boolean): unknown {
  // A person given as a bare value (a name as one text, say) is not a shape anyone allowed.
  if (!isObject(person)) return person === null || person === undefined ? person : null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(person)) {
    if (k === 'personName') out[k] = isObject(v) ? pick(v, NAME_FIELDS) : v === null ? null : undefined;
    else if (PERSON_NAME_FIELDS.includes(k)) out[k] = v;
    else if (personalData && PERSON_CONTACT_FIELDS.includes(k)) out[k] = v;
  }
  return out;
}

function pick(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (keys.includes(k)) out[k] = v;
  return out;
}

/**
 * A payload of a guest's stay (a booking, a PMS reservation, an integration-storage booking,
 * a change event) as it may be stored: persons by allow-list, personal values only with
 * personal data on, the rest as received (numbers keep their text). A copy.
 */
export function keptPayload(value: unknown, personalData: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => keptPayload(v, personalData));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (PERSON_KEYS.includes(k)) out[k] = Array.isArray(v) ? v.map((p) => keptPerson(p, personalData)) : keptPerson(v, personalData);
    else if (!personalData && PERSONAL_VALUE_KEYS.includes(k)) continue;
    else out[k] = keptPayload(v, personalData);
  }
  return out;
}

/** What a quarantined body holds in place of one that is not JSON, when personal data is off. */
export const WITHHELD_BODY =
  '(not kept: the body is not JSON, so what in it is personal data cannot be told apart, and pms.personalData is off; the reason says what failed)';

/**
 * The streams whose payloads can hold guests: bookings and the booking list (whatever it adds
 * to a summary), PMS reservations and profiles, what events fetch, and the bodies the webhook
 * receiver could not store.
 */
export const GUEST_STREAMS: readonly string[] = [
  streamNames.bookingDetails,
  streamNames.bookingSummaries,
  streamNames.pmsReservations,
  streamNames.pmsGuests,
  streamNames.pmsLoyaltyCards,
  streamNames.pmsInvoices,
  streamNames.webhookEvents,
  streamNames.webhookReceiver,
];

/**
 * The body a payload of `stream` that failed is kept with in quarantine: a guest payload as
 * the mirror would keep it (keptPayload; a profile is a person at its top), and one that is not
 * JSON not at all unless personal data is on: the quarantine must not be the one place where a
 * guest's e-mail is stored.
 */
export function quarantinedBody(stream: string, rawBody: string, personalData: boolean): string {
  if (!GUEST_STREAMS.includes(stream)) return rawBody;
  let parsed: unknown;
  try {
    parsed = parseJsonLossless(rawBody);
  } catch {
    return personalData ? rawBody : WITHHELD_BODY;
  }
  return JSON.stringify(stream === streamNames.pmsGuests ? keptProfileBody(parsed, personalData) : keptPayload(parsed, personalData));
}

/** A guest profile answer (`{guest: person}`, guest being a PERSON_KEYS key, or the person itself) as it may be stored. */
function keptProfileBody(parsed: unknown, personalData: boolean): unknown {
  return isObject(parsed) && 'guest' in parsed ? keptPayload(parsed, personalData) : keptPerson(parsed, personalData);
}
