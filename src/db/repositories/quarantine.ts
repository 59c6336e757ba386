import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../schema.js';

type Executor = Kysely<Database> | Transaction<Database>;

export interface QuarantineEntry {
  stream: string;
  propertyId: string | null;
  entityKey: string | null;
  reason: string;
  rawBody: string;
}

/** Keeps a payload that failed validation, with why, so that nothing received is lost. */
export async function quarantinePayload(db: Executor, e: QuarantineEntry): Promise<void> {
  await db
    .insertInto('quarantine')
    .values({ stream: e.stream, property_id: e.propertyId, entity_key: e.entityKey, reason: e.reason, raw_body: e.rawBody })
    .execute();
}

export async function countQuarantined(db: Executor): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('quarantine')
    .select(['property_id', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('property_id')
    .execute();
  return new Map(rows.map((r) => [r.property_id ?? '', Number(r.n)]));
}
