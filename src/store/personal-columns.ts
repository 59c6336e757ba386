/**
 * The columns of the mirror that hold personal data of guests: names, contact data, birth
 * dates, documents, free text about them, and every guest payload kept as received (a booking,
 * its listing or a part of it, a PMS reservation or person, an integration-storage booking, a
 * change event, a quarantined body: whatever the provider sends about its guests, such as
 * names, lands there). Reader roles see them only when granted with --personal-data
 * (src/store/reader-role.ts). What of a payload is personal, and is stripped before it is
 * stored, is decided by src/mapping/personal-data.ts; this list is the columns it can land in.
 */
export const PERSONAL_COLUMNS: Readonly<Record<string, readonly string[]>> = {
  bookings: ['customer_first_name', 'customer_last_name', 'raw'],
  booking_summaries: ['raw'],
  booking_services: ['raw'],
  booking_guests: ['first_name', 'last_name'],
  booking_loyalty_cards: ['card_number'],
  pms_reservations: [
    'customer_first_name',
    'customer_middle_name',
    'customer_last_name',
    'customer_email',
    'customer_phone',
    'customer_birth_date',
    'customer_citizenship',
    'customer_comment',
    'raw',
  ],
  pms_guests: ['first_name', 'middle_name', 'last_name', 'email', 'phone', 'birth_date', 'citizenship', 'raw'],
  // The payer of an invoice is a company or a person.
  pms_invoices: ['payer_name', 'raw'],
  integration_storage_bookings: ['raw'],
  webhook_events: ['payload'],
  quarantine: ['raw_body'],
};

/**
 * Every other text, JSON and text-array column of the mirror, known to hold no guest's
 * personal data, by table: ids, codes, statuses, names of things (not of people), the hotel's
 * own content, figures, and the daemon's bookkeeping. Error texts (last_error, error, reason)
 * are HTTP statuses, zod issues (paths and types, never values) and database errors: the
 * personal columns are text, or dates checked before they are written, so the database quotes
 * none of their values. test/integration/personal-columns.test.ts holds this list and
 * PERSONAL_COLUMNS to every such column of a migrated mirror: a column added later is
 * classified here or there before it can be shipped.
 */
