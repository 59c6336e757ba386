/**
 * What history costs on the write path (scenario B with --memory-history-pairs): `sync --once`
 * at one size, in pairs run one after the other, with history and without it, and the details
 * written per second of each.
 *
 * "Without history": the same build and the same statements, with the database leaving out
 * what history stores: a BEFORE INSERT trigger that returns NULL on booking_versions,
 * booking_night_history and pms_stay_versions (a row not inserted, no index entry, no WAL),
 * so nothing is ever open to close either. nightly_facts is kept (the facts daily_kpis reads,
 * not history). The daemon still plans each version's history and sends it: that part of the
 * cost (its CPU, a few per cent: docs/benchmarks.md) is in both runs of a pair.
 */
import type pg from 'pg';
import { quantile } from './stats.js';
import type { Line } from './report.js';

/** The tables whose rows are history. */
const HISTORY_TABLES = ['booking_versions', 'booking_night_history', 'pms_stay_versions'];

/** Makes the schema drop every row inserted into a history table. */
export async function leaveHistoryOut(c: pg.Client, schema: string): Promise<void> {
  const s = `"${schema.replace(/"/g, '""')}"`;
  await c.query(`CREATE FUNCTION ${s}.bench_leave_out() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$`);
  for (const t of HISTORY_TABLES) {
    await c.query(`CREATE TRIGGER bench_leave_out BEFORE INSERT ON ${s}.${t} FOR EACH ROW EXECUTE FUNCTION ${s}.bench_leave_out()`);
  }
}

/** Checks a run's mirror: history kept (versions of every booking) or left out (none). */
export const expectHistory =
  (kept: boolean) =>
  async (c: pg.Client, schema: string): Promise<void> => {
    const s = `"${schema.replace(/"/g, '""')}"`;
    const r = await c.query<{ versions: number; bookings: number }>(
      `SELECT (SELECT count(DISTINCT (property_id, number)) FROM ${s}.booking_versions)::int AS versions, (SELECT count(*) FROM ${s}.bookings)::int AS bookings`,
    );
    const { versions, bookings } = r.rows[0]!;
    if (kept ? versions !== bookings : versions !== 0) {
      throw new Error(`history ${kept ? 'kept' : 'left out'}, but ${versions} of ${bookings} bookings have versions`);
    }
  };

/** Migrated and left as it is: the other half of a pair, prepared the same way. */
export const keepHistory = async (): Promise<void> => undefined;

/** The goal: details written per second with history at least this share of without. */
export const HISTORY_COST_GOAL = 0.9;

export interface HistoryPair {
  withHistory: number;
  withoutHistory: number;
}

/** A line per pair and the median's verdict. */
export function historyCostLines(size: number, pairs: readonly HistoryPair[]): Line[] {
  const ratios = pairs.map((p) => p.withHistory / p.withoutHistory);
  const lines: Line[] = pairs.map((p, i) => ({
    label: `pair ${i + 1}`,
    value: ratios[i]!.toFixed(2),
    detail: `${p.withHistory.toFixed(0)} details/s with history, ${p.withoutHistory.toFixed(0)} without`,
    goal: '',
    verdict: '',
  }));
  if (ratios.length > 0) {
    const m = quantile(ratios, 0.5);
    lines.push({
      label: `${size} bookings`,
      value: m.toFixed(2),
      detail: `details/s with history against without, median of ${ratios.length} pair${ratios.length === 1 ? '' : 's'}`,
      goal: `(goal >= ${HISTORY_COST_GOAL})`,
      verdict: m >= HISTORY_COST_GOAL ? 'PASS' : 'MISS',
    });
  }
  return lines;
}
