/**
 * Table types for kysely, mirroring `migrations/*.sql`. Numeric columns come back as
 * strings (exact money), timestamptz as Date, timestamp (property local) and date as text.
 */
import type { ColumnType, Generated, Insertable } from 'kysely';
import type {
  ChangeKind,
  ConnectionState,
  CursorState,
  CursorStream,
  PosCodeKind,
  QuarantineStream,
  QueueState,
  RefreshOutcome,
  ReplicaCommand,
  RunOutcome,
  TaxLevel,
  WebhookEventState,
  ErasureReason,
  ErasureSelectorKind,
  IdentityKind,
} from './states.js';

type Timestamptz = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamptz = ColumnType<Date | null, Date | string | null, Date | string | null>;
/** Property-local timestamp without zone, kept as `YYYY-MM-DDTHH:mm[:ss]` text. */
type LocalTimestamp = ColumnType<string | null, string | null, string | null>;
type Numeric = ColumnType<string | null, string | number | null, string | number | null>;
type Json = ColumnType<unknown, string, string>;
type NullableJson = ColumnType<unknown, string | null | undefined, string | null>;
type BigIntColumn = ColumnType<string, string | number | bigint, string | number | bigint>;
/** migrations/0013_synced_at.sql: when staysync last wrote the row; the database's time unless given. */
type SyncedAt = ColumnType<Date, Date | string | undefined, Date | string>;

export interface SyncCursorsTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  property_id: string;
  stream: CursorStream;
  cursor: string | null;
  position: NullableTimestamptz;
  state: ColumnType<CursorState, CursorState | undefined, CursorState>;
  caught_up: ColumnType<boolean, boolean | undefined, boolean>;
  pages: ColumnType<string, string | number | undefined, string | number>;
  rows_seen: ColumnType<string, string | number | undefined, string | number>;
  last_poll_at: NullableTimestamptz;
  last_error: string | null;
  error_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** migrations/0008_sweep.sql: the reconciliation sweep of each property. */
export interface BookingSweepsTable {
  property_id: string;
  watching_since: Timestamptz;
  pass_started_at: NullableTimestamptz;
  pass_from: NullableTimestamptz;
  pass_pages: ColumnType<number, number | undefined, number>;
  pass_summaries: ColumnType<number, number | undefined, number>;
  pass_enqueued: ColumnType<number, number | undefined, number>;
  pass_late: ColumnType<number, number | undefined, number>;
  pass_restarts: ColumnType<number, number | undefined, number>;
  last_started_at: NullableTimestamptz;
  last_finished_at: NullableTimestamptz;
  last_from: NullableTimestamptz;
  last_pages: number | null;
  last_summaries: number | null;
  last_enqueued: number | null;
  last_late: number | null;
  last_restarts: number | null;
  passes: ColumnType<string, string | number | undefined, string | number>;
  late_changes: ColumnType<string, string | number | undefined, string | number>;
}

