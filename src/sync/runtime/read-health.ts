/**
 * How the reads of a property go for the endpoints the documents describe only loosely and
 * that are read one thing at a time (a reservation's invoices, a person's loyalty cards). One
 * read that fails keeps what is mirrored and is read again later; that costs nothing to say.
 * But when most of a property's reads fail (an endpoint the provider answers differently from
 * the documents, a path it does not serve), `status` and `/metrics` must show the stream as
 * failing, with the path and the provider's answer, rather than as nothing to read.
 *
 * So each context keeps, per property and stream, how the last read of each of the last
 * THINGS_KEPT things read went (reservations, persons: a thing read again counts once, so the
 * pass after a backfill asking the same few refused reservations again and again does not make
 * a property failing), and writes the stream's cursor (sync_cursors) only when its verdict
 * changes: failing once more than half of at least MIN_THINGS failed, active again once at most
 * half do. A property whose reads go well costs no write; the first outcome after a start reads
 * the stored state once (the cursor cache), so a failing state left by an earlier process is
 * cleared by the first good read.
 */
import { markCursorHealthy, markCursorProblem } from '../../store/repositories/cursors.js';
import { FenceLostError } from '../../store/errors.js';
import { streamNames } from '../../store/states.js';
import type { SyncContext } from './context.js';

/** The things whose last outcome is kept, per property and stream. */
const THINGS_KEPT = 20;
/** A stream is failing only after this many things read: one 404 of a quiet property is not "most of its reads". */
const MIN_THINGS = 5;

/** The streams tallied: what the logs call them, and what each read is of. */
const TALLIED = {
  [streamNames.pmsInvoices]: { title: 'PMS invoices', things: 'reservations' },
  [streamNames.pmsLoyaltyCards]: { title: 'PMS loyalty cards', things: 'persons' },
} as const;
export type TalliedStream = keyof typeof TALLIED;

interface Tally {
  /** The last outcome of each of the last THINGS_KEPT things read, oldest first: true for one that failed. */
  failed: Map<string, boolean>;
  failing: boolean;
  /** The stored state was read (or written) by this context. */
  known: boolean;
  lastFailure: string;
  /** A cursor write is under way: outcomes meanwhile only count. */
  writing: boolean;
}

export class ReadHealth {
  private readonly tallies = new Map<string, Tally>();

  constructor(private readonly ctx: SyncContext) {}

  /**
   * How many more things of the property a pass may read now: all while the stream is not known
   * to fail; while it fails, MIN_THINGS a pass, enough to see it recover. A property whose
   * invoices are all refused then costs a few requests a pass, not one per reservation.
   */
  probesLeft(stream: TalliedStream, propertyId: string, readThisPass: number): number {
    const t = this.tallies.get(`${stream}\u0000${propertyId}`);
    return t?.failing ? Math.max(0, MIN_THINGS - readThisPass) : Number.POSITIVE_INFINITY;
  }

  /** A read of `thing` (a reservation number, a person id) by `stream` for the property ended with a complete answer. */
  succeeded(stream: TalliedStream, propertyId: string, thing: string): Promise<void> {
    return this.record(stream, propertyId, thing, null);
  }

  /** A read ended without a usable answer; `reason` names the path and the provider's answer. */
  failed(stream: TalliedStream, propertyId: string, thing: string, reason: string): Promise<void> {
    return this.record(stream, propertyId, thing, reason);
  }

  private async record(stream: TalliedStream, propertyId: string, thing: string, failure: string | null): Promise<void> {
    const { ctx } = this;
    const key = `${stream}\u0000${propertyId}`;
    let t = this.tallies.get(key);
    if (!t) this.tallies.set(key, (t = { failed: new Map(), failing: false, known: false, lastFailure: '', writing: false }));
    // Moved to the end: the Map keeps the things in the order of their last read.
    t.failed.delete(thing);
    t.failed.set(thing, failure !== null);
    if (t.failed.size > THINGS_KEPT) t.failed.delete(t.failed.keys().next().value!);
    if (failure !== null) t.lastFailure = failure;
    if (t.writing) return;
    t.writing = true;
    try {
      if (!t.known) {
        t.failing = (await ctx.cursors.get(propertyId, stream))?.state === 'failing';
        t.known = true;
      }
      const outcomes = [...t.failed.values()];
      const failures = outcomes.filter(Boolean).length;
      const read = outcomes.length;
      // A failing stream is read a few things at a time (probesLeft): it is active again as soon
      // as those all succeed, not only once they outnumber the failures before them.
      const recovered = read >= MIN_THINGS && outcomes.slice(-MIN_THINGS).every((f) => !f);
      const failing = failures * 2 > read && (t.failing ? !recovered : read >= MIN_THINGS);
      if (failing === t.failing) return;
      const at = new Date(ctx.clock.now());
      const { title, things } = TALLIED[stream];
      if (failing) {
        const message = `${failures} of the last ${read} ${things} read failed; the last: ${t.lastFailure}`;
        await ctx.write((trx) => markCursorProblem(trx, { propertyIds: [propertyId], stream, state: 'failing', message: message.slice(0, 1000), at }));
        ctx.logger.warn(
          { component: 'pms', propertyId, stream, reason: message },
          `${title} of property ${propertyId}: failing: ${failures} of the last ${read} ${things} read failed (the last: ${t.lastFailure}). The mirrored ones are kept and read again later`,
        );
      } else {
        await ctx.write((trx) => markCursorHealthy(trx, propertyId, stream, at));
        ctx.logger.info({ component: 'pms', propertyId, stream }, `${title} of property ${propertyId}: read again; the stream is active`);
      }
      ctx.cursors.forget(propertyId, stream);
      t.failing = failing;
    } catch (err) {
      // The database away or the lease lost are said where they are noticed; the next outcome tries again.
      if (!(err instanceof FenceLostError) && !ctx.database.report(err))
        ctx.logger.warn(
          { component: 'pms', propertyId, stream, err: String(err) },
          `${TALLIED[stream].title} of property ${propertyId}: the state of the stream could not be recorded; tried again at its next read`,
        );
    } finally {
      t.writing = false;
    }
  }
}

const byContext = new WeakMap<SyncContext, ReadHealth>();

/** The context's tally (one per API connection's context). */
export function readHealthOf(ctx: SyncContext): ReadHealth {
  let h = byContext.get(ctx);
  if (!h) byContext.set(ctx, (h = new ReadHealth(ctx)));
  return h;
}
