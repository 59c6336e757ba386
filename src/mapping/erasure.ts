/**
 * Erasing a person in the payloads and rows of the mirror (issue 21): what identifies a person
 * (for the erasure list), and a payload with erased persons in place of the originals. Pure.
 * What is personal is decided by personal-data.ts; this module only applies it.
 *
 * An erased person keeps its PMS person id (the key of its pms_guests row, and what a later
 * version of the reservation is recognised by) and what personal-data.ts never counts as
 * personal (gender, guest status); its names become ERASED_NAME, everything else goes.
 */
import type { Booking } from '../provider/schemas/bookings.js';
import type { PmsPerson, PmsReservation } from '../provider/schemas/pms.js';
import type { BookingRows, NewPmsGuest } from '../store/schema.js';
import type { IdentityKind } from '../store/states.js';
import { bookingToRows } from './bookings.js';
import { isObject, keptPerson, NAME_FIELDS, type PersonalDataPolicy } from './personal-data.js';
import { guestRow, reservationRows } from './pms.js';
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

/** A PMS reservation's rows and stored object (reservationRows), erasable by its customer's identities. */
export function erasableReservation(
  propertyId: string,
  r: PmsReservation,
  rawReservation: unknown,
  policy: PersonalDataPolicy,
  fetchedAt: Date,
): Erasable<ReturnType<typeof reservationRows>> {
  return {
    rows: reservationRows(propertyId, r, rawReservation, policy, fetchedAt),
    identities: pmsPersonIdentities(r.customer),
    withErasures: () => reservationRows(propertyId, reservationWithErasedCustomer(r), reservationWithErasedCustomer(rawReservation), policy, fetchedAt),
  };
}

/** A guest profile's row (guestRow), erasable by the person's identities. */
export function erasableGuest(propertyId: string, p: PmsPerson, rawGuest: unknown, policy: PersonalDataPolicy, fetchedAt: Date): Erasable<NewPmsGuest | null> {
  return {
    rows: guestRow(propertyId, p, rawGuest, policy, fetchedAt),
    identities: pmsPersonIdentities(p),
    withErasures: () => guestRow(propertyId, erasedPerson(p), erasedPerson(rawGuest), policy, fetchedAt),
  };
}
