/**
 * Content API and Reference Data API of the simulator: the fixed reference lists, the
 * deterministic content details of a property (everything bookings do not reference), and
 * the wire form of a property as GET /api/content/v1/properties/{id} serves it.
 */
import { chance, intBetween, pick, type Rng } from './random.js';
import type {
  CancellationRule,
  CancellationTerm,
  ContentAddress,
  ContentPropertyAmenity,
  ContentPropertyInfo,
  ContentRatePlan,
  ContentRoomType,
  ContentService,
  ExtraStayChargeType,
  ExtraStayRule,
  ExtraStayRulePeriod,
  MealPlan,
  PaymentMethod,
  PropertyAmenityType,
  PropertyContent,
  PropertyKind,
  ReferenceLists,
  RoomAmenityCategory,
  RoomTypeCategory,
} from './types.js';

// ---- Reference lists (fixed; the same for every seed) ----

export const MEAL_PLANS: readonly MealPlan[] = [
  { code: 'RoomOnly', name: 'Room only' },
  { code: 'BuffetBreakfast', name: 'Buffet breakfast' },
  { code: 'ContinentalBreakfast', name: 'Continental breakfast' },
  { code: 'AmericanBreakfast', name: 'American breakfast' },
  { code: 'EnglishBreakfast', name: 'English breakfast' },
  { code: 'HalfBoard', name: 'Half board' },
  { code: 'FullBoard', name: 'Full board' },
  { code: 'AllInclusive', name: 'All inclusive' },
  { code: 'UltraAllInclusive', name: 'Ultra all inclusive' },
];

export const ROOM_TYPE_CATEGORIES: readonly RoomTypeCategory[] = [
  { code: 'PlaceInRoom', name: 'Place in the room' },
  { code: 'Standard', name: 'Standard' },
  { code: 'Superior', name: 'Superior' },
  { code: 'Deluxe', name: 'Deluxe' },
  { code: 'JuniorSuite', name: 'Junior suite' },
  { code: 'Suite', name: 'Suite' },
  { code: 'Family', name: 'Family room' },
  { code: 'Studio', name: 'Studio' },
  { code: 'Apartment', name: 'Apartment' },
  { code: 'Villa', name: 'Villa' },
];

export const ROOM_AMENITY_CATEGORIES: readonly RoomAmenityCategory[] = [
  {
    name: 'Internet/telephony',
    amenities: [
      { code: 'wifi_internet', name: 'Wi-Fi internet' },
      { code: 'wired_internet', name: 'Wired internet' },
      { code: 'telephone', name: 'Telephone' },
    ],
  },
  {
    name: 'Bathroom',
    amenities: [
      { code: 'shower', name: 'Shower' },
      { code: 'bathtub', name: 'Bathtub' },
      { code: 'hairdryer', name: 'Hairdryer' },
      { code: 'bathrobe', name: 'Bathrobe' },
      { code: 'toiletries', name: 'Toiletries' },
    ],
  },
  {
    name: 'Furniture and equipment',
    amenities: [
      { code: 'air_conditioner', name: 'Air conditioner' },
      { code: 'desk', name: 'Desk' },
      { code: 'wardrobe', name: 'Wardrobe' },
      { code: 'safe', name: 'Safe' },
      { code: 'minibar', name: 'Minibar' },
      { code: 'tv', name: 'TV' },
      { code: 'kettle', name: 'Electric kettle' },
    ],
  },
  {
    name: 'View from the window',
    amenities: [
      { code: 'city_view', name: 'City view' },
      { code: 'sea_view', name: 'Sea view' },
      { code: 'garden_view', name: 'Garden view' },
    ],
  },
];

export const PAYMENT_METHOD_LIST: readonly PaymentMethod[] = [
  { code: 'AtArrival', type: 'Cash' },
  { code: 'BankCardGuarantee', type: 'Cash' },
  { code: 'BankCard', type: 'Prepay' },
  { code: 'SBP', type: 'Prepay' },
];

