-- History: every version of a booking the mirror fetched, kept with its validity by the
-- provider's own modification time (type 2), so that the books can be read as of any moment;
-- and the facts the reports read most, maintained as bookings are written. See
-- docs/history.md. Written by src/store/repositories/history.ts in the transaction of the
-- booking's details; derived by src/mapping/history.ts.

-- A night's gross: its net plus its share of the stay's taxes. The views computed it on every
-- query; the mapping computes it once (src/mapping/room-revenue.ts), with the same rule.
ALTER TABLE booking_daily_rates ADD COLUMN gross_amount numeric;
COMMENT ON COLUMN booking_daily_rates.gross_amount IS 'The night after tax: price_before_tax plus the night''s share of its room stay''s taxes and fees (stay price after tax minus before tax), in proportion to its net price (evenly when the stay is zero-rate), rounded cumulatively to the amounts'' scale (at least cents), so that a stay''s nights add up to its price after tax. NULL when price_before_tax is.';

CREATE TABLE booking_versions (
  property_id        text        NOT NULL,
  number             text        NOT NULL,
  version            integer     NOT NULL,
  valid_from         timestamptz NOT NULL,
  valid_to           timestamptz,
  modified_at        timestamptz NOT NULL,
  reconstructed      boolean     NOT NULL,
  fetched_at         timestamptz,
  content_hash       text,
  status             text        NOT NULL,
  created_at         timestamptz,
  cancelled_at       timestamptz,
  currency_code      text,
  arrival_date       date,
  departure_date     date,
  rooms              integer     NOT NULL,
  room_nights        integer     NOT NULL,
  room_type_ids      text[]      NOT NULL,
  room_revenue_net   numeric,
  room_revenue_gross numeric,
  total_net          numeric,
  total_gross        numeric,
  changes            text[]      NOT NULL,
  synced_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, number, version),
  CONSTRAINT booking_versions_validity CHECK (valid_to IS NULL OR valid_to >= valid_from),
  CONSTRAINT booking_versions_changes_check CHECK (changes <@ ARRAY['created', 'cancelled', 'reinstated', 'dates', 'rooms', 'room_type', 'price', 'other']::text[])
);
-- Not unique: the statement that writes a version closes the current one and inserts the next
-- (data-modifying CTEs of one statement, in no guaranteed order); the booking's row lock keeps
-- one writer per booking, so one current version.
CREATE INDEX booking_versions_current ON booking_versions (property_id, number) WHERE valid_to IS NULL;
COMMENT ON TABLE booking_versions IS 'Every version of each booking: one row per version the mirror fetched (a re-fetch of the same version adds nothing), valid from the provider''s modifiedDateTime until the next version''s. A booking first seen after it was changed starts with reconstructed versions: on the books from its creation as its first fetched version says. Read it through reporting.booking_history.';
COMMENT ON COLUMN booking_versions.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_versions.number IS 'Booking number.';
COMMENT ON COLUMN booking_versions.version IS 'Position of the version in the booking''s history, from 1.';
COMMENT ON COLUMN booking_versions.valid_from IS 'From when this version was the booking (UTC): its modifiedDateTime; for a reconstructed version, the creation (or cancellation) it stands for.';
COMMENT ON COLUMN booking_versions.valid_to IS 'Until when (UTC, exclusive): the next version''s valid_from. NULL for the current version. Equal to valid_from for a version that was replaced within its own second (never valid at any instant).';
COMMENT ON COLUMN booking_versions.modified_at IS 'The provider''s modifiedDateTime of the payload this version comes from.';
COMMENT ON COLUMN booking_versions.reconstructed IS 'True for a version the mirror did not fetch: derived from the first fetched version of a booking first seen after it changed.';
COMMENT ON COLUMN booking_versions.fetched_at IS 'When its details were fetched (UTC); NULL for a reconstructed version.';
COMMENT ON COLUMN booking_versions.content_hash IS 'SHA-256 (hex) of the payload''s canonical JSON (keys sorted, numbers as sent; the same as received and as stored): tells a second version within the same second from a re-fetch of the same one. NULL for a reconstructed version.';
COMMENT ON COLUMN booking_versions.status IS 'Booking status in this version: Active, Cancelled, Unconfirmed (or a newer provider value).';
COMMENT ON COLUMN booking_versions.created_at IS 'createdDateTime as this version says (UTC).';
COMMENT ON COLUMN booking_versions.cancelled_at IS 'cancelledDateTime as this version says (UTC); NULL when not cancelled.';
COMMENT ON COLUMN booking_versions.currency_code IS 'ISO 4217 currency of the amounts of this version.';
COMMENT ON COLUMN booking_versions.arrival_date IS 'Earliest arrival date of its room stays (property-local).';
COMMENT ON COLUMN booking_versions.departure_date IS 'Latest departure date of its room stays (property-local).';
COMMENT ON COLUMN booking_versions.rooms IS 'Room stays (rooms booked).';
COMMENT ON COLUMN booking_versions.room_nights IS 'Nights of its room stays (cancelled or not).';
COMMENT ON COLUMN booking_versions.room_type_ids IS 'Room type of each room stay, in stay order.';
COMMENT ON COLUMN booking_versions.room_revenue_net IS 'Sum of its nightly prices before tax.';
COMMENT ON COLUMN booking_versions.room_revenue_gross IS 'Sum of its nightly amounts after tax (booking_daily_rates.gross_amount).';
COMMENT ON COLUMN booking_versions.total_net IS 'Booking total before tax as sent (rooms, services, early/late charges).';
COMMENT ON COLUMN booking_versions.total_gross IS 'Booking total after tax as sent.';
COMMENT ON COLUMN booking_versions.changes IS 'What changed from the version before: created, cancelled, reinstated, dates (nights moved, added or removed), rooms (room stays added or removed), room_type, price (nightly or total amounts), other (nothing a report reads).';
COMMENT ON COLUMN booking_versions.synced_at IS 'When staysync last wrote this row (UTC): when the version was added, or when the next one closed it.';

