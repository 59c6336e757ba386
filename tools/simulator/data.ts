/**
 * The simulator's data: per-property content and bookings. A booking is kept as a compact
 * state (ids, times, status, counters, a seed); its details payload is derived from
 * (seed, variant) on demand, so 200,000 bookings take a few tens of MB and `bookings()`
 * returns exactly what GET details serves.
 */
import { compareIds, contentDetails, emptyEdits, propertyInfo, type ContentEdits } from './content.js';
import { chance, hashString, intBetween, mix, mulberry32, pick, type Rng } from './random.js';
import type {
  ContentPropertyInfo,
  BookingPayload,
  BookingService,
  BookingStatus,
  BookingSummary,
  Discount,
  ExtraStayDetails,
  PropertyContent,
  RoomStay,
  RoomStayService,
  Total,
} from './types.js';

/** Earliest instant the provider accepts for lastModification and continue tokens. */
export const EPOCH_2009_MS = Date.UTC(2009, 0, 1);
/** Initial bookings are created from this day on. */
const FIRST_CREATED_MS = Date.UTC(2009, 0, 2);
const DAY_MS = 86_400_000;

/** Compact state of one booking; everything else is derived. */
export class BookingState {
  constructor(
    readonly id: number,
    readonly number: string,
    readonly seed: number,
    /** Arrival date as days since 1970-01-01 (property-local calendar date). */
    readonly arrivalDay: number,
    readonly createdMs: number,
    public modifiedMs: number,
    /** Counts every change (status or content). */
    public version: number,
    /** Counts content changes (prices, guests, room stays); the payload derives from it. */
    public variant: number,
    public status: BookingStatus,
    /** When the booking was cancelled, 0 when it is not. */
    public cancelledMs: number,
  ) {}

  /**
   * Detail requests for this booking since its last change (creation or mutation), whatever
   * their answer; the server's replica-lag fault compares it with `Faults.replicaLag404s`.
   */
  detailReadsSinceChange = 0;

  /** What amend() changed on top of the generated content (Simulator.amendBooking). */
  amended: Amended = { dayShift: 0, nightsDelta: 0, roomTypeShift: 0, nightPriceDeltaCents: 0 };

  /** The booking as it was before its last change (the server's stale-read fault serves it), null before any. */
  previous: BookingState | null = null;

  /** A copy of the state a payload derives from, without its own previous version. */
  copy(): BookingState {
    const c = new BookingState(
      this.id,
      this.number,
      this.seed,
      this.arrivalDay,
      this.createdMs,
      this.modifiedMs,
      this.version,
      this.variant,
      this.status,
      this.cancelledMs,
    );
    c.amended = { ...this.amended };
    return c;
  }
}

/** Changes a test makes to a booking, on top of its generated content. */
export interface Amended {
  /** Days every stay moves (a moved booking). */
  dayShift: number;
  /** Nights added to (negative: taken from) every stay, at least one night left. */
  nightsDelta: number;
  /** The first room stay's room type: this many places further in the property's list (an upgrade). */
  roomTypeShift: number;
  /** Added to every night of the first room stay (a re-price). */
  nightPriceDeltaCents: number;
}

/** What Simulator.amendBooking can do to a booking. */
export type BookingAmendment = 'reprice' | 'move' | 'upgrade' | 'shorten' | 'cancel' | 'reinstate';

export interface PropertyStore {
  content: PropertyContent;
  /** Ordered by (modifiedMs, id): the order of the summaries stream. */
  order: BookingState[];
  byNumber: Map<string, BookingState>;
  /** Test edits of the served content (the bookings keep using `content` as generated). */
  edits: ContentEdits;
  /** The served property (propertyInfo of content and edits); dropped on every edit. */
  served?: ContentPropertyInfo;
}

function newStore(content: PropertyContent): PropertyStore {
  return { content, order: [], byNumber: new Map(), edits: emptyEdits() };
}

/** The property as the content endpoints serve it (cached until the next edit). */
export function servedProperty(store: PropertyStore): ContentPropertyInfo {
  store.served ??= propertyInfo(store.content, store.edits);
  return store.served;
}

/** Position of a summaries cursor: after MillisecondsFrom, or at it and not in BookingIds. */
export interface Cursor {
  ms: number;
  ids: number[];
}

