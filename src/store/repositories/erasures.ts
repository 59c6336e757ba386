/**
 * The erasure list and log (migrations/0016_erasure.sql): identities kept as keyed hashes,
 * checked by every write of guest data, added to by forget-guest; and the lock that orders
 * the two.
 *
 * Why a lock: a write that read the list before an erasure committed could store the erased
 * person again after it. So every write of guest data takes the erasure lock shared before
 * it reads the list, and an erasure takes it alone for its whole transaction: a write either
 * ends before the erasure starts (and the erasure erases what it wrote) or reads the list after
 * the erasure committed (and erases the person itself). The list is read in a statement of its
 * own, after the lock: a statement's snapshot is taken when it starts, before any wait for a lock.
 */
import { createHmac } from 'node:crypto';
import { parseJsonLossless } from '../../provider/json.js';
import { sql, type RawBuilder } from 'kysely';
import { prepared } from '../prepared.js';
import type { Executor } from '../types.js';

/** What an identity is (src/mapping/erasure.ts Identity), as the store sees it. */
export interface IdentityRef {
  kind: string;
  value: string;
}

/** The lock of a schema's erasures (an advisory lock of the transaction). */
const ERASURE_LOCK = sql`hashtext('staysync:erasures'), hashtext(current_schema())`;

/** HMAC-SHA-256 of an identity under the mirror's erasure key, hex. */
export function identityHash(key: string, id: IdentityRef): string {
  return createHmac('sha256', key).update(`${id.kind}:${id.value}`).digest('hex');
}

/**
 * In a write of guest data: which of `identities` are erased (one boolean each). Waits while
 * an erasure runs. Two statements, whatever the list holds: the lock (which returns the key),
 * then the lookup.
 */
export async function erasedAmong(trx: Executor, identities: readonly IdentityRef[]): Promise<boolean[]> {
  if (identities.length === 0) return [];
  const locked = await prepared(
    sql<{ key: string }>`SELECT pg_advisory_xact_lock_shared(${ERASURE_LOCK})::text AS locked, (SELECT key FROM erasure_key) AS key`,
  ).execute(trx);
  const key = locked.rows[0]!.key;
  const hashes = identities.map((id) => identityHash(key, id));
  const found = await prepared(sql<{ hash: string; kind: string }>`SELECT hash, kind FROM erased_identities WHERE hash = ANY(${hashes}::text[])`).execute(trx);
  const erased = new Set(found.rows.map((r) => `${r.kind}:${r.hash}`));
  return identities.map((id, i) => erased.has(`${id.kind}:${hashes[i]}`));
}

/** In an erasure's transaction: the lock alone (writes of guest data wait), and the key. */
export async function lockForErasure(trx: Executor): Promise<string> {
  const r = await sql<{ key: string }>`SELECT pg_advisory_xact_lock(${ERASURE_LOCK})::text AS locked, (SELECT key FROM erasure_key) AS key`.execute(trx);
  return r.rows[0]!.key;
}

/** Logs an erasure (never its values): its number. Retention logs with this alone: it adds no identity, so it needs neither the key nor the lock. */
export async function logErasure(
  trx: Executor,
  e: {
    reason: 'request' | 'retention';
    selector?: { kind: 'email' | 'phone' | 'person' | 'booking'; hash: string };
    persons: number;
    rowsTouched: Record<string, number>;
  },
): Promise<number> {
  const r = await sql<{ id: string }>`
    INSERT INTO erasures (reason, selector_kind, selector_hash, persons, rows_touched)
    VALUES (${e.reason}, ${e.selector?.kind ?? null}, ${e.selector?.hash ?? null}, ${e.persons}, ${JSON.stringify(e.rowsTouched)}::jsonb)
    RETURNING erasure_id::text AS id`.execute(trx);
  return Number(r.rows[0]!.id);
}

