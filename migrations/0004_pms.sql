-- PMS mirror: reservations as the property management system sees them (rooms assigned,
-- actual check-in and check-out, guests, stay statuses, prices), guest profiles, rooms, daily
-- occupancy statistics, the provider's change events, and the integration-storage bookings and
-- inventory blocks those events announce.

CREATE TABLE pms_reservations (
  property_id            text        NOT NULL,
  number                 text        NOT NULL,
  reservation_status     text,
  modified_at            timestamptz,
  currency_code          text,
  customer_person_id     text,
  customer_first_name    text,
  customer_last_name     text,
  customer_middle_name   text,
  customer_language_code text,
  customer_email         text,
  customer_phone         text,
  customer_birth_date    date,
  customer_citizenship   text,
  customer_company_id    text,
  customer_company_name  text,
  customer_company_type  text,
  visit_purpose_id       text,
  visit_purpose_name     text,
  creation_source_id     text,
  creation_source_name   text,
  channel_name           text,
  group_name             text,
  customer_comment       text,
  agent_commission_percent numeric,
  agent_commission_amount  numeric,
  room_stay_count        integer     NOT NULL,
  fetched_at             timestamptz NOT NULL,
  synced_at              timestamptz NOT NULL DEFAULT now(),
  raw                    jsonb       NOT NULL,
  PRIMARY KEY (property_id, number)
);
CREATE INDEX pms_reservations_modified_at ON pms_reservations (property_id, modified_at);
COMMENT ON TABLE pms_reservations IS 'One row per PMS reservation (PMS API): the reservation as the property management system keeps it. Its room stays are in pms_room_stays. The number is the booking number of the booking list when the reservation came through it.';
COMMENT ON COLUMN pms_reservations.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_reservations.number IS 'Reservation number (the booking number, YYYYMMDD-propertyId-id).';
COMMENT ON COLUMN pms_reservations.reservation_status IS 'Unconfirmed, Confirmed, Cancelled, Released, Pending, Edited (or a newer provider value).';
COMMENT ON COLUMN pms_reservations.modified_at IS 'Last modification of the reservation (UTC): the version of this row.';
COMMENT ON COLUMN pms_reservations.currency_code IS 'ISO 4217 currency of the reservation''s amounts.';
COMMENT ON COLUMN pms_reservations.customer_person_id IS 'PMS person id of the customer (pms_guests).';
COMMENT ON COLUMN pms_reservations.customer_first_name IS 'Customer first name.';
COMMENT ON COLUMN pms_reservations.customer_last_name IS 'Customer last name.';
COMMENT ON COLUMN pms_reservations.customer_middle_name IS 'Customer middle name.';
COMMENT ON COLUMN pms_reservations.customer_language_code IS 'Language of the customer (e.g. en).';
COMMENT ON COLUMN pms_reservations.customer_email IS 'First e-mail of the customer. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_reservations.customer_phone IS 'First phone number of the customer. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_reservations.customer_birth_date IS 'Birth date of the customer. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_reservations.customer_citizenship IS 'Citizenship of the customer (ISO 3166-1 alpha-3). Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_reservations.customer_company_id IS 'Company of the customer (PMS id), if any.';
COMMENT ON COLUMN pms_reservations.customer_company_name IS 'Company name.';
COMMENT ON COLUMN pms_reservations.customer_company_type IS 'Customer or Payer.';
COMMENT ON COLUMN pms_reservations.visit_purpose_id IS 'Purpose of the visit (id).';
COMMENT ON COLUMN pms_reservations.visit_purpose_name IS 'Purpose of the visit as displayed (e.g. Business, Tourism).';
COMMENT ON COLUMN pms_reservations.creation_source_id IS 'Where the reservation was created (id).';
COMMENT ON COLUMN pms_reservations.creation_source_name IS 'Where the reservation was created (e.g. Online, Channel).';
COMMENT ON COLUMN pms_reservations.channel_name IS 'Sales channel, when a channel created it (e.g. booking.com).';
COMMENT ON COLUMN pms_reservations.group_name IS 'Group the reservation belongs to, if any.';
COMMENT ON COLUMN pms_reservations.customer_comment IS 'Comment of the customer.';
COMMENT ON COLUMN pms_reservations.agent_commission_percent IS 'Agent commission in percent, if any.';
COMMENT ON COLUMN pms_reservations.agent_commission_amount IS 'Agent commission amount, if any.';
COMMENT ON COLUMN pms_reservations.room_stay_count IS 'Number of room stays.';
COMMENT ON COLUMN pms_reservations.fetched_at IS 'When this version was fetched, by the provider''s clock (Date header) where available.';
COMMENT ON COLUMN pms_reservations.synced_at IS 'When staysync last wrote this row (UTC).';
COMMENT ON COLUMN pms_reservations.raw IS 'The reservation object as received; without e-mails, phones, birth dates and citizenship unless pms.personalData is on.';