-- The nights on the books, with their validity. Only what a version changed gets a row: a
-- version that moves one night closes that night's row and opens one; a version that changes
-- nothing a report reads adds none. A cancellation closes every open row; a reinstatement
-- opens them again. The open rows (valid_to IS NULL) are the nights of the current versions
-- not cancelled: exactly what nightly_facts adds up.
CREATE TABLE booking_night_history (
  property_id         text        NOT NULL,
  number              text        NOT NULL,
  stay_index          integer     NOT NULL,
  stay_date           date        NOT NULL,
  currency_code       text,
  room_type_id        text,
  net_amount          numeric,
  gross_amount        numeric,
  valid_from          timestamptz NOT NULL,
  valid_to            timestamptz,
  reconstructed_until timestamptz,
  synced_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT booking_night_history_validity CHECK (valid_to IS NULL OR valid_to > valid_from)
);
CREATE INDEX booking_night_history_open ON booking_night_history (property_id, number) WHERE valid_to IS NULL;
-- Covering every column the reports read of a property's nights (pace, on_the_books), so they
-- answer from the index alone: measured by the bench's scenario H (docs/benchmarks.md) at
-- 6,000,000 night rows, pace for a property's year in 165 ms instead of 280 ms reading the
-- table, for about 6 bytes a row (reconstructed_until is NULL but for reconstructed versions).
CREATE INDEX booking_night_history_nights ON booking_night_history (property_id, stay_date)
  INCLUDE (valid_from, valid_to, currency_code, net_amount, gross_amount, reconstructed_until);
