/**
 * `staysync rebuild`: every typed table derived again from the `raw` payloads the mirror keeps,
 * with the current schemas and mappings and without a single provider request, so that a
 * mapping fix never needs a re-sync.
 *
 * - Each table with a `raw` column is read in key order, a batch at a time (keyset
 *   pagination), and each batch is read, mapped and written in ONE transaction of the
 *   lease-fenced writer (DatabaseHandle.write): the rows come from the sync's own mapping
 *   (src/mapping/), so the same columns get the same values.
 * - Bookkeeping that raw does not give keeps its stored value: fetched_at, synced_at,
 *   listed_at, refreshed_at, updated_at, removed_at, first_seen_at, content_hash, and raw
 *   itself where it is kept as received; so do the pseudonyms of a PMS person whose raw was
 *   stored without e-mails and phones (rebuiltPseudonyms). Over an unchanged mapping a rebuild
 *   therefore reproduces every typed table byte for byte; a row is rewritten only when it
 *   differs.
 * - Children (room stays, daily rates, terms…) are derived whole from their parent's raw and
 *   merged with the stored ones: an equal row is left alone, a differing one rewritten, a
 *   missing one inserted with its parent's synced_at (a sync writes them together), and one the
 *   raw no longer gives deleted.
 * - A raw that no longer passes the schemas goes to the quarantine with the reason, as the
 *   sync would have put it there (same stream, entity key and body shape), and its rows are
 *   left as they were.
 * - History (booking_versions, booking_night_history) only grows: past versions stay as they
 *   were written; the current version's figures and open nights are derived again from raw;
 *   a booking without history (a mirror from before history) gets it, as if first seen now
 *   (reconstructed from its creation); nightly_facts is counted again from the open nights.
 * What raw does not hold is not rebuilt: daily_occupancy keeps the currency and room count of
 * the answer it came in (raw is one day of it); rows that no raw yields any more (a removed
 * room type, an entry a new mapping drops) are left for the next refresh to mark.
 */
import { streamNames, type QuarantineStream } from '../store/states.js';
import type { Config } from '../config/config.js';
import type { DatabaseHandle } from '../store/database.js';
import type { Trx } from '../store/types.js';
import { prepare } from '../store/repositories/content.js';
import { rowsAfterErasures } from '../store/repositories/erasures.js';
import type { BookingRows, NewPmsGuest, PmsReservationRows, SummaryRow } from '../store/schema.js';
import { quarantineGuestPayload } from '../privacy/guest-writes.js';
import { columnTextByKey, mergeChildren, readRawBatch, updateDerived, upsertDerived, type RawRow, type Row } from '../store/repositories/replay.js';
import {
  erasableBooking,
  erasableGuest,
  erasableLoyaltyCards,
  erasableReservation,
  erasableStorageBooking,
  erasableSummary,
  type Erasable,
} from '../mapping/erasure.js';
import { BOOKING_CHILDREN } from '../store/repositories/bookings.js';
import { bookingVersionOf, rederiveHistory, type BookingVersion } from '../mapping/history.js';
import { readHistories, recountNightlyFacts, writeRederivedHistories } from '../store/repositories/history.js';
import { recordStayVersions, reservationCurrencies } from '../store/repositories/pms.js';
import { cancellationRuleRows, extraStayRuleRows, propertyRows, REFERENCE_LISTS } from '../mapping/content.js';
import { companyToRow, invoicesToRows, occupancyDayToRow, roomToRow } from '../mapping/pms.js';
import { inventoryBlockToRows } from '../mapping/integration-storage.js';
import { keptPayload, type PersonalDataPolicy } from '../mapping/personal-data.js';
import type { Logger } from '../util/log.js';
import { parseCancellationRule, parseContentProperty, parseExtraStayRule } from '../provider/schemas/content.js';
import {
  parseCompany,
  parseDailyOccupancy,
  parseGuestResponse,
  parseInventoryBlock,
  parseInvoice,
  parseLoyaltyCard,
  parseReservationResponse,
  parseRoom,
  parseStorageBooking,
} from '../provider/schemas/pms.js';
import { parseBooking, parseBookingSummary, parseGetBookingResponse, type Booking, type ParseResult } from '../provider/schemas/bookings.js';
import { decodeRaw, isObject } from './raw.js';

/** Rows per transaction: large enough that round trips do not dominate, small enough to keep memory flat at 100,000 bookings. */
export const REBUILD_BATCH = 500;

export interface ReplayEnv {
  handle: Pick<DatabaseHandle, 'db' | 'write'>;
  config: Config;
  logger: Logger;
  /** Stops between batches (what is committed stays; running again redoes the rest). */
  signal?: AbortSignal | undefined;
}

