/**
 * quarantine: provider payloads that failed validation, kept with the reason and the body as
 * received, so that nothing received is lost. One row per stream, property, entity and reason:
 * the same failure again (a refetch on backoff, the next refresh) counts in `occurrences` and
 * keeps the latest body, so the table does not grow with every retry.
 */
import type { QuarantineStream } from '../states.js';
import { sql } from 'kysely';
import type { Executor } from '../types.js';

export interface QuarantineEntry {
  stream: QuarantineStream;
  propertyId: string | null;
  entityKey: string | null;
  reason: string;
  rawBody: string;
}

/**
 * Keeps a payload with the reason. Text columns cannot hold a NUL character, and a payload
 * is in quarantine precisely because it may hold anything: NULs are written as `\u0000`.
 */
export async function quarantinePayload(db: Executor, e: QuarantineEntry): Promise<void> {
  const text = (s: string) => s.replaceAll('\u0000', '\\u0000');
  const reason = text(e.reason);
  await sql`
    INSERT INTO quarantine AS q (stream, property_id, entity_key, reason, reason_hash, raw_body)
    VALUES (${e.stream}, ${e.propertyId === null ? null : text(e.propertyId)}, ${e.entityKey === null ? null : text(e.entityKey)}, ${reason}, md5(${reason}), ${text(e.rawBody)})
    ON CONFLICT (stream, coalesce(property_id, ''), coalesce(entity_key, ''), reason_hash) DO UPDATE SET
      occurrences = q.occurrences + 1,
      last_seen_at = now(),
      raw_body = excluded.raw_body`.execute(db);
}

/** Quarantined entities per property ('' for payloads without one). */
export async function countQuarantined(db: Executor): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('quarantine')
    .select(['property_id', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('property_id')
    .execute();
  return new Map(rows.map((r) => [r.property_id ?? '', Number(r.n)]));
}

/** Why a payload is in quarantine: it failed validation, or the database refused to store it. */
export type QuarantineCause = 'validation' | 'write';

/** The reason prefix of payloads the database refused (constraint, encoding). */
export const WRITE_FAILED_PREFIX = 'database write failed: ';

/** Quarantined payloads by stream and cause, with their occurrences. */
export async function quarantineByStream(db: Executor): Promise<{ stream: string; cause: QuarantineCause; payloads: number; occurrences: number }[]> {
  const r = await sql<{ stream: string; cause: QuarantineCause; payloads: string; occurrences: string }>`
    SELECT stream,
           CASE WHEN starts_with(reason, ${WRITE_FAILED_PREFIX}) THEN 'write' ELSE 'validation' END AS cause,
           count(*) AS payloads, sum(occurrences) AS occurrences
      FROM quarantine GROUP BY 1, 2 ORDER BY 1, 2`.execute(db);
  return r.rows.map((x) => ({ stream: x.stream, cause: x.cause, payloads: Number(x.payloads), occurrences: Number(x.occurrences) }));
}

// ------------------------------------------------------------------ the retry (src/replay/quarantine-retry.ts)

/** A quarantine row as the retry reads it. */
export interface QuarantineRow {
  id: string;
  stream: string;
  property_id: string | null;
  entity_key: string | null;
  reason: string;
  raw_body: string;
  received_at: Date;
  last_seen_at: Date;
}

/** The highest quarantine id now (rows quarantined after it are not retried by a run given it). */
export async function maxQuarantineId(db: Executor): Promise<string | null> {
  const r = await sql<{ m: string | null }>`SELECT max(id)::text AS m FROM quarantine`.execute(db);
  return r.rows[0]?.m ?? null;
}

/** Up to `limit` quarantine rows with an id above `afterId` and at most `upToId`, in id order. */
export async function quarantineRowsAfter(db: Executor, afterId: string, upToId: string, limit: number): Promise<QuarantineRow[]> {
  const r = await sql<QuarantineRow>`
    SELECT id::text AS id, stream, property_id, entity_key, reason, raw_body, received_at, last_seen_at
    FROM quarantine WHERE id > ${afterId}::bigint AND id <= ${upToId}::bigint ORDER BY id LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** Deletes a quarantine row (its payload is mirrored now, or superseded). */
export async function deleteQuarantined(db: Executor, id: string): Promise<void> {
  await sql`DELETE FROM quarantine WHERE id = ${id}`.execute(db);
}

/**
 * A row that still fails: counted once more, seen now, with the reason it fails for today.
 * Its body is rewritten as `keep` gives it from the body stored now (not the one the retry
 * read: an erasure may have replaced it since), so that it goes through the policy and the
 * erasure list again.
 */
export async function quarantineStillFailing(db: Executor, q: QuarantineRow, reason: string, keep: (body: string) => Promise<string>): Promise<void> {
  const [row] = (await sql<{ raw_body: string }>`SELECT raw_body FROM quarantine WHERE id = ${q.id} FOR UPDATE`.execute(db)).rows;
  if (!row) return;
  const body = await keep(row.raw_body);
  if (reason === q.reason) {
    await sql`UPDATE quarantine SET occurrences = occurrences + 1, last_seen_at = now(), raw_body = ${body} WHERE id = ${q.id}`.execute(db);
    return;
  }
  // A new reason is a new row of the entity (one row per entity and reason); it carries the
  // count and the first sighting of the row it replaces.
  const old = await sql<{ occurrences: number; received_at: Date }>`DELETE FROM quarantine WHERE id = ${q.id} RETURNING occurrences, received_at`.execute(db);
  const prev = old.rows[0];
  if (!prev) return;
  await sql`
    INSERT INTO quarantine AS q (stream, property_id, entity_key, reason, reason_hash, raw_body, received_at, occurrences, last_seen_at)
    VALUES (${q.stream}, ${q.property_id}, ${q.entity_key}, ${reason}, md5(${reason}), ${body}, ${prev.received_at}, ${prev.occurrences + 1}, now())
    ON CONFLICT (stream, coalesce(property_id, ''), coalesce(entity_key, ''), reason_hash) DO UPDATE SET
      occurrences = q.occurrences + excluded.occurrences,
      received_at = LEAST(q.received_at, excluded.received_at),
      last_seen_at = now(),
      raw_body = excluded.raw_body`.execute(db);
}

/** A quarantine row as it is now (the retry reads its body again in the transaction that writes what it gives). */
export async function quarantineRow(db: Executor, id: string): Promise<QuarantineRow | undefined> {
  const r = await sql<QuarantineRow>`
    SELECT id::text AS id, stream, property_id, entity_key, reason, raw_body, received_at, last_seen_at FROM quarantine WHERE id = ${id}`.execute(db);
  return r.rows[0];
}
