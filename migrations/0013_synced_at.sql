-- synced_at on every mirror table: when staysync last wrote the row (UTC), for freshness checks
-- (dbt's `loaded_at_field`, `max(synced_at)` per table) and incremental models.
--
-- Which tables. A mirror table holds what the provider sent, and is what a reporting tool reads:
-- the bookings and their children, the booking summaries, content and its children, the
-- reference lists (typed, and as received), the PMS side (reservations and their room stays,
-- persons, rooms, daily occupancy, integration storage, inventory blocks) and the change events
-- (the provider's own record of what changed). bookings, pms_reservations,
-- integration_storage_bookings and inventory_blocks had the column already (0001, 0004).
-- Left out, as the daemon's own bookkeeping that no report is about: the cursors, both fetch
-- queues, the sweeps, change_lags (measurements, with written_at), runs, connections, replicas,
-- leases, token_requests, quarantine (payloads that were not mirrored), content_refreshes and
-- mirror_settings; each already says when it changed (updated_at, enqueued_at, written_at, ...).
-- Left out too: pos_codes, which is not mirrored (seeded here from the provider's documentation,
-- then the user's own rows) and which staysync never writes afterwards.
--
-- How it stays right. An insert takes the default, the time of the writing transaction. An
-- update sets it where it is written: every writer that updates a mirror row (an upsert that
-- found a change, a content row marked removed, an event processed) sets synced_at = now() in
-- the same statement (src/store/repositories/), and children are deleted and inserted with
-- their parent, so a booking's rows share its transaction's time. Not a BEFORE UPDATE trigger:
-- it would also stamp what is no write of staysync's data, an operator's UPDATE in psql and a
-- rebuild, which re-derives rows from the raw they were synced with and promises to reproduce
-- the typed tables byte for byte (src/replay/rebuild.ts).
--
-- The four tables whose mapping hands in a synced_at of its own (the daemon's clock, taken
-- before the write: src/mapping/bookings.ts, pms.ts) get the database's time instead, from a
-- BEFORE INSERT trigger (about 1.5 us a row), so that a header gets exactly the time its
-- children get from the default. The bookings upsert sets every column from `excluded`, which
-- holds what the trigger wrote: its updates are stamped too.
--
-- Existing rows take the time of this migration: the column is added with a default and no
-- rewrite of the table, and a rebuild keeps whatever synced_at a row has.
--
-- One index, on bookings: the biggest table a freshness check reads (`max(synced_at)`, about
-- 1.6 kB a row with its raw: 60-100 ms at 100,000 bookings, a second or more at a million, from
-- disk when cold), and the one an incremental model selects from (`synced_at > ...`). With the
-- index both read a few pages (0.2 ms), and writing 20,000 headers took no measurably longer.
-- Not on the children, which share their booking's synced_at (an incremental model selects them
-- through it) and of which a booking writes dozens: on booking_daily_rates an index made an
-- insert about a fifth slower. Not on booking_summaries, rewritten whenever the list shows a
-- booking: an index on a column that every update changes rules out HOT updates for the table;
-- read whole, it takes 20-30 ms at 100,000 bookings.

CREATE FUNCTION stamp_synced_at() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.synced_at := now();
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION stamp_synced_at() IS 'Sets synced_at to the time of the writing transaction, whatever the writer gave: BEFORE INSERT on the tables whose mapping gives a synced_at of its own.';

CREATE TRIGGER bookings_stamp_synced_at BEFORE INSERT ON bookings FOR EACH ROW EXECUTE FUNCTION stamp_synced_at();
CREATE TRIGGER pms_reservations_stamp_synced_at BEFORE INSERT ON pms_reservations FOR EACH ROW EXECUTE FUNCTION stamp_synced_at();
CREATE TRIGGER integration_storage_bookings_stamp_synced_at BEFORE INSERT ON integration_storage_bookings FOR EACH ROW EXECUTE FUNCTION stamp_synced_at();
CREATE TRIGGER inventory_blocks_stamp_synced_at BEFORE INSERT ON inventory_blocks FOR EACH ROW EXECUTE FUNCTION stamp_synced_at();

CREATE INDEX bookings_synced_at ON bookings (synced_at);

-- Bookings: the summaries and the children of a booking version.
ALTER TABLE booking_summaries ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_room_stays ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_daily_rates ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_services ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_guests ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_taxes ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_discounts ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_tax_amounts ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_room_stay_rate_plans ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE booking_loyalty_cards ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();

-- Content and its children.
ALTER TABLE properties ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE room_types ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE room_type_amenities ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE rate_plans ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE services ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE property_amenities ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE cancellation_rules ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE cancellation_rule_terms ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE cancellation_rule_arrival_dates ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE extra_stay_rules ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE extra_stay_rule_periods ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();

-- Reference lists: typed, and as received.
ALTER TABLE meal_plans ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE room_type_categories ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE room_amenities ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE payment_methods ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE property_amenity_types ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE property_kinds ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE reference_lists ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();

-- PMS, and the change events.
ALTER TABLE pms_room_stays ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE pms_guests ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE pms_rooms ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE daily_occupancy ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE webhook_events ADD COLUMN synced_at timestamptz NOT NULL DEFAULT now();

COMMENT ON COLUMN bookings.synced_at IS 'When staysync last wrote this row (UTC): the time of the transaction that wrote this booking version, which its child rows share. A rebuild keeps it.';
COMMENT ON COLUMN booking_summaries.synced_at IS 'When staysync last wrote this row (UTC): the last time the booking list showed this booking. A rebuild keeps it.';
COMMENT ON COLUMN booking_room_stays.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_daily_rates.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_services.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_guests.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_taxes.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_discounts.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_tax_amounts.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_room_stay_rate_plans.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN booking_loyalty_cards.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the booking version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN properties.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN room_types.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN room_type_amenities.synced_at IS 'When staysync last wrote this row (UTC): written with its room type. A rebuild keeps it.';
COMMENT ON COLUMN rate_plans.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN services.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN property_amenities.synced_at IS 'When staysync last wrote this row (UTC): written with its property. A rebuild keeps it.';
COMMENT ON COLUMN cancellation_rules.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN cancellation_rule_terms.synced_at IS 'When staysync last wrote this row (UTC): written with its rule. A rebuild keeps it.';
COMMENT ON COLUMN cancellation_rule_arrival_dates.synced_at IS 'When staysync last wrote this row (UTC): written with its rule. A rebuild keeps it.';
COMMENT ON COLUMN extra_stay_rules.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN extra_stay_rule_periods.synced_at IS 'When staysync last wrote this row (UTC): written with its rule. A rebuild keeps it.';
COMMENT ON COLUMN meal_plans.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN room_type_categories.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN room_amenities.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN payment_methods.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN property_amenity_types.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN property_kinds.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN reference_lists.synced_at IS 'When staysync last wrote this row (UTC): the last time the list was received. A rebuild keeps it.';
COMMENT ON COLUMN pms_reservations.synced_at IS 'When staysync last wrote this row (UTC): the time of the transaction that wrote this reservation version, which its room stays share. A rebuild keeps it.';
COMMENT ON COLUMN pms_room_stays.synced_at IS 'When staysync last wrote this row (UTC): the synced_at of the reservation version it belongs to. A rebuild keeps it.';
COMMENT ON COLUMN pms_guests.synced_at IS 'When staysync last wrote this row (UTC): the last time the person was received. A rebuild keeps it.';
COMMENT ON COLUMN pms_rooms.synced_at IS 'When staysync last wrote this row (UTC): added, changed, marked removed or revived. A rebuild keeps it.';
COMMENT ON COLUMN daily_occupancy.synced_at IS 'When staysync last wrote this row (UTC): the refresh of its window that last replaced it. A rebuild keeps it.';
COMMENT ON COLUMN webhook_events.synced_at IS 'When staysync last wrote this row (UTC): received, then each change of its state or schedule.';
COMMENT ON COLUMN integration_storage_bookings.synced_at IS 'When staysync last wrote this row (UTC): the time of the transaction that wrote this version. A rebuild keeps it.';
COMMENT ON COLUMN inventory_blocks.synced_at IS 'When staysync last wrote this row (UTC): the time of the transaction that wrote this version. A rebuild keeps it.';
