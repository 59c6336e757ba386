-- Occupancy as it stood, and commissions typed (issue 27, points 7 and 9).
--
-- Before: every refresh of the PMS statistics deleted and inserted the 731 nights of each
-- property's horizon (1,462 row writes every 3 hours a property), and kept only the last read.
-- Now a refresh writes a night only when its figures changed: daily_occupancy keeps the
-- current figures (as before: reports and the reconciliation read it unchanged), each change
-- opens a version in daily_occupancy_history (valid from the read that found it, until the read
-- that found it changed), and occupancy_refreshes records which nights the last refresh of each
-- property read (one row a property). reporting.occupancy_as_of(t) gives the PMS's figures as read at t.
--
-- The rows already mirrored become the first versions: valid from the time they were read.

CREATE TABLE daily_occupancy_history (
  property_id                        text        NOT NULL,
  stay_date                          date        NOT NULL,
  valid_from                         timestamptz NOT NULL,
  valid_to                           timestamptz,
  currency_code                      text,
  property_room_count                integer     NOT NULL,
  occupancy_rate                     numeric     NOT NULL,
  closed_room_count                  integer     NOT NULL,
  occupancy_room_count               integer     NOT NULL,
  complimentary_occupancy_room_count integer     NOT NULL,
  room_revenue                       numeric     NOT NULL,
  revenue                            numeric     NOT NULL,
  meal_revenue                       numeric     NOT NULL,
  arrival_count                      integer     NOT NULL,
  guest_count                        integer     NOT NULL,
  synced_at                          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, stay_date, valid_from),
  CHECK (valid_to IS NULL OR valid_to >= valid_from)
);
-- One open version a night: the current figures.
CREATE UNIQUE INDEX daily_occupancy_history_open ON daily_occupancy_history (property_id, stay_date) WHERE valid_to IS NULL;
COMMENT ON TABLE daily_occupancy_history IS 'Every version of the PMS statistics of each night (type 2 history, dbt snapshot column names): the figures as read from valid_from (the refresh that first read them) until valid_to (the refresh that read them changed, or no longer found the night); valid_to NULL for the figures read last, which are also in daily_occupancy. A refresh that finds a night unchanged writes nothing here. reporting.occupancy_as_of(t) reads it.';
COMMENT ON COLUMN daily_occupancy_history.property_id IS 'Provider property id.';
COMMENT ON COLUMN daily_occupancy_history.stay_date IS 'The night (property local date).';
COMMENT ON COLUMN daily_occupancy_history.valid_from IS 'When these figures were first read (UTC): the refresh of the night''s window that found them.';
COMMENT ON COLUMN daily_occupancy_history.valid_to IS 'When a refresh first read other figures for the night, or no longer found it (UTC, exclusive); NULL while they are the figures read last.';
COMMENT ON COLUMN daily_occupancy_history.currency_code IS 'ISO 4217 currency of the revenues.';
COMMENT ON COLUMN daily_occupancy_history.property_room_count IS 'Rooms of the property (its profile) in that answer.';
COMMENT ON COLUMN daily_occupancy_history.occupancy_rate IS 'Occupancy, 0.0 to 1.0, as the PMS computed it.';
COMMENT ON COLUMN daily_occupancy_history.closed_room_count IS 'Rooms out of order that night.';
COMMENT ON COLUMN daily_occupancy_history.occupancy_room_count IS 'Rooms occupied and paid (zero-rate rooms excluded).';
COMMENT ON COLUMN daily_occupancy_history.complimentary_occupancy_room_count IS 'Rooms occupied at a zero rate.';
COMMENT ON COLUMN daily_occupancy_history.room_revenue IS 'Room revenue: net of VAT, commissions and extra services.';
COMMENT ON COLUMN daily_occupancy_history.revenue IS 'Revenue of the day, gross (rooms, meals, other departments).';
COMMENT ON COLUMN daily_occupancy_history.meal_revenue IS 'Meal revenue of the day.';
COMMENT ON COLUMN daily_occupancy_history.arrival_count IS 'Check-ins on that date.';
COMMENT ON COLUMN daily_occupancy_history.guest_count IS 'Guests that night (adults and children).';
COMMENT ON COLUMN daily_occupancy_history.synced_at IS 'When staysync last wrote this row (UTC): the version''s start, then its end.';

