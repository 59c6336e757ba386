/**
 * `staysync quarantine retry`: the quarantine re-driven with the current schemas, without a
 * provider request. Each quarantined body is parsed again; one that now passes is mirrored
 * through the sync's own write path (version guards kept: an older body never overwrites a
 * newer mirrored version), its quarantine row is deleted, and a detail-fetch queue row parked
 * as `quarantined` for that entity is settled (removed, as after a successful fetch) when the
 * stored version satisfies it. A body that still fails stays, with its occurrences, last seen
 * time and (when it changed) reason updated. A body that cannot be replayed without the
 * provider (not JSON, a page of a list, a stream that keeps no replayable body) is left as it
 * is and counted as such.
 *
 * "Superseded": the body now passes, but the mirror already holds a newer version of the entity
 * (the version guard refused it, or a later refresh has run since it was quarantined); the
 * quarantine row is then deleted without writing anything.
 */
import { streamNames } from '../store/states.js';
import { describeDatabaseError, isDatabaseUnavailable, isTransactionConflict, FenceLostError } from '../store/errors.js';
import type { Trx } from '../store/types.js';
import { settleQuarantinedBookingFetch } from '../store/repositories/booking-queue.js';
import { upsertSummariesAndEnqueue } from '../store/repositories/booking-summaries.js';
import { saveBookingVersion } from '../store/repositories/bookings.js';
import { upsertChanged } from '../store/repositories/content.js';
import {
  loyaltyCardsReadAt,
  pmsGuestFetchedAt,
  replaceInvoicesReadAt,
  replaceLoyaltyCards,
  reservationOfInvoices,
  savePmsReservation,
  settleQuarantinedPmsFetch,
  storedOccupancyDay,
  upsertPmsGuest,
} from '../store/repositories/pms.js';
import {
  deleteQuarantined,
  maxQuarantineId,
  quarantineRow,
  quarantineRowsAfter,
  WRITE_FAILED_PREFIX,
  type QuarantineRow,
} from '../store/repositories/quarantine.js';
import {
  contentRefreshedSince,
  newerSummaryStored,
  pmsCompanyUpdatedSince,
  pmsGuestFetchedSince,
  pmsRoomUpdatedSince,
  referenceListFetchedSince,
  updateDerived,
} from '../store/repositories/replay.js';
import {
  erasableBooking,
  erasableGuest,
  erasableInvoices,
  erasableLoyaltyCards,
  erasableReservation,
  erasableStorageBooking,
  erasableSummary,
} from '../mapping/erasure.js';
import { lockForGuestWrite, rowsAfterErasures } from '../store/repositories/erasures.js';
import { quarantineAgain, quarantineGuestPayload } from '../privacy/guest-writes.js';
import { bookingHistoryOf } from '../mapping/history.js';
import { REFERENCE_LISTS } from '../mapping/content.js';
import { companyToRow, occupancyDayToRow, roomToRow } from '../mapping/pms.js';
import { inventoryBlockToRows } from '../mapping/integration-storage.js';
import { saveInventoryBlock, saveStorageBooking } from '../store/repositories/integration-storage.js';
import { GUEST_STREAMS, keptPayload, type PersonalDataPolicy } from '../mapping/personal-data.js';
import {
  cancellationRulesResponseSchema,
  extraStayRulesResponseSchema,
  parseCancellationRule,
  parseContentProperty,
  parseExtraStayRule,
} from '../provider/schemas/content.js';
import {
  parseCompany,
  parseDailyOccupancy,
  parseGuestResponse,
  parseInventoryBlock,
  parseInvoicesPage,
  parseLoyaltyCardsPage,
  parseReservationResponse,
  parseRoom,
  parseStorageBooking,
} from '../provider/schemas/pms.js';
import { parseBooking, parseBookingSummary, parseGetBookingResponse } from '../provider/schemas/bookings.js';
import {
  parseRulesBody,
  saveCancellationRules,
  saveExtraStayRules,
  writeCancellationRules,
  writeExtraStayRules,
  writeProperty,
  writeReferenceList,
} from '../sync/streams/content.js';
import type { ReplayEnv } from './rebuild.js';
import { parseJsonLossless } from '../provider/json.js';
import { TOO_LARGE_REASON } from '../provider/errors.js';
import { isObject } from './raw.js';

