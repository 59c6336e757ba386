-- Rooms by type (issue 27, points 3 and 8): where each room is (the PMS accommodation
-- inventory: buildings, floors, rooms), the inventory of each PMS room type and night (integration
-- storage inventory search), the PMS's stay units by rate plan code and month (calculate-stay-
-- units), and what the mirror has learnt of the PMS's codes (room type and rate plan codes to
-- content ids), so that the reporting views can put the PMS's counts beside the mirror's revenue.
--
-- The accommodation inventory is a refresh of each property with the PMS rooms (content.refreshCron);
-- the inventory days and the stay units are refreshed on roomInventory.refreshCron over a horizon
-- around the property's today. Nothing here is personal data.

CREATE TABLE pms_buildings (
  property_id   text        NOT NULL,
  building_id   text        NOT NULL,
  name          text,
  position      integer     NOT NULL,
  refreshed_at  timestamptz NOT NULL,
  synced_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, building_id)
);
COMMENT ON TABLE pms_buildings IS 'Buildings of each property (PMS accommodation inventory), replaced whole with each refresh of the property that found a change.';
COMMENT ON COLUMN pms_buildings.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_buildings.building_id IS 'PMS building id.';
COMMENT ON COLUMN pms_buildings.name IS 'Building name as displayed (e.g. Main building).';
COMMENT ON COLUMN pms_buildings.position IS 'Position in the PMS''s list (0-based).';
COMMENT ON COLUMN pms_buildings.refreshed_at IS 'When the accommodation inventory that holds this row was read (UTC).';
COMMENT ON COLUMN pms_buildings.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE pms_floors (
  property_id   text        NOT NULL,
  building_id   text        NOT NULL,
  floor_id      text        NOT NULL,
  name          text,
  position      integer     NOT NULL,
  refreshed_at  timestamptz NOT NULL,
  synced_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, building_id, floor_id)
);
COMMENT ON TABLE pms_floors IS 'Floors of each building (PMS accommodation inventory), replaced with their buildings.';
COMMENT ON COLUMN pms_floors.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_floors.building_id IS 'Building of the floor (pms_buildings).';
COMMENT ON COLUMN pms_floors.floor_id IS 'PMS floor id (pms_rooms.floor_id).';
COMMENT ON COLUMN pms_floors.name IS 'Floor name as displayed (e.g. 1st floor).';
COMMENT ON COLUMN pms_floors.position IS 'Position in the building''s list (0-based).';
COMMENT ON COLUMN pms_floors.refreshed_at IS 'When the accommodation inventory that holds this row was read (UTC).';
COMMENT ON COLUMN pms_floors.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE pms_room_places (
  property_id   text        NOT NULL,
  room_id       text        NOT NULL,
  building_id   text        NOT NULL,
  floor_id      text        NOT NULL,
  display_name  text,
  room_type_id  text,
  refreshed_at  timestamptz NOT NULL,
  synced_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, room_id)
);
CREATE INDEX pms_room_places_floor ON pms_room_places (property_id, building_id, floor_id);
COMMENT ON TABLE pms_room_places IS 'Where each room is (PMS accommodation inventory): its building, floor and room type; join pms_rooms on (property_id, room_id). A room the tree lists twice keeps its first place.';
COMMENT ON COLUMN pms_room_places.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_room_places.room_id IS 'PMS room id (pms_rooms.room_id, pms_room_stays.room_id).';
COMMENT ON COLUMN pms_room_places.building_id IS 'Building (pms_buildings).';
COMMENT ON COLUMN pms_room_places.floor_id IS 'Floor (pms_floors): the floor the tree lists the room under.';
COMMENT ON COLUMN pms_room_places.display_name IS 'Room name or number as displayed.';
COMMENT ON COLUMN pms_room_places.room_type_id IS 'Room type (content room_types.room_type_id).';
COMMENT ON COLUMN pms_room_places.refreshed_at IS 'When the accommodation inventory that holds this row was read (UTC).';
COMMENT ON COLUMN pms_room_places.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE pms_accommodation_inventories (
  property_id   text        PRIMARY KEY,
  raw           jsonb       NOT NULL,
  content_hash  text        NOT NULL,
  refreshed_at  timestamptz NOT NULL,
  synced_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pms_accommodation_inventories IS 'The accommodation inventory of each property as last received (one row a property): pms_buildings, pms_floors and pms_room_places are made from it.';
COMMENT ON COLUMN pms_accommodation_inventories.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_accommodation_inventories.raw IS 'The accommodationInventory object as received.';
COMMENT ON COLUMN pms_accommodation_inventories.content_hash IS 'Hash of raw: an unchanged inventory is not written again.';
COMMENT ON COLUMN pms_accommodation_inventories.refreshed_at IS 'When this inventory was read (UTC), the last time it changed.';
COMMENT ON COLUMN pms_accommodation_inventories.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE room_type_inventory_days (
  property_id               text        NOT NULL,
  room_type_code            text        NOT NULL,
  stay_date                 date        NOT NULL,
  physical_room_count       integer     NOT NULL,
  available_room_count      integer     NOT NULL,
  out_of_order_room_count   integer     NOT NULL,
  -- Not a field of the answer: the rooms neither free nor out of order, as the database derives them.
  sold_room_count           integer     GENERATED ALWAYS AS (physical_room_count - available_room_count - out_of_order_room_count) STORED,
  updated_at                timestamptz,
  refreshed_at              timestamptz NOT NULL,
  synced_at                 timestamptz NOT NULL DEFAULT now(),
  raw                       jsonb       NOT NULL,
  PRIMARY KEY (property_id, room_type_code, stay_date)
);
COMMENT ON TABLE room_type_inventory_days IS 'Inventory of each PMS room type and night (PMS integration storage, inventory search), over the horizon of roomInventory; each refresh replaces the dates it read, in one transaction.';
COMMENT ON COLUMN room_type_inventory_days.property_id IS 'Provider property id.';
COMMENT ON COLUMN room_type_inventory_days.room_type_code IS 'PMS room type code (case as sent); content ids: pms_room_type_codes.';
COMMENT ON COLUMN room_type_inventory_days.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN room_type_inventory_days.physical_room_count IS 'Rooms of this type (physicalRoomCount).';
COMMENT ON COLUMN room_type_inventory_days.available_room_count IS 'Rooms of this type still free to book that night (availableRoomCount), as given.';
COMMENT ON COLUMN room_type_inventory_days.out_of_order_room_count IS 'Rooms of this type out of order that night (outOfOrderRoomCount), as given.';
COMMENT ON COLUMN room_type_inventory_days.sold_room_count IS 'Rooms neither free nor out of order: physical - available - out of order (derived; negative only if the PMS''s counts disagree).';
COMMENT ON COLUMN room_type_inventory_days.updated_at IS 'When the storage last changed this record (updateDateTime, UTC).';
COMMENT ON COLUMN room_type_inventory_days.refreshed_at IS 'When the dates of this row were last read (UTC).';
COMMENT ON COLUMN room_type_inventory_days.synced_at IS 'When staysync last wrote this row (UTC).';
COMMENT ON COLUMN room_type_inventory_days.raw IS 'The record as received.';

CREATE TABLE stay_units (
  property_id      text        NOT NULL,
  rate_plan_code   text        NOT NULL,
  month            date        NOT NULL CHECK (extract(day FROM month) = 1),
  first_stay_date  date        NOT NULL,
  last_stay_date   date        NOT NULL,
  stay_units       integer     NOT NULL,
  read_at          timestamptz NOT NULL,
  synced_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, rate_plan_code, month)
);
COMMENT ON TABLE stay_units IS 'Stay units (nights, or days for a property sold by the day) booked per PMS rate plan code and month, as the PMS counts them (PMS integration storage, calculate-stay-units); refreshed month by month over the horizon of roomInventory.';
COMMENT ON COLUMN stay_units.property_id IS 'Provider property id.';
COMMENT ON COLUMN stay_units.rate_plan_code IS 'PMS rate plan code (pmsSideRatePlanCode, case-sensitive); content ids: pms_rate_plan_codes.';
COMMENT ON COLUMN stay_units.month IS 'First day of the month counted.';
COMMENT ON COLUMN stay_units.first_stay_date IS 'First stay date asked for (the first of the month).';
COMMENT ON COLUMN stay_units.last_stay_date IS 'Last stay date asked for (the last of the month).';
COMMENT ON COLUMN stay_units.stay_units IS 'Booked stay units of the rate plan in the month, as the PMS answered.';
COMMENT ON COLUMN stay_units.read_at IS 'When the PMS was asked (UTC).';
COMMENT ON COLUMN stay_units.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE pms_room_type_codes (
  property_id     text        NOT NULL,
  room_type_code  text        NOT NULL,
  room_type_id    text        NOT NULL,
  room_stays      integer     NOT NULL,
  learnt_at       timestamptz NOT NULL,
  synced_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, room_type_code, room_type_id)
);
COMMENT ON TABLE pms_room_type_codes IS 'PMS room type codes against content room type ids, learnt from the integration-storage bookings: the code of each of their room stays beside the room type of the mirrored booking''s stay of the same position. Made again at each inventory refresh.';
COMMENT ON COLUMN pms_room_type_codes.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_room_type_codes.room_type_code IS 'PMS room type code (room_type_inventory_days.room_type_code).';
COMMENT ON COLUMN pms_room_type_codes.room_type_id IS 'Content room type id (room_types, room_nights.room_type_id).';
COMMENT ON COLUMN pms_room_type_codes.room_stays IS 'Room stays that pair them: the evidence.';
COMMENT ON COLUMN pms_room_type_codes.learnt_at IS 'When the pairs were last made (UTC).';
COMMENT ON COLUMN pms_room_type_codes.synced_at IS 'When staysync last wrote this row (UTC).';

