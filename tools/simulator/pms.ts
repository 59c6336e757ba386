/**
 * The PMS side of the simulated provider, consistent with its bookings: every booking has a
 * PMS reservation with the same number, a few PMS-only reservations (walk-ins) exist besides,
 * rooms are assigned without overlaps, guests have profiles, daily occupancy is derived from
 * the reservations, and a subset of bookings has an integration-storage booking.
 *
 * Like the bookings, a reservation is kept as a compact state (its booking, times, room
 * indices and the few PMS-side overrides); the served objects are derived on demand. The
 * state of a property is built on first use, as of the time the property came to be (the
 * simulator's start, or addProperty), so it does not depend on when it is first asked for.
 *
 * Stays before that time are checked in and out automatically (around the planned times), a
 * stay in progress is checked in; the reservation's modification time is then the latest of
 * its booking's and of those events. A change of the booking (mutate) re-derives the stays as
 * of the change time.
 */
import { BookingState, deriveBooking, formatUtcSeconds, type PropertyStore } from './data.js';
import { addMinutes, dayNumber, dayString, localDate, localMinute, localSeconds, localToUtcMs, wallClockMs } from './local-time.js';
import { computeDailyOccupancy, plannedClosedRooms, type OccupancyInput, type OccupancyStay } from './occupancy.js';
import type {
  AccommodationInventory,
  DailyOccupancyReport,
  DailyRoomTypeInventory,
  IntegrationStorageBooking,
  InventoryBlock,
  PmsAmount,
  PmsCompany,
  PmsLoyaltyCard,
  PmsInvoice,
  PmsInvoiceItem,
  PmsPerson,
  PmsReservation,
  PmsRoom,
  PmsRoomStay,
  StorageAmount,
  StorageRoomStay,
} from './pms-types.js';
import { chance, hashString, intBetween, mix, mulberry32, pick } from './random.js';
import type { BookingPayload, PropertyContent, RoomStay } from './types.js';

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
/** Internal ids of PMS-only reservations: far from booking ids (which start at 7,000,001). */
const WALK_IN_BASE = 90_000_000;
const WALK_INS_PER_PROPERTY_MAX = 9_999;
/** Integration-storage booking id = booking id minus this (booking 7,000,001 -> "600001"). */
const STORAGE_ID_OFFSET = 6_400_000;
const ROOMS_PER_FLOOR = 20;

/** Webhook event types of the PMS (`webpms:*`) and of the integration storage. */
export type PmsEventType =
  | 'webpms:create_booking'
  | 'webpms:cancel_booking'
  | 'webpms:check_in'
  | 'webpms:check_out'
  | 'webpms:cancel_check_in'
  | 'webpms:cancel_check_out'
  | 'webpms:change_room'
  | 'webpms:change_check_in_datetime'
  | 'webpms:change_check_out_datetime'
  | 'webpms:add_room_group_booking'
  | 'webpms:delete_room_group_booking'
  | 'pms_integration_storage:booking_changed'
  | 'pms_integration_storage:inventory_block_changed';

/**
 * Where the model reports its changes (the webhooks); `active()` false skips the work of finding
 * them. Payloads: `webpms:*` events carry `{ BookingNumber, PropertyId }` (strings, PascalCase),
 * as the provider sends them. Of the integration-storage events the documents say only that
 * they carry the id to fetch, `bookingId` (booking_changed) or `inventoryBlockId`
 * (inventory_block_changed), as the specification spells them, and no property: that is all
 * the simulator sends, unless `storageEventsNameProperty()` asks for a `propertyId` too (a
 * provider that sends more than it promises).
 */
export interface PmsEventSink {
  active(): boolean;
  emit(type: PmsEventType, payload: Record<string, string>): void;
  storageEventsNameProperty(): boolean;
}

/** What PMS-side operations overrode in one stay: the actual times. */
interface StayOverride {
  actualIn: string | null;
  actualOut: string | null;
}

/** Compact state of one PMS reservation. */
class PmsRes {
  /** When it was last modified (served as modifyDateTime, truncated to the second). */
  modifiedMs = 0;
  /** Stays are checked in and out automatically up to this instant (see the file comment). */
  asOfMs = 0;
  /** Set by pmsCancel: cancelled on the PMS side whatever the booking says. */
  cancelledMs = 0;
  /** Actual times set by pmsCheckIn / pmsCheckOut, per stay index. */
  overrides: (StayOverride | undefined)[] | undefined;
  /** Room index per stay (into the property's rooms), -1 when none is assigned. */
  rooms: number[] = [];
  /** Nights of every stay (all stays of a booking share the dates). */
  nights = 1;
  /** Room type index (into content.roomTypes) per stay. */
  roomTypes: number[] = [];
  /** PMS-only: every night is free of charge. */
  complimentary = false;
  /** Set when the reservation has an integration-storage booking: when that changed last. */
  storageUpdatedMs: number | undefined;

  constructor(
    /** The booking id, or the internal id of a PMS-only reservation. */
    readonly key: number,
    /** The booking itself, or for a PMS-only reservation a state the booking list does not know. */
    readonly source: BookingState,
    readonly walkIn: boolean,
  ) {}

  get number(): string {
    return this.source.number;
  }

  get cancelled(): boolean {
    return this.cancelledMs > 0 || this.source.status === 'Cancelled';
  }

  get sec(): number {
    return Math.floor(this.modifiedMs / 1000);
  }
}

/** Nights [from, to) of stay `stay` of reservation `key` in a room. */
interface Interval {
  from: number;
  to: number;
  key: number;
  stay: number;
}

interface BlockState {
  block: InventoryBlock;
  /** Day numbers covered and room type codes, for the storage bookings that fall in the block. */
  firstDay: number;
  lastDay: number;
  roomTypeCodes: Set<string>;
}

/** PMS state of one property. */
interface PmsProperty {
  store: PropertyStore;
  index: number;
  rooms: PmsRoom[];
  /** Room indices per content room type index. */
  roomsByType: number[][];
  /** Nights taken per room: [from, to) day numbers of the stays assigned to it. */
  occupied: Interval[][];
  /** Ordered by (modification second, number): the order of the search results. */
  order: PmsRes[];
  byNumber: Map<string, PmsRes>;
  byKey: Map<number, PmsRes>;
  blocks: BlockState[];
}

/** What the reservation search matches (windows are property-local `YYYY-MM-DDTHH:mm`, inclusive). */
export interface PmsSearchQuery {
  state: 'Active' | 'Cancelled';
  modify?: [string, string];
  affect?: [string, string];
  roomId?: string;
}

/** A position in the search order: after the reservation modified in second `sec` with `number`. */
export interface PmsSearchPosition {
  sec: number;
  number: string;
}

const ROOM_TYPE_CODES: Record<string, string> = { Standard: 'STD', Superior: 'SUP', Deluxe: 'DLX', JuniorSuite: 'JSU', Family: 'FAM' };
const RATE_PLAN_CODES: Record<string, string> = { 'Best Available Rate': 'BAR', 'Non-refundable': 'NRF', 'Bed & Breakfast': 'BB', Online: 'ONL' };
const SERVICE_CODES: Record<string, string> = {
  Breakfast: 'BRKF',
  'Continental breakfast': 'CBRK',
  'Half board': 'HB',
  Parking: 'PARK',
  'Fruit platter': 'FRUIT',
  'Airport transfer': 'TRSF',
};
const CHANNEL_NAMES: Record<string, string> = { BGC: 'booking.com', PA2: 'expedia.com', OTG: 'ostrovok.ru' };
const FEMALE = new Set(['Anna', 'Maria', 'Lena', 'Yuki', 'Sofia', 'Elif', 'Olga', 'Emma']);
const MALE = new Set(['Sherlock', 'John', 'Ivan', 'Omar', 'Pierre', 'Chen', 'Max', 'Tom']);
const FIRST_NAMES = ['Olga', 'Max', 'Emma', 'Tom', 'Kai', 'Noa', 'Anna', 'John', 'Ivan', 'Sofia'];
const LAST_NAMES = ['Fischer', 'Petrov', 'Haddad', 'Miller', 'Suzuki', 'Moreau', 'Yilmaz', 'Tran', 'Lopez'];
const CITIZENSHIPS = ['DEU', 'RUS', 'ARE', 'USA', 'THA', 'GBR', 'FRA', 'NLD', 'ITA', 'JPN', 'TUR', 'CHN'];
const LANGUAGES = ['en', 'en', 'en', 'ru', 'de', 'fr', 'tr', 'th'];
const VISIT_PURPOSES = [
  { id: '1', displayName: 'Business' },
  { id: '2', displayName: 'Tourism' },
  { id: '3', displayName: 'Private' },
];
const COMMENTS = ['I want room with the sea view', 'Late arrival, around midnight', 'Quiet room, please', 'Baby cot needed'];
const GROUPS = ['Wedding', 'Conference', 'Football team'];
const COMPANIES = ['Undefined Incorporated', 'Acme Travel GmbH', 'Northwind Trading', 'Globex LLC'];

