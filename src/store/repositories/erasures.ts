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
import { sql } from 'kysely';
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

/** Logs an erasure and adds its identities to the list; returns its number. */
export async function recordErasure(
  trx: Executor,
  key: string,
  e: {
    reason: 'request' | 'retention';
    selector?: IdentityRef & { kind: 'email' | 'phone' | 'person' | 'booking' };
    persons: number;
    rowsTouched: Record<string, number>;
    identities: readonly IdentityRef[];
  },
): Promise<number> {
  const selectorHash = e.selector ? identityHash(key, e.selector) : null;
  const r = await sql<{ id: string }>`
    INSERT INTO erasures (reason, selector_kind, selector_hash, persons, rows_touched)
    VALUES (${e.reason}, ${e.selector?.kind ?? null}, ${selectorHash}, ${e.persons}, ${JSON.stringify(e.rowsTouched)}::jsonb)
    RETURNING erasure_id::text AS id`.execute(trx);
  const id = Number(r.rows[0]!.id);
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
