/**
 * `staysync forget-guest`: erases one person on request (GDPR Art. 17), selected by e-mail,
 * phone, PMS person id, or a booking (its customer and guests). In one transaction, holding
 * the erasure lock alone (src/store/repositories/erasures.ts): every personal value of the
 * person in every table and `raw` is replaced (src/privacy/erase.ts), the erasure is logged
 * with its selector as a keyed hash, and the person's identities join the erasure list, so
 * that a later version from the provider is erased before it is stored.
 *
 * Who the person is: the PMS persons the selector finds (by their profile or as a
 * reservation's customer), with every e-mail, phone and name they are mirrored with; in the
 * bookings of the same numbers (bookings name their guests only), the customer and guests of
 * that name. A booking selector takes every person of the booking and of the PMS reservation
 * of the same number.
 */
import type { Db, Executor } from '../store/types.js';
import { findPerson, lockForErasure, recordErasure, type RowsTouched } from '../store/repositories/erasures.js';
import { bookingPersonIdentity, normaliseName, type Identity } from '../mapping/erasure.js';
import { normaliseEmail, normalisePhone, pseudonym } from '../mapping/pseudonyms.js';
import { eraseBookings, erasePersons, eraseTracesOf } from './erase.js';

export type SelectorKind = 'email' | 'phone' | 'person' | 'booking';
export interface Selector {
  kind: SelectorKind;
  value: string;
}

export interface ForgetResult {
  /** Persons erased: PMS persons and booking persons not among them. */
  persons: number;
  rowsTouched: RowsTouched;
  /** The erasure's number in `erasures` (none on a dry run). */
  erasureId: number | null;
  dryRun: boolean;
}

/** A selector as given on the command line, checked: a clear sentence for one that is not. */
export function parseSelector(kind: SelectorKind, value: string): Selector {
  const v = value.trim();
  if (v.length === 0 || v.length > 320) throw new SelectorError(`--${kind} needs a value of 1 to 320 characters`);
  if (kind === 'email') {
    if (!/^[^\s@]+@[^\s@]+$/.test(v)) throw new SelectorError(`--email ${JSON.stringify(v)} is not an e-mail address`);
    return { kind, value: normaliseEmail(v)! };
  }
  if (kind === 'phone') {
    const p = normalisePhone(v);
    if (p === null || p.replace('+', '').length < 5) throw new SelectorError(`--phone ${JSON.stringify(v)} has fewer than 5 digits`);
    return { kind, value: p };
  }
  if (kind === 'booking') {
    if (!/^[^/\s]+\/[^/\s]+$/.test(v)) throw new SelectorError(`--booking ${JSON.stringify(v)} is not <propertyId>/<number>`);
    return { kind, value: v };
  }
  if (!/^[\w-]+$/.test(v)) throw new SelectorError(`--person ${JSON.stringify(v)} is not a PMS person id`);
  return { kind, value: v };
}

export class SelectorError extends Error {}

/** Thrown inside the transaction of a dry run, so that it rolls back with its report. */
class DryRun extends Error {
  constructor(readonly result: ForgetResult) {
    super('dry run');
  }
}

/** `pseudonymKey` (privacy.pseudonymKey): with it, a person whose e-mail or phone is not stored (pms.personalData off) is found by its pseudonym. */
export async function forgetGuest(db: Db, selector: Selector, opts: { dryRun: boolean; pseudonymKey?: string | undefined }): Promise<ForgetResult> {
  try {
    return await db.transaction().execute(async (trx) => {
      const key = await lockForErasure(trx);
      const result = await erase(trx, key, selector, opts.dryRun, opts.pseudonymKey);
      if (opts.dryRun) throw new DryRun(result);
      return result;
    });
  } catch (err) {
    if (err instanceof DryRun) return err.result;
    throw err;
  }
}

async function erase(trx: Executor, key: string, selector: Selector, dryRun: boolean, pseudonymKey: string | undefined): Promise<ForgetResult> {
  const touched: RowsTouched = {};
  const found = await findPerson(trx, selector, selector.kind === 'email' || selector.kind === 'phone' ? pseudonym(pseudonymKey, selector.value) : null);
  await erasePersons(trx, found.persons, found.customerOf, touched);
  const names = new Set(found.names.map(([f, l]) => nameKey(f, l)));
  const wholeBooking = selector.kind === 'booking';
  const bookingPersons = await eraseBookings(trx, found.bookings, (p) => wholeBooking || names.has(nameKey(p.firstName, p.lastName)), touched);
  await eraseTracesOf(
    trx,
    [
      ...found.bookings.map((b) => ({ property_id: b.property_id, key: b.number })),
      ...found.persons.map((p) => ({ property_id: p.property_id, key: p.pms_person_id })),
    ],
    [...found.emails, ...found.phones],
    touched,
  );
  const identities: Identity[] = [
    ...found.emails.flatMap((e) => (normaliseEmail(e) ? [{ kind: 'email' as const, value: normaliseEmail(e)! }] : [])),
    ...found.phones.flatMap((p) => (normalisePhone(p) ? [{ kind: 'phone' as const, value: normalisePhone(p)! }] : [])),
    ...found.persons.map((p) => ({ kind: 'person' as const, value: p.pms_person_id })),
    ...bookingPersons.flatMap((p) => bookingPersonIdentity(p.key.property_id, p.key.number, p.firstName, p.lastName) ?? []),
  ];
  // The selector itself too: an e-mail not mirrored yet is erased when it comes.
  if (selector.kind !== 'booking') identities.push({ kind: selector.kind, value: selector.value });
  const persons =
    new Set(found.persons.map((p) => `${p.property_id}/${p.pms_person_id}`)).size || new Set(bookingPersons.map((p) => nameKey(p.firstName, p.lastName))).size;
  const erasureId = dryRun
    ? null
    : await recordErasure(trx, key, {
        selector,
        persons,
        rowsTouched: touched,
        identities: dedupe(identities),
      });
  return { persons, rowsTouched: touched, erasureId, dryRun };
}

const nameKey = (first: unknown, last: unknown) => `${normaliseName(first)}\u0000${normaliseName(last)}`;

const dedupe = (ids: Identity[]) => [...new Map(ids.map((i) => [`${i.kind}:${i.value}`, i])).values()];