CREATE TABLE pms_room_stays (
  property_id             text     NOT NULL,
  number                  text     NOT NULL,
  position                integer  NOT NULL,
  pms_room_stay_id        text,
  room_id                 text,
  room_type_id            text,
  status                  text,
  check_in_at             timestamp,
  check_out_at            timestamp,
  actual_check_in_at      timestamp,
  actual_check_out_at     timestamp,
  adults                  integer,
  children                integer,
  amount                  numeric,
  pay_amount              numeric,
  refund_amount           numeric,
  deposit                 numeric,
  currency_code           text,
  guest_person_ids        text[]   NOT NULL,
  amenities               text[]   NOT NULL,
  PRIMARY KEY (property_id, number, position)
);
CREATE INDEX pms_room_stays_check_in ON pms_room_stays (property_id, check_in_at);
CREATE INDEX pms_room_stays_room ON pms_room_stays (property_id, room_id);
COMMENT ON TABLE pms_room_stays IS 'Room stays of a PMS reservation (one per room), replaced whole with every newer version of the reservation. Join pms_rooms on room_id for the room''s name.';
COMMENT ON COLUMN pms_room_stays.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_room_stays.number IS 'Reservation number.';
COMMENT ON COLUMN pms_room_stays.position IS 'Position of the stay in the reservation (0-based).';
COMMENT ON COLUMN pms_room_stays.pms_room_stay_id IS 'PMS id of the room stay.';
COMMENT ON COLUMN pms_room_stays.room_id IS 'Room assigned (pms_rooms.room_id); NULL while none is.';
COMMENT ON COLUMN pms_room_stays.room_type_id IS 'Room type (content room_types.room_type_id).';
COMMENT ON COLUMN pms_room_stays.status IS 'New, CheckedIn, CheckedOut, Cancelled (or a newer provider value).';
COMMENT ON COLUMN pms_room_stays.check_in_at IS 'Planned check-in, property local time.';
COMMENT ON COLUMN pms_room_stays.check_out_at IS 'Planned check-out, property local time.';
COMMENT ON COLUMN pms_room_stays.actual_check_in_at IS 'Actual check-in, property local time; NULL until the guest checked in.';
COMMENT ON COLUMN pms_room_stays.actual_check_out_at IS 'Actual check-out, property local time; NULL until the guest checked out.';
COMMENT ON COLUMN pms_room_stays.adults IS 'Adults.';
COMMENT ON COLUMN pms_room_stays.children IS 'Children.';
COMMENT ON COLUMN pms_room_stays.amount IS 'Price of the stay with extras and early/late charges, taxes not included.';
COMMENT ON COLUMN pms_room_stays.pay_amount IS 'Amount paid.';
COMMENT ON COLUMN pms_room_stays.refund_amount IS 'Amount refunded.';
COMMENT ON COLUMN pms_room_stays.deposit IS 'Deposit, if any.';
COMMENT ON COLUMN pms_room_stays.currency_code IS 'Currency of the amounts (the reservation''s when the stay gives none).';
COMMENT ON COLUMN pms_room_stays.guest_person_ids IS 'PMS person ids of the guests of the stay (pms_guests).';
COMMENT ON COLUMN pms_room_stays.amenities IS 'Amenities of the stay, by name.';

