/**
 * Erasing a person in the payloads and rows of the mirror (issue 21): what identifies a person
 * (for the erasure list), and a payload with erased persons in place of the originals. Pure.
 * What is personal is decided by personal-data.ts; this module only applies it.
 *
 * An erased person keeps its PMS person id (the key of its pms_guests row, and what a later
 * version of the reservation is recognised by) and what personal-data.ts never counts as
 * personal (gender, guest status); its names become ERASED_NAME, everything else goes.
 */
import { parseJsonLossless } from '../provider/json.js';
import type { Booking, BookingSummary } from '../provider/schemas/bookings.js';
import type { PmsInvoice, PmsLoyaltyCard, PmsPerson, PmsReservation, StorageBooking } from '../provider/schemas/pms.js';
import type { BookingRows, NewPmsGuest, NewPmsGuestLoyaltyCard, NewPmsInvoice, NewPmsInvoiceItem, StorageBookingRows, SummaryRow } from '../store/schema.js';
import { streamNames, type IdentityKind } from '../store/states.js';
import { bookingToRows, summaryToRow } from './bookings.js';
import { GUEST_STREAMS, isObject, keptPayload, keptPerson, NAME_FIELDS, PERSON_KEYS, quarantinedBody, type PersonalDataPolicy } from './personal-data.js';
import { guestRow, invoicesToRows, loyaltyCardRows, reservationRows } from './pms.js';
import { storageBookingToRows } from './integration-storage.js';
import { normaliseEmail, normalisePhone } from './pseudonyms.js';

/** What an erased person's names become, in typed columns and in raw. */
export const ERASED_NAME = '(erased)';

/**
 * What a person is recognised by in the erasure list: an e-mail, a phone, a PMS person id, or
 * (bookings name their guests only) a name in one booking.
 */
export interface Identity {
  kind: IdentityKind;
  /** Normalised: the same person written differently is the same identity. */
  value: string;
}

/** A value of a payload as text, for the normalisers (pseudonyms.ts: one idea of "the same e-mail" for pseudonyms and erasures). */
const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A name as compared: the same person written with other spaces or case is the same. */
export const normaliseName = (v: unknown): string => (typeof v === 'string' ? v.trim().replace(/\s+/g, ' ').toLowerCase() : '');

/** A PMS person's identities (parsed or as received: emails[].address, phones[].phoneNumber, pmsPersonId). */
export function pmsPersonIdentities(person: unknown): Identity[] {
  if (!isObject(person)) return [];
  const out: Identity[] = [];
  for (const e of Array.isArray(person.emails) ? person.emails : []) {
    const v = normaliseEmail(text(isObject(e) ? e.address : undefined));
    if (v) out.push({ kind: 'email', value: v });
  }
  for (const p of Array.isArray(person.phones) ? person.phones : []) {
    const v = normalisePhone(text(isObject(p) ? p.phoneNumber : undefined));
    if (v) out.push({ kind: 'phone', value: v });
  }
  if (typeof person.pmsPersonId === 'string' && person.pmsPersonId !== '') out.push({ kind: 'person', value: person.pmsPersonId });
  return out;
}

/** The identity of a person named in a booking (`{firstName, lastName}`), or null without a name. */
export function bookingPersonIdentity(propertyId: string, number: string, firstName: unknown, lastName: unknown): Identity | null {
  const [first, last] = [normaliseName(firstName), normaliseName(lastName)];
  if (first === '' && last === '') return null;
  return { kind: 'booking_person', value: [propertyId, number, first, last].join('\u0000') };
}

/**
 * The identity of a person named whole in the booking (or PMS reservation) `number`: an
 * invoice's payer, which has a name and no person id (PmsApi_Payer: "John Richard Doe"). It is
 * known by the words of its name in any order, so that "Doe John" pays as "John Doe" does.
 * Null without a name.
 */