export interface SyncLeaseTable {
  name: string;
  epoch: BigIntColumn;
  holder: string;
  acquired_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface BookingSummariesTable {
  property_id: string;
  number: string;
  status: string | null;
  created_at: NullableTimestamptz;
  modified_at: NullableTimestamptz;
  listed_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Json;
}

export interface BookingDetailQueueTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  property_id: string;
  number: string;
  wanted_modified_at: NullableTimestamptz;
  priority: number;
  state: ColumnType<QueueState, QueueState | undefined, QueueState>;
  generation: BigIntColumn;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  enqueued_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_error: string | null;
  /** migrations/0014_relisted_versions.sql: listed again with the stored modification second. */
  expect_change: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface BookingsTable {
  property_id: string;
  number: string;
  status: string;
  created_at: NullableTimestamptz;
  modified_at: Timestamptz;
  fetched_at: Timestamptz;
  currency_code: string | null;
  arrival_at: LocalTimestamp;
  departure_at: LocalTimestamp;
  room_stay_count: number;
  price_before_tax: Numeric;
  price_after_tax: Numeric;
  tax_amount: Numeric;
  total_prepaid: Numeric;
  cancelled_at: NullableTimestamptz;
  cancellation_penalty: Numeric;
  source_type: string | null;
  source_code: string | null;
  source_url: string | null;
  customer_first_name: string | null;
  customer_last_name: string | null;
  payment_method: string | null;
  payment_methods: (string | null)[] | null;
  synced_at: SyncedAt;
  raw: Json;
}

export interface BookingRoomStaysTable {
  property_id: string;
  number: string;
  stay_index: number;
  provider_index: ColumnType<string | null, number | string | null, number | string | null>;
  arrival_at: LocalTimestamp;
  departure_at: LocalTimestamp;
  room_type_id: string | null;
  room_type_name: string | null;
  rate_plan_id: string | null;
  rate_plan_name: string | null;
  adult_count: number | null;
  child_ages: number[] | null;
  price_before_tax: Numeric;
  price_after_tax: Numeric;
  tax_amount: Numeric;
  early_arrival_at: LocalTimestamp;
  early_arrival_price_after_tax: Numeric;
  late_departure_at: LocalTimestamp;
  late_departure_price_after_tax: Numeric;
  early_arrival_price_before_tax: Numeric;
  late_departure_price_before_tax: Numeric;
  synced_at: SyncedAt;
}

export interface BookingDailyRatesTable {
  property_id: string;
  number: string;
  stay_index: number;
  position: number;
  stay_date: string;
  rate_plan_id: string | null;
  price_before_tax: Numeric;
  /** migrations/0012_history.sql: the night after tax (src/mapping/room-revenue.ts). */
  gross_amount: Numeric;
  synced_at: SyncedAt;
}

export interface BookingServicesTable {
  property_id: string;
  number: string;
  position: number;
  stay_index: number | null;
  service_id: string | null;
  name: string | null;
  description: string | null;
  kind: string | null;
  meal_plan_code: string | null;
  inclusive: boolean | null;
  price_before_tax: Numeric;
  price_after_tax: Numeric;
  tax_amount: Numeric;
  synced_at: SyncedAt;
  raw: Json;
}

export interface BookingGuestsTable {
  property_id: string;
  number: string;
  stay_index: number;
  position: number;
  first_name: string | null;
  last_name: string | null;
  synced_at: SyncedAt;
}

export interface BookingTaxesTable {
  property_id: string;
  number: string;
  position: number;
  tax_index: number | null;
  name: string | null;
  description: string | null;
  synced_at: SyncedAt;
}

export interface BookingTaxAmountsTable {
  property_id: string;
  number: string;
  position: number;
  level: TaxLevel;
  stay_index: number | null;
  service_position: number | null;
  tax_index: number | null;
  name: string | null;
  amount: string;
  synced_at: SyncedAt;
}

export interface BookingRoomStayRatePlansTable {
  property_id: string;
  number: string;
  stay_index: number;
  position: number;
  rate_plan_id: string | null;
  rate_plan_name: string | null;
  synced_at: SyncedAt;
}

export interface BookingLoyaltyCardsTable {
  property_id: string;
  number: string;
  position: number;
  card_number: string | null;
  loyalty_system_id: string | null;
  synced_at: SyncedAt;
}

export interface ReferenceListsTable {
  list_name: string;
  raw: NullableJson;
  content_hash: string;
  fetched_at: Timestamptz;
  synced_at: SyncedAt;
}

/** migrations/0015_reader_grants.sql: the roles grant-reader made, granted again after every migration; 0018: their properties. */
export interface ReaderGrantsTable {
  role: string;
  personal_data: boolean;
  granted_at: ColumnType<Date, Date | string | undefined, Date | string>;
  properties: string[] | null;
}

/** migrations/0016_erasure.sql: the key of the erasure list's hashes (one row; never granted to readers); in the secret schema since 0018. */
export interface ErasureKeyTable {
  only_row: ColumnType<boolean, boolean | undefined, boolean>;
  key: string;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** migrations/0016_erasure.sql: the log of erasures (forget-guest, retention). */
export interface ErasuresTable {
  erasure_id: Generated<string>;
  erased_at: ColumnType<Date, Date | string | undefined, Date | string>;
  reason: ErasureReason;
  selector_kind: ErasureSelectorKind | null;
  selector_hash: string | null;
  persons: number;
  rows_touched: unknown;
}

/** migrations/0016_erasure.sql: the erasure list, identities as keyed hashes. */
export interface ErasedIdentitiesTable {
  kind: IdentityKind;
  hash: string;
  erasure_id: string;
}

export interface MirrorSettingsTable {
  name: string;
  value: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface BookingDiscountsTable {
  property_id: string;
  number: string;
  position: number;
  stay_index: number | null;
  discount_type: string | null;
  name: string | null;
  percent: Numeric;
  amount: Numeric;
  synced_at: SyncedAt;
}

export interface SyncRunsTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  id: Generated<string>;
  command: string;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: NullableTimestamptz;
  outcome: RunOutcome | null;
  stats: ColumnType<unknown, string | undefined, string>;
  error: string | null;
  host: string | null;
  pid: number | null;
}

export interface QuarantineTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  id: Generated<string>;
  stream: QuarantineStream;
  property_id: string | null;
  entity_key: string | null;
  reason: string;
  raw_body: string;
  received_at: ColumnType<Date, Date | string | undefined, Date | string>;
  reason_hash: string;
  occurrences: ColumnType<number, number | undefined, number>;
  last_seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** Content tables are written through repositories/content.ts; these are the ones read through kysely. */
export interface PropertiesTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  property_id: string;
  name: string | null;
  description: string | null;
  currency: string | null;
  stars: number | null;
  stay_unit_kind: string | null;
  property_kind_id: number | null;
  time_zone: string | null;
  multi_location: boolean | null;
  check_in_time: string | null;
  check_out_time: string | null;
  country_code: string | null;
  region: string | null;
  city_name: string | null;
  address_line: string | null;
  postal_code: string | null;
  latitude: number | null;
  longitude: number | null;
  phones: NullableJson;
  emails: NullableJson;
  images: NullableJson;
  company_details: NullableJson;
  raw: Json;
  content_hash: string;
  first_seen_at: ColumnType<Date, Date | string | undefined, Date | string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: NullableTimestamptz;
  synced_at: SyncedAt;
}

export interface ContentRefreshesTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  id: Generated<string>;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: NullableTimestamptz;
  outcome: RefreshOutcome | null;
  properties: number | null;
  requests: number | null;
  changed_rows: number | null;
  quarantined: number | null;
  error: string | null;
}

