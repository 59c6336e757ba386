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

-- Replicas: several staysync processes (containers, machines) share the connections of one
-- schema. Each process registers itself and keeps a heartbeat; each connection is synced by
-- one replica at a time, which holds its lease: a row with the holder and an expiry that the
-- holder renews. A replica that dies stops renewing, and another takes the lease over once it
-- expired. Taking a lease increments its epoch, and every write of a connection checks the
-- epoch it holds (FOR SHARE), so a replica that lost a lease cannot write after another took
-- it, and the taking waits for its last writes to commit.
CREATE TABLE sync_replicas (
  replica_id    text        PRIMARY KEY,
  host          text        NOT NULL,
  pid           integer     NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT now(),
  heartbeat_at  timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz NOT NULL,
  command       text        NOT NULL DEFAULT 'run',
  CONSTRAINT sync_replicas_command_check CHECK (command IN ('run', 'sync --once'))
);
COMMENT ON TABLE sync_replicas IS 'The staysync processes syncing into this schema. A row is removed when its process stops cleanly; a process that died leaves a row whose expires_at has passed.';
COMMENT ON COLUMN sync_replicas.replica_id IS 'Random id of the process, new at each start.';
COMMENT ON COLUMN sync_replicas.host IS 'Host name (in a container: the container''s).';
COMMENT ON COLUMN sync_replicas.pid IS 'Process id on that host.';
COMMENT ON COLUMN sync_replicas.started_at IS 'When the process registered (UTC).';
COMMENT ON COLUMN sync_replicas.heartbeat_at IS 'Its last heartbeat (UTC).';
COMMENT ON COLUMN sync_replicas.expires_at IS 'Counted as alive until then (UTC); every heartbeat moves it on.';
COMMENT ON COLUMN sync_replicas.command IS 'run (a daemon: connections are balanced between these) or sync --once (it syncs the connections it could take, then leaves).';

CREATE TABLE sync_connections (
  connection        text        PRIMARY KEY,
  epoch             bigint      NOT NULL DEFAULT 0,
  replica_id        text,
  holder            text,
  lease_expires_at  timestamptz,
  acquired_at       timestamptz,
  state             text        NOT NULL DEFAULT 'waiting',
  reason            text,
  state_since       timestamptz NOT NULL DEFAULT now(),
  budget_ledger     jsonb,
  ledger_saved_at   timestamptz,
  CONSTRAINT sync_connections_state_check CHECK (state IN ('waiting', 'starting', 'running', 'credentials_refused', 'token_lost', 'failed', 'stopped'))
);
COMMENT ON TABLE sync_connections IS 'One row per API connection: which replica syncs it (its lease) and how it is doing.';
COMMENT ON COLUMN sync_connections.connection IS 'The connection''s name in the configuration.';
COMMENT ON COLUMN sync_connections.epoch IS 'Incremented each time a replica takes the lease.';
COMMENT ON COLUMN sync_connections.replica_id IS 'The replica holding the lease (sync_replicas.replica_id); NULL when free.';
COMMENT ON COLUMN sync_connections.holder IS 'Who took it last: host name and process id.';
COMMENT ON COLUMN sync_connections.lease_expires_at IS 'The lease is the holder''s until then (UTC); it renews it long before. Another replica may take it after.';
COMMENT ON COLUMN sync_connections.acquired_at IS 'When the holder took it (UTC).';
COMMENT ON COLUMN sync_connections.state IS 'waiting (no replica syncs it now); starting; running; credentials_refused (the provider refused its secret: tried again later, or when its file changes); token_lost (restart with --recover); failed (see reason); stopped.';
COMMENT ON COLUMN sync_connections.reason IS 'Why it is not running, when it is not.';
COMMENT ON COLUMN sync_connections.state_since IS 'When the current state began (UTC).';
COMMENT ON COLUMN sync_connections.budget_ledger IS 'The requests of the last replica still inside its budget windows, by scope, as ages in ms at ledger_saved_at: the replica that takes the connection over counts them, so that a handover never exceeds the connection''s budget.';
COMMENT ON COLUMN sync_connections.ledger_saved_at IS 'When budget_ledger was written (UTC), at a clean handover.';

-- The token endpoint's limit is per IP address: replicas that leave through one address
-- (one NAT, one machine) share it. Each token request of any replica is recorded here first,
-- and only sent while every window of the limit has room (token-gate.ts).
CREATE TABLE token_requests (
  egress  text        NOT NULL,
  sent_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX token_requests_window ON token_requests (egress, sent_at);
COMMENT ON TABLE token_requests IS 'Token requests of the last hour, by egress (the IP address they leave from, as configured by provider.egress): the shared budget of the token endpoint''s per-IP limit.';
COMMENT ON COLUMN token_requests.egress IS 'provider.egress (STAYSYNC_EGRESS): replicas with the same value share one token budget.';
COMMENT ON COLUMN token_requests.sent_at IS 'When the request was admitted (UTC, this database''s clock).';