/** Logs forget-guest's erasure, its selector as a keyed hash, and adds the person's identities to the list; returns its number. */
export async function recordErasure(
  trx: Executor,
  key: string,
  e: {
    selector: IdentityRef & { kind: 'email' | 'phone' | 'person' | 'booking' };
    persons: number;
    rowsTouched: Record<string, number>;
    identities: readonly IdentityRef[];
  },
): Promise<number> {
  const id = await logErasure(trx, {
    reason: 'request',
    selector: { kind: e.selector.kind, hash: identityHash(key, e.selector) },
    persons: e.persons,
    rowsTouched: e.rowsTouched,
  });
  if (e.identities.length > 0) {
    await sql`
      INSERT INTO erased_identities (kind, hash, erasure_id)
      SELECT kind, hash, ${id} FROM unnest(${e.identities.map((i) => i.kind)}::text[], ${e.identities.map((i) => identityHash(key, i))}::text[]) AS x(kind, hash)
      ON CONFLICT DO NOTHING`.execute(trx);
  }
  return id;
}

/**
 * In a write of guest data: each item's rows as they may be stored, those holding an erased
 * person made again without them (the items' own `withErasures`). One lookup for all items.
 */
export async function rowsAfterErasures<R>(
  trx: Executor,
  items: readonly { rows: R; identities: readonly IdentityRef[]; withErasures: (isErased: (id: IdentityRef) => boolean) => R }[],
): Promise<R[]> {
  const all = items.flatMap((i) => i.identities);
  const flags = await erasedAmong(trx, all);
  const ref = (id: IdentityRef) => `${id.kind}:${id.value}`;
  const erased = new Set(all.filter((_, i) => flags[i]).map(ref));
  if (erased.size === 0) return items.map((i) => i.rows);
  return items.map((i) => (i.identities.some((id) => erased.has(ref(id))) ? i.withErasures((id) => erased.has(ref(id))) : i.rows));
}

// ------------------------------------------------------------------ erasing rows (src/privacy/erase.ts decides what)

/** A stored jsonb read as text, parsed with its numbers' digits kept (written back as they were). */
const stored = (text: string): unknown => parseJsonLossless(text);

/** Rows changed, by table. */
export type RowsTouched = Record<string, number>;

/** What a quarantined body holds once it held an erased person's data. */
export const ERASED_BODY = '(erased: the body held personal data of an erased guest; the reason says what failed)';

/**
 * What erased names become (src/mapping/erasure.ts ERASED_NAME, which the payloads take): the
 * store takes it as given, so that the typed columns and raw say the same.
 */
export interface Erasing {
  marker: string;
}

const add = (touched: RowsTouched, table: string, n: number) => {
  if (n > 0) touched[table] = (touched[table] ?? 0) + n;
};

/** A name given, or NULL: the marker only where there was a name. */
const marked = (column: string, marker: string) => sql`CASE WHEN ${sql.ref(column)} IS NULL THEN NULL ELSE ${marker}::text END`;

export interface BookingKey {
  property_id: string;
  number: string;
}

/**
 * Erases persons of bookings: `erase` gives each booking's raw with its persons erased and the
 * persons it erased (null: none), and the typed columns follow (the customer takes the loyalty
 * card numbers along). Returns the persons erased, by booking.
 */
