/**
 * Table types for kysely, mirroring `migrations/*.sql`. Numeric columns come back as
 * strings (exact money), timestamptz as Date, timestamp (property local) and date as text.
 */
import type { ColumnType, Generated } from 'kysely';

type Timestamptz = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamptz = ColumnType<Date | null, Date | string | null, Date | string | null>;
/** Property-local timestamp without zone, kept as `YYYY-MM-DDTHH:mm[:ss]` text. */
type LocalTimestamp = ColumnType<string | null, string | null, string | null>;
type Numeric = ColumnType<string | null, string | number | null, string | number | null>;
type Json = ColumnType<unknown, string, string>;
type BigIntColumn = ColumnType<string, string | number | bigint, string | number | bigint>;

export interface SyncCursorsTable {
  property_id: string;
  stream: string;
  cursor: string | null;
  position: NullableTimestamptz;
  state: ColumnType<string, string | undefined, string>;
  caught_up: ColumnType<boolean, boolean | undefined, boolean>;
  pages: ColumnType<string, string | number | undefined, string | number>;
  rows_seen: ColumnType<string, string | number | undefined, string | number>;
  last_poll_at: NullableTimestamptz;
  last_error: string | null;
  error_since: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
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
  status: string;
  created_at: NullableTimestamptz;
  modified_at: NullableTimestamptz;
  listed_at: Timestamptz;
  raw: Json;
}

export interface BookingDetailQueueTable {
  property_id: string;
  number: string;
  wanted_modified_at: NullableTimestamptz;
  priority: number;
  state: ColumnType<string, string | undefined, string>;
  generation: BigIntColumn;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date, Date | string | undefined, Date | string>;
  enqueued_at: ColumnType<Date, Date | string | undefined, Date | string>;
  last_error: string | null;
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
  synced_at: ColumnType<Date, Date | string | undefined, Date | string>;
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
}

export interface BookingDailyRatesTable {
  property_id: string;
  number: string;
  stay_index: number;
  position: number;
  stay_date: string;
  rate_plan_id: string | null;
  price_before_tax: Numeric;
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
  raw: Json;
}

export interface BookingGuestsTable {
  property_id: string;
  number: string;
  stay_index: number;
  position: number;
  first_name: string | null;
  last_name: string | null;
}

export interface BookingTaxesTable {
  property_id: string;
  number: string;
  tax_index: number;
  name: string | null;
  description: string | null;
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
}

export interface SyncRunsTable {
  id: Generated<string>;
  command: string;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: NullableTimestamptz;
  outcome: string | null;
  stats: ColumnType<unknown, string | undefined, string>;
  error: string | null;
  host: string | null;
  pid: number | null;
}

export interface QuarantineTable {
  id: Generated<string>;
  stream: string;
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
  property_id: string;
  name: string | null;
  time_zone: string | null;
  content_hash: string;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  removed_at: NullableTimestamptz;
}

export interface ContentRefreshesTable {
  id: Generated<string>;
  started_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: NullableTimestamptz;
  outcome: string | null;
  properties: number | null;
  requests: number | null;
  changed_rows: number | null;
  quarantined: number | null;
  error: string | null;
}

export interface Database {
  sync_cursors: SyncCursorsTable;
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
  sync_runs: SyncRunsTable;
  quarantine: QuarantineTable;
  properties: PropertiesTable;
  content_refreshes: ContentRefreshesTable;
}
