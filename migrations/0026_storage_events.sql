-- Integration-storage events as the provider documents them (issue 36, point 1).
--
-- The documents say that pms_integration_storage:booking_changed and inventory_block_changed
-- carry the id to fetch (bookingId, inventoryBlockId), and nothing of a property. Webhooks are
-- configured per API connection, so a delivery URL per connection (webhooks.path/<connection>)
-- names the connection the event came through; staysync finds the property among that
-- connection's properties and writes it into property_id.
--
-- An event that cannot be acted on now (its area not granted, no property of the connection
-- has the id, the URL names no connection, a refusal that may pass) is no longer failed for
-- good while the mirror lacks what it announces: it is `waiting`, looked at again at
-- next_attempt_at, and never deleted by the retention of processed events.

ALTER TABLE webhook_events ADD COLUMN connection text;
COMMENT ON COLUMN webhook_events.connection IS 'The API connection the delivery URL named (webhooks.path/<connection>), or the only one configured when it came to webhooks.path; NULL when the URL named none and several are configured.';
COMMENT ON COLUMN webhook_events.property_id IS 'Property the event is about: from the payload, or found by staysync among the properties of the event''s connection (an integration-storage event names none).';

ALTER TABLE webhook_events DROP CONSTRAINT webhook_events_state_check;
ALTER TABLE webhook_events ADD CONSTRAINT webhook_events_state_check CHECK (state IN ('pending', 'waiting', 'processed', 'ignored', 'failed'));
COMMENT ON COLUMN webhook_events.state IS 'pending (its refresh has not committed yet), waiting (kept: what it names cannot be fetched now, see last_error; looked at again at next_attempt_at), processed, ignored (a type staysync does not act on, or a property no connection follows; kept and counted), failed (its refresh failed for good; see last_error).';
COMMENT ON COLUMN webhook_events.next_attempt_at IS 'Not processed before this time (backoff after failures; for a waiting event, when it is looked at again).';

-- The drains read pending and waiting events that are due.
DROP INDEX webhook_events_pending;
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at, creation_time) WHERE state IN ('pending', 'waiting');

-- Which property holds a storage booking or a block the event names only by id: one probe.
CREATE INDEX integration_storage_bookings_id ON integration_storage_bookings (booking_id);
CREATE INDEX inventory_blocks_id ON inventory_blocks (inventory_block_id);
-- Events of one id waiting for their property: a newer one joins them (no second search).
CREATE INDEX webhook_events_unplaced ON webhook_events (connection, event_type, entity_key) WHERE property_id IS NULL AND state IN ('pending', 'waiting');