/** What the rebuild did with the rows of one table that has a raw column. */
export interface SourceCounts {
  /** Rows read whose raw passed the schemas and was mapped again. */
  rebuilt: number;
  /** Of those, rows whose typed columns differed and were rewritten. */
  changed: number;
  /** Rows whose raw no longer passes the schemas: quarantined, left as they were. */
  quarantined: number;
  /** Rows whose raw now names another key (the mapping of an id changed): left as they were. */
  left: number;
}

/** What the rebuild did to the history of bookings (src/mapping/history.ts rederiveHistory). */
export interface HistoryCounts {
  /** Bookings that had no history (a mirror from before history): given it, from their stored version. */
  started: number;
  /** Bookings whose current version's figures or open nights were derived again. */
  corrected: number;
  /** Rows of nightly_facts written or removed when they were counted again from the open nights at the end (0 when they agreed). */
  nightlyFacts: number;
}

export interface RebuildResult {
  /** Per table with a raw column. */
  sources: Record<string, SourceCounts>;
  /** Rows derived per child table from their parents' raw (merged with the stored ones: only those that differ are written). */
  children: Record<string, number>;
  history: HistoryCounts;
  ms: number;
  /** True when stopped by the signal before the end. */
  stopped: boolean;
}

/** One table with a raw column: how to read it and how to rebuild a batch of it. */
interface Source {
  table: string;
  keys: readonly string[];
  /** Columns read besides the keys and raw (bookkeeping the mapping needs). */
  extra: readonly string[];
  /** Columns read as their text: synced_at, to the microsecond, for the children this row's raw gives. */
  extraText?: readonly string[];
  rebuild(b: Batch, rows: RawRow[]): Promise<void>;
}

/** The transaction of one batch and where its counts go. */
interface Batch {
  trx: Trx;
  counts: SourceCounts;
  children: Record<string, number>;
  history: HistoryCounts;
  quarantine(stream: QuarantineStream, propertyId: string | null, entityKey: string | null, reason: string, rawBody: string): Promise<void>;
  leave(what: string, stored: string, derived: string): void;
}

/** The primary key of each child table (migrations/), which its rows are merged by. */
const CHILD_KEYS: Record<string, readonly string[]> = {
  booking_room_stays: ['property_id', 'number', 'stay_index'],
  booking_daily_rates: ['property_id', 'number', 'stay_index', 'position'],
  booking_services: ['property_id', 'number', 'position'],
  booking_guests: ['property_id', 'number', 'stay_index', 'position'],
  booking_taxes: ['property_id', 'number', 'position'],
  booking_discounts: ['property_id', 'number', 'position'],
  booking_tax_amounts: ['property_id', 'number', 'position'],
  booking_room_stay_rate_plans: ['property_id', 'number', 'stay_index', 'position'],
  booking_loyalty_cards: ['property_id', 'number', 'position'],
  pms_room_stays: ['property_id', 'number', 'position'],
  pms_invoice_items: ['property_id', 'number', 'invoice_position', 'position'],
  room_type_amenities: ['property_id', 'room_type_id', 'position'],
  property_amenities: ['property_id', 'position'],
  cancellation_rule_terms: ['property_id', 'rule_id', 'position'],
  cancellation_rule_arrival_dates: ['property_id', 'rule_id', 'term_position', 'position'],
  extra_stay_rule_periods: ['property_id', 'rule_id', 'kind', 'position'],
  integration_storage_booking_channels: ['property_id', 'booking_id', 'position'],
  integration_storage_booking_nights: ['property_id', 'booking_id', 'room_stay_position', 'position'],
  inventory_block_days: ['property_id', 'inventory_block_id', 'position'],
};

/** Rows as children of a parent: with its synced_at, for those that have to be inserted. */
const asChildren = (rows: readonly object[], syncedAt: unknown): Row[] => rows.map((r) => ({ ...r, synced_at: syncedAt }));

/** A booking's raw is the details response `{ booking }` (a bare booking is read too). */
function parseBookingRaw(body: unknown): ParseResult<Booking> {
  return isObject(body) && 'booking' in body ? parseGetBookingResponse(body) : parseBooking(body);
}

/** A stored object wrapped as the response it came in, keeping the stored text as it is. */
const wrapped = (key: string, rawText: string | null) => `{"${key}":${rawText ?? 'null'}}`;

/** The last occurrence of each key wins, as in the sync's writes. */
function lastByKey<T>(items: readonly T[], key: (t: T) => string): T[] {
  return [...new Map(items.map((t) => [key(t), t])).values()];
}

