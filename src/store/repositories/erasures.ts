/**
 * The erasure list and log (migrations/0016_erasure.sql): identities kept as keyed hashes,
 * checked by every write of guest data, added to by forget-guest; and the lock that orders
 * the two.
 *
 * Why a lock: a write that read the list before an erasure's identities joined it could store
 * the erased person again after it. So every write of guest data takes the erasure lock shared
 * before it reads the list, until it commits, and forget-guest takes it alone for the short
 * transaction that adds the identities (listErasedIdentities): a write either commits before
 * that (and forget-guest, which reads the mirror again after it, erases what it wrote) or reads
 * the list after it (and erases the person itself). The list is read in a statement of its own,
 * after the lock: a statement's snapshot is taken when it starts, before any wait for a lock.
 * forget-guest reads the mirror and erases the rows without the lock (src/privacy/forget-guest.ts).
 */
import { createHmac } from 'node:crypto';
import { parseJsonLossless } from '../../provider/json.js';
import { sql, type RawBuilder } from 'kysely';
import { prepared } from '../prepared.js';
import type { Db, Executor } from '../types.js';

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

/**
 * In a write of guest data that cannot say which persons it holds (a body that is not JSON):
 * the erasure lock shared, as erasedAmong takes it, whatever the list holds. Held until commit.
 */
export async function lockForGuestWrite(trx: Executor): Promise<void> {
  await prepared(sql`SELECT pg_advisory_xact_lock_shared(${ERASURE_LOCK})::text AS locked`).execute(trx);
}

/**
 * True when the mirror's erasure key is there (one row in `<schema>_secret.erasure_key`). A
 * restore that left that schema out loses it, and without it no write of guest data can be
 * checked against the erasure list: the daemon refuses to start (src/store/database.ts).
 */
export async function erasureKeyPresent(db: Executor, secretSchema: string): Promise<boolean> {
  const table = `"${secretSchema.replaceAll('"', '""')}".erasure_key`;
  const found = await sql<{ exists: boolean }>`SELECT to_regclass(${table}) IS NOT NULL AS exists`.execute(db);
  if (!found.rows[0]!.exists) return false;
  const rows = await sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.id(secretSchema, 'erasure_key')}`.execute(db);
  return rows.rows[0]!.n === 1;
}

/** The mirror's erasure key (read without the lock: it never changes). */
export async function erasureKey(db: Executor): Promise<string> {
  const r = await sql<{ key: string }>`SELECT key FROM erasure_key`.execute(db);
  return r.rows[0]!.key;
}

/**
 * forget-guest's short transaction holding the erasure lock alone: waits for the writes of
 * guest data in flight (they read the list before it changes), adds the identities to the
 * list, and commits, so that every write of guest data after it reads them. On the first
 * round (`erasureId` null) it logs the erasure too; the rows it changed are added at the end
 * (updateErasureLog). `lockHeldMs`: from the lock granted to the commit.
 */
export async function listErasedIdentities(
  db: Db,
  key: string,
  e: {
    erasureId: number | null;
    selector: IdentityRef & { kind: 'email' | 'phone' | 'person' | 'booking' };
    identities: readonly IdentityRef[];
  },
): Promise<{ erasureId: number; lockHeldMs: number }> {
  let granted = 0;
  const erasureId = await db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${ERASURE_LOCK})::text AS locked`.execute(trx);
    granted = performance.now();
    const id =
      e.erasureId ??
      (await logErasure(trx, { reason: 'request', selector: { kind: e.selector.kind, hash: identityHash(key, e.selector) }, persons: 0, rowsTouched: {} }));
    if (e.identities.length > 0) {
      await sql`
        INSERT INTO erased_identities (kind, hash, erasure_id)
        SELECT kind, hash, ${id} FROM unnest(${e.identities.map((i) => i.kind)}::text[], ${e.identities.map((i) => identityHash(key, i))}::text[]) AS x(kind, hash)
        ON CONFLICT DO NOTHING`.execute(trx);
    }
    return id;
  });
  return { erasureId, lockHeldMs: performance.now() - granted };
}

