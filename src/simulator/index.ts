/**
 * Simulator of the provider's Partner API (token endpoint, Read Reservation API, Content API
 * and Reference Data API), for
 * integration tests, the demo and the bench. See server.ts for the behaviour.
 */
export { startSimulator } from './server.js';
export type {
  Faults,
  PropertyStatusFault,
  PropertyStatusScope,
  RequestLogEntry,
  Simulator,
  SimulatorOptions,
  SimulatorStats,
} from './server.js';
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
export { defaultRateLimits } from './rate-limit.js';
export { EPOCH_2009_MS, formatUtcSeconds } from './data.js';