export function payerIdentity(propertyId: string, number: string, name: unknown): Identity | null {
  const words = normaliseName(name)
    .split(' ')
    .filter((w) => w !== '')
    .sort();
  if (words.length === 0) return null;
  return { kind: 'booking_person', value: [propertyId, number, words.join(' ')].join('\u0000') };
}

/**
 * The identities a person of names `p` has as a payer in the booking `number`: their first and
 * last names, with their middle name and without. None for a person erased already.
 */
export function payerIdentitiesOf(propertyId: string, number: string, p: { firstName: unknown; middleName?: unknown; lastName: unknown }): Identity[] {
  if (p.firstName === ERASED_NAME || p.lastName === ERASED_NAME) return [];
  const word = (v: unknown) => (typeof v === 'string' ? v : '');
  const forms = [`${word(p.firstName)} ${word(p.lastName)}`, `${word(p.firstName)} ${word(p.middleName)} ${word(p.lastName)}`];
  const ids = forms.flatMap((f) => payerIdentity(propertyId, number, f) ?? []);
  return [...new Map(ids.map((i) => [i.value, i])).values()];
}

/** The names of an object (a person, or its personName) replaced by ERASED_NAME where they are given. */
function erasedNames(o: Record<string, unknown>): Record<string, unknown> {
  const out = { ...o };
  for (const k of NAME_FIELDS) if (out[k] !== undefined && out[k] !== null) out[k] = ERASED_NAME;
  return out;
}

/**
 * A person erased: names ERASED_NAME, the contact fields emptied (kept as empty lists and
 * nulls where the person had them, so that a parsed person keeps its shape), nothing else.
 */
export function erasedPerson<T>(person: T): T {
  if (!isObject(person)) return person;
  const kept = erasedNames(keptPerson(person, false) as Record<string, unknown>);
  if (isObject(kept.personName)) kept.personName = erasedNames(kept.personName);
  if ('emails' in person) kept.emails = [];
  if ('phones' in person) kept.phones = [];
  if ('birthDate' in person) kept.birthDate = null;
  if ('citizenship' in person) kept.citizenship = null;
  return kept as T;
}

/** The persons a booking names: its customer and the guests of each room stay. */
export function bookingPersons(booking: unknown): { firstName: unknown; lastName: unknown }[] {
  if (!isObject(booking)) return [];
  const out: { firstName: unknown; lastName: unknown }[] = [];
  if (isObject(booking.customer)) out.push({ firstName: booking.customer.firstName, lastName: booking.customer.lastName });
  for (const stay of Array.isArray(booking.roomStays) ? booking.roomStays : []) {
    for (const g of isObject(stay) && Array.isArray(stay.guests) ? stay.guests : []) {
      if (isObject(g)) out.push({ firstName: g.firstName, lastName: g.lastName });
    }
  }
  return out;
}

/**
 * A booking (parsed, or the `booking` object as received) with the persons `isErased` picks
 * erased. An erased customer takes the loyalty card numbers with it (the cards are the
 * customer's). A copy; the booking itself is not changed.
 */
export function bookingWithErasures<T>(booking: T, isErased: (p: { firstName: unknown; lastName: unknown }) => boolean): T {
  if (!isObject(booking)) return booking;
  const out: Record<string, unknown> = { ...booking };
  if (isObject(booking.customer) && isErased({ firstName: booking.customer.firstName, lastName: booking.customer.lastName })) {
    out.customer = erasedNames(booking.customer);
    out.guaranteeInfo = withoutCardNumbers(booking.guaranteeInfo);
  }
  if (Array.isArray(booking.roomStays)) {
    out.roomStays = booking.roomStays.map((stay: unknown) =>
      isObject(stay) && Array.isArray(stay.guests)
        ? { ...stay, guests: stay.guests.map((g: unknown) => (isObject(g) && isErased({ firstName: g.firstName, lastName: g.lastName }) ? erasedNames(g) : g)) }
        : stay,
    );
  }
  return out as T;
}