export const PROPERTY_AMENITY_TYPES: readonly PropertyAmenityType[] = [
  { code: 'parking', displayName: 'Parking', chargeTypeApplicable: true },
  { code: 'wifi_internet', displayName: 'Wi-Fi internet', chargeTypeApplicable: true },
  { code: 'swimming_pool', displayName: 'Swimming pool', chargeTypeApplicable: true },
  { code: 'restaurant', displayName: 'Restaurant', chargeTypeApplicable: false },
  { code: 'bar', displayName: 'Bar', chargeTypeApplicable: false },
  { code: 'fitness_center', displayName: 'Fitness center', chargeTypeApplicable: true },
  { code: 'spa', displayName: 'Spa', chargeTypeApplicable: true },
  { code: 'airport_shuttle', displayName: 'Airport shuttle', chargeTypeApplicable: true },
  { code: 'laundry', displayName: 'Laundry', chargeTypeApplicable: true },
  { code: 'conference_hall', displayName: 'Conference hall', chargeTypeApplicable: true },
  { code: 'front_desk_24h', displayName: '24-hour front desk', chargeTypeApplicable: false },
  { code: 'elevator', displayName: 'Elevator', chargeTypeApplicable: false },
  { code: 'pets_allowed', displayName: 'Pets allowed', chargeTypeApplicable: true },
  { code: 'kids_club', displayName: 'Kids club', chargeTypeApplicable: true },
];

export const PROPERTY_KINDS: readonly PropertyKind[] = [
  { id: 1, displayName: 'Mini-hotel', propertyKindType: 'MiniHotel' },
  { id: 2, displayName: 'Hotel', propertyKindType: 'Hotel' },
  { id: 3, displayName: 'Hostel', propertyKindType: 'Hostel' },
  { id: 4, displayName: 'Apartments', propertyKindType: 'Apartments' },
  { id: 5, displayName: 'Guest house', propertyKindType: 'GuestHouse' },
  { id: 6, displayName: 'Resort hotel', propertyKindType: 'Resort' },
  { id: 7, displayName: 'Sanatorium', propertyKindType: 'Sanatorium' },
  { id: 8, displayName: 'Aparthotel', propertyKindType: 'Aparthotel' },
];

/** Fresh copies of every reference list, exactly as served. */
export function referenceLists(): ReferenceLists {
  return structuredClone({
    mealPlans: MEAL_PLANS,
    roomTypeCategories: ROOM_TYPE_CATEGORIES,
    roomAmenityCategories: ROOM_AMENITY_CATEGORIES,
    paymentMethods: PAYMENT_METHOD_LIST,
    amenityTypes: PROPERTY_AMENITY_TYPES,
    propertyKinds: PROPERTY_KINDS,
  }) as ReferenceLists;
}

const mealPlanNames = new Map(MEAL_PLANS.map((m) => [m.code, m.name]));
const categoryNames = new Map(ROOM_TYPE_CATEGORIES.map((c) => [c.code, c.name]));
const roomAmenityNames = new Map(ROOM_AMENITY_CATEGORIES.flatMap((c) => c.amenities.map((a) => [a.code, a.name] as const)));
const ROOM_AMENITY_CODES = [...roomAmenityNames.keys()];

export function mealPlanName(code: string): string {
  const name = mealPlanNames.get(code);
  if (name === undefined) throw new Error(`unknown meal plan ${code}`);
  return name;
}

export function roomTypeCategoryName(code: string): string {
  const name = categoryNames.get(code);
  if (name === undefined) throw new Error(`unknown room type category ${code}`);
  return name;
}

// ---- Deterministic content details of a property ----

interface Place {
  countryCode: string;
  region: string;
  regionId: string;
  cityName: string;
  cityId: string;
  postalCode: string;
  streets: string[];
  lat: number;
  lon: number;
  phonePrefix: string;
}