/**
 * The pseudonyms a rebuild writes for a person: derived again from its stored raw where they can
 * be, that is with the key and from a person object that still holds its e-mails (phones): one
 * stored with pms.personalData on. Otherwise the stored ones: a raw stored with personal data off
 * holds no e-mail, and the pseudonyms, computed from the person as received, are then all that
 * is left of it (a rebuild must not take them for absent); nor does a rebuild run without the
 * key (a shell without STAYSYNC_PSEUDONYM_KEY) drop them.
 */
function rebuiltPseudonyms(
  policy: PersonalDataPolicy,
  person: unknown,
  derived: { email: string | null; phone: string | null },
  stored: { email: string | null; phone: string | null },
): { email: string | null; phone: string | null } {
  const holds = (key: string) => policy.pseudonymKey !== undefined && isObject(person) && key in person;
  return { email: holds('emails') ? derived.email : stored.email, phone: holds('phones') ? derived.phone : stored.phone };
}

/** `policy`: pms.personalData and privacy.pseudonymKey, which decide what of a PMS person is stored (as the sync does). */
function sources(policy: PersonalDataPolicy): Source[] {
  return [
    {
      table: 'reference_lists',
      keys: ['list_name'],
      extra: [],
      async rebuild(b, rows) {
        for (const r of rows) {
          const def = REFERENCE_LISTS.find((d) => d.name === r.list_name);
          if (!def) {
            b.leave('reference list', r.list_name, 'no such list in this staysync');
            continue;
          }
          const mapped = def.read(decodeRaw(r.raw_text));
          if (!mapped.ok) {
            await b.quarantine(streamNames.content, null, def.name, mapped.reason, r.raw_text ?? 'null');
            continue;
          }
          b.counts.rebuilt += 1;
          if (mapped.rows === null || mapped.rows.length === 0) continue;
          // The key is the first column, as the sync's removal takes it.
          const key = Object.keys(mapped.rows[0]!)[0]!;
          b.children[mapped.table] = (b.children[mapped.table] ?? 0) + mapped.rows.length;
          b.counts.changed += await upsertDerived(b.trx, mapped.table, [key], mapped.rows.map(prepare), []);
        }
      },
    },
    {
      table: 'properties',
      keys: ['property_id'],
      extra: [],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseContentProperty(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.content, r.property_id, r.property_id, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.id !== r.property_id) {
            b.leave('property', r.property_id, parsed.value.id);
            continue;
          }
          const pid = r.property_id as string;
          const p = propertyRows(parsed.value, body);
          b.counts.rebuilt += 1;
          b.counts.changed += await updateDerived(b.trx, 'properties', ['property_id'], [prepare(p.property)], ['content_hash', 'raw']);
          const child = async (table: string, keys: string[], rs: Row[]) => {
            b.children[table] = (b.children[table] ?? 0) + rs.length;
            await upsertDerived(b.trx, table, keys, rs.map(prepare), ['content_hash']);
          };
          await child('room_types', ['property_id', 'room_type_id'], p.roomTypes);
          await child('rate_plans', ['property_id', 'rate_plan_id'], p.ratePlans);
          await child('services', ['property_id', 'service_id'], p.services);
          // A room type's amenities are written with the room type: theirs is its synced_at.
          const roomTypeSyncedAt = await columnTextByKey(b.trx, 'room_types', { property_id: pid }, 'room_type_id', 'synced_at');
          const amenities = lastByKey(p.roomTypeAmenities, (x) => x.roomTypeId);
          const amenityRows = amenities.flatMap((a) => asChildren(a.rows.map(prepare), roomTypeSyncedAt.get(a.roomTypeId) ?? r.synced_at));
          b.children.room_type_amenities = (b.children.room_type_amenities ?? 0) + amenityRows.length;
          await mergeChildren(
            b.trx,
            'room_type_amenities',
            CHILD_KEYS.room_type_amenities!,
            ['property_id', 'room_type_id'],
            amenities.map((a) => [pid, a.roomTypeId]),
            amenityRows,
          );
          b.children.property_amenities = (b.children.property_amenities ?? 0) + p.amenities.length;
          await mergeChildren(
            b.trx,
            'property_amenities',
            CHILD_KEYS.property_amenities!,
            ['property_id'],
            [[pid]],
            asChildren(p.amenities.map(prepare), r.synced_at),
          );
        }
      },
    },
    {
      table: 'cancellation_rules',
      keys: ['property_id', 'rule_id'],
      extra: [],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        for (const r of rows) {
          const parsed = parseCancellationRule(decodeRaw(r.raw_text));
          if (!parsed.ok) {
            await b.quarantine(streamNames.content, r.property_id, `cancellationRules:${r.rule_id}`, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.id !== r.rule_id) {
            b.leave('cancellation rule', r.rule_id, parsed.value.id);
            continue;
          }
          const m = cancellationRuleRows(r.property_id, parsed.value);
          const parent = [[r.property_id, r.rule_id]];
          b.counts.rebuilt += 1;
          b.counts.changed += await updateDerived(b.trx, 'cancellation_rules', ['property_id', 'rule_id'], [prepare(m.rule)], ['content_hash']);
          const terms = asChildren(m.terms.map(prepare), r.synced_at);
          const arrivalDates = asChildren(m.arrivalDates.map(prepare), r.synced_at);
          await mergeChildren(b.trx, 'cancellation_rule_terms', CHILD_KEYS.cancellation_rule_terms!, ['property_id', 'rule_id'], parent, terms);
          await mergeChildren(
            b.trx,
            'cancellation_rule_arrival_dates',
            CHILD_KEYS.cancellation_rule_arrival_dates!,
            ['property_id', 'rule_id'],
            parent,
            arrivalDates,
          );
          b.children.cancellation_rule_terms = (b.children.cancellation_rule_terms ?? 0) + m.terms.length;
          b.children.cancellation_rule_arrival_dates = (b.children.cancellation_rule_arrival_dates ?? 0) + m.arrivalDates.length;
        }
      },
    },
    {
      table: 'extra_stay_rules',
      keys: ['property_id', 'rule_id'],
      extra: [],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        for (const r of rows) {
          const parsed = parseExtraStayRule(decodeRaw(r.raw_text));
          if (!parsed.ok) {
            await b.quarantine(streamNames.content, r.property_id, `extraStayRules:${r.rule_id}`, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.id !== r.rule_id) {
            b.leave('extra-stay rule', r.rule_id, parsed.value.id);
            continue;
          }
          const m = extraStayRuleRows(r.property_id, parsed.value);
          b.counts.rebuilt += 1;
          b.counts.changed += await updateDerived(b.trx, 'extra_stay_rules', ['property_id', 'rule_id'], [prepare(m.rule)], ['content_hash']);
          const periods = asChildren(m.periods.map(prepare), r.synced_at);
          await mergeChildren(
            b.trx,
            'extra_stay_rule_periods',
            CHILD_KEYS.extra_stay_rule_periods!,
            ['property_id', 'rule_id'],
            [[r.property_id, r.rule_id]],
            periods,
          );
          b.children.extra_stay_rule_periods = (b.children.extra_stay_rule_periods ?? 0) + m.periods.length;
        }
      },
    },
    {
      table: 'booking_summaries',
      keys: ['property_id', 'number'],
      extra: ['listed_at'],
      async rebuild(b, rows) {
        const summaries: Erasable<SummaryRow>[] = [];
        const now = Date.now();
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseBookingSummary(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.bookingSummaries, r.property_id, r.number, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.number !== r.number) {
            b.leave('booking summary', r.number, parsed.value.number);
            continue;
          }
          summaries.push(erasableSummary(r.property_id, parsed.value, body, now, policy.personalData));
        }
        // raw too: as the personal-data policy and the erasure list keep it now.
        const out: Row[] = (await rowsAfterErasures(b.trx, summaries)).map((s) => ({
          property_id: s.propertyId,
          number: s.number,
          status: s.status,
          created_at: s.createdAt,
          modified_at: s.modifiedAt,
          raw: JSON.stringify(s.raw),
        }));
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'booking_summaries', ['property_id', 'number'], out, ['listed_at']);
      },
    },
    {
      table: 'bookings',
      keys: ['property_id', 'number'],
      extra: ['fetched_at'],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        const headers: Row[] = [];
        const children = new Map<string, Row[]>(BOOKING_CHILDREN.map(([, t]) => [t, []]));
        const keys: [string, string][] = [];
        const versions: { key: { property_id: string; number: string }; version: BookingVersion; contentHash: string }[] = [];
        const parsedRows: { r: RawRow; booking: Erasable<BookingRows> }[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseBookingRaw(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.bookingDetails, r.property_id, r.number, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.number !== r.number) {
            b.leave('booking', r.number, parsed.value.number);
            continue;
          }
          parsedRows.push({ r, booking: erasableBooking(r.property_id, parsed.value, body, r.fetched_at, policy.personalData) });
        }
        // As the erasure list has it now: a person an erasure did not reach in raw is erased here.
        const erased = await rowsAfterErasures(
          b.trx,
          parsedRows.map((f) => f.booking),
        );
        for (const [i, { r }] of parsedRows.entries()) {
          const mapped = erased[i]!;
          headers.push({ ...mapped.booking, synced_at: r.synced_at });
          for (const [field, table] of BOOKING_CHILDREN) children.get(table)!.push(...asChildren(mapped[field], r.synced_at));
          keys.push([r.property_id, r.number]);
          versions.push({ key: { property_id: r.property_id, number: r.number }, version: bookingVersionOf(mapped), contentHash: mapped.contentHash });
        }
        b.counts.rebuilt += headers.length;
        // raw too: what a newer personal-data policy leaves out of it goes (personal-data.ts).
        b.counts.changed += await updateDerived(b.trx, 'bookings', ['property_id', 'number'], headers, ['fetched_at', 'synced_at']);
        for (const [table, rs] of children) {
          b.children[table] = (b.children[table] ?? 0) + rs.length;
          await mergeChildren(b.trx, table, CHILD_KEYS[table]!, ['property_id', 'number'], keys, rs);
        }
        // History: past versions stay; the current one is derived again, or started.
        const stored = await readHistories(
          b.trx,
          versions.map((v) => v.key),
        );
        const rederived = versions.flatMap(({ key, version, contentHash }) => {
          const found = stored.get(`${key.property_id}/${key.number}`);
          const r = found === undefined ? null : rederiveHistory(found, version, contentHash);
          return r ? [{ key, rederived: r }] : [];
        });
        for (const { rederived: r } of rederived) b.history[r.kind] += 1;
        await writeRederivedHistories(b.trx, rederived);
      },
    },
    {
      table: 'pms_rooms',
      keys: ['property_id', 'room_id'],
      extra: [],
      async rebuild(b, rows) {
        const out: Row[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseRoom(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsRooms, r.property_id, r.room_id, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.id !== r.room_id) {
            b.leave('PMS room', r.room_id, parsed.value.id);
            continue;
          }
          out.push(prepare(roomToRow(r.property_id, parsed.value, body)));
        }
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_rooms', ['property_id', 'room_id'], out, ['content_hash', 'raw']);
      },
    },
    {
      table: 'pms_invoices',
      keys: ['property_id', 'number', 'position'],
      extra: ['currency_code'],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        // Each invoice from its own raw (as stored: an erased payer stays erased), its items merged.
        const headers: Row[] = [];
        const items: Row[] = [];
        const keys: [string, string, number][] = [];
        // An item without a currency is in its reservation's (the invoice's own may be NULL: items in several).
        const currencies = await reservationCurrencies(
          b.trx,
          rows.map((r) => ({ property_id: r.property_id as string, number: r.number as string })),
        );
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseInvoice(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsInvoices, r.property_id, r.number, parsed.reason, `{"invoices":[${r.raw_text ?? 'null'}]}`);
            continue;
          }
          const currency = currencies.has(`${r.property_id}/${r.number}`) ? currencies.get(`${r.property_id}/${r.number}`)! : r.currency_code;
          const mapped = invoicesToRows(r.property_id, r.number, [parsed.value], [body], currency);
          headers.push({ ...mapped.invoices[0]!, position: r.position, synced_at: r.synced_at });
          items.push(
            ...asChildren(
              mapped.items.map((i) => ({ ...i, invoice_position: r.position })),
              r.synced_at,
            ),
          );
          keys.push([r.property_id, r.number, r.position]);
        }
        b.counts.rebuilt += headers.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_invoices', ['property_id', 'number', 'position'], headers, ['synced_at', 'raw']);
        b.children.pms_invoice_items = (b.children.pms_invoice_items ?? 0) + items.length;
        await mergeChildren(b.trx, 'pms_invoice_items', CHILD_KEYS.pms_invoice_items!, ['property_id', 'number', 'invoice_position'], keys, items);
      },
    },
    {
      table: 'pms_companies',
      keys: ['property_id', 'company_id'],
      extra: [],
      async rebuild(b, rows) {
        const out: Row[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseCompany(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsCompanies, r.property_id, r.company_id, parsed.reason, r.raw_text ?? 'null');
            continue;
          }
          if (parsed.value.id !== r.company_id) {
            b.leave('PMS company', r.company_id, parsed.value.id);
            continue;
          }
          out.push(prepare(companyToRow(r.property_id, parsed.value, body)));
        }
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_companies', ['property_id', 'company_id'], out, ['content_hash', 'raw']);
      },
    },
    {
      table: 'pms_reservations',
      keys: ['property_id', 'number'],
      extra: ['fetched_at', 'customer_email_hash', 'customer_phone_hash'],
      extraText: ['synced_at'],
      async rebuild(b, rows) {
        const headers: Row[] = [];
        const stays: Row[] = [];
        const keys: [string, string][] = [];
        const parsedRows: { r: RawRow; body: unknown; reservation: Erasable<{ rows: PmsReservationRows; stored: unknown }> }[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          // Under its stored key, the number it was fetched by, as the sync keyed it: the raw's own number may be null.
          const parsed = parseReservationResponse({ reservation: body }, r.number);
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsReservations, r.property_id, r.number, parsed.reason, wrapped('reservation', r.raw_text));
            continue;
          }
          parsedRows.push({ r, body, reservation: erasableReservation(r.property_id, parsed.value, body, policy, r.fetched_at) });
        }
        // As the erasure list has it now.
        const erased = await rowsAfterErasures(
          b.trx,
          parsedRows.map((p) => p.reservation),
        );
        for (const [i, { r, body }] of parsedRows.entries()) {
          // The customer's profile row is rebuilt from its own raw (pms_guests), which a later
          // guest fetch may have replaced: it is not written from here.
          const mapped = erased[i]!.rows;
          const header = mapped.reservation;
          const pseudonyms = rebuiltPseudonyms(
            policy,
            isObject(body) ? body.customer : null,
            { email: header.customer_email_hash ?? null, phone: header.customer_phone_hash ?? null },
            { email: r.customer_email_hash, phone: r.customer_phone_hash },
          );
          headers.push({ ...header, customer_email_hash: pseudonyms.email, customer_phone_hash: pseudonyms.phone, synced_at: r.synced_at });
          stays.push(...asChildren(mapped.roomStays, r.synced_at));
          keys.push([r.property_id, r.number]);
        }
        b.counts.rebuilt += headers.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_reservations', ['property_id', 'number'], headers, ['fetched_at', 'synced_at']);
        b.children.pms_room_stays = (b.children.pms_room_stays ?? 0) + stays.length;
        await mergeChildren(b.trx, 'pms_room_stays', CHILD_KEYS.pms_room_stays!, ['property_id', 'number'], keys, stays);
        // Their history only grows: a stay the mapping now reads differently gets a version, one without history its first.
        await recordStayVersions(
          b.trx,
          keys.map(([property_id, number]) => ({ property_id, number })),
        );
      },
    },
    {
      table: 'pms_guests',
      keys: ['property_id', 'pms_person_id'],
      extra: ['fetched_at', 'email_hash', 'phone_hash'],
      async rebuild(b, rows) {
        const out: Row[] = [];
        const parsedRows: { r: RawRow; body: unknown; guest: Erasable<NewPmsGuest | null> }[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseGuestResponse({ guest: body });
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsGuests, r.property_id, r.pms_person_id, parsed.reason, wrapped('guest', r.raw_text));
            continue;
          }
          parsedRows.push({ r, body, guest: erasableGuest(r.property_id, parsed.value, body, policy, r.fetched_at) });
        }
        // As the erasure list has it now.
        const erased = await rowsAfterErasures(
          b.trx,
          parsedRows.map((p) => p.guest),
        );
        for (const [i, { r, body }] of parsedRows.entries()) {
          const row = erased[i]!;
          if (row === null || row.pms_person_id !== r.pms_person_id) {
            b.leave('PMS person', r.pms_person_id, String(row?.pms_person_id ?? 'no person id'));
            continue;
          }
          const pseudonyms = rebuiltPseudonyms(
            policy,
            body,
            { email: row.email_hash ?? null, phone: row.phone_hash ?? null },
            { email: r.email_hash, phone: r.phone_hash },
          );
          out.push({ ...row, email_hash: pseudonyms.email, phone_hash: pseudonyms.phone });
        }
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_guests', ['property_id', 'pms_person_id'], out, ['fetched_at']);
      },
    },
    {
      table: 'pms_guest_loyalty_cards',
      keys: ['property_id', 'pms_person_id', 'position'],
      extra: [],
      async rebuild(b, rows) {
        // Each card from its own raw, under the personal-data policy and the erasure list as they are now.
        const parsedRows: { r: RawRow; cards: ReturnType<typeof erasableLoyaltyCards> }[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          const parsed = parseLoyaltyCard(body);
          if (!parsed.ok) {
            await b.quarantine(streamNames.pmsLoyaltyCards, r.property_id, r.pms_person_id, parsed.reason, `{"loyaltyCards":[${r.raw_text ?? 'null'}]}`);
            continue;
          }
          const read = { parsed: [parsed.value], raw: [keptPayload(body, policy.personalData)] };
          parsedRows.push({ r, cards: erasableLoyaltyCards(r.property_id, r.pms_person_id, read, policy.personalData) });
        }
        const kept = await rowsAfterErasures(
          b.trx,
          parsedRows.map((p) => p.cards),
        );
        const out: Row[] = parsedRows.map(({ r }, i) => ({ ...kept[i]!.cards[0]!, position: r.position }));
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'pms_guest_loyalty_cards', ['property_id', 'pms_person_id', 'position'], out, []);
      },
    },
    {
      table: 'daily_occupancy',
      keys: ['property_id', 'stay_date'],
      extra: ['currency_code', 'property_room_count', 'refreshed_at'],
      async rebuild(b, rows) {
        const out: Row[] = [];
        for (const r of rows) {
          const body = decodeRaw(r.raw_text);
          // raw is one day of an answer: the answer's currency and room count come from the row.
          const answer = { currencyCode: r.currency_code as string | null, propertyRoomCount: r.property_room_count as number };
          const parsed = parseDailyOccupancy({ ...answer, dailyOccupancies: [body] });
          const day = parsed.ok ? parsed.value.dailyOccupancies[0] : undefined;
          if (!parsed.ok || !day) {
            await b.quarantine(
              streamNames.dailyOccupancy,
              r.property_id,
              r.stay_date,
              parsed.ok ? 'response.dailyOccupancies: empty' : parsed.reason,
              r.raw_text ?? 'null',
            );
            continue;
          }
          if (day.date !== r.stay_date) {
            b.leave('occupancy day', r.stay_date, day.date);
            continue;
          }
          out.push(occupancyDayToRow(r.property_id, answer, day, body, r.refreshed_at));
        }
        b.counts.rebuilt += out.length;
        b.counts.changed += await updateDerived(b.trx, 'daily_occupancy', ['property_id', 'stay_date'], out, [
          'refreshed_at',
          'raw',
          'currency_code',
          'property_room_count',
        ]);
      },
    },
    storageRebuilder(
      'integration_storage_bookings',
      'booking_id',
      'booking',
      'integration-storage booking',
      parseStorageBooking,
      (p, e, raw, at) => erasableStorageBooking(p, e, raw, at, policy.personalData),
      (rows) => ({ parent: rows.booking, children: { integration_storage_booking_channels: rows.channels, integration_storage_booking_nights: rows.nights } }),
    ),
    // An inventory block names nobody.
    storageRebuilder(
      'inventory_blocks',
      'inventory_block_id',
      'inventoryBlock',
      'inventory block',
      parseInventoryBlock,
      (p, e, raw, at) => {
        const rows = inventoryBlockToRows(p, e, raw, at);
        return { rows, identities: [], withErasures: () => rows };
      },
      (rows) => ({ parent: rows.block, children: { inventory_block_days: rows.days } }),
    ),
  ];
}

