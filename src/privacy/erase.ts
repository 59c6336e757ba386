/**
 * Erasing persons in the mirror: the one way personal data is erased, used by forget-guest (one
 * person, on request) and by retention (every person of stays that ended long ago). An erased
 * person keeps their PMS person id; their names become ERASED_NAME, every other personal value
 * (typed column or in `raw`) is emptied, and the figures stay. What is personal is decided by
 * src/mapping/personal-data.ts, how a payload looks erased by src/mapping/erasure.ts; the rows
 * are found and written by src/store/repositories/erasures.ts.
 */
import type { Executor } from '../store/types.js';
import {
  eraseBookingPersons,
  eraseInvoicePayers,
  erasePmsPersonRows,
  eraseSummaryPersons,
  eraseTraces,
  type BookingKey,
  type InvoicePayer,
  type PersonKey,
  type RowsTouched,
} from '../store/repositories/erasures.js';
import {
  bookingWithErasures,
  bookingWithoutCardNumbers,
  ERASED_BODY,
  erasedLoyaltyCard,
  erasedPerson,
  ERASED_NAME,
  erasePersonsIn,
  payerIdentity,
  payerMayBeCustomer,
  reservationWithErasedCustomer,
  type Identity,
} from '../mapping/erasure.js';
import { contentHashOf } from '../mapping/bookings.js';
import { keptPayload } from '../mapping/personal-data.js';
import { matchKey } from '../mapping/pseudonyms.js';

type NamedPerson = { firstName: unknown; lastName: unknown };

/** Which persons of a booking to erase (by its key and the person's names). */
export type BookingPick = (key: BookingKey, person: NamedPerson) => boolean;

/**
 * Erases, in the bookings given, the persons `isErased` picks (a person erased before is not
 * picked again), with the hash of the current version. Returns them. The loyalty card numbers
 * go with the customer (the cards are theirs), or with `everyCardNumber` whoever holds them
 * (retention: they are as old as their booking, which may name no customer).
 */
export function eraseBookings(
  trx: Executor,
  keys: readonly BookingKey[],
  isErased: BookingPick,
  touched: RowsTouched,
  opts: { everyCardNumber?: boolean } = {},
): Promise<{ key: BookingKey; firstName: unknown; lastName: unknown }[]> {
  return eraseBookingPersons(
    trx,
    keys,
    (key, raw) => {
      const persons: NamedPerson[] = [];
      const picked = (p: NamedPerson) => {
        const yes = isErased(key, p) && p.firstName !== ERASED_NAME && p.lastName !== ERASED_NAME;
        if (yes) persons.push({ firstName: p.firstName, lastName: p.lastName });
        return yes;
      };
      const r = raw as { booking?: { customer?: NamedPerson | null } };
      const personsErased = bookingWithErasures(r.booking, picked);
      const booking = opts.everyCardNumber ? bookingWithoutCardNumbers(personsErased) : personsErased;
      const customer = r.booking?.customer;
      const customerErased = !!customer && persons.some((p) => p.firstName === customer.firstName && p.lastName === customer.lastName);
      const cardsErased = customerErased || JSON.stringify(booking) !== JSON.stringify(personsErased);
      if (persons.length === 0 && !cardsErased) return null;
      const erased = { ...r, booking };
      return { raw: erased, contentHash: contentHashOf(erased), customerErased, cardsErased, persons };
    },
    ERASED_NAME,
    touched,
  );
}

/** Erases, in the summaries of the booking list of the bookings given, the persons `isErased` picks. */
export function eraseSummaries(trx: Executor, keys: readonly BookingKey[], isErased: BookingPick, touched: RowsTouched): Promise<void> {
  return eraseSummaryPersons(
    trx,
    keys,
    (key, raw) => {
      const r = erasePersonsIn(raw, (p) => isErased(key, p));
      return r.erased > 0 ? r.payload : null;
    },
    touched,
  );
}

/** Whether an invoice's payer may be its reservation's customer (payerMayBeCustomer), as the store gives the payer. */
const mayBeCustomer = (p: InvoicePayer) => payerMayBeCustomer(p.payer_name, p.customer_company_name);

/** Erases PMS persons (their profiles) and the customer of the PMS reservations given (with the payers of their invoices who may be them). */
export async function erasePersons(trx: Executor, persons: readonly PersonKey[], customerOf: readonly BookingKey[], touched: RowsTouched): Promise<void> {
  await erasePmsPersonRows(
    trx,
    'pms_guests',
    persons.map((p) => [p.property_id, p.pms_person_id] as const),
    erasedPerson,
    ERASED_NAME,
    touched,
    erasedLoyaltyCard,
  );
  await erasePmsPersonRows(
    trx,
    'pms_reservations',
    customerOf.map((k) => [k.property_id, k.number] as const),
    reservationWithErasedCustomer,
    ERASED_NAME,
    touched,
  );
  await eraseCustomersPayers(trx, customerOf, touched);
}

/** Erases the payers of the invoices of the reservations given who may be their customer. */
export function eraseCustomersPayers(trx: Executor, reservations: readonly BookingKey[], touched: RowsTouched): Promise<void> {
  return eraseInvoicePayers(trx, reservations, mayBeCustomer, ERASED_NAME, touched);
}

/**
 * Erases the payers of the invoices of the reservations given whom `isErased` knows by name in
 * their reservation (payerIdentity): a room's guest who pays their own stay, whoever the
 * customer is.
 */
export function erasePayersNamed(trx: Executor, reservations: readonly BookingKey[], isErased: (id: Identity) => boolean, touched: RowsTouched): Promise<void> {
  const named = (p: InvoicePayer) => {
    const id = payerIdentity(p.property_id, p.number, p.payer_name);
    return id !== null && isErased(id);
  };
  return eraseInvoicePayers(trx, reservations, named, ERASED_NAME, touched);
}

/**
 * Erases what else may hold the persons: quarantined bodies of the entities given, or holding
 * one of `values` (the persons' e-mails and phones as stored, and normalised); change events
 * holding one; integration-storage bookings of the bookings given or holding one, where the
 * persons `isErased` recognises (by an identity, or by name in the booking of the storage
 * booking's number: `pick`) are erased, and what still holds one of the values is kept as with
 * personal data off.
 */
export function eraseTracesOf(
  trx: Executor,
  t: {
    entities: readonly { property_id: string; key: string }[];
    values: readonly string[];
    bookings: readonly BookingKey[];
    isErased: (id: Identity) => boolean;
    pick: BookingPick;
  },
  touched: RowsTouched,
): Promise<void> {
  const needles = [...new Set(t.values.map(matchKey))];
  const holdsNeedle = (payload: unknown) => {
    const key = matchKey(JSON.stringify(payload));
    return needles.some((n) => n.length >= 5 && key.includes(n));
  };
  return eraseTraces(
    trx,
    {
      entities: t.entities,
      needles,
      bookings: t.bookings,
      erasedBody: ERASED_BODY,
      eraseStorage: (raw, booking) => {
        const ref = booking === null ? undefined : { propertyId: booking.property_id, number: booking.number };
        const r = erasePersonsIn(raw, (p) => p.identities.some(t.isErased) || (booking !== null && t.pick(booking, p)), ref);
        // The document gives these no persons: a value held elsewhere goes with every value the policy keeps only with personal data.
        if (holdsNeedle(r.payload)) return keptPayload(r.payload, false);
        return r.erased > 0 ? r.payload : null;
      },
    },
    touched,
  );
}