/** A booking (parsed, or the `booking` object as received) without its loyalty card numbers; the cards keep their programme. A copy. */
export function bookingWithoutCardNumbers<T>(booking: T): T {
  if (!isObject(booking) || !('guaranteeInfo' in booking)) return booking;
  return { ...booking, guaranteeInfo: withoutCardNumbers(booking.guaranteeInfo) };
}

function withoutCardNumbers(guaranteeInfo: unknown): unknown {
  if (!isObject(guaranteeInfo) || !isObject(guaranteeInfo.loyalty) || !Array.isArray(guaranteeInfo.loyalty.cards)) return guaranteeInfo;
  const cards = guaranteeInfo.loyalty.cards.map((c: unknown) => (isObject(c) && 'cardNumber' in c ? { ...c, cardNumber: null } : c));
  return { ...guaranteeInfo, loyalty: { ...guaranteeInfo.loyalty, cards } };
}

/**
 * A PMS reservation (parsed, or as received) with its customer erased: the customer's comment
 * goes with it (it is the customer's free text). A copy.
 */
export function reservationWithErasedCustomer<T>(reservation: T): T {
  if (!isObject(reservation)) return reservation;
  const out: Record<string, unknown> = { ...reservation, customer: erasedPerson(reservation.customer) };
  if ('customerComment' in reservation) out.customerComment = null;
  return out as T;
}

// ------------------------------------------------------------------ rows that may hold erased persons

/**
 * Rows about to be written, the identities of the persons in them, and how to make them again
 * with some of those persons erased: what the write path gives the erasure list
 * (src/store/repositories/erasures.ts rowsAfterErasures).
 */
export interface Erasable<R> {
  rows: R;
  identities: readonly Identity[];
  withErasures: (isErased: (id: Identity) => boolean) => R;
}

/** A booking's rows (bookingToRows), erasable by the names of its persons. */
export function erasableBooking(propertyId: string, b: Booking, received: unknown, fetchedAt: Date, personalData: boolean): Erasable<BookingRows> {
  const identityOf = (p: { firstName: unknown; lastName: unknown }) => bookingPersonIdentity(propertyId, b.number, p.firstName, p.lastName);
  return {
    rows: bookingToRows(propertyId, b, received, fetchedAt, personalData),
    identities: bookingPersons(b).flatMap((p) => identityOf(p) ?? []),
    withErasures(isErased) {
      const erased = (p: { firstName: unknown; lastName: unknown }) => {
        const id = identityOf(p);
        return id !== null && isErased(id);
      };
      const receivedErased =
        isObject(received) && 'booking' in received
          ? { ...received, booking: bookingWithErasures(received.booking, erased) }
          : bookingWithErasures(received, erased);
      return bookingToRows(propertyId, bookingWithErasures(b, erased), receivedErased, fetchedAt, personalData);
    },
  };
}

/**
 * A PMS reservation's rows and stored object (reservationRows), erasable by its customer's
 * identities and, with its invoices, by their payers' (erasableInvoiceRows).
 */
export function erasableReservation(
  propertyId: string,
  r: PmsReservation,
  rawReservation: unknown,
  policy: PersonalDataPolicy,
  fetchedAt: Date,
  invoices?: ReadInvoices | null,
): Erasable<ReturnType<typeof reservationRows>> {
  const customer = pmsPersonIdentities(r.customer);
  // undefined: not asked for (the mirrored invoices stay as they are); null: asked for and
  // not read (they are read again with the next fetch of the reservation).
  const invoiceRows = invoices ? erasableInvoiceRows(propertyId, r.number, invoices, r.customerCompany?.name ?? null, r.currencyCode ?? null) : null;
  const rowsWith = (isErased: (id: Identity) => boolean) => {
    const customerErased = customer.some(isErased);
    const out = customerErased
      ? reservationRows(propertyId, reservationWithErasedCustomer(r), reservationWithErasedCustomer(rawReservation), policy, fetchedAt)
      : reservationRows(propertyId, r, rawReservation, policy, fetchedAt);
    if (invoices === null) out.rows.reservation.invoices_read_at = null;
    if (invoiceRows) {
      out.rows.invoices = invoiceRows.rowsWith(customerErased, isErased);
      out.rows.reservation.invoices_read_at = fetchedAt;
    }
    return out;
  };
  return { rows: rowsWith(() => false), identities: [...customer, ...(invoiceRows?.identities ?? [])], withErasures: rowsWith };
}