type LocalDate = ColumnType<string | null, string | null, string | null>;
type Jsonb = ColumnType<unknown, string, string>;

export interface PmsReservationsTable {
  property_id: string;
  number: string;
  reservation_status: string | null;
  modified_at: NullableTimestamptz;
  currency_code: string | null;
  customer_person_id: string | null;
  customer_first_name: string | null;
  customer_last_name: string | null;
  customer_middle_name: string | null;
  customer_language_code: string | null;
  customer_email: string | null;
  customer_phone: string | null;
  customer_birth_date: LocalDate;
  customer_citizenship: string | null;
  /** migrations/0017_pseudonyms.sql: HMAC-SHA-256 of the customer's normalised first e-mail and phone (src/mapping/pseudonyms.ts). */
  customer_email_hash: string | null;
  customer_phone_hash: string | null;
  customer_company_id: string | null;
  customer_company_name: string | null;
  customer_company_type: string | null;
  visit_purpose_id: string | null;
  visit_purpose_name: string | null;
  creation_source_id: string | null;
  creation_source_name: string | null;
  channel_name: string | null;
  group_name: string | null;
  customer_comment: string | null;
  agent_commission_percent: Numeric;
  agent_commission_amount: Numeric;
  /** migrations/0023_occupancy_history.sql: agentCommission typed whole. */
  agent_commission_source: string | null;
  agent_commission_discount: Numeric;
  agent_commission_currency: string | null;
  room_stay_count: number;
  fetched_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
  invoices_read_at: NullableTimestamptz;
}

export interface PmsRoomStaysTable {
  property_id: string;
  number: string;
  position: number;
  pms_room_stay_id: string | null;
  room_id: string | null;
  room_type_id: string | null;
  status: string | null;
  check_in_at: LocalTimestamp;
  check_out_at: LocalTimestamp;
  actual_check_in_at: LocalTimestamp;
  actual_check_out_at: LocalTimestamp;
  adults: number | null;
  children: number | null;
  amount: Numeric;
  pay_amount: Numeric;
  refund_amount: Numeric;
  deposit: Numeric;
  currency_code: string | null;
  guest_person_ids: string[];
  amenities: string[];
  synced_at: SyncedAt;
}