CREATE TABLE pms_guests (
  property_id      text        NOT NULL,
  pms_person_id    text        NOT NULL,
  first_name       text,
  last_name        text,
  middle_name      text,
  gender           text,
  status_name      text,
  email            text,
  phone            text,
  birth_date       date,
  citizenship      text,
  fetched_at       timestamptz NOT NULL,
  raw              jsonb       NOT NULL,
  PRIMARY KEY (property_id, pms_person_id)
);
COMMENT ON TABLE pms_guests IS 'Guests and customers of PMS reservations (PMS persons), by PMS person id: from the reservation''s customer and from the guest profiles of the room stays.';
COMMENT ON COLUMN pms_guests.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_guests.pms_person_id IS 'PMS person id.';
COMMENT ON COLUMN pms_guests.first_name IS 'First name.';
COMMENT ON COLUMN pms_guests.last_name IS 'Last name.';
COMMENT ON COLUMN pms_guests.middle_name IS 'Middle name.';
COMMENT ON COLUMN pms_guests.gender IS 'Male, Female, Unknown.';
COMMENT ON COLUMN pms_guests.status_name IS 'Guest status as displayed (e.g. VIP).';
COMMENT ON COLUMN pms_guests.email IS 'First e-mail. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_guests.phone IS 'First phone number. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_guests.birth_date IS 'Birth date. Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_guests.citizenship IS 'Citizenship (ISO 3166-1 alpha-3). Personal data: NULL unless pms.personalData is on.';
COMMENT ON COLUMN pms_guests.fetched_at IS 'When this person was last read (UTC).';
COMMENT ON COLUMN pms_guests.raw IS 'The person object as received; without e-mails, phones, birth date and citizenship unless pms.personalData is on.';

CREATE TABLE pms_reservation_queue (
  property_id        text        NOT NULL,
  number             text        NOT NULL,
  priority           smallint    NOT NULL DEFAULT 1,
  state              text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'not_found', 'quarantined')),
  generation         bigint      NOT NULL,
  attempts           integer     NOT NULL DEFAULT 0,
  next_attempt_at    timestamptz NOT NULL DEFAULT now(),
  enqueued_at        timestamptz NOT NULL DEFAULT now(),
  last_error         text,
  PRIMARY KEY (property_id, number)
);
CREATE SEQUENCE pms_reservation_queue_generation;
CREATE INDEX pms_reservation_queue_drain ON pms_reservation_queue (priority, enqueued_at);
CREATE INDEX pms_reservation_queue_due ON pms_reservation_queue (next_attempt_at);
COMMENT ON TABLE pms_reservation_queue IS 'Durable queue of PMS reservation fetches: a row per reservation found by a search (or announced by an event) whose mirrored version may be older.';
COMMENT ON COLUMN pms_reservation_queue.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_reservation_queue.number IS 'Reservation number.';
COMMENT ON COLUMN pms_reservation_queue.priority IS '0: announced by a change event (fetched first), 1: found by following, 2: found by the backfill.';
COMMENT ON COLUMN pms_reservation_queue.state IS 'pending (to fetch, possibly after a backoff); not_found (404 several times); quarantined (the payload failed validation). Every state is fetched again when next_attempt_at has passed.';
COMMENT ON COLUMN pms_reservation_queue.generation IS 'Bumped on every enqueue, so a fetch started before a newer enqueue does not remove it.';
COMMENT ON COLUMN pms_reservation_queue.attempts IS 'Fetch attempts that did not store the reservation since the last enqueue.';
COMMENT ON COLUMN pms_reservation_queue.next_attempt_at IS 'Not fetched before this time (backoff after failures).';
COMMENT ON COLUMN pms_reservation_queue.enqueued_at IS 'When the row was (last) enqueued.';
COMMENT ON COLUMN pms_reservation_queue.last_error IS 'Last failure, if any.';

