/**
 * The writes of guest payloads that have no rows of their own to erase person by person: the
 * quarantine (every stream's: a body of a stream that holds no guests passes as it is), and
 * the change events as the receiver stores them. Each goes through the personal-data policy and
 * the erasure list, under the erasure lock (src/store/repositories/erasures.ts), as the writes
 * of bookings, reservations and profiles do: a body that fails validation or that the database
 * refuses is no way around an erasure.
 */
import type { Db, Executor } from '../store/types.js';
import { holdsErasedPerson, lockForGuestWrite, rowsAfterErasures } from '../store/repositories/erasures.js';
import { quarantinePayload, quarantineStillFailing, type QuarantineEntry, type QuarantineRow } from '../store/repositories/quarantine.js';
import { storeWebhookBatch, type NewEvent, type UnstorableEvent } from '../store/repositories/webhook-events.js';
import { streamNames } from '../store/states.js';
import { ERASED_BODY, ERASED_NAME, erasablePayload, erasableQuarantineBody } from '../mapping/erasure.js';

/**
 * A body as the quarantine may keep it: the policy, and the persons the erasure list knows
 * erased. A body that is not JSON cannot be erased person by person: it is replaced whole when
 * it names an erased e-mail, phone or person, or when the mirror holds an erased person of its
 * entity (under the lock, so that an erasure cannot slip between the check and the write).
 */
async function keptBody(
  trx: Executor,
  stream: string,
  propertyId: string | null,
  entityKey: string | null,
  rawBody: string,
  personalData: boolean,
): Promise<string> {
  const body = erasableQuarantineBody(stream, propertyId, entityKey, rawBody, personalData);
  if (body.opaque) {
    await lockForGuestWrite(trx);
    if (propertyId !== null && entityKey !== null && (await holdsErasedPerson(trx, propertyId, entityKey, ERASED_NAME))) return ERASED_BODY;
  }
  const [kept] = await rowsAfterErasures(trx, [body]);
  return kept!;
}

/** Quarantines a payload (the one way into the quarantine): its body as keptBody gives it. */
export async function quarantineGuestPayload(trx: Executor, e: QuarantineEntry, personalData: boolean): Promise<void> {
  await quarantinePayload(trx, { ...e, rawBody: await keptBody(trx, e.stream, e.propertyId, e.entityKey, e.rawBody, personalData) });
}

/**
 * A quarantined payload that still fails (the quarantine retry): counted, with its reason, and
 * its body as stored now passed through keptBody again (an erasure may have come since).
 */
export async function quarantineAgain(trx: Executor, q: QuarantineRow, reason: string, personalData: boolean): Promise<void> {
  await quarantineStillFailing(trx, q, reason, (body) => keptBody(trx, q.stream, q.property_id, q.entity_key, body, personalData));
}

/**
 * The receiver's batch of change events, stored in one transaction: each event's payload, and
 * each body that is no event (quarantined), through the policy and the erasure list.
 */
export function storeReceivedEvents(
  db: Db,
  events: (NewEvent & { index: number })[],
  invalid: UnstorableEvent[],
  personalData: boolean,
): Promise<{ stored: number; refused: UnstorableEvent[] }> {
  return storeWebhookBatch(db, async (trx) => {
    const payloads = await rowsAfterErasures(
      trx,
      events.map((e) =>
        erasablePayload(e.payload, {
          personalData,
          booking: e.propertyId !== null && e.entityKey !== null ? { propertyId: e.propertyId, number: e.entityKey } : undefined,
        }),
      ),
    );
    const bodies: string[] = [];
    for (const r of invalid) bodies.push(await keptBody(trx, streamNames.webhookReceiver, null, null, r.body, personalData));
    return { events: events.map((e, i) => ({ ...e, payload: payloads[i] })), invalid: invalid.map((r, i) => ({ ...r, body: bodies[i]! })) };
  });
}
