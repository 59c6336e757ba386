-- Loyalty cards of PMS persons (issue 27): GET …/guests/{pmsPersonId}/loyalty-cards, read with
-- the person's profile (a reservation's customer, a room stay's guest) when a reservation is
-- fetched as it changes (the person new to the mirror, or a newer version of one of their
-- reservations), and replaced whole in the reservation's transaction; a backfill leaves them to
-- the pass after it.
--
-- A card number is personal data: kept only with pms.personalData (NULL otherwise), withheld
-- from readers without --personal-data, cleared when its person is erased (forget-guest,
-- retention). The programme is not: an analyst counts members without seeing a card.

CREATE TABLE pms_guest_loyalty_cards (
  property_id    text        NOT NULL,
  pms_person_id  text        NOT NULL,
  position       integer     NOT NULL,
  program_id     text,
  card_number    text,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, pms_person_id, position)
);
COMMENT ON TABLE pms_guest_loyalty_cards IS 'Loyalty cards of PMS persons (pms_guests), replaced whole each time the person''s cards are read.';
COMMENT ON COLUMN pms_guest_loyalty_cards.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_guest_loyalty_cards.pms_person_id IS 'PMS person id (pms_guests.pms_person_id).';
COMMENT ON COLUMN pms_guest_loyalty_cards.position IS 'Position of the card in the provider''s answer (0-based).';
COMMENT ON COLUMN pms_guest_loyalty_cards.program_id IS 'Loyalty programme id.';
COMMENT ON COLUMN pms_guest_loyalty_cards.card_number IS 'Card number (personal data: kept only with pms.personalData; NULL once the person is erased).';
COMMENT ON COLUMN pms_guest_loyalty_cards.synced_at IS 'When staysync last wrote this row (UTC): the transaction of the reservation the cards were read with. A rebuild keeps it.';

ALTER TABLE pms_guests ADD COLUMN loyalty_cards_read_at timestamptz;
COMMENT ON COLUMN pms_guests.loyalty_cards_read_at IS 'When the person''s loyalty cards (pms_guest_loyalty_cards) were last read; NULL: not read yet (a person mirrored before 0.2.0 until a newer version of one of their reservations, or pms.loyaltyCards off).';

-- What a backfill leaves for the pass after it (src/sync/streams/pms-deferred-reads.ts): the
-- reservations whose invoices and the persons whose cards were not read. Partial indexes: the
-- pass's read stays small however large the mirror.
CREATE INDEX pms_reservations_invoices_unread ON pms_reservations (property_id, number) WHERE invoices_read_at IS NULL;
CREATE INDEX pms_guests_cards_unread ON pms_guests (property_id, pms_person_id) WHERE loyalty_cards_read_at IS NULL;

ALTER TABLE quarantine DROP CONSTRAINT quarantine_stream_check;
ALTER TABLE quarantine
  ADD CONSTRAINT quarantine_stream_check CHECK (stream IN ('booking_summaries', 'booking_details', 'content', 'pms_reservations', 'pms_rooms', 'pms_guests', 'pms_invoices', 'pms_companies', 'pms_loyalty_cards', 'daily_occupancy', 'webhook_events', 'webhook_receiver', 'accommodation_inventory', 'room_type_inventory', 'stay_units'));

-- The PMS rooms, companies and accommodation inventory get a cursor per property: when each was
-- last read and whether its refresh fails, in status and /metrics, as for the other streams.
ALTER TABLE sync_cursors DROP CONSTRAINT sync_cursors_stream_check;
ALTER TABLE sync_cursors
  ADD CONSTRAINT sync_cursors_stream_check CHECK (stream IN ('booking_summaries', 'booking_sweep', 'pms_reservations', 'daily_occupancy', 'room_type_inventory', 'stay_units', 'pms_rooms', 'pms_companies', 'accommodation_inventory'));