CREATE TABLE pms_rooms (
  property_id    text        NOT NULL,
  room_id        text        NOT NULL,
  display_name   text,
  room_type_id   text,
  floor_id       text,
  raw            jsonb       NOT NULL,
  content_hash   text        NOT NULL,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  removed_at     timestamptz,
  PRIMARY KEY (property_id, room_id)
);
COMMENT ON TABLE pms_rooms IS 'Rooms of each property (PMS rooms list), refreshed with content: room id to the name a report shows ("204") and its room type.';
COMMENT ON COLUMN pms_rooms.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_rooms.room_id IS 'PMS room id (pms_room_stays.room_id).';
COMMENT ON COLUMN pms_rooms.display_name IS 'Room name or number as displayed.';
COMMENT ON COLUMN pms_rooms.room_type_id IS 'Room type (content room_types.room_type_id).';
COMMENT ON COLUMN pms_rooms.floor_id IS 'Floor (PMS id).';
COMMENT ON COLUMN pms_rooms.raw IS 'The room object as received.';
COMMENT ON COLUMN pms_rooms.content_hash IS 'Hash of raw: an unchanged room is not written again.';
COMMENT ON COLUMN pms_rooms.updated_at IS 'When the row last changed (UTC).';
COMMENT ON COLUMN pms_rooms.removed_at IS 'When the room disappeared from the list (UTC); NULL while it is listed.';

CREATE TABLE daily_occupancy (
  property_id                       text        NOT NULL,
  stay_date                         date        NOT NULL,
  currency_code                     text,
  property_room_count               integer     NOT NULL,
  occupancy_rate                    numeric     NOT NULL,
  closed_room_count                 integer     NOT NULL,
  occupancy_room_count              integer     NOT NULL,
  complimentary_occupancy_room_count integer    NOT NULL,
  room_revenue                      numeric     NOT NULL,
  revenue                           numeric     NOT NULL,
  meal_revenue                      numeric     NOT NULL,
  arrival_count                     integer     NOT NULL,
  guest_count                       integer     NOT NULL,
  refreshed_at                      timestamptz NOT NULL,
  raw                               jsonb       NOT NULL,
  PRIMARY KEY (property_id, stay_date)
);
COMMENT ON TABLE daily_occupancy IS 'Daily occupancy statistics of each property (PMS analytics), one row per property and date over the refreshed horizon. A refresh replaces each 31-day window it reads in one transaction.';
COMMENT ON COLUMN daily_occupancy.property_id IS 'Provider property id.';
COMMENT ON COLUMN daily_occupancy.stay_date IS 'The night (property local date).';
COMMENT ON COLUMN daily_occupancy.currency_code IS 'ISO 4217 currency of the revenues.';
COMMENT ON COLUMN daily_occupancy.property_room_count IS 'Rooms of the property (its profile).';
COMMENT ON COLUMN daily_occupancy.occupancy_rate IS 'Occupancy, 0.0 to 1.0, as the PMS computes it.';
COMMENT ON COLUMN daily_occupancy.closed_room_count IS 'Rooms out of order that night.';
COMMENT ON COLUMN daily_occupancy.occupancy_room_count IS 'Rooms occupied and paid (zero-rate rooms excluded).';
COMMENT ON COLUMN daily_occupancy.complimentary_occupancy_room_count IS 'Rooms occupied at a zero rate.';
COMMENT ON COLUMN daily_occupancy.room_revenue IS 'Room revenue: net of VAT, commissions and extra services.';
COMMENT ON COLUMN daily_occupancy.revenue IS 'Revenue of the day, gross (rooms, meals, other departments).';
COMMENT ON COLUMN daily_occupancy.meal_revenue IS 'Meal revenue of the day.';
COMMENT ON COLUMN daily_occupancy.arrival_count IS 'Check-ins on that date.';
COMMENT ON COLUMN daily_occupancy.guest_count IS 'Guests that night (adults and children).';
COMMENT ON COLUMN daily_occupancy.refreshed_at IS 'When the window of this date was last read (UTC).';
COMMENT ON COLUMN daily_occupancy.raw IS 'The day object as received.';

