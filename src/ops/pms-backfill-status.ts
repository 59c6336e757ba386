/**
 * The part of `status` that says what the PMS backfill of each API connection has still to read,
 * and how long that takes at its standard budget: the reservations to fetch, the invoices and,
 * with pms.loyaltyCards, the loyalty cards that the pass after a backfill reads
 * (sync/streams/pms-deferred-reads.ts). Every PMS read of a client takes from that one budget.
 *
 * The count is a floor: a reservation to fetch is itself and its invoices, and its guest
 * profiles and their cards, unknown until it is read, come on top.
 */
import type { Config } from '../config/config.js';
import type { Db } from '../store/types.js';
import { pmsBackfillLeft } from '../store/repositories/pms-backfill.js';
import { formatDuration, queueEtaSeconds, sustainedRate } from '../sync/runtime/progress.js';

export interface PmsBackfillStatus {
  connection: string;
  /** Reservations waiting to be fetched. */
  reservations: number;
  /** Reservations whose invoices are still to read. */
  invoices: number;
  /** Persons whose loyalty cards are still to read; null while pms.loyaltyCards is off (they are not read). */
  loyaltyCards: number | null;
  /** Standard requests they take at least. */
  requests: number;
  /** The standard budget's sustained rate, an hour (3,000 at the provider's limits). */
  perHour: number;
  endsInSeconds: number;
  endsIn: string;
}

/** Requests a reservation still to fetch takes at least: itself, and its invoices. */
const REQUESTS_PER_RESERVATION = 2;

export async function gatherPmsBackfill(db: Db, config: Config): Promise<PmsBackfillStatus[]> {
  const windows = config.rateLimits.standard;
  return (await pmsBackfillLeft(db))
    .map((left) => {
      const loyaltyCards = config.pms.loyaltyCards ? left.loyaltyCards : null;
      const requests = REQUESTS_PER_RESERVATION * left.reservations + left.invoices + (loyaltyCards ?? 0);
      const endsInSeconds = queueEtaSeconds(requests, windows);
      return {
        connection: left.connection,
        reservations: left.reservations,
        invoices: left.invoices,
        loyaltyCards,
        requests,
        perHour: Math.round(sustainedRate(windows) * 3600),
        endsInSeconds,
        endsIn: formatDuration(endsInSeconds),
      };
    })
    .filter((b) => b.requests > 0);
}

/** One line per connection whose PMS backfill has reads left. */
export function pmsBackfillLines(backfills: readonly PmsBackfillStatus[]): string[] {
  const n = (x: number) => x.toLocaleString('en-US');
  return backfills.map((b) => {
    const parts = [
      b.reservations > 0 ? `${n(b.reservations)} reservations to fetch` : '',
      b.invoices > 0 ? `the invoices of ${n(b.invoices)} reservations` : '',
      b.loyaltyCards ? `the loyalty cards of ${n(b.loyaltyCards)} persons` : '',
    ].filter(Boolean);
    return (
      `PMS backfill of connection ${b.connection}, still to read: ${parts.join(', ')}; ` +
      `at least ${n(b.requests)} standard requests, about ${b.endsIn} at its limit of ${n(b.perHour)} an hour.` +
      (b.loyaltyCards === null ? ' Loyalty cards are not read (pms.loyaltyCards is off; unset, it follows pms.personalData).' : '')
    );
  });
}
