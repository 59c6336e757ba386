/**
 * Erasing persons in the mirror: the one way personal data is erased, used by forget-guest (one
 * person, on request) and by retention (every person of stays that ended long ago). An erased
 * person keeps their PMS person id; their names become ERASED_NAME, every other personal value
 * (typed column or in `raw`) is emptied, and the figures stay. What is personal is decided by
 * src/mapping/personal-data.ts, how a payload looks erased by src/mapping/erasure.ts; the rows
 * are found and written by src/store/repositories/erasures.ts.
 */
import type { Executor } from '../store/types.js';
import { eraseBookingPersons, erasePmsPersonRows, eraseTraces, type BookingKey, type PersonKey, type RowsTouched } from '../store/repositories/erasures.js';
import { bookingWithErasures, erasedPerson, ERASED_NAME, reservationWithErasedCustomer } from '../mapping/erasure.js';
import { keptPayload } from '../mapping/personal-data.js';

type NamedPerson = { firstName: unknown; lastName: unknown };

/** Erases, in the bookings given, the persons `isErased` picks (a person erased before is not picked again). Returns them. */
export function eraseBookings(
  trx: Executor,
  keys: readonly BookingKey[],
  isErased: (p: NamedPerson) => boolean,
  touched: RowsTouched,
): Promise<{ key: BookingKey; firstName: unknown; lastName: unknown }[]> {
  return eraseBookingPersons(
    trx,
    keys,
    (_, raw) => {
      const persons: NamedPerson[] = [];
      const picked = (p: NamedPerson) => {
        const yes = isErased(p) && p.firstName !== ERASED_NAME && p.lastName !== ERASED_NAME;
        if (yes) persons.push({ firstName: p.firstName, lastName: p.lastName });
        return yes;
      };
      const r = raw as { booking?: { customer?: NamedPerson | null } };
      const booking = bookingWithErasures(r.booking, picked);
      const customer = r.booking?.customer;
      const customerErased = !!customer && persons.some((p) => p.firstName === customer.firstName && p.lastName === customer.lastName);
      return persons.length === 0 ? null : { raw: { ...r, booking }, customerErased, persons };
    },
    ERASED_NAME,
    touched,
  );
}

/** Erases PMS persons (their profiles) and the customer of the PMS reservations given. */
export async function erasePersons(trx: Executor, persons: readonly PersonKey[], customerOf: readonly BookingKey[], touched: RowsTouched): Promise<void> {
  await erasePmsPersonRows(
    trx,
    'pms_guests',
    persons.map((p) => [p.property_id, p.pms_person_id] as const),
    erasedPerson,
    ERASED_NAME,
    touched,
  );
  await erasePmsPersonRows(
    trx,
    'pms_reservations',
    customerOf.map((k) => [k.property_id, k.number] as const),
    reservationWithErasedCustomer,
    ERASED_NAME,
    touched,
  );
}

/** Erases what else may hold the persons: quarantined bodies, change events, integration-storage bookings. */
export function eraseTracesOf(
  trx: Executor,
  entities: readonly { property_id: string; key: string }[],
  values: readonly string[],
  touched: RowsTouched,
): Promise<void> {
  return eraseTraces(trx, entities, values, (raw) => keptPayload(raw, false), touched);
}
