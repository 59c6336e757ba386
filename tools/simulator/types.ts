/**
 * Wire shapes the simulator serves: Read Reservation booking summaries and booking details
 * (test/fixtures/provider and test/fixtures/openapi), and the content model each property carries.
 */

export type BookingStatus = 'Active' | 'Cancelled' | 'Unconfirmed';

export interface BookingSummary {
  number: string;
  /** Integer for some properties, string for others, as the real API does. */
  propertyId: number | string;
  status: BookingStatus;
  createdDateTime: string;
  modifiedDateTime: string;
}

export interface BookingsPage {
  continueToken: string;
  hasMoreData: boolean;
  bookingSummaries: BookingSummary[];
}

export interface TaxAmount {
  amount: number;
  index: number;
}

export interface Discount {
  amount: number;
  discountType: 'Percentage' | 'Fixed';
  name: string | null;
  percent: number;
}

export interface Total {
  priceBeforeTax: number;
  priceAfterTax: number;
  taxAmount: number;
  taxes?: TaxAmount[] | null;
  discounts?: Discount[] | null;
}

export interface ServiceTotal {
  priceBeforeTax: number;
  priceAfterTax: number;
  taxAmount: number;
  taxes?: TaxAmount[] | null;
}

export interface RoomStayService {
  id: string;
  name: string;
  description: string;
  total?: ServiceTotal;
  inclusive: boolean;
  kind: 'Common' | 'Meal';
  mealPlanCode?: string | null;
}

export interface ExtraStayDetails {
  overriddenDateTime: string;
  total: Total;
}

export interface RoomStay {
  index?: number;
  stayDates: { arrivalDateTime: string; departureDateTime: string };
  ratePlans: { id: string; name: string }[];
  roomType: { id: string; name: string };
  guestCount: { adultCount: number; childAges: number[] | null };
  guests: { firstName: string | null; lastName: string | null }[] | null;
  dailyRates: { ratePlanId: string; priceBeforeTax: number; date: string }[];
  total: Total;
  services: RoomStayService[] | null;
  extraStayCharges?: { earlyArrival: ExtraStayDetails | null; lateDeparture: ExtraStayDetails | null };
}

export interface BookingService {
  id: string;
  name: string;
  description: string;
  total?: ServiceTotal;
}

export interface BookingPayload {
  propertyId: string;
  number: string;
  status: BookingStatus;
  createdDateTime: string;
  modifiedDateTime: string;
  guaranteeInfo: {
    loyalty: { cards: { cardNumber: string | null; loyaltySystemId: string | null }[] | null } | null;
    totalPrepaid: number;
    /** Required by the schema but absent from some real payloads; absent here too, sometimes. */
    guarantees?: { paymentMethod: string }[];
  };
  currencyCode: string;
  roomStays: RoomStay[];
  services: BookingService[] | null;
  total: Total;
  taxes: { index: number; name: string | null; description: string | null }[];
  cancellation: { penaltyAmount: number | null; cancelledDateTime: string } | null;
  source: { type: 'Channel' | 'BookingEngine' | 'PMS' | 'Other'; code?: string | null; sourceUrl?: string | null };
  customer: { firstName: string | null; lastName: string | null } | null;
}

/** Content model of one property: what the bookings reference and what /api/content serves. */
export interface PropertyContent {
  id: string;
  name: string;
  /** IANA time zone; stay times in bookings are local to it. */
  timeZone: string;
  currency: string;
  checkInTime: string;
  checkOutTime: string;
  roomTypes: {
    id: string;
    name: string;
    categoryCode: string;
    baseRateCents: number;
    categoryName: string;
    description: string;
    /** Codes from the room amenity categories. */
    amenityCodes: string[];
    imageUrls: string[];
    sizeM2: number;
    occupancy: ContentOccupancy;
    placements: ContentPlacement[];
    /** Only for multi-location properties. */
    address?: ContentAddress;
    position: number | null;
  }[];
  ratePlans: {
    id: string;
    name: string;
    cancellationRuleId: string;
    extraStayRuleId: string;
    priceFactor: number;
    description: string | null;
    isStayWithChildrenOnly: boolean;
    corporateOnly: boolean;
    vat: ContentVat;
    availableServices: ContentRatePlanService[];
  }[];
  services: {
    id: string;
    name: string;
    description: string;
    kind: 'Common' | 'Meal';
    mealPlanCode?: string;
    /** From the meal-plan reference; set with mealPlanCode. */
    mealPlanName?: string;
    priceCents: number;
    imageUrls: string[];
    vat: ContentVat;
  }[];
  /** A per-guest, per-night fee payable at check-in, or null when the property charges none. */
  lodgingTax: { index: number; name: string; description: string; perGuestNightCents: number } | null;
  /** Whether booking summaries carry propertyId as a string (true) or an integer (false). */
  summaryPropertyIdAsString: boolean;
  description: string;
  stars: number | null;
  stayUnitKind: 'NightRate' | 'DailyRate';
  /** An id of the property kinds reference list. */
  propertyKindId: number;
  contactInfo: ContentContactInfo;
  imageUrls: string[];
  multiLocationProperty: boolean;
  companyDetails: ContentCompanyDetails;
  amenities: ContentPropertyAmenity[];
  /** Every rule the rate plans reference (ids unique across the simulator). */
  cancellationRules: CancellationRule[];
  extraStayRules: ExtraStayRule[];
}

