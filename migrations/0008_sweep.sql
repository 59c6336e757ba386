-- The reconciliation sweep (src/sync/booking-sweep.ts): every sync.sweep.everyMs each caught-up
-- property's booking list is read again from now - sync.sweep.lookbackMs, for writes the
-- provider made visible after the booking list's continueToken had passed their modification
-- time. The pass's own continueToken is in sync_cursors (stream booking_sweep); what the passes
-- found is here, one row per property, so that `status` and /metrics can show it.
CREATE TABLE booking_sweeps (
  property_id      text        PRIMARY KEY,
  watching_since   timestamptz NOT NULL,
  pass_started_at  timestamptz,
  pass_from        timestamptz,
  pass_pages       integer     NOT NULL DEFAULT 0,
  pass_summaries   integer     NOT NULL DEFAULT 0,
  pass_enqueued    integer     NOT NULL DEFAULT 0,
  pass_late        integer     NOT NULL DEFAULT 0,
  pass_restarts    integer     NOT NULL DEFAULT 0,
  last_started_at  timestamptz,
  last_finished_at timestamptz,
  last_from        timestamptz,
  last_pages       integer,
  last_summaries   integer,
  last_enqueued    integer,
  last_late        integer,
  last_restarts    integer,
  passes           bigint      NOT NULL DEFAULT 0,
  late_changes     bigint      NOT NULL DEFAULT 0
);
COMMENT ON TABLE booking_sweeps IS 'The reconciliation sweep of each property: the pass in progress and the last finished one. A sweep re-reads the booking list of the last sync.sweep.lookbackMs and fetches the details of what the mirror lacks (late-visible writes).';
COMMENT ON COLUMN booking_sweeps.property_id IS 'Provider property id.';
COMMENT ON COLUMN booking_sweeps.watching_since IS 'When the sweep first saw the property''s booking list caught up (UTC): the first pass is due sync.sweep.everyMs later, so a fresh full sync is not read again at once.';
COMMENT ON COLUMN booking_sweeps.pass_started_at IS 'Start of the pass in progress (UTC); NULL between passes. Its position is sync_cursors.cursor of stream booking_sweep: a restart resumes it.';
COMMENT ON COLUMN booking_sweeps.pass_from IS 'lastModification the pass in progress started from (UTC).';
COMMENT ON COLUMN booking_sweeps.pass_pages IS 'List pages the pass in progress has read.';
COMMENT ON COLUMN booking_sweeps.pass_summaries IS 'Booking summaries the pass in progress has read.';
COMMENT ON COLUMN booking_sweeps.pass_enqueued IS 'Detail fetches the pass in progress enqueued: versions newer than the stored details.';
COMMENT ON COLUMN booking_sweeps.pass_late IS 'Late changes the pass in progress found: summary versions the booking list had never shown (newer than booking_summaries, or bookings it lacks).';
COMMENT ON COLUMN booking_sweeps.pass_restarts IS 'Times the pass in progress started again from its lookback because the provider rejected its continueToken.';
COMMENT ON COLUMN booking_sweeps.last_started_at IS 'Start of the last finished pass (UTC); the next pass is due sync.sweep.everyMs after it. NULL: never swept.';
COMMENT ON COLUMN booking_sweeps.last_finished_at IS 'End of the last finished pass (UTC).';
COMMENT ON COLUMN booking_sweeps.last_from IS 'lastModification the last finished pass started from (UTC).';
COMMENT ON COLUMN booking_sweeps.last_pages IS 'List pages the last finished pass read.';
COMMENT ON COLUMN booking_sweeps.last_summaries IS 'Booking summaries the last finished pass read.';
COMMENT ON COLUMN booking_sweeps.last_enqueued IS 'Detail fetches the last finished pass enqueued (0 over an unchanged mirror: no detail call for what is stored).';
COMMENT ON COLUMN booking_sweeps.last_late IS 'Late changes the last finished pass found: summary versions the booking list had never shown.';
COMMENT ON COLUMN booking_sweeps.last_restarts IS 'Times the last finished pass started again because the provider rejected its continueToken.';
COMMENT ON COLUMN booking_sweeps.passes IS 'Passes finished since the property was first swept.';
COMMENT ON COLUMN booking_sweeps.late_changes IS 'Late changes found by all finished passes.';
