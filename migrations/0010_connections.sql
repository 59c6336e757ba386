-- API connections: one staysync follows several, each with its own credentials, budget and
-- properties. A property belongs to one connection; the bookkeeping rows say which, so that
-- each connection's streams drain their own queues, `status` and /metrics report per
-- connection, and a property handed to another connection moves with its rows (adopted
-- when that connection starts following it).
--
-- The column's default is the connection of the writing transaction: every write of a
-- connection's streams starts with the lease fence, which sets `staysync.connection` for the
-- transaction (set_config(..., true)). Writes outside a connection (rebuild, quarantine retry,
-- a staysync older than this migration) get 'default', the name of the single connection
-- defined by STAYSYNC_CLIENT_ID/SECRET.

ALTER TABLE sync_cursors
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN sync_cursors.connection IS 'The API connection that follows this property (its name in the configuration; ''default'' for STAYSYNC_CLIENT_ID/SECRET).';
CREATE INDEX sync_cursors_connection ON sync_cursors (connection);

ALTER TABLE booking_detail_queue
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN booking_detail_queue.connection IS 'The API connection whose budget fetches these details.';
DROP INDEX booking_detail_queue_drain;
DROP INDEX booking_detail_queue_due;
CREATE INDEX booking_detail_queue_drain ON booking_detail_queue (connection, priority, wanted_modified_at DESC);
CREATE INDEX booking_detail_queue_due ON booking_detail_queue (connection, next_attempt_at);

ALTER TABLE pms_reservation_queue
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN pms_reservation_queue.connection IS 'The API connection whose budget fetches this reservation.';
DROP INDEX pms_reservation_queue_drain;
DROP INDEX pms_reservation_queue_due;
CREATE INDEX pms_reservation_queue_drain ON pms_reservation_queue (connection, priority, enqueued_at);
CREATE INDEX pms_reservation_queue_due ON pms_reservation_queue (connection, next_attempt_at);

ALTER TABLE sync_runs
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON TABLE sync_runs IS 'One row per run of one API connection in a daemon or sync --once process: when it ran, how it ended, what it did.';
COMMENT ON COLUMN sync_runs.connection IS 'The API connection of the run.';

ALTER TABLE quarantine
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN quarantine.connection IS 'The API connection whose request brought the payload.';

ALTER TABLE properties
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN properties.connection IS 'The API connection whose content lists the property; a content refresh marks removed only the properties of its own connection.';

ALTER TABLE content_refreshes
  ADD COLUMN connection text NOT NULL DEFAULT coalesce(nullif(current_setting('staysync.connection', true), ''), 'default');
COMMENT ON COLUMN content_refreshes.connection IS 'The API connection whose content was read.';
