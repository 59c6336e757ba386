-- Erasure of a guest (issue 21, point 2): `staysync forget-guest` replaces every personal
-- value of one person in the mirror, logs it in `erasures`, and adds the person's identities
-- to `erased_identities`, which every later write of a booking, a PMS reservation or a guest
-- profile consults so that the person does not come back with the provider's next version.
-- Retention (privacy.retainPersonalDataDays) erases the same way and logs here too.
--
-- The identities are kept as keyed hashes (HMAC-SHA-256 under `erasure_key`), never as the
-- values: the list of who asked to be forgotten must not be a list of their e-mails. The key
-- is made here, once per mirror, and no reader role may read it (src/store/reader-role.ts).

CREATE TABLE erasure_key (
  only_row   boolean     PRIMARY KEY DEFAULT true CHECK (only_row),
  key        text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- 244 random bits (two version-4 UUIDs): gen_random_uuid is core PostgreSQL (13+), no extension.
INSERT INTO erasure_key (key) VALUES (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
COMMENT ON TABLE erasure_key IS 'The secret key of the keyed hashes in erasures and erased_identities, made at migration. Never granted to reader roles.';
COMMENT ON COLUMN erasure_key.only_row IS 'Always true: the table has one row.';
COMMENT ON COLUMN erasure_key.key IS 'The key (hex).';
COMMENT ON COLUMN erasure_key.created_at IS 'When it was made (UTC).';

CREATE TABLE erasures (
  erasure_id     bigserial   PRIMARY KEY,
  erased_at      timestamptz NOT NULL DEFAULT now(),
  reason         text        NOT NULL CHECK (reason IN ('request', 'retention')),
  selector_kind  text        CHECK (selector_kind IN ('email', 'phone', 'person', 'booking')),
  selector_hash  text,
  persons        integer     NOT NULL,
  rows_touched   jsonb       NOT NULL
);
COMMENT ON TABLE erasures IS 'One row per erasure of personal data: forget-guest (reason request) or a retention pass (reason retention). Never the erased values.';
COMMENT ON COLUMN erasures.erasure_id IS 'Erasure number.';
COMMENT ON COLUMN erasures.erased_at IS 'When it was done (UTC).';
COMMENT ON COLUMN erasures.reason IS 'request: staysync forget-guest; retention: privacy.retainPersonalDataDays.';
COMMENT ON COLUMN erasures.selector_kind IS 'What forget-guest was given: email, phone, person (PMS person id) or booking; NULL for retention.';
COMMENT ON COLUMN erasures.selector_hash IS 'The selector as a keyed hash (HMAC-SHA-256 under erasure_key, hex), so that a repeated request can be recognised; NULL for retention.';
COMMENT ON COLUMN erasures.persons IS 'Persons erased.';
COMMENT ON COLUMN erasures.rows_touched IS 'Rows changed, by table (e.g. {"bookings": 1, "booking_guests": 2}).';

CREATE TABLE erased_identities (
  kind        text        NOT NULL CHECK (kind IN ('email', 'phone', 'person', 'booking_person')),
  hash        text        NOT NULL,
  erasure_id  bigint      NOT NULL REFERENCES erasures (erasure_id),
  PRIMARY KEY (hash, kind)
);
COMMENT ON TABLE erased_identities IS 'The identities of erased persons, as keyed hashes: a booking, PMS reservation or guest profile written later has these persons erased before it is stored.';
COMMENT ON COLUMN erased_identities.kind IS 'email (normalised), phone (digits), person (PMS person id), booking_person (property, booking number and the name in that booking).';
COMMENT ON COLUMN erased_identities.hash IS 'HMAC-SHA-256 of the identity under erasure_key, hex.';
COMMENT ON COLUMN erased_identities.erasure_id IS 'The erasure that added it (erasures).';