COMMENT ON TABLE booking_night_history IS 'Each night of a room stay while it was on the books (its booking not cancelled), valid from the version that put it there (or changed its price or room type) to the version that took it away: the books as of any moment are the rows valid then (reporting.on_the_books).';
COMMENT ON COLUMN booking_night_history.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_night_history.number IS 'Booking number.';
COMMENT ON COLUMN booking_night_history.stay_index IS 'Room stay of the booking (0-based).';
COMMENT ON COLUMN booking_night_history.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN booking_night_history.currency_code IS 'Currency of the amounts (the booking''s).';
COMMENT ON COLUMN booking_night_history.room_type_id IS 'Room type of the stay.';
COMMENT ON COLUMN booking_night_history.net_amount IS 'The night before tax.';
COMMENT ON COLUMN booking_night_history.gross_amount IS 'The night after tax (net plus its share of the stay''s taxes).';
COMMENT ON COLUMN booking_night_history.valid_from IS 'From when the night was on the books with these values (UTC, the provider''s time).';
COMMENT ON COLUMN booking_night_history.valid_to IS 'Until when (UTC, exclusive); NULL while it is.';
COMMENT ON COLUMN booking_night_history.synced_at IS 'When staysync last wrote this row (UTC): when it opened, or when it was closed.';
COMMENT ON COLUMN booking_night_history.reconstructed_until IS 'Before this instant the row stands for a reconstructed version (the booking was first seen later); NULL when every instant of it was seen.';

-- The current books per property, night and currency, updated by the transaction that writes
-- a booking: what daily_kpis reads instead of adding up every night of every booking.
CREATE TABLE nightly_facts (
  property_id         text    NOT NULL,
  stay_date           date    NOT NULL,
  currency_code       text,
  rooms_sold          bigint  NOT NULL,
  complimentary_rooms bigint  NOT NULL,
  room_revenue_net    numeric NOT NULL,
  room_revenue_gross  numeric NOT NULL,
  synced_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT nightly_facts_key UNIQUE NULLS NOT DISTINCT (property_id, stay_date, currency_code)
);
COMMENT ON TABLE nightly_facts IS 'The nights on the books now, per property, night and currency: the sum of the open rows of booking_night_history, kept up to date in the transaction of every booking write. A night whose rooms fell to zero keeps its row of zeros (daily_kpis leaves it out).';
COMMENT ON COLUMN nightly_facts.property_id IS 'Provider property id.';
COMMENT ON COLUMN nightly_facts.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN nightly_facts.currency_code IS 'Currency of the amounts.';
COMMENT ON COLUMN nightly_facts.rooms_sold IS 'Room-nights on the books (bookings not cancelled).';
COMMENT ON COLUMN nightly_facts.complimentary_rooms IS 'Of those, nights at a zero rate.';
COMMENT ON COLUMN nightly_facts.room_revenue_net IS 'Their revenue before tax.';
COMMENT ON COLUMN nightly_facts.room_revenue_gross IS 'Their revenue after tax.';
COMMENT ON COLUMN nightly_facts.synced_at IS 'When staysync last wrote this row (UTC): the last booking write that changed the night.';

-- The books at each property's local day close, for the next 365 nights: written once a day per
-- property by the daemon (from booking_night_history, as of the close), so that pace over years
-- reads a small table, and what the mirror knew then stays as it was.
CREATE TABLE otb_snapshot_days (
  property_id   text        NOT NULL,
  snapshot_date date        NOT NULL,
  as_of         timestamptz NOT NULL,
  taken_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, snapshot_date)
);
COMMENT ON TABLE otb_snapshot_days IS 'The day closes whose books are recorded in otb_snapshot_nights, per property.';
COMMENT ON COLUMN otb_snapshot_days.property_id IS 'Provider property id.';
COMMENT ON COLUMN otb_snapshot_days.snapshot_date IS 'The property-local day whose close the snapshot records.';
COMMENT ON COLUMN otb_snapshot_days.as_of IS 'The instant of that close: the next local midnight (UTC).';
COMMENT ON COLUMN otb_snapshot_days.taken_at IS 'When the daemon wrote the snapshot (UTC).';

