/**
 * Simulator of the provider's Partner API (token endpoint, Read Reservation API, Content API,
 * Reference Data API, PMS API, PMS Analytics API, PMS Integration Storage API and webhooks),
 * for integration tests, the demo and the bench. See server.ts for the behaviour.
 */
export { startSimulator } from './server.js';
export type { Faults, PropertyStatusFault, PropertyStatusScope, RequestLogEntry, Simulator, SimulatorOptions, SimulatorStats } from './server.js';
export type {
  BookingPayload,
  BookingService,
  BookingStatus,
  BookingSummary,
  BookingsPage,
  CancellationRule,
  CancellationTerm,
  ContentPropertyInfo,
  ContentPropertyPage,
  ContentRatePlan,
  ContentRoomType,
  ContentService,
  ContentPropertyAmenity,
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
  RoomStay,
  RoomStayService,
  Total,
} from './types.js';
export type {
  AccommodationInventory,
  DailyRoomTypeInventory,
  DailyOccupancy,
  DailyOccupancyReport,
  IntegrationStorageBooking,
  InventoryBlock,
  PmsAmount,
  PmsPerson,
  PmsReservation,
  PmsReservationStatus,
  PmsInvoice,
  PmsInvoiceItem,
  PmsRoom,
  PmsRoomStay,
  PmsRoomStayStatus,
  StorageRoomStay,
} from './pms-types.js';
export { computeDailyOccupancy, plannedClosedRooms } from './occupancy.js';
export type { OccupancyInput, OccupancyNight, OccupancyStay } from './occupancy.js';
export type { PmsEventType } from './pms.js';
export type { SimulatorWebhooks, WebhookAuth, WebhookConfig, WebhookDelivery, WebhookEvent } from './webhooks.js';
export { defaultRateLimits } from './rate-limit.js';
export { simulatorClaims } from './tokens.js';
export { EPOCH_2009_MS, formatUtcSeconds, type BookingAmendment } from './data.js';
