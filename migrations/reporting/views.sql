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
       round(avg(f.days_cancelled_before_arrival) FILTER (WHERE f.is_cancelled), 2) AS avg_days_cancelled_before_arrival
FROM booking_facts f
GROUP BY f.property_id, f.currency_code, f.channel_code, f.booking_date;
COMMENT ON VIEW channel_performance IS 'Bookings, cancellations, room-nights, room revenue and lead time per property, currency, channel and property-local booking date. Sum the *_sum and count columns over a period and divide for period averages (averages of averages are wrong).';
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
COMMENT ON COLUMN mirror_completeness.listing_state IS 'State of the booking list cursor: active, retrying, failing, token_lost, not_granted (sync_cursors.state); NULL before the first page.';
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
       d.refreshed_at AS provider_refreshed_at
FROM daily_occupancy d
LEFT JOIN property_clock c ON c.property_id = d.property_id
LEFT JOIN LATERAL (
  SELECT sum(f.rooms_sold) AS rooms_sold FROM nightly_facts f WHERE f.property_id = d.property_id AND f.stay_date = d.stay_date
) m ON true
LEFT JOIN nightly_facts r ON r.property_id = d.property_id AND r.stay_date = d.stay_date AND r.currency_code IS NOT DISTINCT FROM d.currency_code;
COMMENT ON VIEW reconciliation IS 'Trust: per property and night the PMS statistics cover (daily_occupancy), the rooms sold and room revenue the mirror holds next to the provider''s own figures, and the difference (mirror minus provider). A difference means rooms the booking list does not carry (a walk-in or a stay entered in the PMS only), a booking not fetched yet (see mirror_completeness), or a stay the PMS has changed (early departure, no-show, room moved) that the booking has not; room revenue differs also by what the PMS takes out (commissions) or puts in. See docs/history.md.';
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
COMMENT ON COLUMN reconciliation.provider_refreshed_at IS 'When the PMS statistics of the night were last read (UTC).';

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
LEFT JOIN LATERAL (
  SELECT sum(i.total) AS invoiced, count(*)::int AS invoices
  FROM pms_invoices i
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
COMMENT ON COLUMN receivables.invoiced IS 'Total of the reservation''s invoices in this currency (pms_invoices.total, tax included); NULL when none was read.';
COMMENT ON COLUMN receivables.invoices IS 'Invoices of the reservation in this currency.';
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
