-- Fidelity: every payload the provider's OpenAPI document allows is mirrored, exactly as sent.
-- Summaries without a status, duplicate tax indexes, every rate plan of a room stay, tax
-- amounts at every level, loyalty cards, the guarantees' payment methods, extra-stay amounts
-- before tax, reference lists as sent, and the mapping version that makes a new mapping
-- re-derive the typed tables from `raw` (staysync rebuild) and re-drive the quarantine.

-- A summary needs only its number (the document requires nothing else).
ALTER TABLE booking_summaries ALTER COLUMN status DROP NOT NULL;
COMMENT ON COLUMN booking_summaries.status IS 'Booking status (Active, Cancelled, or any value the provider adds); NULL when the summary has none.';

-- The document does not make tax indexes unique: taxes are keyed by their position.
ALTER TABLE booking_taxes ADD COLUMN position integer;
UPDATE booking_taxes t SET position = n.position
  FROM (SELECT property_id, number, tax_index,
               (row_number() OVER (PARTITION BY property_id, number ORDER BY tax_index) - 1)::integer AS position
          FROM booking_taxes) n
 WHERE (t.property_id, t.number, t.tax_index) = (n.property_id, n.number, n.tax_index);
ALTER TABLE booking_taxes ALTER COLUMN position SET NOT NULL;
ALTER TABLE booking_taxes DROP CONSTRAINT booking_taxes_pkey;
ALTER TABLE booking_taxes ADD PRIMARY KEY (property_id, number, position);
ALTER TABLE booking_taxes ALTER COLUMN tax_index DROP NOT NULL;
COMMENT ON COLUMN booking_taxes.position IS 'Position of the tax in the booking''s taxes list (0-based).';
COMMENT ON COLUMN booking_taxes.tax_index IS 'The provider''s tax index, which tax amounts refer to (booking_tax_amounts.tax_index); not necessarily unique.';

CREATE TABLE booking_tax_amounts (
  property_id       text    NOT NULL,
  number            text    NOT NULL,
  position          integer NOT NULL,
  level             text    NOT NULL CHECK (level IN ('booking', 'room_stay', 'service', 'early_arrival', 'late_departure')),
  stay_index        integer,
  service_position  integer,
  tax_index         integer,
  name              text,
  amount            numeric NOT NULL,
  PRIMARY KEY (property_id, number, position)
);
CREATE INDEX booking_tax_amounts_tax ON booking_tax_amounts (property_id, tax_index);
COMMENT ON TABLE booking_tax_amounts IS 'Every tax or fee amount of a booking version, at the level it was given: the booking total, a room stay total, a service total, or an early-arrival / late-departure charge.';
COMMENT ON COLUMN booking_tax_amounts.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_tax_amounts.number IS 'Booking number.';
COMMENT ON COLUMN booking_tax_amounts.position IS 'Position of the amount within the booking (0-based, in payload order).';
COMMENT ON COLUMN booking_tax_amounts.level IS 'booking, room_stay, service, early_arrival or late_departure.';
COMMENT ON COLUMN booking_tax_amounts.stay_index IS 'Room stay (booking_room_stays.stay_index) for room_stay, early_arrival, late_departure and room stay services; NULL at booking level.';
COMMENT ON COLUMN booking_tax_amounts.service_position IS 'Service (booking_services.position) for level service; NULL otherwise.';
COMMENT ON COLUMN booking_tax_amounts.tax_index IS 'The provider''s tax index (booking_taxes.tax_index).';
COMMENT ON COLUMN booking_tax_amounts.name IS 'Name of the tax with that index in the booking''s taxes list (the first one when several share it).';
COMMENT ON COLUMN booking_tax_amounts.amount IS 'Amount of the tax or fee, exactly as sent.';

CREATE TABLE booking_room_stay_rate_plans (
  property_id     text    NOT NULL,
  number          text    NOT NULL,
  stay_index      integer NOT NULL,
  position        integer NOT NULL,
  rate_plan_id    text,
  rate_plan_name  text,
  PRIMARY KEY (property_id, number, stay_index, position)
);
COMMENT ON TABLE booking_room_stay_rate_plans IS 'Every rate plan of a room stay, in payload order (booking_room_stays.rate_plan_id holds the first).';
COMMENT ON COLUMN booking_room_stay_rate_plans.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_room_stay_rate_plans.number IS 'Booking number.';
COMMENT ON COLUMN booking_room_stay_rate_plans.stay_index IS 'Room stay (booking_room_stays.stay_index).';
COMMENT ON COLUMN booking_room_stay_rate_plans.position IS 'Position in the room stay''s rate plan list (0-based).';
COMMENT ON COLUMN booking_room_stay_rate_plans.rate_plan_id IS 'Rate plan id (rate_plans.rate_plan_id).';
COMMENT ON COLUMN booking_room_stay_rate_plans.rate_plan_name IS 'Rate plan name as given in the booking.';

