/**
 * Personal data of PMS persons (customers and guests). Names are always mirrored; e-mails,
 * phones, birth dates, citizenship and identity documents only when `pms.personalData` is on.
 * When it is off they are removed from the typed columns AND from `raw`, so that nothing of
 * them is stored anywhere. The list of keys is the one place that decides what is personal.
 */

/** Keys of a PMS person that hold personal data beyond the name. */
export const PERSONAL_KEYS = ['emails', 'phones', 'birthDate', 'citizenship', 'documents', 'personalDocument', 'identityDocument', 'birthAddress'] as const;

/** A copy of a person object without its personal keys (the object itself is not changed). */
export function stripPerson(person: unknown): unknown {
  if (typeof person !== 'object' || person === null || Array.isArray(person)) return person;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(person)) if (!(PERSONAL_KEYS as readonly string[]).includes(k)) out[k] = v;
  return out;
}

/** A copy of a reservation object whose customer has no personal keys. */
export function stripReservation(reservation: unknown): unknown {
  if (typeof reservation !== 'object' || reservation === null || Array.isArray(reservation)) return reservation;
  const r = reservation as Record<string, unknown>;
  return 'customer' in r ? { ...r, customer: stripPerson(r.customer) } : r;
}
