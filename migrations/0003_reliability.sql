-- Reliability: the lease epoch that fences every write, typed states (CHECK constraints that
-- mirror the const unions in src/db/states.ts), error bookkeeping per cursor, refetch on a
-- growing backoff for parked detail fetches, runs that know their process, and a quarantine
-- that keeps one row per entity and reason.

CREATE TABLE sync_lease (
  name         text        PRIMARY KEY,
  epoch        bigint      NOT NULL,
  holder       text        NOT NULL,
  acquired_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE sync_lease IS 'The writer lease of this schema. The process holding the schema''s advisory lock bumps epoch when it takes the lease; every write transaction checks the epoch it holds (FOR SHARE), so a process that lost the lease cannot write after another took it.';
COMMENT ON COLUMN sync_lease.name IS 'Always ''writer'': one lease per schema.';
COMMENT ON COLUMN sync_lease.epoch IS 'Incremented each time a process takes the lease.';
COMMENT ON COLUMN sync_lease.holder IS 'Who took it last: host name and process id.';
COMMENT ON COLUMN sync_lease.acquired_at IS 'When the lease was last taken (UTC).';

ALTER TABLE sync_cursors
  ADD COLUMN error_since timestamptz,
  ADD CONSTRAINT sync_cursors_state_check CHECK (state IN ('active', 'retrying', 'failing', 'token_lost'));
COMMENT ON COLUMN sync_cursors.state IS 'active; retrying (a transient failure, e.g. the provider is unreachable: retried with backoff); failing (a permanent error such as HTTP 403: see last_error; rechecked rarely); token_lost (the provider rejected the cursor: restart with --recover).';
COMMENT ON COLUMN sync_cursors.error_since IS 'When the current retrying or failing state began (UTC); NULL when active.';

ALTER TABLE booking_detail_queue
  ADD CONSTRAINT booking_detail_queue_state_check CHECK (state IN ('pending', 'not_found', 'quarantined'));
DROP INDEX booking_detail_queue_drain;
CREATE INDEX booking_detail_queue_drain ON booking_detail_queue (priority, wanted_modified_at DESC);
CREATE INDEX booking_detail_queue_due ON booking_detail_queue (next_attempt_at);
COMMENT ON COLUMN booking_detail_queue.state IS 'pending (to fetch, possibly after a backoff); not_found (the provider answered 404 several times); quarantined (the payload failed validation). Every state is fetched again when next_attempt_at has passed, on a growing backoff, and at once when the booking changes.';
COMMENT ON COLUMN booking_detail_queue.attempts IS 'Fetch attempts that did not store the booking since the last enqueue.';

ALTER TABLE sync_runs
  ADD COLUMN host text,
  ADD COLUMN pid integer,
  ADD CONSTRAINT sync_runs_outcome_check CHECK (outcome IN ('ok', 'failed', 'token_lost', 'stopped', 'killed', 'content_failed', 'refresh_failed'));
COMMENT ON COLUMN sync_runs.outcome IS 'ok; failed (see error); token_lost; stopped (by a signal); killed (the process or its database session died without closing the run: set by the next start); content_failed (the streams caught up, the content refresh failed); refresh_failed (the streams caught up, another refresh failed: PMS rooms, daily occupancy). NULL while running.';
COMMENT ON COLUMN sync_runs.host IS 'Host name of the process.';
COMMENT ON COLUMN sync_runs.pid IS 'Process id on that host.';

ALTER TABLE content_refreshes
  ADD CONSTRAINT content_refreshes_outcome_check CHECK (outcome IN ('ok', 'failed', 'stopped', 'killed'));

ALTER TABLE quarantine
  ADD COLUMN reason_hash text,
  ADD COLUMN occurrences integer NOT NULL DEFAULT 1,
  ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now();
UPDATE quarantine SET reason_hash = md5(reason), last_seen_at = received_at;
-- Keep the newest row of each entity and reason, counting the others into it.
WITH ranked AS (
  SELECT id, count(*) OVER w AS n,
         row_number() OVER (w ORDER BY received_at DESC, id DESC) AS rn,
         min(received_at) OVER w AS first_seen
  FROM quarantine
  WINDOW w AS (PARTITION BY stream, coalesce(property_id, ''), coalesce(entity_key, ''), reason_hash)
)
UPDATE quarantine q SET occurrences = r.n, last_seen_at = q.received_at, received_at = r.first_seen
FROM ranked r WHERE r.id = q.id AND r.rn = 1;
DELETE FROM quarantine q USING (
  SELECT id, row_number() OVER (PARTITION BY stream, coalesce(property_id, ''), coalesce(entity_key, ''), reason_hash
                                ORDER BY last_seen_at DESC, id DESC) AS rn
  FROM quarantine) r
WHERE r.id = q.id AND r.rn > 1;
ALTER TABLE quarantine ALTER COLUMN reason_hash SET NOT NULL;
CREATE UNIQUE INDEX quarantine_once ON quarantine (stream, coalesce(property_id, ''), coalesce(entity_key, ''), reason_hash);
COMMENT ON TABLE quarantine IS 'Provider payloads that failed validation, with the reason and the body as received, one row per entity and reason (a repeat counts in occurrences). The sync went on without them; they are fetched again on a growing backoff.';
COMMENT ON COLUMN quarantine.received_at IS 'When this entity first failed for this reason (UTC).';
COMMENT ON COLUMN quarantine.reason_hash IS 'md5 of reason: with stream, property and entity, the row''s identity.';
COMMENT ON COLUMN quarantine.occurrences IS 'How many times this entity failed for this reason.';
COMMENT ON COLUMN quarantine.last_seen_at IS 'When it last failed for this reason (UTC); raw_body is that payload.';
