/** The mirror's tables, by what they hold, for tests that go over each of them. */

/** Every typed table the mirror fills from provider payloads. */
export const TYPED_TABLES = [
  'bookings',
  'booking_room_stays',
  'booking_daily_rates',
  'booking_services',
  'booking_guests',
  'booking_taxes',
  'booking_discounts',
  'booking_tax_amounts',
  'booking_room_stay_rate_plans',
  'booking_loyalty_cards',
  'booking_summaries',
  'properties',
  'room_types',
  'room_type_amenities',
  'rate_plans',
  'services',
  'property_amenities',
  'cancellation_rules',
  'cancellation_rule_terms',
  'cancellation_rule_arrival_dates',
  'extra_stay_rules',
  'extra_stay_rule_periods',
  'reference_lists',
  'meal_plans',
  'room_type_categories',
  'room_amenities',
  'payment_methods',
  'property_amenity_types',
  'property_kinds',
  'pms_reservations',
  'pms_room_stays',
  'pms_guests',
  'pms_rooms',
  'daily_occupancy',
  'integration_storage_bookings',
  'inventory_blocks',
];

/** History: derived by staysync from what the provider sent, written with it (migrations/0012_history.sql). */
export const HISTORY_TABLES = ['booking_versions', 'booking_night_history', 'nightly_facts', 'pms_stay_versions'];
