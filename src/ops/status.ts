/**
 * `staysync status`: where each property stands and how the sync is doing, read from the
 * database alone (any machine, no lock, no DDL), as a table for people or JSON for scripts.
 */
import { streamNames } from '../store/states.js';
import type { Config } from '../config/config.js';
import type { Db } from '../store/types.js';
import { backfillPendingByProperty, queueDepthByProperty, pendingCount } from '../store/repositories/fetch-queue.js';
import { unreadPmsReads } from '../store/repositories/pms.js';
import { lastContentRefresh } from '../store/repositories/content.js';
import { listCursors } from '../store/repositories/cursors.js';
import { connectionStatus, replicaStatus, type ConnectionStatusRow } from '../store/repositories/connections.js';
import { tokenCapacity } from '../provider/token-capacity.js';
import { countQuarantined, quarantineByStream } from '../store/repositories/quarantine.js';
import { recentRuns, type RunRow } from '../store/repositories/runs.js';
import { countEvents, waitingEvents } from '../store/repositories/webhook-events.js';
import { KNOWN_EVENT_TYPES } from '../sync/streams/events.js';
import { estimateFirstSync, firstSyncTotals, formatDuration, queueEtaSeconds, type FirstSyncEstimate } from '../sync/runtime/progress.js';
import { listedSoFar } from '../store/repositories/booking-summaries.js';
import { gatherSweeps, sweepLines, type PropertySweepStatus } from './sweep-status.js';
import { freshnessByProperty } from '../store/repositories/freshness.js';
import { freshnessLines, toFreshnessStatus, type FreshnessStatus } from './freshness.js';
import { gatherPmsBackfill, pmsBackfillLines, type PmsBackfillStatus } from './pms-backfill-status.js';
import { gatherRoomInventoryWithoutCodes, roomInventoryLines, type RoomInventoryWithoutCodes } from './room-inventory-status.js';
import { recoverCommand } from '../sync/runtime/errors.js';

export interface PropertyStatus {
  propertyId: string;
  /** active, retrying, failing, needs_recover, not_granted (the API connection may not use the Read Reservation API), or "not started". */
  state: string;
  /** When the current retrying/failing/needs_recover state began. */
  since: string | null;
  /** needs_recover: the command that recovers its booking list; else null. */
  recover: string | null;
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
  /** Last poll, newest mirrored change, data as of, lag of the last hour's fresh changes; null before the first page. */
  freshness: FreshnessStatus | null;
  /**
   * While the property is in a first sync (its booking list has not caught up, or the details of
   * what it listed are still being read; also a catch-up after a long stop or a recovery): bookings
   * listed, the estimate of the total (exact once the list caught up), when the last detail is read.
   */
  firstSync: FirstSyncEstimate | null;
}

/** The PMS side of a property: search position, fetch queue, occupancy refresh. */
export interface PmsPropertyStatus {
  propertyId: string;
  state: string;
  since: string | null;
  /** Every PMS modification up to this time has been searched. */
  searchedTo: string | null;
  caughtUp: boolean;
  lastError: string | null;
  queuePending: number;
  queueNotFound: number;
  queueQuarantined: number;
  occupancyState: string;
  occupancyRefreshedAt: string | null;
  occupancyError: string | null;
  /** The inventory per room type and the stay units (integration storage): their cursor's state, or 'not refreshed'. */
  roomInventoryState: string;
  roomInventoryRefreshedAt: string | null;
  stayUnitsState: string;
  stayUnitsRefreshedAt: string | null;
  /**
   * Each PMS refresh of the property (rooms, companies, accommodation inventory, occupancy,
   * inventory by room type, stay units): its state and when it last read the property. The
   * invoices and loyalty cards appear once most of their reads failed (readAt stays null).
   */
  reads: Record<string, { state: string; readAt: string | null; lastError: string | null }>;
  /** What waits for the pass after the backfill: reservations whose invoices, and persons whose loyalty cards (0 while pms.loyaltyCards is off), are not read yet. */
  unread: { invoices: number; loyaltyCards: number };
}

