/**
 * Wire shapes of the PMS side the simulator serves: PMS API reservations, guests and rooms,
 * PMS Analytics daily occupancy, and the PMS Integration Storage bookings and inventory blocks.
 * Field names are the provider's; ids are strings and money is a JSON number.
 */

/** `{code, message}` of the PMS and PMS Analytics envelopes (both nullable strings). */
export interface PmsResponseError {
  code: string | null;
  message: string | null;
}

/** PmsApi_Amount. `currencyCode` is null in some real answers (read the reservation's). */
export interface PmsAmount {
  value: number;
  currencyCode: string | null;
}

export interface PmsPersonName {
  lastName: string | null;
  firstName: string | null;
  middleName: string | null;
}

/** PmsApi_Person: a reservation's customer and a guest profile. */
export interface PmsPerson {
  pmsPersonId: string;
  personName: PmsPersonName | null;
  /** `YYYY-MM-DD`. */
  birthDate: string | null;
  /** ISO 3166-1 alpha-3. */
  citizenship: string | null;
  status: { id: string | null; displayName: string | null } | null;
  emails: { address: string | null }[] | null;
  phones: { phoneNumber: string | null }[] | null;
  gender: 'Male' | 'Female' | 'Unknown';
}

/** PmsApi_PersonLoyalty: a loyalty card of a PMS person. */
export interface PmsLoyaltyCard {
  programId: string | null;
  cardNumber: string | null;
}

export interface PmsCompany {
  id: string | null;
  name: string | null;
  type: 'Customer' | 'Payer';
}

export type PmsRoomStayStatus = 'New' | 'CheckedIn' | 'CheckedOut' | 'Cancelled';
export type PmsReservationStatus = 'Unconfirmed' | 'Confirmed' | 'Cancelled' | 'Released' | 'Pending' | 'Edited';

/** PmsApi_RoomStay. Optional keys are absent (not null) when the stay has no such data, as in real answers. */
export interface PmsRoomStay {
  pmsRoomStayId: string;
  /** Null while no room is assigned. */
  roomId: string | null;
  roomTypeId: string;
  guestsIds: string[];
  /** Planned, property-local `YYYY-MM-DDTHH:mm`. */
  checkInDateTime: string;
  checkOutDateTime: string;
  /** Property-local `YYYY-MM-DDTHH:mm`, null until it happened. */
  actualCheckInDateTime: string | null;
  actualCheckOutDateTime: string | null;
  status: PmsRoomStayStatus;
  guestCount: { adults: number; children: number };
  deposit?: PmsAmount;
  totalPrice: { amount: PmsAmount; payAmount: PmsAmount; refundAmount: PmsAmount };
  amenities: { name: string | null }[];
}

export interface PmsAgentCommission {
  /** Set when calculationSource is Pms, null otherwise. */
  percent: number | null;
  calculationSource: 'Pms' | 'Ota';
  amount: PmsAmount | null;
  discount: PmsAmount | null;
}

/** PmsApi_Reservation. `groupName`, `customerCompany` and `agentCommission` are absent when the reservation has none. */
export interface PmsReservation {
  number: string;
  customerLanguageCode: string | null;
  visitPurpose: { id: string | null; displayName: string | null } | null;
  customerComment: string | null;
  /** UTC `YYYY-MM-DDTHH:mm:ssZ`. */
  modifyDateTime: string;
  groupName?: string | null;
  currencyCode: string;
  customer: PmsPerson | null;
  customerCompany?: PmsCompany;
  creationSource: { id: string | null; name: string | null };
  /** Non-null only for reservations a channel created. */
  channelInformation: { channelName: string | null } | null;
  reservationStatus: PmsReservationStatus;
  roomStays: PmsRoomStay[];
  agentCommission?: PmsAgentCommission;
}

/** PmsApi_InvoiceItem. */
export interface PmsInvoiceItem {
  accountingCode: string | null;
  name: string | null;
  kind: 'RoomType' | 'Option' | 'Transfer';
  /** Tax included. */
  total: PmsAmount | null;
  vat: { applicable: boolean; included: boolean; percent: number };
  quantity: { value: number; unit: 'Pcs' | 'Hours' | 'Nights' } | null;
}

/** PmsApi_Invoice: a room stay's, or the whole group's (pmsRoomStayId null). */
export interface PmsInvoice {
  number: string;
  pmsRoomStayId: string | null;
  payer: { name: string | null } | null;
  items: PmsInvoiceItem[];
}

/** PmsApi_Room. */
export interface PmsRoom {
  id: string;
  displayName: string;
  roomTypeId: string;
  floorId: string;
}

/** PmsAnalyticsApi_DailyOccupancy. */
export interface DailyOccupancy {
  /** `YYYY-MM-DD`. */
  date: string;
  /** 0.0 to 1.0, four decimals. */
  occupancyRate: number;
  closedRoomCount: number;
  occupancyRoomCount: number;
  complimentaryOccupancyRoomCount: number;
  roomRevenue: number;
  revenue: number;
  /** Absent on a date without meal revenue (computeDailyOccupancy). */
  mealRevenue?: number;
  arrivalCount: number;
  guestCount: number;
}