/**
 * A reservation's invoices read apart from it (the pass after a backfill, the quarantine retry),
 * erasable by its customer's person id and by their payers, as erasableReservation erases them.
 */
export function erasableInvoices(
  propertyId: string,
  number: string,
  reservation: { customerPersonId: string | null; customerCompanyName: string | null; currencyCode: string | null },
  read: ReadInvoices,
): Erasable<{ invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] }> {
  const customer: Identity[] = reservation.customerPersonId ? [{ kind: 'person', value: reservation.customerPersonId }] : [];
  const invoiceRows = erasableInvoiceRows(propertyId, number, read, reservation.customerCompanyName, reservation.currencyCode);
  return {
    rows: invoiceRows.rowsWith(false, () => false),
    identities: [...customer, ...invoiceRows.identities],
    withErasures: (isErased) => invoiceRows.rowsWith(customer.some(isErased), isErased),
  };
}

/** A reservation's invoices as read with one of its versions: parsed, and as stored (keptPayload). */
export interface ReadInvoices {
  parsed: PmsInvoice[];
  raw: unknown[];
}

/**
 * A reservation's invoices as rows, with the payers an erasure takes: a payer listed by name in
 * this reservation (payerIdentity: a room's guest who pays their own stay is no customer), and,
 * when the customer is erased, every payer who may be them (payerMayBeCustomer).
 */
function erasableInvoiceRows(propertyId: string, number: string, read: ReadInvoices, customerCompany: string | null, currencyCode: string | null) {
  const payers = read.parsed.map((i) => payerIdentity(propertyId, number, i.payer?.name));
  return {
    identities: payers.filter((id): id is Identity => id !== null),
    rowsWith(customerErased: boolean, isErased: (id: Identity) => boolean) {
      const erased = read.parsed.map((inv, i) => {
        const payer = payers[i] ?? null;
        return (customerErased && payerMayBeCustomer(inv.payer?.name, customerCompany)) || (payer !== null && isErased(payer));
      });
      const withErasures = <T>(invoices: readonly T[]) => invoices.map((inv, i) => (erased[i] ? invoiceWithErasedPayer(inv) : inv));
      return invoicesToRows(propertyId, number, withErasures(read.parsed), withErasures(read.raw), currencyCode);
    },
  };
}

/**
 * Whether an invoice's payer may be the reservation's customer: any payer named but the
 * customer company (a company is no person), so that an erased customer takes along every
 * payer that may be them, whatever spelling of their name it has. The store's twin, in SQL:
 * src/store/repositories/retention.ts RESERVATION_PARTS.
 */
export function payerMayBeCustomer(payerName: unknown, customerCompany: string | null): boolean {
  return typeof payerName === 'string' && payerName !== '' && payerName !== ERASED_NAME && payerName !== customerCompany;
}

/** An invoice (parsed or as received) with its payer's name erased. A copy. */
export function invoiceWithErasedPayer<T>(invoice: T): T {
  if (!isObject(invoice) || !isObject(invoice.payer) || typeof invoice.payer.name !== 'string' || invoice.payer.name === '') return invoice;
  return { ...invoice, payer: { ...invoice.payer, name: ERASED_NAME } };
}