export interface RetryCounts {
  /** Quarantine rows looked at. */
  retried: number;
  /** Now valid and written to the mirror. */
  mirrored: number;
  /** Now valid, but the mirror already holds a newer version: the row is gone, nothing written. */
  superseded: number;
  /** Still rejected (by the schemas, or by the database): kept, occurrences counted. */
  stillFailing: number;
  /** Only the provider can give this again (not JSON, a list page, no replayable body): left as it is. */
  notReplayable: number;
}

export interface RetryResult {
  byStream: Record<string, RetryCounts>;
  ms: number;
  stopped: boolean;
}

type Outcome = { kind: 'mirrored' } | { kind: 'superseded' } | { kind: 'failing'; reason: string } | { kind: 'notReplayable'; why: string };

const mirrored: Outcome = { kind: 'mirrored' };
const superseded: Outcome = { kind: 'superseded' };
const failing = (reason: string): Outcome => ({ kind: 'failing', reason });
const notReplayable = (why: string): Outcome => ({ kind: 'notReplayable', why });
const written = (w: boolean): Outcome => (w ? mirrored : superseded);

/** Rows read at a time (each is then replayed in a transaction of its own, so one failure stays alone). */
const READ_BATCH = 500;

/**
 * The version-guarded PMS reservation write (shared by the PMS queue's and the change events'
 * quarantine). fetched_at is a lower bound of when the provider read the data: the body's own
 * modification time, when it has one, is one; a PMS recheck then fetches it again rather than
 * skip it.
 */
async function replayReservation(trx: Trx, q: QuarantineRow, body: unknown, policy: PersonalDataPolicy): Promise<Outcome> {
  if (q.property_id === null) return notReplayable('no property id');
  const response = isObject(body) && 'reservation' in body ? body : { reservation: body };
  // The number the reservation was fetched by (its key): the body's own may be null.
  const parsed = parseReservationResponse(response, q.entity_key ?? undefined);
  if (!parsed.ok) return failing(parsed.reason);
  const r = parsed.value;
  const fetchedAt = r.modifyDateTime ? new Date(r.modifyDateTime) : q.received_at;
  const [erased] = await rowsAfterErasures(trx, [erasableReservation(q.property_id, r, (response as { reservation: unknown }).reservation, policy, fetchedAt)]);
  const w = await savePmsReservation(trx, erased!.rows);
  await settleQuarantinedPmsFetch(trx, q.property_id, r.number);
  return written(w);
}

/** `policy`: what of a PMS person is stored, as the sync stores it (pms.personalData, privacy.pseudonymKey). */
type Handler = (trx: Trx, q: QuarantineRow, body: unknown, policy: PersonalDataPolicy) => Promise<Outcome>;

