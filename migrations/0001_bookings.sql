-- Bookings mirror: bookkeeping (cursors, detail queue, runs, quarantine) and the booking
-- tables. Unqualified names: the migrator runs with search_path set to the configured schema.

CREATE TABLE sync_cursors (
  property_id     text        NOT NULL,
  stream          text        NOT NULL,
  cursor          text,
  position        timestamptz,
  state           text        NOT NULL DEFAULT 'active',
  caught_up       boolean     NOT NULL DEFAULT false,
  pages           bigint      NOT NULL DEFAULT 0,
  rows_seen       bigint      NOT NULL DEFAULT 0,
  last_poll_at    timestamptz,
  last_error      text,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, stream)
);
COMMENT ON TABLE sync_cursors IS 'Where each stream of each property stands. The cursor commits in the same transaction as the rows it covers, so it is never ahead of the data.';
COMMENT ON COLUMN sync_cursors.property_id IS 'Provider property id.';
COMMENT ON COLUMN sync_cursors.stream IS 'Stream name, e.g. booking_summaries.';
COMMENT ON COLUMN sync_cursors.cursor IS 'Opaque provider cursor (for booking_summaries the continueToken). NULL: not started.';
COMMENT ON COLUMN sync_cursors.position IS 'Latest modification time covered by the cursor (UTC), for status and recovery.';
COMMENT ON COLUMN sync_cursors.state IS 'active, or token_lost when the provider rejected the cursor and the property waits for a restart with --recover.';
COMMENT ON COLUMN sync_cursors.caught_up IS 'True when the last page said hasMoreData=false.';
COMMENT ON COLUMN sync_cursors.pages IS 'Pages read through this cursor since it was created.';
COMMENT ON COLUMN sync_cursors.rows_seen IS 'Rows (summaries) read through this cursor since it was created.';
COMMENT ON COLUMN sync_cursors.last_poll_at IS 'When the stream last asked the provider (UTC).';
COMMENT ON COLUMN sync_cursors.last_error IS 'Last error message of the stream, NULL after a successful page.';
COMMENT ON COLUMN sync_cursors.updated_at IS 'When this row last changed (UTC).';

CREATE TABLE booking_summaries (
  property_id   text        NOT NULL,
  number        text        NOT NULL,
  status        text        NOT NULL,
  created_at    timestamptz,
  modified_at   timestamptz,
  listed_at     timestamptz NOT NULL,
  raw           jsonb       NOT NULL,
  PRIMARY KEY (property_id, number)
);
COMMENT ON TABLE booking_summaries IS 'Latest booking summary per booking as listed by the provider''s booking list (read-reservation). One row per booking.';
COMMENT ON COLUMN booking_summaries.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_summaries.number IS 'Booking number (YYYYMMDD-propertyId-id).';
COMMENT ON COLUMN booking_summaries.status IS 'Booking status as listed: Active, Cancelled, Unconfirmed (or a newer value).';
COMMENT ON COLUMN booking_summaries.created_at IS 'When the booking was created (UTC).';
COMMENT ON COLUMN booking_summaries.modified_at IS 'Last modification as listed (UTC, second precision).';
COMMENT ON COLUMN booking_summaries.listed_at IS 'When the summaries stream last saw this booking (UTC).';
COMMENT ON COLUMN booking_summaries.raw IS 'The summary exactly as received.';

