/**
 * `staysync forget-guest`: erases one person on request (GDPR Art. 17), selected by e-mail,
 * phone, PMS person id, or a booking (its customer and guests). Every personal value of the
 * person in every table and `raw` is replaced (src/privacy/erase.ts), the erasure is logged
 * with its selector as a keyed hash, and the person's identities join the erasure list, so
 * that a later version from the provider is erased before it is stored.
 *
 * Who the person is: the PMS persons the selector finds (by their profile or as a
 * reservation's customer; a booking selector: its reservation's customer and room guests),
 * and, until nothing new turns up, every PMS person mirrored with one of their e-mails, phones
 * or pseudonyms; with every name they are mirrored with. Everywhere the mirror holds them: each
 * reservation of which they are the customer or a room's guest, the invoices of those
 * reservations they pay (a payer is a name only: by their names), and in the bookings of the
 * same numbers (bookings name their guests only) the customer and guests of those names; a
 * booking selector erases every person of its own booking.
 *
 * The erasure lock, held alone only while the identities join the list. The order:
 *   1. find the person, reading the mirror without the lock (seconds on a large mirror, while
 *      writes of guest data go on);
 *   2. in a short transaction holding the lock alone, add their identities to the list: it
 *      waits for the writes of guest data in flight, which read the list before it changed,
 *      and every write after it reads the identities and stores the person erased;
 *   3. find them again: what a write committed between 1 and 2 is seen now; new identities
 *      (a write gave the person another e-mail) go back to 2, until none is new;
 *   4. erase the rows found, without the lock: what is written from now on is erased on its
 *      way in, so nothing found in 3 can come back.
 * A stop between 2 and 4 leaves the identities listed and the rows not yet erased: the next
 * run erases them (each step can be run again).
 */
import type { Db, Executor } from '../store/types.js';
import {
  bookingRaws,
  erasureKey,
  guestsOfReservations,
  listErasedIdentities,
  personCandidates,
  reservationsOfGuests,
  updateErasureLog,
  type BookingKey,
  type PersonKey,
  type RowsTouched,
} from '../store/repositories/erasures.js';
import { bookingPersonIdentity, bookingPersons, normaliseName, payerIdentitiesOf, type Identity } from '../mapping/erasure.js';
import { matchKey, normaliseEmail, normalisePhone, pseudonym } from '../mapping/pseudonyms.js';
import { eraseBookings, erasePayersNamed, erasePersons, eraseSummaries, eraseTracesOf, type BookingPick } from './erase.js';

export type SelectorKind = 'email' | 'phone' | 'person' | 'booking';
export interface Selector {
  kind: SelectorKind;
  value: string;
}

