-- The reporting layer: documented, stable views over the mirror, in a schema of their own
-- (database.reportingSchema, default "reporting"). src/store/reporting.ts runs this file in one
-- transaction with search_path = <reporting schema>, <mirror schema>, public, after dropping the
-- views and functions of the reporting schema, and only when this file (or either schema name)
-- changed since the last time. Not a migration: the migrator reads top-level files only.
--
-- Conventions of every view:
-- - money is per currency: a row never adds amounts of two currencies (currency_code is part of
--   every grouping);
-- - net = before tax (the provider's priceBeforeTax), gross = after tax (net plus taxes and fees);
-- - "today", booking dates and cancellation dates are the property's local dates (its time zone
--   from content), never the server's current_date;
-- - names come from content; an id that content does not know gives a NULL name, not a lost row.
--
-- Unqualified names: objects created here land in the reporting schema (first in search_path);
-- mirror tables are found in the mirror schema. No view may share a name with a mirror table.
--
-- Every view runs as the role that queries it (src/store/reporting.ts sets security_invoker on
-- each after this file), and every function here is SQL, which runs as its caller: a reader
-- scoped to properties sees, through the row-level security of the tables they read, its
-- properties' figures only (src/store/reader-policy.ts). No function here may be SECURITY
-- DEFINER, and a view may read no personal column (a reader without personal data could not
-- read it: test/integration/readers.test.ts reads every view as one).