/** One place per time zone of data.ts (the time zone is "determined by city"). */
const PLACES: Record<string, Place> = {
  'Europe/Berlin': {
    countryCode: 'DEU',
    region: 'Berlin',
    regionId: 'BE',
    cityName: 'Berlin',
    cityId: '2950159',
    postalCode: '10117',
    streets: ['Friedrichstrasse', 'Unter den Linden', 'Torstrasse'],
    lat: 52.52,
    lon: 13.405,
    phonePrefix: '+49 30',
  },
  'Europe/Moscow': {
    countryCode: 'RUS',
    region: 'Moscow',
    regionId: '077',
    cityName: 'Moscow',
    cityId: '524901',
    postalCode: '125009',
    streets: ['Tverskaya St.', 'Arbat St.', 'Myasnitskaya St.'],
    lat: 55.7558,
    lon: 37.6173,
    phonePrefix: '+7 495',
  },
  'Asia/Dubai': {
    countryCode: 'ARE',
    region: 'Dubai',
    regionId: 'DU',
    cityName: 'Dubai',
    cityId: '292223',
    postalCode: '00000',
    streets: ['Sheikh Zayed Road', 'Al Wasl Road', 'Jumeirah Beach Road'],
    lat: 25.2048,
    lon: 55.2708,
    phonePrefix: '+971 4',
  },
  'America/New_York': {
    countryCode: 'USA',
    region: 'New York',
    regionId: 'NY',
    cityName: 'New York',
    cityId: '5128581',
    postalCode: '10001',
    streets: ['Broadway', '5th Avenue', 'Lexington Avenue'],
    lat: 40.7128,
    lon: -74.006,
    phonePrefix: '+1 212',
  },
  'Asia/Bangkok': {
    countryCode: 'THA',
    region: 'Bangkok',
    regionId: '10',
    cityName: 'Bangkok',
    cityId: '1609350',
    postalCode: '10110',
    streets: ['Sukhumvit Road', 'Silom Road', 'Rama IV Road'],
    lat: 13.7563,
    lon: 100.5018,
    phonePrefix: '+66 2',
  },
};

const ROOM_DESCRIPTIONS: Record<string, string> = {
  Standard: 'A comfortable room with a double bed or two single beds.',
  Superior: 'A spacious room with a queen-size bed and a seating area.',
  Deluxe: 'A large room with a king-size bed, a work desk and a city view.',
  JuniorSuite: 'A suite with a bedroom and a living area separated by an arch.',
  Family: 'A room for families: a double bed, a sofa bed and a cot on request.',
};

const RATE_PLAN_DESCRIPTIONS: Record<string, string | null> = {
  'Best Available Rate': '<p>Book your accommodation at the best price!</p>\n<p>Free cancellation until one day before arrival.</p>',
  'Non-refundable': '<p>The lowest price. The prepayment is not refunded on cancellation.</p>',
  'Bed & Breakfast': '<p>The price includes breakfast.</p>',
  Online: null,
};

