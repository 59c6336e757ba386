-- A lost continueToken stops that property's booking list only (issue 36): the property
-- waits for a recovery (`staysync run --recover --property <id>`, or sync.autoRecover) while
-- the other properties, streams and connections go on. Its cursor state says what it needs:
-- `needs_recover` (it was `token_lost`). No connection stops for a lost token any more, so a
-- connection an earlier release left `token_lost` is free for any replica to take.
ALTER TABLE sync_cursors DROP CONSTRAINT sync_cursors_state_check;
UPDATE sync_cursors SET state = 'needs_recover' WHERE state = 'token_lost';
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_state_check CHECK (state IN ('active', 'retrying', 'failing', 'needs_recover', 'not_granted'));
COMMENT ON COLUMN sync_cursors.state IS 'active; retrying (a transient failure, e.g. the provider is unreachable: retried with backoff); failing (a permanent error such as HTTP 403 of one property: see last_error; rechecked rarely); needs_recover (the booking list''s continueToken is lost: see last_error; the property''s booking list waits for staysync run --recover --property <id>, or sync.autoRecover); not_granted (the API connection may not use this stream''s API area: see last_error; not a failure, it starts at an access token that grants the area).';

ALTER TABLE sync_connections DROP CONSTRAINT sync_connections_state_check;
UPDATE sync_connections SET state = 'waiting', reason = NULL, state_since = now() WHERE state = 'token_lost';
ALTER TABLE sync_connections
  ADD CONSTRAINT sync_connections_state_check CHECK (state IN ('waiting', 'starting', 'running', 'credentials_refused', 'failed', 'stopped'));
COMMENT ON COLUMN sync_connections.state IS 'waiting (no replica syncs it now); starting; running; credentials_refused (the provider refused its secret: tried again later, or when its file changes); failed (see reason); stopped. A lost continueToken stops a property, not its connection: see sync_cursors.state.';