export interface PmsGuestsTable {
  property_id: string;
  pms_person_id: string;
  first_name: string | null;
  last_name: string | null;
  middle_name: string | null;
  gender: string | null;
  status_name: string | null;
  email: string | null;
  phone: string | null;
  birth_date: LocalDate;
  citizenship: string | null;
  /** migrations/0017_pseudonyms.sql: HMAC-SHA-256 of the person's normalised first e-mail and phone (src/mapping/pseudonyms.ts). */
  email_hash: string | null;
  phone_hash: string | null;
  fetched_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
  /** migrations/0024_loyalty_cards.sql: when the person's loyalty cards were last read. */
  loyalty_cards_read_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** migrations/0024_loyalty_cards.sql. */
export interface PmsGuestLoyaltyCardsTable {
  property_id: string;
  pms_person_id: string;
  position: number;
  program_id: string | null;
  card_number: string | null;
  synced_at: SyncedAt;
  /** The card as received, personal-data policy applied (migrations/0025_documented_units.sql). */
  raw: Json;
}

export interface PmsReservationQueueTable {
  /** migrations/0010_connections.sql: the API connection (default: the writing transaction's). */
  connection: ColumnType<string, string | undefined, string>;
  property_id: string;
  number: string;
  priority: number;
  state: ColumnType<QueueState, QueueState | undefined, QueueState>;
  generation: BigIntColumn;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  enqueued_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_error: string | null;
}

export interface PmsRoomsTable {
  property_id: string;
  room_id: string;
  display_name: string | null;
  room_type_id: string | null;
  floor_id: string | null;
  raw: Jsonb;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: NullableTimestamptz;
  synced_at: SyncedAt;
}

export interface PmsCompaniesTable {
  property_id: string;
  company_id: string;
  name: string | null;
  company_type: string | null;
  raw: Jsonb;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: NullableTimestamptz;
  synced_at: SyncedAt;
}

export interface PmsInvoicesTable {
  property_id: string;
  number: string;
  position: number;
  invoice_number: string | null;
  pms_room_stay_id: string | null;
  payer_name: string | null;
  total: Numeric;
  currency_code: string | null;
  synced_at: SyncedAt;
  raw: Jsonb;
}

export interface PmsInvoiceItemsTable {
  property_id: string;
  number: string;
  invoice_position: number;
  position: number;
  kind: string | null;
  name: string | null;
  accounting_code: string | null;
  quantity: Numeric;
  unit: string | null;
  total: Numeric;
  vat_applicable: boolean | null;
  vat_included: boolean | null;
  vat_percent: Numeric;
  currency_code: string | null;
  /** Generated by the database (migrations/0025_documented_units.sql: the total is tax included). */
  total_with_tax: ColumnType<string | null, never, never>;
  total_without_tax: ColumnType<string | null, never, never>;
  synced_at: SyncedAt;
}

export interface DailyOccupancyTable {
  property_id: string;
  stay_date: string;
  currency_code: string | null;
  property_room_count: number;
  occupancy_rate: ColumnType<string, string | number, string | number>;
  closed_room_count: number;
  occupancy_room_count: number;
  complimentary_occupancy_room_count: number;
  room_revenue: ColumnType<string, string | number, string | number>;
  revenue: ColumnType<string, string | number, string | number>;
  meal_revenue: ColumnType<string | null, string | number | null, string | number | null>;
  arrival_count: number;
  guest_count: number;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
}

// ---- rooms by type (migrations/0021_rooms_by_type.sql) ----

export interface PmsBuildingsTable {
  property_id: string;
  building_id: string;
  name: string | null;
  position: number;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface PmsFloorsTable {
  property_id: string;
  building_id: string;
  floor_id: string;
  name: string | null;
  position: number;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface PmsRoomPlacesTable {
  property_id: string;
  room_id: string;
  building_id: string;
  floor_id: string;
  display_name: string | null;
  room_type_id: string | null;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface PmsAccommodationInventoriesTable {
  property_id: string;
  raw: Jsonb;
  content_hash: string;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface RoomTypeInventoryDaysTable {
  property_id: string;
  room_type_code: string;
  stay_date: string;
  physical_room_count: number;
  available_room_count: number;
  out_of_order_room_count: number;
  /** Generated by the database: physical - available - out of order. */
  sold_room_count: ColumnType<number | null, never, never>;
  updated_at: NullableTimestamptz;
  refreshed_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
}

export interface StayUnitsTable {
  property_id: string;
  rate_plan_code: string;
  month: string;
  first_stay_date: string;
  last_stay_date: string;
  stay_units: number;
  read_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface PmsRoomTypeCodesTable {
  property_id: string;
  room_type_code: string;
  room_type_id: string;
  room_stays: number;
  learnt_at: Timestamptz;
  synced_at: SyncedAt;
}

export interface PmsRatePlanCodesTable {
  property_id: string;
  rate_plan_code: string;
  rate_plan_id: string;
  room_stays: number;
  learnt_at: Timestamptz;
  synced_at: SyncedAt;
}

/** migrations/0023_occupancy_history.sql: each version of a night's PMS statistics. */
export interface DailyOccupancyHistoryTable {
  property_id: string;
  stay_date: string;
  valid_from: Timestamptz;
  valid_to: NullableTimestamptz;
  currency_code: string | null;
  property_room_count: number;
  occupancy_rate: ColumnType<string, string | number, string | number>;
  closed_room_count: number;
  occupancy_room_count: number;
  complimentary_occupancy_room_count: number;
  room_revenue: ColumnType<string, string | number, string | number>;
  revenue: ColumnType<string, string | number, string | number>;
  meal_revenue: ColumnType<string | null, string | number | null, string | number | null>;
  arrival_count: number;
  guest_count: number;
  synced_at: SyncedAt;
}

/** migrations/0023_occupancy_history.sql: the last occupancy refresh of each property. */
export interface OccupancyRefreshesTable {
  property_id: string;
  started_at: Timestamptz;
  read_at: Timestamptz;
  first_date: string;
  last_date: string;
  nights: number;
  nights_changed: number;
  synced_at: SyncedAt;
}

export interface WebhookEventsTable {
  event_id: string;
  event_type: string;
  creation_time: NullableTimestamptz;
  payload: NullableJson;
  property_id: string | null;
  entity_key: string | null;
  state: ColumnType<WebhookEventState, WebhookEventState | undefined, WebhookEventState>;
  received_at: ColumnType<Date, Date | string | undefined, Date | string>;
  processed_at: NullableTimestamptz;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_error: string | null;
  synced_at: SyncedAt;
  /** The API connection the delivery URL named (migrations/0026_storage_events.sql). */
  connection: string | null;
}

export interface IntegrationStorageBookingsTable {
  property_id: string;
  booking_id: string;
  status: string | null;
  booking_number: string | null;
  updated_at: NullableTimestamptz;
  pms_updated_at: LocalTimestamp;
  pms_created_at: LocalTimestamp;
  cancelled_at: LocalTimestamp;
  cancel_reason: string | null;
  amount_after_tax: Numeric;
  currency_code: string | null;
  guarantee_code: string | null;
  arrival_at: LocalTimestamp;
  departure_at: LocalTimestamp;
  /** migrations/0022_storage_typed.sql: the first room stay's. */
  market_code: string | null;
  source_of_business: string | null;
  fetched_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
}

/** migrations/0022_storage_typed.sql: the booking channels of a storage booking. */
export interface IntegrationStorageBookingChannelsTable {
  property_id: string;
  booking_id: string;
  position: number;
  code: string | null;
  code_type: string | null;
  name: string | null;
  channel_type: string | null;
  synced_at: SyncedAt;
}

/** migrations/0022_storage_typed.sql: a storage booking's revenue per room stay and stay date. */
export interface IntegrationStorageBookingNightsTable {
  property_id: string;
  booking_id: string;
  room_stay_position: number;
  position: number;
  room_stay_index: number | null;
  stay_date: string;
  market_code: string | null;
  source_of_business: string | null;
  room_type_code: string | null;
  room_number: string | null;
  rate_plan_code: string | null;
  inventory_block_code: string | null;
  amount_after_tax: Numeric;
  currency_code: string | null;
  adults: number;
  children: number;
  synced_at: SyncedAt;
}

export interface InventoryBlocksTable {
  property_id: string;
  inventory_block_id: string;
  pms_side_id: string | null;
  pms_side_code: string | null;
  block_status: string | null;
  pms_block_status: string | null;
  updated_at: NullableTimestamptz;
  pms_created_at: LocalTimestamp;
  pms_cancelled_at: LocalTimestamp;
  rate_plan_codes: string[];
  fetched_at: Timestamptz;
  synced_at: SyncedAt;
  raw: Jsonb;
}

/** migrations/0022_storage_typed.sql: the days of an inventory block. */
export interface InventoryBlockDaysTable {
  property_id: string;
  inventory_block_id: string;
  position: number;
  stay_date: string;
  room_type_code: string | null;
  blocked_count: number | null;
  realized_count: number | null;
  cutoff_date: LocalDate;
  one_adult_price: Numeric;
  services_price: Numeric;
  currency_code: string | null;
  synced_at: SyncedAt;
}

/** migrations/0010_connections.sql: the processes syncing into the schema. */
export interface SyncReplicasTable {
  replica_id: string;
  host: string;
  pid: number;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  heartbeat_at: ColumnType<Date, Date | string | undefined, Date | string>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  command: ColumnType<ReplicaCommand, ReplicaCommand | undefined, ReplicaCommand>;
}

/** migrations/0010_connections.sql: each API connection's lease and state. */
export interface SyncConnectionsTable {
  connection: string;
  epoch: ColumnType<string, string | number | undefined, string | number>;
  replica_id: string | null;
  holder: string | null;
  lease_expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  acquired_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  state: ColumnType<ConnectionState, ConnectionState | undefined, ConnectionState>;
  reason: string | null;
  state_since: ColumnType<Date, Date | string | undefined, Date | string>;
  budget_ledger: NullableJson;
  ledger_saved_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** migrations/0010_connections.sql: token requests by egress, the per-IP token budget shared by replicas. */
export interface TokenRequestsTable {
  egress: string;
  sent_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** migrations/0002_content.sql: cancellation rule arrival dates. */
export interface CancellationRuleArrivalDatesTable {
  property_id: string;
  rule_id: string;
  term_position: number;
  position: number;
  start_date: string | null;
  end_date: string | null;
  is_endless: boolean | null;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: cancellation rule terms. */
export interface CancellationRuleTermsTable {
  property_id: string;
  rule_id: string;
  position: number;
  before_arrival_matching: string | null;
  before_arrival_unit: string | null;
  before_arrival_value: number | null;
  before_arrival_value_max: number | null;
  penalty_calculation_method: string | null;
  penalty_value: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  penalty_value_currency: string | null;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: cancellation rules. */
export interface CancellationRulesTable {
  property_id: string;
  rule_id: string;
  reference_point_kind: string | null;
  reference_point_time: string | null;
  is_free: boolean;
  raw: Json;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0009_freshness.sql: change lags. */
export interface ChangeLagsTable {
  property_id: string;
  number: string;
  modified_at: ColumnType<Date, Date | string, Date | string>;
  written_at: ColumnType<Date, Date | string, Date | string>;
}

/** migrations/0002_content.sql: extra stay rule periods. */
export interface ExtraStayRulePeriodsTable {
  property_id: string;
  rule_id: string;
  kind: string;
  position: number;
  start_time: string | null;
  end_time: string | null;
  charge_type: string | null;
  occupy_quota: boolean | null;
  percentage: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  extra_placement_enabled: boolean | null;
  extra_service_option: string | null;
  rates: NullableJson;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: extra stay rules. */
export interface ExtraStayRulesTable {
  property_id: string;
  rule_id: string;
  check_in_time: string | null;
  overrides_property_check_in_time: boolean | null;
  check_out_time: string | null;
  overrides_property_check_out_time: boolean | null;
  raw: Json;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: meal plans. */
export interface MealPlansTable {
  code: string;
  name: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: payment methods. */
export interface PaymentMethodsTable {
  code: string;
  type: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0006_reporting.sql: pos codes. */
export interface PosCodesTable {
  code: string;
  kind: PosCodeKind;
  name: string | null;
  origin: string;
}

/** migrations/0002_content.sql: property amenities. */
export interface PropertyAmenitiesTable {
  property_id: string;
  position: number;
  code: string | null;
  display_name: string | null;
  charge_type: string | null;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: property amenity types. */
export interface PropertyAmenityTypesTable {
  code: string;
  display_name: string | null;
  charge_type_applicable: boolean | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: property kinds. */
export interface PropertyKindsTable {
  property_kind_id: number;
  display_name: string | null;
  property_kind_type: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: rate plans. */
export interface RatePlansTable {
  property_id: string;
  rate_plan_id: string;
  name: string | null;
  description: string | null;
  currency: string | null;
  cancellation_rule_id: string | null;
  extra_stay_rule_id: string | null;
  corporate_only: boolean | null;
  stay_with_children_only: boolean | null;
  vat_applicable: boolean | null;
  vat_included: boolean | null;
  vat_percent: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  raw: Json;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: room amenities. */
export interface RoomAmenitiesTable {
  code: string;
  name: string | null;
  category_name: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: room type amenities. */
export interface RoomTypeAmenitiesTable {
  property_id: string;
  room_type_id: string;
  position: number;
  code: string | null;
  name: string | null;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: room type categories. */
export interface RoomTypeCategoriesTable {
  code: string;
  name: string | null;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: room types. */
export interface RoomTypesTable {
  property_id: string;
  room_type_id: string;
  name: string | null;
  description: string | null;
  category_code: string | null;
  category_name: string | null;
  size_value: ColumnType<string | null, string | number | null | undefined, string | number | null>;
  adult_beds: number | null;
  extra_beds: number | null;
  position: number | null;
  raw: Json;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0002_content.sql: services. */
export interface ServicesTable {
  property_id: string;
  service_id: string;
  name: string | null;
  description: string | null;
  kind: string | null;
  meal_plan_code: string | null;
  meal_plan_name: string | null;
  status: string | null;
  raw: Json;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  synced_at: SyncedAt;
}

/** migrations/0012_history.sql: every version of each booking. */
export interface BookingVersionsTable {
  property_id: string;
  number: string;
  version: number;
  valid_from: Timestamptz;
  valid_to: NullableTimestamptz;
  modified_at: Timestamptz;
  reconstructed: boolean;
  fetched_at: NullableTimestamptz;
  content_hash: string | null;
  status: string;
  created_at: NullableTimestamptz;
  cancelled_at: NullableTimestamptz;
  currency_code: string | null;
  arrival_date: string | null;
  departure_date: string | null;
  rooms: number;
  room_nights: number;
  room_type_ids: (string | null)[];
  room_revenue_net: Numeric;
  room_revenue_gross: Numeric;
  total_net: Numeric;
  total_gross: Numeric;
  changes: ChangeKind[];
  synced_at: SyncedAt;
}

/** migrations/0012_history.sql: the nights on the books, with their validity. */
export interface BookingNightHistoryTable {
  property_id: string;
  number: string;
  stay_index: number;
  stay_date: string;
  currency_code: string | null;
  room_type_id: string | null;
  net_amount: Numeric;
  gross_amount: Numeric;
  valid_from: Timestamptz;
  valid_to: NullableTimestamptz;
  reconstructed_until: NullableTimestamptz;
  synced_at: SyncedAt;
}

/** migrations/0012_history.sql: the current books per property, night and currency. */
export interface NightlyFactsTable {
  property_id: string;
  stay_date: string;
  currency_code: string | null;
  rooms_sold: BigIntColumn;
  complimentary_rooms: BigIntColumn;
  room_revenue_net: ColumnType<string, string | number, string | number>;
  room_revenue_gross: ColumnType<string, string | number, string | number>;
  synced_at: SyncedAt;
}

/** migrations/0012_history.sql: the day closes whose books are recorded. */
export interface OtbSnapshotDaysTable {
  property_id: string;
  snapshot_date: string;
  as_of: Timestamptz;
  taken_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** migrations/0012_history.sql: the books at a day close, per night and currency. */
export interface OtbSnapshotNightsTable {
  property_id: string;
  snapshot_date: string;
  stay_date: string;
  currency_code: string | null;
  room_nights: BigIntColumn;
  room_revenue_net: ColumnType<string, string | number, string | number>;
  room_revenue_gross: ColumnType<string, string | number, string | number>;
  reconstructed_room_nights: BigIntColumn;
}

/** migrations/0012_history.sql: every version of each PMS room stay. */
export interface PmsStayVersionsTable {
  property_id: string;
  number: string;
  stay_key: string;
  valid_from: Timestamptz;
  valid_to: NullableTimestamptz;
  status: string | null;
  room_id: string | null;
  room_type_id: string | null;
  check_in_at: LocalTimestamp;
  check_out_at: LocalTimestamp;
  actual_check_in_at: LocalTimestamp;
  actual_check_out_at: LocalTimestamp;
  synced_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface Database {
  pms_stay_versions: PmsStayVersionsTable;
  booking_versions: BookingVersionsTable;
  booking_night_history: BookingNightHistoryTable;
  nightly_facts: NightlyFactsTable;
  otb_snapshot_days: OtbSnapshotDaysTable;
  otb_snapshot_nights: OtbSnapshotNightsTable;
  token_requests: TokenRequestsTable;
  sync_replicas: SyncReplicasTable;
  sync_connections: SyncConnectionsTable;
  sync_cursors: SyncCursorsTable;
  booking_sweeps: BookingSweepsTable;
  sync_lease: SyncLeaseTable;
  booking_summaries: BookingSummariesTable;
  booking_detail_queue: BookingDetailQueueTable;
  bookings: BookingsTable;
  booking_room_stays: BookingRoomStaysTable;
  booking_daily_rates: BookingDailyRatesTable;
  booking_services: BookingServicesTable;
  booking_guests: BookingGuestsTable;
  booking_taxes: BookingTaxesTable;
  booking_discounts: BookingDiscountsTable;
  booking_tax_amounts: BookingTaxAmountsTable;
  booking_room_stay_rate_plans: BookingRoomStayRatePlansTable;
  booking_loyalty_cards: BookingLoyaltyCardsTable;
  reference_lists: ReferenceListsTable;
  mirror_settings: MirrorSettingsTable;
  reader_grants: ReaderGrantsTable;
  erasure_key: ErasureKeyTable;
  erasures: ErasuresTable;
  erased_identities: ErasedIdentitiesTable;
  sync_runs: SyncRunsTable;
  quarantine: QuarantineTable;
  properties: PropertiesTable;
  content_refreshes: ContentRefreshesTable;
  pms_reservations: PmsReservationsTable;
  pms_room_stays: PmsRoomStaysTable;
  pms_guests: PmsGuestsTable;
  pms_guest_loyalty_cards: PmsGuestLoyaltyCardsTable;
  pms_reservation_queue: PmsReservationQueueTable;
  pms_rooms: PmsRoomsTable;
  pms_companies: PmsCompaniesTable;
  pms_invoices: PmsInvoicesTable;
  pms_invoice_items: PmsInvoiceItemsTable;
  daily_occupancy: DailyOccupancyTable;
  pms_buildings: PmsBuildingsTable;
  pms_floors: PmsFloorsTable;
  pms_room_places: PmsRoomPlacesTable;
  pms_accommodation_inventories: PmsAccommodationInventoriesTable;
  room_type_inventory_days: RoomTypeInventoryDaysTable;
  stay_units: StayUnitsTable;
  pms_room_type_codes: PmsRoomTypeCodesTable;
  pms_rate_plan_codes: PmsRatePlanCodesTable;
  daily_occupancy_history: DailyOccupancyHistoryTable;
  occupancy_refreshes: OccupancyRefreshesTable;
  webhook_events: WebhookEventsTable;
  integration_storage_bookings: IntegrationStorageBookingsTable;
  inventory_blocks: InventoryBlocksTable;
  integration_storage_booking_channels: IntegrationStorageBookingChannelsTable;
  integration_storage_booking_nights: IntegrationStorageBookingNightsTable;
  inventory_block_days: InventoryBlockDaysTable;
  cancellation_rule_arrival_dates: CancellationRuleArrivalDatesTable;
  cancellation_rule_terms: CancellationRuleTermsTable;
  cancellation_rules: CancellationRulesTable;
  change_lags: ChangeLagsTable;
  extra_stay_rule_periods: ExtraStayRulePeriodsTable;
  extra_stay_rules: ExtraStayRulesTable;
  meal_plans: MealPlansTable;
  payment_methods: PaymentMethodsTable;
  pos_codes: PosCodesTable;
  property_amenities: PropertyAmenitiesTable;
  property_amenity_types: PropertyAmenityTypesTable;
  property_kinds: PropertyKindsTable;
  rate_plans: RatePlansTable;
  room_amenities: RoomAmenitiesTable;
  room_type_amenities: RoomTypeAmenitiesTable;
  room_type_categories: RoomTypeCategoriesTable;
  room_types: RoomTypesTable;
  services: ServicesTable;
}

// ------------------------------------------------------------------ rows as written
// The rows the mapping (src/mapping/) gives, as kysely inserts them: named here so that the
// mapping and the sync need not import kysely to speak of them.

export type NewBooking = Insertable<BookingsTable>;
export type NewBookingRoomStay = Insertable<BookingRoomStaysTable>;
export type NewBookingDailyRate = Insertable<BookingDailyRatesTable>;
export type NewBookingService = Insertable<BookingServicesTable>;
export type NewBookingGuest = Insertable<BookingGuestsTable>;
export type NewBookingTax = Insertable<BookingTaxesTable>;
export type NewBookingDiscount = Insertable<BookingDiscountsTable>;
export type NewBookingTaxAmount = Insertable<BookingTaxAmountsTable>;
export type NewBookingRoomStayRatePlan = Insertable<BookingRoomStayRatePlansTable>;
export type NewBookingLoyaltyCard = Insertable<BookingLoyaltyCardsTable>;
export type NewPmsReservation = Insertable<PmsReservationsTable>;
export type NewPmsRoomStay = Insertable<PmsRoomStaysTable>;
export type NewPmsGuest = Insertable<PmsGuestsTable>;
export type NewPmsGuestLoyaltyCard = Insertable<PmsGuestLoyaltyCardsTable>;
export type NewPmsInvoice = Insertable<PmsInvoicesTable>;
export type NewPmsInvoiceItem = Insertable<PmsInvoiceItemsTable>;
export type NewDailyOccupancy = Insertable<DailyOccupancyTable>;
export type NewPmsBuilding = Insertable<PmsBuildingsTable>;
export type NewPmsFloor = Insertable<PmsFloorsTable>;
export type NewPmsRoomPlace = Insertable<PmsRoomPlacesTable>;
export type NewRoomTypeInventoryDay = Insertable<RoomTypeInventoryDaysTable>;
export type NewStayUnits = Insertable<StayUnitsTable>;
export type NewIntegrationStorageBooking = Insertable<IntegrationStorageBookingsTable>;
export type NewInventoryBlock = Insertable<InventoryBlocksTable>;
export type NewIntegrationStorageBookingChannel = Insertable<IntegrationStorageBookingChannelsTable>;
export type NewIntegrationStorageBookingNight = Insertable<IntegrationStorageBookingNightsTable>;
export type NewInventoryBlockDay = Insertable<InventoryBlockDaysTable>;

// ---------------------------------------------------------------- what the mapping hands the store
// The rows of one payload, as src/mapping/ builds them and the repositories write them.

/** A booking's details as rows: the header and every child table. */
export interface BookingRows {
  booking: NewBooking;
  roomStays: NewBookingRoomStay[];
  dailyRates: NewBookingDailyRate[];
  services: NewBookingService[];
  guests: NewBookingGuest[];
  taxes: NewBookingTax[];
  discounts: NewBookingDiscount[];
  taxAmounts: NewBookingTaxAmount[];
  ratePlans: NewBookingRoomStayRatePlan[];
  loyaltyCards: NewBookingLoyaltyCard[];
  /**
   * What tells versions apart (booking_versions.content_hash): SHA-256 (hex) of the payload's
   * canonical JSON (src/provider/json.ts canonicalJson), the same as received and as stored.
   */
  contentHash: string;
}

/** An integration-storage booking as rows (migrations/0022_storage_typed.sql): the booking, its channels and nights. */
export interface StorageBookingRows {
  booking: NewIntegrationStorageBooking;
  channels: NewIntegrationStorageBookingChannel[];
  nights: NewIntegrationStorageBookingNight[];
}

/** An inventory block as rows: the block and its days. */
export interface InventoryBlockRows {
  block: NewInventoryBlock;
  days: NewInventoryBlockDay[];
}

/** A booking summary as a row (booking_summaries), with the priority its detail fetch gets. */
export interface SummaryRow {
  propertyId: string;
  number: string;
  status: string | null;
  createdAt: Date | null;
  modifiedAt: Date | null;
  /** The same instants as the provider wrote them (normalized, to the microsecond): what the columns get. */
  createdText?: string | null;
  modifiedText?: string | null;
  /** The priority of the detail fetch (booking_detail_queue.priority, lowest first): see priorityOf. */
  priority: number;
  raw: unknown;
}

/** A PMS reservation as rows. */
export interface PmsReservationRows {
  reservation: NewPmsReservation;
  roomStays: NewPmsRoomStay[];
  /**
   * Its invoices and their items, read with this version; undefined when they were not read
   * (the replay of a reservation alone), so that the mirrored ones stay.
   */
  invoices?: { invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] } | undefined;
  /** The customer, as a person row (when the reservation has one with an id). */
  customer: NewPmsGuest | null;
}

// ---------------------------------------------------------------- history of a booking
// What src/mapping/history.ts derives from a version and src/store/repositories/history.ts
// writes (migrations/0012_history.sql).

/** A night of a version on the books. */
export interface NightFact {
  stay_index: number;
  stay_date: string;
  currency_code: string | null;
  room_type_id: string | null;
  net_amount: string | null;
  gross_amount: string | null;
}

/** The figures of one version (booking_versions without its validity and bookkeeping). */
export interface VersionFacts {
  status: string;
  created_at: string | null;
  cancelled_at: string | null;
  modified_at: string;
  currency_code: string | null;
  arrival_date: string | null;
  departure_date: string | null;
  rooms: number;
  room_nights: number;
  room_type_ids: (string | null)[];
  room_revenue_net: string | null;
  room_revenue_gross: string | null;
  total_net: string | null;
  total_gross: string | null;
}

/** A version of the history as it is written (booking_versions' figures and validity). */
export interface HistoryVersion {
  facts: VersionFacts;
  validFrom: string;
  reconstructed: boolean;
  changes: ChangeKind[];
  /** Whether its nights are on the books (the booking is not cancelled). */
  onTheBooks: boolean;
}

/** An open row of booking_night_history: a night on the books since `valid_from`. */
export interface OpenNight extends NightFact {
  valid_from: string;
  reconstructed_until: string | null;
}

/** A row of booking_night_history to insert (closed already when a reconstructed version ended it). */
export interface NightRow extends OpenNight {
  valid_to: string | null;
}

/** What history holds of a booking before a write: its current version and its open nights. */
export interface StoredHistory {
  version: number;
  facts: VersionFacts;
  contentHash: string | null;
  /** Every night of the current version (from the rows the write replaces). */
  nights: NightFact[];
  open: OpenNight[];
}

/** A version row to insert. */
export interface VersionRow extends HistoryVersion {
  version: number;
  validTo: string | null;
  fetched: boolean;
  contentHash: string | null;
}

/** The change of the current books a write makes, per night and currency (nightly_facts). */
export interface FactDelta {
  stay_date: string;
  currency_code: string | null;
  rooms_sold: number;
  complimentary_rooms: number;
  room_revenue_net: string;
  room_revenue_gross: string;
}

/** What a booking write adds to history. */
export interface HistoryPlan {
  versions: VersionRow[];
  /** The instant the current version ends (the first new version's valid_from); null for a new booking. */
  closeCurrentAt: string | null;
  /** Open rows that end, and when (a row that would end where it starts is deleted by the store). */
  close: { night: OpenNight; at: string }[];
  insert: NightRow[];
  facts: FactDelta[];
}

/** What a rebuild does to a booking's history (src/replay/rebuild.ts). */
export type HistoryRederived =
  /** The booking had no history (a mirror from before history): all of it, as if first seen now. */
  | { kind: 'started'; plan: HistoryPlan }
  /** Its current version's figures and open nights derived again (a mapping fix), in place. */
  | { kind: 'corrected'; facts: VersionFacts; contentHash: string; open: NightRow[] };

/**
 * What a booking write needs of history: how to plan what it adds, given what history holds of
 * the booking (read by the write itself, after it locked the booking) and the hash of the payload
 * as stored (a re-fetch of the stored version adds nothing).
 */
export interface BookingHistory {
  plan(stored: StoredHistory | null, contentHash: string): HistoryPlan | null;
}
