-- Stream names, like every state the database keeps, are a closed list held by a CHECK
-- constraint (src/store/states.ts has the same lists; test/integration/schema-drift.test.ts
-- compares them): a name outside it cannot be written by anyone.
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_stream_check CHECK (stream IN ('booking_summaries', 'booking_sweep', 'pms_reservations', 'daily_occupancy'));
ALTER TABLE quarantine
  ADD CONSTRAINT quarantine_stream_check CHECK (stream IN ('booking_summaries', 'booking_details', 'content', 'pms_reservations', 'pms_rooms', 'pms_guests', 'daily_occupancy', 'webhook_events', 'webhook_receiver'));
COMMENT ON COLUMN sync_cursors.stream IS 'Stream name: booking_summaries (the booking list), booking_sweep (its reconciliation sweep), pms_reservations (the PMS search), daily_occupancy.';
COMMENT ON COLUMN quarantine.stream IS 'Stream that received the payload: booking_summaries, booking_details, content, pms_reservations, pms_rooms, pms_guests, daily_occupancy, webhook_events (a refresh an event triggered), webhook_receiver (an event the receiver could not store).';