/** How each quarantine stream is replayed (the streams and body shapes the sync and the rebuild quarantine under). */
const handlers: Record<string, Handler> = {
  /** Booking details: the details response `{ booking }`, as received. */
  [streamNames.bookingDetails]: async (trx, q, body, policy) => {
    if (q.property_id === null || q.entity_key === null) return notReplayable('no property id or booking number');
    const response = isObject(body) && 'booking' in body ? body : { booking: body };
    const parsed = isObject(body) && 'booking' in body ? parseGetBookingResponse(body) : parseBooking(body);
    if (!parsed.ok) return failing(parsed.reason);
    const b = parsed.value;
    if (b.number !== q.entity_key) return notReplayable(`the body is booking ${b.number}, not ${q.entity_key}`);
    // fetched_at is a lower bound of when the provider read these details, and their
    // modification is one: a summary of the same second then asks for them again rather than
    // taking them as covering the whole second.
    const [rows] = await rowsAfterErasures(trx, [erasableBooking(q.property_id, b, response, new Date(b.modifiedDateTime), policy.personalData)]);
    const w = (await saveBookingVersion(trx, rows!, bookingHistoryOf(rows!))).written;
    await settleQuarantinedBookingFetch(trx, q.property_id, b.number);
    return written(w);
  },

  /** One summary of a booking list page. */
  [streamNames.bookingSummaries]: async (trx, q, body, policy) => {
    if (q.property_id === null) return notReplayable('no property id');
    const parsed = parseBookingSummary(body);
    if (!parsed.ok) return failing(parsed.reason);
    const [row] = await rowsAfterErasures(trx, [erasableSummary(q.property_id, parsed.value, body, Date.now(), policy.personalData)]);
    // The list is ordered by modification: a summary listed after this one was quarantined
    // (or of a later modification) is newer.
    if (await newerSummaryStored(trx, q.id, q.property_id, row!.number, row!.modifiedAt)) return superseded;
    // Enqueues the booking's details when the stored ones are older, as the page would have.
    await upsertSummariesAndEnqueue(trx, [row!], q.last_seen_at);
    return mirrored;
  },

  /** Content: a property, a rules response or one rule, or a reference list response. */
  [streamNames.content]: async (trx, q, body, policy) => {
    const key = q.entity_key;
    if (key === 'properties page') return notReplayable('a page of the property list: the next content refresh reads it again');
    const list = REFERENCE_LISTS.find((d) => d.name === key && q.property_id === null);
    if (list) {
      const mapped = list.read(body);
      if (!mapped.ok) return failing(mapped.reason);
      if ((await referenceListFetchedSince(trx, q.id, list.name)) || (await contentRefreshedSince(trx, q.id))) return superseded;
      await writeReferenceList(trx, list.name, body, mapped, q.last_seen_at);
      return mirrored;
    }
    // Content keeps no versions: a refresh that ran after the row was quarantined has seen
    // what the provider serves now, and replaying the older body would undo it.
    const rules = key === 'cancellationRules' || key === 'extraStayRules' ? key : null;
    const rule = key?.startsWith('cancellationRules:') ? 'cancellation' : key?.startsWith('extraStayRules:') ? 'extraStay' : null;
    if (rules !== null) {
      if (q.property_id === null) return notReplayable('no property id');
      const pid = q.property_id;
      // As the refresh does: a rule that fails alone is quarantined, the others are written.
      const quarantineBad = async (bad: readonly { entityKey: string; reason: string; raw: unknown }[]) => {
        for (const b of bad)
          await quarantineGuestPayload(
            trx,
            { stream: streamNames.content, propertyId: pid, entityKey: b.entityKey, reason: b.reason, rawBody: JSON.stringify(b.raw) },
            policy.personalData,
          );
      };
      if (rules === 'cancellationRules') {
        const parsed = parseRulesBody(body, cancellationRulesResponseSchema, rules, parseCancellationRule);
        if (!parsed.ok) return failing(parsed.reason);
        if (await contentRefreshedSince(trx, q.id)) return superseded;
        await quarantineBad(parsed.bad);
        await writeCancellationRules(trx, pid, parsed);
      } else {
        const parsed = parseRulesBody(body, extraStayRulesResponseSchema, rules, parseExtraStayRule);
        if (!parsed.ok) return failing(parsed.reason);
        if (await contentRefreshedSince(trx, q.id)) return superseded;
        await quarantineBad(parsed.bad);
        await writeExtraStayRules(trx, pid, parsed);
      }
      return mirrored;
    }
    if (rule !== null) {
      if (q.property_id === null) return notReplayable('no property id');
      if (rule === 'cancellation') {
        const parsed = parseCancellationRule(body);
        if (!parsed.ok) return failing(parsed.reason);
        if (await contentRefreshedSince(trx, q.id)) return superseded;
        await saveCancellationRules(trx, q.property_id, [parsed.value]);
      } else {
        const parsed = parseExtraStayRule(body);
        if (!parsed.ok) return failing(parsed.reason);
        if (await contentRefreshedSince(trx, q.id)) return superseded;
        await saveExtraStayRules(trx, q.property_id, [parsed.value]);
      }
      return mirrored;
    }
    const parsed = parseContentProperty(body);
    if (!parsed.ok) return failing(parsed.reason);
    if (await contentRefreshedSince(trx, q.id)) return superseded;
    await writeProperty(trx, parsed.value, body);
    return mirrored;
  },

  /** PMS reservations of the fetch queue: the response `{ reservation }`, or the reservation as it was to be stored. */
  [streamNames.pmsReservations]: (trx, q, body, policy) => replayReservation(trx, q, body, policy),

  /** PMS rooms: one room of a rooms page. */
  pms_rooms: async (trx, q, body) => {
    if (q.property_id === null) return notReplayable('no property id');
    const parsed = parseRoom(body);
    if (!parsed.ok) return failing(parsed.reason);
    if (await pmsRoomUpdatedSince(trx, q.id, q.property_id, parsed.value.id)) return superseded;
    await upsertChanged(trx, 'pms_rooms', [roomToRow(q.property_id, parsed.value, body)]);
    return mirrored;
  },

  /** PMS companies: one company of a companies page. */
  [streamNames.pmsCompanies]: async (trx, q, body) => {
    if (q.property_id === null) return notReplayable('no property id');
    const parsed = parseCompany(body);
    if (!parsed.ok) return failing(parsed.reason);
    if (await pmsCompanyUpdatedSince(trx, q.id, q.property_id, parsed.value.id)) return superseded;
    await upsertChanged(trx, 'pms_companies', [companyToRow(q.property_id, parsed.value, body)]);
    return mirrored;
  },

  /**
   * The invoices of a PMS reservation: a page of them as received. Written when the mirrored
   * reservation's invoices were not read after it, with its customer's erasure applied to the payers.
   */
  [streamNames.pmsInvoices]: async (trx, q, body, policy) => {
    if (q.property_id === null || q.entity_key === null) return notReplayable('no property id or reservation number');
    const page = parseInvoicesPage(body);
    if (!page.ok) return failing(page.reason);
    if (page.value.items === null) return failing('the page holds no invoices list');
    const reservation = await reservationOfInvoices(trx, q.property_id, q.entity_key);
    if (!reservation) return notReplayable(`reservation ${q.entity_key} is not mirrored`);
    if (reservation.invoicesReadAt !== null && reservation.invoicesReadAt > q.last_seen_at) return superseded;
    const raw = ((isObject(body) ? body.invoices : null) as unknown[] | null) ?? [];
    const read = { parsed: page.value.items, raw: raw.map((i) => keptPayload(i, policy.personalData)) };
    const [propertyId, number] = [q.property_id, q.entity_key];
    const [rows] = await rowsAfterErasures(trx, [erasableInvoices(propertyId, number, reservation, read)]);
    await replaceInvoicesReadAt(trx, propertyId, number, rows!, q.last_seen_at);
    return mirrored;
  },

  /** A person's loyalty cards: a page of them as received. Written when the person is mirrored and their cards were not read after it. */
  [streamNames.pmsLoyaltyCards]: async (trx, q, body, policy) => {
    if (q.property_id === null || q.entity_key === null) return notReplayable('no property id or person id');
    const page = parseLoyaltyCardsPage(body);
    if (!page.ok) return failing(page.reason);
    if (page.value.items === null) return failing('the page holds no loyaltyCards list');
    const person = await loyaltyCardsReadAt(trx, q.property_id, q.entity_key);
    if (!person) return notReplayable(`PMS person ${q.entity_key} is not mirrored`);
    if (person.readAt !== null && person.readAt > q.last_seen_at) return superseded;
    const raw = ((isObject(body) ? body.loyaltyCards : null) as unknown[] | null) ?? [];
    const read = { parsed: page.value.items, raw: raw.map((c) => keptPayload(c, policy.personalData)) };
    const [cards] = await rowsAfterErasures(trx, [erasableLoyaltyCards(q.property_id, q.entity_key, read, policy.personalData)]);
    await replaceLoyaltyCards(trx, q.property_id, q.entity_key, cards!.cards, q.last_seen_at);
    return mirrored;
  },

  /** Change events: the response of the refresh an event triggered (storage booking, inventory block or PMS reservation). */
  [streamNames.webhookEvents]: async (trx, q, body, policy) => {
    if (q.property_id === null) return notReplayable('no property id');
    if (isObject(body) && 'booking' in body) {
      const parsed = parseStorageBooking(body);
      if (!parsed.ok) return failing(parsed.reason);
      const b = parsed.value;
      const [rows] = await rowsAfterErasures(trx, [
        erasableStorageBooking(q.property_id, b, body.booking, b.updateDateTime ? new Date(b.updateDateTime) : q.received_at, policy.personalData),
      ]);
      return written(await saveStorageBooking(trx, rows!));
    }
    if (isObject(body) && 'inventoryBlock' in body) {
      const parsed = parseInventoryBlock(body);
      if (!parsed.ok) return failing(parsed.reason);
      const b = parsed.value;
      const rows = inventoryBlockToRows(q.property_id, b, body.inventoryBlock, b.updateDateTime ? new Date(b.updateDateTime) : q.received_at);
      return written(await saveInventoryBlock(trx, rows));
    }
    if (isObject(body) && 'reservation' in body) return replayReservation(trx, q, body, policy);
    return notReplayable('the body is not a storage booking, an inventory block or a PMS reservation');
  },

  /** Guest profiles the rebuild found invalid (the sync skips an invalid profile): `{ guest }`. */
  pms_guests: async (trx, q, body, policy) => {
    if (q.property_id === null) return notReplayable('no property id');
    const parsed = parseGuestResponse(isObject(body) && 'guest' in body ? body : { guest: body });
    if (!parsed.ok) return failing(parsed.reason);
    const personId = parsed.value.pmsPersonId ?? '';
    // The version guard of profiles: one fetched after this body was last seen is newer.
    if (await pmsGuestFetchedSince(trx, q.id, q.property_id, personId)) return superseded;
    const storedFetchedAt = await pmsGuestFetchedAt(trx, q.property_id, personId);
    const [row] = await rowsAfterErasures(trx, [
      erasableGuest(q.property_id, parsed.value, isObject(body) && 'guest' in body ? body.guest : body, policy, storedFetchedAt ?? q.received_at),
    ]);
    if (!row) return notReplayable('the profile has no person id');
    return written(await upsertPmsGuest(trx, row));
  },

  /** Rooms by type are refreshes of what the PMS holds now: a stale answer is no use, the next refresh reads it again. */
  accommodation_inventory: async () => notReplayable('the next accommodation inventory refresh of the property reads it again'),
  room_type_inventory: async () => notReplayable('the next inventory refresh of the property reads that room type and night again'),
  stay_units: async () => notReplayable('the next stay units refresh of the property asks for that month again'),

  /** Occupancy days the rebuild found invalid: one day of an answer, whose currency and room count are in the stored row. */
  daily_occupancy: async (trx, q, body) => {
    if (q.property_id === null || q.entity_key === null) return notReplayable('no property id or date');
    const s = await storedOccupancyDay(trx, q.property_id, q.entity_key);
    if (!s) return notReplayable('no stored occupancy row gives the answer this day belongs to');
    const answer = { currencyCode: s.currency_code, propertyRoomCount: s.property_room_count };
    const parsed = parseDailyOccupancy({ ...answer, dailyOccupancies: [body] });
    if (!parsed.ok) return failing(parsed.reason);
    const day = parsed.value.dailyOccupancies[0];
    if (!day || day.date !== q.entity_key) return notReplayable('the body is another day');
    await updateDerived(
      trx,
      'daily_occupancy',
      ['property_id', 'stay_date'],
      [occupancyDayToRow(q.property_id, answer, day, body, s.refreshed_at)],
      ['refreshed_at'],
    );
    return mirrored;
  },
};

