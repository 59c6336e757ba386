/**
 * Every name and state the database keeps, in one module: the streams' names, and each state
 * column's values as a const list. The kysely table types (schema.ts) take their unions; a
 * CHECK constraint of the migrations holds each list (`checkedColumns` below); and
 * test/integration/schema-drift.test.ts compares a freshly migrated catalog with both, so that
 * neither the code nor the schema can change alone.
 */

/** Every stream by name: what sync_cursors.stream, quarantine.stream, the logs and the metrics call it. */
export const streamNames = {
  /** The booking list of a property (a cursor: the continueToken). */
  bookingSummaries: 'booking_summaries',
  /** The reconciliation sweep of the booking list (a cursor of its own). */
  bookingSweep: 'booking_sweep',
  /** The details of listed bookings (booking_detail_queue). */
  bookingDetails: 'booking_details',
  /** Content and reference data (a refresh). */
  content: 'content',
  /** The PMS reservation search of a property (a cursor). */
  pmsReservations: 'pms_reservations',
  /** The PMS reservations to fetch (pms_reservation_queue). */
  pmsReservationQueue: 'pms_reservation_queue',
  /** The PMS rooms (a refresh). */
  pmsRooms: 'pms_rooms',
  /** PMS guest profiles (fetched with their reservations). */
  pmsGuests: 'pms_guests',
  /** The invoices of PMS reservations (fetched with each newer version of their reservation). */
  pmsInvoices: 'pms_invoices',
  /** The invoices and loyalty cards a PMS backfill leaves for later (a queue of the rows not read). */
  pmsDeferredReads: 'pms_deferred_reads',
  /** The loyalty cards of PMS persons (read with their profiles). */
  pmsLoyaltyCards: 'pms_loyalty_cards',
  /** The companies of each property in the PMS (a refresh). */
  pmsCompanies: 'pms_companies',
  /** The daily occupancy statistics (a refresh, with a cursor per property). */
  dailyOccupancy: 'daily_occupancy',
  /** Where each room is: the PMS accommodation inventory of each property (a refresh, with the rooms). */
  accommodationInventory: 'accommodation_inventory',
  /** The inventory of each PMS room type and night (a refresh, with a cursor per property). */
  roomTypeInventory: 'room_type_inventory',
  /** The PMS's stay units by rate plan code and month (a refresh, with a cursor per property). */
  stayUnits: 'stay_units',
  /** The provider's change events, processed (webhook_events). */
  webhookEvents: 'webhook_events',
  /** The webhook receiver: events it could not store. */
  webhookReceiver: 'webhook_receiver',
  /** Each property's day close: the books recorded at its local midnight (a refresh). */
  dayClose: 'day_close',
  /** The erasure of personal data past privacy.retainPersonalDataDays (a refresh). */
  retention: 'retention',
} as const;
export type StreamName = (typeof streamNames)[keyof typeof streamNames];

/** Streams with a cursor per property (sync_cursors.stream). */
export const cursorStreams = [
  streamNames.bookingSummaries,
  streamNames.bookingSweep,
  streamNames.pmsReservations,
  streamNames.dailyOccupancy,
  streamNames.roomTypeInventory,
  streamNames.stayUnits,
  // Refreshes of a property whose last read and state show in status and /metrics.
  streamNames.pmsRooms,
  streamNames.pmsCompanies,
  streamNames.accommodationInventory,
  // Reads one thing at a time whose state shows only when most of a property's fail (sync/runtime/read-health.ts).
  streamNames.pmsInvoices,
  streamNames.pmsLoyaltyCards,
] as const;
export type CursorStream = (typeof cursorStreams)[number];

/** Streams that keep payloads in the quarantine (quarantine.stream). */
export const quarantineStreams = [
  streamNames.bookingSummaries,
  streamNames.bookingDetails,
  streamNames.content,
  streamNames.pmsReservations,
  streamNames.pmsRooms,
  streamNames.pmsGuests,
  streamNames.pmsInvoices,
  streamNames.pmsCompanies,
  streamNames.pmsLoyaltyCards,
  streamNames.dailyOccupancy,
  streamNames.webhookEvents,
  streamNames.webhookReceiver,
  streamNames.accommodationInventory,
  streamNames.roomTypeInventory,
  streamNames.stayUnits,
] as const;
export type QuarantineStream = (typeof quarantineStreams)[number];

