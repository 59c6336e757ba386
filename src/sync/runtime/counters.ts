/** Counters of one process, shown in progress logs, /metrics, sync_runs and the bench. */
export class SyncCounters {
  summaryPages = 0;
  summaries = 0;
  detailsEnqueued = 0;
  detailsFetched = 0;
  detailsWritten = 0;
  detailsStale = 0;
  detailsNotFound = 0;
  quarantined = 0;
  detailFailures = 0;
  /** Bookings the database refused to store (quarantined with the reason). */
  writeFailures = 0;
  pollErrors = 0;
  /** 400s answered to a stored continueToken (sync/runtime/token-rejections.ts). */
  continueTokenRejections = 0;
  /** Booking lists whose token this process declared lost (the property then needs a recovery). */
  continueTokensLost = 0;
  /** Booking lists this process restarted from a modification time: --recover, or sync.autoRecover. */
  continueTokensRecovered = 0;
  pmsSearchPages = 0;
  pmsReservationsEnqueued = 0;
  pmsReservationsFetched = 0;
  pmsReservationsWritten = 0;
  occupancyWindows = 0;
  pmsRoomsRefreshed = 0;
  pmsCompaniesRefreshed = 0;
  /** Read by the pass after the backfill (pms-deferred-reads.ts). */
  pmsInvoicesRead = 0;
  pmsLoyaltyCardsRead = 0;
  /** Accommodation inventories read (rooms by type). */
  accommodationInventories = 0;
  /** Inventory searches (one window of room type days each) and stay-unit counts read. */
  roomInventoryWindows = 0;
  stayUnitCounts = 0;
  webhookBatches = 0;
  webhookEventsStored = 0;
  webhookEventsDuplicate = 0;
  webhookEventsProcessed = 0;
  webhookEventsFailed = 0;
  webhookEventsIgnored = 0;
  /** Events the receiver quarantined: not events, or refused by the database for their content. */
  webhookEventsRefused = 0;
  /** Events of properties no connection follows: kept, never fetched. */
  webhookEventsUnfollowed = 0;
  /** Events created before the mirror's copy of what they name was read: processed without a fetch. */
  webhookEventsCovered = 0;
  /** Times events waited for their property's turn (webhooks.eventFetchesPerProperty). */
  webhookEventsDeferred = 0;
  /** Times events were kept waiting: what they name cannot be fetched now (area not granted, no property has the id, a refusal). */
  webhookEventsWaiting = 0;
  /** Requests that asked a property of the connection for a storage booking or block an event named without its property. */
  webhookPropertyLookups = 0;

  toJSON(): Record<string, number> {
    return Object.fromEntries(Object.entries(this).filter(([, v]) => typeof v === 'number'));
  }
}