CREATE TABLE pms_rate_plan_codes (
  property_id     text        NOT NULL,
  rate_plan_code  text        NOT NULL,
  rate_plan_id    text        NOT NULL,
  room_stays      integer     NOT NULL,
  learnt_at       timestamptz NOT NULL,
  synced_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, rate_plan_code, rate_plan_id)
);
COMMENT ON TABLE pms_rate_plan_codes IS 'PMS rate plan codes against content rate plan ids, learnt from the integration-storage bookings as pms_room_type_codes is (the first rate plan of each room stay). Made again at each stay-units refresh.';
COMMENT ON COLUMN pms_rate_plan_codes.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_rate_plan_codes.rate_plan_code IS 'PMS rate plan code (stay_units.rate_plan_code).';
COMMENT ON COLUMN pms_rate_plan_codes.rate_plan_id IS 'Content rate plan id (rate_plans, room_nights.rate_plan_id).';
COMMENT ON COLUMN pms_rate_plan_codes.room_stays IS 'Room stays that pair them: the evidence.';
COMMENT ON COLUMN pms_rate_plan_codes.learnt_at IS 'When the pairs were last made (UTC).';
COMMENT ON COLUMN pms_rate_plan_codes.synced_at IS 'When staysync last wrote this row (UTC).';

ALTER TABLE sync_cursors DROP CONSTRAINT sync_cursors_stream_check;
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_stream_check CHECK (stream IN ('booking_summaries', 'booking_sweep', 'pms_reservations', 'daily_occupancy', 'room_type_inventory', 'stay_units'));

ALTER TABLE quarantine DROP CONSTRAINT quarantine_stream_check;
ALTER TABLE quarantine
  ADD CONSTRAINT quarantine_stream_check CHECK (stream IN ('booking_summaries', 'booking_details', 'content', 'pms_reservations', 'pms_rooms', 'pms_guests', 'pms_invoices', 'pms_companies', 'daily_occupancy', 'webhook_events', 'webhook_receiver', 'accommodation_inventory', 'room_type_inventory', 'stay_units'));
