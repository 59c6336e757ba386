/**
 * Retention (privacy.retainPersonalDataDays, GDPR Art. 5(1)(e)): the personal data of
 * bookings and PMS reservations whose stay ended more than N days ago is erased as forget-guest
 * erases a guest (src/privacy/erase.ts: names become the marker, the rest goes, the figures
 * stay), and quarantined guest payloads and processed change events older than N days lose
 * their bodies. In batches of their own transactions, so that no lock is held for long and a
 * stop loses at most one batch (the next pass does it). Each pass that erased anything is
 * logged in `erasures` (reason retention).
 */
import type { PersonalKeys, RowsTouched } from '../store/repositories/erasures.js';
import { logErasure } from '../store/repositories/erasures.js';
import {
  bookingsPastRetention,
  eraseStorageBookings,
  expirePayloads,
  personsPastRetention,
  reservationsPastRetention,
  storageBookingsPastRetention,
  type After,
} from '../store/repositories/retention.js';
import type { Executor } from '../store/types.js';
import { ERASED_NAME, erasePersonsIn } from '../mapping/erasure.js';
import { GUEST_STREAMS, keptPayload, NAME_FIELDS, PERSON_KEYS, PERSONAL_VALUE_KEYS } from '../mapping/personal-data.js';
import { eraseBookings, eraseCustomersPayers, erasePersons } from './erase.js';

/** What an expired quarantined body says in its place. */
export const EXPIRED_BODY = '(expired: kept no longer than privacy.retainPersonalDataDays; the reason says what failed)';

const DAY_MS = 86_400_000;

/** What of a payload is personal, as the store looks for it (the policy's keys: src/mapping/personal-data.ts). */
const PERSONAL: PersonalKeys = { persons: PERSON_KEYS, names: NAME_FIELDS, values: PERSONAL_VALUE_KEYS };

/** The first day whose stays are kept: a stay that ended (departed) before it is past retention. */
export function retentionCutoff(now: Date, days: number): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - days * DAY_MS).toISOString().slice(0, 10);
}

/**
 * What a pass did. The counts are the rows it read (and locked) to erase them, each erased in
 * the same batch: none of them on a pass over a mirror the last pass left erased.
 */
export interface RetentionPass {
  bookings: number;
  /** PMS reservations whose customer was erased. */
  reservations: number;
  /** PMS reservations whose invoices' payers were erased (read after their customer was, say). */
  invoices: number;
  /** PMS guest profiles, with their loyalty cards. */
  persons: number;
  storageBookings: number;
  /** The rows changed, by table. */
  rowsTouched: RowsTouched;
}

/**
 * One pass over the properties given. `write` runs a transaction (the daemon's fenced write);
 * `unrouted`: also the quarantined bodies and events of no property (one connection does them).
 */
export async function retentionPass(
  write: <T>(fn: (trx: Executor) => Promise<T>) => Promise<T>,
  opts: { propertyIds: readonly string[]; days: number; now: Date; unrouted: boolean; batch?: number; signal?: AbortSignal },
): Promise<RetentionPass> {
  const batch = opts.batch ?? 200;
  const cutoff = retentionCutoff(opts.now, opts.days);
  const touched: RowsTouched = {};
  const pass: RetentionPass = { bookings: 0, reservations: 0, invoices: 0, persons: 0, storageBookings: 0, rowsTouched: touched };
  const ids = opts.propertyIds;

  /** Batches of `find` until none is left, each erased by `erase` in its own transaction. */
  const each = async <K>(
    find: (trx: Executor, after: After) => Promise<K[]>,
    keyOf: (k: K) => readonly [string, string],
    erase: (trx: Executor, keys: K[]) => Promise<void>,
  ) => {
    let after: After = null;
    let n = 0;
    while (!opts.signal?.aborted) {
      const keys = await write(async (trx) => {
        const found = await find(trx, after);
        if (found.length > 0) await erase(trx, found);
        return found;
      });
      n += keys.length;
      if (keys.length < batch) break;
      after = keyOf(keys[keys.length - 1]!);
    }
    return n;
  };
  pass.bookings = await each(
    (trx, after) => bookingsPastRetention(trx, ids, cutoff, ERASED_NAME, after, batch),
    (k) => [k.property_id, k.number],
    async (trx, keys) => void (await eraseBookings(trx, keys, () => true, touched, { everyCardNumber: true })),
  );
  pass.reservations = await each(
    (trx, after) => reservationsPastRetention(trx, ids, cutoff, ERASED_NAME, 'customer', after, batch),
    (k) => [k.property_id, k.number],
    (trx, keys) => erasePersons(trx, [], keys, touched),
  );
  // The invoices of reservations whose customer is erased already: read since (the pass after a backfill).
  pass.invoices = await each(
    (trx, after) => reservationsPastRetention(trx, ids, cutoff, ERASED_NAME, 'invoicePayers', after, batch),
    (k) => [k.property_id, k.number],
    (trx, keys) => eraseCustomersPayers(trx, keys, touched),
  );
  pass.persons = await each(
    (trx, after) => personsPastRetention(trx, ids, cutoff, ERASED_NAME, PERSONAL, after, batch),
    (k) => [k.property_id, k.pms_person_id],
    (trx, keys) => erasePersons(trx, keys, [], touched),
  );
  // Integration-storage bookings: their persons erased, and what the policy keeps only with personal data.
  pass.storageBookings = await each(
    (trx, after) => storageBookingsPastRetention(trx, ids, cutoff, ERASED_NAME, PERSONAL, after, batch),
    (k) => [k.property_id, k.number],
    (trx, keys) =>
      eraseStorageBookings(
        trx,
        keys,
        (raw) => {
          const kept = keptPayload(erasePersonsIn(raw, () => true).payload, false);
          return JSON.stringify(kept) === JSON.stringify(raw) ? null : kept;
        },
        touched,
      ),
  );
  const expired = await write((trx) =>
    expirePayloads(trx, {
      propertyIds: ids,
      unrouted: opts.unrouted,
      streams: GUEST_STREAMS,
      before: new Date(opts.now.getTime() - opts.days * DAY_MS),
      expired: EXPIRED_BODY,
    }),
  );
  for (const [table, n] of Object.entries(expired)) if (n > 0) touched[table] = (touched[table] ?? 0) + n;
  if (Object.keys(touched).length > 0) {
    await write((trx) =>
      logErasure(trx, { reason: 'retention', persons: pass.bookings + pass.reservations + pass.persons + pass.storageBookings, rowsTouched: touched }),
    );
  }
  return pass;
}