/** A guest profile's row (guestRow), erasable by the person's identities. */
export function erasableGuest(propertyId: string, p: PmsPerson, rawGuest: unknown, policy: PersonalDataPolicy, fetchedAt: Date): Erasable<NewPmsGuest | null> {
  return {
    rows: guestRow(propertyId, p, rawGuest, policy, fetchedAt),
    identities: pmsPersonIdentities(p),
    withErasures: () => guestRow(propertyId, erasedPerson(p), erasedPerson(rawGuest), policy, fetchedAt),
  };
}

/** A person's loyalty cards as read: parsed, and as stored (keptPayload of each card as received). */
export interface ReadLoyaltyCards {
  parsed: PmsLoyaltyCard[];
  raw: unknown[];
}

/**
 * A card (as stored) of an erased person: what the policy keeps of it without personal data
 * (its programme, not its number), any person in it erased. A copy.
 */
export function erasedLoyaltyCard(card: unknown): unknown {
  return keptPayload(erasePersonsIn(card, () => true).payload, false);
}

/** A person's loyalty cards as read (loyaltyCardRows), erasable by the person's id: an erased person's cards keep their programme, not their number. */
export function erasableLoyaltyCards(
  propertyId: string,
  personId: string,
  read: ReadLoyaltyCards,
  personalData: boolean,
): Erasable<{ personId: string; cards: NewPmsGuestLoyaltyCard[] }> {
  return {
    rows: { personId, cards: loyaltyCardRows(propertyId, personId, read.parsed, read.raw, personalData) },
    identities: [{ kind: 'person', value: personId }],
    withErasures: () => ({ personId, cards: loyaltyCardRows(propertyId, personId, read.parsed, read.raw.map(erasedLoyaltyCard), false) }),
  };
}

// ------------------------------------------------------------------ any guest payload

/** What a quarantined body holds once it held an erased person's data (and nothing of it could be kept). */
export const ERASED_BODY = '(erased: the body held personal data of an erased guest; the reason says what failed)';

/** Where a payload sits, when it is about one booking (its number is the PMS reservation's too): names identify persons in it. */
export interface BookingRef {
  propertyId: string;
  number: string;
}

/** The names of a person as a booking (`firstName`) or the PMS (`personName.firstName`) gives them. */
function namesOf(person: Record<string, unknown>): { firstName: unknown; lastName: unknown } {
  const n = isObject(person.personName) ? person.personName : person;
  return { firstName: n.firstName, lastName: n.lastName };
}

/** The identities of a person found in a payload: as a PMS person, and by name within `booking`. */
function personIdentities(person: Record<string, unknown>, booking: BookingRef | undefined): Identity[] {
  const ids = pmsPersonIdentities(person);
  if (booking) {
    const { firstName, lastName } = namesOf(person);
    const byName = bookingPersonIdentity(booking.propertyId, booking.number, firstName, lastName);
    if (byName) ids.push(byName);
    // A person named whole, as an invoice's payer is.
    const byWholeName = payerIdentity(booking.propertyId, booking.number, person.name);
    if (byWholeName) ids.push(byWholeName);
  }
  return ids;
}

/** Each person of a payload: every value (or list element) of a PERSON_KEYS key, anywhere; with `topIsPerson`, the payload itself. */
function eachPerson(value: unknown, visit: (person: Record<string, unknown>) => void, topIsPerson = false): void {
  if (topIsPerson && isObject(value)) visit(value);
  if (Array.isArray(value)) for (const v of value) eachPerson(v, visit);
  if (!isObject(value)) return;
  for (const [k, v] of Object.entries(value)) {
    if (PERSON_KEYS.includes(k)) for (const p of Array.isArray(v) ? v : [v]) if (isObject(p)) visit(p);
    eachPerson(v, visit);
  }
}

/**
 * A payload with the persons `erased` picks erased (erasedPerson), wherever they are. An
 * erased customer takes with it what is theirs beside the person: the customer's comment, and
 * loyalty card numbers. A copy.
 */
