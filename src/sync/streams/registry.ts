/**
 * The streams the engine runs, registered in one place (their kinds: types.ts). The engine
 * gives each the same treatment in both modes (`sync --once` and `run`): failures are
 * classified in one place, the database and the lease are waited for, progress and shutdown
 * are shared. Adding a stream is adding an entry to `registeredStreams`.
 */
import { bookingDetailsStream } from './booking-details.js';
import { bookingSummariesStream } from './booking-summaries.js';
import { bookingSweepStream } from './booking-sweep.js';
import { contentStream } from './content.js';
import { dayCloseStream } from './day-close.js';
import { webhookEventsStream } from './events.js';
import { dailyOccupancyStream, pmsCompaniesStream, pmsRoomsStream } from './pms-refreshes.js';
import { pmsDeferredReadsStream } from './pms-deferred-reads.js';
import { pmsReservationQueueStream, pmsReservationsStream } from './pms-reservations.js';
import { retentionStream } from './retention.js';
import { accommodationInventoryStream, roomTypeInventoryStream, stayUnitsStream } from './room-inventory.js';
import type { StreamRegistry } from './types.js';

/** In order: at start, the refreshes run one after the other in this order (content first, whose time zones the others use; the day close after the statistics it compares with). */
export const registeredStreams: StreamRegistry = {
  property: [bookingSummariesStream, bookingSweepStream, pmsReservationsStream],
  queues: [bookingDetailsStream, pmsReservationQueueStream, pmsDeferredReadsStream, webhookEventsStream],
  refreshes: [
    contentStream,
    pmsRoomsStream,
    pmsCompaniesStream,
    accommodationInventoryStream,
    dailyOccupancyStream,
    roomTypeInventoryStream,
    stayUnitsStream,
    dayCloseStream,
    retentionStream,
  ],
};