/**
 * Integration-storage bookings and inventory blocks: one entity per raw, answered inside an
 * envelope (`{booking}`, `{inventoryBlock}`) that the raw column does not keep. Their children
 * (channels and nights, days) are derived whole from the parent's raw and merged: a mirror from
 * before migrations/0022_storage_typed.sql gets them at the upgrade's rebuild.
 */
function storageRebuilder<T extends { id: string }, R>(
  table: 'integration_storage_bookings' | 'inventory_blocks',
  key: 'booking_id' | 'inventory_block_id',
  envelope: string,
  what: string,
  parse: (body: unknown) => ParseResult<T>,
  toRows: (propertyId: string, entity: T, raw: unknown, fetchedAt: Date) => Erasable<R>,
  split: (rows: R) => { parent: object; children: Record<string, readonly object[]> },
): Source {
  return {
    table,
    keys: ['property_id', key],
    extra: ['fetched_at'],
    extraText: ['synced_at'],
    async rebuild(b, rows) {
      const found: { r: RawRow; rows: Erasable<R> }[] = [];
      for (const r of rows) {
        const id = r[key] as string;
        const body = decodeRaw(r.raw_text);
        const parsed = parse({ [envelope]: body });
        if (!parsed.ok) {
          await b.quarantine(streamNames.webhookEvents, r.property_id, id, parsed.reason, wrapped(envelope, r.raw_text));
          continue;
        }
        if (parsed.value.id !== id) {
          b.leave(what, id, parsed.value.id);
          continue;
        }
        found.push({ r, rows: toRows(r.property_id, parsed.value, body, r.fetched_at) });
      }
      // As the erasure list has it now.
      const erased = await rowsAfterErasures(
        b.trx,
        found.map((f) => f.rows),
      );
      const out: Row[] = [];
      const children = new Map<string, Row[]>();
      for (const [i, f] of found.entries()) {
        const { parent, children: own } = split(erased[i]!);
        out.push({ ...(parent as Row), synced_at: f.r.synced_at });
        for (const [child, rs] of Object.entries(own)) children.set(child, [...(children.get(child) ?? []), ...asChildren(rs, f.r.synced_at)]);
      }
      b.counts.rebuilt += out.length;
      // raw too: what a newer personal-data policy leaves out of it goes (personal-data.ts).
      b.counts.changed += await updateDerived(b.trx, table, ['property_id', key], out, ['fetched_at', 'synced_at']);
      const parents = found.map((f) => [f.r.property_id, f.r[key]] as const);
      for (const [child, rs] of children) {
        b.children[child] = (b.children[child] ?? 0) + rs.length;
        await mergeChildren(b.trx, child, CHILD_KEYS[child]!, ['property_id', key], parents, rs);
      }
    },
  };
}

