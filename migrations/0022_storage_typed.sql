-- Segments, channels and group blocks from the PMS integration storage (issue 27, points 4 and 5).
--
-- The storage bookings and inventory blocks were mirrored as raw only (0004_pms.sql); what
-- analysts filter and add up is typed here:
-- - each storage booking's market segment and source of business (its first room stay's), its
--   booking channels (integration_storage_booking_channels), and its revenue per room stay and
--   stay date (integration_storage_booking_nights: room type, rate plan, block, amount, guests);
-- - each inventory block's days (inventory_block_days: date, room type, blocked, realised,
--   cut-off, prices).
-- The children are replaced whole with each newer version of their parent, in its transaction
-- (src/store/repositories/integration-storage.ts). The document gives amounts after tax only
-- (PmsIntegrationApi_BookingAmount): there is no amount before tax to type.
--
-- Rows mirrored before this migration get their children from raw at the first start: the
-- mapping version goes to 5, and the upgrade rebuilds the typed tables from raw
-- (src/replay/upgrade.ts) with the same mapping the sync uses. No provider request.
--
-- Nothing here is personal: codes, counts, amounts, room numbers, and the names of agents and
-- companies. The raw of a storage booking stays personal data (as before).

ALTER TABLE integration_storage_bookings ADD COLUMN market_code text;
ALTER TABLE integration_storage_bookings ADD COLUMN source_of_business text;
COMMENT ON COLUMN integration_storage_bookings.market_code IS 'Market segment code of the PMS (its first room stay''s; each night has its own stay''s in integration_storage_booking_nights).';
COMMENT ON COLUMN integration_storage_bookings.source_of_business IS 'Source of business (marketing source) code of the PMS (its first room stay''s; each night has its own stay''s).';

CREATE TABLE integration_storage_booking_channels (
  property_id   text        NOT NULL,
  booking_id    text        NOT NULL,
  position      integer     NOT NULL,
  code          text,
  code_type     text,
  name          text,
  channel_type  text,
  synced_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, booking_id, position)
);
COMMENT ON TABLE integration_storage_booking_channels IS 'Booking channels of an integration-storage booking (travel agents, companies), replaced whole with each newer version of the booking.';
COMMENT ON COLUMN integration_storage_booking_channels.property_id IS 'Provider property id.';
COMMENT ON COLUMN integration_storage_booking_channels.booking_id IS 'Integration-storage booking id (integration_storage_bookings.booking_id).';
COMMENT ON COLUMN integration_storage_booking_channels.position IS 'Position of the channel in the booking (0-based).';
COMMENT ON COLUMN integration_storage_booking_channels.code IS 'Channel code of the PMS (e.g. TA001).';
COMMENT ON COLUMN integration_storage_booking_channels.code_type IS 'Unknown, Pms (or a newer value).';
COMMENT ON COLUMN integration_storage_booking_channels.name IS 'Name of the agent or company (e.g. Booking.com).';
COMMENT ON COLUMN integration_storage_booking_channels.channel_type IS 'Unknown, TravelAgent, Company (or a newer value).';
COMMENT ON COLUMN integration_storage_booking_channels.synced_at IS 'When staysync last wrote this row (UTC): its booking''s. A rebuild keeps it.';