export interface StatusReport {
  properties: PropertyStatus[];
  pms: PmsPropertyStatus[];
  /** Per API connection, what its PMS backfill has still to read and how long that takes at its standard budget. */
  pmsBackfill: PmsBackfillStatus[];
  /** Properties whose inventory by room type and stay units are empty for want of a PMS code, and why. */
  roomInventoryWithoutCodes: RoomInventoryWithoutCodes[];
  /** Change events by type and state. */
  events: { eventType: string; state: string; n: number }[];
  /** Change events kept because what they name cannot be fetched now: how many, and the commonest reasons. */
  eventsWaiting: Awaited<ReturnType<typeof waitingEvents>>;
  /** Quarantined payloads by stream and cause. */
  quarantine: Awaited<ReturnType<typeof quarantineByStream>>;
  queuePending: number;
  queueEta: string;
  /** Each API connection: its state and the replica syncing it. */
  connections: ConnectionStatusRow[];
  /** The processes syncing into the schema now. */
  replicas: Awaited<ReturnType<typeof replicaStatus>>;
  /** How many connections the token endpoint's per-IP limit carries, against how many there are. */
  tokens: { connections: number; capacity: number; explanation: string };
  /** The latest run (running or ended). */
  lastRun: RunRow | null;
  lastContentRefresh: Awaited<ReturnType<typeof lastContentRefresh>> | null;
  /** The reconciliation sweep per property: last pass and what it found, next due. */
  sweeps: PropertySweepStatus[];
  /** The properties whose list has not caught up, together: details still to read, and when the last one ends at the shared budgets (null while one has no estimate yet). */
  firstSync: { properties: number; detailsLeft: number; endsInSeconds: number | null; endsIn: string | null };
}