function round4(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

function hhmm(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

function minutesOf(t: string): number {
  const [h, m] = t.split(':').map(Number) as [number, number];
  return h * 60 + m;
}

function formatDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function pickSome<T>(rng: Rng, items: readonly T[], min: number, max: number): T[] {
  const pool = [...items];
  const n = Math.min(pool.length, intBetween(rng, min, max));
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(pool.splice(Math.floor(rng() * pool.length), 1)[0]!);
  return out;
}

/** What generateContent draws first and the bookings use; the details below are derived from it. */
export interface ContentCore {
  id: string;
  index: number;
  name: string;
  timeZone: string;
  currency: string;
  /** Money units per EUR, roughly. */
  unit: number;
  checkInTime: string;
  checkOutTime: string;
  roomTypes: { id: string; name: string; categoryCode: string; baseRateCents: number }[];
  ratePlans: { id: string; name: string; cancellationRuleId: string; extraStayRuleId: string; priceFactor: number }[];
  services: { id: string; name: string; description: string; kind: 'Common' | 'Meal'; mealPlanCode?: string; priceCents: number }[];
}

type Details = Omit<PropertyContent, 'lodgingTax' | 'summaryPropertyIdAsString'>;

/** Adds the content details to the core, drawing only from `rng` (a stream of its own). */
export function contentDetails(rng: Rng, core: ContentCore): Details {
  const { id, currency } = core;
  const place = PLACES[core.timeZone]!;
  const kind = pick(rng, PROPERTY_KINDS);
  const multiLocationProperty = kind.propertyKindType === 'Apartments' && chance(rng, 0.7);
  const stars = kind.propertyKindType === 'Hostel' || kind.propertyKindType === 'Apartments' || chance(rng, 0.1) ? null : intBetween(rng, 2, 5);
  const stayUnitKind = kind.propertyKindType === 'Sanatorium' || kind.propertyKindType === 'Hostel' ? 'DailyRate' : 'NightRate';
  const house = intBetween(rng, 1, 180);
  const street = pick(rng, place.streets);
  const address: ContentAddress = {
    postalCode: place.postalCode,
    countryCode: place.countryCode,
    region: place.region,
    regionId: place.regionId,
    cityName: place.cityName,
    cityId: place.cityId,
    addressLine: `${street} ${house}`,
    latitude: round4(place.lat + (rng() - 0.5) / 10),
    longitude: round4(place.lon + (rng() - 0.5) / 10),
    remark: chance(rng, 0.3) ? 'Entrance from the courtyard' : null,
  };
  const slug = `property-${id}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  const phoneNumber = () => `${place.phonePrefix} ${intBetween(rng, 100, 999)} ${intBetween(rng, 1000, 9999)}`;
  const phones = chance(rng, 0.1)
    ? []
    : [{ phoneNumber: phoneNumber(), remark: 'Reception' }, ...(chance(rng, 0.4) ? [{ phoneNumber: phoneNumber(), remark: null }] : [])];
  const emails = chance(rng, 0.1) ? [] : [`reception@${slug}.example`, ...(chance(rng, 0.3) ? [`sales@${slug}.example`] : [])];
  const imageUrls = Array.from({ length: intBetween(rng, 0, 4) }, (_, k) => `https://images.staysync-simulator.test/properties/${slug}/${k + 1}.jpg`);

  const amenities: ContentPropertyAmenity[] = [];
  for (const t of pickSome(rng, PROPERTY_AMENITY_TYPES, 3, 9)) {
    const chargeType = t.chargeTypeApplicable ? (chance(rng, 0.5) ? 'Free' : 'Chargeable') : 'None';
    if (t.code === 'parking') amenities.push({ code: t.code, displayName: chargeType === 'Chargeable' ? 'Paid parking' : 'Parking', chargeType });
    else if (t.code === 'swimming_pool' && chance(rng, 0.5)) {
      // Amenities swimming_pool and restaurant may appear more than once.
      amenities.push({ code: t.code, displayName: 'Outdoor swimming pool', chargeType });
      amenities.push({ code: t.code, displayName: 'Indoor swimming pool', chargeType: chance(rng, 0.5) ? 'Free' : 'Chargeable' });
    } else if (t.code === 'restaurant' && chance(rng, 0.5)) {
      amenities.push({ code: t.code, displayName: 'Restaurant', chargeType });
      amenities.push({ code: t.code, displayName: 'Lobby restaurant', chargeType });
    } else amenities.push({ code: t.code, displayName: t.displayName, chargeType });
  }

  const vatFor = () => (chance(rng, 0.5) ? { applicable: false } : { applicable: true, included: chance(rng, 0.8), percent: pick(rng, [0, 7, 10, 20]) });

  const roomTypes: PropertyContent['roomTypes'] = core.roomTypes.map((rt, k) => {
    const adultBed = rt.categoryCode === 'Family' ? 3 : rt.categoryCode === 'Standard' ? 2 : intBetween(rng, 2, 3);
    const extraBed = intBetween(rng, 0, 2);
    const childWithoutBed = intBetween(rng, 0, 1);
    const placements: PropertyContent['roomTypes'][number]['placements'] = [{ kind: 'Adult', count: adultBed }];
    if (extraBed > 0) placements.push({ kind: 'ExtraAdult', count: extraBed });
    if (chance(rng, 0.5)) placements.push({ kind: 'Child', count: 1, minAge: 0, maxAge: 12 });
    if (childWithoutBed > 0) placements.push({ kind: 'ChildBandWithoutBed', count: childWithoutBed, minAge: 0, maxAge: 5 });
    return {
      ...rt,
      categoryName: roomTypeCategoryName(rt.categoryCode),
      description: ROOM_DESCRIPTIONS[rt.categoryCode] ?? `${rt.name} room.`,
      amenityCodes: pickSome(rng, ROOM_AMENITY_CODES, 2, 7).sort(),
      imageUrls: Array.from({ length: intBetween(rng, 0, 3) }, (_, n) => `https://images.staysync-simulator.test/room-types/${rt.id}/${n + 1}.jpg`),
      sizeM2: intBetween(rng, 14, 30) + k * 8,
      occupancy: { adultBed, extraBed, childWithoutBed },
      placements,
      ...(multiLocationProperty
        ? { address: { ...address, addressLine: `${pick(rng, place.streets)} ${intBetween(rng, 1, 180)}, apt. ${intBetween(rng, 1, 90)}` } }
        : {}),
      position: chance(rng, 0.2) ? null : (k + 1) * 100,
    };
  });

  const services: PropertyContent['services'] = core.services.map((s, k) => ({
    ...s,
    ...(s.mealPlanCode !== undefined ? { mealPlanName: mealPlanName(s.mealPlanCode) } : {}),
    imageUrls: chance(rng, 0.3) ? [`https://images.staysync-simulator.test/services/${s.id}/${k + 1}.jpg`] : [],
    vat: vatFor(),
  }));

  const roomTypeIds = core.roomTypes.map((rt) => Number(rt.id));
  const ratePlans: PropertyContent['ratePlans'] = core.ratePlans.map((rp) => {
    const availableServices = pickSome(rng, core.services, 0, 3).map((s) => {
      const selective = chance(rng, 0.3);
      return {
        id: Number(s.id),
        included: rp.name === 'Bed & Breakfast' ? s.kind === 'Meal' : chance(rng, 0.2),
        roomTypeIds: selective ? pickSome(rng, roomTypeIds, 1, roomTypeIds.length).sort((a, b) => a - b) : null,
        roomTypeAvailability: selective ? ('Selective' as const) : ('All' as const),
      };
    });
    if (rp.name === 'Bed & Breakfast' && !availableServices.some((s) => s.included)) {
      const breakfast = core.services.find((s) => s.mealPlanCode === 'BuffetBreakfast');
      if (breakfast) availableServices.unshift({ id: Number(breakfast.id), included: true, roomTypeIds: null, roomTypeAvailability: 'All' });
    }
    return {
      ...rp,
      description: RATE_PLAN_DESCRIPTIONS[rp.name] ?? null,
      isStayWithChildrenOnly: chance(rng, 0.05),
      corporateOnly: rp.name === 'Online' ? false : chance(rng, 0.05),
      vat: vatFor(),
      availableServices,
    };
  });

  const cancellationRules = [...new Set(core.ratePlans.map((rp) => rp.cancellationRuleId))].map((ruleId, k) => cancellationRule(rng, ruleId, id, currency, k));
  const extraStayRules = [...new Set(core.ratePlans.map((rp) => rp.extraStayRuleId))].map((ruleId) => extraStayRule(rng, ruleId, core));

  const legal = `${pick(rng, ['Hospitality', 'Hotels', 'Stay'])} ${pick(rng, ['Group', 'Holding', 'Partners'])} ${id}`;
  return {
    id,
    name: core.name,
    timeZone: core.timeZone,
    currency,
    checkInTime: core.checkInTime,
    checkOutTime: core.checkOutTime,
    roomTypes,
    ratePlans,
    services,
    description: `${core.name} is located in ${place.cityName}, at ${street} ${house}. ${kind.displayName} with ${core.roomTypes.length} room types.`,
    stars,
    stayUnitKind,
    propertyKindId: kind.id,
    contactInfo: { address, phones, emails },
    imageUrls,
    multiLocationProperty,
    companyDetails: chance(rng, 0.15)
      ? {}
      : {
          legalEntityName: `${legal} LLC`,
          taxpayerIdentificationNumber: String(intBetween(rng, 100_000_000, 999_999_999)),
          companyRegistrationNumber: chance(rng, 0.3) ? null : String(1_000_000_000_000 + intBetween(rng, 0, 999_999_999)),
          legalAddress: `${street} ${intBetween(rng, 1, 180)}, ${place.postalCode} ${place.cityName}`,
        },
    amenities,
    cancellationRules,
    extraStayRules,
  };
}

function cancellationRule(rng: Rng, ruleId: string, propertyId: string, currency: string, k: number): CancellationRule {
  const referencePointKind = pick(rng, [
    'ProviderArrivalTime',
    'ProviderArrivalTime',
    'ProviderDepartureTime',
    'GuestArrivalTime',
    'CustomArrivalTime',
    'BookingCreationTime',
  ] as const);
  const arrivalDates = (): CancellationTerm['arrivalDates'] => {
    const start = Date.UTC(2020 + intBetween(rng, 0, 5), intBetween(rng, 0, 11), intBetween(rng, 1, 28));
    const endless = chance(rng, 0.7);
    // Real rules repeat the start date as the end date of an endless range.
    return [{ startDate: formatDay(start), endDate: formatDay(endless ? start : start + intBetween(rng, 30, 400) * 86_400_000), isEndless: endless }];
  };
  let cancellationTerms: CancellationTerm[];
  if (k % 2 === 1) {
    // Non-refundable: the whole prepayment whenever the booking is cancelled.
    cancellationTerms = [
      {
        beforeArrivalMatching: 'NoMatter',
        beforeArrivalUnit: 'None',
        beforeArrivalValue: 0,
        penaltyCalculationMethod: 'PrepaymentPercent',
        penaltyValue: 100,
        penaltyValueCurrency: currency,
        arrivalDates: arrivalDates(),
      },
    ];
  } else if (chance(rng, 0.15)) {
    cancellationTerms = []; // free of charge
  } else {
    const days = intBetween(rng, 1, 3);
    cancellationTerms = [
      {
        beforeArrivalMatching: 'AtLeast',
        beforeArrivalUnit: 'Day',
        beforeArrivalValue: days + 1,
        penaltyCalculationMethod: 'NoPenalty',
        penaltyValue: 0,
        penaltyValueCurrency: currency,
        arrivalDates: arrivalDates(),
      },
      {
        beforeArrivalMatching: 'Between',
        beforeArrivalUnit: 'Day',
        beforeArrivalValue: 1,
        beforeArrivalValueMax: days,
        penaltyCalculationMethod: pick(rng, ['FirstNightPercent', 'PrepaymentPercent'] as const),
        penaltyValue: pick(rng, [10, 30, 50]),
        penaltyValueCurrency: currency,
        arrivalDates: arrivalDates(),
      },
      {
        beforeArrivalMatching: 'NoMoreThan',
        beforeArrivalUnit: 'Hour',
        beforeArrivalValue: 24,
        penaltyCalculationMethod: 'FirstNights',
        penaltyValue: 1,
        penaltyValueCurrency: currency,
        arrivalDates: arrivalDates(),
      },
    ];
  }
  return {
    id: ruleId,
    propertyId,
    referencePointKind,
    referencePointTime: referencePointKind === 'CustomArrivalTime' ? hhmm(intBetween(rng, 8, 18) * 60 + pick(rng, [0, 30])) : null,
    cancellationTerms,
  };
}

function extraStayRule(rng: Rng, ruleId: string, core: ContentCore): ExtraStayRule {
  const { currency, unit } = core;
  const period = (startTime: string, endTime: string, chargeType: ExtraStayChargeType): ExtraStayRulePeriod => {
    const p: ExtraStayRulePeriod = { startTime, endTime, chargeType, rates: [], occupyQuota: chance(rng, 0.3) };
    if (chargeType === 'Fixed') p.rates = [{ currency, rate: intBetween(rng, 1, 6) * 5 * unit }];
    else if (chargeType === 'HourlyRate') p.rates = [{ currency, rate: intBetween(rng, 1, 4) * 2 * unit }];
    else if (chargeType === 'Percent') {
      p.percentOptions = {
        percentage: 50,
        extraPlacementEnabled: chance(rng, 0.3),
        extraServiceOption: pick(rng, ['None', 'All', 'MealOnly'] as const),
      };
    }
    // Key order as the provider's: percentOptions before occupyQuota.
    const { occupyQuota, ...rest } = p;
    return { ...rest, occupyQuota };
  };
  const middle = (): ExtraStayChargeType => pick(rng, ['Fixed', 'HourlyRate', 'HourlyRateAutoCalculated', 'Free', 'Forbidden', 'Percent']);
  const overridesIn = chance(rng, 0.2);
  const overridesOut = chance(rng, 0.2);
  const checkInTime = overridesIn ? hhmm(minutesOf(core.checkInTime) + 60) : core.checkInTime;
  const checkOutTime = overridesOut ? hhmm(minutesOf(core.checkOutTime) - 60) : core.checkOutTime;
  // Bookings charge early arrival at 10:00 and late departure until 16:00 at half a night.
  return {
    id: ruleId,
    propertyId: core.id,
    checkInTime,
    overridesPropertyCheckInTime: overridesIn,
    earlyCheckInPeriods: [period('00:00', '06:00', 'Forbidden'), period('06:00', '10:00', middle()), period('10:00', checkInTime, 'Percent')],
    checkOutTime,
    overridesPropertyCheckOutTime: overridesOut,
    lateCheckOutPeriods: [period(checkOutTime, '16:00', 'Percent'), period('16:00', '20:00', middle()), period('20:00', '24:00', 'Forbidden')],
  };
}

// ---- Wire form ----

/** Edits applied to the served content only: the bookings keep referencing the original model. */
export interface ContentEdits {
  removedRoomTypes: Set<string>;
  removedRatePlans: Set<string>;
  roomTypeNames: Map<string, string>;
}

export function emptyEdits(): ContentEdits {
  return { removedRoomTypes: new Set(), removedRatePlans: new Set(), roomTypeNames: new Map() };
}

const images = (urls: readonly string[]) => urls.map((url) => ({ url }));

/** The property as GET /api/content/v1/properties/{id} serves it (field order as the schema's). */
export function propertyInfo(c: PropertyContent, edits: ContentEdits): ContentPropertyInfo {
  const roomTypes: ContentRoomType[] = c.roomTypes
    .filter((rt) => !edits.removedRoomTypes.has(rt.id))
    .map((rt) => ({
      id: rt.id,
      name: edits.roomTypeNames.get(rt.id) ?? rt.name,
      description: rt.description,
      amenities: rt.amenityCodes.map((code) => ({ code, name: roomAmenityNames.get(code) ?? null })),
      images: images(rt.imageUrls),
      size: { value: rt.sizeM2 },
      categoryCode: rt.categoryCode,
      categoryName: rt.categoryName,
      ...(rt.address ? { address: { ...rt.address } } : {}),
      occupancy: { ...rt.occupancy },
      placements: rt.placements.map((p) => ({ ...p })),
      position: rt.position,
    }));
  const visibleRoomTypeIds = new Set(roomTypes.map((rt) => Number(rt.id)));
  const ratePlans: ContentRatePlan[] = c.ratePlans
    .filter((rp) => !edits.removedRatePlans.has(rp.id))
    .map((rp) => ({
      id: rp.id,
      name: rp.name,
      description: rp.description,
      currency: c.currency,
      isStayWithChildrenOnly: rp.isStayWithChildrenOnly,
      cancellationRuleId: rp.cancellationRuleId,
      extraStayRuleId: rp.extraStayRuleId,
      vat: { ...rp.vat },
      availableServices: rp.availableServices.map((s) => ({
        ...s,
        roomTypeIds: s.roomTypeIds === null || s.roomTypeIds === undefined ? null : s.roomTypeIds.filter((x) => visibleRoomTypeIds.has(x)),
      })),
      corporateOnly: rp.corporateOnly,
    }));
  const services: ContentService[] = c.services.map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    kind: s.kind,
    mealPlanCode: s.mealPlanCode ?? null,
    mealPlanName: s.mealPlanName ?? null,
    images: images(s.imageUrls),
    status: 'Active',
    vat: { ...s.vat },
  }));
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    currency: c.currency,
    images: images(c.imageUrls),
    stars: c.stars,
    stayUnitKind: c.stayUnitKind,
    propertyKindId: c.propertyKindId,
    contactInfo: structuredClone(c.contactInfo),
    policy: { checkInTime: c.checkInTime, checkOutTime: c.checkOutTime },
    timeZone: { id: c.timeZone },
    ratePlans,
    roomTypes,
    services,
    multiLocationProperty: c.multiLocationProperty,
    companyDetails: { ...c.companyDetails },
    amenities: c.amenities.map((a) => ({ ...a })),
  };
}