/** Re-drives the quarantine (see the file comment). `upToId` limits it to rows quarantined until then. */
export async function retryQuarantine(env: ReplayEnv, opts: { upToId?: string | null } = {}): Promise<RetryResult> {
  const { handle } = env;
  const log = env.logger.child({ component: 'quarantine' });
  const policy: PersonalDataPolicy = { personalData: env.config.pms.personalData, pseudonymKey: env.config.privacy.pseudonymKey };
  const started = Date.now();
  const result: RetryResult = { byStream: {}, ms: 0, stopped: false };
  const upTo = opts.upToId === undefined ? await maxQuarantineId(handle.db) : opts.upToId;
  if (upTo === null) return { ...result, ms: Date.now() - started };
  let after = '0';
  for (;;) {
    const rows = await quarantineRowsAfter(handle.db, after, upTo, READ_BATCH);
    for (const q of rows) {
      if (env.signal?.aborted) {
        result.stopped = true;
        break;
      }
      const counts = (result.byStream[q.stream] ??= { retried: 0, mirrored: 0, superseded: 0, stillFailing: 0, notReplayable: 0 });
      counts.retried += 1;
      const outcome = await retryOne(env, q, policy);
      if (outcome.kind === 'mirrored') counts.mirrored += 1;
      else if (outcome.kind === 'superseded') counts.superseded += 1;
      else if (outcome.kind === 'failing') counts.stillFailing += 1;
      else {
        counts.notReplayable += 1;
        log.debug(
          { id: q.id, stream: q.stream, entityKey: q.entity_key, why: outcome.why },
          'quarantined payload left: it cannot be replayed without the provider',
        );
      }
    }
    if (result.stopped || rows.length < READ_BATCH) break;
    after = rows[rows.length - 1]!.id;
  }
  result.ms = Date.now() - started;
  return result;
}

