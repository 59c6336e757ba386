/**
 * What the reconciliation sweep (src/sync/booking-sweep.ts) did, for `status` and /metrics:
 * per property, when it last swept and what that pass found, read from booking_sweeps.
 */
import { streamNames } from '../store/states.js';
import client from 'prom-client';
import type { Config } from '../config/config.js';
import type { Db } from '../store/types.js';
import { listCursors, type CursorRow } from '../store/repositories/cursors.js';
import { listSweeps, nextSweepDueAt, type SweepRow } from '../store/repositories/sweeps.js';

export interface PropertySweepStatus {
  propertyId: string;
  /** False when sync.sweep.enabled is false (the other fields then show what earlier runs did). */
  enabled: boolean;
  /** The last finished pass; null: not swept yet. */
  last: {
    startedAt: string;
    finishedAt: string;
    /** lastModification the pass read from. */
    from: string | null;
    pages: number;
    summaries: number;
    /** Summary versions the booking list had never shown. */
    lateChanges: number;
    /** Detail fetches the pass enqueued. */
    enqueued: number;
  } | null;
  /** The pass in progress: when it started and the pages read so far; null when none. */
  inProgress: { startedAt: string; pages: number } | null;
  /** When the next pass is due; null until the booking list was seen caught up. */
  nextDueAt: string | null;
  /** Passes finished and late changes they found, in all. */
  passes: number;
  lateChangesTotal: number;
  /** The sweep stream's state (active, retrying, failing) and last error; "not started" before its first page. */
  state: string;
  lastError: string | null;
}

/** The sweep of each of `propertyIds` (and of every property swept before). */
export async function gatherSweeps(db: Db, config: Config, propertyIds: readonly string[]): Promise<PropertySweepStatus[]> {
  const rows = new Map((await listSweeps(db)).map((s) => [s.propertyId, s]));
  const cursors = new Map((await listCursors(db, streamNames.bookingSweep)).map((c) => [c.propertyId, c]));
  const ids = [...new Set([...propertyIds, ...rows.keys()])].sort();
  return ids.map((id) => toStatus(id, rows.get(id), cursors.get(id), config));
}

function toStatus(propertyId: string, s: SweepRow | undefined, c: CursorRow | undefined, config: Config): PropertySweepStatus {
  const { enabled, everyMs } = config.sync.sweep;
  return {
    propertyId,
    enabled,
    last: s?.last
      ? {
          startedAt: s.last.startedAt.toISOString(),
          finishedAt: s.last.finishedAt.toISOString(),
          from: s.last.from?.toISOString() ?? null,
          pages: s.last.pages,
          summaries: s.last.summaries,
          lateChanges: s.last.late,
          enqueued: s.last.enqueued,
        }
      : null,
    inProgress: s?.pass ? { startedAt: s.pass.startedAt.toISOString(), pages: s.pass.pages } : null,
    nextDueAt: s && enabled ? nextSweepDueAt(s, everyMs).toISOString() : null,
    passes: s?.passes ?? 0,
    lateChangesTotal: s?.lateChanges ?? 0,
    state: c?.state ?? 'not started',
    lastError: c?.lastError ?? null,
  };
}

const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** One line per property: "last swept <time>, found <n> late change(s) in <pages> page(s)", "not yet", or "sweep disabled". */
export function sweepLines(sweeps: readonly PropertySweepStatus[]): string[] {
  return sweeps.map((s) => {
    const head = `property ${s.propertyId}: sweep`;
    if (!s.enabled) return `${head} disabled (sync.sweep.enabled)${s.last ? `; last swept ${s.last.finishedAt}` : ''}.`;
    const problem = s.lastError ? `; ${s.state}: ${s.lastError}` : '';
    const running = (s.inProgress ? `; a pass is in progress since ${s.inProgress.startedAt} (${count(s.inProgress.pages, 'page')} read)` : '') + problem;
    if (!s.last) {
      const when = s.nextDueAt ? `first sweep due ${s.nextDueAt}` : 'due sync.sweep.everyMs after the booking list is seen caught up';
      return `${head}: not yet (${when})${running}.`;
    }
    const l = s.last;
    return (
      `${head}: last swept ${l.finishedAt}, found ${count(l.lateChanges, 'late change')} in ${count(l.pages, 'page')} ` +
      `(${count(l.summaries, 'summary', 'summaries')} modified since ${l.from ?? '?'}, ${count(l.enqueued, 'detail fetch', 'detail fetches')})` +
      `${running}${s.nextDueAt ? `; next due ${s.nextDueAt}` : ''}.`
    );
  });
}

/**
 * /metrics: the sweep's gauges, from booking_sweeps as the table gauges' snapshot read it
 * (table-snapshot.ts; left out while there is none: the database is away).
 */
export function registerSweepMetrics(register: client.Registry, rows: () => Promise<readonly SweepRow[] | undefined>): void {
  new client.Counter({
    name: 'staysync_sweep_late_changes_total',
    help: 'Late changes the reconciliation sweep found (summary versions the booking list had never shown), by property, over all finished passes.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const s of (await rows()) ?? []) this.inc({ property_id: s.propertyId }, s.lateChanges);
    },
  });
  new client.Gauge({
    name: 'staysync_sweep_last_late_changes',
    help: 'Late changes the last finished sweep pass of the property found.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const s of (await rows()) ?? []) if (s.last) this.set({ property_id: s.propertyId }, s.last.late);
    },
  });
  new client.Gauge({
    name: 'staysync_sweep_last_finished_timestamp_seconds',
    help: 'When the last sweep pass of the property finished (unix seconds); absent before the first.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const s of (await rows()) ?? []) if (s.last) this.set({ property_id: s.propertyId }, s.last.finishedAt.getTime() / 1000);
    },
  });
}