CREATE TABLE booking_detail_queue (
  property_id        text        NOT NULL,
  number             text        NOT NULL,
  wanted_modified_at timestamptz,
  priority           smallint    NOT NULL DEFAULT 1,
  state              text        NOT NULL DEFAULT 'pending',
  generation         bigint      NOT NULL,
  attempts           integer     NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz NOT NULL DEFAULT now(),
  enqueued_at        timestamptz NOT NULL DEFAULT now(),
  last_error         text,
  PRIMARY KEY (property_id, number)
);
CREATE SEQUENCE booking_detail_queue_generation;
CREATE INDEX booking_detail_queue_drain ON booking_detail_queue (priority, wanted_modified_at DESC) WHERE state = 'pending';
COMMENT ON TABLE booking_detail_queue IS 'Durable queue of booking detail fetches: a row per booking whose details are missing or older than its latest summary.';
COMMENT ON COLUMN booking_detail_queue.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_detail_queue.number IS 'Booking number.';
COMMENT ON COLUMN booking_detail_queue.wanted_modified_at IS 'Modification time of the summary that asked for the fetch (UTC).';
COMMENT ON COLUMN booking_detail_queue.priority IS '0: stay arrives soon (most useful first), 1: everything else.';
COMMENT ON COLUMN booking_detail_queue.state IS 'pending (to fetch), not_found (provider answered 404), quarantined (payload failed validation). Non-pending rows wait for the booking to change again.';
COMMENT ON COLUMN booking_detail_queue.generation IS 'Bumped on every enqueue, so a fetch started before a newer enqueue does not remove it.';
COMMENT ON COLUMN booking_detail_queue.attempts IS 'Failed fetch attempts since the last enqueue.';
COMMENT ON COLUMN booking_detail_queue.next_attempt_at IS 'Not fetched before this time (backoff after failures).';
COMMENT ON COLUMN booking_detail_queue.enqueued_at IS 'When the row was (last) enqueued.';
COMMENT ON COLUMN booking_detail_queue.last_error IS 'Last failure, if any.';

CREATE TABLE bookings (
  property_id              text        NOT NULL,
  number                   text        NOT NULL,
  status                   text        NOT NULL,
  created_at               timestamptz,
  modified_at              timestamptz NOT NULL,
  fetched_at               timestamptz NOT NULL,
  currency_code            text,
  arrival_at               timestamp,
  departure_at             timestamp,
  room_stay_count          integer     NOT NULL,
  price_before_tax         numeric,
  price_after_tax          numeric,
  tax_amount               numeric,
  total_prepaid            numeric,
  cancelled_at             timestamptz,
  cancellation_penalty     numeric,
  source_type              text,
  source_code              text,
  source_url               text,
  customer_first_name      text,
  customer_last_name       text,
  synced_at                timestamptz NOT NULL DEFAULT now(),
  raw                      jsonb       NOT NULL,
  PRIMARY KEY (property_id, number)
);
CREATE INDEX bookings_modified_at ON bookings (property_id, modified_at);
CREATE INDEX bookings_arrival_at ON bookings (property_id, arrival_at);
COMMENT ON TABLE bookings IS 'One row per booking: the header of the latest booking details (read-reservation). Children are in booking_room_stays, booking_daily_rates, booking_services, booking_guests, booking_taxes, booking_discounts.';
COMMENT ON COLUMN bookings.property_id IS 'Provider property id.';
COMMENT ON COLUMN bookings.number IS 'Booking number (YYYYMMDD-propertyId-id).';
COMMENT ON COLUMN bookings.status IS 'Active, Cancelled, Unconfirmed (or a newer provider value).';
COMMENT ON COLUMN bookings.created_at IS 'When the booking was created (UTC).';
COMMENT ON COLUMN bookings.modified_at IS 'Last modification (UTC, second precision): the version of these details.';
COMMENT ON COLUMN bookings.fetched_at IS 'When these details were fetched, by the provider''s clock (Date header) where available.';
COMMENT ON COLUMN bookings.currency_code IS 'ISO 4217 currency of all amounts of the booking.';
COMMENT ON COLUMN bookings.arrival_at IS 'Earliest arrival of its room stays, property local time.';
COMMENT ON COLUMN bookings.departure_at IS 'Latest departure of its room stays, property local time.';
COMMENT ON COLUMN bookings.room_stay_count IS 'Number of room stays.';
COMMENT ON COLUMN bookings.price_before_tax IS 'Booking total after discounts, before taxes and fees.';
COMMENT ON COLUMN bookings.price_after_tax IS 'Booking total after discounts, including taxes and fees.';
COMMENT ON COLUMN bookings.tax_amount IS 'Taxes and fees of the booking total.';
COMMENT ON COLUMN bookings.total_prepaid IS 'Amount prepaid (may include bonuses).';
COMMENT ON COLUMN bookings.cancelled_at IS 'When the booking was cancelled (UTC); NULL when not cancelled.';
COMMENT ON COLUMN bookings.cancellation_penalty IS 'Cancellation penalty amount, if any.';
COMMENT ON COLUMN bookings.source_type IS 'Point of sale type: Channel, BookingEngine, PMS, Other.';
COMMENT ON COLUMN bookings.source_code IS 'Point of sale code (channel code such as OTG).';
COMMENT ON COLUMN bookings.source_url IS 'Point of sale URL, if any.';
COMMENT ON COLUMN bookings.customer_first_name IS 'Customer (booker) first name.';
COMMENT ON COLUMN bookings.customer_last_name IS 'Customer (booker) last name.';
COMMENT ON COLUMN bookings.synced_at IS 'When staysync wrote this row (UTC).';
COMMENT ON COLUMN bookings.raw IS 'The booking details object exactly as received, for replaying a mapping change at no API cost.';