/** PmsAnalyticsApi_GetDailyOccupancyResponse without the envelope. */
export interface DailyOccupancyReport {
  currencyCode: string;
  propertyRoomCount: number;
  dailyOccupancies: DailyOccupancy[];
}

// ---- PMS Integration Storage ----

export interface StorageAmount {
  amountAfterTax: number;
  currencyCode: string;
}

export interface StorageRoomStay {
  index: number;
  sourceOfBusiness: string | null;
  marketCode: string | null;
  roomTypes: { index: number; pmsSideCode: string | null; pmsSideRoomNumber: string | null }[];
  ratePlans: { index: number; pmsSideCode: string | null }[];
  inventoryBlocks: { index: number; pmsSideCode: string | null }[];
  roomRates: {
    /** `YYYY-MM-DD`. */
    stayDate: string;
    roomTypeIndex: number;
    ratePlanIndex: number;
    inventoryBlockIndex: number | null;
    total: StorageAmount;
  }[];
  services: {
    quantity: number;
    pmsSideCode: string | null;
    name: string | null;
    startDate: string;
    durationStayUnits: number;
    total: StorageAmount;
    inclusive: boolean;
  }[];
  guestCounts: { ageQualifyingCode: 'AdultBed' | 'ChildBandBed'; count: number; age: number | null }[];
  /** Property-local `YYYY-MM-DDTHH:mm:ss`. */
  stayDates: {
    arrivalDateTime: string;
    departureDateTime: string;
    actualCheckInDateTime: string | null;
    actualCheckOutDateTime: string | null;
  };
}

export type StorageBookingStatus = 'Unknown' | 'Confirmed' | 'Waitlisted' | 'InHouse' | 'CheckedOut' | 'Cancelled';

/** PmsIntegrationApi_Booking. `cancellationInfo` is present only for cancelled bookings. */
export interface IntegrationStorageBooking {
  /** Storage-internal numeric id (not the booking number). */
  id: string;
  status: StorageBookingStatus;
  uniqueIds: { id: string | null; idContext: 'Unknown' | 'Pms' | 'Internal' | 'External' }[];
  bookingChannels: {
    code: string | null;
    codeType: 'Unknown' | 'Pms';
    name: string | null;
    bookingChannelType: 'Unknown' | 'TravelAgent' | 'Company';
  }[];
  roomStays: StorageRoomStay[];
  total: StorageAmount;
  guaranteeInfo: { guaranteeCode: string | null };
  propertyId: string;
  /** Property-local `YYYY-MM-DDTHH:mm:ss`. */
  pmsSideUpdateDateTime: string;
  pmsSideCreateDateTime: string;
  /** UTC `YYYY-MM-DDTHH:mm:ssZ`: when the storage record changed. */
  updateDateTime: string;
  cancellationInfo?: { pmsSideCancelDateTime: string; cancelReason: string | null };
  roomRevenues: { stayDate: string; amount: StorageAmount }[];
}

/** PmsIntegrationApi_InventoryBlock. */
export interface InventoryBlock {
  id: string;
  propertyId: string;
  pmsSideId: string | null;
  pmsSideCode: string | null;
  /** UTC `YYYY-MM-DDTHH:mm:ssZ`. */
  updateDateTime: string;
  /** Property-local `YYYY-MM-DDTHH:mm:ss`. */
  pmsSideCreateDateTime: string;
  pmsSideCancelDateTime: string | null;
  ratePlanCodes: string[];
  blockStatus: 'Unknown' | 'Inquiry' | 'Active' | 'Cancelled';
  pmsBlockStatus: string | null;
  dailyItems: {
    date: string;
    roomTypeCode: string | null;
    blockedCount: number;
    realizedCount: number | null;
    cutoffDate: string | null;
    pricing: { oneAdultPrice: number | null; servicesPrice: number | null; currencyCode: string };
  }[];
}

// ---- Rooms by type ----

/** PmsApi_Room inside the accommodation inventory tree. */
export interface AccommodationRoom {
  id: string;
  displayName: string;
  roomTypeId: string;
  floorId: string;
}

/** PmsApi_AccommodationInventory: buildings > floors > rooms. */
export interface AccommodationInventory {
  buildings: { id: string; name: string; floors: { id: string; name: string; rooms: AccommodationRoom[] }[] }[];
}

/** PmsIntegrationApi_DailyRoomTypeInventory. */
export interface DailyRoomTypeInventory {
  roomTypeCode: string;
  /** `YYYY-MM-DD`, property local. */
  date: string;
  physicalRoomCount: number;
  /** Rooms still free to sell: physical less sold less out of order. */
  availableRoomCount: number;
  outOfOrderRoomCount: number;
  /** UTC `YYYY-MM-DDTHH:mm:ssZ`. */
  updateDateTime: string;
}