CREATE TABLE integration_storage_booking_nights (
  property_id           text        NOT NULL,
  booking_id            text        NOT NULL,
  room_stay_position    integer     NOT NULL,
  position              integer     NOT NULL,
  room_stay_index       integer,
  stay_date             date        NOT NULL,
  market_code           text,
  source_of_business    text,
  room_type_code        text,
  room_number           text,
  rate_plan_code        text,
  inventory_block_code  text,
  amount_after_tax      numeric,
  currency_code         text,
  adults                integer     NOT NULL,
  children              integer     NOT NULL,
  synced_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, booking_id, room_stay_position, position)
);
CREATE INDEX integration_storage_booking_nights_date ON integration_storage_booking_nights (property_id, stay_date);
COMMENT ON TABLE integration_storage_booking_nights IS 'Revenue per room stay and stay date of an integration-storage booking (its room stays'' roomRates), with the stay''s market segment, source and guests; replaced whole with each newer version of the booking. One row is one room night.';
COMMENT ON COLUMN integration_storage_booking_nights.property_id IS 'Provider property id.';
COMMENT ON COLUMN integration_storage_booking_nights.booking_id IS 'Integration-storage booking id (integration_storage_bookings.booking_id).';
COMMENT ON COLUMN integration_storage_booking_nights.room_stay_position IS 'Position of the room stay in the booking (0-based).';
COMMENT ON COLUMN integration_storage_booking_nights.position IS 'Position of the rate in the room stay''s roomRates (0-based).';
COMMENT ON COLUMN integration_storage_booking_nights.room_stay_index IS 'The room stay''s own index as the PMS numbers it.';
COMMENT ON COLUMN integration_storage_booking_nights.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN integration_storage_booking_nights.market_code IS 'Market segment code of the room stay (e.g. LEISURE).';
COMMENT ON COLUMN integration_storage_booking_nights.source_of_business IS 'Source of business code of the room stay (e.g. WEB).';
COMMENT ON COLUMN integration_storage_booking_nights.room_type_code IS 'Room type code of the PMS of this night (the room stay''s room type its roomTypeIndex names).';
COMMENT ON COLUMN integration_storage_booking_nights.room_number IS 'Room number assigned in the PMS, when it is.';
COMMENT ON COLUMN integration_storage_booking_nights.rate_plan_code IS 'Rate plan code of the PMS of this night (its ratePlanIndex).';
COMMENT ON COLUMN integration_storage_booking_nights.inventory_block_code IS 'Code of the inventory block (group) the night is taken from (its inventoryBlockIndex); NULL when none.';
COMMENT ON COLUMN integration_storage_booking_nights.amount_after_tax IS 'Room revenue of the night after tax, as the PMS gives it (the document gives no amount before tax).';
COMMENT ON COLUMN integration_storage_booking_nights.currency_code IS 'Currency of the amount.';
COMMENT ON COLUMN integration_storage_booking_nights.adults IS 'Adults of the room stay (guestCounts AdultBed).';
COMMENT ON COLUMN integration_storage_booking_nights.children IS 'Children of the room stay (guestCounts ChildBandBed and any other code).';
COMMENT ON COLUMN integration_storage_booking_nights.synced_at IS 'When staysync last wrote this row (UTC): its booking''s. A rebuild keeps it.';

CREATE TABLE inventory_block_days (
  property_id         text        NOT NULL,
  inventory_block_id  text        NOT NULL,
  position            integer     NOT NULL,
  stay_date           date        NOT NULL,
  room_type_code      text,
  blocked_count       integer,
  realized_count      integer,
  cutoff_date         date,
  one_adult_price     numeric,
  services_price      numeric,
  currency_code       text,
  synced_at           timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, inventory_block_id, position)
);
CREATE INDEX inventory_block_days_date ON inventory_block_days (property_id, stay_date);
COMMENT ON TABLE inventory_block_days IS 'Days of an inventory (group) block: rooms blocked and realised per date and room type, the cut-off and the prices; replaced whole with each newer version of the block.';
COMMENT ON COLUMN inventory_block_days.property_id IS 'Provider property id.';
COMMENT ON COLUMN inventory_block_days.inventory_block_id IS 'Integration-storage block id (inventory_blocks.inventory_block_id).';
COMMENT ON COLUMN inventory_block_days.position IS 'Position of the day in the block''s dailyItems (0-based).';
COMMENT ON COLUMN inventory_block_days.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN inventory_block_days.room_type_code IS 'Room type code of the PMS.';
COMMENT ON COLUMN inventory_block_days.blocked_count IS 'Rooms blocked (allocated) for the night.';
COMMENT ON COLUMN inventory_block_days.realized_count IS 'Rooms realised (picked up) from the block for the night; NULL when the PMS does not track it.';
COMMENT ON COLUMN inventory_block_days.cutoff_date IS 'Cut-off date: rooms still unsold then are released (property-local); NULL when none is set.';
COMMENT ON COLUMN inventory_block_days.one_adult_price IS 'Price per room for one adult, as given.';
COMMENT ON COLUMN inventory_block_days.services_price IS 'Price of the additional services per room, as given.';
COMMENT ON COLUMN inventory_block_days.currency_code IS 'Currency of the prices.';
COMMENT ON COLUMN inventory_block_days.synced_at IS 'When staysync last wrote this row (UTC): its block''s. A rebuild keeps it.';

COMMENT ON TABLE inventory_blocks IS 'Inventory (allotment) blocks of the PMS integration storage, fetched when a pms_integration_storage:inventory_block_changed event announces them; their days in inventory_block_days.';