export async function eraseBookingPersons(
  trx: Executor,
  keys: readonly BookingKey[],
  erase: (key: BookingKey, raw: unknown) => { raw: unknown; customerErased: boolean; persons: { firstName: unknown; lastName: unknown }[] } | null,
  marker: string,
  touched: RowsTouched,
): Promise<{ key: BookingKey; firstName: unknown; lastName: unknown }[]> {
  const erased: { key: BookingKey; firstName: unknown; lastName: unknown }[] = [];
  for (const key of keys) {
    const [row] = (
      await sql<{ raw: string }>`SELECT raw::text AS raw FROM bookings WHERE property_id = ${key.property_id} AND number = ${key.number} FOR UPDATE`.execute(
        trx,
      )
    ).rows;
    const done = row ? erase(key, stored(row.raw)) : null;
    if (!done || done.persons.length === 0) continue;
    erased.push(...done.persons.map((p) => ({ key, ...p })));
    const b = await sql`UPDATE bookings SET raw = ${JSON.stringify(done.raw)}::jsonb,
           customer_first_name = CASE WHEN ${done.customerErased} THEN ${marked('customer_first_name', marker)} ELSE customer_first_name END,
           customer_last_name = CASE WHEN ${done.customerErased} THEN ${marked('customer_last_name', marker)} ELSE customer_last_name END,
           synced_at = now()
     WHERE property_id = ${key.property_id} AND number = ${key.number}`.execute(trx);
    add(touched, 'bookings', Number(b.numAffectedRows ?? 0));
    for (const p of done.persons) {
      const r = await sql`UPDATE booking_guests SET first_name = ${marked('first_name', marker)}, last_name = ${marked('last_name', marker)}, synced_at = now()
         WHERE property_id = ${key.property_id} AND number = ${key.number}
           AND first_name IS NOT DISTINCT FROM ${p.firstName ?? null}::text AND last_name IS NOT DISTINCT FROM ${p.lastName ?? null}::text`.execute(trx);
      add(touched, 'booking_guests', Number(r.numAffectedRows ?? 0));
    }
    if (done.customerErased) {
      const r = await sql`UPDATE booking_loyalty_cards SET card_number = NULL, synced_at = now()
         WHERE property_id = ${key.property_id} AND number = ${key.number} AND card_number IS NOT NULL`.execute(trx);
      add(touched, 'booking_loyalty_cards', Number(r.numAffectedRows ?? 0));
    }
  }
  return erased;
}

/**
 * The columns of a PMS person, by table: the names an erasure marks, and the values it clears
 * (personal data, the comment, the pseudonyms). One list for erasing and for finding what
 * still holds personal data (retention.ts).
 */
export const PMS_PERSON_COLUMNS = {
  pms_reservations: {
    key: ['property_id', 'number'],
    names: ['customer_first_name', 'customer_middle_name', 'customer_last_name'],
    cleared: [
      'customer_email',
      'customer_phone',
      'customer_birth_date',
      'customer_citizenship',
      'customer_comment',
      'customer_email_hash',
      'customer_phone_hash',
    ],
  },
  pms_guests: {
    key: ['property_id', 'pms_person_id'],
    names: ['first_name', 'middle_name', 'last_name'],
    cleared: ['email', 'phone', 'birth_date', 'citizenship', 'email_hash', 'phone_hash'],
  },
} as const;
type PmsPersonTable = keyof typeof PMS_PERSON_COLUMNS;

/** True for a row of `table` (as `alias`) that still holds a PMS person's personal data: a name not erased, or a value not cleared. */
export function holdsPersonalData(table: PmsPersonTable, alias: string, marker: string): RawBuilder<boolean> {
  const { names, cleared } = PMS_PERSON_COLUMNS[table];
  return sql<boolean>`(${sql.join(
    [...names.map((c) => notErased(`${alias}.${c}`, marker)), ...cleared.map((c) => sql`${sql.ref(`${alias}.${c}`)} IS NOT NULL`)],
    sql` OR `,
  )})`;
}

/** A column that holds a name not erased yet. */
export const notErased = (column: string, marker: string) => sql`(${sql.ref(column)} IS NOT NULL AND ${sql.ref(column)} <> ${marker})`;

/**
 * Erases a PMS person in rows of `table` (a reservation's customer, a guest profile): the names
 * marked, the rest cleared, `raw` as `erase` gives it.
 */
