/**
 * Simulator of the provider's Partner API (token endpoint + Read Reservation API), for
 * integration tests, the demo and the bench. See server.ts for the behaviour.
 */
export { startSimulator } from './server.js';
export type { Faults, RequestLogEntry, Simulator, SimulatorOptions, SimulatorStats } from './server.js';
export type {
  BookingPayload,
  BookingService,
  BookingStatus,
  BookingSummary,
  BookingsPage,
  PropertyContent,
  RoomStay,
  RoomStayService,
  Total,
} from './types.js';
export { defaultRateLimits } from './rate-limit.js';
export { EPOCH_2009_MS, formatUtcSeconds } from './data.js';
