-- booking_night_history_nights covers reconstructed_until too, so that the reports reading a
-- property's nights (pace, on_the_books) answer from the index alone (an index-only scan),
-- without a visit to the table for each row.
--
-- Why: on_the_books and pace count the reconstructed room-nights (reconstructed_until), the one
-- column they read that the index did not hold, so every night they read went to the table.
-- Measured with scenario H of the bench (1,000,000 bookings, 3,000,000 versions, 6,000,000 night
-- rows, 100 properties; docs/benchmarks.md): pace for one property and a year of nights took
-- about 280 ms reading the table, 165 ms from the index alone.
--
-- The cost: the same index with one more included column, NULL but for reconstructed versions:
-- 423 MB instead of 387 MB at 6,000,000 rows (about 6 bytes a row), and no other index to
-- maintain on a booking write. Built anew here (CREATE INDEX takes a lock that holds off writes
-- to booking_night_history while it builds: seconds per million rows), then the old one dropped.

CREATE INDEX booking_night_history_nights_covering ON booking_night_history (property_id, stay_date)
  INCLUDE (valid_from, valid_to, currency_code, net_amount, gross_amount, reconstructed_until);
DROP INDEX booking_night_history_nights;
ALTER INDEX booking_night_history_nights_covering RENAME TO booking_night_history_nights;