CREATE TABLE booking_loyalty_cards (
  property_id        text    NOT NULL,
  number             text    NOT NULL,
  position           integer NOT NULL,
  card_number        text,
  loyalty_system_id  text,
  PRIMARY KEY (property_id, number, position)
);
COMMENT ON TABLE booking_loyalty_cards IS 'Loyalty cards of a booking (guaranteeInfo.loyalty.cards).';
COMMENT ON COLUMN booking_loyalty_cards.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_loyalty_cards.number IS 'Booking number.';
COMMENT ON COLUMN booking_loyalty_cards.position IS 'Position in the card list (0-based).';
COMMENT ON COLUMN booking_loyalty_cards.card_number IS 'Loyalty card number.';
COMMENT ON COLUMN booking_loyalty_cards.loyalty_system_id IS 'Loyalty programme (for example TLStatusLevel).';

ALTER TABLE bookings
  ADD COLUMN payment_method  text,
  ADD COLUMN payment_methods text[];
COMMENT ON COLUMN bookings.payment_method IS 'Payment method of the first guarantee (guaranteeInfo.guarantees[0].paymentMethod), for example PrePay or BankCard.';
COMMENT ON COLUMN bookings.payment_methods IS 'Payment methods of every guarantee, in payload order.';

ALTER TABLE booking_room_stays
  ADD COLUMN early_arrival_price_before_tax  numeric,
  ADD COLUMN late_departure_price_before_tax numeric;
COMMENT ON COLUMN booking_room_stays.early_arrival_price_before_tax IS 'Early check-in charge before tax.';
COMMENT ON COLUMN booking_room_stays.late_departure_price_before_tax IS 'Late check-out charge before tax.';
COMMENT ON COLUMN booking_room_stays.arrival_at IS 'Arrival, property-local wall-clock time. When the provider sends a zone with it, the zone is kept in raw and the wall-clock time as written goes here.';
COMMENT ON COLUMN booking_room_stays.departure_at IS 'Departure, property-local wall-clock time. When the provider sends a zone with it, the zone is kept in raw and the wall-clock time as written goes here.';
COMMENT ON COLUMN booking_daily_rates.stay_date IS 'The night the rate is for: the calendar date as the provider wrote it (a time or zone after it does not move the date).';

-- Reference lists exactly as sent; the typed tables hold the entries that have a code.
CREATE TABLE reference_lists (
  list_name     text        PRIMARY KEY,
  raw           jsonb,
  content_hash  text        NOT NULL,
  fetched_at    timestamptz NOT NULL
);
COMMENT ON TABLE reference_lists IS 'Each reference list (meal plans, room type categories, ...) as last received, including entries without a code, which the typed tables cannot key.';
COMMENT ON COLUMN reference_lists.list_name IS 'mealPlans, roomTypeCategories, roomAmenityCategories, paymentMethods, propertyAmenityTypes or propertyKinds.';
COMMENT ON COLUMN reference_lists.raw IS 'The response body exactly as received (NULL when the provider sent null).';
COMMENT ON COLUMN reference_lists.content_hash IS 'Hash of raw.';
COMMENT ON COLUMN reference_lists.fetched_at IS 'When it was last received (UTC).';

-- The version of the mapping from raw to typed rows that the typed tables were built with.
CREATE TABLE mirror_settings (
  name        text        PRIMARY KEY,
  value       text        NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE mirror_settings IS 'Facts about the mirror itself, such as mapping_version: the version of the mapping from raw payloads to typed rows. When the daemon''s mapping is newer, it rebuilds the typed tables from raw and retries the quarantine before syncing.';
COMMENT ON COLUMN mirror_settings.name IS 'Setting name.';
COMMENT ON COLUMN mirror_settings.value IS 'Setting value.';
COMMENT ON COLUMN mirror_settings.updated_at IS 'When it was last set (UTC).';

COMMENT ON COLUMN bookings.raw IS 'The booking details response exactly as received ({"booking": {...}}): same keys, numbers with their digits and scale, same strings (jsonb''s own normalisation aside). staysync rebuild re-derives every typed column from it.';