export interface PageResult {
  items: BookingState[];
  cursor: Cursor;
  hasMoreData: boolean;
}

/** `YYYY-MM-DDTHH:mm:ssZ`, truncated to the second as the provider emits. */
export function formatUtcSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19) + 'Z';
}

function formatDay(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** A room stay service as the provider lists it: untaxed, priced in cents. */
function serviceLine(
  svc: { id: string; name: string; description: string },
  cents: number,
  inclusive: boolean,
  kind: RoomStayService['kind'],
): RoomStayService {
  return {
    id: svc.id,
    name: svc.name,
    description: svc.description,
    total: { priceBeforeTax: money(cents), priceAfterTax: money(cents), taxAmount: 0, taxes: [] },
    inclusive,
    kind,
  };
}

function money(cents: number): number {
  return cents / 100;
}

/** Index of the first booking whose (modifiedMs, id) is >= (ms, id). */
function lowerBound(order: readonly BookingState[], ms: number, id: number): number {
  let lo = 0;
  let hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const b = order[mid]!;
    if (b.modifiedMs < ms || (b.modifiedMs === ms && b.id < id)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const TIME_ZONES: readonly { tz: string; currency: string; unit: number }[] = [
  { tz: 'Europe/Berlin', currency: 'EUR', unit: 1 },
  { tz: 'Europe/Moscow', currency: 'RUB', unit: 90 },
  { tz: 'Asia/Dubai', currency: 'AED', unit: 4 },
  { tz: 'America/New_York', currency: 'USD', unit: 1 },
  { tz: 'Asia/Bangkok', currency: 'THB', unit: 35 },
];
const ROOM_TYPES = [
  { name: 'Standard', categoryCode: 'Standard', base: 70 },
  { name: 'Superior', categoryCode: 'Superior', base: 95 },
  { name: 'Deluxe', categoryCode: 'Deluxe', base: 130 },
  { name: 'Junior Suite', categoryCode: 'JuniorSuite', base: 180 },
  { name: 'Family Room', categoryCode: 'Family', base: 150 },
] as const;
const RATE_PLANS = [
  { name: 'Best Available Rate', factor: 1 },
  { name: 'Non-refundable', factor: 0.85 },
  { name: 'Bed & Breakfast', factor: 1.15 },
  { name: 'Online', factor: 0.95 },
] as const;
const SERVICES = [
  { name: 'Breakfast', description: 'Breakfast buffet at the restaurant', kind: 'Meal', mealPlanCode: 'BuffetBreakfast', price: 15 },
  { name: 'Continental breakfast', description: 'Breakfast at a restaurant at a special price', kind: 'Meal', mealPlanCode: 'ContinentalBreakfast', price: 11 },
  { name: 'Half board', description: 'Breakfast and dinner', kind: 'Meal', mealPlanCode: 'HalfBoard', price: 35 },
  { name: 'Parking', description: 'Underground parking, per night', kind: 'Common', price: 12 },
  { name: 'Fruit platter', description: 'Fruit platter at check-in', kind: 'Common', price: 20 },
  { name: 'Airport transfer', description: 'One-way transfer from the airport', kind: 'Common', price: 45 },
] as const;
const FIRST_NAMES = ['Anna', 'Sherlock', 'John', 'Maria', 'Ivan', 'Lena', 'Omar', 'Yuki', 'Pierre', 'Sofia', 'Chen', 'Elif'];
const LAST_NAMES = ['Holmes', 'Watson', 'Ivanova', 'Schmidt', 'Rossi', 'Tanaka', 'Dubois', 'Kaya', 'Nguyen', 'Smith', 'Garcia'];
const PAYMENT_METHODS = ['BankCard', 'AtArrival', 'Cashless', 'Electronic', 'BankCardGuarantee', 'Sbp', 'Voucher'];
const SOURCES: readonly BookingPayload['source'][] = [
  { type: 'Channel', code: 'PA2' },
  { type: 'Channel', code: 'OTG', sourceUrl: null },
  { type: 'Channel', code: 'BGC' },
  { type: 'BookingEngine', code: null, sourceUrl: 'https://example-hotel.test/booking' },
  { type: 'PMS', code: null },
  { type: 'Other' },
];

/** Deterministic content model of one property. */
export function generateContent(seed: number, id: string, index: number): PropertyContent {
  // What the bookings use is drawn first, from this stream, in an order that must not change:
  // ids, names and prices of existing data stay the same across simulator versions.
  const rng = mulberry32(mix(seed, hashString(id), 0xc0de));
  const zone = pick(rng, TIME_ZONES);
  const roomTypes = ROOM_TYPES.slice(0, intBetween(rng, 3, ROOM_TYPES.length)).map((rt, k) => ({
    id: String(340_000 + index * 100 + k),
    name: rt.name,
    categoryCode: rt.categoryCode,
    baseRateCents: Math.round(rt.base * zone.unit * (0.8 + rng() * 0.4)) * 100,
  }));
  const ratePlans = RATE_PLANS.slice(0, intBetween(rng, 2, RATE_PLANS.length)).map((rp, k) => ({
    id: String(307_000 + index * 100 + k),
    name: rp.name,
    cancellationRuleId: String(90_000 + index * 10 + (k % 2)),
    extraStayRuleId: String(80_000 + index * 10),
    priceFactor: rp.factor,
  }));
  const services = SERVICES.map((s, k) => ({
    id: String(42_000 + index * 100 + k),
    name: s.name,
    description: s.description,
    kind: s.kind,
    ...('mealPlanCode' in s ? { mealPlanCode: s.mealPlanCode } : {}),
    priceCents: s.price * zone.unit * 100,
  }));
  const name = `${pick(rng, ['Grand', 'Riverside', 'Old Town', 'Harbour', 'Park'])} ${pick(rng, ['Hotel', 'Inn', 'Suites'])} ${id}`;
  const lodgingTax = chance(rng, 0.5)
    ? { index: 1, name: 'Lodging fee', description: 'Fee per guest, payable at check-in', perGuestNightCents: 2 * zone.unit * 100 }
    : null;
  // Content details (descriptions, contacts, amenities, rules...) come from a stream of their own.
  const details = contentDetails(mulberry32(mix(seed, hashString(id), 0xc0de, 2)), {
    id,
    index,
    name,
    timeZone: zone.tz,
    currency: zone.currency,
    unit: zone.unit,
    checkInTime: '14:00',
    checkOutTime: '12:00',
    roomTypes,
    ratePlans,
    services,
  });
  return {
    ...details,
    lodgingTax,
    // Real summaries carry propertyId as an integer for some properties and as a string for others.
    summaryPropertyIdAsString: index % 2 === 1 || !/^\d+$/.test(id),
  };
}

function emptyTotal(): Total {
  return { priceBeforeTax: 0, priceAfterTax: 0, taxAmount: 0, taxes: [], discounts: [] };
}

/** Derives the details payload of a booking from its seed and content variant. */
export function deriveBooking(content: PropertyContent, b: BookingState): BookingPayload {
  // `fixed` drives what never changes for a booking; `v` what a content change redraws.
  const fixed = mulberry32(mix(b.seed, 1));
  const v: Rng = mulberry32(mix(b.seed, 2, b.variant));
  const bareDates = chance(fixed, 0.5);
  const withIndex = chance(fixed, 0.5);
  const source = pick(fixed, SOURCES);
  const customer = chance(fixed, 0.3) ? null : { firstName: pick(fixed, FIRST_NAMES), lastName: pick(fixed, LAST_NAMES) };
  const withGuarantees = chance(fixed, 0.8);
  const paymentMethod = pick(fixed, PAYMENT_METHODS);
  const loyaltyCard = chance(fixed, 0.1) ? String(11039500000000 + Math.floor(fixed() * 99999999)) : null;
  const wholeUnits = content.currency === 'RUB' || content.currency === 'THB';

  const a = b.amended;
  const nights = Math.max(1, (chance(v, 0.6) ? intBetween(v, 1, 3) : intBetween(v, 4, 10)) + a.nightsDelta);
  const roll = v();
  const roomCount = roll < 0.8 ? 1 : roll < 0.95 ? 2 : 3;
  const arrivalDay = b.arrivalDay + a.dayShift;
  const arrivalDate = formatDay(arrivalDay);
  const departureDate = formatDay(arrivalDay + nights);
  const tax = content.lodgingTax;

  let sumBefore = 0;
  let sumTax = 0;
  const discountsByName = new Map<string, Discount>();
  let firstNightCents = 0;
  const roomStays: RoomStay[] = [];
  for (let r = 0; r < roomCount; r++) {
    const drawn = pick(v, content.roomTypes);
    const roomType = r === 0 ? content.roomTypes[(content.roomTypes.indexOf(drawn) + a.roomTypeShift) % content.roomTypes.length]! : drawn;
    const ratePlan = pick(v, content.ratePlans);
    const adultCount = intBetween(v, 1, 3);
    const childAges = chance(v, 0.2) ? Array.from({ length: intBetween(v, 1, 2) }, () => intBetween(v, 0, 17)) : [];
    const guests = chance(v, 0.3)
      ? []
      : Array.from({ length: chance(v, 0.5) ? 1 : adultCount }, () => ({
          firstName: pick(v, FIRST_NAMES),
          lastName: pick(v, LAST_NAMES),
        }));
    const dailyRates: RoomStay['dailyRates'] = [];
    let stayCents = 0;
    for (let n = 0; n < nights; n++) {
      let cents = Math.round(roomType.baseRateCents * ratePlan.priceFactor * (0.85 + v() * 0.4));
      if (wholeUnits) cents = Math.round(cents / 100) * 100;
      if (r === 0) cents += a.nightPriceDeltaCents;
      if (r === 0 && n === 0) firstNightCents = cents;
      stayCents += cents;
      const date = formatDay(arrivalDay + n);
      dailyRates.push({ ratePlanId: ratePlan.id, priceBeforeTax: money(cents), date: bareDates ? date : `${date}T00:00:00` });
    }
    const taxCents = tax ? tax.perGuestNightCents * adultCount * nights : 0;
    const discounts: Discount[] = [];
    if (chance(v, 0.15)) {
      const percent = pick(v, [5, 10, 15]);
      const d: Discount = {
        amount: money(Math.round((stayCents * percent) / (100 - percent))),
        discountType: 'Percentage',
        name: pick(v, ['Gold', 'Early booking', 'Mobile']),
        percent,
      };
      discounts.push(d);
      const seen = discountsByName.get(`${d.name}/${percent}`);
      if (seen) seen.amount = money(Math.round(seen.amount * 100 + d.amount * 100));
      else discountsByName.set(`${d.name}/${percent}`, { ...d });
    }
    sumBefore += stayCents;
    sumTax += taxCents;

    const services: RoomStayService[] = [];
    if (chance(v, 0.4)) {
      const meal = pick(
        v,
        content.services.filter((s) => s.kind === 'Meal'),
      );
      const inclusive = chance(v, 0.6);
      const cents = inclusive ? 0 : meal.priceCents * nights * adultCount;
      sumBefore += cents;
      services.push({ ...serviceLine(meal, cents, inclusive, 'Meal'), mealPlanCode: meal.mealPlanCode ?? null });
    }
    if (chance(v, 0.2)) {
      const svc = pick(
        v,
        content.services.filter((s) => s.kind === 'Common'),
      );
      const cents = svc.priceCents * nights;
      sumBefore += cents;
      services.push(serviceLine(svc, cents, false, 'Common'));
    }

    const extra = (at: string): ExtraStayDetails => {
      const cents = wholeUnits ? Math.round(firstNightCents / 200) * 100 : Math.round(firstNightCents / 2);
      sumBefore += cents;
      return { overriddenDateTime: at, total: { ...emptyTotal(), priceBeforeTax: money(cents), priceAfterTax: money(cents) } };
    };
    const earlyArrival = chance(v, 0.07) ? extra(`${arrivalDate}T10:00`) : null;
    const lateDeparture = chance(v, 0.07) ? extra(`${departureDate}T16:00`) : null;

    roomStays.push({
      ...(withIndex ? { index: r } : {}),
      stayDates: {
        arrivalDateTime: `${arrivalDate}T${content.checkInTime}`,
        departureDateTime: `${departureDate}T${content.checkOutTime}`,
      },
      ratePlans: [{ id: ratePlan.id, name: ratePlan.name }],
      roomType: { id: roomType.id, name: roomType.name },
      guestCount: { adultCount, childAges },
      guests,
      dailyRates,
      total: {
        priceBeforeTax: money(stayCents),
        priceAfterTax: money(stayCents + taxCents),
        taxAmount: money(taxCents),
        taxes: taxCents > 0 && tax ? [{ amount: money(taxCents), index: tax.index }] : [],
        discounts,
      },
      services,
      extraStayCharges: { earlyArrival, lateDeparture },
    });
  }

  const services: BookingService[] = [];
  if (chance(v, 0.15)) {
    const svc = pick(
      v,
      content.services.filter((s) => s.kind === 'Common'),
    );
    sumBefore += svc.priceCents;
    services.push({
      id: svc.id,
      name: svc.name,
      description: svc.description,
      total: { priceBeforeTax: money(svc.priceCents), priceAfterTax: money(svc.priceCents), taxAmount: 0, taxes: [] },
    });
  }

  const afterTax = sumBefore + sumTax;
  const prepaidRoll = fixed();
  const totalPrepaid = prepaidRoll < 0.5 ? 0 : prepaidRoll < 0.8 ? afterTax : Math.round(afterTax * 0.3);
  const penaltyRoll = v();

  return {
    propertyId: content.id,
    number: b.number,
    status: b.status,
    createdDateTime: formatUtcSeconds(b.createdMs),
    modifiedDateTime: formatUtcSeconds(b.modifiedMs),
    guaranteeInfo: {
      loyalty: loyaltyCard ? { cards: [{ cardNumber: loyaltyCard, loyaltySystemId: 'TLStatusLevel' }] } : null,
      totalPrepaid: money(totalPrepaid),
      ...(withGuarantees ? { guarantees: [{ paymentMethod }] } : {}),
    },
    currencyCode: content.currency,
    roomStays,
    services,
    total: {
      priceBeforeTax: money(sumBefore),
      priceAfterTax: money(afterTax),
      taxAmount: money(sumTax),
      taxes: sumTax > 0 && tax ? [{ amount: money(sumTax), index: tax.index }] : [],
      discounts: [...discountsByName.values()],
    },
    taxes: sumTax > 0 && tax ? [{ index: tax.index, name: tax.name, description: tax.description }] : [],
    cancellation:
      b.status === 'Cancelled'
        ? {
            penaltyAmount: penaltyRoll < 0.1 ? null : penaltyRoll < 0.6 ? 0 : money(firstNightCents),
            cancelledDateTime: formatUtcSeconds(b.cancelledMs || b.modifiedMs),
          }
        : null,
    source: { ...source },
    customer,
  };
}

export function summaryOf(content: PropertyContent, b: BookingState): BookingSummary {
  return {
    number: b.number,
    propertyId: content.summaryPropertyIdAsString ? content.id : Number(content.id),
    status: b.status,
    createdDateTime: formatUtcSeconds(b.createdMs),
    modifiedDateTime: formatUtcSeconds(b.modifiedMs),
  };
}

function bookingNumber(arrivalDay: number, propertyId: string, id: number): string {
  return `${formatDay(arrivalDay).replaceAll('-', '')}-${propertyId}-${id}`;
}

export interface StoreOptions {
  seed: number;
  properties: { id: string; bookingCount: number }[];
  now: () => number;
}

type RawBooking = { store: PropertyStore; created: number; modified: number; cancelled: boolean };

/** Told about every change mutate() makes (the PMS side follows its bookings). */
export interface BookingChangeListener {
  /** Before booking `b` of `store` changes, or (with `b` undefined) before a booking is created in it. */
  beforeBookingChange(store: PropertyStore, b: BookingState | undefined): void;
  /** After `b` changed; its modifiedMs is the time of the change. */
  afterBookingChange(store: PropertyStore, b: BookingState): void;
  /** After `b` was created. */
  bookingCreated(store: PropertyStore, b: BookingState): void;
}

/** All properties and bookings, with the mutations tests and the churn apply. */
export class SimulatorStore {
  readonly stores = new Map<string, PropertyStore>();
  private nextId = 7_000_001;
  private readonly rng: Rng;
  /** Recently changed bookings, to change some again within the same second. */
  private recent: { store: PropertyStore; b: BookingState }[] = [];
  /** Property ids in the content order (compareIds); rebuilt after addProperty. */
  private sortedIds: string[] | undefined;
  /** Told about the changes of mutate(); draws nothing from this store's random streams. */
  listener: BookingChangeListener | undefined;

  constructor(private readonly opts: StoreOptions) {
    this.rng = mulberry32(mix(opts.seed, 0x5eed));
    this.generate();
  }

  private generate(): void {
    const { seed, properties } = this.opts;
    const now = this.opts.now();
    const rng = mulberry32(mix(seed, 0xb00c));
    const all: RawBooking[] = [];
    properties.forEach((p, index) => {
      if (this.stores.has(p.id)) throw new Error(`duplicate property id ${p.id}`);
      const store = newStore(generateContent(seed, p.id, index));
      this.stores.set(p.id, store);
      all.push(...this.rawBookings(store, p.bookingCount, rng, now));
    });
    // Internal ids grow with creation time across the provider, as real ones do.
    all.sort((a, b) => a.created - b.created);
    this.materialize(all, rng);
    for (const store of this.stores.values()) {
      store.order.sort((a, b) => a.modifiedMs - b.modifiedMs || a.id - b.id);
    }
  }

  /** Creation and modification times of `count` bookings of one property. */
  private rawBookings(store: PropertyStore, count: number, rng: Rng, now: number): RawBooking[] {
    const span = Math.max(1, now - FIRST_CREATED_MS);
    const raws: RawBooking[] = [];
    for (let k = 0; k < count; k++) {
      // Skewed towards recent years, as real booking histories are.
      const created = Math.floor(now - span * rng() ** 2);
      const cancelled = chance(rng, 0.2);
      const r = rng();
      let modified = r < 0.45 && !cancelled ? created : r < 0.8 ? created + Math.floor(rng() * 3_600_000) : created + Math.floor(rng() * (now - created));
      if (cancelled && modified === created) modified += 1000 + Math.floor(rng() * 600_000);
      raws.push({ store, created, modified: Math.min(now, modified), cancelled });
    }
    // Several bookings share a modification second, and a few the exact millisecond.
    raws.sort((a, b) => a.modified - b.modified);
    for (let i = 1; i < raws.length; i++) {
      const prev = raws[i - 1]!;
      const cur = raws[i]!;
      const roll = rng();
      let target: number | undefined;
      if (roll < 0.015) target = prev.modified;
      else if (roll < 0.08) target = Math.floor(prev.modified / 1000) * 1000 + Math.floor(rng() * 1000);
      if (target === undefined || target > now) continue;
      if (cur.created === cur.modified) cur.created = cur.modified = target;
      else if (target >= cur.created) cur.modified = target;
    }
    return raws;
  }

  /** Turns raw bookings (in creation order) into bookings of their stores (order not sorted). */
  private materialize(raws: readonly RawBooking[], rng: Rng): void {
    for (const raw of raws) {
      const id = this.nextId++;
      const arrivalDay = Math.floor(raw.created / DAY_MS) + (chance(rng, 0.1) ? 0 : intBetween(rng, 1, 180));
      const changes = raw.modified === raw.created ? 0 : intBetween(rng, 1, 3);
      const b = new BookingState(
        id,
        bookingNumber(arrivalDay, raw.store.content.id, id),
        mix(this.opts.seed, id),
        arrivalDay,
        raw.created,
        raw.modified,
        changes,
        changes,
        raw.cancelled ? 'Cancelled' : 'Active',
        raw.cancelled ? raw.modified : 0,
      );
      raw.store.order.push(b);
      raw.store.byNumber.set(b.number, b);
    }
  }

  /**
   * A new property with content and `bookingCount` bookings created in the past (up to now);
   * deterministic for a given seed, id and number of properties before it.
   */
  addProperty(p: { id: string; bookingCount: number }): PropertyStore {
    if (this.stores.has(p.id)) throw new Error(`addProperty: property ${p.id} exists`);
    const store = newStore(generateContent(this.opts.seed, p.id, this.stores.size));
    this.stores.set(p.id, store);
    this.sortedIds = undefined;
    const rng = mulberry32(mix(this.opts.seed, hashString(p.id), 0xadd));
    const raws = this.rawBookings(store, p.bookingCount, rng, this.opts.now());
    raws.sort((a, b) => a.created - b.created);
    this.materialize(raws, rng);
    store.order.sort((a, b) => a.modifiedMs - b.modifiedMs || a.id - b.id);
    return store;
  }

  /** Property ids in the order of the content properties list. */
  contentOrder(): readonly string[] {
    this.sortedIds ??= [...this.stores.keys()].sort(compareIds);
    return this.sortedIds;
  }

  propertyIds(): string[] {
    return [...this.stores.keys()];
  }

  /** One page of the summaries stream after `cursor` (spec 4.3). */
  page(store: PropertyStore, cursor: Cursor, count: number): PageResult {
    const { order } = store;
    const skip = new Set(cursor.ids);
    const isSkipped = (b: BookingState) => b.modifiedMs === cursor.ms && skip.has(b.id);
    let i = lowerBound(order, cursor.ms, -Infinity);
    const items: BookingState[] = [];
    while (i < order.length && items.length < count) {
      const b = order[i++]!;
      if (!isSkipped(b)) items.push(b);
    }
    while (i < order.length && isSkipped(order[i]!)) i++;
    const hasMoreData = i < order.length;
    const last = items[items.length - 1];
    if (!last) return { items, cursor, hasMoreData };
    const atLast = items.filter((b) => b.modifiedMs === last.modifiedMs).map((b) => b.id);
    const ids = last.modifiedMs === cursor.ms ? [...new Set([...cursor.ids, ...atLast])] : atLast;
    return { items, cursor: { ms: last.modifiedMs, ids }, hasMoreData };
  }

  details(store: PropertyStore, b: BookingState): BookingPayload {
    return deriveBooking(store.content, b);
  }

  private reposition(store: PropertyStore, b: BookingState, newMs: number): void {
    const at = lowerBound(store.order, b.modifiedMs, b.id);
    if (store.order[at] === b) store.order.splice(at, 1);
    b.modifiedMs = newMs;
    this.insert(store, b);
  }

  private insert(store: PropertyStore, b: BookingState): void {
    const { order } = store;
    const last = order[order.length - 1];
    if (!last || last.modifiedMs < b.modifiedMs || (last.modifiedMs === b.modifiedMs && last.id < b.id)) order.push(b);
    else order.splice(lowerBound(order, b.modifiedMs, b.id), 0, b);
  }

  private maxMs(store: PropertyStore): number {
    return store.order[store.order.length - 1]?.modifiedMs ?? 0;
  }

  /** See Simulator.mutate. */
  mutate(opts: { count: number; newCount?: number; propertyId?: string }): void {
    const now = this.opts.now();
    const only = opts.propertyId === undefined ? undefined : this.stores.get(opts.propertyId);
    if (opts.propertyId !== undefined && !only) throw new Error(`mutate: unknown property ${opts.propertyId}`);
    const stores = only ? [only] : [...this.stores.values()];
    const rng = this.rng;
    for (let k = 0; k < opts.count; k++) {
      let target: { store: PropertyStore; b: BookingState } | undefined;
      if (chance(rng, 0.25)) {
        // Change again a booking already changed in this very second: its modifiedDateTime
        // stays the same while its content differs.
        const sec = Math.floor(now / 1000);
        const same = this.recent.filter((r) => Math.floor(r.b.modifiedMs / 1000) === sec && (!only || r.store === only));
        if (same.length > 0) target = pick(rng, same);
      }
      if (!target) {
        const store = pick(rng, stores);
        if (store.order.length === 0) continue;
        target = { store, b: pick(rng, store.order) };
      }
      const { store, b } = target;
      // Strictly after its previous change and never before the end of the stream: a change
      // always lands after every continueToken already issued, so no client can miss it.
      this.change(store, b, Math.max(now, this.maxMs(store), b.modifiedMs + 1));
      this.recent.push(target);
      if (this.recent.length > 64) this.recent.shift();
    }
    for (let k = 0; k < (opts.newCount ?? 0); k++) {
      const store = pick(rng, stores);
      this.create(store, Math.max(now, this.maxMs(store)));
    }
  }

  /**
   * See Simulator.mutateLate: changes that become visible late, dated `lagMs` before now.
   * Returns the numbers of the bookings changed or created.
   */
  mutateLate(opts: { count: number; newCount?: number; propertyId?: string; lagMs: number }): string[] {
    const at = this.opts.now() - opts.lagMs;
    const only = opts.propertyId === undefined ? undefined : this.stores.get(opts.propertyId);
    if (opts.propertyId !== undefined && !only) throw new Error(`mutateLate: unknown property ${opts.propertyId}`);
    if (at < FIRST_CREATED_MS) throw new Error('mutateLate: lagMs reaches before the first bookings');
    const stores = only ? [only] : [...this.stores.values()];
    const rng = this.rng;
    const numbers: string[] = [];
    for (let k = 0; k < opts.count; k++) {
      const store = pick(rng, stores);
      // Only a booking last changed before `at` can change at `at`: each change keeps its date,
      // whatever the stream's end, which is what makes it late.
      const older = lowerBound(store.order, at, -Infinity);
      if (older === 0) continue;
      const b = store.order[Math.floor(rng() * older)]!;
      this.change(store, b, at);
      numbers.push(b.number);
    }
    for (let k = 0; k < (opts.newCount ?? 0); k++) numbers.push(this.create(pick(rng, stores), at).number);
    return numbers;
  }

  /** One change of `b` at `ms`: a status flip, or new content (prices, guests, room stays). */
  private change(store: PropertyStore, b: BookingState, ms: number): void {
    this.listener?.beforeBookingChange(store, b);
    b.previous = b.copy();
    b.version++;
    b.detailReadsSinceChange = 0;
    if (chance(this.rng, 0.3)) {
      b.status = b.status === 'Cancelled' ? 'Active' : 'Cancelled';
      b.cancelledMs = b.status === 'Cancelled' ? ms : 0;
    } else {
      b.variant++;
    }
    this.reposition(store, b, ms);
    this.listener?.afterBookingChange(store, b);
  }

  /** See Simulator.amendBooking. */
  amend(propertyId: string, number: string, amendment: BookingAmendment): void {
    const store = this.stores.get(propertyId);
    const b = store?.byNumber.get(number);
    if (!store || !b) throw new Error(`amend: no booking ${number} of property ${propertyId}`);
    if (amendment === 'cancel' && b.status === 'Cancelled') throw new Error(`amend: booking ${number} is already cancelled`);
    if (amendment === 'reinstate' && b.status !== 'Cancelled') throw new Error(`amend: booking ${number} is not cancelled`);
    const ms = Math.max(this.opts.now(), this.maxMs(store), b.modifiedMs + 1);
    this.listener?.beforeBookingChange(store, b);
    b.previous = b.copy();
    b.version++;
    b.detailReadsSinceChange = 0;
    const a = b.amended;
    if (amendment === 'cancel' || amendment === 'reinstate') {
      b.status = amendment === 'cancel' ? 'Cancelled' : 'Active';
      b.cancelledMs = amendment === 'cancel' ? ms : 0;
    } else if (amendment === 'reprice') a.nightPriceDeltaCents += 1_000;
    else if (amendment === 'move') a.dayShift += 7;
    else if (amendment === 'upgrade') a.roomTypeShift += 1;
    else a.nightsDelta -= 1;
    this.reposition(store, b, ms);
    this.listener?.afterBookingChange(store, b);
  }

  /** A new booking of `store`, created (and last modified) at `ms`. */
  private create(store: PropertyStore, ms: number): BookingState {
    this.listener?.beforeBookingChange(store, undefined);
    const id = this.nextId++;
    const arrivalDay = Math.floor(ms / DAY_MS) + intBetween(this.rng, 0, 120);
    const b = new BookingState(id, bookingNumber(arrivalDay, store.content.id, id), mix(this.opts.seed, id), arrivalDay, ms, ms, 0, 0, 'Active', 0);
    store.byNumber.set(b.number, b);
    this.insert(store, b);
    this.listener?.bookingCreated(store, b);
    return b;
  }
}