/** The persons and rows an erasure changed, once it changed them. */
export async function updateErasureLog(trx: Executor, erasureId: number, e: { persons: number; rowsTouched: Record<string, number> }): Promise<void> {
  await sql`UPDATE erasures SET persons = ${e.persons}, rows_touched = ${JSON.stringify(e.rowsTouched)}::jsonb WHERE erasure_id = ${erasureId}`.execute(trx);
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
 * Erases persons of bookings: `erase` gives each booking's raw with its persons erased, its
 * content hash, the persons it erased, and whether the customer and the loyalty card numbers
 * went (null: nothing to erase), and the typed columns and the version's hash follow. Returns
 * the persons erased, by booking.
 */
export async function eraseBookingPersons(
  trx: Executor,
  keys: readonly BookingKey[],
  erase: (
    key: BookingKey,
    raw: unknown,
  ) => { raw: unknown; contentHash: string; customerErased: boolean; cardsErased: boolean; persons: { firstName: unknown; lastName: unknown }[] } | null,
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
    if (!done) continue;
    erased.push(...done.persons.map((p) => ({ key, ...p })));
    const b = await sql`UPDATE bookings SET raw = ${JSON.stringify(done.raw)}::jsonb,
           customer_first_name = CASE WHEN ${done.customerErased} THEN ${marked('customer_first_name', marker)} ELSE customer_first_name END,
           customer_last_name = CASE WHEN ${done.customerErased} THEN ${marked('customer_last_name', marker)} ELSE customer_last_name END,
           synced_at = now()
     WHERE property_id = ${key.property_id} AND number = ${key.number}`.execute(trx);
    add(touched, 'bookings', Number(b.numAffectedRows ?? 0));
    // The current version's hash becomes that of the payload as it is now stored, so that the
    // same version fetched again (erased on the way in) is the same version; the hashes of
    // versions before, of payloads that named the person, go (an unkeyed hash of a known text).
    const v = await sql`UPDATE booking_versions SET content_hash = CASE WHEN valid_to IS NULL THEN ${done.contentHash} END
       WHERE property_id = ${key.property_id} AND number = ${key.number} AND content_hash IS DISTINCT FROM CASE WHEN valid_to IS NULL THEN ${done.contentHash} END`.execute(
      trx,
    );
    add(touched, 'booking_versions', Number(v.numAffectedRows ?? 0));
    for (const p of done.persons) {
      const r = await sql`UPDATE booking_guests SET first_name = ${marked('first_name', marker)}, last_name = ${marked('last_name', marker)}, synced_at = now()
         WHERE property_id = ${key.property_id} AND number = ${key.number}
           AND first_name IS NOT DISTINCT FROM ${p.firstName ?? null}::text AND last_name IS NOT DISTINCT FROM ${p.lastName ?? null}::text`.execute(trx);
      add(touched, 'booking_guests', Number(r.numAffectedRows ?? 0));
    }
    if (done.cardsErased) {
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
    // Tables of the person's own, by the same key: their values cleared with the person, and
    // each row's raw (by `position`) rewritten as the erasure gives it.
    children: [{ table: 'pms_guest_loyalty_cards', cleared: ['card_number'], rawBy: 'position' }],
  },
} as const satisfies Record<
  string,
  {
    key: readonly [string, string];
    names: readonly string[];
    cleared: readonly string[];
    children?: readonly { table: string; cleared: readonly string[]; rawBy?: string }[];
  }
>;

type ChildTable = { table: string; cleared: readonly string[]; rawBy?: string };
const childrenOf = (table: PmsPersonTable): readonly ChildTable[] => {
  const t = PMS_PERSON_COLUMNS[table];
  return 'children' in t ? t.children : [];
};
type PmsPersonTable = keyof typeof PMS_PERSON_COLUMNS;

/**
 * What of a payload the personal-data policy keeps only with personal data (src/mapping/
 * personal-data.ts gives the keys): a person (the value of a `persons` key) with a name not
 * erased (`names`, on the person or in its `personName`), or a `values` key, anywhere.
 */
export interface PersonalKeys {
  persons: readonly string[];
  names: readonly string[];
  values: readonly string[];
}

/**
 * True for a payload `column` that still holds personal data (PersonalKeys), a name erased as
 * `marker` aside: exactly what an erasure of it changes, so that a row erased is not found again.
 */
export function payloadHoldsPersonalData(column: string, personal: PersonalKeys, marker: string): RawBuilder<boolean> {
  const key = (k: string) => `"${k.replaceAll('"', '')}"`;
  const notErasedAt = (path: string) => `(${path}.type() == "string" && ${path} != $m)`;
  const named = personal.names.flatMap((n) => [notErasedAt(`@.${key(n)}`), notErasedAt(`@."personName".${key(n)}`)]).join(' || ');
  const persons = personal.persons.map((p) => `exists(@.${key(p)} ? (${named}))`);
  const path = `lax $.** ? (${[...persons, ...personal.values.map((v) => `exists(@.${key(v)})`)].join(' || ')})`;
  return sql<boolean>`jsonb_path_exists(${sql.ref(column)}, ${path}::jsonpath, jsonb_build_object('m', ${marker}::text))`;
}

/**
 * True for a row of `table` (as `alias`) that still holds a PMS person's personal data: a name
 * not erased, a value not cleared, or (`personal` given) a child's raw that holds some.
 */
export function holdsPersonalData(table: PmsPersonTable, alias: string, marker: string, personal?: PersonalKeys): RawBuilder<boolean> {
  const { key, names, cleared } = PMS_PERSON_COLUMNS[table];
  const inChildren = childrenOf(table).map(
    (ch) =>
      sql`EXISTS (SELECT 1 FROM ${sql.table(ch.table)} c WHERE ${sql.join(
        key.map((k) => sql`${sql.ref(`c.${k}`)} = ${sql.ref(`${alias}.${k}`)}`),
        sql` AND `,
      )} AND (${sql.join(
        [
          ...ch.cleared.map((c) => sql`${sql.ref(`c.${c}`)} IS NOT NULL`),
          ...(ch.rawBy !== undefined && personal ? [payloadHoldsPersonalData('c.raw', personal, marker)] : []),
        ],
        sql` OR `,
      )}))`,
  );
  return sql<boolean>`(${sql.join(
    [...names.map((c) => notErased(`${alias}.${c}`, marker)), ...cleared.map((c) => sql`${sql.ref(`${alias}.${c}`)} IS NOT NULL`), ...inChildren],
    sql` OR `,
  )})`;
}

/** A column that holds a name not erased yet. */
export const notErased = (column: string, marker: string) => sql`(${sql.ref(column)} IS NOT NULL AND ${sql.ref(column)} <> ${marker})`;

/**
 * Erases a PMS person in rows of `table` (a reservation's customer, a guest profile): the names
 * marked, the rest cleared, `raw` as `erase` gives it, and in the rows of its children the
 * values cleared and `raw` as `eraseChild` gives it.
 */
export async function erasePmsPersonRows(
  trx: Executor,
  table: PmsPersonTable,
  keys: readonly (readonly [string, string])[],
  erase: (raw: unknown) => unknown,
  marker: string,
  touched: RowsTouched,
  eraseChild: (raw: unknown) => unknown = (raw) => raw,
): Promise<void> {
  const { key, names, cleared } = PMS_PERSON_COLUMNS[table];
  const where = (k: readonly [string, string]) => sql`${sql.ref(key[0])} = ${k[0]} AND ${sql.ref(key[1])} = ${k[1]}`;
  for (const k of keys) {
    for (const ch of childrenOf(table)) await eraseChildRows(trx, ch, where(k), eraseChild, touched);
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

/** Erases the rows of a child table of one person (`where`): its values cleared, and each row's raw as `erase` gives it when that differs. */
async function eraseChildRows(
  trx: Executor,
  ch: ChildTable,
  where: RawBuilder<unknown>,
  erase: (raw: unknown) => unknown,
  touched: RowsTouched,
): Promise<void> {
  const clear = sql.join([...ch.cleared.map((c) => sql`${sql.ref(c)} = NULL`), sql`synced_at = now()`]);
  const holding = sql.join(
    ch.cleared.map((c) => sql`${sql.ref(c)} IS NOT NULL`),
    sql` OR `,
  );
  if (ch.rawBy === undefined) {
    const r = await sql`UPDATE ${sql.table(ch.table)} SET ${clear} WHERE ${where} AND (${holding})`.execute(trx);
    add(touched, ch.table, Number(r.numAffectedRows ?? 0));
    return;
  }
  const by = sql.ref(ch.rawBy);
  const rows = await sql<{ by: string; raw: string; holding: boolean }>`
    SELECT ${by}::text AS by, raw::text AS raw, (${holding}) AS holding FROM ${sql.table(ch.table)} WHERE ${where} FOR UPDATE`.execute(trx);
  let changed = 0;
  for (const row of rows.rows) {
    const before = stored(row.raw);
    const after = erase(before);
    const rawChanged = JSON.stringify(after) !== JSON.stringify(before);
    if (!row.holding && !rawChanged) continue;
    await sql`UPDATE ${sql.table(ch.table)} SET ${clear}, raw = ${JSON.stringify(after)}::jsonb WHERE ${where} AND ${by}::text = ${row.by}`.execute(trx);
    changed += 1;
  }
  add(touched, ch.table, changed);
}

/** An invoice's payer not erased yet, as an erasure decides on it: with the reservation's customer company (a company is no person). */
export interface InvoicePayer {
  property_id: string;
  number: string;
  position: number;
  payer_name: string;
  customer_company_name: string | null;
}

/**
 * Erases the payers `pick` chooses among the invoices of the reservations given that name one
 * not erased yet: the name becomes the marker, in the column and in raw.
 */
export async function eraseInvoicePayers(
  trx: Executor,
  keys: readonly BookingKey[],
  pick: (payer: InvoicePayer) => boolean,
  marker: string,
  touched: RowsTouched,
): Promise<void> {
  if (keys.length === 0) return;
  const payers = await sql<InvoicePayer>`
    SELECT i.property_id, i.number, i.position, i.payer_name, r.customer_company_name FROM pms_invoices i
      JOIN unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS k(property_id, number)
        ON i.property_id = k.property_id AND i.number = k.number
      LEFT JOIN pms_reservations r ON r.property_id = i.property_id AND r.number = i.number
     WHERE i.payer_name IS NOT NULL AND i.payer_name <> ${marker}
       FOR UPDATE OF i`.execute(trx);
  const picked = payers.rows.filter(pick);
  if (picked.length === 0) return;
  const r = await sql`
    UPDATE pms_invoices i
       SET payer_name = ${marker},
           raw = CASE WHEN jsonb_typeof(i.raw -> 'payer') = 'object' AND i.raw -> 'payer' ? 'name'
                      THEN jsonb_set(i.raw, '{payer,name}', to_jsonb(${marker}::text)) ELSE i.raw END,
           synced_at = now()
      FROM unnest(${picked.map((p) => p.property_id)}::text[], ${picked.map((p) => p.number)}::text[], ${picked.map((p) => p.position)}::int[])
           AS p(property_id, number, position)
     WHERE i.property_id = p.property_id AND i.number = p.number AND i.position = p.position`.execute(trx);
  add(touched, 'pms_invoices', Number(r.numAffectedRows ?? 0));
}

export interface PersonKey {
  property_id: string;
  pms_person_id: string;
}

/**
 * Erases persons in the summaries of the booking list of `keys`: `erase` gives a summary's raw
 * with them erased, or null when it names none of them.
 */
export async function eraseSummaryPersons(
  trx: Executor,
  keys: readonly BookingKey[],
  erase: (key: BookingKey, raw: unknown) => unknown,
  touched: RowsTouched,
): Promise<void> {
  if (keys.length === 0) return;
  const rows = await sql<BookingKey & { raw: string }>`
    SELECT s.property_id, s.number, s.raw::text AS raw FROM booking_summaries s
      JOIN unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS x(property_id, number)
        ON s.property_id = x.property_id AND s.number = x.number
     WHERE s.raw IS NOT NULL FOR UPDATE OF s`.execute(trx);
  for (const r of rows.rows) {
    const erased = erase({ property_id: r.property_id, number: r.number }, stored(r.raw));
    if (erased === null) continue;
    await sql`UPDATE booking_summaries SET raw = ${JSON.stringify(erased)}::jsonb, synced_at = now() WHERE property_id = ${r.property_id} AND number = ${r.number}`.execute(
      trx,
    );
    add(touched, 'booking_summaries', 1);
  }
}

/**
 * Text reduced to what a match can rely on whatever the normalisation (src/mapping/pseudonyms.ts
 * matchKey, which this must equal on every text): the two non-ASCII capitals whose lower case
 * is ASCII mapped to it, everything outside printable ASCII dropped (spaces, tabs, no-break
 * spaces, other letters), ASCII capitals lowered, without the collation's help (lower() is
 * the locale's). Equal normalised values have equal keys, so a comparison of keys finds a
 * superset of the matches, which the caller narrows with the normalisation itself. (chr(304) is
 * U+0130 İ, chr(8490) the Kelvin sign U+212A.)
 */
export const matchKeySql = (text: RawBuilder<unknown>): RawBuilder<string> =>
  sql<string>`translate(regexp_replace(translate(${text}, chr(304) || chr(8490), 'ik'), '[^!-~]', '', 'g'), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;

/** A phone's digits in SQL, as normalisePhone keeps them (ASCII digits only). */
const digitsSql = (text: RawBuilder<unknown>): RawBuilder<string> => sql<string>`regexp_replace(${text}, '[^0-9]', '', 'g')`;

/** The match keys of texts, as the database computes them (to hold matchKeySql equal to its TypeScript twin). */
export async function matchKeysInDatabase(db: Executor, texts: readonly string[]): Promise<string[]> {
  const r = await sql<{ k: string }>`SELECT ${matchKeySql(sql`t`)} AS k FROM unnest(${texts}::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n`.execute(db);
  return r.rows.map((x) => x.k);
}

/**
 * Erases what else may hold the persons: quarantined bodies of the entities given (booking
 * numbers, person ids) or holding one of `needles` (match keys of e-mails and phones:
 * matchKeySql), replaced by `erasedBody`; change events' payloads holding one, emptied; and
 * integration-storage bookings of the bookings given (by their number) or holding one, which
 * `eraseStorage` gives erased (null: nothing of the persons in it).
 */
export async function eraseTraces(
  trx: Executor,
  t: {
    entities: readonly { property_id: string; key: string }[];
    needles: readonly string[];
    bookings: readonly BookingKey[];
    erasedBody: string;
    eraseStorage: (raw: unknown, booking: BookingKey | null) => unknown;
  },
  touched: RowsTouched,
): Promise<void> {
  // Short values would match unrelated text.
  const needles = [...new Set(t.needles.filter((v) => v.length >= 5))];
  const holds = (text: RawBuilder<unknown>) => sql`EXISTS (SELECT 1 FROM unnest(${needles}::text[]) n WHERE strpos(${matchKeySql(text)}, n) > 0)`;
  const q = await sql`UPDATE quarantine SET raw_body = ${t.erasedBody}
     WHERE raw_body <> ${t.erasedBody}
       AND ((property_id, entity_key) IN (SELECT * FROM unnest(${t.entities.map((e) => e.property_id)}::text[], ${t.entities.map((e) => e.key)}::text[]))
            OR ${holds(sql`raw_body`)})`.execute(trx);
  add(touched, 'quarantine', Number(q.numAffectedRows ?? 0));
  if (needles.length > 0) {
    const w = await sql`UPDATE webhook_events SET payload = NULL WHERE payload IS NOT NULL AND ${holds(sql`payload::text`)}`.execute(trx);
    add(touched, 'webhook_events', Number(w.numAffectedRows ?? 0));
  }
  const storage = await sql<{ property_id: string; booking_id: string; booking_number: string | null; raw: string }>`
    SELECT property_id, booking_id, booking_number, raw::text AS raw FROM integration_storage_bookings
     WHERE (property_id, booking_number) IN (SELECT * FROM unnest(${t.bookings.map((b) => b.property_id)}::text[], ${t.bookings.map((b) => b.number)}::text[]))
        OR ${needles.length > 0 ? holds(sql`raw::text`) : sql`false`}
       FOR UPDATE`.execute(trx);
  for (const s of storage.rows) {
    const erased = t.eraseStorage(stored(s.raw), s.booking_number === null ? null : { property_id: s.property_id, number: s.booking_number });
    if (erased === null) continue;
    await sql`UPDATE integration_storage_bookings SET raw = ${JSON.stringify(erased)}::jsonb, synced_at = now()
       WHERE property_id = ${s.property_id} AND booking_id = ${s.booking_id}`.execute(trx);
    add(touched, 'integration_storage_bookings', 1);
  }
}

/**
 * True when the mirror holds an erased person of the entity `key` of the property (a booking or
 * PMS reservation of that number, a profile of that person id): what a quarantined body that
 * is not JSON is checked against, as what in it is personal cannot be told apart.
 */
export async function holdsErasedPerson(trx: Executor, propertyId: string, key: string, marker: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM bookings WHERE property_id = ${propertyId} AND number = ${key} AND ${marker} IN (customer_first_name, customer_last_name))
        OR EXISTS (SELECT 1 FROM booking_guests WHERE property_id = ${propertyId} AND number = ${key} AND ${marker} IN (first_name, last_name))
        OR EXISTS (SELECT 1 FROM pms_reservations WHERE property_id = ${propertyId} AND number = ${key} AND ${marker} IN (customer_first_name, customer_last_name))
        OR EXISTS (SELECT 1 FROM pms_guests WHERE property_id = ${propertyId} AND pms_person_id = ${key} AND ${marker} IN (first_name, last_name)) AS e`.execute(
    trx,
  );
  return r.rows[0]?.e === true;
}

// ------------------------------------------------------------------ finding a person (forget-guest)
// Read without the erasure lock (src/privacy/forget-guest.ts says why that is safe): scans of
// the PMS tables, which take seconds on a large mirror, hold up no write of guest data.

/**
 * A PMS person as a row of the mirror holds them: a profile (pms_guests) or a reservation's
 * customer (pms_reservations), with every e-mail and phone of the row (the typed column and
 * every one in raw) and its pseudonyms.
 */
export interface MirroredPerson {
  source: 'pms_guests' | 'pms_reservations';
  property_id: string;
  /** The profile's person id, or the reservation's customer_person_id. */
  person_id: string | null;
  /** The reservation's number (source pms_reservations). */
  number: string | null;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  emails: string[];
  phones: string[];
  email_hash: string | null;
  phone_hash: string | null;
}

/**
 * What to look for: match keys of e-mails (matchKeySql), digits of phones, pseudonyms, PMS
 * person ids (in any property: `property_id` null) or of one property, reservations by number.
 */
export interface PersonMatch {
  emailKeys: readonly string[];
  phoneDigits: readonly string[];
  pseudonyms: readonly string[];
  personIds: readonly string[];
  persons: readonly PersonKey[];
  reservations: readonly BookingKey[];
}

/**
 * The persons that may be those `match` describes: a superset (keys, digits), which the caller
 * narrows with the normalisation itself (src/mapping/pseudonyms.ts). Two scans, one per table;
 * each e-mail and phone of each row is looked at only when there are keys or digits to match.
 */
export async function personCandidates(db: Executor, match: PersonMatch): Promise<MirroredPerson[]> {
  const list = (json: string) => sql`CASE WHEN jsonb_typeof(${sql.raw(json)}) = 'array' THEN ${sql.raw(json)} ELSE '[]'::jsonb END`;
  const emailsIn = (column: string, json: string) =>
    sql`array_remove(array_append(ARRAY(SELECT e->>'address' FROM jsonb_array_elements(${list(json)}) e), ${sql.ref(column)}), NULL)`;
  const phonesIn = (column: string, json: string) =>
    sql`array_remove(array_append(ARRAY(SELECT e->>'phoneNumber' FROM jsonb_array_elements(${list(json)}) e), ${sql.ref(column)}), NULL)`;
  const matches = (emails: RawBuilder<unknown>, phones: RawBuilder<unknown>, emailHash: string, phoneHash: string) => sql`(
       ${sql.ref(emailHash)} = ANY(${match.pseudonyms}::text[]) OR ${sql.ref(phoneHash)} = ANY(${match.pseudonyms}::text[])
    OR (cardinality(${match.emailKeys}::text[]) > 0 AND EXISTS (SELECT 1 FROM unnest(${emails}) v WHERE ${matchKeySql(sql`v`)} = ANY(${match.emailKeys}::text[])))
    OR (cardinality(${match.phoneDigits}::text[]) > 0 AND EXISTS (SELECT 1 FROM unnest(${phones}) v WHERE ${digitsSql(sql`v`)} = ANY(${match.phoneDigits}::text[]))))`;
  const keyed = (props: string, ids: string, pairs: readonly { a: string; b: string }[]) =>
    sql`(${sql.ref(props)}, ${sql.ref(ids)}) IN (SELECT * FROM unnest(${pairs.map((p) => p.a)}::text[], ${pairs.map((p) => p.b)}::text[]))`;
  const persons = match.persons.map((p) => ({ a: p.property_id, b: p.pms_person_id }));
  const guests = await sql<MirroredPerson>`
    SELECT 'pms_guests' AS source, g.property_id, g.pms_person_id AS person_id, NULL AS number, g.first_name, g.middle_name, g.last_name,
           ${emailsIn('g.email', "g.raw->'emails'")} AS emails, ${phonesIn('g.phone', "g.raw->'phones'")} AS phones, g.email_hash, g.phone_hash
      FROM pms_guests g
     WHERE g.pms_person_id = ANY(${match.personIds}::text[]) OR ${keyed('g.property_id', 'g.pms_person_id', persons)}
        OR ${matches(emailsIn('g.email', "g.raw->'emails'"), phonesIn('g.phone', "g.raw->'phones'"), 'g.email_hash', 'g.phone_hash')}`.execute(db);
  const reservations = await sql<MirroredPerson>`
    SELECT 'pms_reservations' AS source, r.property_id, r.customer_person_id AS person_id, r.number, r.customer_first_name AS first_name,
           r.customer_middle_name AS middle_name, r.customer_last_name AS last_name, ${emailsIn('r.customer_email', "r.raw->'customer'->'emails'")} AS emails,
           ${phonesIn('r.customer_phone', "r.raw->'customer'->'phones'")} AS phones, r.customer_email_hash AS email_hash, r.customer_phone_hash AS phone_hash
      FROM pms_reservations r
     WHERE r.customer_person_id = ANY(${match.personIds}::text[]) OR ${keyed('r.property_id', 'r.customer_person_id', persons)}
        OR ${keyed(
          'r.property_id',
          'r.number',
          match.reservations.map((k) => ({ a: k.property_id, b: k.number })),
        )}
        OR ${matches(
          emailsIn('r.customer_email', "r.raw->'customer'->'emails'"),
          phonesIn('r.customer_phone', "r.raw->'customer'->'phones'"),
          'r.customer_email_hash',
          'r.customer_phone_hash',
        )}`.execute(db);
  return [...guests.rows, ...reservations.rows];
}

/** The PMS persons who are guests of a room of the reservations given. */
export async function guestsOfReservations(db: Executor, keys: readonly BookingKey[]): Promise<PersonKey[]> {
  if (keys.length === 0) return [];
  const r = await sql<PersonKey>`
    SELECT DISTINCT s.property_id, unnest(s.guest_person_ids) AS pms_person_id FROM pms_room_stays s
      JOIN unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS x(property_id, number)
        ON s.property_id = x.property_id AND s.number = x.number`.execute(db);
  return r.rows;
}

/** The reservations of which the persons given are a guest of a room. */
export async function reservationsOfGuests(db: Executor, persons: readonly PersonKey[]): Promise<BookingKey[]> {
  if (persons.length === 0) return [];
  const r = await sql<BookingKey>`
    SELECT DISTINCT s.property_id, s.number FROM pms_room_stays s
      JOIN unnest(${persons.map((p) => p.property_id)}::text[], ${persons.map((p) => p.pms_person_id)}::text[]) AS x(property_id, id)
        ON s.property_id = x.property_id AND x.id = ANY(s.guest_person_ids)`.execute(db);
  return r.rows;
}

/** The raw of each booking given that the mirror holds (parsed, digits kept). */
export async function bookingRaws(db: Executor, keys: readonly BookingKey[]): Promise<{ key: BookingKey; raw: unknown }[]> {
  if (keys.length === 0) return [];
  const r = await sql<BookingKey & { raw: string }>`
    SELECT b.property_id, b.number, b.raw::text AS raw FROM bookings b
      JOIN unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS x(property_id, number)
        ON b.property_id = x.property_id AND b.number = x.number`.execute(db);
  return r.rows.map((x) => ({ key: { property_id: x.property_id, number: x.number }, raw: stored(x.raw) }));
}
