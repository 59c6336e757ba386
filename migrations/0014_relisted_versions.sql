-- No version missed (issue 20, point 7): a booking the booking list shows again, by a caught-up
-- poll, with the same modification second as the stored details has changed since they were
-- read (the provider's times have second precision, so two changes in one second look alike).
-- Its fetch is enqueued with expect_change: details that come back identical to the stored
-- ones, or equal to an earlier version of that same second, are an older copy (a lagging
-- replica), and are asked for again on the short backoff a few times before they are believed.
ALTER TABLE booking_detail_queue ADD COLUMN expect_change boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN booking_detail_queue.expect_change IS 'True when a caught-up poll listed the booking again with the modification second of the stored details: it changed after they were read, so details identical to them are an older copy, asked for again a few times.';
