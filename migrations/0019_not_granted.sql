-- API areas an API connection may not use: a hotel ticks the APIs of a connection in its
-- extranet, and the access token's api_accesses claim names them (src/provider/api-access.ts).
-- A property stream of an area the connection is not granted does not run and shows
-- `not_granted`, which is not a failure: it starts at an access token that grants the area.
ALTER TABLE sync_cursors DROP CONSTRAINT sync_cursors_state_check;
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_state_check CHECK (state IN ('active', 'retrying', 'failing', 'token_lost', 'not_granted'));
COMMENT ON COLUMN sync_cursors.state IS 'active; retrying (a transient failure, e.g. the provider is unreachable: retried with backoff); failing (a permanent error such as HTTP 403 of one property: see last_error; rechecked rarely); token_lost (the provider rejected the cursor: restart with --recover); not_granted (the API connection may not use this stream''s API area: see last_error; not a failure, it starts at an access token that grants the area).';