export async function erasePmsPersonRows(
  trx: Executor,
  table: PmsPersonTable,
  keys: readonly (readonly [string, string])[],
  erase: (raw: unknown) => unknown,
  marker: string,
  touched: RowsTouched,
): Promise<void> {
  const { key, names, cleared } = PMS_PERSON_COLUMNS[table];
  const where = (k: readonly [string, string]) => sql`${sql.ref(key[0])} = ${k[0]} AND ${sql.ref(key[1])} = ${k[1]}`;
  for (const k of keys) {
    const [row] = (await sql<{ raw: string }>`SELECT raw::text AS raw FROM ${sql.table(table)} WHERE ${where(k)} FOR UPDATE`.execute(trx)).rows;
    if (!row) continue;
    const set = [
      sql`raw = ${JSON.stringify(erase(stored(row.raw)))}::jsonb`,
      ...names.map((c) => sql`${sql.ref(c)} = ${marked(c, marker)}`),
      ...cleared.map((c) => sql`${sql.ref(c)} = NULL`),
      sql`synced_at = now()`,
    ];
    const r = await sql`UPDATE ${sql.table(table)} SET ${sql.join(set)} WHERE ${where(k)}`.execute(trx);
    add(touched, table, Number(r.numAffectedRows ?? 0));
  }
}

export interface PersonKey {
  property_id: string;
  pms_person_id: string;
}

/**
 * Erases what else may hold the persons: quarantined bodies of the entities given (booking
 * numbers, person ids) or holding one of `values` (e-mails, phones), change events' payloads
 * and integration-storage bookings holding one of `values`.
 */
export async function eraseTraces(
  trx: Executor,
  entities: readonly { property_id: string; key: string }[],
  values: readonly string[],
  keptWithoutPersonalData: (raw: unknown) => unknown,
  touched: RowsTouched,
): Promise<void> {
  // Short values would match unrelated text.
  const needles = [...new Set(values.map((v) => v.toLowerCase()).filter((v) => v.length >= 5))];
  const q = await sql`UPDATE quarantine SET raw_body = ${ERASED_BODY}
     WHERE raw_body <> ${ERASED_BODY}
       AND ((property_id, entity_key) IN (SELECT * FROM unnest(${entities.map((e) => e.property_id)}::text[], ${entities.map((e) => e.key)}::text[]))
            OR EXISTS (SELECT 1 FROM unnest(${needles}::text[]) n WHERE strpos(lower(raw_body), n) > 0))`.execute(trx);
  add(touched, 'quarantine', Number(q.numAffectedRows ?? 0));
  if (needles.length === 0) return;
  const w = await sql`UPDATE webhook_events SET payload = NULL
     WHERE payload IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(${needles}::text[]) n WHERE strpos(lower(payload::text), n) > 0)`.execute(trx);
  add(touched, 'webhook_events', Number(w.numAffectedRows ?? 0));
  const storage = await sql<{ property_id: string; booking_id: string; raw: string }>`
    SELECT property_id, booking_id, raw::text AS raw FROM integration_storage_bookings
     WHERE EXISTS (SELECT 1 FROM unnest(${needles}::text[]) n WHERE strpos(lower(raw::text), n) > 0) FOR UPDATE`.execute(trx);
  for (const s of storage.rows) {
    // The document gives these no persons: what holds the value is a field the policy keeps
    // only with personal data, or a person; both go (`keptWithoutPersonalData`).
    await sql`UPDATE integration_storage_bookings SET raw = ${JSON.stringify(keptWithoutPersonalData(stored(s.raw)))}::jsonb, synced_at = now()
       WHERE property_id = ${s.property_id} AND booking_id = ${s.booking_id}`.execute(trx);
  }
  add(touched, 'integration_storage_bookings', storage.rows.length);
}

// ------------------------------------------------------------------ finding a person (forget-guest)

export interface FoundPerson {
  /** PMS persons (their profiles). */
  persons: PersonKey[];
  /** PMS reservations whose customer is the person. */
  customerOf: BookingKey[];
  /** Bookings to look for the person in (by name), or to erase whole (a booking selector). */
  bookings: BookingKey[];
  emails: string[];
  phones: string[];
  names: [string | null, string | null][];
}

