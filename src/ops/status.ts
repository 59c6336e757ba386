/**
 * `staysync status`: where each property stands and how the sync is doing, read from the
 * database alone (any machine, no lock, no DDL), as a table for people or JSON for scripts.
 */
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { queueDepthByProperty, pendingCount } from '../db/repositories/booking-queue.js';
import { lastContentRefresh } from '../db/repositories/content.js';
import { BOOKING_SUMMARIES, listCursors } from '../db/repositories/cursors.js';
import { leaseStatus, type LeaseStatus } from '../db/repositories/lease.js';
import { countQuarantined } from '../db/repositories/quarantine.js';
import { recentRuns, type RunRow } from '../db/repositories/runs.js';
import { formatDuration, queueEtaSeconds } from '../sync/progress.js';

export interface PropertyStatus {
  propertyId: string;
  /** active, retrying, failing, token_lost, or "not started". */
  state: string;
  /** When the current retrying/failing/token_lost state began. */
  since: string | null;
  position: string | null;
  caughtUp: boolean;
  lastPollAt: string | null;
  lastError: string | null;
  queuePending: number;
  /** Pending fetches that already failed at least once (retried with backoff). */
  queueRetrying: number;
  queueNotFound: number;
  queueQuarantined: number;
  quarantined: number;
  queueEta: string;
}

export interface StatusReport {
  properties: PropertyStatus[];
  queuePending: number;
  queueEta: string;
  lease: LeaseStatus;
  /** The latest run (running or ended). */
  lastRun: RunRow | null;
  lastContentRefresh: Awaited<ReturnType<typeof lastContentRefresh>> | null;
}

export async function gatherStatus(db: Db, config: Config): Promise<StatusReport> {
  const cursors = await listCursors(db, BOOKING_SUMMARIES);
  const depth = new Map((await queueDepthByProperty(db)).map((d) => [d.propertyId, d]));
  const quarantined = await countQuarantined(db);
  const ids = [...new Set([...config.propertyIds, ...cursors.map((c) => c.propertyId)])].sort();
  const windows = config.rateLimits.bookingDetails;
  const properties: PropertyStatus[] = ids.map((id) => {
    const c = cursors.find((x) => x.propertyId === id);
    const d = depth.get(id);
    return {
      propertyId: id,
      state: c ? c.state : 'not started',
      since: c?.errorSince?.toISOString() ?? null,
      position: c?.position?.toISOString() ?? null,
      caughtUp: c?.caughtUp ?? false,
      lastPollAt: c?.lastPollAt?.toISOString() ?? null,
      lastError: c?.lastError ?? null,
      queuePending: d?.pending ?? 0,
      queueRetrying: d?.retrying ?? 0,
      queueNotFound: d?.notFound ?? 0,
      queueQuarantined: d?.quarantined ?? 0,
      quarantined: quarantined.get(id) ?? 0,
      queueEta: formatDuration(queueEtaSeconds(d?.pending ?? 0, windows)),
    };
  });
  const total = await pendingCount(db);
  return {
    properties,
    queuePending: total,
    queueEta: formatDuration(queueEtaSeconds(total, windows)),
    lease: await leaseStatus(db, config.database.schema),
    lastRun: (await recentRuns(db, 1))[0] ?? null,
    lastContentRefresh: (await lastContentRefresh(db)) ?? null,
  };
}

const stateLabel: Record<string, string> = { token_lost: 'TOKEN LOST', failing: 'FAILING', retrying: 'retrying' };

/** The report as lines of text for a terminal. */
export function formatStatus(r: StatusReport): string[] {
  const out: string[] = [];
  if (r.properties.length === 0) {
    out.push('No property configured or mirrored yet. Set STAYSYNC_PROPERTY_IDS (or let the content API list them) and run `staysync sync --once`.');
  } else {
    const header = ['property', 'state', 'since (UTC)', 'list position (UTC)', 'caught up', 'last poll (UTC)', 'queue', 'retrying', '404', 'quarantined', 'queue ETA'];
    const table = r.properties.map((p) => [
      p.propertyId,
      stateLabel[p.state] ?? p.state,
      p.since ?? '-',
      p.position ?? '-',
      p.caughtUp ? 'yes' : 'no',
      p.lastPollAt ?? '-',
      String(p.queuePending),
      String(p.queueRetrying),
      String(p.queueNotFound),
      String(p.quarantined),
      p.queueEta,
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const fmt = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
    out.push(fmt(header));
    for (const row of table) out.push(fmt(row));
    out.push('');
  }
  out.push(`Detail queue: ${r.queuePending} pending, ETA ${r.queueEta} at the details budget.`);
  const c = r.lastContentRefresh;
  out.push(
    c
      ? `Content: last refresh started ${c.startedAt.toISOString()}, ${c.outcome ?? 'running or interrupted'}` +
          (c.properties !== null ? `, ${c.properties} properties, ${c.changedRows ?? 0} rows changed.` : '.')
      : 'Content: never refreshed.',
  );
  const l = r.lease;
  out.push(
    l.heldNow
      ? `Lease: held by ${l.holder ?? 'a staysync process'} since ${l.acquiredAt?.toISOString() ?? '?'} (epoch ${l.epoch ?? '?'}).`
      : `Lease: free (no staysync process is syncing into this schema${l.holder ? `; last held by ${l.holder}` : ''}).`,
  );
  const run = r.lastRun;
  if (run) {
    const who = run.host ? ` on ${run.host} pid ${run.pid}` : '';
    out.push(
      run.finishedAt
        ? `Last run: ${run.command}${who}, ${run.startedAt.toISOString()} to ${run.finishedAt.toISOString()}, ${run.outcome}${run.error ? `: ${run.error}` : ''}.`
        : `Running: ${run.command}${who} since ${run.startedAt.toISOString()}.`,
    );
  }
  for (const p of r.properties.filter((x) => x.lastError)) out.push(`property ${p.propertyId}: ${stateLabel[p.state] ?? p.state}: ${p.lastError}`);
  return out;
}