CREATE TABLE webhook_events (
  event_id        text        PRIMARY KEY,
  event_type      text        NOT NULL,
  creation_time   timestamptz,
  payload         jsonb,
  property_id     text,
  entity_key      text,
  state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'processed', 'ignored', 'failed')),
  received_at     timestamptz NOT NULL DEFAULT now(),
  processed_at    timestamptz,
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text
);
CREATE INDEX webhook_events_pending ON webhook_events (next_attempt_at, creation_time) WHERE state = 'pending';
COMMENT ON TABLE webhook_events IS 'Change events received from the provider (webhooks), one row per event id, stored before the batch is acknowledged. An event triggers a refresh of what it names; polling still finds what a lost event would have announced.';
COMMENT ON COLUMN webhook_events.event_id IS 'The provider''s event id (UUID): a redelivered event is stored once.';
COMMENT ON COLUMN webhook_events.event_type IS 'module:event, e.g. webpms:check_in, pms_integration_storage:booking_changed.';
COMMENT ON COLUMN webhook_events.creation_time IS 'When the provider created the event (UTC).';
COMMENT ON COLUMN webhook_events.payload IS 'The event payload as received (ids only, no personal data).';
COMMENT ON COLUMN webhook_events.property_id IS 'Property the event is about, from the payload.';
COMMENT ON COLUMN webhook_events.entity_key IS 'What the event is about: a booking number, an integration-storage booking id or an inventory block id.';
COMMENT ON COLUMN webhook_events.state IS 'pending (its refresh has not committed yet), processed, ignored (a type staysync does not act on; kept and counted), failed (its refresh failed for good; see last_error).';
COMMENT ON COLUMN webhook_events.received_at IS 'When staysync stored the event (UTC).';
COMMENT ON COLUMN webhook_events.processed_at IS 'When its refresh committed (UTC).';
COMMENT ON COLUMN webhook_events.attempts IS 'Refresh attempts that failed.';
COMMENT ON COLUMN webhook_events.next_attempt_at IS 'Not processed before this time (backoff after failures).';
COMMENT ON COLUMN webhook_events.last_error IS 'Last failure, if any.';

CREATE TABLE integration_storage_bookings (
  property_id          text        NOT NULL,
  booking_id           text        NOT NULL,
  status               text,
  booking_number       text,
  updated_at           timestamptz,
  pms_updated_at       timestamp,
  pms_created_at       timestamp,
  cancelled_at         timestamp,
  cancel_reason        text,
  amount_after_tax     numeric,
  currency_code        text,
  guarantee_code       text,
  arrival_at           timestamp,
  departure_at         timestamp,
  fetched_at           timestamptz NOT NULL,
  synced_at            timestamptz NOT NULL DEFAULT now(),
  raw                  jsonb       NOT NULL,
  PRIMARY KEY (property_id, booking_id)
);
COMMENT ON TABLE integration_storage_bookings IS 'Bookings of the PMS integration storage, fetched when a pms_integration_storage:booking_changed event announces them.';
COMMENT ON COLUMN integration_storage_bookings.property_id IS 'Provider property id.';
COMMENT ON COLUMN integration_storage_bookings.booking_id IS 'Integration-storage booking id (internal, from the event).';
COMMENT ON COLUMN integration_storage_bookings.status IS 'Unknown, Confirmed, Waitlisted, InHouse, CheckedOut, Cancelled (or a newer value).';
COMMENT ON COLUMN integration_storage_bookings.booking_number IS 'The booking number, when one of its unique ids carries it (context External).';
COMMENT ON COLUMN integration_storage_bookings.updated_at IS 'When the storage record changed (UTC): the version of this row.';
COMMENT ON COLUMN integration_storage_bookings.pms_updated_at IS 'When the PMS changed it, property local time.';
COMMENT ON COLUMN integration_storage_bookings.pms_created_at IS 'When the PMS created it, property local time.';
COMMENT ON COLUMN integration_storage_bookings.cancelled_at IS 'When the PMS cancelled it, property local time.';
COMMENT ON COLUMN integration_storage_bookings.cancel_reason IS 'Why it was cancelled.';
COMMENT ON COLUMN integration_storage_bookings.amount_after_tax IS 'Total after tax.';
COMMENT ON COLUMN integration_storage_bookings.currency_code IS 'Currency of the total.';
COMMENT ON COLUMN integration_storage_bookings.guarantee_code IS 'Guarantee code (e.g. CC).';
COMMENT ON COLUMN integration_storage_bookings.arrival_at IS 'Earliest arrival of its room stays, property local time.';
COMMENT ON COLUMN integration_storage_bookings.departure_at IS 'Latest departure of its room stays, property local time.';
COMMENT ON COLUMN integration_storage_bookings.fetched_at IS 'When it was fetched (UTC).';
COMMENT ON COLUMN integration_storage_bookings.synced_at IS 'When staysync last wrote this row (UTC).';
COMMENT ON COLUMN integration_storage_bookings.raw IS 'The booking object as received.';

