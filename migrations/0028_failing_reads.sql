-- The invoices of PMS reservations and the loyalty cards of PMS persons get a cursor per
-- property (issue 36): they are read one thing at a time from endpoints the documents describe
-- only loosely, and a read that fails keeps what is mirrored. When most of a property's reads
-- fail, the cursor says `failing` with the path and the provider's answer, in status and
-- /metrics, instead of showing nothing. It is written only when that state changes
-- (src/sync/runtime/read-health.ts), so its last_poll_at stays NULL.
ALTER TABLE sync_cursors DROP CONSTRAINT sync_cursors_stream_check;
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_stream_check CHECK (stream IN ('booking_summaries', 'booking_sweep', 'pms_reservations', 'daily_occupancy', 'room_type_inventory', 'stay_units', 'pms_rooms', 'pms_companies', 'accommodation_inventory', 'pms_invoices', 'pms_loyalty_cards'));
COMMENT ON COLUMN sync_cursors.stream IS 'Stream name: booking_summaries (the booking list), booking_sweep (its reconciliation sweep), pms_reservations (the PMS search), daily_occupancy, room_type_inventory, stay_units, pms_rooms, pms_companies, accommodation_inventory (the refreshes of a property), pms_invoices, pms_loyalty_cards (reads of one thing at a time: a row only once most of a property''s reads failed).';