CREATE TABLE occupancy_refreshes (
  property_id    text        PRIMARY KEY,
  started_at     timestamptz NOT NULL,
  read_at        timestamptz NOT NULL,
  first_date     date        NOT NULL,
  last_date      date        NOT NULL,
  nights         integer     NOT NULL,
  nights_changed integer     NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  CHECK (last_date >= first_date)
);
COMMENT ON TABLE occupancy_refreshes IS 'The last refresh of each property''s PMS statistics: which nights it read (first_date to last_date, growing window by window while it runs) and how many it found changed. One row per property, rewritten with each window (a night found unchanged writes nothing else): what tells, for a night whose figures did not change, that the PMS confirmed them (reporting.reconciliation.provider_refreshed_at).';
COMMENT ON COLUMN occupancy_refreshes.property_id IS 'Provider property id.';
COMMENT ON COLUMN occupancy_refreshes.started_at IS 'When the refresh started (UTC): every night it read was read at or after it.';
COMMENT ON COLUMN occupancy_refreshes.read_at IS 'When its last window so far was read (UTC).';
COMMENT ON COLUMN occupancy_refreshes.first_date IS 'First night it read (property local date).';
COMMENT ON COLUMN occupancy_refreshes.last_date IS 'Last night it read so far (inclusive).';
COMMENT ON COLUMN occupancy_refreshes.nights IS 'Nights it read so far.';
COMMENT ON COLUMN occupancy_refreshes.nights_changed IS 'Of those, the nights it found new, changed or gone: the rows it wrote to daily_occupancy.';
COMMENT ON COLUMN occupancy_refreshes.synced_at IS 'When staysync last wrote this row (UTC).';

-- The first versions: the rows as mirrored, valid from the time they were read.
INSERT INTO daily_occupancy_history (property_id, stay_date, valid_from, currency_code, property_room_count, occupancy_rate, closed_room_count,
                                     occupancy_room_count, complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue,
                                     arrival_count, guest_count)
SELECT property_id, stay_date, refreshed_at, currency_code, property_room_count, occupancy_rate, closed_room_count,
       occupancy_room_count, complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count
  FROM daily_occupancy;

COMMENT ON TABLE daily_occupancy IS 'Daily occupancy statistics of each property (PMS analytics) as read last: one row per property and date over the refreshed horizon. A refresh writes a night only when its figures changed (and then opens a version in daily_occupancy_history); occupancy_refreshes says which nights the last refresh read.';
COMMENT ON COLUMN daily_occupancy.refreshed_at IS 'When the figures of this row were first read (UTC): the refresh that found them new or changed. Later reads that found them unchanged write nothing here (see occupancy_refreshes).';
COMMENT ON COLUMN daily_occupancy.synced_at IS 'When staysync last wrote this row (UTC): the refresh that found its figures changed. A rebuild keeps it.';

-- ------------------------------------------------------------------ agent commission

-- The PMS reservation's agentCommission, typed whole: what reporting.channel_performance and
-- reporting.revenue_breakdown take off the revenue, and who computed it.
ALTER TABLE pms_reservations
  ADD COLUMN agent_commission_source text,
  ADD COLUMN agent_commission_discount numeric,
  ADD COLUMN agent_commission_currency text;
COMMENT ON COLUMN pms_reservations.agent_commission_percent IS 'Agent commission in percent, the percent the PMS derived the amount from: set only when agent_commission_source is Pms.';
COMMENT ON COLUMN pms_reservations.agent_commission_amount IS 'Agent commission amount applied to the reservation (agentCommission.amount.value), in agent_commission_currency; NULL when none.';
COMMENT ON COLUMN pms_reservations.agent_commission_source IS 'Who calculated the commission (agentCommission.calculationSource): Pms (from the agent company''s settings in the PMS) or Ota (by the OTA); a newer provider value as sent.';
COMMENT ON COLUMN pms_reservations.agent_commission_discount IS 'Discounts granted at the expense of the agent commission (agentCommission.discount.value).';
COMMENT ON COLUMN pms_reservations.agent_commission_currency IS 'Currency of the commission amount as sent (agentCommission.amount.currencyCode); NULL when it gives none (then the reservation''s currency).';

-- The reservations mirrored before: from raw, as the mapping now reads it (a number only when
-- the value is a JSON number or a numeric string, as the schema accepts).
UPDATE pms_reservations
   SET agent_commission_source = raw #>> '{agentCommission,calculationSource}',
       agent_commission_discount = CASE WHEN (raw #>> '{agentCommission,discount,value}') ~ '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
                                        THEN (raw #>> '{agentCommission,discount,value}')::numeric END,
       agent_commission_currency = raw #>> '{agentCommission,amount,currencyCode}'
 WHERE jsonb_typeof(raw -> 'agentCommission') = 'object';