CREATE TABLE otb_snapshot_nights (
  property_id        text    NOT NULL,
  snapshot_date      date    NOT NULL,
  stay_date          date    NOT NULL,
  currency_code      text,
  room_nights        bigint  NOT NULL,
  room_revenue_net   numeric NOT NULL,
  room_revenue_gross numeric NOT NULL,
  reconstructed_room_nights bigint NOT NULL,
  CONSTRAINT otb_snapshot_nights_key UNIQUE NULLS NOT DISTINCT (property_id, stay_date, snapshot_date, currency_code),
  FOREIGN KEY (property_id, snapshot_date) REFERENCES otb_snapshot_days ON DELETE CASCADE
);
COMMENT ON TABLE otb_snapshot_nights IS 'The books at a day close: per property, snapshot day, night (the 365 after the close) and currency, the nights with room-nights on the books (a night absent from a snapshot day had none).';
COMMENT ON COLUMN otb_snapshot_nights.property_id IS 'Provider property id.';
COMMENT ON COLUMN otb_snapshot_nights.snapshot_date IS 'The property-local day whose close this records.';
COMMENT ON COLUMN otb_snapshot_nights.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN otb_snapshot_nights.currency_code IS 'Currency of the amounts.';
COMMENT ON COLUMN otb_snapshot_nights.room_nights IS 'Room-nights on the books at the close.';
COMMENT ON COLUMN otb_snapshot_nights.room_revenue_net IS 'Their revenue before tax.';
COMMENT ON COLUMN otb_snapshot_nights.room_revenue_gross IS 'Their revenue after tax.';
COMMENT ON COLUMN otb_snapshot_nights.reconstructed_room_nights IS 'Of room_nights, those of bookings whose version at the close is reconstructed (first seen later).';

-- The room stays of PMS reservations over time: status, assigned room, planned and actual
-- check-in and check-out, each version valid from the reservation's modifyDateTime (its fetch
-- time when the provider gave none that can be read) until the stay changed again.
CREATE TABLE pms_stay_versions (
  property_id         text        NOT NULL,
  number              text        NOT NULL,
  stay_key            text        NOT NULL,
  valid_from          timestamptz NOT NULL,
  valid_to            timestamptz,
  status              text,
  room_id             text,
  room_type_id        text,
  check_in_at         timestamp,
  check_out_at        timestamp,
  actual_check_in_at  timestamp,
  actual_check_out_at timestamp,
  synced_at           timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT pms_stay_versions_validity CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
CREATE INDEX pms_stay_versions_open ON pms_stay_versions (property_id, number) WHERE valid_to IS NULL;
CREATE INDEX pms_stay_versions_stay ON pms_stay_versions (property_id, number, stay_key, valid_from);
COMMENT ON TABLE pms_stay_versions IS 'Every version of each PMS room stay: a row when its status, room, room type or planned or actual check-in/check-out changed, valid until the next. Read it through reporting.pms_stay_history.';
COMMENT ON COLUMN pms_stay_versions.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_stay_versions.number IS 'Reservation number.';
COMMENT ON COLUMN pms_stay_versions.stay_key IS 'The room stay: its pmsRoomStayId, or #position when the provider gave none.';
COMMENT ON COLUMN pms_stay_versions.valid_from IS 'From when (UTC): the reservation''s modifyDateTime, or its fetch time when it had none that could be read.';
COMMENT ON COLUMN pms_stay_versions.valid_to IS 'Until when (UTC, exclusive); NULL for the current version (or the last one of a stay that left the reservation: then closed).';
COMMENT ON COLUMN pms_stay_versions.status IS 'Room stay status as sent (e.g. New, CheckedIn, CheckedOut, Cancelled).';
COMMENT ON COLUMN pms_stay_versions.room_id IS 'Room assigned (pms_rooms.room_id).';
COMMENT ON COLUMN pms_stay_versions.room_type_id IS 'Room type of the stay.';
COMMENT ON COLUMN pms_stay_versions.check_in_at IS 'Planned check-in (property-local).';
COMMENT ON COLUMN pms_stay_versions.check_out_at IS 'Planned check-out (property-local).';
COMMENT ON COLUMN pms_stay_versions.actual_check_in_at IS 'Actual check-in (property-local).';
COMMENT ON COLUMN pms_stay_versions.actual_check_out_at IS 'Actual check-out (property-local).';
COMMENT ON COLUMN pms_stay_versions.synced_at IS 'When staysync last wrote this row (UTC): when the version was added, or when the next one closed it.';