/** Rules referenced by the served (not removed) rate plans. */
export function servedCancellationRules(c: PropertyContent, edits: ContentEdits): CancellationRule[] {
  const used = new Set(c.ratePlans.filter((rp) => !edits.removedRatePlans.has(rp.id)).map((rp) => rp.cancellationRuleId));
  return structuredClone(c.cancellationRules.filter((r) => used.has(r.id)));
}

export function servedExtraStayRules(c: PropertyContent, edits: ContentEdits): ExtraStayRule[] {
  const used = new Set(c.ratePlans.filter((rp) => !edits.removedRatePlans.has(rp.id)).map((rp) => rp.extraStayRuleId));
  return structuredClone(c.extraStayRules.filter((r) => used.has(r.id)));
}

/** A body that fails the property schema: `ratePlans` is a string and `name` a number. */
export function malformedPropertyInfo(p: ContentPropertyInfo): Record<string, unknown> {
  return { ...p, name: 404_404, ratePlans: 'n/a' };
}

/** A cancellation rule body that fails the rule schema: `cancellationTerms` is a string; `id` is kept. */
export function malformedCancellationRule(r: CancellationRule): Record<string, unknown> {
  return { ...r, cancellationTerms: 'n/a' };
}

/** An extra-stay rule body that fails the rule schema: both period lists are strings; `id` is kept. */
export function malformedExtraStayRule(r: ExtraStayRule): Record<string, unknown> {
  return { ...r, earlyCheckInPeriods: 'n/a', lateCheckOutPeriods: 'n/a' };
}