// ---- Content API and Reference Data API wire shapes (OpenAPI ContentApi_* / ReferenceDataApi_*) ----

/** ContentApi_Resource. */
export interface ContentResource {
  url: string;
}

/** ContentApi_Address. */
export interface ContentAddress {
  postalCode?: string | null;
  /** ISO 3166-1 alpha-3. */
  countryCode: string;
  region?: string | null;
  regionId?: string | null;
  cityName?: string | null;
  cityId?: string | null;
  addressLine?: string | null;
  latitude?: number | null;
  longitude?: number | null;
  remark?: string | null;
}

/** ContentApi_Phone. */
export interface ContentPhone {
  phoneNumber?: string | null;
  remark?: string | null;
}

/** ContentApi_ContactInfo. */
export interface ContentContactInfo {
  address: ContentAddress;
  phones?: ContentPhone[] | null;
  emails?: string[] | null;
}

/** ContentApi_Vat: `included` and `percent` are absent when `applicable` is false. */
export interface ContentVat {
  applicable: boolean;
  included?: boolean | null;
  percent?: number | null;
}

/** ContentApi_Service: a service of a rate plan (note: integer ids). */
export interface ContentRatePlanService {
  id: number;
  included: boolean;
  roomTypeIds?: number[] | null;
  roomTypeAvailability: 'All' | 'Selective';
}

/** ContentApi_RatePlanInfo. */
export interface ContentRatePlan {
  id: string;
  name: string;
  description?: string | null;
  currency: string;
  isStayWithChildrenOnly: boolean;
  cancellationRuleId: string;
  extraStayRuleId?: string | null;
  vat?: ContentVat;
  availableServices?: ContentRatePlanService[] | null;
  corporateOnly: boolean;
}

/** ContentApi_Placement. */
export interface ContentPlacement {
  kind: 'Adult' | 'ExtraAdult' | 'Child' | 'ExtraChild' | 'ChildBandWithoutBed';
  count: number;
  minAge?: number | null;
  maxAge?: number | null;
}

/** ContentApi_OccupancyInfo. */
export interface ContentOccupancy {
  adultBed: number;
  extraBed: number;
  childWithoutBed: number;
}

/**
 * Amenity of a room type. The OpenAPI ContentApi_Amenity declares only `code`; the spec (2.3)
 * says room type amenities carry `code` and `name` (from room amenity categories). Both are served.
 */
export interface ContentRoomAmenity {
  code: string;
  name?: string | null;
}

/** ContentApi_RoomTypeInfo. */
export interface ContentRoomType {
  id: string;
  name: string;
  description?: string | null;
  amenities?: ContentRoomAmenity[] | null;
  images?: ContentResource[] | null;
  size?: { value: number };
  categoryCode: string;
  categoryName: string;
  /** Only for multi-location properties. */
  address?: ContentAddress;
  occupancy?: ContentOccupancy;
  placements: ContentPlacement[];
  position?: number | null;
}

/** ContentApi_ServiceInfo: mealPlanCode / mealPlanName are null unless kind is Meal. */
export interface ContentService {
  id: string;
  name: string;
  description?: string | null;
  kind: 'Common' | 'Meal';
  mealPlanCode?: string | null;
  mealPlanName?: string | null;
  images?: ContentResource[] | null;
  status?: 'Active' | 'Inactive';
  vat?: ContentVat;
}

/** ContentApi_AmenityChargeType. */
export type AmenityChargeType = 'None' | 'Free' | 'Chargeable';

/** ContentApi_PropertyAmenity. */
export interface ContentPropertyAmenity {
  code: string;
  displayName: string;
  chargeType: AmenityChargeType;
}

/** ContentApi_CompanyDetails. */
export interface ContentCompanyDetails {
  legalEntityName?: string | null;
  taxpayerIdentificationNumber?: string | null;
  companyRegistrationNumber?: string | null;
  legalAddress?: string | null;
}

/** ContentApi_PropertyInfoType (also what the list serves per property with include=All). */
export interface ContentPropertyInfo {
  id: string;
  name: string;
  description?: string | null;
  currency?: string | null;
  images?: ContentResource[] | null;
  stars?: number | null;
  stayUnitKind?: 'NightRate' | 'DailyRate';
  propertyKindId?: number;
  contactInfo: ContentContactInfo;
  policy: { checkInTime: string; checkOutTime: string };
  timeZone: { id: string };
  ratePlans: ContentRatePlan[];
  roomTypes: ContentRoomType[];
  services: ContentService[];
  multiLocationProperty: boolean;
  companyDetails?: ContentCompanyDetails;
  amenities: ContentPropertyAmenity[];
}