/** Rebuilds every typed table from raw (see the file comment). */
export async function rebuild(env: ReplayEnv, opts: { batchSize?: number } = {}): Promise<RebuildResult> {
  const { handle, logger } = env;
  const log = logger.child({ component: 'rebuild' });
  const batchSize = opts.batchSize ?? REBUILD_BATCH;
  const started = Date.now();
  const result: RebuildResult = { sources: {}, children: {}, history: { started: 0, corrected: 0, nightlyFacts: 0 }, ms: 0, stopped: false };
  let warned = 0;
  for (const source of sources({ personalData: env.config.pms.personalData, pseudonymKey: env.config.privacy.pseudonymKey })) {
    const counts: SourceCounts = { rebuilt: 0, changed: 0, quarantined: 0, left: 0 };
    result.sources[source.table] = counts;
    let after: unknown[] | null = null;
    for (;;) {
      if (env.signal?.aborted) {
        result.stopped = true;
        break;
      }
      const from: unknown[] | null = after;
      const batch = await handle.write(async (trx): Promise<{ n: number; last: unknown[] | null }> => {
        const rows = await readRawBatch(trx, source.table, source.keys, source.extra, from, batchSize, source.extraText);
        if (rows.length === 0) return { n: 0, last: null };
        await source.rebuild(
          {
            trx,
            counts,
            children: result.children,
            history: result.history,
            quarantine: async (stream, propertyId, entityKey, reason, rawBody) => {
              counts.quarantined += 1;
              if (warned++ < 20)
                log.warn(
                  { table: source.table, propertyId, entityKey, reason },
                  'a stored raw payload no longer passes validation: quarantined, its rows left as they were',
                );
              // As the sync would have quarantined it: through the personal-data policy and the erasure list.
              await quarantineGuestPayload(trx, { stream, propertyId, entityKey, reason, rawBody }, env.config.pms.personalData);
            },
            leave: (what, stored, derived) => {
              counts.left += 1;
              log.warn({ table: source.table, stored, derived }, `the raw of a ${what} now gives another key: left as it was`);
            },
          },
          rows,
        );
        const lastRow = rows[rows.length - 1]!;
        return { n: rows.length, last: source.keys.map((k) => lastRow[k] as unknown) };
      });
      after = batch.last;
      if (batch.n < batchSize) break;
    }
    if (result.stopped) break;
  }
  // The current books, counted again from the open nights they are kept equal to.
  if (!result.stopped) result.history.nightlyFacts = await handle.write((trx) => recountNightlyFacts(trx));
  result.ms = Date.now() - started;
  return result;
}

/** The rebuild's result as lines for people. */
export function formatRebuild(r: RebuildResult): string[] {
  const lines = [
    `${r.stopped ? 'stopped while rebuilding' : 'rebuilt'} the typed tables from raw in ${(r.ms / 1000).toFixed(1)} s, without a provider request:`,
  ];
  const width = Math.max(...[...Object.keys(r.sources), ...Object.keys(r.children)].map((t) => t.length));
  for (const [table, c] of Object.entries(r.sources)) {
    const extra = [
      c.changed ? `${c.changed} changed` : 'none changed',
      c.quarantined ? `${c.quarantined} quarantined (raw no longer valid)` : '',
      c.left ? `${c.left} left (raw names another key)` : '',
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(`  ${table.padEnd(width)}  ${String(c.rebuilt).padStart(7)} rows from raw, ${extra}`);
  }
  for (const [table, n] of Object.entries(r.children)) lines.push(`  ${table.padEnd(width)}  ${String(n).padStart(7)} rows written`);
  const h = r.history;
  lines.push(
    `  history: ${h.started} bookings given their history, ${h.corrected} current versions derived again, ${h.nightlyFacts} rows of nightly_facts corrected`,
  );
  return lines;
}