// ---- Duplicate ids (Faults.duplicateContentIds) ----

/** Name of the second copy of a duplicated room type, rate plan or service. */
const duplicateName = (name: string) => `${name} (listed twice)`;

/**
 * The property with its first room type, first rate plan and first service listed a second
 * time, each right after the original. The second copy has the same id and differs from the
 * first: its name gains " (listed twice)" and a room type keeps only its first amenity.
 */
export function withDuplicateContent(p: ContentPropertyInfo): ContentPropertyInfo {
  const twice = <T>(items: T[], copy: (first: T) => T): T[] => (items.length === 0 ? items : [items[0]!, copy(items[0]!), ...items.slice(1)]);
  return {
    ...p,
    roomTypes: twice(p.roomTypes, (rt) => ({ ...structuredClone(rt), name: duplicateName(rt.name), amenities: (rt.amenities ?? []).slice(0, 1) })),
    ratePlans: twice(p.ratePlans, (rp) => ({ ...structuredClone(rp), name: duplicateName(rp.name) })),
    services: twice(p.services, (s) => ({ ...structuredClone(s), name: duplicateName(s.name) })),
  };
}

/**
 * The rules with the first one listed a second time, right after it. The second copy has the
 * same id and differs: another reference point (without a time) and no terms (free of charge).
 */
