/**
 * The version of the mapping from raw payloads to typed rows (the modules of src/mapping/).
 * The mirror records the version its typed tables were built with; when this one is newer,
 * `run` and `sync --once` rebuild them from raw before syncing (src/replay/upgrade.ts), so that
 * a mapping fix reaches every stored row without a re-sync.
 */

/**
 * Bump it whenever the mapping from raw to typed rows changes (a column derived differently,
 * a new column or table derived from raw, a schema that accepts what it rejected); the
 * migration that adds the columns of a new mapping goes with it. Version 1 was the mapping
 * before migrations/0005_fidelity.sql (numbers through floats, one rate plan per room stay).
 */
export const MAPPING_VERSION = 6;
// 3: PMS reservations the document allows (a null number, an unreadable modifyDateTime) are
// mirrored; a night's gross is computed by the mapping (booking_daily_rates.gross_amount); and
// the upgrade's rebuild derives history for bookings that have none (src/replay/rebuild.ts).
// 4: the personal-data policy (personal-data.ts): raw keeps persons by allow-list, and loyalty
// card numbers and customers' comments only with pms.personalData; the rebuild applies it to
// the raw already stored; and PMS persons' pseudonyms (migrations/0017_pseudonyms.sql): with privacy.pseudonymKey, a
// rebuild fills them from raw where raw kept the e-mails and phones (pms.personalData on).
// 5: integration-storage bookings' market segment, source, channels and nights, and inventory
// blocks' days (migrations/0022_storage_typed.sql): typed from the raw already stored.
// 6: totals and units as the provider documents them (migrations/0025_documented_units.sql): an
// invoice's total only when its items are in one currency, a room stay's currency from what it
// owes when its price gives none, a day's meal revenue NULL when not given, a daily rate's
// `RatePlanId`, room amenities of both shapes, and loyalty cards derived from their own raw.