CREATE TABLE booking_room_stays (
  property_id                  text      NOT NULL,
  number                       text      NOT NULL,
  stay_index                   integer   NOT NULL,
  provider_index               bigint,
  arrival_at                   timestamp,
  departure_at                 timestamp,
  room_type_id                 text,
  room_type_name               text,
  rate_plan_id                 text,
  rate_plan_name               text,
  adult_count                  integer,
  child_ages                   integer[],
  price_before_tax             numeric,
  price_after_tax              numeric,
  tax_amount                   numeric,
  early_arrival_at             timestamp,
  early_arrival_price_after_tax numeric,
  late_departure_at            timestamp,
  late_departure_price_after_tax numeric,
  PRIMARY KEY (property_id, number, stay_index)
);
CREATE INDEX booking_room_stays_arrival ON booking_room_stays (property_id, arrival_at);
COMMENT ON TABLE booking_room_stays IS 'Room stays of a booking (one per booked room), replaced whole with every newer version of the booking.';
COMMENT ON COLUMN booking_room_stays.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_room_stays.number IS 'Booking number.';
COMMENT ON COLUMN booking_room_stays.stay_index IS 'Position of the stay in the booking (0-based).';
COMMENT ON COLUMN booking_room_stays.provider_index IS 'The provider''s own index of the stay, when given.';
COMMENT ON COLUMN booking_room_stays.arrival_at IS 'Arrival, property local time.';
COMMENT ON COLUMN booking_room_stays.departure_at IS 'Departure, property local time.';
COMMENT ON COLUMN booking_room_stays.room_type_id IS 'Room type id (content room_types).';
COMMENT ON COLUMN booking_room_stays.room_type_name IS 'Room type name as given in the booking.';
COMMENT ON COLUMN booking_room_stays.rate_plan_id IS 'First rate plan id of the stay (content rate_plans).';
COMMENT ON COLUMN booking_room_stays.rate_plan_name IS 'First rate plan name as given in the booking.';
COMMENT ON COLUMN booking_room_stays.adult_count IS 'Adults.';
COMMENT ON COLUMN booking_room_stays.child_ages IS 'Ages of the children.';
COMMENT ON COLUMN booking_room_stays.price_before_tax IS 'Stay total after discounts, before taxes.';
COMMENT ON COLUMN booking_room_stays.price_after_tax IS 'Stay total after discounts, including taxes.';
COMMENT ON COLUMN booking_room_stays.tax_amount IS 'Taxes of the stay total.';
COMMENT ON COLUMN booking_room_stays.early_arrival_at IS 'Early check-in time, property local time, if booked.';
COMMENT ON COLUMN booking_room_stays.early_arrival_price_after_tax IS 'Early check-in charge including taxes.';
COMMENT ON COLUMN booking_room_stays.late_departure_at IS 'Late check-out time, property local time, if booked.';
COMMENT ON COLUMN booking_room_stays.late_departure_price_after_tax IS 'Late check-out charge including taxes.';

