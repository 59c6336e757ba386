/**
 * booking_sweeps: the reconciliation sweep of each property (src/sync/booking-sweep.ts), the
 * pass in progress and the last finished one. The pass's continueToken is in sync_cursors
 * (stream booking_sweep) and moves in the same transaction as the page it covers.
 */
import { sql, type Selectable } from 'kysely';
import type { BookingSweepsTable } from '../schema.js';
import { streamNames } from '../states.js';
import type { Executor } from '../types.js';

/** The figures of one pass. */
export interface SweepCounts {
  pages: number;
  summaries: number;
  /** Detail fetches enqueued: versions newer than the stored details. */
  enqueued: number;
  /** Summary versions the booking list had never shown: the late changes found. */
  late: number;
}

export interface SweepRow {
  propertyId: string;
  watchingSince: Date;
  /** The pass in progress, if any. */
  pass: (SweepCounts & { startedAt: Date; from: Date | null; restarts: number }) | null;
  /** The last finished pass, if any. */
  last: (SweepCounts & { startedAt: Date; finishedAt: Date; from: Date | null; restarts: number }) | null;
  passes: number;
  lateChanges: number;
}

function toRow(r: Selectable<BookingSweepsTable>): SweepRow {
  return {
    propertyId: r.property_id,
    watchingSince: r.watching_since,
    pass: r.pass_started_at
      ? {
          startedAt: r.pass_started_at,
          from: r.pass_from,
          pages: r.pass_pages,
          summaries: r.pass_summaries,
          enqueued: r.pass_enqueued,
          late: r.pass_late,
          restarts: r.pass_restarts,
        }
      : null,
    last:
      r.last_started_at && r.last_finished_at
        ? {
            startedAt: r.last_started_at,
            finishedAt: r.last_finished_at,
            from: r.last_from,
            pages: r.last_pages ?? 0,
            summaries: r.last_summaries ?? 0,
            enqueued: r.last_enqueued ?? 0,
            late: r.last_late ?? 0,
            restarts: r.last_restarts ?? 0,
          }
        : null,
    passes: Number(r.passes),
    lateChanges: Number(r.late_changes),
  };
}

/** When the next pass is due: `everyMs` after the last pass started, or after the sweep first saw the property caught up. */
export function nextSweepDueAt(s: SweepRow, everyMs: number): Date {
  return new Date((s.last?.startedAt ?? s.watchingSince).getTime() + everyMs);
}

export async function findSweep(db: Executor, propertyId: string): Promise<SweepRow | undefined> {
  const r = await db.selectFrom('booking_sweeps').selectAll().where('property_id', '=', propertyId).executeTakeFirst();
  return r && toRow(r);
}

export async function listSweeps(db: Executor): Promise<SweepRow[]> {
  const rows = await db.selectFrom('booking_sweeps').selectAll().orderBy('property_id').execute();
  return rows.map(toRow);
}

/** The sweep saw the property caught up for the first time: its schedule starts now (a second call changes nothing). */
export async function startWatching(db: Executor, propertyId: string, at: Date): Promise<void> {
  await db
    .insertInto('booking_sweeps')
    .values({ property_id: propertyId, watching_since: at })
    .onConflict((oc) => oc.column('property_id').doNothing())
    .execute();
}

/**
 * Counts one page of the pass, in the page's transaction. When no pass is in progress, this
 * page starts one (at `startedAt`, from `from`); `from` (a page asked by lastModification) also
 * records where a restarted pass began again. `finishedAt`: the pass ends with this page, its
 * figures become the last pass's and the totals grow.
 */
export async function recordSweepPage(
  trx: Executor,
  p: { propertyId: string; startedAt: Date; from: Date | null; page: SweepCounts; finishedAt: Date | null },
): Promise<void> {
  const c = p.page;
  const fresh = sql`s.pass_started_at IS NULL`;
  await sql`
    INSERT INTO booking_sweeps AS s (property_id, watching_since, pass_started_at, pass_from, pass_pages, pass_summaries, pass_enqueued, pass_late)
    VALUES (${p.propertyId}, ${p.startedAt}, ${p.startedAt}, ${p.from}, ${c.pages}, ${c.summaries}, ${c.enqueued}, ${c.late})
    ON CONFLICT (property_id) DO UPDATE SET
      pass_started_at = COALESCE(s.pass_started_at, excluded.pass_started_at),
      pass_from = COALESCE(excluded.pass_from, s.pass_from),
      pass_pages = CASE WHEN ${fresh} THEN 0 ELSE s.pass_pages END + excluded.pass_pages,
      pass_summaries = CASE WHEN ${fresh} THEN 0 ELSE s.pass_summaries END + excluded.pass_summaries,
      pass_enqueued = CASE WHEN ${fresh} THEN 0 ELSE s.pass_enqueued END + excluded.pass_enqueued,
      pass_late = CASE WHEN ${fresh} THEN 0 ELSE s.pass_late END + excluded.pass_late,
      pass_restarts = CASE WHEN ${fresh} THEN 0 ELSE s.pass_restarts END`.execute(trx);
  if (!p.finishedAt) return;
  await sql`
    UPDATE booking_sweeps SET
      last_started_at = pass_started_at, last_finished_at = ${p.finishedAt}, last_from = pass_from,
      last_pages = pass_pages, last_summaries = pass_summaries, last_enqueued = pass_enqueued,
      last_late = pass_late, last_restarts = pass_restarts,
      passes = passes + 1, late_changes = late_changes + pass_late,
      pass_started_at = NULL, pass_from = NULL, pass_pages = 0, pass_summaries = 0, pass_enqueued = 0, pass_late = 0, pass_restarts = 0
    WHERE property_id = ${p.propertyId}`.execute(trx);
}

/**
 * The provider rejected the pass's continueToken: the pass starts again from its lookback
 * (the token goes, the figures so far stay: they are what the pass cost and found).
 */
export async function restartSweepPass(trx: Executor, propertyId: string, at: Date): Promise<void> {
  await trx
    .updateTable('booking_sweeps')
    .set((eb) => ({ pass_restarts: eb('pass_restarts', '+', 1) }))
    .where('property_id', '=', propertyId)
    .where('pass_started_at', 'is not', null)
    .execute();
  await trx
    .updateTable('sync_cursors')
    .set({ cursor: null, updated_at: at })
    .where('property_id', '=', propertyId)
    .where('stream', '=', streamNames.bookingSweep)
    .execute();
}

/**
 * The summary versions the booking list already showed for these bookings (booking_summaries),
 * by number: a listed version newer than these is a late change.
 */
export async function listedVersions(db: Executor, propertyId: string, numbers: readonly string[]): Promise<Map<string, Date | null>> {
  if (numbers.length === 0) return new Map();
  const rows = await db
    .selectFrom('booking_summaries')
    .select(['number', 'modified_at'])
    .where('property_id', '=', propertyId)
    .where('number', 'in', [...numbers])
    .execute();
  return new Map(rows.map((r) => [r.number, r.modified_at]));
}