export function withDuplicateCancellationRule(rules: CancellationRule[]): CancellationRule[] {
  if (rules.length === 0) return rules;
  const first = rules[0]!;
  const copy: CancellationRule = {
    ...structuredClone(first),
    referencePointKind: first.referencePointKind === 'BookingCreationTime' ? 'ProviderArrivalTime' : 'BookingCreationTime',
    referencePointTime: null,
    cancellationTerms: [],
  };
  return [first, copy, ...rules.slice(1)];
}

/**
 * The rules with the first one listed a second time, right after it. The second copy has the
 * same id and differs: no early check-in periods.
 */
export function withDuplicateExtraStayRule(rules: ExtraStayRule[]): ExtraStayRule[] {
  if (rules.length === 0) return rules;
  const first = rules[0]!;
  return [first, { ...structuredClone(first), earlyCheckInPeriods: [] }, ...rules.slice(1)];
}

// ---- Properties paging ----

/** Stable order of property ids: numeric ids by value, then the others lexically. */
export function compareIds(a: string, b: string): number {
  const an = /^\d+$/.test(a);
  const bn = /^\d+$/.test(b);
  if (an && bn) {
    const x = a.replace(/^0+(?=.)/, '');
    const y = b.replace(/^0+(?=.)/, '');
    if (x.length !== y.length) return x.length - y.length;
    if (x !== y) return x < y ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  if (an !== bn) return an ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const CURSOR_PREFIX = 'PR-';

/** `next`: base64 of `PR-<id of the last property of the page>`; the next page starts after that id. */
export function encodeSince(lastId: string): string {
  return Buffer.from(`${CURSOR_PREFIX}${lastId}`, 'utf8').toString('base64');
}

/** The id a `since` value points after, or undefined when the value is not one of ours. */
export function decodeSince(since: string): string | undefined {
  const token = since.replaceAll(' ', '+');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token)) return undefined;
  const text = Buffer.from(token, 'base64').toString('utf8');
  if (Buffer.from(text, 'utf8').toString('base64') !== token) return undefined;
  if (!text.startsWith(CURSOR_PREFIX) || text.length === CURSOR_PREFIX.length) return undefined;
  return text.slice(CURSOR_PREFIX.length);
}