CREATE TABLE booking_daily_rates (
  property_id       text    NOT NULL,
  number            text    NOT NULL,
  stay_index        integer NOT NULL,
  position          integer NOT NULL,
  stay_date         date    NOT NULL,
  rate_plan_id      text,
  price_before_tax  numeric,
  PRIMARY KEY (property_id, number, stay_index, position)
);
CREATE INDEX booking_daily_rates_date ON booking_daily_rates (property_id, stay_date);
COMMENT ON TABLE booking_daily_rates IS 'Price per night of each room stay.';
COMMENT ON COLUMN booking_daily_rates.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_daily_rates.number IS 'Booking number.';
COMMENT ON COLUMN booking_daily_rates.stay_index IS 'Room stay (booking_room_stays.stay_index).';
COMMENT ON COLUMN booking_daily_rates.position IS 'Position of the rate in the stay (0-based).';
COMMENT ON COLUMN booking_daily_rates.stay_date IS 'Night (property local date).';
COMMENT ON COLUMN booking_daily_rates.rate_plan_id IS 'Rate plan id of the night.';
COMMENT ON COLUMN booking_daily_rates.price_before_tax IS 'Price of the night before taxes.';

CREATE TABLE booking_services (
  property_id       text    NOT NULL,
  number            text    NOT NULL,
  position          integer NOT NULL,
  stay_index        integer,
  service_id        text,
  name              text,
  description       text,
  kind              text,
  meal_plan_code    text,
  inclusive         boolean,
  price_before_tax  numeric,
  price_after_tax   numeric,
  tax_amount        numeric,
  raw               jsonb   NOT NULL,
  PRIMARY KEY (property_id, number, position)
);
COMMENT ON TABLE booking_services IS 'Extra services of a booking: per room stay (stay_index set) or per booking (stay_index NULL).';
COMMENT ON COLUMN booking_services.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_services.number IS 'Booking number.';
COMMENT ON COLUMN booking_services.position IS 'Position among all services of the booking (0-based; per-booking services first).';
COMMENT ON COLUMN booking_services.stay_index IS 'Room stay the service belongs to; NULL for services charged per booking.';
COMMENT ON COLUMN booking_services.service_id IS 'Service id (content services).';
COMMENT ON COLUMN booking_services.name IS 'Service name as given in the booking.';
COMMENT ON COLUMN booking_services.description IS 'Service description as given in the booking.';
COMMENT ON COLUMN booking_services.kind IS 'Common or Meal (room stay services only).';
COMMENT ON COLUMN booking_services.meal_plan_code IS 'Meal plan code for Meal services (content meal_plans).';
COMMENT ON COLUMN booking_services.inclusive IS 'True when included in the rate (then no separate price is given).';
COMMENT ON COLUMN booking_services.price_before_tax IS 'Service total before taxes.';
COMMENT ON COLUMN booking_services.price_after_tax IS 'Service total including taxes.';
COMMENT ON COLUMN booking_services.tax_amount IS 'Taxes of the service total.';
COMMENT ON COLUMN booking_services.raw IS 'The service object exactly as received.';

CREATE TABLE booking_guests (
  property_id  text    NOT NULL,
  number       text    NOT NULL,
  stay_index   integer NOT NULL,
  position     integer NOT NULL,
  first_name   text,
  last_name    text,
  PRIMARY KEY (property_id, number, stay_index, position)
);
COMMENT ON TABLE booking_guests IS 'Guests named on each room stay (the provider gives names only).';
COMMENT ON COLUMN booking_guests.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_guests.number IS 'Booking number.';
COMMENT ON COLUMN booking_guests.stay_index IS 'Room stay (booking_room_stays.stay_index).';
COMMENT ON COLUMN booking_guests.position IS 'Position of the guest in the stay (0-based).';
COMMENT ON COLUMN booking_guests.first_name IS 'First name.';
COMMENT ON COLUMN booking_guests.last_name IS 'Last name.';