CREATE TABLE inventory_blocks (
  property_id          text        NOT NULL,
  inventory_block_id   text        NOT NULL,
  pms_side_id          text,
  pms_side_code        text,
  block_status         text,
  pms_block_status     text,
  updated_at           timestamptz,
  pms_created_at       timestamp,
  pms_cancelled_at     timestamp,
  rate_plan_codes      text[]      NOT NULL,
  fetched_at           timestamptz NOT NULL,
  synced_at            timestamptz NOT NULL DEFAULT now(),
  raw                  jsonb       NOT NULL,
  PRIMARY KEY (property_id, inventory_block_id)
);
COMMENT ON TABLE inventory_blocks IS 'Inventory (allotment) blocks of the PMS integration storage, fetched when a pms_integration_storage:inventory_block_changed event announces them; the daily items are in raw.';
COMMENT ON COLUMN inventory_blocks.property_id IS 'Provider property id.';
COMMENT ON COLUMN inventory_blocks.inventory_block_id IS 'Integration-storage block id (from the event).';
COMMENT ON COLUMN inventory_blocks.pms_side_id IS 'The block''s id in the PMS.';
COMMENT ON COLUMN inventory_blocks.pms_side_code IS 'The block''s code in the PMS.';
COMMENT ON COLUMN inventory_blocks.block_status IS 'Unknown, Inquiry, Active, Cancelled (or a newer value).';
COMMENT ON COLUMN inventory_blocks.pms_block_status IS 'The PMS''s own status code of the block.';
COMMENT ON COLUMN inventory_blocks.updated_at IS 'When the storage record changed (UTC): the version of this row.';
COMMENT ON COLUMN inventory_blocks.pms_created_at IS 'When the PMS created it, property local time.';
COMMENT ON COLUMN inventory_blocks.pms_cancelled_at IS 'When the PMS cancelled it, property local time.';
COMMENT ON COLUMN inventory_blocks.rate_plan_codes IS 'PMS rate plan codes of the block.';
COMMENT ON COLUMN inventory_blocks.fetched_at IS 'When it was fetched (UTC).';
COMMENT ON COLUMN inventory_blocks.synced_at IS 'When staysync last wrote this row (UTC).';
COMMENT ON COLUMN inventory_blocks.raw IS 'The block object as received, with its daily items.';

-- Views: PMS room stays with the room's name and the room type's name.
CREATE VIEW pms_room_stays_named AS
SELECT s.*, r.reservation_status, r.currency_code AS reservation_currency_code,
       room.display_name AS room_name, rt.name AS room_type_name
FROM pms_room_stays s
JOIN pms_reservations r USING (property_id, number)
LEFT JOIN pms_rooms room ON room.property_id = s.property_id AND room.room_id = s.room_id
LEFT JOIN room_types rt ON rt.property_id = s.property_id AND rt.room_type_id = s.room_type_id;
COMMENT ON VIEW pms_room_stays_named IS 'PMS room stays with the reservation status, the room''s name (pms_rooms) and the room type''s name (content).';