function withPersonsErased(value: unknown, erased: (person: Record<string, unknown>) => boolean, topIsPerson = false): unknown {
  if (topIsPerson && isObject(value) && erased(value)) return erasedPerson(value);
  if (Array.isArray(value)) return value.map((v) => withPersonsErased(v, erased));
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  let customerErased = false;
  for (const [k, v] of Object.entries(value)) {
    if (PERSON_KEYS.includes(k)) {
      const one = (p: unknown) => (isObject(p) && erased(p) ? ((customerErased ||= k === 'customer'), erasedPerson(p)) : withPersonsErased(p, erased));
      out[k] = Array.isArray(v) ? v.map(one) : one(v);
    } else out[k] = withPersonsErased(v, erased);
  }
  if (customerErased) {
    if ('customerComment' in out) out.customerComment = null;
    if ('guaranteeInfo' in out) out.guaranteeInfo = withoutCardNumbers(out.guaranteeInfo);
  }
  return out;
}

/**
 * A payload (as stored) with the persons `pick` chooses erased, wherever they are, as the
 * erasure of a stored row needs it (the stored payload keeps the policy it was stored under):
 * the payload and how many persons were erased (0: the payload is unchanged).
 */
export function erasePersonsIn(
  payload: unknown,
  pick: (person: { firstName: unknown; lastName: unknown; identities: Identity[] }) => boolean,
  booking?: BookingRef,
): { payload: unknown; erased: number } {
  let erased = 0;
  const out = withPersonsErased(payload, (p) => {
    if (Object.values(namesOf(p)).includes(ERASED_NAME)) return false;
    const yes = pick({ ...namesOf(p), identities: personIdentities(p, booking) });
    if (yes) erased += 1;
    return yes;
  });
  return { payload: erased > 0 ? out : payload, erased };
}

/**
 * Any guest payload (a quarantined body, an integration-storage booking, a change event's
 * payload, a booking summary) as it may be stored (keptPayload; a profile is a person at its
 * top: `topIsPerson`), erasable by the identities of every person in it: their e-mails, phones
 * and PMS person ids, and their names within `booking` when the payload is about one.
 */
export function erasablePayload(payload: unknown, opts: { personalData: boolean; booking?: BookingRef | undefined; topIsPerson?: boolean }): Erasable<unknown> {
  const top = opts.topIsPerson ?? false;
  const kept = (v: unknown) => (top && isObject(v) && !('guest' in v) ? keptPerson(v, opts.personalData) : keptPayload(v, opts.personalData));
  const identities: Identity[] = [];
  eachPerson(payload, (p) => identities.push(...personIdentities(p, opts.booking)), top && isObject(payload) && !('guest' in payload));
  return {
    rows: kept(payload),
    identities,
    withErasures: (isErased) =>
      kept(withPersonsErased(payload, (p) => personIdentities(p, opts.booking).some(isErased), top && isObject(payload) && !('guest' in payload))),
  };
}