/**
 * A stream's cursor of one property (sync_cursors.state). `needs_recover`: the booking list's
 * continueToken is lost (sync/streams/booking-summaries.ts says when); that property's list
 * waits for a recovery. `not_granted`: the API connection may not use the stream's API area (the
 * access token's api_accesses, or a 403 of the area): not a failure; it starts at a token that grants it.
 */
export const cursorStates = ['active', 'retrying', 'failing', 'needs_recover', 'not_granted'] as const;
export type CursorState = (typeof cursorStates)[number];

/** A fetch of a queue (booking_detail_queue.state, pms_reservation_queue.state). */
export const queueStates = ['pending', 'not_found', 'quarantined'] as const;
export type QueueState = (typeof queueStates)[number];

/** How a process's run of one connection ended (sync_runs.outcome; NULL while it runs). */
export const runOutcomes = ['ok', 'failed', 'token_lost', 'stopped', 'killed', 'content_failed', 'refresh_failed'] as const;
export type RunOutcome = (typeof runOutcomes)[number];

/** How a content refresh ended (content_refreshes.outcome; NULL while it runs). */
export const refreshOutcomes = ['ok', 'failed', 'stopped', 'killed'] as const;
export type RefreshOutcome = (typeof refreshOutcomes)[number];

/**
 * A received change event (webhook_events.state). `waiting`: kept, because what it names cannot
 * be fetched now (its area not granted, its property not found); looked at again later.
 */
export const webhookEventStates = ['pending', 'waiting', 'processed', 'ignored', 'failed'] as const;
export type WebhookEventState = (typeof webhookEventStates)[number];

/**
 * An API connection (sync_connections.state): `waiting` while no replica holds it. A lost
 * continueToken stops a property's booking list, never its connection (cursorStates).
 */
export const connectionStates = ['waiting', 'starting', 'running', 'credentials_refused', 'failed', 'stopped'] as const;
export type ConnectionState = (typeof connectionStates)[number];

/** What a replica runs (sync_replicas.command): daemons balance the connections between them, `sync --once` is not counted. */
export const replicaCommands = ['run', 'sync --once'] as const;
export type ReplicaCommand = (typeof replicaCommands)[number];

/** Where a tax amount of a booking applies (booking_tax_amounts.level). */
export const taxLevels = ['booking', 'room_stay', 'service', 'early_arrival', 'late_departure'] as const;
export type TaxLevel = (typeof taxLevels)[number];

/** What a point-of-sale code names (pos_codes.kind). */
export const posCodeKinds = ['channel', 'pos_type'] as const;
export type PosCodeKind = (typeof posCodeKinds)[number];

/** What changed from one booking version to the next (each element of booking_versions.changes). */
export const changeKinds = ['created', 'cancelled', 'reinstated', 'dates', 'rooms', 'room_type', 'price', 'other'] as const;
export type ChangeKind = (typeof changeKinds)[number];

/** Why personal data was erased (erasures.reason): forget-guest, or privacy.retainPersonalDataDays. */
export const erasureReasons = ['request', 'retention'] as const;
export type ErasureReason = (typeof erasureReasons)[number];

/** What forget-guest was told whom to erase by (erasures.selector_kind). */
export const erasureSelectorKinds = ['email', 'phone', 'person', 'booking'] as const;
export type ErasureSelectorKind = (typeof erasureSelectorKinds)[number];

/** What an erased person is recognised by in later versions (erased_identities.kind; src/mapping/erasure.ts). */
export const identityKinds = ['email', 'phone', 'person', 'booking_person'] as const;
export type IdentityKind = (typeof identityKinds)[number];

/** Each column a CHECK constraint holds to a list, with its list. */
export const checkedColumns: Readonly<Record<string, readonly string[]>> = {
  'sync_cursors.stream': cursorStreams,
  'sync_cursors.state': cursorStates,
  'booking_detail_queue.state': queueStates,
  'pms_reservation_queue.state': queueStates,
  'sync_runs.outcome': runOutcomes,
  'content_refreshes.outcome': refreshOutcomes,
  'webhook_events.state': webhookEventStates,
  'sync_connections.state': connectionStates,
  'sync_replicas.command': replicaCommands,
  'quarantine.stream': quarantineStreams,
  'booking_tax_amounts.level': taxLevels,
  'pos_codes.kind': posCodeKinds,
  'booking_versions.changes': changeKinds,
  'erasures.reason': erasureReasons,
  'erasures.selector_kind': erasureSelectorKinds,
  'erased_identities.kind': identityKinds,
};