const pad12 = (n: number) => String(n).padStart(12, '0');
/** Person slot 0 is the customer; stay i uses slots 1 + 3i and 2 + 3i for its other guests. */
export const personId = (key: number, slot: number) => `4503${pad12(key * 10 + slot)}`;
const roomStayId = (key: number, stay: number) => `4504${pad12(key * 10 + stay)}`;
/** One id per company name and property: the reservations of a company name it alike. */
const companyId = (propertyIndex: number, name: string) => `4506${pad12(propertyIndex * 100 + COMPANIES.indexOf(name))}`;
/** The property's agent companies (type Payer), listed but on no reservation. */
const AGENTS = ['Booking Partners Ltd', 'Sunrise Tours'];
const agentId = (propertyIndex: number, i: number) => `4507${pad12(propertyIndex * 100 + i)}`;
/** VAT of the simulated properties (percent), by property index. */
const VAT_PERCENTS = [20, 10, 0, 7];
/**
 * Whether a property quotes its prices with VAT (invoice items' `vat.included`), by property
 * index: one in two does not. An item's `total` includes the tax either way ("Cost of an invoice
 * item, tax INCLUDED", PmsApi_InvoiceItem).
 */
const VAT_INCLUDED = [true, false];
/** The currency a transfer company bills in when it is not the property's (one transfer in two). */
const transferCurrency = (propertyCurrency: string): string => (propertyCurrency === 'EUR' ? 'USD' : 'EUR');
const cents = (x: number) => Math.round(x * 100);
const money = (c: number) => c / 100;

/** Splits `total` cents over `n` nights: equal parts, the remainder on the first night. */
function spread(total: number, n: number): number[] {
  const base = Math.floor(total / n);
  return Array.from({ length: n }, (_, i) => (i === 0 ? total - base * (n - 1) : base));
}

/** A min-heap of [key, value] pairs by key. */
class MinHeap {
  private readonly items: [number, number][] = [];
  get size(): number {
    return this.items.length;
  }
  peek(): [number, number] | undefined {
    return this.items[0];
  }
  push(item: [number, number]): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]![0] <= a[i]![0]) break;
      [a[p], a[i]] = [a[i]!, a[p]!];
      i = p;
    }
  }
  pop(): [number, number] | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l]![0] < a[m]![0]) m = l;
        if (r < a.length && a[r]![0] < a[m]![0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i]!, a[m]!];
        i = m;
      }
    }
    return top;
  }
}

function compareRes(a: { sec: number; number: string }, b: { sec: number; number: string }): number {
  return a.sec - b.sec || (a.number < b.number ? -1 : a.number > b.number ? 1 : 0);
}