/** E-mail addresses and phone numbers in a text that is not JSON: what of an erased person it may hold, as identities. */
function identitiesInText(text: string): Identity[] {
  const out: Identity[] = [];
  for (const m of text.matchAll(/[^\s"'<>(),;:[\]{}@]+@[^\s"'<>(),;:[\]{}@]+/g)) {
    const v = normaliseEmail(m[0]);
    if (v) out.push({ kind: 'email', value: v });
  }
  for (const m of text.matchAll(/\+?\d[\d\s().\-/]{3,}\d/g)) {
    const v = normalisePhone(m[0]);
    if (v && v.replace('+', '').length >= 5) out.push({ kind: 'phone', value: v });
  }
  return out;
}

/** The streams whose entity key is a PMS person id. */
const PERSON_KEYED: readonly string[] = [streamNames.pmsGuests, streamNames.pmsLoyaltyCards];

/** The streams whose entity key is a booking (or PMS reservation) number. */
const BOOKING_KEYED: readonly string[] = [
  streamNames.bookingDetails,
  streamNames.bookingSummaries,
  streamNames.pmsReservations,
  streamNames.pmsInvoices,
  streamNames.webhookEvents,
];

/**
 * A body about to be quarantined, as the quarantine may keep it: the personal-data policy
 * (quarantinedBody), and the erasure list. A JSON body is erasable person by person. A body
 * that is not JSON is kept whole (with personal data on) or not at all; erasable as a whole
 * (ERASED_BODY) by the e-mails and phones in its text or, for a profile, its person id; and
 * `opaque`, as what else in it is personal cannot be told: the writer then also asks whether
 * the mirror holds an erased person of its entity (src/privacy/guest-writes.ts).
 */
export function erasableQuarantineBody(
  stream: string,
  propertyId: string | null,
  entityKey: string | null,
  rawBody: string,
  personalData: boolean,
): Erasable<string> & { opaque: boolean } {
  const asIs = { rows: rawBody, identities: [], withErasures: () => rawBody, opaque: false };
  if (!GUEST_STREAMS.includes(stream)) return asIs;
  let parsed: unknown;
  try {
    parsed = parseJsonLossless(rawBody);
  } catch {
    const kept = quarantinedBody(stream, rawBody, personalData);
    if (kept !== rawBody) return { ...asIs, rows: kept, withErasures: () => kept };
    const identities = identitiesInText(rawBody);
    if (PERSON_KEYED.includes(stream) && entityKey) identities.push({ kind: 'person', value: entityKey });
    return { rows: rawBody, identities, withErasures: () => ERASED_BODY, opaque: true };
  }
  if (stream === streamNames.pmsLoyaltyCards) {
    // Cards name no person: they are the person of the entity key's, and lose their numbers with them.
    const kept = JSON.stringify(keptPayload(parsed, personalData));
    const erased = JSON.stringify(keptPayload(parsed, false));
    return { rows: kept, identities: entityKey ? [{ kind: 'person', value: entityKey }] : [], withErasures: () => erased, opaque: false };
  }
  const booking = propertyId !== null && entityKey !== null && BOOKING_KEYED.includes(stream) ? { propertyId, number: entityKey } : undefined;
  const payload = erasablePayload(parsed, { personalData, booking, topIsPerson: stream === streamNames.pmsGuests });
  return {
    rows: JSON.stringify(payload.rows),
    identities: payload.identities,
    withErasures: (isErased) => JSON.stringify(payload.withErasures(isErased)),
    opaque: false,
  };
}

/** A summary of the booking list as its row: the policy applied to raw, erasable by the persons in it (it names none, as documented). */
export function erasableSummary(propertyId: string, s: BookingSummary, received: unknown, now: number, personalData: boolean): Erasable<SummaryRow> {
  const payload = erasablePayload(received, { personalData, booking: { propertyId, number: s.number } });
  const row = summaryToRow(propertyId, s, received, now, personalData);
  return { rows: row, identities: payload.identities, withErasures: (isErased) => ({ ...row, raw: payload.withErasures(isErased) }) };
}

/**
 * An integration-storage booking as its rows, erasable by the persons in it (the document gives
 * it none; whatever person a PMS adds is erased by its e-mails, phones and person id, and by
 * name as a person of the booking of its external number).
 */
export function erasableStorageBooking(
  propertyId: string,
  b: StorageBooking,
  received: unknown,
  fetchedAt: Date,
  personalData: boolean,
): Erasable<StorageBookingRows> {
  const rows = storageBookingToRows(propertyId, b, received, fetchedAt, personalData);
  const number = rows.booking.booking_number ?? null;
  const payload = erasablePayload(received, { personalData, booking: number === null ? undefined : { propertyId, number } });
  // Its channels and nights name nobody: only raw changes.
  return {
    rows,
    identities: payload.identities,
    withErasures: (isErased) => ({ ...rows, booking: { ...rows.booking, raw: JSON.stringify(payload.withErasures(isErased)) } }),
  };
}