export interface ForgetResult {
  /** Persons erased: PMS persons and booking persons not among them. */
  persons: number;
  rowsTouched: RowsTouched;
  /** False when nobody in the mirror matched the selector (the selector still joins the list, but for a booking). */
  found: boolean;
  /** The erasure's number in `erasures` (none on a dry run). */
  erasureId: number | null;
  dryRun: boolean;
  /** How long the erasure lock was held alone, over every round (0 on a dry run, which never takes it), ms. */
  lockHeldMs: number;
  /** Rounds of listing identities (step 2 above; 0 on a dry run). */
  rounds: number;
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

/** Rounds of step 2 at most: each needs a write to have given the person a new identity meanwhile. */
const MAX_ROUNDS = 5;
/** Rounds of widening the person by their e-mails, phones and pseudonyms at most (each a scan of the PMS tables). */
const MAX_WIDENINGS = 10;

/**
 * `pseudonymKey` (privacy.pseudonymKey): with it, a person whose e-mail or phone is not stored
 * (pms.personalData off) is found by its pseudonym. `onListed`: called after each commit of
 * step 2 (the bench times a write against it).
 */
export async function forgetGuest(
  db: Db,
  selector: Selector,
  opts: { dryRun: boolean; pseudonymKey?: string | undefined; onListed?: () => Promise<void> },
): Promise<ForgetResult> {
  if (opts.dryRun) {
    const found = await findGuest(db, selector, opts.pseudonymKey);
    try {
      return await db.transaction().execute(async (trx) => {
        throw new DryRun({ ...(await eraseFound(trx, found)), erasureId: null, dryRun: true, lockHeldMs: 0, rounds: 0 });
      });
    } catch (err) {
      if (err instanceof DryRun) return err.result;
      throw err;
    }
  }
  const key = await erasureKey(db);
  const listed = new Set<string>();
  let erasureId: number | null = null;
  let lockHeldMs = 0;
  let rounds = 0;
  let found = await findGuest(db, selector, opts.pseudonymKey);
  for (;;) {
    const fresh = found.identities.filter((i) => !listed.has(ref(i)));
    if ((fresh.length === 0 && erasureId !== null) || rounds === MAX_ROUNDS) break;
    const r = await listErasedIdentities(db, key, { erasureId, selector, identities: fresh });
    erasureId = r.erasureId;
    lockHeldMs += r.lockHeldMs;
    rounds += 1;
    for (const i of fresh) listed.add(ref(i));
    await opts.onListed?.();
    found = await findGuest(db, selector, opts.pseudonymKey);
  }
  const id = erasureId!;
  const result = await db.transaction().execute(async (trx) => {
    const r = await eraseFound(trx, found);
    await updateErasureLog(trx, id, r);
    return r;
  });
  return { ...result, erasureId: id, dryRun: false, lockHeldMs, rounds };
}

/** Whom the selector names, where the mirror holds them, and what the erasure list will know them by. */
interface Found {
  /** PMS persons (their profiles). */
  persons: PersonKey[];
  /** PMS reservations whose customer is the person. */
  customerOf: BookingKey[];
  /** Bookings (and their PMS reservations' numbers) to erase the person in by name, or whole (`pick`). */
  bookings: BookingKey[];
  /** Which persons of a booking are the person. */
  pick: BookingPick;
  /** Every e-mail and phone the person is mirrored with, as stored and normalised (to find them in texts). */
  values: string[];
  /**
   * What the erasure list is to know them by: e-mails, phones and person ids (normalised), each
   * name in a booking, and each name they may pay an invoice of one of those bookings under.
   */
  identities: Identity[];
  /** Persons counted: distinct PMS persons, else distinct names erased in bookings. */
  personsCounted: number;
}

const ref = (id: Identity) => `${id.kind}:${id.value}`;
const keyOf = (propertyId: string, id: string) => `${propertyId}/${id}`;
const nameKey = (first: unknown, last: unknown) => `${normaliseName(first)}\u0000${normaliseName(last)}`;

/**
 * Step 1 (and 3): the person, by the selector, widened by every e-mail, phone and pseudonym
 * the persons found are mirrored with until nothing new turns up. The store finds candidates
 * by a key any spelling of a value shares (matchKey: a superset); the normalisation itself
 * (src/mapping/pseudonyms.ts, the same as pseudonyms and the erasure list use) decides here.
 */
async function findGuest(db: Executor, selector: Selector, pseudonymKey: string | undefined): Promise<Found> {
  const emails = new Set<string>();
  const phones = new Set<string>();
  const hashes = new Set<string>();
  const personIds = new Set<string>();
  const persons = new Map<string, PersonKey>();
  const customerOf = new Map<string, BookingKey>();
  const reservations: BookingKey[] = [];
  const values = new Set<string>();
  // Every name the PMS persons found are mirrored with, middle name included (what they pay invoices under).
  const pmsNames = new Map<string, { firstName: string | null; middleName: string | null; lastName: string | null }>();
  const addPerson = (p: PersonKey) => persons.set(keyOf(p.property_id, p.pms_person_id), p);
  if (selector.kind === 'email' || selector.kind === 'phone') {
    (selector.kind === 'email' ? emails : phones).add(selector.value);
    values.add(selector.value);
    const own = pseudonym(pseudonymKey, selector.value);
    if (own) hashes.add(own);
  } else if (selector.kind === 'person') personIds.add(selector.value);
  else {
    const [property_id, number] = selector.value.split('/') as [string, string];
    reservations.push({ property_id, number });
    for (const g of await guestsOfReservations(db, reservations)) addPerson(g);
  }
  // Each round looks only for what the rounds before did not (a scan of the PMS tables by
  // e-mail or phone takes seconds on a large mirror; by ids and pseudonyms it is cheaper).
  const searched = new Set<string>();
  const fresh = <T>(kind: string, items: Iterable<T>, key: (t: T) => string) => [...items].filter((t) => !searched.has(`${kind}:${key(t)}`));
  for (let round = 0; round < MAX_WIDENINGS; round++) {
    const match = {
      emailKeys: [...new Set(fresh('e', emails, (e) => e).map(matchKey))],
      phoneDigits: [...new Set(fresh('p', phones, (p) => p).map((p) => p.replace('+', '')))],
      pseudonyms: fresh('h', hashes, (h) => h),
      personIds: fresh('i', personIds, (i) => i),
      persons: fresh('k', persons.values(), (p) => keyOf(p.property_id, p.pms_person_id)),
      reservations: round === 0 ? reservations : [],
    };
    for (const e of emails) searched.add(`e:${e}`);
    for (const p of phones) searched.add(`p:${p}`);
    for (const h of hashes) searched.add(`h:${h}`);
    for (const i of personIds) searched.add(`i:${i}`);
    for (const p of persons.values()) searched.add(`k:${keyOf(p.property_id, p.pms_person_id)}`);
    const nothingNew = Object.values(match).every((v) => v.length === 0);
    if (nothingNew) break;
    const candidates = await personCandidates(db, match);
    for (const c of candidates) {
      const cEmails = c.emails.flatMap((e) => normaliseEmail(e) ?? []);
      const cPhones = c.phones.flatMap((p) => normalisePhone(p) ?? []);
      const matched =
        (c.person_id !== null && (personIds.has(c.person_id) || persons.has(keyOf(c.property_id, c.person_id)))) ||
        (c.source === 'pms_reservations' && reservations.some((k) => k.property_id === c.property_id && k.number === c.number)) ||
        cEmails.some((e) => emails.has(e)) ||
        cPhones.some((p) => phones.has(p)) ||
        (c.email_hash !== null && hashes.has(c.email_hash)) ||
        (c.phone_hash !== null && hashes.has(c.phone_hash));
      if (!matched) continue;
      if (c.person_id !== null) addPerson({ property_id: c.property_id, pms_person_id: c.person_id });
      if (c.source === 'pms_reservations' && c.number !== null)
        customerOf.set(keyOf(c.property_id, c.number), { property_id: c.property_id, number: c.number });
      for (const e of cEmails) emails.add(e);
      for (const p of cPhones) phones.add(p);
      for (const v of [...c.emails, ...c.phones]) values.add(v);
      for (const h of [c.email_hash, c.phone_hash]) if (h !== null) hashes.add(h);
      if (c.first_name !== null || c.last_name !== null)
        pmsNames.set(`${nameKey(c.first_name, c.last_name)}\u0000${normaliseName(c.middle_name)}`, {
          firstName: c.first_name,
          middleName: c.middle_name,
          lastName: c.last_name,
        });
    }
  }
  const asGuest = await reservationsOfGuests(db, [...persons.values()]);
  const bookings = dedupeKeys([...reservations, ...customerOf.values(), ...asGuest]);
  const selected = selector.kind === 'booking' ? selector.value : null;
  const names = new Set([...pmsNames.values()].map((n) => nameKey(n.firstName, n.lastName)));
  const pick: BookingPick = (key, p) => `${key.property_id}/${key.number}` === selected || names.has(nameKey(p.firstName, p.lastName));
  // The persons of the bookings as the erasure will find them: their names in each booking join the list.
  const picked = (await bookingRaws(db, bookings)).flatMap(({ key, raw }) =>
    bookingPersons((raw as { booking?: unknown }).booking)
      .filter((p) => pick(key, p))
      .map((p) => ({ key, person: p })),
  );
  const bookingNames = picked.flatMap(({ key, person }) => bookingPersonIdentity(key.property_id, key.number, person.firstName, person.lastName) ?? []);
  // And as the payer of an invoice of those bookings' reservations, whoever they are on it (a
  // room's guest may pay their own stay): the PMS persons' names in each, a booking's persons in theirs.
  const payerNames = [
    ...bookings.flatMap((key) => [...pmsNames.values()].flatMap((n) => payerIdentitiesOf(key.property_id, key.number, n))),
    ...picked.flatMap(({ key, person }) => payerIdentitiesOf(key.property_id, key.number, person)),
  ];
  const identities: Identity[] = [
    ...[...emails].map((value) => ({ kind: 'email' as const, value })),
    ...[...phones].map((value) => ({ kind: 'phone' as const, value })),
    ...[...new Set([...personIds, ...[...persons.values()].map((p) => p.pms_person_id)])].map((value) => ({ kind: 'person' as const, value })),
    ...bookingNames,
    ...payerNames,
  ];
  for (const e of emails) values.add(e);
  for (const p of phones) values.add(p);
  return {
    persons: [...persons.values()],
    customerOf: [...customerOf.values()],
    bookings,
    pick,
    values: [...values],
    identities: dedupe(identities),
    personsCounted: persons.size || new Set(bookingNames.map((i) => i.value.split('\u0000').slice(2).join('\u0000'))).size,
  };
}

/** Step 4: the rows found, erased; what changed. */
async function eraseFound(trx: Executor, found: Found): Promise<{ persons: number; rowsTouched: RowsTouched; found: boolean }> {
  const touched: RowsTouched = {};
  const listed = new Set(found.identities.map(ref));
  await erasePersons(trx, found.persons, found.customerOf, touched);
  await erasePayersNamed(trx, found.bookings, (id) => listed.has(ref(id)), touched);
  const erased = await eraseBookings(trx, found.bookings, found.pick, touched);
  await eraseSummaries(trx, found.bookings, found.pick, touched);
  await eraseTracesOf(
    trx,
    {
      entities: [
        ...found.bookings.map((b) => ({ property_id: b.property_id, key: b.number })),
        ...found.persons.map((p) => ({ property_id: p.property_id, key: p.pms_person_id })),
      ],
      values: found.values,
      bookings: found.bookings,
      isErased: (id) => listed.has(ref(id)),
      pick: found.pick,
    },
    touched,
  );
  const persons = found.personsCounted || new Set(erased.map((p) => nameKey(p.firstName, p.lastName))).size;
  return { persons, rowsTouched: touched, found: persons > 0 || Object.keys(touched).length > 0 };
}

const dedupeKeys = (keys: BookingKey[]) => [...new Map(keys.map((k) => [`${k.property_id}/${k.number}`, k])).values()];

const dedupe = (ids: Identity[]) => [...new Map(ids.map((i) => [ref(i), i])).values()];
