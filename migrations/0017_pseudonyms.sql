-- Pseudonyms for analysts (issue 21, point 4): with a secret key (privacy.pseudonymKey,
-- STAYSYNC_PSEUDONYM_KEY or _FILE), the keyed hash (HMAC-SHA-256, hex) of a PMS person's
-- normalised first e-mail and phone (src/mapping/pseudonyms.ts), so that repeat guests can be
-- counted and followed without their e-mail or phone (reporting view guests_by_pseudonym).
--
-- Filled whenever the key is set, pms.personalData on or off: computed from the person as
-- received, before its e-mails and phones are stripped. NULL without the key: an unkeyed hash
-- of an e-mail is reversed by hashing guesses, so there is none. Not personal columns
-- (src/store/personal-columns.ts): reader roles without --personal-data read them.
--
-- Rows mirrored before get them when their reservation (or guest profile) is fetched again at
-- a newer version, and, when the key is set by then, from the rebuild of mapping version 4
-- (src/mapping/version.ts) where raw kept the e-mails and phones (pms.personalData on); a raw
-- stored without them keeps whatever pseudonyms its row has (src/replay/rebuild.ts
-- rebuiltPseudonyms).
--
-- No index on them. guests_by_pseudonym reads every reservation with a pseudonym anyway (150 ms
-- at 100,000 reservations of 27,000 guests); one guest's row (`WHERE pseudonym = …`) took 18 ms
-- there without an index and 1 ms with one on the pseudonym: not worth an index that every
-- reservation write updates, for a lookup that analysts make by hand.

ALTER TABLE pms_reservations ADD COLUMN customer_email_hash text, ADD COLUMN customer_phone_hash text;
ALTER TABLE pms_guests ADD COLUMN email_hash text, ADD COLUMN phone_hash text;

COMMENT ON COLUMN pms_reservations.customer_email_hash IS 'Pseudonym of the customer''s first e-mail: HMAC-SHA-256 (hex) under privacy.pseudonymKey of the e-mail trimmed and lower-cased. Equal for every reservation of that e-mail; NULL without the key or an e-mail. Filled with personal data off too.';
COMMENT ON COLUMN pms_reservations.customer_phone_hash IS 'Pseudonym of the customer''s first phone: HMAC-SHA-256 (hex) under privacy.pseudonymKey of its digits, with a leading + kept. NULL without the key or a phone. Filled with personal data off too.';
COMMENT ON COLUMN pms_guests.email_hash IS 'Pseudonym of the first e-mail: HMAC-SHA-256 (hex) under privacy.pseudonymKey of the e-mail trimmed and lower-cased (as pms_reservations.customer_email_hash). NULL without the key or an e-mail. Filled with personal data off too.';
COMMENT ON COLUMN pms_guests.phone_hash IS 'Pseudonym of the first phone: HMAC-SHA-256 (hex) under privacy.pseudonymKey of its digits, with a leading + kept (as pms_reservations.customer_phone_hash). NULL without the key or a phone. Filled with personal data off too.';
