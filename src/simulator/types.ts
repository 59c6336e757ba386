/**
 * Wire shapes the simulator serves: Read Reservation booking summaries and booking details
 * (provider-api-facts.md sections 4 and 5), and the content model each property carries.
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

/** Content model of one property: what a later /api/content stand-in can serve. */
export interface PropertyContent {
  id: string;
  name: string;
  /** IANA time zone; stay times in bookings are local to it. */
  timeZone: string;
  currency: string;
  checkInTime: string;
  checkOutTime: string;
  roomTypes: { id: string; name: string; categoryCode: string; baseRateCents: number }[];
  ratePlans: { id: string; name: string; cancellationRuleId: string; extraStayRuleId: string; priceFactor: number }[];
  services: { id: string; name: string; description: string; kind: 'Common' | 'Meal'; mealPlanCode?: string; priceCents: number }[];
  /** A per-guest, per-night fee payable at check-in, or null when the property charges none. */
  lodgingTax: { index: number; name: string; description: string; perGuestNightCents: number } | null;
  /** Whether booking summaries carry propertyId as a string (true) or an integer (false). */
  summaryPropertyIdAsString: boolean;
}