/** Index of the first reservation of `order` whose position is > `pos` (or >= with `inclusive`). */
function boundAfter(order: readonly PmsRes[], pos: PmsSearchPosition, inclusive: boolean): number {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareRes(order[mid]!, pos);
    if (c < 0 || (c === 0 && !inclusive)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class PmsModel {
  private readonly properties = new Map<string, PmsProperty>();
  /** When each property came to be; the PMS state of a property is built as of that time. */
  private readonly epochs = new Map<string, number>();
  /** The served reservation before the change in progress (mutate), when events are wanted. */
  private before: PmsReservation | undefined;

  constructor(
    private readonly seed: number,
    private readonly stores: Map<string, PropertyStore>,
    private readonly now: () => number,
    private readonly events: PmsEventSink,
    startMs: number,
  ) {
    for (const id of stores.keys()) this.epochs.set(id, startMs);
  }

  /** A property added after the start: its PMS state is built as of `atMs`. */
  propertyAdded(propertyId: string, atMs: number): void {
    this.epochs.set(propertyId, atMs);
  }

  // ---- building ----

  /** The PMS state of a property (built on first use), or undefined for an unknown property. */
  property(propertyId: string): PmsProperty | undefined {
    const existing = this.properties.get(propertyId);
    if (existing) return existing;
    const store = this.stores.get(propertyId);
    if (!store) return undefined;
    const built = this.build(store, [...this.stores.keys()].indexOf(propertyId));
    this.properties.set(propertyId, built);
    return built;
  }

  private mustProperty(propertyId: string): PmsProperty {
    const pp = this.property(propertyId);
    if (!pp) throw new Error(`unknown property ${propertyId}`);
    return pp;
  }

  private build(store: PropertyStore, index: number): PmsProperty {
    const content = store.content;
    const t0 = this.epochs.get(content.id) ?? this.now();
    const t0Day = Math.floor(t0 / DAY_MS);
    const pp: PmsProperty = {
      store,
      index,
      rooms: [],
      roomsByType: content.roomTypes.map(() => []),
      occupied: [],
      order: [],
      byNumber: new Map(),
      byKey: new Map(),
      blocks: [],
    };
    const all: PmsRes[] = [];
    for (const b of store.order) {
      const r = new PmsRes(b.id, b, false);
      if (hashString(b.number) % 2 === 0) r.storageUpdatedMs = 0;
      all.push(r);
    }
    // PMS-only reservations: about 2% of the bookings, at least one when there are bookings.
    const walkIns = store.order.length === 0 ? 0 : Math.min(WALK_INS_PER_PROPERTY_MAX, Math.max(1, Math.round(store.order.length * 0.02)));
    const rng = mulberry32(mix(this.seed, hashString(content.id), 0x3a1c));
    for (let k = 0; k < walkIns; k++) {
      const id = WALK_IN_BASE + index * 10_000 + k;
      const arrivalDay = t0Day + intBetween(rng, -90, 30);
      const createdMs = Math.min(t0 - 60_000, arrivalDay * DAY_MS + 8 * HOUR_MS - Math.floor(rng() * 20 * DAY_MS));
      const cancelled = chance(rng, 0.08);
      const cancelledMs = Math.min(t0, createdMs + 3_600_000);
      const complimentary = chance(rng, 0.25);
      const state = new BookingState(
        id,
        `${dayString(arrivalDay).replaceAll('-', '')}-${content.id}-${id}`,
        mix(this.seed, id, 0x3a1c),
        arrivalDay,
        createdMs,
        cancelled ? cancelledMs : createdMs,
        0,
        0,
        cancelled ? 'Cancelled' : 'Active',
        cancelled ? cancelledMs : 0,
      );
      const r = new PmsRes(id, state, true);
      r.complimentary = complimentary;
      all.push(r);
    }
    for (const r of all) {
      r.asOfMs = t0;
      this.reshape(content, r);
      pp.byNumber.set(r.number, r);
      pp.byKey.set(r.key, r);
    }
    this.buildRooms(pp, all, t0Day);
    for (const r of all) {
      r.modifiedMs = Math.max(r.source.modifiedMs, this.lastAutoEvent(pp, r));
      if (r.storageUpdatedMs !== undefined) r.storageUpdatedMs = r.modifiedMs;
    }
    pp.order = all.sort(compareRes);
    pp.blocks = this.buildBlocks(pp, t0);
    return pp;
  }

  /** Caches the nights and room types of the reservation's stays (from its booking's current payload). */
  private reshape(content: PropertyContent, r: PmsRes): BookingPayload {
    const p = deriveBooking(content, r.source);
    r.nights = p.roomStays[0]?.dailyRates.length ?? 1;
    r.roomTypes = p.roomStays.map((rs) => content.roomTypes.findIndex((rt) => rt.id === rs.roomType.id));
    return p;
  }

  /**
   * Rooms per room type: as many as the most stays of that type on one night need, plus some
   * spare, assigned greedily (earliest arrival first) so that no room holds two stays on a
   * night. Some future stays keep no room yet.
   */
  private buildRooms(pp: PmsProperty, all: readonly PmsRes[], t0Day: number): void {
    const content = pp.store.content;
    const perType = content.roomTypes.map(() => [] as { from: number; to: number; r: PmsRes; stay: number }[]);
    for (const r of all) {
      r.rooms = r.roomTypes.map(() => -1);
      if (r.cancelled) continue;
      r.roomTypes.forEach((t, stay) => perType[t]!.push({ from: r.source.arrivalDay, to: r.source.arrivalDay + r.nights, r, stay }));
    }
    const rng = mulberry32(mix(this.seed, hashString(content.id), 0x4007));
    let seq = 0;
    content.roomTypes.forEach((rt, t) => {
      const stays = perType[t]!.sort((a, b) => a.from - b.from || a.to - b.to || a.r.key - b.r.key || a.stay - b.stay);
      // busy: [free from day, room]; free: [room, room], the lowest room first.
      const busy = new MinHeap();
      const free = new MinHeap();
      let needed = 0;
      const local: number[] = [];
      for (const s of stays) {
        while (busy.size > 0 && busy.peek()![0] <= s.from) {
          const room = busy.pop()![1];
          free.push([room, room]);
        }
        const room = free.size > 0 ? free.pop()![1] : needed++;
        local.push(room);
        busy.push([s.to, room]);
      }
      const count = needed + 2 + Math.ceil(needed * 0.1) + intBetween(rng, 0, 2);
      const first = pp.rooms.length;
      for (let k = 0; k < count; k++) {
        const floor = Math.floor(seq / ROOMS_PER_FLOOR) + 1;
        const n = (seq % ROOMS_PER_FLOOR) + 1;
        seq++;
        pp.roomsByType[t]!.push(pp.rooms.length);
        pp.rooms.push({
          id: `4505${pad12(pp.index * 100_000 + seq)}`,
          displayName: `${floor}${String(n).padStart(2, '0')}`,
          roomTypeId: rt.id,
          floorId: String(floor),
        });
        pp.occupied.push([]);
      }
      stays.forEach((s, i) => {
        // Not assigned yet: some stays arriving more than three days after the start.
        if (s.from > t0Day + 3 && mix(s.r.key, s.stay, 0x7a) % 100 < 35) return;
        const room = first + local[i]!;
        s.r.rooms[s.stay] = room;
        pp.occupied[room]!.push({ from: s.from, to: s.to, key: s.r.key, stay: s.stay });
      });
    });
  }

  private buildBlocks(pp: PmsProperty, t0: number): BlockState[] {
    const content = pp.store.content;
    const rng = mulberry32(mix(this.seed, hashString(content.id), 0xb10c));
    const t0Day = Math.floor(t0 / DAY_MS);
    const count = intBetween(rng, 2, 4);
    const blocks: BlockState[] = [];
    for (let k = 0; k < count; k++) {
      const id = String(12_000 + pp.index * 100 + k + 1);
      const firstDay = t0Day + intBetween(rng, -20, 90);
      const lastDay = firstDay + intBetween(rng, 2, 9);
      const pool = [...content.roomTypes];
      const types = Array.from({ length: intBetween(rng, 1, 2) }, () => pool.splice(Math.floor(rng() * pool.length), 1)[0]!);
      const plans = content.ratePlans.slice(0, intBetween(rng, 1, Math.min(2, content.ratePlans.length)));
      const roll = rng();
      const blockStatus: InventoryBlock['blockStatus'] = roll < 0.7 ? 'Active' : roll < 0.9 ? 'Inquiry' : 'Cancelled';
      const createdMs = t0 - intBetween(rng, 5, 60) * DAY_MS - Math.floor(rng() * DAY_MS);
      const updatedMs = createdMs + Math.floor(rng() * (t0 - createdMs));
      const cutoff = chance(rng, 0.7) ? dayString(firstDay - 7) : null;
      // About 15 EUR in the property's currency (the first room type's rate tells the unit).
      const servicesPrice = chance(rng, 0.5) ? 15 * Math.max(1, Math.round(content.roomTypes[0]!.baseRateCents / 7000)) : null;
      const dailyItems: InventoryBlock['dailyItems'] = [];
      for (let day = firstDay; day <= lastDay; day++) {
        for (const rt of types) {
          const blocked = intBetween(rng, 2, 8);
          dailyItems.push({
            date: dayString(day),
            roomTypeCode: ROOM_TYPE_CODES[rt.categoryCode] ?? rt.categoryCode.slice(0, 3).toUpperCase(),
            blockedCount: blocked,
            realizedCount: chance(rng, 0.1) ? null : intBetween(rng, 0, blocked),
            cutoffDate: cutoff,
            pricing: { oneAdultPrice: money(Math.round(rt.baseRateCents * 0.8)), servicesPrice, currencyCode: content.currency },
          });
        }
      }
      const block: InventoryBlock = {
        id,
        propertyId: content.id,
        pmsSideId: `BLK-${id}`,
        pmsSideCode: `GRP-${dayString(firstDay).slice(0, 4)}-${k + 1}`,
        updateDateTime: formatUtcSeconds(updatedMs),
        pmsSideCreateDateTime: localSeconds(createdMs, content.timeZone),
        pmsSideCancelDateTime: blockStatus === 'Cancelled' ? localSeconds(updatedMs, content.timeZone) : null,
        ratePlanCodes: plans.map((rp) => RATE_PLAN_CODES[rp.name] ?? rp.id),
        blockStatus,
        pmsBlockStatus: blockStatus === 'Active' ? 'DEF' : blockStatus === 'Inquiry' ? 'TEN' : 'CXL',
        dailyItems,
      };
      blocks.push({ block, firstDay, lastDay, roomTypeCodes: new Set(dailyItems.map((d) => d.roomTypeCode ?? '')) });
    }
    return blocks;
  }

  // ---- derived stay facts ----

  private plannedIn(content: PropertyContent, r: PmsRes): string {
    return `${dayString(r.source.arrivalDay)}T${content.checkInTime}`;
  }

  private plannedOut(content: PropertyContent, r: PmsRes): string {
    return `${dayString(r.source.arrivalDay + r.nights)}T${content.checkOutTime}`;
  }

  /** Actual check-in and check-out (property-local) of stay `i`, null until they happened. */
  private actuals(content: PropertyContent, r: PmsRes, i: number): StayOverride {
    if (r.cancelled) return { actualIn: null, actualOut: null };
    const o = r.overrides?.[i];
    if (o) return { ...o };
    // Automatic: around the planned times, as of r.asOfMs.
    if (r.source.arrivalDay * DAY_MS - 2 * DAY_MS > r.asOfMs) return { actualIn: null, actualOut: null };
    const rng = mulberry32(mix(r.source.seed, i, 0xac7));
    const actualIn = addMinutes(this.plannedIn(content, r), intBetween(rng, -60, 240));
    const actualOut = addMinutes(this.plannedOut(content, r), intBetween(rng, -180, 45));
    const far = (r.source.arrivalDay + r.nights) * DAY_MS + 2 * DAY_MS < r.asOfMs;
    if (far) return { actualIn, actualOut };
    if (localToUtcMs(actualIn, content.timeZone) > r.asOfMs) return { actualIn: null, actualOut: null };
    if (localToUtcMs(actualOut, content.timeZone) > r.asOfMs) return { actualIn, actualOut: null };
    return { actualIn, actualOut };
  }

  /** The latest automatic check-in or check-out of the reservation (UTC ms), 0 when none. */
  private lastAutoEvent(pp: PmsProperty, r: PmsRes): number {
    const content = pp.store.content;
    let last = 0;
    r.roomTypes.forEach((_, i) => {
      const a = this.actuals(content, r, i);
      const at = a.actualOut ?? a.actualIn;
      if (at !== null) last = Math.max(last, localToUtcMs(at, content.timeZone));
    });
    return last;
  }

  // ---- served objects ----

  /** The served reservation. */
  reservation(pp: PmsProperty, r: PmsRes, p: BookingPayload = deriveBooking(pp.store.content, r.source)): PmsReservation {
    const content = pp.store.content;
    const fixed = mulberry32(mix(r.source.seed, 0x9a5));
    const language = pick(fixed, LANGUAGES);
    const visitPurpose = chance(fixed, 0.8) ? { ...pick(fixed, VISIT_PURPOSES) } : null;
    const commentRoll = fixed();
    const customerComment = commentRoll < 0.5 ? '' : commentRoll < 0.6 ? null : pick(fixed, COMMENTS);
    const groupName = chance(fixed, 0.04) ? pick(fixed, GROUPS) : undefined;
    const company = chance(fixed, 0.1) ? pick(fixed, COMPANIES) : undefined;
    const stayCurrency = chance(fixed, 0.5) ? null : p.currencyCode;
    const withDeposit = chance(fixed, 0.2);
    const unconfirmed = chance(fixed, 0.04);
    const commissionRoll = fixed();
    const source = r.walkIn ? undefined : p.source;
    const channel = source?.type === 'Channel';

    const cancelled = r.cancelled;
    const customer = this.person(pp, r, 0, p);
    let anyArrived = false;
    const roomStays: PmsRoomStay[] = p.roomStays.map((rs, i) => {
      const { actualIn, actualOut } = this.actuals(content, r, i);
      if (actualIn !== null) anyArrived = true;
      const adults = rs.guestCount.adultCount;
      const children = rs.guestCount.childAges?.length ?? 0;
      const others = Math.max(0, Math.min(2, adults + children - (i === 0 ? 1 : 0)));
      const guestsIds = [...(i === 0 ? [customer.pmsPersonId] : []), ...Array.from({ length: others }, (_, g) => personId(r.key, 1 + 3 * i + g))];
      const amountCents = r.complimentary ? 0 : cents(rs.total.priceBeforeTax);
      const depositCents = withDeposit && amountCents > 0 ? Math.round(amountCents * 0.3) : 0;
      const { dueCents: payCents, refundCents } = this.balance(r, i, cents(rs.total.priceAfterTax), depositCents, actualOut);
      const amount = (c: number): PmsAmount => ({ value: money(c), currencyCode: stayCurrency });
      const room = r.rooms[i] ?? -1;
      const stay: PmsRoomStay = {
        pmsRoomStayId: roomStayId(r.key, i),
        roomId: room >= 0 ? pp.rooms[room]!.id : null,
        roomTypeId: rs.roomType.id,
        guestsIds,
        checkInDateTime: this.plannedIn(content, r),
        checkOutDateTime: this.plannedOut(content, r),
        actualCheckInDateTime: actualIn,
        actualCheckOutDateTime: actualOut,
        status: cancelled ? 'Cancelled' : actualOut !== null ? 'CheckedOut' : actualIn !== null ? 'CheckedIn' : 'New',
        guestCount: { adults, children },
        ...(depositCents > 0 ? { deposit: { value: money(depositCents), currencyCode: p.currencyCode } } : {}),
        totalPrice: { amount: amount(amountCents), payAmount: amount(payCents), refundAmount: amount(refundCents) },
        amenities: r.complimentary ? [] : (rs.services ?? []).map((s) => ({ name: s.name })),
      };
      return stay;
    });
    const totalCents = r.complimentary ? 0 : cents(p.total.priceBeforeTax);
    const reservation: PmsReservation = {
      number: r.number,
      customerLanguageCode: language,
      visitPurpose,
      customerComment,
      modifyDateTime: formatUtcSeconds(r.modifiedMs),
      ...(groupName !== undefined ? { groupName } : {}),
      currencyCode: p.currencyCode,
      customer,
      ...(company !== undefined ? { customerCompany: { id: companyId(pp.index, company), name: company, type: 'Customer' as const } } : {}),
      creationSource: creationSource(source),
      channelInformation: channel ? { channelName: CHANNEL_NAMES[source.code ?? ''] ?? source.code ?? null } : null,
      reservationStatus: cancelled ? 'Cancelled' : unconfirmed && !anyArrived ? 'Unconfirmed' : 'Confirmed',
      roomStays,
    };
    if (channel && commissionRoll < 0.5) {
      const viaPms = commissionRoll < 0.3;
      reservation.agentCommission = {
        percent: viaPms ? 15 : null,
        calculationSource: viaPms ? 'Pms' : 'Ota',
        amount: { value: money(Math.round(totalCents * (viaPms ? 0.15 : 0.18))), currencyCode: p.currencyCode },
        discount: { value: 0, currencyCode: p.currencyCode },
      };
    }
    return reservation;
  }

  /** Profile of person `slot` of a reservation (slot 0: the customer, built from the booking's customer). */
  private person(pp: PmsProperty, r: PmsRes, slot: number, p: BookingPayload): PmsPerson {
    const rng = mulberry32(mix(r.source.seed, slot, 0x9e75));
    let firstName = pick(rng, FIRST_NAMES);
    let lastName = pick(rng, LAST_NAMES);
    if (slot === 0 && p.customer) {
      firstName = p.customer.firstName ?? firstName;
      lastName = p.customer.lastName ?? lastName;
    } else if (slot > 0) {
      const stay = Math.floor((slot - 1) / 3);
      const guest = p.roomStays[stay]?.guests?.[((slot - 1) % 3) + 1];
      if (guest) {
        firstName = guest.firstName ?? firstName;
        lastName = guest.lastName ?? lastName;
      }
    }
    const gender = FEMALE.has(firstName) ? 'Female' : MALE.has(firstName) ? 'Male' : 'Unknown';
    const birthDate = chance(rng, 0.3)
      ? null
      : `${intBetween(rng, 1950, 2005)}-${String(intBetween(rng, 1, 12)).padStart(2, '0')}-${String(intBetween(rng, 1, 28)).padStart(2, '0')}`;
    const middleName = chance(rng, 0.1) ? 'M.' : null;
    const citizenship = chance(rng, 0.1) ? null : pick(rng, CITIZENSHIPS);
    const vip = chance(rng, 0.1);
    const withEmail = chance(rng, slot === 0 ? 0.85 : 0.3);
    const withPhone = chance(rng, slot === 0 ? 0.6 : 0.2);
    const phone = `+${intBetween(rng, 1, 99)}${String(Math.floor(rng() * 1e9)).padStart(9, '0')}`;
    return {
      pmsPersonId: personId(r.key, slot),
      personName: { lastName, firstName, middleName },
      birthDate,
      citizenship,
      status: vip ? { id: '1', displayName: 'VIP' } : { id: '0', displayName: 'Not selected' },
      emails: withEmail ? [{ address: `${firstName}.${lastName}.${r.key}@example.com`.toLowerCase() }] : [],
      phones: withPhone ? [{ phoneNumber: phone }] : [],
      gender,
    };
  }

  /**
   * The loyalty cards of a person the property knows (guestOf), or undefined: a customer holds
   * the cards of the booking's guarantee (its loyalty programme as programId); one guest in
   * twenty holds a card of the hotel's own programme.
   */
  loyaltyCardsOf(pp: PmsProperty, pmsPersonId: string): PmsLoyaltyCard[] | undefined {
    if (!this.guestOf(pp, pmsPersonId)) return undefined;
    const n = Number(pmsPersonId.slice(4));
    const r = pp.byKey.get(Math.floor(n / 10))!;
    const slot = n % 10;
    if (slot === 0) {
      const p = deriveBooking(pp.store.content, r.source);
      return (p.guaranteeInfo.loyalty?.cards ?? []).map((c) => ({ programId: c.loyaltySystemId, cardNumber: c.cardNumber }));
    }
    const rng = mulberry32(mix(r.source.seed, slot, 0x10ca));
    return chance(rng, 0.05) ? [{ programId: `HOTEL-${pp.index}`, cardNumber: String(77000000 + Math.floor(rng() * 999999)) }] : [];
  }

  /** The guest profile served for an id, when a reservation of the property references it. */
  guestOf(pp: PmsProperty, pmsPersonId: string): PmsPerson | undefined {
    const m = /^4503(\d{12})$/.exec(pmsPersonId);
    if (!m) return undefined;
    const n = Number(m[1]);
    const r = pp.byKey.get(Math.floor(n / 10));
    if (!r) return undefined;
    const p = deriveBooking(pp.store.content, r.source);
    const served = this.reservation(pp, r, p);
    if (!served.roomStays.some((rs) => rs.guestsIds.includes(pmsPersonId)) && served.customer?.pmsPersonId !== pmsPersonId) return undefined;
    return this.person(pp, r, n % 10, p);
  }

  /** The integration-storage booking of a reservation that has one. */
  storageBooking(pp: PmsProperty, r: PmsRes): IntegrationStorageBooking {
    const content = pp.store.content;
    const tz = content.timeZone;
    const p = deriveBooking(content, r.source);
    const served = this.reservation(pp, r, p);
    const currencyCode = p.currencyCode;
    const amount = (c: number): StorageAmount => ({ amountAfterTax: money(c), currencyCode });
    const fixed = mulberry32(mix(r.source.seed, 0x5707));
    const marketCode = pick(fixed, ['LEISURE', 'BUSINESS', 'GROUP', null]);
    const sourceOfBusiness = p.source.type === 'Channel' ? 'OTA' : p.source.type === 'BookingEngine' ? 'WEB' : p.source.type === 'PMS' ? 'PMS' : 'PHONE';
    const revenues = new Map<string, number>();
    const roomStays: StorageRoomStay[] = p.roomStays.map((rs, i) => {
      const stay = served.roomStays[i]!;
      const typeCode = this.roomTypeCode(content, rs.roomType.id);
      const block = pp.blocks.find(
        (b) => b.block.blockStatus === 'Active' && b.roomTypeCodes.has(typeCode) && r.source.arrivalDay >= b.firstDay && r.source.arrivalDay <= b.lastDay,
      );
      const taxes = spread(cents(rs.total.taxAmount), rs.dailyRates.length);
      const roomRates = rs.dailyRates.map((dr, n) => {
        const day = r.source.arrivalDay + n;
        const c = cents(dr.priceBeforeTax) + taxes[n]!;
        const date = dayString(day);
        revenues.set(date, (revenues.get(date) ?? 0) + c);
        return {
          stayDate: date,
          roomTypeIndex: 0,
          ratePlanIndex: 0,
          inventoryBlockIndex: block && day <= block.lastDay ? 0 : null,
          total: amount(c),
        };
      });
      const room = stay.roomId === null ? undefined : pp.rooms.find((x) => x.id === stay.roomId);
      const ratePlan = content.ratePlans.find((rp) => rp.id === rs.ratePlans[0]?.id);
      return {
        index: i,
        sourceOfBusiness,
        marketCode,
        roomTypes: [{ index: 0, pmsSideCode: typeCode, pmsSideRoomNumber: room?.displayName ?? null }],
        ratePlans: [{ index: 0, pmsSideCode: ratePlan ? (RATE_PLAN_CODES[ratePlan.name] ?? ratePlan.id) : null }],
        inventoryBlocks: block ? [{ index: 0, pmsSideCode: block.block.pmsSideCode }] : [],
        roomRates,
        services: (rs.services ?? []).map((s) => ({
          quantity: 1,
          pmsSideCode: SERVICE_CODES[s.name] ?? null,
          name: s.name,
          startDate: dayString(r.source.arrivalDay),
          durationStayUnits: r.nights,
          total: amount(cents(s.total?.priceAfterTax ?? 0)),
          inclusive: s.inclusive,
        })),
        guestCounts: [
          { ageQualifyingCode: 'AdultBed' as const, count: rs.guestCount.adultCount, age: null },
          ...(rs.guestCount.childAges ?? []).map((age) => ({ ageQualifyingCode: 'ChildBandBed' as const, count: 1, age })),
        ],
        stayDates: {
          arrivalDateTime: `${stay.checkInDateTime}:00`,
          departureDateTime: `${stay.checkOutDateTime}:00`,
          actualCheckInDateTime: stay.actualCheckInDateTime === null ? null : `${stay.actualCheckInDateTime}:00`,
          actualCheckOutDateTime: stay.actualCheckOutDateTime === null ? null : `${stay.actualCheckOutDateTime}:00`,
        },
      };
    });
    const statuses = served.roomStays.map((s) => s.status);
    const status = r.cancelled
      ? 'Cancelled'
      : statuses.some((s) => s === 'CheckedIn')
        ? 'InHouse'
        : statuses.length > 0 && statuses.every((s) => s === 'CheckedOut')
          ? 'CheckedOut'
          : 'Confirmed';
    const updatedMs = r.storageUpdatedMs ?? r.modifiedMs;
    const cancelledMs = r.cancelledMs || r.source.cancelledMs || r.modifiedMs;
    const booking: IntegrationStorageBooking = {
      id: String(r.key - STORAGE_ID_OFFSET),
      status,
      uniqueIds: [
        { id: r.number, idContext: 'External' },
        { id: String(r.key), idContext: 'Pms' },
      ],
      bookingChannels:
        p.source.type === 'Channel'
          ? [{ code: p.source.code ?? null, codeType: 'Pms', name: served.channelInformation?.channelName ?? null, bookingChannelType: 'TravelAgent' }]
          : [],
      roomStays,
      total: amount(cents(p.total.priceAfterTax)),
      guaranteeInfo: { guaranteeCode: p.guaranteeInfo.guarantees?.[0]?.paymentMethod === 'BankCard' ? 'CC' : null },
      propertyId: content.id,
      pmsSideUpdateDateTime: localSeconds(updatedMs, tz),
      pmsSideCreateDateTime: localSeconds(r.source.createdMs, tz),
      updateDateTime: formatUtcSeconds(updatedMs),
      roomRevenues: [...revenues.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([stayDate, c]) => ({ stayDate, amount: amount(c) })),
    };
    if (status === 'Cancelled') {
      // Key order as the schema lists it: cancellationInfo before roomRevenues.
      const { roomRevenues, ...rest } = booking;
      return {
        ...rest,
        cancellationInfo: { pmsSideCancelDateTime: localSeconds(cancelledMs, tz), cancelReason: chance(fixed, 0.5) ? 'Guest request' : null },
        roomRevenues,
      };
    }
    return booking;
  }

  private roomTypeCode(content: PropertyContent, roomTypeId: string): string {
    const rt = content.roomTypes.find((x) => x.id === roomTypeId);
    if (!rt) return roomTypeId;
    return ROOM_TYPE_CODES[rt.categoryCode] ?? rt.categoryCode.slice(0, 3).toUpperCase();
  }

  /** The stays of a reservation as the occupancy statistics count them. */
  private occupancyStays(pp: PmsProperty, r: PmsRes): OccupancyStay[] {
    const content = pp.store.content;
    const p = deriveBooking(content, r.source);
    const createdDate = localDate(r.source.createdMs, content.timeZone);
    return p.roomStays.map((rs: RoomStay) => {
      const n = rs.dailyRates.length;
      let meal = 0;
      let other = 0;
      for (const s of rs.services ?? []) {
        if (s.kind === 'Meal') meal += cents(s.total?.priceBeforeTax ?? 0);
        else other += cents(s.total?.priceBeforeTax ?? 0);
      }
      const meals = spread(meal, n);
      const others = spread(other, n);
      const early = cents(rs.extraStayCharges?.earlyArrival?.total.priceBeforeTax ?? 0);
      const late = cents(rs.extraStayCharges?.lateDeparture?.total.priceBeforeTax ?? 0);
      const nights = rs.dailyRates.map((dr, i) => {
        if (r.complimentary) return { room: 0, meal: 0, other: 0 };
        const extra = (i === 0 ? early : 0) + (i === n - 1 ? late : 0);
        return { room: dr.priceBeforeTax, meal: money(meals[i]!), other: money(others[i]! + extra) };
      });
      return {
        number: r.number,
        arrivalDate: dayString(r.source.arrivalDay),
        departureDate: dayString(r.source.arrivalDay + n),
        cancelled: r.cancelled,
        createdDate,
        adults: rs.guestCount.adultCount,
        children: rs.guestCount.childAges?.length ?? 0,
        nights,
      };
    });
  }

  /**
   * What a room stay's guest still owes (payAmount, "amount due for payment") and what is owed
   * back to them (refundAmount), from its state: a stay ahead or in house owes its price less
   * the deposit when one was taken; a checked-out stay has paid, except one in eight, which
   * owes it all (the receivables); a cancelled stay owes nothing and gets its deposit back.
   */
  private balance(r: PmsRes, i: number, afterTaxCents: number, depositCents: number, actualOut: string | null): { dueCents: number; refundCents: number } {
    if (r.complimentary) return { dueCents: 0, refundCents: 0 };
    if (r.cancelled) return { dueCents: 0, refundCents: depositCents };
    if (actualOut !== null) return { dueCents: mix(r.source.seed, 0xd0e + i) % 8 === 0 ? afterTaxCents : 0, refundCents: 0 };
    return { dueCents: afterTaxCents - depositCents, refundCents: 0 };
  }

  /**
   * The invoices of a reservation (GET …/reservations/{number}/invoices), derived from it as
   * served, so that a newer version has newer invoices: one per room stay, or one for the
   * whole group (pmsRoomStayId null) when the reservation has a group name; none when
   * cancelled. Each holds the stay's accommodation (nights) and its services that are not
   * included in the rate, each at its price after tax (an item's total is documented "tax
   * INCLUDED", whatever `vat.included` says: VAT_INCLUDED); every fifth reservation a
   * transfer, which every tenth bills in another currency (transferCurrency): the items of one
   * invoice in two currencies. The payer is the customer company, else the customer.
   */
  invoices(pp: PmsProperty, r: PmsRes): PmsInvoice[] {
    const served = this.reservation(pp, r);
    if (served.reservationStatus === 'Cancelled') return [];
    const p = deriveBooking(pp.store.content, r.source);
    const percent = VAT_PERCENTS[pp.index % VAT_PERCENTS.length]!;
    const vat = { applicable: percent > 0, included: VAT_INCLUDED[pp.index % VAT_INCLUDED.length]!, percent };
    const name = served.customer?.personName;
    const payerName = served.customerCompany?.name ?? ([name?.firstName, name?.lastName].filter(Boolean).join(' ') || null);
    const currencyCode = served.currencyCode;
    const itemsOf = (i: number): PmsInvoiceItem[] => {
      const items: PmsInvoiceItem[] = [
        {
          accountingCode: 'ROOM',
          name: 'Accommodation',
          kind: 'RoomType',
          total: { value: r.complimentary ? 0 : (p.roomStays[i]?.total.priceAfterTax ?? 0), currencyCode },
          vat,
          quantity: { value: r.nights, unit: 'Nights' },
        },
      ];
      for (const svc of r.complimentary ? [] : (p.roomStays[i]?.services ?? [])) {
        if (svc.inclusive || !svc.total) continue;
        items.push({
          accountingCode: SERVICE_CODES[svc.name] ?? 'SERVICE',
          name: svc.name,
          kind: 'Option',
          total: { value: svc.total.priceAfterTax, currencyCode },
          vat,
          quantity: { value: 1, unit: 'Pcs' },
        });
      }
      if (i === 0 && r.key % 5 === 0 && !r.complimentary) {
        items.push({
          accountingCode: 'TRANSFER',
          name: 'Airport transfer',
          kind: 'Transfer',
          total: { value: 40, currencyCode: r.key % 10 === 0 ? transferCurrency(p.currencyCode) : currencyCode },
          vat,
          quantity: { value: 1, unit: 'Pcs' },
        });
      }
      return items;
    };
    const payer = { name: payerName };
    if (served.groupName) return [{ number: `${r.number}-G`, pmsRoomStayId: null, payer, items: served.roomStays.flatMap((_, i) => itemsOf(i)) }];
    return served.roomStays.map((stay, i) => ({
      number: `${r.number}-${String(i + 1).padStart(2, '0')}`,
      pmsRoomStayId: stay.pmsRoomStayId,
      payer,
      items: itemsOf(i),
    }));
  }

  /** The companies of a property (GET …/companies), in id order: its customer companies and its agents. */
  companies(pp: PmsProperty): PmsCompany[] {
    const customers = COMPANIES.map((name) => ({ id: companyId(pp.index, name), name, type: 'Customer' as const }));
    const agents = AGENTS.map((name, i) => ({ id: agentId(pp.index, i), name, type: 'Payer' as const }));
    return [...customers, ...agents].sort((a, b) => a.id.localeCompare(b.id));
  }

  // ---- truth and queries ----

  reservations(propertyId: string): PmsReservation[] {
    const pp = this.mustProperty(propertyId);
    return pp.order.map((r) => this.reservation(pp, r));
  }

  invoicesOf(propertyId: string, number: string): PmsInvoice[] | undefined {
    const pp = this.mustProperty(propertyId);
    const r = pp.byNumber.get(number);
    return r && this.invoices(pp, r);
  }

  loyaltyCards(propertyId: string, pmsPersonId: string): PmsLoyaltyCard[] | undefined {
    return this.loyaltyCardsOf(this.mustProperty(propertyId), pmsPersonId);
  }

  companiesOf(propertyId: string): PmsCompany[] {
    return this.companies(this.mustProperty(propertyId));
  }

  reservationByNumber(propertyId: string, number: string): PmsReservation | undefined {
    const pp = this.mustProperty(propertyId);
    const r = pp.byNumber.get(number);
    return r && this.reservation(pp, r);
  }

  guest(propertyId: string, pmsPersonId: string): PmsPerson | undefined {
    return this.guestOf(this.mustProperty(propertyId), pmsPersonId);
  }

  rooms(propertyId: string): PmsRoom[] {
    return this.mustProperty(propertyId).rooms.map((r) => ({ ...r }));
  }

  occupancyInput(propertyId: string, firstDay?: number, lastDay?: number): OccupancyInput {
    const pp = this.mustProperty(propertyId);
    const stays: OccupancyStay[] = [];
    for (const r of pp.order) {
      // Only stays that touch [firstDay, lastDay] can count; the others are left out when a range is given.
      if (firstDay !== undefined && r.source.arrivalDay + r.nights <= firstDay) continue;
      if (lastDay !== undefined && r.source.arrivalDay > lastDay) continue;
      stays.push(...this.occupancyStays(pp, r));
    }
    const content = pp.store.content;
    return { propertyId: content.id, currencyCode: content.currency, propertyRoomCount: pp.rooms.length, stays };
  }

  dailyOccupancy(propertyId: string, startDate: string, endDate: string, otbDate?: string): DailyOccupancyReport {
    const input = this.occupancyInput(propertyId, dayNumber(startDate), dayNumber(endDate));
    return computeDailyOccupancy(input, startDate, endDate, otbDate);
  }

  storageBookings(propertyId: string): IntegrationStorageBooking[] {
    const pp = this.mustProperty(propertyId);
    return pp.order
      .filter((r) => r.storageUpdatedMs !== undefined)
      .sort((a, b) => a.key - b.key)
      .map((r) => this.storageBooking(pp, r));
  }

  storageBookingById(propertyId: string, id: string): IntegrationStorageBooking | undefined {
    const pp = this.mustProperty(propertyId);
    if (!/^\d{1,15}$/.test(id)) return undefined;
    const r = pp.byKey.get(Number(id) + STORAGE_ID_OFFSET);
    return r && r.storageUpdatedMs !== undefined && !r.walkIn ? this.storageBooking(pp, r) : undefined;
  }

  blocks(propertyId: string): InventoryBlock[] {
    return this.mustProperty(propertyId).blocks.map((b) => structuredClone(b.block));
  }

  blockById(propertyId: string, id: string): InventoryBlock | undefined {
    const b = this.mustProperty(propertyId).blocks.find((x) => x.block.id === id);
    return b && structuredClone(b.block);
  }

  // ---- rooms by type ----

  /**
   * GET obtain-accommodation-inventory: the PMS rooms as a tree. Floors 1 to 3 are in the main
   * building, higher ones in the annex; a floor's id is the rooms' floorId.
   */
  accommodationInventory(propertyId: string): AccommodationInventory {
    const pp = this.mustProperty(propertyId);
    const floors = new Map<string, AccommodationInventory['buildings'][number]['floors'][number]>();
    for (const room of [...pp.rooms].sort((a, b) => Number(a.floorId) - Number(b.floorId) || (a.id < b.id ? -1 : 1))) {
      let floor = floors.get(room.floorId);
      if (!floor) floors.set(room.floorId, (floor = { id: room.floorId, name: `Floor ${room.floorId}`, rooms: [] }));
      floor.rooms.push({ id: room.id, displayName: room.displayName, roomTypeId: room.roomTypeId, floorId: room.floorId });
    }
    const buildingId = (k: number) => `4508${pad12(pp.index * 10 + k)}`;
    const main = { id: buildingId(0), name: 'Main building', floors: [] as AccommodationInventory['buildings'][number]['floors'] };
    const annex = { id: buildingId(1), name: 'Annex', floors: [] as AccommodationInventory['buildings'][number]['floors'] };
    for (const f of floors.values()) (Number(f.id) <= 3 ? main : annex).floors.push(f);
    return { buildings: annex.floors.length > 0 ? [main, annex] : [main] };
  }

  /** The PMS room type code of each content room type of the property, by room type id (several types may share one). */
  roomTypeCodes(propertyId: string): Record<string, string> {
    const content = this.mustProperty(propertyId).store.content;
    return Object.fromEntries(content.roomTypes.map((rt) => [rt.id, this.roomTypeCode(content, rt.id)]));
  }

  /** The PMS rate plan code of each content rate plan of the property, by rate plan id. */
  ratePlanCodes(propertyId: string): Record<string, string> {
    const content = this.mustProperty(propertyId).store.content;
    return Object.fromEntries(content.ratePlans.map((rp) => [rp.id, RATE_PLAN_CODES[rp.name] ?? rp.id]));
  }

  /**
   * POST inventories/search: for each requested code the PMS knows and each date, the rooms of
   * its room types (physical), those out of order, and those still free. Sold rooms are the PMS
   * room stays of reservations not cancelled on that night (walk-ins included), so that
   * physical - available - out of order is what the reservations hold. The property's rooms out
   * of order (plannedClosedRooms, as the occupancy statistics count them) go to the room types
   * in content order, each at most its rooms left free: their sum is the statistics'
   * closedRoomCount. updateDateTime: the last change of a reservation on that type and night,
   * else when the property came to be.
   */
  roomTypeInventory(propertyId: string, codes: readonly string[], startDate: string, endDate: string): DailyRoomTypeInventory[] {
    const pp = this.mustProperty(propertyId);
    const content = pp.store.content;
    const first = dayNumber(startDate);
    const days = dayNumber(endDate) - first + 1;
    const types = content.roomTypes.map((rt) => this.roomTypeCode(content, rt.id));
    const sold = types.map(() => Array.from({ length: days }, () => 0));
    const epoch = this.epochs.get(content.id) ?? 0;
    const changed = types.map(() => Array.from({ length: days }, () => epoch));
    for (const r of pp.order) {
      if (r.cancelled) continue;
      r.roomTypes.forEach((t) => {
        if (t < 0) return;
        for (let n = 0; n < r.nights; n++) {
          const i = r.source.arrivalDay + n - first;
          if (i < 0 || i >= days) continue;
          sold[t]![i]!++;
          changed[t]![i] = Math.max(changed[t]![i]!, r.modifiedMs);
        }
      });
    }
    const out: DailyRoomTypeInventory[] = [];
    const wanted = new Set(codes);
    const served = [...new Set(types)].filter((c) => wanted.has(c)).sort();
    for (let i = 0; i < days; i++) {
      const date = dayString(first + i);
      let closed = plannedClosedRooms(content.id, date, pp.rooms.length);
      const perType = types.map((_, t) => {
        const physical = pp.roomsByType[t]!.length;
        const ooo = Math.min(closed, Math.max(0, physical - sold[t]![i]!));
        closed -= ooo;
        return { physical, ooo, free: Math.max(0, physical - sold[t]![i]! - ooo), changed: changed[t]![i]! };
      });
      for (const code of served) {
        const mine = perType.filter((_, t) => types[t] === code);
        out.push({
          roomTypeCode: code,
          date,
          physicalRoomCount: mine.reduce((a, x) => a + x.physical, 0),
          availableRoomCount: mine.reduce((a, x) => a + x.free, 0),
          outOfOrderRoomCount: mine.reduce((a, x) => a + x.ooo, 0),
          updateDateTime: formatUtcSeconds(Math.max(...mine.map((x) => x.changed))),
        });
      }
    }
    return out.sort((a, b) => (a.roomTypeCode < b.roomTypeCode ? -1 : a.roomTypeCode > b.roomTypeCode ? 1 : a.date < b.date ? -1 : 1));
  }

  /**
   * GET calculate-stay-units: the nights from firstStayDate to lastStayDate (inclusive) of the
   * room stays, not cancelled, whose rate plan has the PMS code `ratePlanCode` (case-sensitive):
   * the rate plan of the storage booking's room rates, walk-ins included.
   */
  stayUnits(propertyId: string, firstStayDate: string, lastStayDate: string, ratePlanCode: string): number {
    const pp = this.mustProperty(propertyId);
    const content = pp.store.content;
    const first = dayNumber(firstStayDate);
    const last = dayNumber(lastStayDate);
    let units = 0;
    for (const r of pp.order) {
      if (r.cancelled || r.source.arrivalDay > last || r.source.arrivalDay + r.nights <= first) continue;
      const p = deriveBooking(content, r.source);
      p.roomStays.forEach((rs) => {
        const plan = content.ratePlans.find((rp) => rp.id === rs.ratePlans[0]?.id);
        if (!plan || (RATE_PLAN_CODES[plan.name] ?? plan.id) !== ratePlanCode) return;
        const from = Math.max(first, r.source.arrivalDay);
        const to = Math.min(last, r.source.arrivalDay + rs.dailyRates.length - 1);
        if (to >= from) units += to - from + 1;
      });
    }
    return units;
  }

  /** The room index of a room id of the property, or -1. */
  private roomIndex(pp: PmsProperty, roomId: string): number {
    return pp.rooms.findIndex((r) => r.id === roomId);
  }

  /**
   * Up to `size` numbers matching `q` after `after` in the search order, and whether more
   * match. A reservation matches the modify window when its modification time, in property-local
   * time truncated to the minute, is within it (bounds included); the affect window when a
   * planned stay overlaps it (check-in <= end and check-out >= start).
   */
  search(pp: PmsProperty, q: PmsSearchQuery, size: number, after?: PmsSearchPosition): { items: PmsRes[]; more: boolean } {
    const content = pp.store.content;
    const tz = content.timeZone;
    const order = pp.order;
    let i = 0;
    let highSec = Infinity;
    if (q.modify) {
      // Any zone is within 15 hours of UTC: a coarse range in UTC seconds, then the exact test.
      const margin = 15 * HOUR_MS;
      i = boundAfter(order, { sec: Math.floor((wallClockMs(q.modify[0]) - margin) / 1000), number: '' }, true);
      highSec = Math.floor((wallClockMs(q.modify[1]) + 60_000 + margin) / 1000);
    }
    if (after) i = Math.max(i, boundAfter(order, after, false));
    const room = q.roomId === undefined ? undefined : this.roomIndex(pp, q.roomId);
    const items: PmsRes[] = [];
    for (; i < order.length; i++) {
      const r = order[i]!;
      if (r.sec > highSec) break;
      if (r.cancelled !== (q.state === 'Cancelled')) continue;
      if (room !== undefined && !r.rooms.includes(room)) continue;
      if (q.modify) {
        const m = localMinute(r.modifiedMs, tz);
        if (m < q.modify[0] || m > q.modify[1]) continue;
      }
      if (q.affect && (this.plannedIn(content, r) > q.affect[1] || this.plannedOut(content, r) < q.affect[0])) continue;
      if (items.length === size) return { items, more: true };
      items.push(r);
    }
    return { items, more: false };
  }

  // ---- changes ----

  /** Moves a reservation to its new place in the order, modified at `ms`. */
  private touch(pp: PmsProperty, r: PmsRes, ms: number): void {
    const at = boundAfter(pp.order, r, true);
    if (pp.order[at] === r) pp.order.splice(at, 1);
    else {
      const k = pp.order.indexOf(r);
      if (k >= 0) pp.order.splice(k, 1);
    }
    r.modifiedMs = ms;
    pp.order.splice(boundAfter(pp.order, r, false), 0, r);
    if (r.storageUpdatedMs !== undefined) r.storageUpdatedMs = ms;
  }

  private release(pp: PmsProperty, r: PmsRes): void {
    for (const room of r.rooms) {
      if (room < 0) continue;
      const list = pp.occupied[room]!;
      for (let k = list.length - 1; k >= 0; k--) if (list[k]!.key === r.key) list.splice(k, 1);
    }
  }

  /** No stay but stay `stay` of reservation `key` (when given) holds the room on a night of [from, to). */
  private isFree(pp: PmsProperty, room: number, from: number, to: number, key = -1, stay = -1): boolean {
    return pp.occupied[room]!.every((iv) => (iv.key === key && iv.stay === stay) || iv.to <= from || iv.from >= to);
  }

  /** A free room of room type index `t` for [from, to), preferring `prefer`; -1 when none. */
  private freeRoom(pp: PmsProperty, t: number, from: number, to: number, prefer = -1, exclude = -1): number {
    if (prefer >= 0 && prefer !== exclude && pp.rooms[prefer]!.roomTypeId === pp.store.content.roomTypes[t]?.id && this.isFree(pp, prefer, from, to)) {
      return prefer;
    }
    return pp.roomsByType[t]?.find((room) => room !== exclude && this.isFree(pp, room, from, to)) ?? -1;
  }

  private assign(pp: PmsProperty, r: PmsRes, stay: number, room: number): void {
    r.rooms[stay] = room;
    if (room >= 0) pp.occupied[room]!.push({ from: r.source.arrivalDay, to: r.source.arrivalDay + r.nights, key: r.key, stay });
  }

  private payload(pp: PmsProperty, r: PmsRes): Record<string, string> {
    return { BookingNumber: r.number, PropertyId: pp.store.content.id };
  }

  /** Emits the webhook events of a change from `before` to the reservation's current state. */
  private announce(pp: PmsProperty, r: PmsRes, before: PmsReservation | undefined, after?: PmsReservation): void {
    if (!this.events.active()) return;
    const now = after ?? this.reservation(pp, r);
    for (const type of changeEvents(before, now)) this.events.emit(type, this.payload(pp, r));
    if (r.storageUpdatedMs !== undefined) this.storageEvent('pms_integration_storage:booking_changed', String(r.key - STORAGE_ID_OFFSET), pp.store.content.id);
  }

  /** An integration-storage event: the id to fetch, and the property only when asked for (PmsEventSink). */
  private storageEvent(
    type: 'pms_integration_storage:booking_changed' | 'pms_integration_storage:inventory_block_changed',
    id: string,
    propertyId: string,
  ): void {
    const payload: Record<string, string> = type === 'pms_integration_storage:booking_changed' ? { bookingId: id } : { inventoryBlockId: id };
    if (this.events.storageEventsNameProperty()) payload['propertyId'] = propertyId;
    this.events.emit(type, payload);
  }

  /** Called by the store before a booking changes or (with `b` undefined) is created. */
  beforeBookingChange(store: PropertyStore, b: BookingState | undefined): void {
    const pp = this.mustProperty(store.content.id);
    this.before = undefined;
    const r = b && pp.byKey.get(b.id);
    if (r && this.events.active()) this.before = this.reservation(pp, r);
  }

  /** Called by the store after a booking changed: the reservation follows it, as of the change. */
  afterBookingChange(store: PropertyStore, b: BookingState): void {
    const pp = this.mustProperty(store.content.id);
    const r = pp.byKey.get(b.id);
    if (!r) return;
    const before = this.before;
    this.before = undefined;
    const oldRooms = r.rooms;
    const oldTypes = r.roomTypes;
    this.release(pp, r);
    this.reshape(pp.store.content, r);
    r.overrides = undefined;
    r.cancelledMs = 0;
    r.asOfMs = b.modifiedMs;
    r.rooms = r.roomTypes.map(() => -1);
    if (!r.cancelled) {
      r.roomTypes.forEach((t, i) => {
        const prefer = oldTypes[i] === t ? (oldRooms[i] ?? -1) : -1;
        const keepUnassigned = prefer < 0 && oldTypes[i] === t && r.source.arrivalDay * DAY_MS > b.modifiedMs + 3 * DAY_MS;
        this.assign(pp, r, i, keepUnassigned ? -1 : this.freeRoom(pp, t, r.source.arrivalDay, r.source.arrivalDay + r.nights, prefer));
      });
    }
    this.touch(pp, r, b.modifiedMs);
    this.announce(pp, r, before);
  }

  /** Called by the store after it created a booking: a new reservation. */
  bookingCreated(store: PropertyStore, b: BookingState): void {
    const pp = this.mustProperty(store.content.id);
    const r = new PmsRes(b.id, b, false);
    if (hashString(b.number) % 2 === 0) r.storageUpdatedMs = b.modifiedMs;
    r.asOfMs = b.modifiedMs;
    this.reshape(pp.store.content, r);
    r.rooms = r.roomTypes.map(() => -1);
    const far = b.arrivalDay * DAY_MS > b.modifiedMs + 3 * DAY_MS && mix(b.id, 0x7a) % 100 < 35;
    if (!far) {
      r.roomTypes.forEach((t, i) => this.assign(pp, r, i, this.freeRoom(pp, t, b.arrivalDay, b.arrivalDay + r.nights)));
    }
    pp.byNumber.set(r.number, r);
    pp.byKey.set(r.key, r);
    r.modifiedMs = b.modifiedMs;
    pp.order.splice(boundAfter(pp.order, r, false), 0, r);
    this.announce(pp, r, undefined);
  }

  private mustReservation(propertyId: string, number: string): { pp: PmsProperty; r: PmsRes } {
    const pp = this.mustProperty(propertyId);
    const r = pp.byNumber.get(number);
    if (!r) throw new Error(`unknown PMS reservation ${number} of property ${propertyId}`);
    return { pp, r };
  }

  private mustStay(r: PmsRes, stayIndex: number): void {
    if (!Number.isInteger(stayIndex) || stayIndex < 0 || stayIndex >= r.roomTypes.length) {
      throw new Error(`reservation ${r.number} has no room stay ${stayIndex} (it has ${r.roomTypes.length})`);
    }
  }

  /** Applies a PMS-side change to one reservation: modified now, events announced. */
  private change(pp: PmsProperty, r: PmsRes, apply: () => void): void {
    const before = this.events.active() ? this.reservation(pp, r) : undefined;
    apply();
    this.touch(pp, r, this.now());
    if (before) this.announce(pp, r, before);
  }

  private setActuals(r: PmsRes, stayIndex: number, actuals: StayOverride): void {
    r.overrides ??= [];
    r.overrides[stayIndex] = actuals;
  }

  checkIn(propertyId: string, number: string, stayIndex: number): void {
    const { pp, r } = this.mustReservation(propertyId, number);
    this.mustStay(r, stayIndex);
    if (r.cancelled) throw new Error(`reservation ${number} is cancelled`);
    const content = pp.store.content;
    const current = this.actuals(content, r, stayIndex);
    if (current.actualIn !== null) throw new Error(`room stay ${stayIndex} of ${number} is already checked in`);
    this.change(pp, r, () => {
      this.setActuals(r, stayIndex, { actualIn: localMinute(this.now(), content.timeZone), actualOut: null });
      if ((r.rooms[stayIndex] ?? -1) < 0) {
        const t = r.roomTypes[stayIndex]!;
        this.assign(pp, r, stayIndex, this.freeRoom(pp, t, r.source.arrivalDay, r.source.arrivalDay + r.nights));
      }
    });
  }

  checkOut(propertyId: string, number: string, stayIndex: number): void {
    const { pp, r } = this.mustReservation(propertyId, number);
    this.mustStay(r, stayIndex);
    if (r.cancelled) throw new Error(`reservation ${number} is cancelled`);
    const content = pp.store.content;
    const current = this.actuals(content, r, stayIndex);
    if (current.actualIn === null || current.actualOut !== null) throw new Error(`room stay ${stayIndex} of ${number} is not checked in`);
    this.change(pp, r, () => {
      const out = localMinute(this.now(), content.timeZone);
      this.setActuals(r, stayIndex, { actualIn: current.actualIn, actualOut: out < current.actualIn! ? current.actualIn : out });
    });
  }

  changeRoom(propertyId: string, number: string, stayIndex: number, roomId?: string): void {
    const { pp, r } = this.mustReservation(propertyId, number);
    this.mustStay(r, stayIndex);
    if (r.cancelled) throw new Error(`reservation ${number} is cancelled`);
    const t = r.roomTypes[stayIndex]!;
    const current = r.rooms[stayIndex] ?? -1;
    const from = r.source.arrivalDay;
    const to = from + r.nights;
    let room: number;
    if (roomId !== undefined) {
      room = this.roomIndex(pp, roomId);
      if (room < 0) throw new Error(`unknown room ${roomId} of property ${propertyId}`);
      if (pp.rooms[room]!.roomTypeId !== pp.store.content.roomTypes[t]!.id) {
        throw new Error(`room ${roomId} is not of the stay's room type ${pp.store.content.roomTypes[t]!.id}`);
      }
      if (room === current) throw new Error(`room stay ${stayIndex} of ${number} is already in room ${roomId}`);
      if (!this.isFree(pp, room, from, to, r.key, stayIndex)) throw new Error(`room ${roomId} is taken on some night of the stay`);
    } else {
      room = this.freeRoom(pp, t, from, to, -1, current);
      if (room < 0) throw new Error(`no other free room of room type ${pp.store.content.roomTypes[t]!.id} for ${number}`);
    }
    this.change(pp, r, () => {
      if (current >= 0) {
        const list = pp.occupied[current]!;
        const k = list.findIndex((iv) => iv.key === r.key && iv.stay === stayIndex);
        if (k >= 0) list.splice(k, 1);
      }
      this.assign(pp, r, stayIndex, room);
    });
  }

  cancel(propertyId: string, number: string): void {
    const { pp, r } = this.mustReservation(propertyId, number);
    if (r.cancelled) throw new Error(`reservation ${number} is already cancelled`);
    this.change(pp, r, () => {
      r.cancelledMs = Math.max(1, this.now());
      this.release(pp, r);
      r.rooms = r.roomTypes.map(() => -1);
    });
  }

  touchStorageBooking(propertyId: string, id: string): void {
    const pp = this.mustProperty(propertyId);
    const r = /^\d{1,15}$/.test(id) ? pp.byKey.get(Number(id) + STORAGE_ID_OFFSET) : undefined;
    if (!r || r.storageUpdatedMs === undefined || r.walkIn) throw new Error(`unknown integration-storage booking ${id} of property ${propertyId}`);
    r.storageUpdatedMs = this.now();
    if (this.events.active()) this.storageEvent('pms_integration_storage:booking_changed', id, propertyId);
  }

  touchBlock(propertyId: string, id: string): void {
    const pp = this.mustProperty(propertyId);
    const b = pp.blocks.find((x) => x.block.id === id);
    if (!b) throw new Error(`unknown inventory block ${id} of property ${propertyId}`);
    const now = this.now();
    b.block.updateDateTime = formatUtcSeconds(now);
    // One more room of the block taken up (on the first day that has room for it).
    const item = b.block.dailyItems.find((d) => (d.realizedCount ?? 0) < d.blockedCount);
    if (item) item.realizedCount = (item.realizedCount ?? 0) + 1;
    if (this.events.active()) this.storageEvent('pms_integration_storage:inventory_block_changed', id, propertyId);
  }
}

function creationSource(source: BookingPayload['source'] | undefined): { id: string; name: string } {
  switch (source?.type) {
    case undefined:
    case 'PMS':
      return { id: '1', name: 'Front desk' };
    case 'Channel':
      return { id: '999', name: 'Channel' };
    case 'BookingEngine':
      return { id: '25', name: 'Online' };
    default:
      return { id: '3', name: 'Phone' };
  }
}

/**
 * The `webpms:*` events of a change of a reservation. A change that none of the event types
 * describes (prices, guests, comments) emits none: the provider has no event for it, a
 * client finds it through the search by modification time.
 */
export function changeEvents(before: PmsReservation | undefined, after: PmsReservation): PmsEventType[] {
  const types = new Set<PmsEventType>();
  if (!before) return ['webpms:create_booking'];
  const wasCancelled = before.reservationStatus === 'Cancelled';
  const isCancelled = after.reservationStatus === 'Cancelled';
  if (!wasCancelled && isCancelled) return ['webpms:cancel_booking'];
  if (wasCancelled && !isCancelled) return ['webpms:create_booking'];
  if (after.roomStays.length > before.roomStays.length) types.add('webpms:add_room_group_booking');
  if (after.roomStays.length < before.roomStays.length) types.add('webpms:delete_room_group_booking');
  after.roomStays.forEach((s, i) => {
    const o = before.roomStays[i];
    if (!o) return;
    if (s.checkInDateTime !== o.checkInDateTime) types.add('webpms:change_check_in_datetime');
    if (s.checkOutDateTime !== o.checkOutDateTime) types.add('webpms:change_check_out_datetime');
    if (s.roomId !== o.roomId && s.roomId !== null) types.add('webpms:change_room');
    if (o.actualCheckInDateTime === null && s.actualCheckInDateTime !== null) types.add('webpms:check_in');
    if (o.actualCheckInDateTime !== null && s.actualCheckInDateTime === null) types.add('webpms:cancel_check_in');
    if (o.actualCheckOutDateTime === null && s.actualCheckOutDateTime !== null) types.add('webpms:check_out');
    if (o.actualCheckOutDateTime !== null && s.actualCheckOutDateTime === null) types.add('webpms:cancel_check_out');
  });
  return [...types];
}

export type { PmsProperty, PmsRes };
