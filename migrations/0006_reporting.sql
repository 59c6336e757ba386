-- Reporting: what the reporting views (migrations/reporting/views.sql, applied into their own
-- schema by src/db/reporting.ts) need in the mirror: the names of the points of sale, and
-- indexes on the columns reports filter on. The views themselves are not a migration: they are
-- recreated whenever their file changes, without touching the mirror.

CREATE TABLE pos_codes (
  code        text PRIMARY KEY,
  kind        text NOT NULL CHECK (kind IN ('channel', 'pos_type')),
  name        text,
  origin      text NOT NULL
);
COMMENT ON TABLE pos_codes IS 'Names of the points of sale a booking comes from (bookings.source_code, and bookings.source_type when there is no code). Filled with the codes the provider documents; add your own rows for codes it does not name (the reporting views use name, then the channel name of the PMS reservation, then the code).';
COMMENT ON COLUMN pos_codes.code IS 'A channel code as in bookings.source_code (e.g. BGC), or a point-of-sale type as in bookings.source_type (BookingEngine, PMS, Other, Channel) for bookings without a code.';
COMMENT ON COLUMN pos_codes.kind IS 'channel: a channel code; pos_type: a point-of-sale type, used when the booking has no code.';
COMMENT ON COLUMN pos_codes.name IS 'Name to report the point of sale under; NULL when the provider documents the code without naming its channel.';
COMMENT ON COLUMN pos_codes.origin IS 'Where the row comes from: provider documentation, staysync (the point-of-sale types), or anything you write in your own rows.';

INSERT INTO pos_codes (code, kind, name, origin) VALUES
  -- The channel codes the provider's API reference names (Booking.com, Expedia, Agoda, Ostrovok, Trip.com).
  ('BGC', 'channel', 'Booking.com', 'provider documentation'),
  ('EXP', 'channel', 'Expedia', 'provider documentation'),
  ('AGD', 'channel', 'Agoda', 'provider documentation'),
  ('OTK', 'channel', 'Ostrovok', 'provider documentation'),
  ('CTP', 'channel', 'Trip.com', 'provider documentation'),
  -- Codes the API reference shows as examples without naming their channel.
  ('OTG', 'channel', NULL, 'provider documentation (example, channel not named)'),
  ('PA2', 'channel', NULL, 'provider documentation (example, channel not named)'),
  -- Bookings without a code: named after their point-of-sale type.
  ('BookingEngine', 'pos_type', 'Booking engine (direct)', 'staysync'),
  ('PMS', 'pos_type', 'PMS (entered at the property)', 'staysync'),
  ('Other', 'pos_type', 'Other', 'staysync'),
  ('Channel', 'pos_type', 'Channel (no code)', 'staysync');

-- Reports filter on booking (creation) dates, cancellation dates, channels and stay dates across
-- properties; the mirror's own indexes cover property + modification, arrival and stay date.
CREATE INDEX bookings_created_at ON bookings (property_id, created_at);
CREATE INDEX bookings_cancelled_at ON bookings (property_id, cancelled_at) WHERE cancelled_at IS NOT NULL;
CREATE INDEX bookings_source ON bookings (property_id, source_code, source_type);
CREATE INDEX booking_daily_rates_stay_date ON booking_daily_rates (stay_date);
CREATE INDEX booking_room_stays_room_type ON booking_room_stays (property_id, room_type_id);