/** The rows that name the person, and every value the person is mirrored with. */
export async function findPerson(
  trx: Executor,
  selector: { kind: 'email' | 'phone' | 'person' | 'booking'; value: string },
  /** The selector's pseudonym (migrations/0017_pseudonyms.sql), when there is a key: finds the person where the e-mail or phone itself is not stored. */
  pseudonym: string | null,
): Promise<FoundPerson> {
  const emailsOf = (json: string) => sql`CASE WHEN jsonb_typeof(${sql.raw(json)}) = 'array' THEN ${sql.raw(json)} ELSE '[]'::jsonb END`;
  let persons: PersonKey[];
  let customerOf: BookingKey[];
  let bookings: BookingKey[] = [];
  if (selector.kind === 'booking') {
    const [property_id, number] = selector.value.split('/') as [string, string];
    bookings = [{ property_id, number }];
    persons = (
      await sql<PersonKey>`
      SELECT DISTINCT property_id, pms_person_id FROM (
        SELECT property_id, customer_person_id AS pms_person_id FROM pms_reservations WHERE property_id = ${property_id} AND number = ${number}
        UNION ALL
        SELECT property_id, unnest(guest_person_ids) FROM pms_room_stays WHERE property_id = ${property_id} AND number = ${number}) p
       WHERE pms_person_id IS NOT NULL`.execute(trx)
    ).rows;
    customerOf = (
      await sql<BookingKey>`SELECT property_id, number FROM pms_reservations WHERE property_id = ${property_id} AND number = ${number}`.execute(trx)
    ).rows;
  } else {
    const [guestMatch, customerMatch] =
      selector.kind === 'email'
        ? [
            sql`g.email_hash = ${pseudonym} OR lower(btrim(g.email)) = ${selector.value} OR EXISTS (SELECT 1 FROM jsonb_array_elements(${emailsOf("g.raw->'emails'")}) e WHERE lower(btrim(e->>'address')) = ${selector.value})`,
            sql`r.customer_email_hash = ${pseudonym} OR lower(btrim(r.customer_email)) = ${selector.value} OR EXISTS (SELECT 1 FROM jsonb_array_elements(${emailsOf("r.raw->'customer'->'emails'")}) e WHERE lower(btrim(e->>'address')) = ${selector.value})`,
          ]
        : selector.kind === 'phone'
          ? [
              sql`g.phone_hash = ${pseudonym} OR regexp_replace(g.phone, '\\D', '', 'g') = ${selector.value.replace('+', '')} OR EXISTS (SELECT 1 FROM jsonb_array_elements(${emailsOf("g.raw->'phones'")}) e WHERE regexp_replace(e->>'phoneNumber', '\\D', '', 'g') = ${selector.value.replace('+', '')})`,
              sql`r.customer_phone_hash = ${pseudonym} OR regexp_replace(r.customer_phone, '\\D', '', 'g') = ${selector.value.replace('+', '')} OR EXISTS (SELECT 1 FROM jsonb_array_elements(${emailsOf("r.raw->'customer'->'phones'")}) e WHERE regexp_replace(e->>'phoneNumber', '\\D', '', 'g') = ${selector.value.replace('+', '')})`,
            ]
          : [sql`g.pms_person_id = ${selector.value}`, sql`r.customer_person_id = ${selector.value}`];
    customerOf = (await sql<BookingKey>`SELECT r.property_id, r.number FROM pms_reservations r WHERE ${customerMatch}`.execute(trx)).rows;
    persons = (
      await sql<PersonKey>`
      SELECT DISTINCT property_id, pms_person_id FROM (
        SELECT g.property_id, g.pms_person_id FROM pms_guests g WHERE ${guestMatch}
        UNION ALL
        SELECT r.property_id, r.customer_person_id FROM pms_reservations r WHERE ${customerMatch}
        UNION ALL
        SELECT s.property_id, ${selector.kind === 'person' ? selector.value : null}::text FROM pms_room_stays s
         WHERE ${selector.kind === 'person'} AND s.guest_person_ids @> ARRAY[${selector.value}]::text[]) p
       WHERE pms_person_id IS NOT NULL`.execute(trx)
    ).rows;
    // Reservations where the persons are the customer (by id) or a guest of a stay.
    const ids = { props: persons.map((p) => p.property_id), ids: persons.map((p) => p.pms_person_id) };
    customerOf = dedupeKeys([
      ...customerOf,
      ...(
        await sql<BookingKey>`SELECT r.property_id, r.number FROM pms_reservations r
           JOIN unnest(${ids.props}::text[], ${ids.ids}::text[]) AS x(property_id, id) ON r.property_id = x.property_id AND r.customer_person_id = x.id`.execute(
          trx,
        )
      ).rows,
    ]);
    const asGuest = (
      await sql<BookingKey>`SELECT DISTINCT s.property_id, s.number FROM pms_room_stays s
         JOIN unnest(${ids.props}::text[], ${ids.ids}::text[]) AS x(property_id, id) ON s.property_id = x.property_id AND x.id = ANY(s.guest_person_ids)`.execute(
        trx,
      )
    ).rows;
    bookings = dedupeKeys([...customerOf, ...asGuest]);
  }
  // Every value the person is mirrored with: names, e-mails and phones of the profiles and of the reservations as customer.
  const values = await sql<{ first_name: string | null; last_name: string | null; emails: string[] | null; phones: string[] | null }>`
    SELECT g.first_name, g.last_name,
           array_remove(array_append(ARRAY(SELECT e->>'address' FROM jsonb_array_elements(${emailsOf("g.raw->'emails'")}) e), g.email), NULL) AS emails,
           array_remove(array_append(ARRAY(SELECT e->>'phoneNumber' FROM jsonb_array_elements(${emailsOf("g.raw->'phones'")}) e), g.phone), NULL) AS phones
      FROM pms_guests g JOIN unnest(${persons.map((p) => p.property_id)}::text[], ${persons.map((p) => p.pms_person_id)}::text[]) AS x(property_id, id)
        ON g.property_id = x.property_id AND g.pms_person_id = x.id
    UNION ALL
    SELECT r.customer_first_name, r.customer_last_name,
           array_remove(array_append(ARRAY(SELECT e->>'address' FROM jsonb_array_elements(${emailsOf("r.raw->'customer'->'emails'")}) e), r.customer_email), NULL),
           array_remove(array_append(ARRAY(SELECT e->>'phoneNumber' FROM jsonb_array_elements(${emailsOf("r.raw->'customer'->'phones'")}) e), r.customer_phone), NULL)
      FROM pms_reservations r JOIN unnest(${customerOf.map((k) => k.property_id)}::text[], ${customerOf.map((k) => k.number)}::text[]) AS x(property_id, number)
        ON r.property_id = x.property_id AND r.number = x.number`.execute(trx);
  const emails = new Set<string>(selector.kind === 'email' ? [selector.value] : []);
  const phones = new Set<string>(selector.kind === 'phone' ? [selector.value] : []);
  const names: [string | null, string | null][] = [];
  for (const v of values.rows) {
    for (const e of v.emails ?? []) emails.add(e);
    for (const p of v.phones ?? []) phones.add(p);
    if (v.first_name !== null || v.last_name !== null) names.push([v.first_name, v.last_name]);
  }
  return { persons, customerOf, bookings, emails: [...emails], phones: [...phones], names };
}

const dedupeKeys = (keys: BookingKey[]) => [...new Map(keys.map((k) => [`${k.property_id}/${k.number}`, k])).values()];
