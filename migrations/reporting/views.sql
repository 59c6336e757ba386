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

CREATE FUNCTION known_time_zone(zone text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  IF zone IS NULL OR zone = '' THEN
    RETURN NULL;
  END IF;
  PERFORM now() AT TIME ZONE zone;
  RETURN zone;
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN NULL;
END
$$;
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
       t.tax_share AS tax_amount,
       r.price_before_tax + t.tax_share AS gross_amount,
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
LEFT JOIN pms_reservations pr ON pr.property_id = b.property_id AND pr.number = b.number
-- The provider gives taxes per room stay, not per night: each night gets a share of its stay's
-- taxes (price after tax minus price before tax) in proportion to its net price (evenly when the
-- stay's nights are all zero-rate). Shares are rounded cumulatively to the amounts' scale (at
-- least cents): a night's share is round(taxes x net of the nights up to it / net of the stay)
-- minus the same for the nights before it, so a stay's nightly shares add up to its taxes
-- exactly and its nightly gross amounts to its price after tax.
CROSS JOIN LATERAL (
  SELECT COALESCE(s.price_after_tax - s.price_before_tax, s.tax_amount, 0) AS stay_tax
) st
CROSS JOIN LATERAL (
  SELECT count(*) AS nights,
         count(*) FILTER (WHERE x.position <= r.position) AS nights_through,
         sum(x.price_before_tax) AS net_sum,
         COALESCE(sum(x.price_before_tax) FILTER (WHERE x.position <= r.position), 0) AS net_through,
         greatest(2, scale(st.stay_tax)) AS places
  FROM booking_daily_rates x
  WHERE x.property_id = r.property_id AND x.number = r.number AND x.stay_index = r.stay_index
) n
CROSS JOIN LATERAL (
  SELECT CASE
           WHEN n.net_sum <> 0 THEN
             round(st.stay_tax * n.net_through / n.net_sum, n.places)
             - round(st.stay_tax * (n.net_through - COALESCE(r.price_before_tax, 0)) / n.net_sum, n.places)
           ELSE
             round(st.stay_tax * n.nights_through / n.nights, n.places)
             - round(st.stay_tax * (n.nights_through - 1) / n.nights, n.places)
         END AS tax_share
) t;
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
       n.room_nights,
       n.room_revenue_net,
       n.room_revenue_net + tx.stay_taxes AS room_revenue_gross,
       b.price_before_tax AS total_net,
       b.price_after_tax AS total_gross,
       b.cancelled_at,
       (b.cancelled_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS cancelled_date,
       b.arrival_at::date - (b.cancelled_at AT TIME ZONE COALESCE(c.time_zone, 'UTC'))::date AS days_cancelled_before_arrival,
       b.cancellation_penalty
FROM bookings b
LEFT JOIN property_clock c ON c.property_id = b.property_id
LEFT JOIN pos_codes pc ON pc.code = COALESCE(b.source_code, b.source_type)
LEFT JOIN pms_reservations pr ON pr.property_id = b.property_id AND pr.number = b.number
CROSS JOIN LATERAL (
  SELECT count(*) AS room_nights, COALESCE(sum(x.price_before_tax), 0) AS room_revenue_net
  FROM booking_daily_rates x
  WHERE x.property_id = b.property_id AND x.number = b.number
) n
-- The taxes of the stays that have nights: what room_nights spreads over those nights.
CROSS JOIN LATERAL (
  SELECT COALESCE(sum(COALESCE(s.price_after_tax - s.price_before_tax, s.tax_amount, 0)), 0) AS stay_taxes
  FROM booking_room_stays s
  WHERE s.property_id = b.property_id AND s.number = b.number
    AND EXISTS (SELECT 1 FROM booking_daily_rates x
                WHERE x.property_id = s.property_id AND x.number = s.number AND x.stay_index = s.stay_index)
) tx;
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
COMMENT ON COLUMN booking_facts.room_nights IS 'Room-nights of the booking (its rows in room_nights).';
COMMENT ON COLUMN booking_facts.room_revenue_net IS 'Room revenue before tax: the sum of its nightly net amounts.';
COMMENT ON COLUMN booking_facts.room_revenue_gross IS 'Room revenue after tax: the sum of its nightly gross amounts.';
COMMENT ON COLUMN booking_facts.total_net IS 'Booking total before tax as sent: rooms, services and early/late charges, after discounts.';
COMMENT ON COLUMN booking_facts.total_gross IS 'Booking total after tax as sent.';
COMMENT ON COLUMN booking_facts.cancelled_at IS 'When the booking was cancelled (UTC); NULL when it is not.';
COMMENT ON COLUMN booking_facts.cancelled_date IS 'Property-local date of the cancellation.';
COMMENT ON COLUMN booking_facts.days_cancelled_before_arrival IS 'Days from cancelled_date to arrival_date.';
COMMENT ON COLUMN booking_facts.cancellation_penalty IS 'Cancellation penalty as sent, in the booking''s currency.';

-- ------------------------------------------------------------------ daily_kpis

CREATE VIEW daily_kpis AS
WITH days AS (
  SELECT n.property_id, n.stay_date, n.currency_code,
         count(*) AS rooms_sold,
         count(*) FILTER (WHERE n.is_complimentary) AS complimentary_rooms,
         sum(n.net_amount) AS room_revenue_net,
         sum(n.gross_amount) AS room_revenue_gross
  FROM room_nights n
  WHERE NOT n.is_cancelled
  GROUP BY n.property_id, n.stay_date, n.currency_code
  UNION ALL
  -- Nights the PMS statistics cover and no booking occupies: a row of zeros, so that averages
  -- over a period count the empty nights too.
  SELECT d.property_id, d.stay_date, COALESCE(d.currency_code, p.currency), 0, 0, 0, 0
  FROM daily_occupancy d
  LEFT JOIN properties p ON p.property_id = d.property_id
  WHERE NOT EXISTS (
    SELECT 1 FROM booking_daily_rates r
    JOIN bookings b ON b.property_id = r.property_id AND b.number = r.number
    WHERE r.property_id = d.property_id AND r.stay_date = d.stay_date AND b.status <> 'Cancelled')
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
LEFT JOIN (
  SELECT pr.property_id, count(*) AS rooms FROM pms_rooms pr WHERE pr.removed_at IS NULL GROUP BY pr.property_id
) listed ON listed.property_id = x.property_id
LEFT JOIN (
  SELECT DISTINCT ON (d2.property_id) d2.property_id, d2.property_room_count FROM daily_occupancy d2
  ORDER BY d2.property_id, d2.refreshed_at DESC, d2.stay_date DESC
) profile ON profile.property_id = x.property_id
CROSS JOIN LATERAL (
  SELECT CASE WHEN d.property_id IS NOT NULL THEN d.property_room_count - d.closed_room_count
              WHEN listed.rooms > 0 THEN listed.rooms
              ELSE profile.property_room_count END AS rooms_available,
         CASE WHEN d.property_id IS NOT NULL THEN 'daily_occupancy'
              WHEN listed.rooms > 0 THEN 'pms_rooms'
              WHEN profile.property_room_count IS NOT NULL THEN 'property_room_count' END AS source
) a;
COMMENT ON VIEW daily_kpis IS 'Daily KPIs per property, night and currency from the sold room-nights (room_nights, cancelled bookings left out): rooms sold, room revenue net (before tax) and gross (after tax), ADR, RevPAR, occupancy. A property with bookings in two currencies has two rows for a night; money is never added across them. Nights the PMS statistics cover without any booking have a row of zeros; other nights without bookings have no row.';
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
SELECT n.property_id,
       n.currency_code,
       n.booking_date,
       n.stay_date,
       n.stay_date - n.booking_date AS days_before_stay,
       count(*) FILTER (WHERE NOT n.is_cancelled) AS room_nights,
       COALESCE(sum(n.net_amount) FILTER (WHERE NOT n.is_cancelled), 0) AS room_revenue_net,
       COALESCE(sum(n.gross_amount) FILTER (WHERE NOT n.is_cancelled), 0) AS room_revenue_gross,
       count(*) FILTER (WHERE n.is_cancelled) AS cancelled_room_nights
FROM room_nights n
LEFT JOIN property_clock c ON c.property_id = n.property_id
WHERE n.stay_date >= COALESCE(c.today, (now() AT TIME ZONE 'UTC')::date)
GROUP BY n.property_id, n.currency_code, n.booking_date, n.stay_date;
COMMENT ON VIEW pickup IS 'Pickup for future nights (from the property''s local today on): room-nights and room revenue by the property-local date the bookings were made, per property, night and currency. Bookings since cancelled are not in room_nights and the revenue; they count in cancelled_room_nights on the date they were made. A booking changed after it was made counts with its current nights and prices.';
COMMENT ON COLUMN pickup.property_id IS 'Provider property id.';
COMMENT ON COLUMN pickup.currency_code IS 'ISO 4217 currency of the amounts of this row.';
COMMENT ON COLUMN pickup.booking_date IS 'Property-local date the bookings were made.';
COMMENT ON COLUMN pickup.stay_date IS 'The night (property-local date), today or later.';
COMMENT ON COLUMN pickup.days_before_stay IS 'stay_date minus booking_date.';
COMMENT ON COLUMN pickup.room_nights IS 'Room-nights of that night booked that day and still on the books (not cancelled).';
COMMENT ON COLUMN pickup.room_revenue_net IS 'Their room revenue before tax.';
COMMENT ON COLUMN pickup.room_revenue_gross IS 'Their room revenue after tax.';
COMMENT ON COLUMN pickup.cancelled_room_nights IS 'Room-nights of that night booked that day whose booking has been cancelled since.';

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
COMMENT ON COLUMN mirror_completeness.listing_state IS 'State of the booking list cursor: active, retrying, failing, token_lost (sync_cursors.state); NULL before the first page.';
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