export const COLUMNS_WITHOUT_PERSONAL_DATA: Readonly<Record<string, readonly string[]>> = {
  // Bookings and their children: figures, ids and names of rooms, rates, services and taxes.
  bookings: ['property_id', 'number', 'status', 'currency_code', 'source_type', 'source_code', 'source_url', 'payment_method', 'payment_methods'],
  booking_daily_rates: ['property_id', 'number', 'rate_plan_id'],
  booking_discounts: ['property_id', 'number', 'discount_type', 'name'],
  booking_guests: ['property_id', 'number'],
  booking_loyalty_cards: ['property_id', 'number', 'loyalty_system_id'],
  booking_room_stay_rate_plans: ['property_id', 'number', 'rate_plan_id', 'rate_plan_name'],
  booking_room_stays: ['property_id', 'number', 'room_type_id', 'room_type_name', 'rate_plan_id', 'rate_plan_name'],
  booking_services: ['property_id', 'number', 'service_id', 'name', 'description', 'kind', 'meal_plan_code'],
  booking_summaries: ['property_id', 'number', 'status'],
  booking_tax_amounts: ['property_id', 'number', 'level', 'name'],
  booking_taxes: ['property_id', 'number', 'name', 'description'],
  // History: figures, dates and statuses only.
  booking_versions: ['property_id', 'number', 'content_hash', 'status', 'currency_code', 'room_type_ids', 'changes'],
  booking_night_history: ['property_id', 'number', 'currency_code', 'room_type_id'],
  pms_stay_versions: ['property_id', 'number', 'stay_key', 'status', 'room_id', 'room_type_id'],
  nightly_facts: ['property_id', 'currency_code'],
  otb_snapshot_days: ['property_id'],
  otb_snapshot_nights: ['property_id', 'currency_code'],
  // PMS: the reservation's and person's other fields (ids, codes, the company, the channel,
  // the pseudonyms, which are keyed hashes), stays, rooms and statistics.
  pms_reservations: [
    'property_id',
    'number',
    'reservation_status',
    'currency_code',
    'customer_person_id',
    'customer_language_code',
    'customer_company_id',
    'customer_company_name',
    'customer_company_type',
    'visit_purpose_id',
    'visit_purpose_name',
    'creation_source_id',
    'creation_source_name',
    'channel_name',
    'group_name',
    'customer_email_hash',
    'customer_phone_hash',
    'agent_commission_source',
    'agent_commission_currency',
  ],
  pms_guests: ['property_id', 'pms_person_id', 'gender', 'status_name', 'email_hash', 'phone_hash'],
  pms_room_stays: ['property_id', 'number', 'pms_room_stay_id', 'room_id', 'room_type_id', 'status', 'currency_code', 'guest_person_ids', 'amenities'],
  pms_rooms: ['property_id', 'room_id', 'display_name', 'room_type_id', 'floor_id', 'raw', 'content_hash'],
  pms_companies: ['property_id', 'company_id', 'name', 'company_type', 'raw', 'content_hash'],
  pms_invoices: ['property_id', 'number', 'invoice_number', 'pms_room_stay_id', 'currency_code'],
  // Items name what was sold (accommodation, a service), never who bought it.
  pms_invoice_items: ['property_id', 'number', 'kind', 'name', 'accounting_code', 'unit', 'currency_code'],
  daily_occupancy: ['property_id', 'currency_code', 'raw'],
  daily_occupancy_history: ['property_id', 'currency_code'],
  occupancy_refreshes: ['property_id'],
  integration_storage_bookings: ['property_id', 'booking_id', 'status', 'booking_number', 'cancel_reason', 'currency_code', 'guarantee_code'],
  inventory_blocks: ['property_id', 'inventory_block_id', 'pms_side_id', 'pms_side_code', 'block_status', 'pms_block_status', 'rate_plan_codes', 'raw'],
  // The hotel's own content (its contacts are the hotel's, not a guest's) and reference lists.
  properties: [
    'property_id',
    'name',
    'description',
    'currency',
    'stay_unit_kind',
    'time_zone',
    'check_in_time',
    'check_out_time',
    'country_code',
    'region',
    'city_name',
    'address_line',
    'postal_code',
    'phones',
    'emails',
    'images',
    'company_details',
    'raw',
    'content_hash',
    'connection',
  ],
  property_amenities: ['property_id', 'code', 'display_name', 'charge_type'],
  room_types: ['property_id', 'room_type_id', 'name', 'description', 'category_code', 'category_name', 'raw', 'content_hash'],
  room_type_amenities: ['property_id', 'room_type_id', 'code', 'name'],
  rate_plans: ['property_id', 'rate_plan_id', 'name', 'description', 'currency', 'cancellation_rule_id', 'extra_stay_rule_id', 'raw', 'content_hash'],
  services: ['property_id', 'service_id', 'name', 'description', 'kind', 'meal_plan_code', 'meal_plan_name', 'status', 'raw', 'content_hash'],
  cancellation_rules: ['property_id', 'rule_id', 'reference_point_kind', 'reference_point_time', 'raw', 'content_hash'],
  cancellation_rule_terms: ['property_id', 'rule_id', 'before_arrival_matching', 'before_arrival_unit', 'penalty_calculation_method', 'penalty_value_currency'],
  cancellation_rule_arrival_dates: ['property_id', 'rule_id'],
  extra_stay_rules: ['property_id', 'rule_id', 'check_in_time', 'check_out_time', 'raw', 'content_hash'],
  extra_stay_rule_periods: ['property_id', 'rule_id', 'kind', 'start_time', 'end_time', 'charge_type', 'extra_service_option', 'rates'],
  meal_plans: ['code', 'name'],
  payment_methods: ['code', 'type'],
  property_amenity_types: ['code', 'display_name'],
  property_kinds: ['display_name', 'property_kind_type'],
  room_amenities: ['code', 'name', 'category_name'],
  room_type_categories: ['code', 'name'],
  reference_lists: ['list_name', 'raw', 'content_hash'],
  pos_codes: ['code', 'kind', 'name', 'origin'],
  // The daemon's bookkeeping.
  booking_detail_queue: ['property_id', 'number', 'state', 'last_error', 'connection'],
  pms_reservation_queue: ['property_id', 'number', 'state', 'last_error', 'connection'],
  booking_sweeps: ['property_id'],
  change_lags: ['property_id', 'number'],
  sync_cursors: ['property_id', 'stream', 'cursor', 'state', 'last_error', 'connection'],
  sync_connections: ['connection', 'replica_id', 'holder', 'state', 'reason', 'budget_ledger'],
  sync_replicas: ['replica_id', 'host', 'command'],
  sync_runs: ['command', 'outcome', 'stats', 'error', 'host', 'connection'],
  sync_lease: ['name', 'holder'],
  token_requests: ['egress'],
  content_refreshes: ['outcome', 'error', 'connection'],
  mirror_settings: ['name', 'value'],
  quarantine: ['stream', 'property_id', 'entity_key', 'reason', 'reason_hash', 'connection'],
  webhook_events: ['event_id', 'event_type', 'property_id', 'entity_key', 'state', 'last_error'],
  kysely_migration: ['name', 'timestamp'],
  kysely_migration_lock: ['id'],
  // Readers and erasures: roles, keyed hashes and counts, never the erased values.
  reader_grants: ['role', 'properties'],
  erasures: ['reason', 'selector_kind', 'selector_hash', 'rows_touched'],
  erased_identities: ['kind', 'hash'],
  erasure_key: ['key'],
};