export async function gatherStatus(db: Db, config: Config): Promise<StatusReport> {
  const connections = await connectionStatus(db);
  const capacity = tokenCapacity(config);
  const cursors = await listCursors(db, streamNames.bookingSummaries);
  const depth = new Map((await queueDepthByProperty(db, 'booking_detail_queue')).map((d) => [d.propertyId, d]));
  const quarantined = await countQuarantined(db);
  const freshness = new Map((await freshnessByProperty(db)).map((f) => [f.propertyId, f]));
  const ids = [...new Set([...config.propertyIds, ...cursors.map((c) => c.propertyId)])].sort();
  const windows = config.rateLimits.bookingDetails;
  // In a first sync: the list has not caught up, or it has and the details it listed are still
  // being read. Counted only for those properties: it reads their rows.
  const backfill = await backfillPendingByProperty(db);
  // A list that is not syncing (not granted, failing, needs recover) has no end to estimate.
  const syncing = (c: (typeof cursors)[number]) => c.state === 'active' || c.state === 'retrying';
  const behind = new Set(cursors.filter((c) => syncing(c) && (!c.caughtUp || (backfill.get(c.propertyId) ?? 0) > 0)).map((c) => c.propertyId));
  const listed = new Map((await listedSoFar(db, [...behind])).map((l) => [l.propertyId, l]));
  const now = Date.now();
  const estimates: Parameters<typeof firstSyncTotals>[0][number][] = [];
  const properties: PropertyStatus[] = ids.map((id) => {
    const c = cursors.find((x) => x.propertyId === id);
    const d = depth.get(id);
    let firstSync: FirstSyncEstimate | null = null;
    if (c && behind.has(id)) {
      const l = listed.get(id);
      const input = {
        found: l?.bookings ?? 0,
        firstModification: l?.firstModification ?? null,
        position: c.position,
        caughtUp: c.caughtUp,
        pendingDetails: d?.pending ?? 0,
        now,
        pageSize: config.sync.summariesPageSize,
        listWindows: config.rateLimits.bookingList,
        detailWindows: windows,
      };
      firstSync = estimateFirstSync(input);
      estimates.push({ input, estimate: firstSync });
    }
    return {
      propertyId: id,
      state: c ? c.state : 'not started',
      since: c?.errorSince?.toISOString() ?? null,
      recover: c?.state === 'needs_recover' ? recoverCommand(id) : null,
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
      freshness: toFreshnessStatus(freshness.get(id)),
      firstSync,
    };
  });
  const totals = firstSyncTotals(estimates);
  const total = await pendingCount(db, 'booking_detail_queue');
  const pmsCursors = new Map((await listCursors(db, 'pms_reservations')).map((c) => [c.propertyId, c]));
  const pmsDepth = new Map((await queueDepthByProperty(db, 'pms_reservation_queue')).map((d) => [d.propertyId, d]));
  const refreshCursors = new Map<string, Map<string, Awaited<ReturnType<typeof listCursors>>[number]>>();
  for (const stream of PMS_REFRESH_STREAMS)
    for (const c of await listCursors(db, stream)) {
      let byStream = refreshCursors.get(c.propertyId);
      if (!byStream) refreshCursors.set(c.propertyId, (byStream = new Map()));
      byStream.set(stream, c);
    }
  const unread = new Map((await unreadPmsReads(db)).map((u) => [u.propertyId, u]));
  const pmsIds = [...new Set([...pmsCursors.keys(), ...pmsDepth.keys(), ...refreshCursors.keys()])].sort();
  const pms: PmsPropertyStatus[] = pmsIds.map((id) => {
    const c = pmsCursors.get(id);
    const d = pmsDepth.get(id);
    // Each refresh's cursor, read once above for `reads` as for the fields of its own.
    const refreshes = refreshCursors.get(id);
    const o = refreshes?.get(streamNames.dailyOccupancy);
    const roomInventory = refreshes?.get(streamNames.roomTypeInventory);
    const stayUnits = refreshes?.get(streamNames.stayUnits);
    return {
      propertyId: id,
      state: c ? c.state : 'not started',
      since: c?.errorSince?.toISOString() ?? null,
      searchedTo: c?.position?.toISOString() ?? null,
      caughtUp: c?.caughtUp ?? false,
      lastError: c?.lastError ?? null,
      queuePending: d?.pending ?? 0,
      queueNotFound: d?.notFound ?? 0,
      queueQuarantined: d?.quarantined ?? 0,
      occupancyState: o ? o.state : 'not refreshed',
      occupancyRefreshedAt: o?.lastPollAt?.toISOString() ?? null,
      occupancyError: o?.lastError ?? null,
      roomInventoryState: roomInventory?.state ?? 'not refreshed',
      roomInventoryRefreshedAt: roomInventory?.lastPollAt?.toISOString() ?? null,
      stayUnitsState: stayUnits?.state ?? 'not refreshed',
      stayUnitsRefreshedAt: stayUnits?.lastPollAt?.toISOString() ?? null,
      reads: Object.fromEntries(
        [...(refreshes ?? [])].map(([stream, c]) => [stream, { state: c.state, readAt: c.lastPollAt?.toISOString() ?? null, lastError: c.lastError }]),
      ),
      unread: { invoices: unread.get(id)?.invoices ?? 0, loyaltyCards: config.pms.loyaltyCards ? (unread.get(id)?.loyaltyCards ?? 0) : 0 },
    };
  });
  return {
    properties,
    pms,
    pmsBackfill: await gatherPmsBackfill(db, config),
    roomInventoryWithoutCodes: await gatherRoomInventoryWithoutCodes(db, config),
    events: await countEvents(db, KNOWN_EVENT_TYPES),
    eventsWaiting: await waitingEvents(db, WAITING_REASONS_SHOWN),
    queuePending: total,
    queueEta: formatDuration(queueEtaSeconds(total, windows)),
    quarantine: await quarantineByStream(db),
    connections,
    replicas: await replicaStatus(db),
    tokens: { connections: connections.length, capacity: capacity.connections, explanation: capacity.explanation },
    lastRun: (await recentRuns(db, 1))[0] ?? null,
    lastContentRefresh: (await lastContentRefresh(db)) ?? null,
    sweeps: await gatherSweeps(db, config, ids),
    firstSync: { ...totals, endsIn: totals.endsInSeconds === null ? null : formatDuration(totals.endsInSeconds) },
  };
}

