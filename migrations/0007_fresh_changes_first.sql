-- Freshness: a change found by polling a caught-up property is fetched before any backfill
-- work, as a change announced by an event already is (priority 0); the two backfill priorities
-- (arriving soon, the rest) move down one.
UPDATE booking_detail_queue SET priority = priority + 1;
COMMENT ON COLUMN booking_detail_queue.priority IS '0: a fresh change (found by polling a caught-up property, or announced by a change event), fetched first; 1: a stay arriving soon; 2: everything else.';
