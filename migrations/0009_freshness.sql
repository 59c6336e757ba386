-- Freshness: how long a change took from the provider to the mirror. One row per fresh change
-- (a detail fetch of priority 0: found by polling a caught-up property, or announced by a change
-- event), written in the transaction of the booking's details, so the figures survive restarts
-- and are read by `status` and reporting.freshness. Rows older than a day are removed by the
-- writes of the same property: the table stays a day of changes at most.
CREATE TABLE change_lags (
  property_id  text        NOT NULL,
  number       text        NOT NULL,
  modified_at  timestamptz NOT NULL,
  written_at   timestamptz NOT NULL,
  PRIMARY KEY (property_id, number, modified_at)
);
CREATE INDEX change_lags_written ON change_lags (property_id, written_at);
COMMENT ON TABLE change_lags IS 'Fresh changes of the last 24 hours: per booking version fetched first (detail queue priority 0), when it was modified at the provider and when its details were written here. Lag = written_at - modified_at.';
COMMENT ON COLUMN change_lags.property_id IS 'Provider property id.';
COMMENT ON COLUMN change_lags.number IS 'Booking number.';
COMMENT ON COLUMN change_lags.modified_at IS 'The change: the summary''s modifiedDateTime that asked for the fetch (UTC, whole seconds as the provider sends it), or the details'' own when a change event asked.';
COMMENT ON COLUMN change_lags.written_at IS 'When the details of that version were written to bookings (UTC, this database''s clock, in the write''s transaction).';