/** The reasons of waiting change events that status names (each with its count); the rest are counted together. */
const WAITING_REASONS_SHOWN = 5;

const stateLabel: Record<string, string> = { needs_recover: 'NEEDS RECOVER', failing: 'FAILING', retrying: 'retrying', not_granted: 'not granted' };
const connectionLabel: Record<string, string> = { credentials_refused: 'CREDENTIALS REFUSED', failed: 'FAILED' };

/** The report as lines of text for a terminal. */
export function formatStatus(r: StatusReport): string[] {
  const out: string[] = [];
  if (r.properties.length === 0) {
    out.push('No property configured or mirrored yet. Set STAYSYNC_PROPERTY_IDS (or let the content API list them) and run `staysync sync --once`.');
  } else {
    const header = [
      'property',
      'state',
      'since (UTC)',
      'list position (UTC)',
      'caught up',
      'last poll (UTC)',
      'queue',
      'retrying',
      '404',
      'quarantined',
      'queue ETA',
    ];
    const rows = r.properties.map((p) => [
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
    out.push(...tableLines(header, rows));
    out.push('');
  }
  out.push(...firstSyncLines(r));
  out.push(...freshnessLines(r.properties));
  out.push(`Detail queue: ${r.queuePending} pending, ETA ${r.queueEta} at the details budget.`);
  out.push(...sweepLines(r.sweeps));
  if (r.pms.length > 0) {
    out.push('');
    out.push(
      ...tableLines(
        ['PMS property', 'state', 'since (UTC)', 'searched to (UTC)', 'caught up', 'queue', '404', 'quarantined', 'occupancy', 'occupancy refreshed (UTC)'],
        r.pms.map((p) => [
          p.propertyId,
          stateLabel[p.state] ?? p.state,
          p.since ?? '-',
          p.searchedTo ?? '-',
          p.caughtUp ? 'yes' : 'no',
          String(p.queuePending),
          String(p.queueNotFound),
          String(p.queueQuarantined),
          stateLabel[p.occupancyState] ?? p.occupancyState,
          p.occupancyRefreshedAt ?? '-',
        ]),
      ),
    );
  }
  out.push(...pmsReadLines(r.pms));
  out.push(...pmsBackfillLines(r.pmsBackfill));
  out.push(...roomInventoryLines(r.roomInventoryWithoutCodes));
  if (r.events.length > 0) {
    const byState = new Map<string, number>();
    for (const e of r.events) byState.set(e.state, (byState.get(e.state) ?? 0) + e.n);
    out.push(`Change events: ${[...byState].map(([state, n]) => `${n} ${state}`).join(', ')}.`);
  }
  const w = r.eventsWaiting;
  if (w.total > 0) {
    out.push(`Change events kept until what they name can be fetched (${w.total}):`);
    for (const x of w.reasons) out.push(`  ${x.n} × ${x.reason.slice(0, 300)}; next look ${x.nextAt.toISOString()}`);
    const shown = w.reasons.reduce((n, x) => n + x.n, 0);
    if (shown < w.total) out.push(`  ${w.total - shown} more, for other reasons.`);
  }
  if (r.quarantine.length > 0) {
    const total = r.quarantine.reduce((n, q) => n + q.payloads, 0);
    const parts = r.quarantine.map((q) => `${q.stream}: ${q.payloads} ${q.cause === 'write' ? 'the database refused' : 'failed validation'}`);
    out.push(
      `Quarantine: ${total} payload${total === 1 ? '' : 's'} (${parts.join(', ')}); retried on a growing backoff, or now with \`staysync quarantine retry\`.`,
    );
  }
  const c = r.lastContentRefresh;
  out.push(
    c
      ? `Content: last refresh started ${c.startedAt.toISOString()}, ${c.outcome ?? 'running or interrupted'}` +
          (c.properties !== null ? `, ${c.properties} properties, ${c.changedRows ?? 0} rows changed.` : '.')
      : 'Content: never refreshed.',
  );
  if (r.connections.length > 1 || r.connections.some((c) => c.state !== 'running' && c.state !== 'stopped' && c.state !== 'waiting')) {
    out.push('');
    out.push(
      ...tableLines(
        ['connection', 'state', 'since (UTC)', 'synced by', 'properties', 'queue'],
        r.connections.map((c) => [
          c.connection,
          connectionLabel[c.state] ?? c.state,
          c.since.toISOString(),
          c.syncedBy ?? '-',
          String(c.properties),
          String(c.queuePending),
        ]),
      ),
    );
  }
  out.push(
    r.replicas.length === 0
      ? 'Replicas: none (no staysync process is syncing into this schema).'
      : `Replicas: ${r.replicas.length} (${r.replicas.map((x) => `${x.holder} since ${x.startedAt.toISOString()}, ${x.connections} connection${x.connections === 1 ? '' : 's'}`).join('; ')}).`,
  );
  if (r.tokens.connections > r.tokens.capacity) {
    out.push(
      `Tokens: ${r.tokens.connections} connections are more than the token endpoint's limit carries from one IP address (${r.tokens.explanation}): some wait for their tokens; run replicas with other egress IPs.`,
    );
  }
  const run = r.lastRun;
  if (run) {
    const who = run.host ? ` on ${run.host} pid ${run.pid}` : '';
    out.push(
      run.finishedAt
        ? `Last run: ${run.command}${who}, ${run.startedAt.toISOString()} to ${run.finishedAt.toISOString()}, ${run.outcome}${run.error ? `: ${run.error}` : ''}.`
        : `Running: ${run.command}${who} since ${run.startedAt.toISOString()}.`,
    );
  }
  for (const c of r.connections.filter((x) => x.reason && x.state !== 'running'))
    out.push(`connection ${c.connection}: ${connectionLabel[c.state] ?? c.state}: ${c.reason}`);
  for (const p of r.properties.filter((x) => x.lastError))
    out.push(`property ${p.propertyId}: ${stateLabel[p.state] ?? p.state}: ${p.lastError}${p.recover ? `. Recover its booking list: ${p.recover}` : ''}`);
  for (const p of r.pms.filter((x) => x.lastError)) out.push(`property ${p.propertyId}: PMS reservations ${stateLabel[p.state] ?? p.state}: ${p.lastError}`);
  for (const p of r.pms.filter((x) => x.occupancyError))
    out.push(`property ${p.propertyId}: daily occupancy ${stateLabel[p.occupancyState] ?? p.occupancyState}: ${p.occupancyError}`);
  for (const p of r.pms)
    for (const stream of FAILING_READ_STREAMS) {
      const read = p.reads[stream];
      if (read?.lastError) out.push(`property ${p.propertyId}: ${READ_NAMES[stream]} ${stateLabel[read.state] ?? read.state}: ${read.lastError}`);
    }
  const notGranted = [...r.properties.map((p) => p.state), ...r.pms.flatMap((p) => [p.state, p.occupancyState])].includes('not_granted');
  if (notGranted)
    out.push(
      'Not granted is not a failure: the API connection may not use that API. To mirror it, tick the API in the extranet ' +
        '(Property settings > API connections > the connection > Public APIs tab); a running daemon starts its streams at its next access token (within about 15 minutes).',
    );
  return out;
}

/**
 * One line per property whose booking list has not caught up: what it has listed, the estimate,
 * when it ends; and the time for all of them when there are several (they share the budgets).
 */
function firstSyncLines(r: StatusReport): string[] {
  const out: string[] = [];
  for (const p of r.properties) {
    const f = p.firstSync;
    if (!f) continue;
    const found = `${f.found.toLocaleString('en')} booking${f.found === 1 ? '' : 's'} listed so far${p.position ? ` (modified up to ${p.position})` : ''}`;
    const ends = f.endsInSeconds === null ? '' : `ends in about ${formatDuration(f.endsInSeconds)}`;
    out.push(
      f.estimatedTotal === null || f.endsInSeconds === null
        ? `First sync of property ${p.propertyId}: ${found}; no estimate until the list has read more than one modification second.`
        : p.caughtUp
          ? `First sync of property ${p.propertyId}: all ${f.found.toLocaleString('en')} bookings listed, the details of ${p.queuePending.toLocaleString('en')} still to read; ` +
            `${ends} at the details budget. Figures in the mirror are partial until then.`
          : `First sync of property ${p.propertyId}: ${found}, about ${f.estimatedTotal.toLocaleString('en')} in all; ` +
            `${ends} at the list and details budgets. Figures in the mirror are partial until then.`,
    );
  }
  const t = r.firstSync;
  if (t.properties > 1)
    out.push(
      `First syncs together: ${t.properties} properties, about ${t.detailsLeft.toLocaleString('en')} booking details still to read; ` +
        (t.endsIn === null ? 'no estimate yet.' : `the last ends in about ${t.endsIn} (they share the budgets).`),
    );
  if (out.length > 0) out.push('');
  return out;
}

/** A table of aligned columns. */
function tableLines(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [fmt(header), ...rows.map(fmt)];
}

/** The PMS refreshes of a property, by stream, in the order status names them. */
const PMS_REFRESH_STREAMS = [
  streamNames.pmsRooms,
  streamNames.pmsCompanies,
  streamNames.accommodationInventory,
  streamNames.dailyOccupancy,
  streamNames.roomTypeInventory,
  streamNames.stayUnits,
  streamNames.pmsInvoices,
  streamNames.pmsLoyaltyCards,
] as const;

/** The reads of one thing at a time, whose cursor says only whether most of them fail (sync/runtime/read-health.ts): their error gets a line. */
const FAILING_READ_STREAMS = [streamNames.pmsInvoices, streamNames.pmsLoyaltyCards] as const;

const READ_NAMES: Record<string, string> = {
  pms_rooms: 'rooms',
  pms_companies: 'companies',
  accommodation_inventory: 'where rooms are',
  daily_occupancy: 'occupancy',
  room_type_inventory: 'inventory by room type',
  stay_units: 'stay units',
  pms_invoices: 'invoices',
  pms_loyalty_cards: 'loyalty cards',
};

/** One line per PMS property: when each of its refreshes last read it, and what the pass after the backfill has still to read. */
function pmsReadLines(pms: readonly PmsPropertyStatus[]): string[] {
  const out: string[] = [];
  for (const p of pms) {
    const reads = PMS_REFRESH_STREAMS.flatMap((stream) => {
      const r = p.reads[stream];
      if (!r) return [];
      const state = r.state === 'active' ? '' : ` ${stateLabel[r.state] ?? r.state}`;
      // The invoices and loyalty cards have no read time: only their state, and only when it is not active.
      if (r.readAt === null && (FAILING_READ_STREAMS as readonly string[]).includes(stream)) return state ? [`${READ_NAMES[stream]}${state}`] : [];
      return [`${READ_NAMES[stream]} ${r.readAt ?? 'never'}${state}`];
    });
    const unread = [
      p.unread.invoices > 0 ? `invoices of ${p.unread.invoices} reservations` : '',
      p.unread.loyaltyCards > 0 ? `loyalty cards of ${p.unread.loyaltyCards} persons` : '',
    ].filter(Boolean);
    if (reads.length === 0 && unread.length === 0) continue;
    out.push(
      `PMS property ${p.propertyId} read: ${reads.length > 0 ? reads.join(', ') : 'no refresh yet'}` +
        (unread.length > 0 ? `; not read yet: ${unread.join(', ')}` : ''),
    );
  }
  return out;
}