CREATE TABLE booking_taxes (
  property_id  text    NOT NULL,
  number       text    NOT NULL,
  tax_index    integer NOT NULL,
  name         text,
  description  text,
  PRIMARY KEY (property_id, number, tax_index)
);
COMMENT ON TABLE booking_taxes IS 'Tax descriptors of a booking; the amounts inside totals refer to them by tax_index (see raw).';
COMMENT ON COLUMN booking_taxes.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_taxes.number IS 'Booking number.';
COMMENT ON COLUMN booking_taxes.tax_index IS 'The provider''s tax index.';
COMMENT ON COLUMN booking_taxes.name IS 'Tax name.';
COMMENT ON COLUMN booking_taxes.description IS 'Tax description.';

CREATE TABLE booking_discounts (
  property_id    text    NOT NULL,
  number         text    NOT NULL,
  position       integer NOT NULL,
  stay_index     integer,
  discount_type  text,
  name           text,
  percent        numeric,
  amount         numeric,
  PRIMARY KEY (property_id, number, position)
);
COMMENT ON TABLE booking_discounts IS 'Discounts in the booking total (stay_index NULL) and in room stay totals.';
COMMENT ON COLUMN booking_discounts.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_discounts.number IS 'Booking number.';
COMMENT ON COLUMN booking_discounts.position IS 'Position among all discounts of the booking (0-based).';
COMMENT ON COLUMN booking_discounts.stay_index IS 'Room stay whose total carries the discount; NULL for the booking total.';
COMMENT ON COLUMN booking_discounts.discount_type IS 'Percentage or Fixed.';
COMMENT ON COLUMN booking_discounts.name IS 'Discount name.';
COMMENT ON COLUMN booking_discounts.percent IS 'Percent, for Percentage discounts.';
COMMENT ON COLUMN booking_discounts.amount IS 'Amount of the discount.';

CREATE TABLE sync_runs (
  id           bigserial   PRIMARY KEY,
  command      text        NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  outcome      text,
  stats        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  error        text
);
COMMENT ON TABLE sync_runs IS 'One row per daemon or sync --once process: when it ran, how it ended, what it did.';
COMMENT ON COLUMN sync_runs.id IS 'Run id.';
COMMENT ON COLUMN sync_runs.command IS 'run or sync --once.';
COMMENT ON COLUMN sync_runs.started_at IS 'Start (UTC).';
COMMENT ON COLUMN sync_runs.finished_at IS 'End (UTC); NULL while running or when the process was killed.';
COMMENT ON COLUMN sync_runs.outcome IS 'ok, failed, token_lost, stopped.';
COMMENT ON COLUMN sync_runs.stats IS 'Counters of the run (pages, summaries, details, quarantined, 429s).';
COMMENT ON COLUMN sync_runs.error IS 'Error message when the run failed.';

CREATE TABLE quarantine (
  id           bigserial   PRIMARY KEY,
  stream       text        NOT NULL,
  property_id  text,
  entity_key   text,
  reason       text        NOT NULL,
  raw_body     text        NOT NULL,
  received_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX quarantine_entity ON quarantine (stream, property_id, entity_key);
COMMENT ON TABLE quarantine IS 'Provider payloads that failed validation, with the reason and the body as received. The sync went on without them.';
COMMENT ON COLUMN quarantine.id IS 'Row id.';
COMMENT ON COLUMN quarantine.stream IS 'Stream that received the payload (booking_summaries, booking_details, ...).';
COMMENT ON COLUMN quarantine.property_id IS 'Provider property id, when known.';
COMMENT ON COLUMN quarantine.entity_key IS 'Key of the entity (booking number), when known.';
COMMENT ON COLUMN quarantine.reason IS 'Why it was rejected (validation issues with their paths).';
COMMENT ON COLUMN quarantine.raw_body IS 'The payload as received (text, possibly not even JSON).';
COMMENT ON COLUMN quarantine.received_at IS 'When it was received (UTC).';