/** ContentApi_Warning. */
export interface ContentWarning {
  code?: string | null;
  message?: string | null;
}

/** ContentApi_PropertyInfoPage. `next` is null on the last page. */
export interface ContentPropertyPage {
  next: string | null;
  /** Full properties with include=All; `{ id }` only with include empty. */
  properties: (ContentPropertyInfo | { id: string })[];
  warnings: ContentWarning[];
}

/** ContentApi_CancellationTerm. */
export interface CancellationTerm {
  beforeArrivalMatching: 'NoMatter' | 'AtLeast' | 'NoMoreThan' | 'Between';
  beforeArrivalUnit: 'None' | 'Day' | 'Hour';
  beforeArrivalValue: number;
  /** Only with Between. */
  beforeArrivalValueMax?: number;
  penaltyCalculationMethod: 'PrepaymentPercent' | 'FirstNights' | 'NoPenalty' | 'FirstNightPercent' | 'Percent' | 'Fixed';
  penaltyValue: number;
  penaltyValueCurrency?: string | null;
  arrivalDates?: { startDate: string; endDate: string; isEndless: boolean }[] | null;
}

/** ContentApi_CancellationRule. */
export interface CancellationRule {
  id: string;
  propertyId: string;
  referencePointKind: 'ProviderArrivalTime' | 'ProviderDepartureTime' | 'GuestArrivalTime' | 'CustomArrivalTime' | 'BookingCreationTime';
  /** Set with CustomArrivalTime, null otherwise. */
  referencePointTime: string | null;
  /** Empty: cancellation is free of charge. */
  cancellationTerms: CancellationTerm[];
}

/** ContentApi_ExtraStayChargeType. */
export type ExtraStayChargeType = 'Free' | 'Fixed' | 'Percent' | 'HourlyRate' | 'HourlyRateAutoCalculated' | 'Forbidden';

/** ContentApi_ExtraStayRulePeriod: `[startTime, endTime)`, the last period ends at 24:00. */
export interface ExtraStayRulePeriod {
  startTime: string;
  endTime: string;
  chargeType: ExtraStayChargeType;
  /** Non-empty for Fixed and HourlyRate, empty otherwise. */
  rates: { currency: string; rate: number }[];
  /** Present for Percent only. */
  percentOptions?: { percentage: number; extraPlacementEnabled: boolean; extraServiceOption: 'None' | 'All' | 'MealOnly' };
  occupyQuota: boolean;
}

/** ContentApi_ExtraStayRule. */
export interface ExtraStayRule {
  id: string;
  propertyId: string;
  checkInTime: string;
  overridesPropertyCheckInTime: boolean;
  earlyCheckInPeriods: ExtraStayRulePeriod[];
  checkOutTime: string;
  overridesPropertyCheckOutTime: boolean;
  lateCheckOutPeriods: ExtraStayRulePeriod[];
}

/** ContentApi_MealPlan. */
export interface MealPlan {
  code: string;
  name: string;
}

/** ContentApi_RoomTypeCategory. */
export interface RoomTypeCategory {
  code: string;
  name: string;
}

/** ContentApi_RoomAmenitiesCategories: a named category holding amenities (ContentApi_AmenityInfo). */
export interface RoomAmenityCategory {
  name: string;
  amenities: { code: string; name: string }[];
}

/** ReferenceDataApi_PaymentMethod. */
export interface PaymentMethod {
  code: 'AtArrival' | 'BankCardGuarantee' | 'BankCard' | 'SBP';
  type: 'Cash' | 'Prepay';
}

/** ReferenceDataApi_PropertyAmenityType. */
export interface PropertyAmenityType {
  code: string;
  displayName: string;
  chargeTypeApplicable: boolean;
}

/** ReferenceDataApi_PropertyKindDto. */
export interface PropertyKind {
  id: number;
  displayName: string;
  propertyKindType: string;
}

/** Every reference list, exactly as served (the arrays inside the response bodies). */
export interface ReferenceLists {
  /** GET /api/content/v1/meal-plans (the body is the array). */
  mealPlans: MealPlan[];
  /** GET /api/content/v1/room-type-categories (the body is the array). */
  roomTypeCategories: RoomTypeCategory[];
  /** GET /api/content/v1/room-amenity-categories (the body is the array). */
  roomAmenityCategories: RoomAmenityCategory[];
  /** GET /api/reference-data/payment-methods → `{ paymentMethods }`. */
  paymentMethods: PaymentMethod[];
  /** GET /api/reference-data/property-amenity-types → `{ amenityTypes }`. */
  amenityTypes: PropertyAmenityType[];
  /** GET /api/reference-data/property-kinds → `{ propertyKinds }`. */
  propertyKinds: PropertyKind[];
}