async function retryOne(env: ReplayEnv, q: QuarantineRow, policy: PersonalDataPolicy): Promise<Outcome> {
  const handler = handlers[q.stream];
  if (!handler) return notReplayable(`no replay for stream ${q.stream}`);
  if (q.reason.startsWith(TOO_LARGE_REASON))
    return notReplayable('only the first bytes of a body too large to read were kept: it is fetched again with its next version');
  try {
    parseJsonLossless(q.raw_body);
  } catch {
    return notReplayable('the body is not JSON');
  }
  try {
    return await env.handle.write(async (trx) => {
      // A guest body is read again under the erasure lock: an erasure since the batch was read
      // may have replaced it, and what it gives is written under the lock (as the sync's writes).
      if (GUEST_STREAMS.includes(q.stream)) await lockForGuestWrite(trx);
      const now = await quarantineRow(trx, q.id);
      if (!now) return superseded;
      let body: unknown;
      try {
        body = parseJsonLossless(now.raw_body);
      } catch {
        return notReplayable('the body is not JSON');
      }
      const outcome = await handler(trx, now, body, policy);
      if (outcome.kind === 'mirrored' || outcome.kind === 'superseded') await deleteQuarantined(trx, q.id);
      else if (outcome.kind === 'failing') await quarantineAgain(trx, now, outcome.reason, policy.personalData);
      return outcome;
    });
  } catch (err) {
    // The database or the lease away ends the retry (what committed stays); a refusal of these
    // rows (constraint, encoding) is this entity's failure.
    if (err instanceof FenceLostError || isDatabaseUnavailable(err) || isTransactionConflict(err)) throw err;
    const reason = `${WRITE_FAILED_PREFIX}${describeDatabaseError(err)}`;
    await env.handle.write((trx) => quarantineAgain(trx, q, reason, policy.personalData));
    return failing(reason);
  }
}

/** The retry's result as lines for people. */
export function formatRetry(r: RetryResult): string[] {
  const total: RetryCounts = { retried: 0, mirrored: 0, superseded: 0, stillFailing: 0, notReplayable: 0 };
  for (const c of Object.values(r.byStream)) for (const k of Object.keys(total) as (keyof RetryCounts)[]) total[k] += c[k];
  const describe = (c: RetryCounts) =>
    `${c.retried} retried, ${c.mirrored} mirrored, ${c.superseded} superseded, ${c.stillFailing} still failing, ${c.notReplayable} not replayable without the provider`;
  const lines = [
    `${r.stopped ? 'stopped while retrying' : 'retried'} the quarantine in ${(r.ms / 1000).toFixed(1)} s, without a provider request: ${describe(total)}`,
  ];
  for (const [stream, c] of Object.entries(r.byStream).sort(([a], [b]) => a.localeCompare(b))) lines.push(`  ${stream}: ${describe(c)}`);
  return lines;
}