-- A lookup in time_zone_names (the zones this server knows, which src/store/reporting.ts fills
-- from pg_timezone_names each time it applies the layer), not a try of `AT TIME ZONE` in an
-- exception block: an exception block starts a subtransaction, which no query in parallel mode
-- may do, in a worker or in the leader ("cannot start subtransactions during a parallel
-- operation"). A SQL body is also inlined where plpgsql is called row by row.
CREATE FUNCTION known_time_zone(zone text) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT t.name FROM time_zone_names t WHERE t.name = zone;
END;
COMMENT ON FUNCTION known_time_zone(text) IS 'The time zone if PostgreSQL knows it, else NULL: a zone the server cannot use must not make every report fail.';

-- ------------------------------------------------------------------ property_clock

CREATE VIEW property_clock AS
SELECT ids.property_id,
       p.name AS property_name,
       p.currency AS property_currency,
       COALESCE(z.zone, 'UTC') AS time_zone,
       z.zone IS NOT NULL AS time_zone_known,
       now() AT TIME ZONE COALESCE(z.zone, 'UTC') AS local_now,
       (now() AT TIME ZONE COALESCE(z.zone, 'UTC'))::date AS today
FROM (SELECT property_id FROM properties UNION SELECT property_id FROM sync_cursors) ids
LEFT JOIN properties p ON p.property_id = ids.property_id
CROSS JOIN LATERAL (SELECT known_time_zone(p.time_zone) AS zone) z;
COMMENT ON VIEW property_clock IS 'Each property (from content or a sync cursor) with its local time and local date: the "today" of every report. Use it instead of current_date, which is the server''s date.';
COMMENT ON COLUMN property_clock.property_id IS 'Provider property id.';
COMMENT ON COLUMN property_clock.property_name IS 'Property name (content); NULL until content is mirrored.';
COMMENT ON COLUMN property_clock.property_currency IS 'Currency of the property (content). Bookings carry their own currency_code, which may differ.';
COMMENT ON COLUMN property_clock.time_zone IS 'IANA time zone of the property (content); UTC when content has none or PostgreSQL does not know it (see time_zone_known).';
COMMENT ON COLUMN property_clock.time_zone_known IS 'False when time_zone is the UTC fallback: local dates of this property are then UTC dates.';
COMMENT ON COLUMN property_clock.local_now IS 'The property''s local wall-clock time now.';
COMMENT ON COLUMN property_clock.today IS 'The property''s local date now: "today" for reports of this property.';

-- ------------------------------------------------------------------ room_nights

CREATE VIEW room_nights AS
SELECT r.property_id,
       c.property_name,
       r.number,
       r.stay_index,
       r.position AS night_index,
       r.stay_date,
       b.status,
       b.status = 'Cancelled' AS is_cancelled,
       b.currency_code,
       s.room_type_id,
       rt.name AS room_type_name,
       COALESCE(r.rate_plan_id, s.rate_plan_id) AS rate_plan_id,
       rp.name AS rate_plan_name,
       COALESCE(b.source_code, b.source_type) AS channel_code,
       COALESCE(pc.name, pr.channel_name, b.source_code, b.source_type) AS channel_name,
       b.source_type,
       r.price_before_tax AS net_amount,
       r.gross_amount - r.price_before_tax AS tax_amount,
       r.gross_amount,
       r.price_before_tax = 0 AS is_complimentary,
       b.created_at AS booked_at,
       (b.created_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS booking_date,
       s.arrival_at::date AS arrival_date,
       s.departure_at::date AS departure_date,
       s.arrival_at::date - (b.created_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS lead_time_days,
       b.cancelled_at,
       (b.cancelled_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS cancelled_date
FROM booking_daily_rates r
JOIN bookings b ON b.property_id = r.property_id AND b.number = r.number
LEFT JOIN booking_room_stays s ON s.property_id = r.property_id AND s.number = r.number AND s.stay_index = r.stay_index
LEFT JOIN property_clock c ON c.property_id = r.property_id
LEFT JOIN room_types rt ON rt.property_id = s.property_id AND rt.room_type_id = s.room_type_id
LEFT JOIN rate_plans rp ON rp.property_id = r.property_id AND rp.rate_plan_id = COALESCE(r.rate_plan_id, s.rate_plan_id)
LEFT JOIN pos_codes pc ON pc.code = COALESCE(b.source_code, b.source_type)
LEFT JOIN pms_reservations pr ON pr.property_id = b.property_id AND pr.number = b.number;
-- A night's gross (net plus its share of the stay's taxes) is computed once, when the booking is
-- written (src/mapping/room-revenue.ts): booking_daily_rates.gross_amount.
COMMENT ON VIEW room_nights IS 'One row per night of each room stay of each mirrored booking (a booking of 2 rooms for 3 nights has 6 rows), cancelled bookings included (is_cancelled): sold room-nights are the rows with NOT is_cancelled. Amounts are in the booking''s currency; net = before tax, gross = after tax.';
COMMENT ON COLUMN room_nights.property_id IS 'Provider property id.';
COMMENT ON COLUMN room_nights.property_name IS 'Property name (content); NULL until content is mirrored.';
COMMENT ON COLUMN room_nights.number IS 'Booking number.';
COMMENT ON COLUMN room_nights.stay_index IS 'Room stay of the booking (0-based): one per booked room.';
COMMENT ON COLUMN room_nights.night_index IS 'Position of the night in the room stay (0-based).';
COMMENT ON COLUMN room_nights.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN room_nights.status IS 'Booking status: Active, Cancelled, Unconfirmed (or a newer provider value).';
COMMENT ON COLUMN room_nights.is_cancelled IS 'True when the booking is cancelled: the night is not sold.';
COMMENT ON COLUMN room_nights.currency_code IS 'ISO 4217 currency of every amount of the row (the booking''s currency). Never add amounts of different currencies.';
COMMENT ON COLUMN room_nights.room_type_id IS 'Room type id of the stay.';
COMMENT ON COLUMN room_nights.room_type_name IS 'Room type name from content; NULL when content does not know the id.';
COMMENT ON COLUMN room_nights.rate_plan_id IS 'Rate plan of the night (that of the stay when the night has none).';
COMMENT ON COLUMN room_nights.rate_plan_name IS 'Rate plan name from content; NULL when content does not know the id.';
COMMENT ON COLUMN room_nights.channel_code IS 'Point of sale: the channel code of the booking (e.g. BGC), or its point-of-sale type (BookingEngine, PMS, Other) when it has no code.';
COMMENT ON COLUMN room_nights.channel_name IS 'Name of the point of sale: from pos_codes (mirror schema), else the channel name of the PMS reservation, else the code.';
COMMENT ON COLUMN room_nights.source_type IS 'Point-of-sale type as sent: Channel, BookingEngine, PMS, Other.';
COMMENT ON COLUMN room_nights.net_amount IS 'Net room revenue of the night: its price before tax, exactly as sent (after discounts, without services).';
COMMENT ON COLUMN room_nights.tax_amount IS 'The night''s share of its room stay''s taxes and fees (stay price after tax minus before tax), in proportion to its net price (evenly when the stay is zero-rate), rounded cumulatively: the nights of a stay add up to the stay''s taxes exactly.';
COMMENT ON COLUMN room_nights.gross_amount IS 'Gross room revenue of the night: net_amount + tax_amount (after tax).';
COMMENT ON COLUMN room_nights.is_complimentary IS 'True for a zero-rate night (net_amount = 0).';
COMMENT ON COLUMN room_nights.booked_at IS 'When the booking was created (UTC).';
COMMENT ON COLUMN room_nights.booking_date IS 'Property-local date the booking was created.';
COMMENT ON COLUMN room_nights.arrival_date IS 'Arrival date of the room stay (property-local).';
COMMENT ON COLUMN room_nights.departure_date IS 'Departure date of the room stay (property-local).';
COMMENT ON COLUMN room_nights.lead_time_days IS 'Days from booking_date to arrival_date.';
COMMENT ON COLUMN room_nights.cancelled_at IS 'When the booking was cancelled (UTC); NULL when it is not.';
COMMENT ON COLUMN room_nights.cancelled_date IS 'Property-local date of the cancellation.';

-- ------------------------------------------------------------------ booking_facts

CREATE VIEW booking_facts AS
SELECT b.property_id,
       c.property_name,
       b.number,
       b.status,
       b.status = 'Cancelled' AS is_cancelled,
       b.currency_code,
       COALESCE(b.source_code, b.source_type) AS channel_code,
       COALESCE(pc.name, pr.channel_name, b.source_code, b.source_type) AS channel_name,
       b.source_type,
       b.created_at AS booked_at,
       (b.created_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS booking_date,
       b.arrival_at::date AS arrival_date,
       b.departure_at::date AS departure_date,
       b.arrival_at::date - (b.created_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS lead_time_days,
       b.room_stay_count AS rooms,
       COALESCE(cur.room_nights, 0) AS room_nights,
       COALESCE(cur.room_revenue_net, 0) AS room_revenue_net,
       COALESCE(cur.room_revenue_gross, 0) AS room_revenue_gross,
       b.price_before_tax AS total_net,
       b.price_after_tax AS total_gross,
       b.cancelled_at,
       (b.cancelled_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS cancelled_date,
       b.arrival_at::date - (b.cancelled_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS days_cancelled_before_arrival,
       b.cancellation_penalty,
       -- Its life, from booking_versions: the version it was booked as, and how often it changed.
       seen.first_seen_at,
       first.reconstructed AS first_version_reconstructed,
       cur.version AS versions,
       cur.version - 1 AS times_modified,
       first.room_type_ids AS booked_room_type_ids,
       cur.room_type_ids,
       first.room_type_ids IS DISTINCT FROM cur.room_type_ids AS room_type_changed,
       first.room_nights AS booked_room_nights,
       first.room_revenue_net AS booked_room_revenue_net,
       first.room_revenue_gross AS booked_room_revenue_gross
FROM bookings b
LEFT JOIN property_clock c ON c.property_id = b.property_id
LEFT JOIN pos_codes pc ON pc.code = COALESCE(b.source_code, b.source_type)
LEFT JOIN pms_reservations pr ON pr.property_id = b.property_id AND pr.number = b.number
-- The current version holds the room figures (the sums of its nights), written with the booking.
LEFT JOIN booking_versions cur ON cur.property_id = b.property_id AND cur.number = b.number AND cur.valid_to IS NULL
LEFT JOIN booking_versions first ON first.property_id = b.property_id AND first.number = b.number AND first.version = 1
LEFT JOIN LATERAL (
  SELECT min(v.fetched_at) AS first_seen_at FROM booking_versions v WHERE v.property_id = b.property_id AND v.number = b.number
) seen ON true;
COMMENT ON VIEW booking_facts IS 'One row per mirrored booking with what reports group and count it by: channel, property-local booking and cancellation dates, lead time, room-nights and room revenue (the sum of its room_nights rows), booking totals. Amounts are in the booking''s currency; net = before tax, gross = after tax.';
COMMENT ON COLUMN booking_facts.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_facts.property_name IS 'Property name (content); NULL until content is mirrored.';
COMMENT ON COLUMN booking_facts.number IS 'Booking number.';
COMMENT ON COLUMN booking_facts.status IS 'Booking status: Active, Cancelled, Unconfirmed (or a newer provider value).';
COMMENT ON COLUMN booking_facts.is_cancelled IS 'True when the booking is cancelled.';
COMMENT ON COLUMN booking_facts.currency_code IS 'ISO 4217 currency of every amount of the row. Never add amounts of different currencies.';
COMMENT ON COLUMN booking_facts.channel_code IS 'Point of sale: channel code, or point-of-sale type when the booking has no code.';
COMMENT ON COLUMN booking_facts.channel_name IS 'Name of the point of sale: from pos_codes, else the PMS reservation''s channel name, else the code.';
COMMENT ON COLUMN booking_facts.source_type IS 'Point-of-sale type as sent: Channel, BookingEngine, PMS, Other.';
COMMENT ON COLUMN booking_facts.booked_at IS 'When the booking was created (UTC).';
COMMENT ON COLUMN booking_facts.booking_date IS 'Property-local date the booking was created.';
COMMENT ON COLUMN booking_facts.arrival_date IS 'Earliest arrival date of its room stays (property-local).';
COMMENT ON COLUMN booking_facts.departure_date IS 'Latest departure date of its room stays (property-local).';
COMMENT ON COLUMN booking_facts.lead_time_days IS 'Days from booking_date to arrival_date.';
COMMENT ON COLUMN booking_facts.rooms IS 'Number of room stays (rooms booked).';
COMMENT ON COLUMN booking_facts.room_nights IS 'Room-nights of the booking now (its rows in room_nights).';
COMMENT ON COLUMN booking_facts.room_revenue_net IS 'Room revenue before tax: the sum of its nightly net amounts.';
COMMENT ON COLUMN booking_facts.room_revenue_gross IS 'Room revenue after tax: the sum of its nightly gross amounts.';
COMMENT ON COLUMN booking_facts.total_net IS 'Booking total before tax as sent: rooms, services and early/late charges, after discounts.';
COMMENT ON COLUMN booking_facts.total_gross IS 'Booking total after tax as sent.';
COMMENT ON COLUMN booking_facts.cancelled_at IS 'When the booking was cancelled (UTC); NULL when it is not.';
COMMENT ON COLUMN booking_facts.cancelled_date IS 'Property-local date of the cancellation.';
COMMENT ON COLUMN booking_facts.days_cancelled_before_arrival IS 'Days from cancelled_date to arrival_date.';
COMMENT ON COLUMN booking_facts.cancellation_penalty IS 'Cancellation penalty as sent, in the booking''s currency.';
COMMENT ON COLUMN booking_facts.first_seen_at IS 'When the mirror first fetched the booking (UTC).';
COMMENT ON COLUMN booking_facts.first_version_reconstructed IS 'True when the booking was first seen after it changed: its version at creation is reconstructed from the first version fetched (booking_history.reconstructed), so the booked_* columns are that version''s.';
COMMENT ON COLUMN booking_facts.versions IS 'Versions of the booking in booking_history (reconstructed ones included).';
COMMENT ON COLUMN booking_facts.times_modified IS 'How often the booking changed after it was made, as far as the mirror saw (versions - 1).';
COMMENT ON COLUMN booking_facts.booked_room_type_ids IS 'Room type of each room stay when the booking was made.';
COMMENT ON COLUMN booking_facts.room_type_ids IS 'Room type of each room stay now.';
COMMENT ON COLUMN booking_facts.room_type_changed IS 'True when the room types differ from those booked: an upgrade, a downgrade or a move to another type.';
COMMENT ON COLUMN booking_facts.booked_room_nights IS 'Room-nights when the booking was made.';
COMMENT ON COLUMN booking_facts.booked_room_revenue_net IS 'Room revenue before tax when the booking was made.';
COMMENT ON COLUMN booking_facts.booked_room_revenue_gross IS 'Room revenue after tax when the booking was made.';

-- ------------------------------------------------------------------ daily_kpis

CREATE VIEW daily_kpis AS
WITH days AS (
  -- The nights on the books, as the daemon keeps them with every booking it writes.
  SELECT f.property_id, f.stay_date, f.currency_code, f.rooms_sold, f.complimentary_rooms,
         f.room_revenue_net, f.room_revenue_gross
  FROM nightly_facts f
  WHERE f.rooms_sold > 0
  UNION ALL
  -- Nights the PMS statistics cover and no booking occupies: a row of zeros, so that averages
  -- over a period count the empty nights too.
  SELECT d.property_id, d.stay_date, COALESCE(d.currency_code, p.currency), 0, 0, 0, 0
  FROM daily_occupancy d
  LEFT JOIN properties p ON p.property_id = d.property_id
  WHERE NOT EXISTS (
    SELECT 1 FROM nightly_facts f
    WHERE f.property_id = d.property_id AND f.stay_date = d.stay_date AND f.rooms_sold > 0)
), counted AS (
  SELECT days.*,
         sum(days.rooms_sold) OVER (PARTITION BY days.property_id, days.stay_date) AS property_rooms_sold
  FROM days
)
SELECT x.property_id,
       c.property_name,
       x.stay_date,
       x.stay_date - c.today AS days_from_today,
       x.currency_code,
       x.rooms_sold,
       x.complimentary_rooms,
       x.room_revenue_net,
       x.room_revenue_gross,
       round(x.room_revenue_net / NULLIF(x.rooms_sold - x.complimentary_rooms, 0), 2) AS adr_net,
       round(x.room_revenue_gross / NULLIF(x.rooms_sold - x.complimentary_rooms, 0), 2) AS adr_gross,
       x.property_rooms_sold,
       a.rooms_available,
       a.source AS rooms_available_source,
       round(x.property_rooms_sold / NULLIF(a.rooms_available, 0)::numeric, 4) AS occupancy,
       round(x.room_revenue_net / NULLIF(a.rooms_available, 0), 2) AS revpar_net,
       round(x.room_revenue_gross / NULLIF(a.rooms_available, 0), 2) AS revpar_gross
FROM counted x
LEFT JOIN property_clock c ON c.property_id = x.property_id
LEFT JOIN daily_occupancy d ON d.property_id = x.property_id AND d.stay_date = x.stay_date
-- Rooms listed, counted once a property (not again for each of its nights); a report of one
-- property counts that property's rooms only (its property_id reaches the subquery).
LEFT JOIN (
  SELECT pr.property_id, count(*) AS rooms FROM pms_rooms pr WHERE pr.removed_at IS NULL GROUP BY pr.property_id
) listed ON listed.property_id = x.property_id
-- The statistics per row, by index: a report of one property reads that property's only.
LEFT JOIN LATERAL (
  SELECT d2.property_room_count FROM daily_occupancy d2 WHERE d2.property_id = x.property_id
  ORDER BY d2.refreshed_at DESC, d2.stay_date DESC LIMIT 1
) profile ON true
CROSS JOIN LATERAL (
  SELECT CASE WHEN d.property_id IS NOT NULL THEN d.property_room_count - d.closed_room_count
              WHEN listed.rooms > 0 THEN listed.rooms
              ELSE profile.property_room_count END AS rooms_available,
         CASE WHEN d.property_id IS NOT NULL THEN 'daily_occupancy'
              WHEN listed.rooms > 0 THEN 'pms_rooms'
              WHEN profile.property_room_count IS NOT NULL THEN 'property_room_count' END AS source
) a;
COMMENT ON VIEW daily_kpis IS 'Daily KPIs per property, night and currency from the sold room-nights (the nights of room_nights whose booking is not cancelled, as the daemon adds them up in nightly_facts when it writes a booking): rooms sold, room revenue net (before tax) and gross (after tax), ADR, RevPAR, occupancy. A property with bookings in two currencies has two rows for a night; money is never added across them. Nights the PMS statistics cover without any booking have a row of zeros; other nights without bookings have no row.';
COMMENT ON COLUMN daily_kpis.property_id IS 'Provider property id.';
COMMENT ON COLUMN daily_kpis.property_name IS 'Property name (content).';
COMMENT ON COLUMN daily_kpis.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN daily_kpis.days_from_today IS 'stay_date minus the property''s local today (property_clock): 0 tonight, 1 tomorrow, -1 last night.';
COMMENT ON COLUMN daily_kpis.currency_code IS 'ISO 4217 currency of the amounts of this row.';
COMMENT ON COLUMN daily_kpis.rooms_sold IS 'Room-nights sold in this currency (bookings not cancelled), zero-rate rooms included.';
COMMENT ON COLUMN daily_kpis.complimentary_rooms IS 'Of rooms_sold, those at a zero rate.';
COMMENT ON COLUMN daily_kpis.room_revenue_net IS 'Room revenue before tax (sum of room_nights.net_amount).';
COMMENT ON COLUMN daily_kpis.room_revenue_gross IS 'Room revenue after tax (sum of room_nights.gross_amount).';
COMMENT ON COLUMN daily_kpis.adr_net IS 'Average daily rate before tax: room_revenue_net / paid rooms (rooms_sold - complimentary_rooms), 2 decimals; NULL without paid rooms.';
COMMENT ON COLUMN daily_kpis.adr_gross IS 'Average daily rate after tax: room_revenue_gross / paid rooms, 2 decimals.';
COMMENT ON COLUMN daily_kpis.property_rooms_sold IS 'Room-nights sold by the property that night in every currency (a count, so it may be added across currencies).';
COMMENT ON COLUMN daily_kpis.rooms_available IS 'Rooms available that night: rooms minus rooms out of order from the PMS statistics (daily_occupancy) when mirrored for the date, else the rooms of the PMS rooms list (pms_rooms), else the room count of the latest statistics; NULL when none is mirrored.';
COMMENT ON COLUMN daily_kpis.rooms_available_source IS 'Where rooms_available comes from: daily_occupancy, pms_rooms or property_room_count; NULL when unknown.';
COMMENT ON COLUMN daily_kpis.occupancy IS 'property_rooms_sold / rooms_available, 0 to 1, 4 decimals (zero-rate rooms count as occupied, as in the PMS statistics).';
COMMENT ON COLUMN daily_kpis.revpar_net IS 'Revenue per available room before tax: room_revenue_net / rooms_available, 2 decimals.';
COMMENT ON COLUMN daily_kpis.revpar_gross IS 'Revenue per available room after tax: room_revenue_gross / rooms_available, 2 decimals.';

-- ------------------------------------------------------------------ pickup

CREATE VIEW pickup AS
WITH moves AS (
  -- A night joins the books when its row opens and leaves when it closes: pickup is the sum of
  -- both, so a booking changed after it was made counts each change on the day it was made.
  SELECT h.property_id, h.currency_code, h.stay_date, h.valid_from AS at, 1 AS rooms, h.net_amount AS net, h.gross_amount AS gross
  FROM booking_night_history h
  UNION ALL
  SELECT h.property_id, h.currency_code, h.stay_date, h.valid_to, -1, -h.net_amount, -h.gross_amount
  FROM booking_night_history h
  WHERE h.valid_to IS NOT NULL
), dated AS (
  SELECT m.*, (m.at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS pickup_date
  FROM moves m
  LEFT JOIN property_clock c ON c.property_id = m.property_id
)
SELECT d.property_id,
       d.currency_code,
       d.pickup_date,
       d.stay_date,
       d.stay_date - d.pickup_date AS days_before_stay,
       sum(d.rooms) AS room_nights,
       COALESCE(sum(d.net), 0) AS room_revenue_net,
       COALESCE(sum(d.gross), 0) AS room_revenue_gross
FROM dated d
GROUP BY d.property_id, d.currency_code, d.pickup_date, d.stay_date
HAVING sum(d.rooms) <> 0 OR COALESCE(sum(d.net), 0) <> 0 OR COALESCE(sum(d.gross), 0) <> 0;
COMMENT ON VIEW pickup IS 'Pickup: how the books of each night changed on each day, per property, currency, property-local day of the change and night. New bookings add their nights; cancellations, shortened or moved stays take them away; a re-price moves the revenue. The sum over the days up to D of a night''s pickup is that night on the books at the close of D (on_the_books), so pickup between two dates is the difference of the books at their closes. Reconstructed versions count on the day the booking was made.';
COMMENT ON COLUMN pickup.property_id IS 'Provider property id.';
COMMENT ON COLUMN pickup.currency_code IS 'ISO 4217 currency of the amounts of this row.';
COMMENT ON COLUMN pickup.pickup_date IS 'Property-local day the books changed (by the provider''s modification times).';
COMMENT ON COLUMN pickup.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN pickup.days_before_stay IS 'stay_date minus pickup_date.';
COMMENT ON COLUMN pickup.room_nights IS 'Room-nights that night gained that day (negative: lost to cancellations and changes).';
COMMENT ON COLUMN pickup.room_revenue_net IS 'Room revenue before tax gained that day (negative: lost).';
COMMENT ON COLUMN pickup.room_revenue_gross IS 'Room revenue after tax gained that day (negative: lost).';

-- ------------------------------------------------------------------ channel_performance

CREATE VIEW channel_performance AS
SELECT f.property_id,
       f.currency_code,
       f.channel_code,
       -- One name per code: a name other than the code itself when any booking has one (those
       -- without a PMS reservation fall back to the code).
       COALESCE(max(f.channel_name) FILTER (WHERE f.channel_name IS DISTINCT FROM f.channel_code), f.channel_code) AS channel_name,
       f.booking_date,
       count(*) AS bookings,
       count(*) FILTER (WHERE f.is_cancelled) AS cancelled_bookings,
       round(count(*) FILTER (WHERE f.is_cancelled)::numeric / count(*), 4) AS cancellation_rate,
       COALESCE(sum(f.room_nights) FILTER (WHERE NOT f.is_cancelled), 0) AS room_nights,
       COALESCE(sum(f.room_nights) FILTER (WHERE f.is_cancelled), 0) AS cancelled_room_nights,
       COALESCE(sum(f.room_revenue_net) FILTER (WHERE NOT f.is_cancelled), 0) AS room_revenue_net,
       COALESCE(sum(f.room_revenue_gross) FILTER (WHERE NOT f.is_cancelled), 0) AS room_revenue_gross,
       COALESCE(sum(f.room_revenue_net) FILTER (WHERE f.is_cancelled), 0) AS cancelled_room_revenue_net,
       COALESCE(sum(f.room_revenue_gross) FILTER (WHERE f.is_cancelled), 0) AS cancelled_room_revenue_gross,
       COALESCE(sum(f.cancellation_penalty) FILTER (WHERE f.is_cancelled), 0) AS cancellation_penalties,
       sum(f.lead_time_days) AS lead_time_days_sum,
       round(avg(f.lead_time_days), 2) AS avg_lead_time_days,
       sum(f.days_cancelled_before_arrival) FILTER (WHERE f.is_cancelled) AS days_cancelled_before_arrival_sum,
       round(avg(f.days_cancelled_before_arrival) FILTER (WHERE f.is_cancelled), 2) AS avg_days_cancelled_before_arrival,
       -- The agent commission of the PMS reservation of each booking not cancelled, when it is
       -- in the booking's currency (a commission in another currency is not taken off).
       COALESCE(sum(k.commission) FILTER (WHERE NOT f.is_cancelled), 0) AS commission,
       COALESCE(sum(k.commission) FILTER (WHERE NOT f.is_cancelled AND k.source = 'Ota'), 0) AS commission_by_ota,
       COALESCE(sum(k.commission) FILTER (WHERE NOT f.is_cancelled AND k.source = 'Pms'), 0) AS commission_by_pms,
       count(*) FILTER (WHERE NOT f.is_cancelled AND k.commission IS NOT NULL) AS bookings_with_commission,
       count(*) FILTER (WHERE NOT f.is_cancelled AND k.read) AS bookings_with_pms_reservation,
       COALESCE(sum(f.room_revenue_net) FILTER (WHERE NOT f.is_cancelled), 0)
         - COALESCE(sum(k.commission) FILTER (WHERE NOT f.is_cancelled), 0) AS room_revenue_net_of_commission
FROM booking_facts f
LEFT JOIN pms_reservations pr ON pr.property_id = f.property_id AND pr.number = f.number
CROSS JOIN LATERAL (
  SELECT pr.number IS NOT NULL AS read,
         CASE WHEN pr.agent_commission_currency IS NULL OR pr.agent_commission_currency = f.currency_code THEN pr.agent_commission_amount END AS commission,
         pr.agent_commission_source AS source
) k
GROUP BY f.property_id, f.currency_code, f.channel_code, f.booking_date;
COMMENT ON VIEW channel_performance IS 'Bookings, cancellations, room-nights, room revenue, agent commission and lead time per property, currency, channel and property-local booking date. Sum the *_sum and count columns over a period and divide for period averages (averages of averages are wrong). The commission is the PMS reservation''s (agentCommission): a booking whose PMS reservation is not mirrored (pms.enabled off, not read yet) has none; compare bookings_with_pms_reservation with bookings - cancelled_bookings.';
COMMENT ON COLUMN channel_performance.commission IS 'Agent commission of the bookings not cancelled (pms_reservations.agent_commission_amount, the PMS reservation of the same number), in currency_code; a commission in another currency is left out.';
COMMENT ON COLUMN channel_performance.commission_by_ota IS 'Of commission, what the OTA calculated (agent_commission_source Ota).';
COMMENT ON COLUMN channel_performance.commission_by_pms IS 'Of commission, what the PMS calculated from the agent company''s settings (agent_commission_source Pms).';
COMMENT ON COLUMN channel_performance.bookings_with_commission IS 'Bookings not cancelled whose PMS reservation gives a commission in currency_code.';
COMMENT ON COLUMN channel_performance.bookings_with_pms_reservation IS 'Bookings not cancelled whose PMS reservation is mirrored: the commission is known for these only.';
COMMENT ON COLUMN channel_performance.room_revenue_net_of_commission IS 'room_revenue_net - commission: what the hotel keeps of the room revenue before tax.';
COMMENT ON COLUMN channel_performance.property_id IS 'Provider property id.';
COMMENT ON COLUMN channel_performance.currency_code IS 'ISO 4217 currency of the amounts of this row.';
COMMENT ON COLUMN channel_performance.channel_code IS 'Point of sale: channel code, or point-of-sale type for bookings without a code.';
COMMENT ON COLUMN channel_performance.channel_name IS 'Name of the point of sale (pos_codes, else a PMS reservation''s channel name for the code, else the code).';
COMMENT ON COLUMN channel_performance.booking_date IS 'Property-local date the bookings were made.';
COMMENT ON COLUMN channel_performance.bookings IS 'Bookings made that day through the channel, cancelled ones included.';
COMMENT ON COLUMN channel_performance.cancelled_bookings IS 'Of those, the bookings cancelled since.';
COMMENT ON COLUMN channel_performance.cancellation_rate IS 'cancelled_bookings / bookings, 4 decimals.';
COMMENT ON COLUMN channel_performance.room_nights IS 'Room-nights of the bookings not cancelled.';
COMMENT ON COLUMN channel_performance.cancelled_room_nights IS 'Room-nights of the cancelled bookings.';
COMMENT ON COLUMN channel_performance.room_revenue_net IS 'Room revenue before tax of the bookings not cancelled.';
COMMENT ON COLUMN channel_performance.room_revenue_gross IS 'Room revenue after tax of the bookings not cancelled.';
COMMENT ON COLUMN channel_performance.cancelled_room_revenue_net IS 'Room revenue before tax of the cancelled bookings (lost).';
COMMENT ON COLUMN channel_performance.cancelled_room_revenue_gross IS 'Room revenue after tax of the cancelled bookings (lost).';
COMMENT ON COLUMN channel_performance.cancellation_penalties IS 'Cancellation penalties of the cancelled bookings, as sent.';
COMMENT ON COLUMN channel_performance.lead_time_days_sum IS 'Sum of the lead times (days from booking to arrival) of all the bookings, for period averages.';
COMMENT ON COLUMN channel_performance.avg_lead_time_days IS 'Average lead time of all the bookings in days, 2 decimals.';
COMMENT ON COLUMN channel_performance.days_cancelled_before_arrival_sum IS 'Sum over the cancelled bookings of the days between cancellation and arrival, for period averages.';
COMMENT ON COLUMN channel_performance.avg_days_cancelled_before_arrival IS 'Average days between cancellation and arrival of the cancelled bookings, 2 decimals.';

-- ------------------------------------------------------------------ mirror_completeness

CREATE VIEW mirror_completeness AS
WITH listed AS (
  SELECT s.property_id,
         count(*) AS bookings_listed,
         count(*) FILTER (WHERE b.number IS NULL) AS details_missing,
         count(*) FILTER (WHERE b.number IS NULL AND q.state IN ('not_found', 'quarantined')) AS details_missing_parked,
         count(*) FILTER (WHERE b.modified_at < s.modified_at) AS details_outdated,
         max(s.listed_at) AS last_listed_at
  FROM booking_summaries s
  LEFT JOIN bookings b ON b.property_id = s.property_id AND b.number = s.number
  LEFT JOIN booking_detail_queue q ON q.property_id = s.property_id AND q.number = s.number
  GROUP BY s.property_id
), fetched AS (
  SELECT property_id, count(*) AS bookings_fetched, max(fetched_at) AS last_fetched_at
  FROM bookings GROUP BY property_id
), queue AS (
  SELECT property_id,
         count(*) FILTER (WHERE state = 'pending') AS fetches_pending,
         count(*) FILTER (WHERE state <> 'pending') AS fetches_parked
  FROM booking_detail_queue GROUP BY property_id
), ids AS (
  SELECT property_id FROM property_clock
  UNION SELECT property_id FROM listed
  UNION SELECT property_id FROM fetched
)
SELECT ids.property_id,
       c.property_name,
       CASE WHEN cur.property_id IS NULL AND COALESCE(l.bookings_listed, 0) = 0 THEN 'not started'
            WHEN NOT COALESCE(cur.caught_up, false) THEN 'listing'
            WHEN COALESCE(l.details_missing, 0) = 0 THEN 'complete'
            WHEN l.details_missing > l.details_missing_parked THEN 'fetching details'
            ELSE 'incomplete' END AS phase,
       COALESCE(cur.caught_up, false) AND COALESCE(l.details_missing, 0) = 0 AS complete,
       cur.state AS listing_state,
       COALESCE(cur.caught_up, false) AS listing_caught_up,
       cur.position AS listed_through,
       cur.last_poll_at,
       COALESCE(l.bookings_listed, 0) AS bookings_listed,
       COALESCE(f.bookings_fetched, 0) AS bookings_fetched,
       COALESCE(l.details_missing, 0) AS details_missing,
       COALESCE(l.details_missing_parked, 0) AS details_missing_parked,
       COALESCE(l.details_outdated, 0) AS details_outdated,
       COALESCE(q.fetches_pending, 0) AS fetches_pending,
       COALESCE(q.fetches_parked, 0) AS fetches_parked,
       CASE WHEN COALESCE(l.bookings_listed, 0) = 0 THEN NULL
            ELSE round((l.bookings_listed - l.details_missing)::numeric / l.bookings_listed, 4) END AS fetched_share,
       l.last_listed_at,
       f.last_fetched_at,
       EXISTS (SELECT 1 FROM properties p WHERE p.property_id = ids.property_id) AS content_mirrored,
       COALESCE(c.time_zone_known, false) AS time_zone_known
FROM ids
LEFT JOIN property_clock c ON c.property_id = ids.property_id
LEFT JOIN sync_cursors cur ON cur.property_id = ids.property_id AND cur.stream = 'booking_summaries'
LEFT JOIN listed l ON l.property_id = ids.property_id
LEFT JOIN fetched f ON f.property_id = ids.property_id
LEFT JOIN queue q ON q.property_id = ids.property_id;
COMMENT ON VIEW mirror_completeness IS 'How complete the booking mirror is per property, so that a report can tell "no bookings" from "not fetched yet": the booking list read to its end (listing_caught_up), and of the bookings it listed, how many have their details (the rows every other view is built from). Until complete is true, figures of the property are partial.';
COMMENT ON COLUMN mirror_completeness.property_id IS 'Provider property id.';
COMMENT ON COLUMN mirror_completeness.property_name IS 'Property name (content).';
COMMENT ON COLUMN mirror_completeness.phase IS 'not started (nothing listed yet), listing (reading the booking list), fetching details (listed bookings wait for their details), incomplete (listed bookings whose fetch failed and is parked: see booking_detail_queue and quarantine), complete.';
COMMENT ON COLUMN mirror_completeness.complete IS 'True when the booking list was read to its end and every booking it listed has its details: the reports of the property are complete (as of listed_through).';
COMMENT ON COLUMN mirror_completeness.listing_state IS 'State of the booking list cursor: active, retrying, failing, needs_recover (its continueToken is lost: staysync status gives the command that recovers it), not_granted (sync_cursors.state); NULL before the first page.';
COMMENT ON COLUMN mirror_completeness.listing_caught_up IS 'True when the last page of the booking list said there was no more data.';
COMMENT ON COLUMN mirror_completeness.listed_through IS 'Latest booking modification time the booking list has been read to (UTC).';
COMMENT ON COLUMN mirror_completeness.last_poll_at IS 'When the booking list was last asked (UTC).';
COMMENT ON COLUMN mirror_completeness.bookings_listed IS 'Bookings the booking list has listed (booking_summaries).';
COMMENT ON COLUMN mirror_completeness.bookings_fetched IS 'Bookings whose details are mirrored (bookings).';
COMMENT ON COLUMN mirror_completeness.details_missing IS 'Listed bookings without details yet: they are in no report.';
COMMENT ON COLUMN mirror_completeness.details_missing_parked IS 'Of details_missing, those whose fetch failed (404 or invalid payload) and waits for a retry.';
COMMENT ON COLUMN mirror_completeness.details_outdated IS 'Bookings whose mirrored details are older than their latest listing (a newer version is to be fetched).';
COMMENT ON COLUMN mirror_completeness.fetches_pending IS 'Detail fetches waiting in the queue (new bookings and changed ones).';
COMMENT ON COLUMN mirror_completeness.fetches_parked IS 'Detail fetches parked after repeated failures (not_found, quarantined).';
COMMENT ON COLUMN mirror_completeness.fetched_share IS 'Share of the listed bookings whose details are mirrored, 0 to 1, 4 decimals; NULL when none is listed.';
COMMENT ON COLUMN mirror_completeness.last_listed_at IS 'When the booking list last listed a booking of the property (UTC).';
COMMENT ON COLUMN mirror_completeness.last_fetched_at IS 'When details of a booking of the property were last fetched.';
COMMENT ON COLUMN mirror_completeness.content_mirrored IS 'True when the property''s content is mirrored (names, time zone).';
COMMENT ON COLUMN mirror_completeness.time_zone_known IS 'True when the property''s time zone is known; otherwise its local dates are UTC dates.';

-- ------------------------------------------------------------------ freshness

CREATE VIEW freshness AS
WITH lags AS (
  SELECT property_id,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM written_at - modified_at)) AS p50,
         percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM written_at - modified_at)) AS p95,
         count(*) AS changes
  FROM change_lags
  WHERE written_at > now() - interval '1 hour'
  GROUP BY property_id
)
SELECT ids.property_id,
       c.property_name,
       cur.last_poll_at,
       n.newest_change_at,
       -- The list is complete up to its last poll once caught up (while it is still being read,
       -- up to the modification it is read through); a change still waiting for its details
       -- holds that back to its own modification time.
       CASE WHEN (CASE WHEN cur.caught_up THEN cur.last_poll_at ELSE cur.position END) IS NULL THEN NULL
            ELSE LEAST(CASE WHEN cur.caught_up THEN cur.last_poll_at ELSE cur.position END,
                       (SELECT min(COALESCE(q.wanted_modified_at, q.enqueued_at)) FROM booking_detail_queue q
                         WHERE q.property_id = ids.property_id AND q.state = 'pending')) END AS data_as_of,
       round(l.p50::numeric, 3) AS lag_p50_seconds,
       round(l.p95::numeric, 3) AS lag_p95_seconds,
       COALESCE(l.changes, 0) AS changes_last_hour
FROM (SELECT property_id FROM property_clock) ids
LEFT JOIN property_clock c ON c.property_id = ids.property_id
LEFT JOIN sync_cursors cur ON cur.property_id = ids.property_id AND cur.stream = 'booking_summaries'
CROSS JOIN LATERAL (SELECT max(b.modified_at) AS newest_change_at FROM bookings b WHERE b.property_id = ids.property_id) n
LEFT JOIN lags l ON l.property_id = ids.property_id;
COMMENT ON VIEW freshness IS 'How fresh the mirror is per property, for a dashboard''s "data as of": when the booking list was last asked, the newest change mirrored, the moment up to which every change is in bookings, and how long fresh changes took from the provider to the mirror over the last hour.';
COMMENT ON COLUMN freshness.property_id IS 'Provider property id.';
COMMENT ON COLUMN freshness.property_name IS 'Property name (content).';
COMMENT ON COLUMN freshness.last_poll_at IS 'When the booking list was last asked successfully (UTC); NULL before its first page.';
COMMENT ON COLUMN freshness.newest_change_at IS 'Newest modification time among the mirrored bookings (UTC, whole seconds as the provider sends them).';
COMMENT ON COLUMN freshness.data_as_of IS 'Every booking change made before this moment is in the mirror (UTC): the last poll of the caught-up booking list (while the list is still being read, the modification time it is read through), or earlier while a change waits for its details (the oldest such change). Fetches parked after repeated failures do not hold it back (see mirror_completeness). NULL before the first page.';
COMMENT ON COLUMN freshness.lag_p50_seconds IS 'Median lag of the fresh changes written in the last hour: from the modification time the booking list announced (whole seconds, so up to 1 s more than the true lag) to the details written in the mirror. NULL when there was none.';
COMMENT ON COLUMN freshness.lag_p95_seconds IS '95th percentile of the same lags. NULL when there was none.';
COMMENT ON COLUMN freshness.changes_last_hour IS 'Fresh changes written in the last hour: booking versions found by polling the caught-up list or announced by a change event (backfill fetches are not counted).';

-- ------------------------------------------------------------------ booking_history

CREATE VIEW booking_history AS
SELECT v.property_id,
       v.number,
       v.version,
       v.valid_from,
       v.valid_to,
       v.valid_to IS NULL AS is_current,
       v.reconstructed,
       v.modified_at,
       v.fetched_at,
       v.status,
       v.status = 'Cancelled' AS is_cancelled,
       v.created_at AS booked_at,
       v.cancelled_at,
       v.arrival_date,
       v.departure_date,
       v.rooms,
       v.room_nights,
       v.room_type_ids,
       v.currency_code,
       v.room_revenue_net,
       v.room_revenue_gross,
       v.total_net,
       v.total_gross,
       v.changes,
       array_to_string(v.changes, ', ') AS changes_text
FROM booking_versions v;
COMMENT ON VIEW booking_history IS 'Every version of each booking (type 2 history, dbt snapshot column names): valid from the provider''s modification time of the version until the next version''s (valid_to NULL for the current one), with what changed. A booking first seen after it changed starts with reconstructed versions (from its creation, as the first fetched version says). Amounts are in the version''s currency; net = before tax, gross = after tax.';
COMMENT ON COLUMN booking_history.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_history.number IS 'Booking number.';
COMMENT ON COLUMN booking_history.version IS 'Position of the version in the booking''s history, from 1.';
COMMENT ON COLUMN booking_history.valid_from IS 'From when this version was the booking (UTC): the provider''s modification time (a reconstructed version: the creation, or the cancellation, it stands for).';
COMMENT ON COLUMN booking_history.valid_to IS 'Until when (UTC, exclusive): the next version''s valid_from; NULL for the current version. Equal to valid_from for a version replaced within its own second.';
COMMENT ON COLUMN booking_history.is_current IS 'True for the booking as it is now (valid_to IS NULL).';
COMMENT ON COLUMN booking_history.reconstructed IS 'True when the mirror did not fetch this version: the booking was first seen later, and this version is derived from the first one fetched.';
COMMENT ON COLUMN booking_history.modified_at IS 'The provider''s modifiedDateTime of the payload the version comes from.';
COMMENT ON COLUMN booking_history.fetched_at IS 'When the mirror fetched it (UTC); NULL for a reconstructed version.';
COMMENT ON COLUMN booking_history.status IS 'Booking status in this version: Active, Cancelled, Unconfirmed (or a newer provider value).';
COMMENT ON COLUMN booking_history.is_cancelled IS 'True when the booking is cancelled in this version: its nights are not on the books.';
COMMENT ON COLUMN booking_history.booked_at IS 'When the booking was created (UTC).';
COMMENT ON COLUMN booking_history.cancelled_at IS 'When it was cancelled (UTC), as this version says.';
COMMENT ON COLUMN booking_history.arrival_date IS 'Earliest arrival of its room stays (property-local).';
COMMENT ON COLUMN booking_history.departure_date IS 'Latest departure of its room stays (property-local).';
COMMENT ON COLUMN booking_history.rooms IS 'Room stays (rooms booked).';
COMMENT ON COLUMN booking_history.room_nights IS 'Room-nights of its room stays.';
COMMENT ON COLUMN booking_history.room_type_ids IS 'Room type of each room stay, in stay order.';
COMMENT ON COLUMN booking_history.currency_code IS 'ISO 4217 currency of the amounts.';
COMMENT ON COLUMN booking_history.room_revenue_net IS 'Room revenue before tax (the sum of its nights).';
COMMENT ON COLUMN booking_history.room_revenue_gross IS 'Room revenue after tax (the sum of its nights).';
COMMENT ON COLUMN booking_history.total_net IS 'Booking total before tax as sent (rooms, services, early/late charges).';
COMMENT ON COLUMN booking_history.total_gross IS 'Booking total after tax as sent.';
COMMENT ON COLUMN booking_history.changes IS 'What changed from the version before: created, cancelled, reinstated, dates (nights moved, added or removed: moved or shortened stays), rooms (room stays added or removed), room_type (an upgrade, a downgrade or another type), price (nightly or total amounts), other (nothing a report reads).';
COMMENT ON COLUMN booking_history.changes_text IS 'The same, as text: "cancelled", "dates, price"...';

-- ------------------------------------------------------------------ on_the_books

-- SQL-standard bodies (BEGIN ATOMIC): names are bound when the function is created, as a view's
-- are, so the function reads this mirror whatever the caller's search_path; and PostgreSQL
-- inlines it into the calling query, so a filter on property or night reaches the index.
CREATE FUNCTION on_the_books(as_of timestamptz)
RETURNS TABLE (property_id text, stay_date date, currency_code text, room_nights bigint,
               room_revenue_net numeric, room_revenue_gross numeric, reconstructed_room_nights bigint)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT h.property_id, h.stay_date, h.currency_code,
         count(*),
         COALESCE(sum(h.net_amount), 0),
         COALESCE(sum(h.gross_amount), 0),
         count(*) FILTER (WHERE as_of < h.reconstructed_until)
    FROM booking_night_history h
   WHERE h.valid_from <= as_of AND (h.valid_to IS NULL OR h.valid_to > as_of)
   GROUP BY h.property_id, h.stay_date, h.currency_code;
END;
COMMENT ON FUNCTION on_the_books(timestamptz) IS 'The books as they stood at as_of: per property, night and currency, the room-nights and room revenue (net before tax, gross after tax) of the bookings as they were then (the version valid at that instant, not cancelled then, created at or before it). When the mirror was caught up at as_of, this equals what daily_kpis showed at that moment. reconstructed_room_nights: of room_nights, those of bookings first seen later, whose version then is reconstructed. Filter it like a table: SELECT * FROM reporting.on_the_books(''2026-01-31 23:00+00'') WHERE property_id = ''500100'' AND stay_date BETWEEN ...';

-- ------------------------------------------------------------------ otb_snapshots

CREATE VIEW otb_snapshots AS
SELECT d.property_id,
       d.snapshot_date,
       d.as_of,
       n.stay_date,
       n.stay_date - d.snapshot_date AS days_before_stay,
       n.currency_code,
       n.room_nights,
       n.room_revenue_net,
       n.room_revenue_gross,
       n.reconstructed_room_nights,
       d.taken_at
FROM otb_snapshot_days d
JOIN otb_snapshot_nights n ON n.property_id = d.property_id AND n.snapshot_date = d.snapshot_date;
COMMENT ON VIEW otb_snapshots IS 'The books recorded at each property''s local day close for the 365 nights from that day on (written once a day per property by the daemon, from booking_history as of the close). A night with nothing on the books has no row in a snapshot: see otb_snapshot_days in the mirror schema for the days recorded.';
COMMENT ON COLUMN otb_snapshots.property_id IS 'Provider property id.';
COMMENT ON COLUMN otb_snapshots.snapshot_date IS 'The property-local day whose close is recorded.';
COMMENT ON COLUMN otb_snapshots.as_of IS 'The instant of that close: the following local midnight (UTC).';
COMMENT ON COLUMN otb_snapshots.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN otb_snapshots.days_before_stay IS 'stay_date minus snapshot_date.';
COMMENT ON COLUMN otb_snapshots.currency_code IS 'ISO 4217 currency of the amounts.';
COMMENT ON COLUMN otb_snapshots.room_nights IS 'Room-nights on the books at the close.';
COMMENT ON COLUMN otb_snapshots.room_revenue_net IS 'Their room revenue before tax.';
COMMENT ON COLUMN otb_snapshots.room_revenue_gross IS 'Their room revenue after tax.';
COMMENT ON COLUMN otb_snapshots.reconstructed_room_nights IS 'Of room_nights, those of bookings whose version at the close is reconstructed.';
COMMENT ON COLUMN otb_snapshots.taken_at IS 'When the daemon wrote the snapshot (UTC).';

-- ------------------------------------------------------------------ pace

CREATE FUNCTION books_at_close(property text, night date, currency text, day date, time_zone text)
RETURNS TABLE (room_nights bigint, room_revenue_net numeric, room_revenue_gross numeric,
               reconstructed_room_nights bigint, source text)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT COALESCE(n.room_nights, 0), COALESCE(n.room_revenue_net, 0), COALESCE(n.room_revenue_gross, 0),
         COALESCE(n.reconstructed_room_nights, 0), 'snapshot'
    FROM otb_snapshot_days d
    LEFT JOIN otb_snapshot_nights n
      ON n.property_id = d.property_id AND n.snapshot_date = d.snapshot_date AND n.stay_date = night
     AND n.currency_code IS NOT DISTINCT FROM currency
   WHERE d.property_id = property AND d.snapshot_date = day
  UNION ALL
  SELECT a.room_nights, a.room_revenue_net, a.room_revenue_gross, a.reconstructed_room_nights, 'history'
    FROM (SELECT count(*) AS room_nights,
                 COALESCE(sum(h.net_amount), 0) AS room_revenue_net,
                 COALESCE(sum(h.gross_amount), 0) AS room_revenue_gross,
                 count(*) FILTER (WHERE ((day + 1)::timestamp AT TIME ZONE time_zone) < h.reconstructed_until) AS reconstructed_room_nights
            FROM booking_night_history h
           WHERE h.property_id = property AND h.stay_date = night AND h.currency_code IS NOT DISTINCT FROM currency
             AND h.valid_from <= ((day + 1)::timestamp AT TIME ZONE time_zone)
             AND (h.valid_to IS NULL OR h.valid_to > ((day + 1)::timestamp AT TIME ZONE time_zone))) a
   WHERE NOT EXISTS (SELECT 1 FROM otb_snapshot_days d WHERE d.property_id = property AND d.snapshot_date = day);
END;
COMMENT ON FUNCTION books_at_close(text, date, text, date, text) IS 'One night of a property on the books at the close of a local day (the next local midnight in time_zone), in one currency: from that day''s snapshot when the daemon recorded one (source snapshot), else from booking_history (source history). pace gives the same figures for many nights at once.';

-- What pace computes with: the close a moment falls in, and which of pace's offsets a number of
-- days reaches. pace reads each night's rows of booking_night_history once (and once more for the
-- night 364 days later, whose STLY they are) instead of looking the night up again for each offset
-- and year (5,840 lookups for a property's year, over a second with the JIT compilation that
-- their estimated cost brings on); see docs/benchmarks.md, scenario H.
CREATE FUNCTION close_day(t timestamptz, zone text) RETURNS date
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN (t AT TIME ZONE zone)::time < '03:00' AND t <= (((t AT TIME ZONE zone)::date)::timestamp AT TIME ZONE zone)
            THEN (t AT TIME ZONE zone)::date - 1
            ELSE (t AT TIME ZONE zone)::date END;
COMMENT ON FUNCTION close_day(timestamptz, text) IS 'The first local day (in zone) whose close, the next local midnight ((day + 1)::timestamp AT TIME ZONE zone), is at or after t: an instant t is at or before the close of day D exactly when D >= close_day(t). NULL for NULL. The local date of t, or the day before when t is that date''s midnight itself (or, where a time change skips or repeats midnight, before it).';

CREATE FUNCTION offset_bucket(days integer) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN days IS NULL THEN NULL WHEN days < 0 THEN -1 WHEN days < 1 THEN 0 WHEN days < 3 THEN 1 WHEN days < 7 THEN 3
            WHEN days < 14 THEN 7 WHEN days < 30 THEN 14 WHEN days < 60 THEN 30 WHEN days < 90 THEN 60 ELSE 90 END;
COMMENT ON FUNCTION offset_bucket(integer) IS 'The largest of pace''s offsets (0, 1, 3, 7, 14, 30, 60, 90 days) that is at most days, -1 when days < 0: for each offset k, days >= k exactly when offset_bucket(days) >= k.';

CREATE VIEW pace AS
WITH offsets (days_before) AS (
  -- The same list as offset_bucket's.
  VALUES (0), (1), (3), (7), (14), (30), (60), (90)
), night_rows AS (
  -- Every row of booking_night_history for its own night, and again for the night 364 days after
  -- it, whose STLY it is (stly). A filter on stay_date reaches both scans.
  SELECT h.property_id, h.stay_date AS night, false AS stly, h.stay_date, h.currency_code, h.net_amount, h.gross_amount,
         h.valid_from, h.valid_to, h.reconstructed_until
  FROM booking_night_history h
  UNION ALL
  SELECT h.property_id, h.stay_date + 364, true, h.stay_date, h.currency_code, h.net_amount, h.gross_amount,
         h.valid_from, h.valid_to, h.reconstructed_until
  FROM booking_night_history h
), spans AS (
  -- A row is on the books at the close of local day D (D = its night - days_before) when
  -- close_day(valid_from) <= D < close_day(valid_to): for the offsets k with
  -- k <= on_to and k > on_after (as offset buckets); reconstructed then when also k > seen_after.
  -- Rows alike in that are added up here, so the offsets below multiply a few rows a night.
  SELECT r.property_id, r.night, r.currency_code, r.stly,
         count(*) AS rooms, sum(r.net_amount) AS net, sum(r.gross_amount) AS gross,
         offset_bucket(r.stay_date - d.from_day) AS on_to,
         offset_bucket(r.stay_date - d.to_day) AS on_after,
         offset_bucket(r.stay_date - d.seen_day) AS seen_after
  FROM night_rows r
  -- Each property's zone once (OFFSET 0: a subquery of its own, not the zone lookup again in every
  -- expression below).
  LEFT JOIN (SELECT k.property_id, k.time_zone FROM property_clock k OFFSET 0) c ON c.property_id = r.property_id
  CROSS JOIN LATERAL (
    SELECT close_day(r.valid_from, COALESCE(c.time_zone, 'UTC')) AS from_day,
           close_day(r.valid_to, COALESCE(c.time_zone, 'UTC')) AS to_day,
           close_day(r.reconstructed_until, COALESCE(c.time_zone, 'UTC')) AS seen_day
    OFFSET 0) d
  GROUP BY r.property_id, r.night, r.currency_code, r.stly, 8, 9, 10
), closes AS (
  -- Every night with history or whose STLY night has history, at each offset: the books from
  -- history at that close, of the night and of its STLY night.
  SELECT v.property_id, v.night AS stay_date, v.currency_code, o.days_before,
         COALESCE(sum(v.rooms) FILTER (WHERE NOT v.stly AND w.valid), 0) AS room_nights,
         COALESCE(sum(v.net) FILTER (WHERE NOT v.stly AND w.valid), 0) AS room_revenue_net,
         COALESCE(sum(v.gross) FILTER (WHERE NOT v.stly AND w.valid), 0) AS room_revenue_gross,
         COALESCE(sum(v.rooms) FILTER (WHERE NOT v.stly AND w.valid AND v.seen_after < o.days_before), 0) AS reconstructed_room_nights,
         COALESCE(sum(v.rooms) FILTER (WHERE v.stly AND w.valid), 0) AS stly_room_nights,
         COALESCE(sum(v.net) FILTER (WHERE v.stly AND w.valid), 0) AS stly_room_revenue_net,
         COALESCE(sum(v.gross) FILTER (WHERE v.stly AND w.valid), 0) AS stly_room_revenue_gross,
         COALESCE(sum(v.rooms) FILTER (WHERE v.stly AND w.valid AND v.seen_after < o.days_before), 0) AS stly_reconstructed_room_nights
  FROM spans v
  CROSS JOIN offsets o
  CROSS JOIN LATERAL (SELECT v.on_to >= o.days_before AND (v.on_after IS NULL OR v.on_after < o.days_before) AS valid) w
  GROUP BY v.property_id, v.night, v.currency_code, o.days_before
)
SELECT x.property_id,
       c.property_name,
       x.stay_date,
       x.currency_code,
       x.days_before,
       x.stay_date - x.days_before AS as_of_date,
       (x.stay_date - x.days_before + 1)::timestamp AT TIME ZONE COALESCE(c.time_zone, 'UTC') AS as_of,
       CASE WHEN sd.property_id IS NULL THEN x.room_nights ELSE COALESCE(sn.room_nights, 0) END AS room_nights,
       CASE WHEN sd.property_id IS NULL THEN x.room_revenue_net ELSE COALESCE(sn.room_revenue_net, 0) END AS room_revenue_net,
       CASE WHEN sd.property_id IS NULL THEN x.room_revenue_gross ELSE COALESCE(sn.room_revenue_gross, 0) END AS room_revenue_gross,
       CASE WHEN sd.property_id IS NULL THEN x.reconstructed_room_nights ELSE COALESCE(sn.reconstructed_room_nights, 0) END AS reconstructed_room_nights,
       CASE WHEN sd.property_id IS NULL THEN 'history' ELSE 'snapshot' END AS source,
       x.stay_date - 364 AS stly_stay_date,
       CASE WHEN ld.property_id IS NULL THEN x.stly_room_nights ELSE COALESCE(ln.room_nights, 0) END AS stly_room_nights,
       CASE WHEN ld.property_id IS NULL THEN x.stly_room_revenue_net ELSE COALESCE(ln.room_revenue_net, 0) END AS stly_room_revenue_net,
       CASE WHEN ld.property_id IS NULL THEN x.stly_room_revenue_gross ELSE COALESCE(ln.room_revenue_gross, 0) END AS stly_room_revenue_gross,
       CASE WHEN ld.property_id IS NULL THEN x.stly_reconstructed_room_nights ELSE COALESCE(ln.reconstructed_room_nights, 0) END AS stly_reconstructed_room_nights,
       CASE WHEN sd.property_id IS NULL THEN x.room_nights ELSE COALESCE(sn.room_nights, 0) END
         - CASE WHEN ld.property_id IS NULL THEN x.stly_room_nights ELSE COALESCE(ln.room_nights, 0) END AS room_nights_vs_stly,
       CASE WHEN sd.property_id IS NULL THEN x.room_revenue_net ELSE COALESCE(sn.room_revenue_net, 0) END
         - CASE WHEN ld.property_id IS NULL THEN x.stly_room_revenue_net ELSE COALESCE(ln.room_revenue_net, 0) END AS room_revenue_net_vs_stly
FROM closes x
LEFT JOIN property_clock c ON c.property_id = x.property_id
-- Where the daemon recorded a close, its snapshot, as books_at_close reads it (a night absent
-- from the snapshot had nothing on the books).
LEFT JOIN otb_snapshot_days sd ON sd.property_id = x.property_id AND sd.snapshot_date = x.stay_date - x.days_before
LEFT JOIN otb_snapshot_nights sn
  ON sd.property_id IS NOT NULL AND sn.property_id = x.property_id AND sn.snapshot_date = x.stay_date - x.days_before
 AND sn.stay_date = x.stay_date AND sn.currency_code IS NOT DISTINCT FROM x.currency_code
LEFT JOIN otb_snapshot_days ld ON ld.property_id = x.property_id AND ld.snapshot_date = x.stay_date - 364 - x.days_before
LEFT JOIN otb_snapshot_nights ln
  ON ld.property_id IS NOT NULL AND ln.property_id = x.property_id AND ln.snapshot_date = x.stay_date - 364 - x.days_before
 AND ln.stay_date = x.stay_date - 364 AND ln.currency_code IS NOT DISTINCT FROM x.currency_code
WHERE (x.stay_date - x.days_before + 1)::timestamp AT TIME ZONE COALESCE(c.time_zone, 'UTC') <= now();
COMMENT ON VIEW pace IS 'Pace: per property, night and currency, the books at the local day close 0, 1, 3, 7, 14, 30, 60 and 90 days before the night (days_before; 0 is the close of the night''s own day), next to the same figures for the same weekday 364 days earlier (STLY, same time last year). From the daemon''s day-close snapshots where it recorded them, else from booking_history; only closes already passed have a row. Filter by property and stay_date: a property''s year reads in well under a second.';
COMMENT ON COLUMN pace.property_id IS 'Provider property id.';
COMMENT ON COLUMN pace.property_name IS 'Property name (content).';
COMMENT ON COLUMN pace.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN pace.currency_code IS 'ISO 4217 currency of the amounts of this row.';
COMMENT ON COLUMN pace.days_before IS 'Days before the night: 0, 1, 3, 7, 14, 30, 60 or 90.';
COMMENT ON COLUMN pace.as_of_date IS 'The property-local day whose close the figures are: stay_date - days_before.';
COMMENT ON COLUMN pace.as_of IS 'The instant of that close (the next local midnight, UTC).';
COMMENT ON COLUMN pace.room_nights IS 'Room-nights of the night on the books at that close.';
COMMENT ON COLUMN pace.room_revenue_net IS 'Their room revenue before tax.';
COMMENT ON COLUMN pace.room_revenue_gross IS 'Their room revenue after tax.';
COMMENT ON COLUMN pace.reconstructed_room_nights IS 'Of room_nights, those of bookings whose version then is reconstructed (first seen later).';
COMMENT ON COLUMN pace.source IS 'snapshot (the daemon recorded that close) or history (read from booking_history).';
COMMENT ON COLUMN pace.stly_stay_date IS 'Same time last year: the same weekday 364 days earlier.';
COMMENT ON COLUMN pace.stly_room_nights IS 'Room-nights of stly_stay_date on the books the same number of days before it.';
COMMENT ON COLUMN pace.stly_room_revenue_net IS 'Their room revenue before tax.';
COMMENT ON COLUMN pace.stly_room_revenue_gross IS 'Their room revenue after tax.';
COMMENT ON COLUMN pace.stly_reconstructed_room_nights IS 'Of stly_room_nights, those of reconstructed versions.';
COMMENT ON COLUMN pace.room_nights_vs_stly IS 'room_nights - stly_room_nights: ahead (positive) or behind last year''s pace.';
COMMENT ON COLUMN pace.room_revenue_net_vs_stly IS 'room_revenue_net - stly_room_revenue_net.';

-- ------------------------------------------------------------------ reconciliation

CREATE VIEW reconciliation AS
SELECT d.property_id,
       c.property_name,
       d.stay_date,
       d.stay_date - c.today AS days_from_today,
       d.currency_code,
       COALESCE(m.rooms_sold, 0) AS mirror_rooms_sold,
       d.occupancy_room_count + d.complimentary_occupancy_room_count AS provider_rooms_sold,
       COALESCE(m.rooms_sold, 0) - (d.occupancy_room_count + d.complimentary_occupancy_room_count) AS rooms_difference,
       COALESCE(r.room_revenue_net, 0) AS mirror_room_revenue_net,
       d.room_revenue AS provider_room_revenue,
       COALESCE(r.room_revenue_net, 0) - d.room_revenue AS room_revenue_difference,
       COALESCE(m.rooms_sold, 0) - COALESCE(r.rooms_sold, 0) AS mirror_rooms_in_other_currencies,
       -- Read last: by the property's last refresh when it covered the night (an unchanged night
       -- writes nothing), else when its figures were read.
       CASE WHEN d.stay_date BETWEEN o.first_date AND o.last_date THEN GREATEST(o.started_at, d.refreshed_at) ELSE d.refreshed_at END AS provider_refreshed_at,
       d.refreshed_at AS provider_figures_since
FROM daily_occupancy d
LEFT JOIN property_clock c ON c.property_id = d.property_id
LEFT JOIN occupancy_refreshes o ON o.property_id = d.property_id
LEFT JOIN LATERAL (
  SELECT sum(f.rooms_sold) AS rooms_sold FROM nightly_facts f WHERE f.property_id = d.property_id AND f.stay_date = d.stay_date
) m ON true
LEFT JOIN nightly_facts r ON r.property_id = d.property_id AND r.stay_date = d.stay_date AND r.currency_code IS NOT DISTINCT FROM d.currency_code;
COMMENT ON VIEW reconciliation IS 'Trust: per property and night the PMS statistics cover (daily_occupancy), the rooms sold and room revenue the mirror holds next to the provider''s own figures, and the difference (mirror minus provider). A difference means rooms the booking list does not carry (a walk-in or a stay entered in the PMS only), a booking not fetched yet (see mirror_completeness), or a stay the PMS has changed (early departure, no-show, room moved) that the booking has not; room revenue differs also by what the PMS takes out (commissions) or puts in. As now; reconciliation_as_of(t) compares both as they stood at t. See docs/history.md.';
COMMENT ON COLUMN reconciliation.property_id IS 'Provider property id.';
COMMENT ON COLUMN reconciliation.property_name IS 'Property name (content).';
COMMENT ON COLUMN reconciliation.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN reconciliation.days_from_today IS 'stay_date minus the property''s local today.';
COMMENT ON COLUMN reconciliation.currency_code IS 'Currency of the provider''s revenue figures (and of mirror_room_revenue_net).';
COMMENT ON COLUMN reconciliation.mirror_rooms_sold IS 'Room-nights the mirror has on the books that night, every currency (daily_kpis.property_rooms_sold).';
COMMENT ON COLUMN reconciliation.provider_rooms_sold IS 'Rooms occupied that night in the PMS statistics, paid and complimentary.';
COMMENT ON COLUMN reconciliation.rooms_difference IS 'mirror_rooms_sold - provider_rooms_sold.';
COMMENT ON COLUMN reconciliation.mirror_room_revenue_net IS 'Room revenue before tax the mirror has that night, in currency_code.';
COMMENT ON COLUMN reconciliation.provider_room_revenue IS 'Room revenue of the PMS statistics (net of VAT, commissions and extra services).';
COMMENT ON COLUMN reconciliation.room_revenue_difference IS 'mirror_room_revenue_net - provider_room_revenue.';
COMMENT ON COLUMN reconciliation.mirror_rooms_in_other_currencies IS 'Room-nights of the mirror that night in currencies other than currency_code (their revenue is not compared).';
COMMENT ON COLUMN reconciliation.provider_refreshed_at IS 'When the PMS statistics of the night were last read (UTC): the start of the property''s last occupancy refresh when it read the night, else when its figures were read.';
COMMENT ON COLUMN reconciliation.provider_figures_since IS 'Since when the PMS has given these figures for the night (UTC): the read that found them (daily_occupancy.refreshed_at). For the figures at an earlier moment, see reconciliation_as_of.';

-- ------------------------------------------------------------------ pms_stay_history

CREATE VIEW pms_stay_history AS
SELECT v.property_id,
       v.number,
       v.stay_key,
       v.valid_from,
       v.valid_to,
       v.valid_to IS NULL AS is_current,
       v.status,
       v.room_id,
       rm.display_name AS room_name,
       v.room_type_id,
       rt.name AS room_type_name,
       v.check_in_at,
       v.check_out_at,
       v.actual_check_in_at,
       v.actual_check_out_at
FROM pms_stay_versions v
LEFT JOIN pms_rooms rm ON rm.property_id = v.property_id AND rm.room_id = v.room_id
LEFT JOIN room_types rt ON rt.property_id = v.property_id AND rt.room_type_id = v.room_type_id;
COMMENT ON VIEW pms_stay_history IS 'Every version of each PMS room stay (type 2 history, dbt snapshot column names): its status, assigned room and planned and actual check-in/check-out, valid from the reservation''s modification until the stay changed again. Room moves, check-ins and check-outs over time; the current stays are pms_room_stays_named.';
COMMENT ON COLUMN pms_stay_history.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_stay_history.number IS 'Reservation number.';
COMMENT ON COLUMN pms_stay_history.stay_key IS 'The room stay: its pmsRoomStayId, or #position when the provider gave none.';
COMMENT ON COLUMN pms_stay_history.valid_from IS 'From when (UTC): the reservation''s modifyDateTime (its fetch time when it had none that could be read).';
COMMENT ON COLUMN pms_stay_history.valid_to IS 'Until when (UTC, exclusive); NULL for the current version.';
COMMENT ON COLUMN pms_stay_history.is_current IS 'True for the stay as it is now (valid_to IS NULL).';
COMMENT ON COLUMN pms_stay_history.status IS 'Room stay status as sent (e.g. New, CheckedIn, CheckedOut, Cancelled).';
COMMENT ON COLUMN pms_stay_history.room_id IS 'Room assigned.';
COMMENT ON COLUMN pms_stay_history.room_name IS 'Name or number of the room (pms_rooms); NULL when unknown.';
COMMENT ON COLUMN pms_stay_history.room_type_id IS 'Room type of the stay.';
COMMENT ON COLUMN pms_stay_history.room_type_name IS 'Room type name (content); NULL when unknown.';
COMMENT ON COLUMN pms_stay_history.check_in_at IS 'Planned check-in (property-local).';
COMMENT ON COLUMN pms_stay_history.check_out_at IS 'Planned check-out (property-local).';
COMMENT ON COLUMN pms_stay_history.actual_check_in_at IS 'Actual check-in (property-local); NULL before it.';
COMMENT ON COLUMN pms_stay_history.actual_check_out_at IS 'Actual check-out (property-local); NULL before it.';

-- ------------------------------------------------------------------ guests_by_pseudonym

-- A guest is a pseudonym (migrations/0017_pseudonyms.sql): the customer's e-mail pseudonym, or
-- the phone's when the reservation's customer has no e-mail. The same person booking once with
-- an e-mail and once with a phone only is two guests: the pseudonyms cannot be linked without
-- the values. Guests of a room stay other than the customer are not counted (their pseudonyms
-- are in pms_guests). The inner query is one row per reservation and currency, so that a
-- reservation of several rooms counts once.
CREATE VIEW guests_by_pseudonym AS
SELECT g.pseudonym,
       g.pseudonym_kind,
       g.currency_code,
       count(*) AS reservations,
       count(DISTINCT g.property_id) AS properties,
       sum(g.room_nights) AS room_nights,
       sum(g.revenue_net) AS revenue_net,
       min(g.first_check_in_date) AS first_check_in_date,
       max(g.last_check_in_date) AS last_check_in_date
FROM (
  SELECT COALESCE(r.customer_email_hash, r.customer_phone_hash) AS pseudonym,
         CASE WHEN r.customer_email_hash IS NOT NULL THEN 'email' ELSE 'phone' END AS pseudonym_kind,
         s.currency_code,
         r.property_id,
         r.number,
         sum(s.check_out_at::date - s.check_in_at::date) AS room_nights,
         sum(s.amount) AS revenue_net,
         min(s.check_in_at::date) AS first_check_in_date,
         max(s.check_in_at::date) AS last_check_in_date
  FROM pms_reservations r
  JOIN pms_room_stays s ON s.property_id = r.property_id AND s.number = r.number
  WHERE COALESCE(r.customer_email_hash, r.customer_phone_hash) IS NOT NULL
    AND r.reservation_status IS DISTINCT FROM 'Cancelled'
    AND s.status IS DISTINCT FROM 'Cancelled'
  GROUP BY 1, 2, 3, r.property_id, r.number
) g
GROUP BY g.pseudonym, g.pseudonym_kind, g.currency_code;
COMMENT ON VIEW guests_by_pseudonym IS 'Repeat guests without their e-mail or phone: one row per guest pseudonym (the PMS customer''s e-mail pseudonym, else its phone''s) and currency, over every property, from the PMS reservations that are not cancelled and their room stays that are not cancelled (past, in house and future: a reservation booked ahead counts; a no-show the PMS did not cancel counts too). Empty without privacy.pseudonymKey. Rows mirrored before the key was set have no pseudonym until their reservation is fetched again (or rebuilt, with pms.personalData on): see docs/security-and-personal-data.md.';
COMMENT ON COLUMN guests_by_pseudonym.pseudonym IS 'The guest: pms_reservations.customer_email_hash, or customer_phone_hash when the customer has no e-mail (HMAC-SHA-256 hex under privacy.pseudonymKey; changes with the key).';
COMMENT ON COLUMN guests_by_pseudonym.pseudonym_kind IS 'email or phone: what the pseudonym is of.';
COMMENT ON COLUMN guests_by_pseudonym.currency_code IS 'ISO 4217 currency of the room stays counted in this row (a guest who paid in two currencies has two rows). Never add revenue of different currencies.';
COMMENT ON COLUMN guests_by_pseudonym.reservations IS 'Stays: PMS reservations of the guest with at least one room stay in this currency that is not cancelled (a reservation of several rooms is one).';
COMMENT ON COLUMN guests_by_pseudonym.properties IS 'Properties those reservations are at.';
COMMENT ON COLUMN guests_by_pseudonym.room_nights IS 'Room-nights of those room stays: planned check-out date minus planned check-in date, added over the rooms (2 rooms for 3 nights: 6).';
COMMENT ON COLUMN guests_by_pseudonym.revenue_net IS 'Sum of the room stays'' amounts (pms_room_stays.amount: the stay''s price with extras and early/late charges, before tax); NULL when none has an amount.';
COMMENT ON COLUMN guests_by_pseudonym.first_check_in_date IS 'Earliest planned check-in date of those room stays (property-local): the first stay.';
COMMENT ON COLUMN guests_by_pseudonym.last_check_in_date IS 'Latest planned check-in date of those room stays (property-local): the last stay, which may be ahead.';

-- ------------------------------------------------------------------ receivables

CREATE VIEW receivables AS
WITH stays AS (
  SELECT s.property_id,
         s.number,
         s.currency_code,
         sum(COALESCE(s.pay_amount, 0)) AS amount_due,
         sum(COALESCE(s.refund_amount, 0)) AS refund_due,
         max(COALESCE(s.actual_check_out_at, s.check_out_at))::date AS check_out_date,
         count(*)::int AS room_stays
  FROM pms_room_stays s
  GROUP BY s.property_id, s.number, s.currency_code
)
SELECT st.property_id,
       c.property_name,
       st.number,
       r.reservation_status,
       CASE WHEN r.customer_company_id IS NOT NULL OR r.customer_company_name IS NOT NULL THEN 'company' ELSE 'guest' END AS owed_by,
       r.customer_company_id AS company_id,
       COALESCE(co.name, r.customer_company_name) AS company_name,
       st.currency_code,
       st.check_out_date,
       c.today - st.check_out_date AS days_since_check_out,
       CASE
         WHEN st.check_out_date IS NULL OR st.check_out_date >= c.today THEN 'not due yet'
         WHEN c.today - st.check_out_date <= 30 THEN '1-30'
         WHEN c.today - st.check_out_date <= 60 THEN '31-60'
         WHEN c.today - st.check_out_date <= 90 THEN '61-90'
         ELSE 'over 90'
       END AS aging_bucket,
       st.amount_due,
       st.refund_due,
       st.amount_due - st.refund_due AS balance,
       inv.invoiced,
       COALESCE(inv.invoices, 0) AS invoices,
       st.room_stays
FROM stays st
JOIN pms_reservations r ON r.property_id = st.property_id AND r.number = st.number
LEFT JOIN property_clock c ON c.property_id = st.property_id
LEFT JOIN pms_companies co ON co.property_id = r.property_id AND co.company_id = r.customer_company_id
-- By item: the items of one invoice may be in several currencies, and amounts of two are never added.
LEFT JOIN LATERAL (
  SELECT sum(i.total) AS invoiced, count(DISTINCT i.invoice_position)::int AS invoices
  FROM pms_invoice_items i
  WHERE i.property_id = st.property_id AND i.number = st.number AND i.currency_code IS NOT DISTINCT FROM st.currency_code
) inv ON true
WHERE st.amount_due <> 0 OR st.refund_due <> 0;
COMMENT ON VIEW receivables IS 'Accounts receivable: per PMS reservation and currency, what is still due (the room stays'' payAmount, "amount due for payment") and what is owed back (refundAmount), aged by check-out date; only reservations with something due either way. A reservation of a customer company is owed by the company, the others by the guest (no name here: see pms_reservations). See docs/tables-and-reporting.md.';
COMMENT ON COLUMN receivables.property_id IS 'Provider property id.';
COMMENT ON COLUMN receivables.property_name IS 'Property name (content).';
COMMENT ON COLUMN receivables.number IS 'Reservation number (pms_reservations.number).';
COMMENT ON COLUMN receivables.reservation_status IS 'Status of the reservation in the PMS.';
COMMENT ON COLUMN receivables.owed_by IS 'company (the reservation has a customer company) or guest.';
COMMENT ON COLUMN receivables.company_id IS 'The customer company (pms_companies.company_id), or NULL.';
COMMENT ON COLUMN receivables.company_name IS 'Its name (pms_companies, else as the reservation gives it).';
COMMENT ON COLUMN receivables.currency_code IS 'Currency of the amounts of this row. Never add amounts of different currencies.';
COMMENT ON COLUMN receivables.check_out_date IS 'Last check-out of the reservation''s room stays in this currency, actual when it happened, else planned (property-local date).';
COMMENT ON COLUMN receivables.days_since_check_out IS 'The property''s local today minus check_out_date (negative: still ahead).';
COMMENT ON COLUMN receivables.aging_bucket IS 'not due yet (check-out today or ahead), 1-30, 31-60, 61-90 or over 90 days since check-out.';
COMMENT ON COLUMN receivables.amount_due IS 'Sum of the room stays'' amount due for payment (pms_room_stays.pay_amount).';
COMMENT ON COLUMN receivables.refund_due IS 'Sum of the room stays'' amount for a refund (pms_room_stays.refund_amount).';
COMMENT ON COLUMN receivables.balance IS 'amount_due - refund_due: positive, owed to the hotel; negative, owed by it.';
COMMENT ON COLUMN receivables.invoiced IS 'Total of the reservation''s invoice items in this currency (pms_invoice_items.total, tax included as documented); NULL when none was read.';
COMMENT ON COLUMN receivables.invoices IS 'Invoices of the reservation with an item in this currency.';
COMMENT ON COLUMN receivables.room_stays IS 'Room stays of the reservation in this currency.';

CREATE VIEW receivables_aging AS
SELECT property_id,
       property_name,
       owed_by,
       company_id,
       company_name,
       currency_code,
       count(*) AS reservations,
       COALESCE(sum(balance) FILTER (WHERE aging_bucket = 'not due yet'), 0) AS not_due_yet,
       COALESCE(sum(balance) FILTER (WHERE aging_bucket = '1-30'), 0) AS days_1_30,
       COALESCE(sum(balance) FILTER (WHERE aging_bucket = '31-60'), 0) AS days_31_60,
       COALESCE(sum(balance) FILTER (WHERE aging_bucket = '61-90'), 0) AS days_61_90,
       COALESCE(sum(balance) FILTER (WHERE aging_bucket = 'over 90'), 0) AS days_over_90,
       sum(balance) AS balance
FROM receivables
GROUP BY property_id, property_name, owed_by, company_id, company_name, currency_code;
COMMENT ON VIEW receivables_aging IS 'The aging report: per property, debtor (each customer company, and the guests together) and currency, the balance due by days since check-out.';
COMMENT ON COLUMN receivables_aging.property_id IS 'Provider property id.';
COMMENT ON COLUMN receivables_aging.property_name IS 'Property name (content).';
COMMENT ON COLUMN receivables_aging.owed_by IS 'company or guest (receivables.owed_by).';
COMMENT ON COLUMN receivables_aging.company_id IS 'The customer company; NULL for the guests.';
COMMENT ON COLUMN receivables_aging.company_name IS 'Its name.';
COMMENT ON COLUMN receivables_aging.currency_code IS 'Currency of the amounts.';
COMMENT ON COLUMN receivables_aging.reservations IS 'Reservations with something due either way.';
COMMENT ON COLUMN receivables_aging.not_due_yet IS 'Balance of reservations whose check-out is today or ahead.';
COMMENT ON COLUMN receivables_aging.days_1_30 IS 'Balance 1 to 30 days after check-out.';
COMMENT ON COLUMN receivables_aging.days_31_60 IS 'Balance 31 to 60 days after check-out.';
COMMENT ON COLUMN receivables_aging.days_61_90 IS 'Balance 61 to 90 days after check-out.';
COMMENT ON COLUMN receivables_aging.days_over_90 IS 'Balance more than 90 days after check-out.';
COMMENT ON COLUMN receivables_aging.balance IS 'The whole balance (the sum of the buckets).';

-- ------------------------------------------------------------------ occupancy_as_of (issue 27)

CREATE FUNCTION occupancy_as_of(as_of timestamptz)
RETURNS TABLE (property_id text, stay_date date, currency_code text, property_room_count integer, closed_room_count integer,
               rooms_available integer, rooms_sold integer, paid_rooms_sold integer, complimentary_rooms_sold integer,
               occupancy_rate numeric, room_revenue numeric, revenue numeric, meal_revenue numeric, arrival_count integer,
               guest_count integer, read_since timestamptz, changed_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT h.property_id, h.stay_date, h.currency_code, h.property_room_count, h.closed_room_count,
         h.property_room_count - h.closed_room_count,
         h.occupancy_room_count + h.complimentary_occupancy_room_count,
         h.occupancy_room_count, h.complimentary_occupancy_room_count,
         h.occupancy_rate, h.room_revenue, h.revenue, h.meal_revenue, h.arrival_count, h.guest_count,
         h.valid_from, h.valid_to
    FROM daily_occupancy_history h
   WHERE h.valid_from <= as_of AND (h.valid_to IS NULL OR h.valid_to > as_of);
END;
COMMENT ON FUNCTION occupancy_as_of(timestamptz) IS 'The PMS statistics as read at as_of: per property and night, the figures of the last refresh at or before as_of (daily_occupancy_history). A night not read by then has no row. read_since: the read that first gave these figures; changed_at: when a later read found them changed (NULL: still the figures read last). Filter it like a table: SELECT * FROM reporting.occupancy_as_of(''2026-01-31 23:00+00'') WHERE property_id = ''500100'' AND stay_date BETWEEN ...';

-- ------------------------------------------------------------------ occupancy_pace

CREATE VIEW occupancy_pace AS
WITH offsets (days_before) AS (
  -- The same offsets as pace's (offset_bucket).
  VALUES (0), (1), (3), (7), (14), (30), (60), (90)
), closes AS (
  SELECT h.property_id, h.stay_date, o.days_before, k.time_zone,
         (h.stay_date - o.days_before + 1)::timestamp AT TIME ZONE COALESCE(k.time_zone, 'UTC') AS as_of,
         (h.stay_date - 364 - o.days_before + 1)::timestamp AT TIME ZONE COALESCE(k.time_zone, 'UTC') AS stly_as_of,
         h.currency_code, h.property_room_count, h.closed_room_count, h.occupancy_room_count,
         h.complimentary_occupancy_room_count, h.room_revenue, h.valid_from, h.valid_to
  FROM daily_occupancy_history h
  LEFT JOIN (SELECT c.property_id, c.time_zone FROM property_clock c OFFSET 0) k ON k.property_id = h.property_id
  CROSS JOIN offsets o
)
SELECT x.property_id,
       c.property_name,
       x.stay_date,
       x.days_before,
       x.stay_date - x.days_before AS as_of_date,
       x.as_of,
       x.currency_code,
       x.occupancy_room_count + x.complimentary_occupancy_room_count AS rooms_sold,
       x.complimentary_occupancy_room_count AS complimentary_rooms_sold,
       x.property_room_count - x.closed_room_count AS rooms_available,
       round((x.occupancy_room_count + x.complimentary_occupancy_room_count)::numeric / NULLIF(x.property_room_count - x.closed_room_count, 0), 4) AS occupancy,
       x.room_revenue,
       x.valid_from AS read_since,
       x.stay_date - 364 AS stly_stay_date,
       ly.occupancy_room_count + ly.complimentary_occupancy_room_count AS stly_rooms_sold,
       ly.room_revenue AS stly_room_revenue,
       (x.occupancy_room_count + x.complimentary_occupancy_room_count) - (ly.occupancy_room_count + ly.complimentary_occupancy_room_count) AS rooms_sold_vs_stly
FROM closes x
LEFT JOIN property_clock c ON c.property_id = x.property_id
-- The same weekday 364 days earlier, as read at the close as many days before it.
LEFT JOIN daily_occupancy_history ly
  ON ly.property_id = x.property_id AND ly.stay_date = x.stay_date - 364
 AND ly.valid_from <= x.stly_as_of AND (ly.valid_to IS NULL OR ly.valid_to > x.stly_as_of)
WHERE x.valid_from <= x.as_of AND (x.valid_to IS NULL OR x.valid_to > x.as_of) AND x.as_of <= now();
COMMENT ON VIEW occupancy_pace IS 'Pace of the PMS''s own figures (walk-ins and stays entered in the PMS only included): per property and night, the rooms sold and room revenue of the PMS statistics as read at the local day close 0, 1, 3, 7, 14, 30, 60 and 90 days before the night (the offsets of pace), next to the same weekday 364 days earlier as read as many days before it. From daily_occupancy_history: an offset at whose close the night had not been read yet has no row. Filter by property and stay_date.';
COMMENT ON COLUMN occupancy_pace.property_id IS 'Provider property id.';
COMMENT ON COLUMN occupancy_pace.property_name IS 'Property name (content).';
COMMENT ON COLUMN occupancy_pace.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN occupancy_pace.days_before IS 'Days between the close and the night: 0 is the close of the night''s own day.';
COMMENT ON COLUMN occupancy_pace.as_of_date IS 'The local day whose close the figures are read at (stay_date - days_before).';
COMMENT ON COLUMN occupancy_pace.as_of IS 'That close (the next local midnight), UTC: the figures are those of the last read at or before it.';
COMMENT ON COLUMN occupancy_pace.currency_code IS 'Currency of the revenue figures.';
COMMENT ON COLUMN occupancy_pace.rooms_sold IS 'Rooms occupied that night in the PMS statistics as read then, paid and complimentary.';
COMMENT ON COLUMN occupancy_pace.complimentary_rooms_sold IS 'Of rooms_sold, those at a zero rate.';
COMMENT ON COLUMN occupancy_pace.rooms_available IS 'Rooms of the property less those out of order, as read then.';
COMMENT ON COLUMN occupancy_pace.occupancy IS 'rooms_sold / rooms_available.';
COMMENT ON COLUMN occupancy_pace.room_revenue IS 'Room revenue of the PMS statistics as read then (net of VAT, commissions and extra services).';
COMMENT ON COLUMN occupancy_pace.read_since IS 'When the figures were first read (UTC): they stood unchanged from then to as_of.';
COMMENT ON COLUMN occupancy_pace.stly_stay_date IS 'The same weekday 364 days earlier.';
COMMENT ON COLUMN occupancy_pace.stly_rooms_sold IS 'Its rooms sold as read days_before days before it; NULL when it was not read by then.';
COMMENT ON COLUMN occupancy_pace.stly_room_revenue IS 'Its room revenue as read then.';
COMMENT ON COLUMN occupancy_pace.rooms_sold_vs_stly IS 'rooms_sold - stly_rooms_sold.';

-- ------------------------------------------------------------------ reconciliation_as_of

CREATE FUNCTION reconciliation_as_of(as_of timestamptz)
RETURNS TABLE (property_id text, stay_date date, currency_code text, mirror_rooms_sold bigint, provider_rooms_sold integer,
               rooms_difference bigint, mirror_room_revenue_net numeric, provider_room_revenue numeric,
               room_revenue_difference numeric, mirror_rooms_in_other_currencies bigint,
               mirror_reconstructed_room_nights bigint, provider_read_since timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT o.property_id, o.stay_date, o.currency_code,
         COALESCE(m.room_nights, 0),
         o.rooms_sold,
         COALESCE(m.room_nights, 0) - o.rooms_sold,
         COALESCE(r.room_revenue_net, 0),
         o.room_revenue,
         COALESCE(r.room_revenue_net, 0) - o.room_revenue,
         COALESCE(m.room_nights, 0) - COALESCE(r.room_nights, 0),
         COALESCE(m.reconstructed_room_nights, 0),
         o.read_since
    FROM occupancy_as_of(as_of) o
    LEFT JOIN LATERAL (
      SELECT sum(b.room_nights)::bigint AS room_nights, sum(b.reconstructed_room_nights)::bigint AS reconstructed_room_nights
        FROM on_the_books(as_of) b WHERE b.property_id = o.property_id AND b.stay_date = o.stay_date
    ) m ON true
    LEFT JOIN LATERAL (
      SELECT b.room_nights, b.room_revenue_net
        FROM on_the_books(as_of) b
       WHERE b.property_id = o.property_id AND b.stay_date = o.stay_date AND b.currency_code IS NOT DISTINCT FROM o.currency_code
    ) r ON true;
END;
COMMENT ON FUNCTION reconciliation_as_of(timestamptz) IS 'reconciliation as it stood at as_of, like with like: per property and night the PMS statistics covered then, the mirror''s books at as_of (on_the_books) next to the PMS''s figures as read at as_of (occupancy_as_of), and the difference (mirror minus provider). mirror_reconstructed_room_nights: of the mirror''s rooms, those of bookings first seen later (their version then is reconstructed). SELECT * FROM reporting.reconciliation_as_of(''2026-01-31 23:00+00'') WHERE property_id = ''500100''.';

-- ------------------------------------------------------------------ revenue by night: rooms, extras, taxes, commission (issue 27)

-- Amounts the booking details give per room stay (its services and taxes, early arrival, late
-- departure) or per booking (its services; the PMS reservation's agent commission) become
-- nightly by one rule, that of room_nights.tax_amount (src/mapping/room-revenue.ts): in
-- proportion to the nights' net room prices, rounded cumulatively to cents, evenly when the
-- nights are all zero-rate. A night's share is round(amount × weight through it / whole
-- weight, 2) minus the same for the nights before it: the shares add up to the amount exactly.
CREATE FUNCTION cumulative_share(amount numeric, weight_through numeric, weight_before numeric, weight_total numeric)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN amount IS NULL OR weight_total IS NULL OR weight_total = 0 THEN NULL
            ELSE round(amount * weight_through / weight_total, 2) - round(amount * weight_before / weight_total, 2) END;
COMMENT ON FUNCTION cumulative_share(numeric, numeric, numeric, numeric) IS 'A night''s share of an amount spread over nights by weight, rounded cumulatively to cents: round(amount × weight_through / weight_total, 2) - round(amount × weight_before / weight_total, 2). The shares of all nights add up to the amount.';

CREATE VIEW booking_night_weights AS
WITH nights AS (
  SELECT r.property_id, r.number, r.stay_index, r.position, r.stay_date, b.currency_code,
         COALESCE(r.price_before_tax, 0) AS room_net,
         COALESCE(r.gross_amount - r.price_before_tax, 0) AS room_tax,
         sum(COALESCE(r.price_before_tax, 0)) OVER stay AS stay_net,
         sum(COALESCE(r.price_before_tax, 0)) OVER (stay ORDER BY r.position) AS stay_net_through,
         count(*) OVER stay AS stay_nights,
         count(*) OVER (stay ORDER BY r.position) AS stay_nights_through,
         sum(COALESCE(r.price_before_tax, 0)) OVER bk AS booking_net,
         sum(COALESCE(r.price_before_tax, 0)) OVER (bk ORDER BY r.stay_index, r.position) AS booking_net_through,
         count(*) OVER bk AS booking_nights,
         count(*) OVER (bk ORDER BY r.stay_index, r.position) AS booking_nights_through
  FROM booking_daily_rates r
  JOIN bookings b ON b.property_id = r.property_id AND b.number = r.number
  WHERE b.status IS DISTINCT FROM 'Cancelled'
  WINDOW stay AS (PARTITION BY r.property_id, r.number, r.stay_index),
         bk AS (PARTITION BY r.property_id, r.number)
)
SELECT n.property_id, n.number, n.stay_index, n.position AS night_index, n.stay_date, n.currency_code, n.room_net, n.room_tax,
       n.stay_nights_through = 1 AS first_night_of_stay,
       n.stay_nights_through = n.stay_nights AS last_night_of_stay,
       CASE WHEN n.stay_net <> 0 THEN n.stay_net_through ELSE n.stay_nights_through END AS stay_weight_through,
       CASE WHEN n.stay_net <> 0 THEN n.stay_net_through - n.room_net ELSE n.stay_nights_through - 1 END AS stay_weight_before,
       CASE WHEN n.stay_net <> 0 THEN n.stay_net ELSE n.stay_nights END AS stay_weight,
       CASE WHEN n.booking_net <> 0 THEN n.booking_net_through ELSE n.booking_nights_through END AS booking_weight_through,
       CASE WHEN n.booking_net <> 0 THEN n.booking_net_through - n.room_net ELSE n.booking_nights_through - 1 END AS booking_weight_before,
       CASE WHEN n.booking_net <> 0 THEN n.booking_net ELSE n.booking_nights END AS booking_weight
FROM nights n;
COMMENT ON VIEW booking_night_weights IS 'The nights of each booking not cancelled with the weights that spread a room stay''s or a booking''s amounts over them (cumulative_share): the nights'' net room prices, or 1 a night when they are all zero-rate. What booking_night_revenue and tax_breakdown are built on.';
COMMENT ON COLUMN booking_night_weights.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_night_weights.number IS 'Booking number.';
COMMENT ON COLUMN booking_night_weights.stay_index IS 'Room stay of the booking (0-based).';
COMMENT ON COLUMN booking_night_weights.night_index IS 'Position of the night in the room stay (0-based).';
COMMENT ON COLUMN booking_night_weights.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN booking_night_weights.currency_code IS 'The booking''s currency.';
COMMENT ON COLUMN booking_night_weights.room_net IS 'Net room price of the night (room_nights.net_amount; 0 when none was given).';
COMMENT ON COLUMN booking_night_weights.room_tax IS 'The night''s share of its room stay''s taxes and fees (room_nights.tax_amount).';
COMMENT ON COLUMN booking_night_weights.first_night_of_stay IS 'True for the first night of its room stay (where an early arrival is charged).';
COMMENT ON COLUMN booking_night_weights.last_night_of_stay IS 'True for the last night of its room stay (where a late departure is charged).';
COMMENT ON COLUMN booking_night_weights.stay_weight_through IS 'Weight of the stay''s nights up to and including this one.';
COMMENT ON COLUMN booking_night_weights.stay_weight_before IS 'Weight of the stay''s nights before this one.';
COMMENT ON COLUMN booking_night_weights.stay_weight IS 'Weight of all nights of the stay.';
COMMENT ON COLUMN booking_night_weights.booking_weight_through IS 'Weight of the booking''s nights up to and including this one (stays in order).';
COMMENT ON COLUMN booking_night_weights.booking_weight_before IS 'Weight of the booking''s nights before this one.';
COMMENT ON COLUMN booking_night_weights.booking_weight IS 'Weight of all nights of the booking.';

CREATE VIEW booking_night_revenue AS
SELECT w.property_id,
       w.number,
       w.stay_index,
       w.night_index,
       w.stay_date,
       w.currency_code,
       w.room_net AS room_revenue_net,
       w.room_tax AS room_taxes,
       COALESCE(cumulative_share(ss.net, w.stay_weight_through, w.stay_weight_before, w.stay_weight), 0)
         + COALESCE(cumulative_share(bs.net, w.booking_weight_through, w.booking_weight_before, w.booking_weight), 0) AS services_net,
       COALESCE(cumulative_share(ss.tax, w.stay_weight_through, w.stay_weight_before, w.stay_weight), 0)
         + COALESCE(cumulative_share(bs.tax, w.booking_weight_through, w.booking_weight_before, w.booking_weight), 0) AS services_taxes,
       CASE WHEN w.first_night_of_stay THEN COALESCE(st.early_arrival_price_before_tax, 0) ELSE 0 END
         + CASE WHEN w.last_night_of_stay THEN COALESCE(st.late_departure_price_before_tax, 0) ELSE 0 END AS early_late_net,
       CASE WHEN w.first_night_of_stay THEN COALESCE(st.early_arrival_price_after_tax - st.early_arrival_price_before_tax, 0) ELSE 0 END
         + CASE WHEN w.last_night_of_stay THEN COALESCE(st.late_departure_price_after_tax - st.late_departure_price_before_tax, 0) ELSE 0 END AS early_late_taxes,
       COALESCE(cumulative_share(k.commission, w.booking_weight_through, w.booking_weight_before, w.booking_weight), 0) AS commission,
       k.source AS commission_source
FROM booking_night_weights w
LEFT JOIN booking_room_stays st ON st.property_id = w.property_id AND st.number = w.number AND st.stay_index = w.stay_index
-- The services of each room stay, and of each booking itself (inclusive ones are in the rate
-- and carry no price of their own), added up once: joined, not looked up night by night.
LEFT JOIN (
  SELECT s.property_id, s.number, s.stay_index, sum(s.price_before_tax) AS net, sum(COALESCE(s.price_after_tax - s.price_before_tax, s.tax_amount)) AS tax
  FROM booking_services s WHERE s.stay_index IS NOT NULL GROUP BY s.property_id, s.number, s.stay_index
) ss ON ss.property_id = w.property_id AND ss.number = w.number AND ss.stay_index = w.stay_index
LEFT JOIN (
  SELECT s.property_id, s.number, sum(s.price_before_tax) AS net, sum(COALESCE(s.price_after_tax - s.price_before_tax, s.tax_amount)) AS tax
  FROM booking_services s WHERE s.stay_index IS NULL GROUP BY s.property_id, s.number
) bs ON bs.property_id = w.property_id AND bs.number = w.number
LEFT JOIN pms_reservations pr ON pr.property_id = w.property_id AND pr.number = w.number
CROSS JOIN LATERAL (
  SELECT CASE WHEN pr.agent_commission_currency IS NULL OR pr.agent_commission_currency = w.currency_code THEN pr.agent_commission_amount END AS commission,
         pr.agent_commission_source AS source
) k;
COMMENT ON VIEW booking_night_revenue IS 'One row per night of each booking not cancelled: its room revenue, its share of the extras (the services of its room stay, the booking''s own services, the early arrival on the stay''s first night and the late departure on its last), of the taxes of each, and of the agent commission of the booking''s PMS reservation. Shares are in proportion to the nights'' net room prices, rounded cumulatively (booking_night_weights): the nights of a booking add up to its amounts exactly. Amounts in the booking''s currency; net = before tax.';
COMMENT ON COLUMN booking_night_revenue.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_night_revenue.number IS 'Booking number.';
COMMENT ON COLUMN booking_night_revenue.stay_index IS 'Room stay of the booking (0-based).';
COMMENT ON COLUMN booking_night_revenue.night_index IS 'Position of the night in the room stay (0-based).';
COMMENT ON COLUMN booking_night_revenue.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN booking_night_revenue.currency_code IS 'Currency of every amount of the row (the booking''s).';
COMMENT ON COLUMN booking_night_revenue.room_revenue_net IS 'Net room price of the night (room_nights.net_amount).';
COMMENT ON COLUMN booking_night_revenue.room_taxes IS 'Its share of the room stay''s taxes and fees (room_nights.tax_amount).';
COMMENT ON COLUMN booking_night_revenue.services_net IS 'Its share of the services before tax: those of its room stay over the stay''s nights, those of the booking over all the booking''s nights.';
COMMENT ON COLUMN booking_night_revenue.services_taxes IS 'Its share of the services'' taxes (price after tax minus before tax, else their tax amount).';
COMMENT ON COLUMN booking_night_revenue.early_late_net IS 'Early arrival charge before tax (on the stay''s first night) and late departure charge (on its last).';
COMMENT ON COLUMN booking_night_revenue.early_late_taxes IS 'The taxes of those charges.';
COMMENT ON COLUMN booking_night_revenue.commission IS 'Its share of the agent commission of the booking''s PMS reservation (0 when none is mirrored or it is in another currency).';
COMMENT ON COLUMN booking_night_revenue.commission_source IS 'Who calculated the commission: Pms or Ota (pms_reservations.agent_commission_source).';

CREATE VIEW revenue_breakdown AS
SELECT n.property_id,
       c.property_name,
       n.stay_date,
       n.currency_code,
       count(*) AS room_nights,
       sum(n.room_revenue_net) AS room_revenue_net,
       sum(n.services_net + n.early_late_net) AS extras_net,
       sum(n.services_net) AS services_net,
       sum(n.early_late_net) AS early_late_net,
       sum(n.room_taxes) AS room_taxes,
       sum(n.services_taxes + n.early_late_taxes) AS extras_taxes,
       sum(n.room_taxes + n.services_taxes + n.early_late_taxes) AS taxes,
       sum(n.room_revenue_net + n.services_net + n.early_late_net) AS revenue_net,
       sum(n.room_revenue_net + n.services_net + n.early_late_net + n.room_taxes + n.services_taxes + n.early_late_taxes) AS revenue_gross,
       sum(n.commission) AS commission,
       sum(n.room_revenue_net + n.services_net + n.early_late_net - n.commission) AS revenue_net_of_commission
FROM booking_night_revenue n
LEFT JOIN property_clock c ON c.property_id = n.property_id
GROUP BY n.property_id, c.property_name, n.stay_date, n.currency_code;
COMMENT ON VIEW revenue_breakdown IS 'What each night earns, in the revenue manager''s and the accountant''s words: per property, night and currency, over the bookings not cancelled, room revenue, extras (services, early arrival, late departure), taxes and fees of each, the agent commission, and what the hotel keeps (revenue_net_of_commission). From booking_night_revenue; per month: revenue_breakdown_monthly, per tax: tax_breakdown.';
COMMENT ON COLUMN revenue_breakdown.property_id IS 'Provider property id.';
COMMENT ON COLUMN revenue_breakdown.property_name IS 'Property name (content).';
COMMENT ON COLUMN revenue_breakdown.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN revenue_breakdown.currency_code IS 'Currency of every amount of the row. Never add amounts of different currencies.';
COMMENT ON COLUMN revenue_breakdown.room_nights IS 'Room-nights sold (bookings not cancelled).';
COMMENT ON COLUMN revenue_breakdown.room_revenue_net IS 'Room revenue before tax (as daily_kpis.room_revenue_net).';
COMMENT ON COLUMN revenue_breakdown.extras_net IS 'Ancillary revenue before tax: services_net + early_late_net.';
COMMENT ON COLUMN revenue_breakdown.services_net IS 'Services (extras) before tax, spread over the nights they belong to.';
COMMENT ON COLUMN revenue_breakdown.early_late_net IS 'Early arrival and late departure charges before tax.';
COMMENT ON COLUMN revenue_breakdown.room_taxes IS 'Taxes and fees of the rooms.';
COMMENT ON COLUMN revenue_breakdown.extras_taxes IS 'Taxes and fees of the extras.';
COMMENT ON COLUMN revenue_breakdown.taxes IS 'All taxes and fees (room_taxes + extras_taxes); by tax: tax_breakdown.';
COMMENT ON COLUMN revenue_breakdown.revenue_net IS 'Room revenue and extras before tax.';
COMMENT ON COLUMN revenue_breakdown.revenue_gross IS 'revenue_net + taxes: what the guests pay.';
COMMENT ON COLUMN revenue_breakdown.commission IS 'Agent commission of those bookings'' PMS reservations, spread over their nights.';
COMMENT ON COLUMN revenue_breakdown.revenue_net_of_commission IS 'revenue_net - commission: what the hotel keeps before tax.';

CREATE VIEW revenue_breakdown_monthly AS
SELECT r.property_id,
       r.property_name,
       date_trunc('month', r.stay_date)::date AS month,
       r.currency_code,
       sum(r.room_nights) AS room_nights,
       sum(r.room_revenue_net) AS room_revenue_net,
       sum(r.extras_net) AS extras_net,
       sum(r.services_net) AS services_net,
       sum(r.early_late_net) AS early_late_net,
       sum(r.room_taxes) AS room_taxes,
       sum(r.extras_taxes) AS extras_taxes,
       sum(r.taxes) AS taxes,
       sum(r.revenue_net) AS revenue_net,
       sum(r.revenue_gross) AS revenue_gross,
       sum(r.commission) AS commission,
       sum(r.revenue_net_of_commission) AS revenue_net_of_commission,
       round(sum(r.commission) / NULLIF(sum(r.room_revenue_net), 0), 4) AS commission_share_of_room_revenue
FROM revenue_breakdown r
GROUP BY r.property_id, r.property_name, date_trunc('month', r.stay_date), r.currency_code;
COMMENT ON VIEW revenue_breakdown_monthly IS 'revenue_breakdown per calendar month of the nights: per property, month and currency.';
COMMENT ON COLUMN revenue_breakdown_monthly.property_id IS 'Provider property id.';
COMMENT ON COLUMN revenue_breakdown_monthly.property_name IS 'Property name (content).';
COMMENT ON COLUMN revenue_breakdown_monthly.month IS 'First day of the month of the nights.';
COMMENT ON COLUMN revenue_breakdown_monthly.currency_code IS 'Currency of every amount of the row.';
COMMENT ON COLUMN revenue_breakdown_monthly.room_nights IS 'Room-nights sold.';
COMMENT ON COLUMN revenue_breakdown_monthly.room_revenue_net IS 'Room revenue before tax.';
COMMENT ON COLUMN revenue_breakdown_monthly.extras_net IS 'Ancillary revenue before tax (services, early arrival, late departure).';
COMMENT ON COLUMN revenue_breakdown_monthly.services_net IS 'Services before tax.';
COMMENT ON COLUMN revenue_breakdown_monthly.early_late_net IS 'Early arrival and late departure charges before tax.';
COMMENT ON COLUMN revenue_breakdown_monthly.room_taxes IS 'Taxes and fees of the rooms.';
COMMENT ON COLUMN revenue_breakdown_monthly.extras_taxes IS 'Taxes and fees of the extras.';
COMMENT ON COLUMN revenue_breakdown_monthly.taxes IS 'All taxes and fees.';
COMMENT ON COLUMN revenue_breakdown_monthly.revenue_net IS 'Room revenue and extras before tax.';
COMMENT ON COLUMN revenue_breakdown_monthly.revenue_gross IS 'revenue_net + taxes.';
COMMENT ON COLUMN revenue_breakdown_monthly.commission IS 'Agent commission.';
COMMENT ON COLUMN revenue_breakdown_monthly.revenue_net_of_commission IS 'revenue_net - commission.';
COMMENT ON COLUMN revenue_breakdown_monthly.commission_share_of_room_revenue IS 'commission / room_revenue_net.';

CREATE VIEW tax_breakdown AS
WITH shares AS (
  -- Each tax amount of a room stay (its rooms, its services, its early arrival and late
  -- departure) or of a booking's own services, on the nights it belongs to. The booking total's
  -- taxes (level booking) are the sum of these and are not counted again.
  SELECT w.property_id, w.stay_date, w.currency_code, t.name,
         CASE WHEN t.level = 'early_arrival' THEN CASE WHEN w.first_night_of_stay THEN t.amount ELSE 0 END
              WHEN t.level = 'late_departure' THEN CASE WHEN w.last_night_of_stay THEN t.amount ELSE 0 END
              WHEN t.stay_index IS NULL THEN cumulative_share(t.amount, w.booking_weight_through, w.booking_weight_before, w.booking_weight)
              ELSE cumulative_share(t.amount, w.stay_weight_through, w.stay_weight_before, w.stay_weight) END AS amount
  FROM booking_tax_amounts t
  JOIN booking_night_weights w ON w.property_id = t.property_id AND w.number = t.number
   AND (t.stay_index IS NULL OR w.stay_index = t.stay_index)
  WHERE t.level <> 'booking'
)
SELECT s.property_id,
       c.property_name,
       s.stay_date,
       date_trunc('month', s.stay_date)::date AS month,
       s.currency_code,
       s.name AS tax_name,
       sum(s.amount) AS amount
FROM shares s
LEFT JOIN property_clock c ON c.property_id = s.property_id
GROUP BY s.property_id, c.property_name, s.stay_date, s.currency_code, s.name;
COMMENT ON VIEW tax_breakdown IS 'Taxes and fees per property, night, currency and tax as the booking details name it (e.g. VAT, city tax), over the bookings not cancelled: each amount on the nights it belongs to (a room stay''s over its nights, a booking''s services'' over all its nights, by booking_night_weights). Sum over month for the monthly figures. The nights of a booking add up to its taxes exactly.';
COMMENT ON COLUMN tax_breakdown.property_id IS 'Provider property id.';
COMMENT ON COLUMN tax_breakdown.property_name IS 'Property name (content).';
COMMENT ON COLUMN tax_breakdown.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN tax_breakdown.month IS 'First day of the month of the night.';
COMMENT ON COLUMN tax_breakdown.currency_code IS 'Currency of the amount.';
COMMENT ON COLUMN tax_breakdown.tax_name IS 'The tax as the booking names it (booking_taxes.name of its index); NULL when the booking gives no name.';
COMMENT ON COLUMN tax_breakdown.amount IS 'Amount of that tax on the night.';

-- ------------------------------------------------------------------ segment_mix, segment_mix_monthly
-- The PMS's own segmentation: the nights of the integration-storage bookings (one row of
-- integration_storage_booking_nights is one room night, with its room stay's market segment and
-- source of business), bookings cancelled or on the waiting list left out.
CREATE VIEW segment_mix AS
WITH nights AS (
  SELECT n.property_id, n.stay_date, n.market_code, n.source_of_business, n.currency_code,
         count(*) AS room_nights,
         count(*) FILTER (WHERE n.amount_after_tax = 0) AS complimentary_nights,
         COALESCE(sum(n.amount_after_tax), 0) AS room_revenue_gross,
         sum(n.adults + n.children) AS guests,
         count(DISTINCT n.booking_id) AS bookings
  FROM integration_storage_booking_nights n
  JOIN integration_storage_bookings b ON b.property_id = n.property_id AND b.booking_id = n.booking_id
  WHERE b.status IS DISTINCT FROM 'Cancelled' AND b.status IS DISTINCT FROM 'Waitlisted'
  GROUP BY n.property_id, n.stay_date, n.market_code, n.source_of_business, n.currency_code
)
SELECT x.property_id,
       c.property_name,
       x.stay_date,
       date_trunc('month', x.stay_date)::date AS month,
       x.stay_date - c.today AS days_from_today,
       x.market_code,
       x.source_of_business,
       x.currency_code,
       x.room_nights,
       x.complimentary_nights,
       x.room_revenue_gross,
       round(x.room_revenue_gross / NULLIF(x.room_nights - x.complimentary_nights, 0), 2) AS adr_gross,
       x.guests,
       x.bookings,
       round(x.room_nights / sum(x.room_nights) OVER (PARTITION BY x.property_id, x.stay_date)::numeric, 4) AS share_of_room_nights,
       round(x.room_revenue_gross / NULLIF(sum(x.room_revenue_gross) OVER (PARTITION BY x.property_id, x.stay_date, x.currency_code), 0), 4) AS share_of_room_revenue
FROM nights x
LEFT JOIN property_clock c ON c.property_id = x.property_id;
COMMENT ON VIEW segment_mix IS 'The segment mix per property and night: room nights, room revenue and ADR by the PMS''s market segment and source of business, from the integration-storage bookings (integration_storage_booking_nights); bookings Cancelled or Waitlisted left out. Amounts are after tax (the only amounts the integration storage gives). Per month: segment_mix_monthly. See docs/tables-and-reporting.md.';
COMMENT ON COLUMN segment_mix.property_id IS 'Provider property id.';
COMMENT ON COLUMN segment_mix.property_name IS 'Property name (content).';
COMMENT ON COLUMN segment_mix.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN segment_mix.month IS 'First day of the night''s month.';
COMMENT ON COLUMN segment_mix.days_from_today IS 'stay_date minus the property''s local today (property_clock): 0 tonight, negative in the past.';
COMMENT ON COLUMN segment_mix.market_code IS 'Market segment code of the PMS (e.g. LEISURE); NULL: the room stay has none.';
COMMENT ON COLUMN segment_mix.source_of_business IS 'Source of business code of the PMS (e.g. WEB); NULL: the room stay has none.';
COMMENT ON COLUMN segment_mix.currency_code IS 'Currency of the amounts of this row. Never add amounts of different currencies.';
COMMENT ON COLUMN segment_mix.room_nights IS 'Room nights of the segment and source that night (rooms of room stays, zero-rate rooms included).';
COMMENT ON COLUMN segment_mix.complimentary_nights IS 'Of room_nights, those at a zero rate.';
COMMENT ON COLUMN segment_mix.room_revenue_gross IS 'Room revenue after tax (sum of the nights'' amount_after_tax).';
COMMENT ON COLUMN segment_mix.adr_gross IS 'Average daily rate after tax: room_revenue_gross / paid room nights (room_nights - complimentary_nights), 2 decimals; NULL without paid nights.';
COMMENT ON COLUMN segment_mix.guests IS 'Guests (adults and children) of those room nights.';
COMMENT ON COLUMN segment_mix.bookings IS 'Integration-storage bookings with a room night in the row.';
COMMENT ON COLUMN segment_mix.share_of_room_nights IS 'room_nights / the property''s room nights that night in every segment and currency, 0 to 1, 4 decimals.';
COMMENT ON COLUMN segment_mix.share_of_room_revenue IS 'room_revenue_gross / the property''s room revenue that night in this currency, 0 to 1, 4 decimals; NULL when that is 0.';

CREATE VIEW segment_mix_monthly AS
WITH months AS (
  SELECT n.property_id, date_trunc('month', n.stay_date)::date AS month, n.market_code, n.source_of_business, n.currency_code,
         count(*) AS room_nights,
         count(*) FILTER (WHERE n.amount_after_tax = 0) AS complimentary_nights,
         COALESCE(sum(n.amount_after_tax), 0) AS room_revenue_gross,
         sum(n.adults + n.children) AS guests,
         count(DISTINCT n.booking_id) AS bookings
  FROM integration_storage_booking_nights n
  JOIN integration_storage_bookings b ON b.property_id = n.property_id AND b.booking_id = n.booking_id
  WHERE b.status IS DISTINCT FROM 'Cancelled' AND b.status IS DISTINCT FROM 'Waitlisted'
  GROUP BY n.property_id, date_trunc('month', n.stay_date)::date, n.market_code, n.source_of_business, n.currency_code
)
SELECT x.property_id,
       c.property_name,
       x.month,
       x.market_code,
       x.source_of_business,
       x.currency_code,
       x.room_nights,
       x.complimentary_nights,
       x.room_revenue_gross,
       round(x.room_revenue_gross / NULLIF(x.room_nights - x.complimentary_nights, 0), 2) AS adr_gross,
       x.guests,
       x.bookings,
       round(x.room_nights / sum(x.room_nights) OVER (PARTITION BY x.property_id, x.month)::numeric, 4) AS share_of_room_nights,
       round(x.room_revenue_gross / NULLIF(sum(x.room_revenue_gross) OVER (PARTITION BY x.property_id, x.month, x.currency_code), 0), 4) AS share_of_room_revenue
FROM months x
LEFT JOIN property_clock c ON c.property_id = x.property_id;
COMMENT ON VIEW segment_mix_monthly IS 'The segment mix per property and month of stay: segment_mix added up over the nights of each month (ADR and shares computed again from the sums, not averaged). See docs/tables-and-reporting.md.';
COMMENT ON COLUMN segment_mix_monthly.property_id IS 'Provider property id.';
COMMENT ON COLUMN segment_mix_monthly.property_name IS 'Property name (content).';
COMMENT ON COLUMN segment_mix_monthly.month IS 'First day of the month of the nights.';
COMMENT ON COLUMN segment_mix_monthly.market_code IS 'Market segment code of the PMS; NULL: none.';
COMMENT ON COLUMN segment_mix_monthly.source_of_business IS 'Source of business code of the PMS; NULL: none.';
COMMENT ON COLUMN segment_mix_monthly.currency_code IS 'Currency of the amounts of this row. Never add amounts of different currencies.';
COMMENT ON COLUMN segment_mix_monthly.room_nights IS 'Room nights of the month (segment_mix.room_nights added up).';
COMMENT ON COLUMN segment_mix_monthly.complimentary_nights IS 'Of room_nights, those at a zero rate.';
COMMENT ON COLUMN segment_mix_monthly.room_revenue_gross IS 'Room revenue after tax of the month.';
COMMENT ON COLUMN segment_mix_monthly.adr_gross IS 'room_revenue_gross / paid room nights of the month, 2 decimals.';
COMMENT ON COLUMN segment_mix_monthly.guests IS 'Guest nights: guests of each room night, added up over the month.';
COMMENT ON COLUMN segment_mix_monthly.bookings IS 'Integration-storage bookings with a room night in the month (each counted once).';
COMMENT ON COLUMN segment_mix_monthly.share_of_room_nights IS 'room_nights / the property''s room nights of the month, 0 to 1, 4 decimals.';
COMMENT ON COLUMN segment_mix_monthly.share_of_room_revenue IS 'room_revenue_gross / the property''s room revenue of the month in this currency, 0 to 1, 4 decimals.';

-- ------------------------------------------------------------------ block_pickup
-- Group blocks: per block, night and room type, what was blocked against what was realised
-- (picked up), and what the cut-off releases. Cancelled blocks hold nothing and are left out.
CREATE VIEW block_pickup AS
SELECT d.property_id,
       c.property_name,
       d.inventory_block_id,
       blk.pms_side_code AS block_code,
       blk.block_status,
       d.stay_date,
       d.stay_date - c.today AS days_from_today,
       d.room_type_code,
       d.blocked_count AS blocked,
       d.realized_count AS realized,
       round(100.0 * d.realized_count / NULLIF(d.blocked_count, 0), 1) AS pickup_percent,
       u.unsold,
       d.cutoff_date,
       d.cutoff_date - c.today AS days_to_cutoff,
       r.released,
       CASE WHEN r.released THEN u.unsold ELSE 0 END AS rooms_released,
       CASE WHEN r.released THEN 0 ELSE u.unsold END AS rooms_held,
       bk.booked_nights,
       d.one_adult_price,
       d.services_price,
       d.currency_code
FROM inventory_block_days d
JOIN inventory_blocks blk ON blk.property_id = d.property_id AND blk.inventory_block_id = d.inventory_block_id
LEFT JOIN property_clock c ON c.property_id = d.property_id
-- Unsold: blocked less realised, never below 0 (a block oversold by the PMS has nothing unsold);
-- NULL when realised is not tracked (GREATEST alone would take a NULL for 0).
CROSS JOIN LATERAL (SELECT CASE WHEN d.realized_count IS NOT NULL THEN GREATEST(d.blocked_count - d.realized_count, 0) END AS unsold) u
-- Released: the cut-off date has passed ("after which unsold rooms are released"); without a cut-off, nothing is released.
CROSS JOIN LATERAL (SELECT COALESCE(d.cutoff_date < c.today, false) AS released) r
-- The mirror's own count: nights of storage bookings taken from the block (by its code), by index.
CROSS JOIN LATERAL (
  SELECT count(*) AS booked_nights
  FROM integration_storage_booking_nights n
  JOIN integration_storage_bookings sb ON sb.property_id = n.property_id AND sb.booking_id = n.booking_id
  WHERE n.property_id = d.property_id AND n.stay_date = d.stay_date AND n.inventory_block_code = blk.pms_side_code
    AND n.room_type_code IS NOT DISTINCT FROM d.room_type_code
    AND sb.status IS DISTINCT FROM 'Cancelled' AND sb.status IS DISTINCT FROM 'Waitlisted'
) bk
WHERE blk.block_status IS DISTINCT FROM 'Cancelled';
COMMENT ON VIEW block_pickup IS 'Group (inventory) block pickup per block, night and room type: rooms blocked against realised (picked up), what is still unsold, and what the cut-off releases (unsold rooms whose cut-off date has passed) or will release (rooms_held, on the day after cutoff_date). Cancelled blocks are left out. See docs/tables-and-reporting.md.';
COMMENT ON COLUMN block_pickup.property_id IS 'Provider property id.';
COMMENT ON COLUMN block_pickup.property_name IS 'Property name (content).';
COMMENT ON COLUMN block_pickup.inventory_block_id IS 'Integration-storage block id (inventory_blocks).';
COMMENT ON COLUMN block_pickup.block_code IS 'The block''s code in the PMS (e.g. GRP-2026-1): the code the nights of a booking taken from it carry (integration_storage_booking_nights.inventory_block_code).';
COMMENT ON COLUMN block_pickup.block_status IS 'Inquiry, Active, Unknown (or a newer value).';
COMMENT ON COLUMN block_pickup.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN block_pickup.days_from_today IS 'stay_date minus the property''s local today.';
COMMENT ON COLUMN block_pickup.room_type_code IS 'Room type code of the PMS.';
COMMENT ON COLUMN block_pickup.blocked IS 'Rooms blocked (allocated) for the night.';
COMMENT ON COLUMN block_pickup.realized IS 'Rooms realised (picked up: booked from the block) for the night; NULL when the PMS does not track it.';
COMMENT ON COLUMN block_pickup.pickup_percent IS '100 × realized / blocked, 1 decimal; NULL when either is unknown or nothing is blocked.';
COMMENT ON COLUMN block_pickup.unsold IS 'blocked - realized, at least 0; NULL when realized is unknown.';
COMMENT ON COLUMN block_pickup.cutoff_date IS 'Cut-off date: rooms unsold then are released to general inventory after it; NULL when none is set.';
COMMENT ON COLUMN block_pickup.days_to_cutoff IS 'cutoff_date minus the property''s local today: negative once it has passed.';
COMMENT ON COLUMN block_pickup.released IS 'True once the cut-off date has passed (cutoff_date before today); false before it or without a cut-off.';
COMMENT ON COLUMN block_pickup.rooms_released IS 'Unsold rooms the cut-off released (once released); 0 before it; NULL when realized is unknown and the cut-off has passed.';
COMMENT ON COLUMN block_pickup.rooms_held IS 'Unsold rooms still held for the group (before the cut-off has passed): released the day after cutoff_date if still unsold; 0 once released; NULL when realized is unknown and the cut-off has not passed.';
COMMENT ON COLUMN block_pickup.booked_nights IS 'The mirror''s own count: room nights of integration-storage bookings (not cancelled or waitlisted) taken from this block (their inventory_block_code is block_code) that night in this room type. Where the PMS does not track realized, the pickup the mirror has seen; elsewhere a check of it (bookings no event announced are not counted).';
COMMENT ON COLUMN block_pickup.one_adult_price IS 'Price per room for one adult, as the block gives it.';
COMMENT ON COLUMN block_pickup.services_price IS 'Price of the additional services per room, as given.';
COMMENT ON COLUMN block_pickup.currency_code IS 'Currency of the prices.';

-- ------------------------------------------------------------------ daily_kpis_by_room_type

-- The PMS counts rooms by its own room type codes (room_type_inventory_days); the mirror's
-- revenue is by content room type (room_nights). pms_room_type_codes pairs them, learnt from the
-- integration-storage bookings; a content room type paired with two codes counts under the code
-- of more stays (then the first code), so that no night is counted twice.
CREATE VIEW daily_kpis_by_room_type AS
WITH code_of AS (
  SELECT DISTINCT ON (property_id, room_type_id) property_id, room_type_id, room_type_code
  FROM pms_room_type_codes
  ORDER BY property_id, room_type_id, room_stays DESC, room_type_code
), booked AS (
  SELECT n.property_id, co.room_type_code, n.stay_date, n.currency_code,
         count(*) AS room_nights_booked,
         count(*) FILTER (WHERE n.is_complimentary) AS complimentary_rooms,
         sum(n.net_amount) AS room_revenue_net,
         sum(n.gross_amount) AS room_revenue_gross
  FROM room_nights n
  JOIN code_of co ON co.property_id = n.property_id AND co.room_type_id = n.room_type_id
  WHERE NOT n.is_cancelled
  GROUP BY n.property_id, co.room_type_code, n.stay_date, n.currency_code
)
SELECT i.property_id,
       c.property_name,
       i.stay_date,
       i.stay_date - c.today AS days_from_today,
       i.room_type_code,
       names.room_type_ids,
       names.room_type_names,
       COALESCE(b.currency_code, p.currency) AS currency_code,
       i.physical_room_count AS rooms_total,
       i.out_of_order_room_count AS rooms_out_of_order,
       i.physical_room_count - i.out_of_order_room_count AS rooms_available,
       i.sold_room_count AS rooms_sold,
       i.available_room_count AS rooms_free,
       round(i.sold_room_count / NULLIF(i.physical_room_count - i.out_of_order_room_count, 0)::numeric, 4) AS occupancy,
       COALESCE(b.room_nights_booked, 0) AS room_nights_booked,
       COALESCE(b.complimentary_rooms, 0) AS complimentary_rooms,
       COALESCE(b.room_revenue_net, 0) AS room_revenue_net,
       COALESCE(b.room_revenue_gross, 0) AS room_revenue_gross,
       round(b.room_revenue_net / NULLIF(b.room_nights_booked - b.complimentary_rooms, 0), 2) AS adr_net,
       round(b.room_revenue_gross / NULLIF(b.room_nights_booked - b.complimentary_rooms, 0), 2) AS adr_gross,
       round(COALESCE(b.room_revenue_net, 0) / NULLIF(i.physical_room_count - i.out_of_order_room_count, 0), 2) AS revpar_net,
       round(COALESCE(b.room_revenue_gross, 0) / NULLIF(i.physical_room_count - i.out_of_order_room_count, 0), 2) AS revpar_gross,
       i.refreshed_at
FROM room_type_inventory_days i
LEFT JOIN booked b ON b.property_id = i.property_id AND b.room_type_code = i.room_type_code AND b.stay_date = i.stay_date
LEFT JOIN property_clock c ON c.property_id = i.property_id
LEFT JOIN properties p ON p.property_id = i.property_id
LEFT JOIN LATERAL (
  SELECT array_agg(co.room_type_id ORDER BY co.room_type_id) AS room_type_ids,
         string_agg(rt.name, ', ' ORDER BY rt.name) AS room_type_names
  FROM code_of co
  LEFT JOIN room_types rt ON rt.property_id = co.property_id AND rt.room_type_id = co.room_type_id
  WHERE co.property_id = i.property_id AND co.room_type_code = i.room_type_code
) names ON true;
COMMENT ON VIEW daily_kpis_by_room_type IS 'daily_kpis by PMS room type: per property, night, room type code and currency, the rooms of the type, out of order, available (rooms minus out of order), sold and free as the PMS counts them (room_type_inventory_days), occupancy, and the mirror''s booked room-nights, room revenue, ADR and RevPAR of the content room types paired with the code (pms_room_type_codes). Nights of the refreshed horizon only. A night with bookings in two currencies has two rows, each with the PMS counts.';
COMMENT ON COLUMN daily_kpis_by_room_type.property_id IS 'Provider property id.';
COMMENT ON COLUMN daily_kpis_by_room_type.property_name IS 'Property name (content).';
COMMENT ON COLUMN daily_kpis_by_room_type.stay_date IS 'The night (property-local date).';
COMMENT ON COLUMN daily_kpis_by_room_type.days_from_today IS 'stay_date minus the property''s local today: 0 tonight, 1 tomorrow, -1 last night.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_type_code IS 'PMS room type code.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_type_ids IS 'Content room types paired with the code (pms_room_type_codes); NULL while none is: the revenue columns are then 0.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_type_names IS 'Their names (content), comma-separated.';
COMMENT ON COLUMN daily_kpis_by_room_type.currency_code IS 'ISO 4217 currency of the amounts of this row (the property''s currency on a night without bookings).';
COMMENT ON COLUMN daily_kpis_by_room_type.rooms_total IS 'Rooms of the type (PMS physicalRoomCount).';
COMMENT ON COLUMN daily_kpis_by_room_type.rooms_out_of_order IS 'Rooms of the type out of order that night (PMS).';
COMMENT ON COLUMN daily_kpis_by_room_type.rooms_available IS 'Rooms available to sell that night: rooms_total - rooms_out_of_order (as daily_kpis.rooms_available).';
COMMENT ON COLUMN daily_kpis_by_room_type.rooms_sold IS 'Rooms sold that night as the PMS counts them: rooms_total - rooms_free - rooms_out_of_order (walk-ins and PMS-only stays included, zero-rate rooms too).';
COMMENT ON COLUMN daily_kpis_by_room_type.rooms_free IS 'Rooms still free to book (PMS availableRoomCount).';
COMMENT ON COLUMN daily_kpis_by_room_type.occupancy IS 'rooms_sold / rooms_available, 0 to 1, 4 decimals.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_nights_booked IS 'Room-nights of the mirrored bookings (not cancelled) of the paired room types in this currency: what the revenue is of.';
COMMENT ON COLUMN daily_kpis_by_room_type.complimentary_rooms IS 'Of room_nights_booked, those at a zero rate.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_revenue_net IS 'Room revenue before tax of those nights.';
COMMENT ON COLUMN daily_kpis_by_room_type.room_revenue_gross IS 'Room revenue after tax of those nights.';
COMMENT ON COLUMN daily_kpis_by_room_type.adr_net IS 'Average daily rate before tax: room_revenue_net / paid booked nights (room_nights_booked - complimentary_rooms), 2 decimals; NULL without paid nights.';
COMMENT ON COLUMN daily_kpis_by_room_type.adr_gross IS 'Average daily rate after tax, likewise.';
COMMENT ON COLUMN daily_kpis_by_room_type.revpar_net IS 'Revenue per available room before tax: room_revenue_net / rooms_available, 2 decimals.';
COMMENT ON COLUMN daily_kpis_by_room_type.revpar_gross IS 'Revenue per available room after tax: room_revenue_gross / rooms_available, 2 decimals.';
COMMENT ON COLUMN daily_kpis_by_room_type.refreshed_at IS 'When the PMS counts of the night were read (UTC).';

-- ------------------------------------------------------------------ stay_units_reconciliation

CREATE VIEW stay_units_reconciliation AS
WITH plan_code AS (
  SELECT DISTINCT ON (property_id, rate_plan_id) property_id, rate_plan_id, rate_plan_code
  FROM pms_rate_plan_codes
  ORDER BY property_id, rate_plan_id, room_stays DESC, rate_plan_code
), mirrored AS (
  SELECT n.property_id, pc.rate_plan_code, date_trunc('month', n.stay_date)::date AS month, count(*) AS room_nights
  FROM room_nights n
  JOIN plan_code pc ON pc.property_id = n.property_id AND pc.rate_plan_id = n.rate_plan_id
  WHERE NOT n.is_cancelled
  GROUP BY n.property_id, pc.rate_plan_code, date_trunc('month', n.stay_date)::date
)
SELECT u.property_id,
       c.property_name,
       u.rate_plan_code,
       names.rate_plan_ids,
       names.rate_plan_names,
       u.month,
       p.stay_unit_kind,
       u.stay_units AS pms_stay_units,
       COALESCE(m.room_nights, 0) AS mirror_room_nights,
       u.stay_units - COALESCE(m.room_nights, 0) AS difference,
       u.stay_units = COALESCE(m.room_nights, 0) AS matches,
       u.read_at
FROM stay_units u
LEFT JOIN mirrored m ON m.property_id = u.property_id AND m.rate_plan_code = u.rate_plan_code AND m.month = u.month
LEFT JOIN property_clock c ON c.property_id = u.property_id
LEFT JOIN properties p ON p.property_id = u.property_id
LEFT JOIN LATERAL (
  SELECT array_agg(pc.rate_plan_id ORDER BY pc.rate_plan_id) AS rate_plan_ids,
         string_agg(rp.name, ', ' ORDER BY rp.name) AS rate_plan_names
  FROM plan_code pc
  LEFT JOIN rate_plans rp ON rp.property_id = pc.property_id AND rp.rate_plan_id = pc.rate_plan_id
  WHERE pc.property_id = u.property_id AND pc.rate_plan_code = u.rate_plan_code
) names ON true;
COMMENT ON VIEW stay_units_reconciliation IS 'Production by rate plan, reconciled: per property, PMS rate plan code and month, the stay units the PMS counts (stay_units) against the room-nights of the mirrored bookings (not cancelled) of the content rate plans paired with the code (pms_rate_plan_codes). A difference is what one side holds and the other not: PMS-only stays (walk-ins), bookings not mirrored yet, a rate plan not paired, or a property whose stay unit is the day.';
COMMENT ON COLUMN stay_units_reconciliation.property_id IS 'Provider property id.';
COMMENT ON COLUMN stay_units_reconciliation.property_name IS 'Property name (content).';
COMMENT ON COLUMN stay_units_reconciliation.rate_plan_code IS 'PMS rate plan code.';
COMMENT ON COLUMN stay_units_reconciliation.rate_plan_ids IS 'Content rate plans paired with the code; NULL while none is.';
COMMENT ON COLUMN stay_units_reconciliation.rate_plan_names IS 'Their names (content), comma-separated.';
COMMENT ON COLUMN stay_units_reconciliation.month IS 'First day of the month.';
COMMENT ON COLUMN stay_units_reconciliation.stay_unit_kind IS 'What the property sells by (content): NightRate, or DailyRate (the stay units are then days, not room-nights).';
COMMENT ON COLUMN stay_units_reconciliation.pms_stay_units IS 'Stay units of the rate plan in the month, as the PMS answered.';
COMMENT ON COLUMN stay_units_reconciliation.mirror_room_nights IS 'Room-nights of the mirrored bookings (not cancelled) of the paired rate plans in the month.';
COMMENT ON COLUMN stay_units_reconciliation.difference IS 'pms_stay_units - mirror_room_nights.';
COMMENT ON COLUMN stay_units_reconciliation.matches IS 'True when both sides agree.';
COMMENT ON COLUMN stay_units_reconciliation.read_at IS 'When the PMS was asked (UTC).';

-- ------------------------------------------------------------------ forecast

-- The pickup method (docs/tables-and-reporting.md, "Forecast"): a night's forecast is what is on
-- the books at as_of plus the average of what comparable nights picked up from the same lead time
-- to their own close. Comparable: the same weekday 7·w days earlier, for the `weeks` smallest w
-- whose night had closed by as_of (w from lead_days / 7 + 1 on), and not before the property's
-- first night with history (before it, an empty night is the mirror not knowing, not no demand).
-- A comparable night's pickup is measured from history: its books at its own close less its books
-- at as_of moved back by 7·w days (the same local wall time), so it is the pickup of exactly this
-- lead time. Everything is read per property (a LATERAL for each property_clock row), so a filter
-- on property_id reaches the history index; each night and each comparable night is one range of
-- it (90 nights and 8 weeks: 810 ranges a property). The limits: 366 nights, 52 weeks.
CREATE FUNCTION forecast_at(as_of timestamptz, horizon_days integer DEFAULT 90, weeks integer DEFAULT 8)
RETURNS TABLE (property_id text, property_name text, as_of_date date, stay_date date, lead_days integer, currency_code text,
               comparable_nights integer, comparable_first date, comparable_last date,
               room_nights_on_the_books bigint, room_nights_pickup numeric, room_nights_forecast numeric,
               room_revenue_net_on_the_books numeric, room_revenue_net_pickup numeric, room_revenue_net_forecast numeric,
               room_revenue_gross_on_the_books numeric, room_revenue_gross_pickup numeric, room_revenue_gross_forecast numeric)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
  SELECT k.property_id, k.property_name, t.today, t.today + l.lead, l.lead,
         COALESCE(x.currency_code, k.property_currency),
         cn.nights, cn.first_night, cn.last_night,
         COALESCE(x.otb_rooms, 0), p.rooms,
         round(greatest(0, COALESCE(x.otb_rooms, 0) + COALESCE(p.rooms, 0)), 2),
         COALESCE(x.otb_net, 0), p.net,
         round(greatest(0, COALESCE(x.otb_net, 0) + COALESCE(p.net, 0)), 2),
         COALESCE(x.otb_gross, 0), p.gross,
         round(greatest(0, COALESCE(x.otb_gross, 0) + COALESCE(p.gross, 0)), 2)
    FROM property_clock k
    -- The property's zone, local moment and date at as_of, and its first night with history (one
    -- index probe), computed once (OFFSET 0): the zone is a lookup in time_zone_names, which the
    -- comparisons below would otherwise repeat for every row they read.
    CROSS JOIN LATERAL (
      SELECT k.time_zone AS zone,
             as_of AT TIME ZONE k.time_zone AS local_as_of,
             (as_of AT TIME ZONE k.time_zone)::date AS today,
             (SELECT min(h.stay_date) FROM booking_night_history h WHERE h.property_id = k.property_id) AS history_from
      OFFSET 0) t
    -- Constant series filtered, not series of the parameters: their estimated sizes (1,000 rows
    -- each) made the plan's cost seem high enough for JIT compilation, most of a second.
    CROSS JOIN generate_series(0, 365) AS l(lead)
    -- The comparable nights: how many, the first and the last.
    CROSS JOIN LATERAL (
      SELECT count(*)::integer AS nights, min(c.night) AS first_night, max(c.night) AS last_night
        FROM (SELECT t.today + l.lead - 7 * w AS night FROM generate_series(1, 105) AS w
               WHERE w > l.lead / 7 AND w <= l.lead / 7 + least(weeks, 52)) c
       WHERE c.night >= t.history_from
    ) cn
    -- Per currency: the night's books at as_of, and the comparable nights' pickup added up (each
    -- row valid at a comparable night's close counts +1, each valid at its earlier moment -1).
    LEFT JOIN LATERAL (
      SELECT r.currency_code,
             sum(r.otb) AS otb_rooms, sum(r.otb * r.net_amount) AS otb_net, sum(r.otb * r.gross_amount) AS otb_gross,
             sum(r.picked) AS pickup_rooms, sum(r.picked * r.net_amount) AS pickup_net, sum(r.picked * r.gross_amount) AS pickup_gross
        FROM (
          SELECT h.currency_code, h.net_amount, h.gross_amount, 1 AS otb, 0 AS picked
            FROM booking_night_history h
           WHERE h.property_id = k.property_id AND h.stay_date = t.today + l.lead
             AND h.valid_from <= as_of AND (h.valid_to IS NULL OR h.valid_to > as_of)
          UNION ALL
          SELECT h.currency_code, h.net_amount, h.gross_amount, 0,
                 (h.valid_to IS NULL OR h.valid_to > m.close_at)::integer - (h.valid_from <= m.then_at)::integer
            FROM generate_series(1, 105) AS w
           CROSS JOIN LATERAL (
             SELECT t.today + l.lead - 7 * w AS night,
                    (t.local_as_of - make_interval(days => 7 * w)) AT TIME ZONE t.zone AS then_at,
                    (t.today + l.lead - 7 * w + 1)::timestamp AT TIME ZONE t.zone AS close_at
             OFFSET 0) m
            JOIN booking_night_history h
              ON h.property_id = k.property_id AND h.stay_date = m.night
             AND h.valid_from <= m.close_at AND (h.valid_to IS NULL OR h.valid_to > m.then_at)
           WHERE w > l.lead / 7 AND w <= l.lead / 7 + least(weeks, 52) AND m.night >= t.history_from
        ) r
       GROUP BY r.currency_code
    ) x ON true
    -- The average pickup: NULL without a comparable night (the forecast is then the books alone).
    CROSS JOIN LATERAL (
      SELECT round(COALESCE(x.pickup_rooms, 0)::numeric / NULLIF(cn.nights, 0), 2) AS rooms,
             round(COALESCE(x.pickup_net, 0) / NULLIF(cn.nights, 0), 2) AS net,
             round(COALESCE(x.pickup_gross, 0) / NULLIF(cn.nights, 0), 2) AS gross
    ) p
   WHERE l.lead < horizon_days;
END;
COMMENT ON FUNCTION forecast_at(timestamptz, integer, integer) IS 'The forecast by the pickup method as it would have been made at as_of: for each property and each of the horizon_days nights from its local date at as_of (at most 366), rooms and room revenue on the books at as_of plus the average pickup, from the same lead time to the night''s close, of the `weeks` (at most 52) latest same-weekday nights already closed at as_of. reporting.forecast is forecast_at(now(), 90); an earlier as_of backtests the method on the mirror''s own history. Filter it like a table: SELECT * FROM reporting.forecast_at(''2026-03-01 08:00+00'', 30) WHERE property_id = ''500100''.';

CREATE VIEW forecast AS
SELECT f.* FROM forecast_at(now(), 90) f;
COMMENT ON VIEW forecast IS 'What the books will be: for each property and each of the next 90 nights (property-local dates, tonight first), rooms sold and room revenue forecast by the pickup method, with its parts: on the books now, plus the average pickup from this lead time to the night itself over the last 8 same-weekday nights already past (each measured from booking history), per currency. The same SQL at an earlier moment: forecast_at(as_of, horizon_days, weeks).';
COMMENT ON COLUMN forecast.property_id IS 'Provider property id.';
COMMENT ON COLUMN forecast.property_name IS 'Property name (content).';
COMMENT ON COLUMN forecast.as_of_date IS 'The property''s local date when the forecast is made (today in this view).';
COMMENT ON COLUMN forecast.stay_date IS 'The night forecast (property-local date).';
COMMENT ON COLUMN forecast.lead_days IS 'stay_date - as_of_date: 0 tonight.';
COMMENT ON COLUMN forecast.currency_code IS 'ISO 4217 currency of the amounts of this row (the property''s currency when nothing is booked).';
COMMENT ON COLUMN forecast.comparable_nights IS 'How many comparable nights the average pickup is over: the same weekday 7, 14, ... days earlier, the 8 latest already past, none before the property''s first night with history. 0: no pickup, the forecast is the books alone.';
COMMENT ON COLUMN forecast.comparable_first IS 'The earliest comparable night used.';
COMMENT ON COLUMN forecast.comparable_last IS 'The latest comparable night used.';
COMMENT ON COLUMN forecast.room_nights_on_the_books IS 'Room-nights of the night on the books now (on_the_books).';
COMMENT ON COLUMN forecast.room_nights_pickup IS 'Average room-nights the comparable nights gained from as many days before them to their close (cancellations taken away), 2 decimals; NULL without comparable nights.';
COMMENT ON COLUMN forecast.room_nights_forecast IS 'room_nights_on_the_books + room_nights_pickup, never below 0: the rooms the night is expected to sell. Not capped at the rooms available (compare with daily_kpis.rooms_available).';
COMMENT ON COLUMN forecast.room_revenue_net_on_the_books IS 'Room revenue before tax on the books now.';
COMMENT ON COLUMN forecast.room_revenue_net_pickup IS 'Average room revenue before tax the comparable nights gained from this lead time to their close (re-prices and cancellations included), 2 decimals.';
COMMENT ON COLUMN forecast.room_revenue_net_forecast IS 'room_revenue_net_on_the_books + room_revenue_net_pickup, never below 0.';
COMMENT ON COLUMN forecast.room_revenue_gross_on_the_books IS 'Room revenue after tax on the books now.';
COMMENT ON COLUMN forecast.room_revenue_gross_pickup IS 'Average room revenue after tax the comparable nights gained from this lead time to their close, 2 decimals.';
COMMENT ON COLUMN forecast.room_revenue_gross_forecast IS 'room_revenue_gross_on_the_books + room_revenue_gross_pickup, never below 0.';
