/**
 * The table gauges of /metrics come from one snapshot of the bookkeeping tables (queues, list
 * positions, property states, change events, quarantine, freshness, reconciliation, sweeps),
 * read on the database handle's metrics connection: its own, read-only, each statement given up
 * after METRICS_STATEMENT_TIMEOUT_MS (store/database.ts). Never the control pool: the lease
 * heartbeat renews through it, and a scrape must never make a heartbeat wait.
 *
 * - At most one read is in flight. A scrape waits for it up to SCRAPE_WAIT_MS, then is
 *   answered with the last snapshot; staysync_metrics_snapshot_age_seconds says how old that
 *   one is. So a read held up by a lock or a busy server never piles scrapes up on the database.
 * - A snapshot serves the scrapes of the next FRESH_MS, and every gauge of a scrape. Its reads
 *   are one read-only transaction: a scrape costs the database one transaction.
 * - A read that fails (its time limit, an error) keeps the last snapshot: one log line when
 *   reads start failing, one when a read succeeds again.
 * - While the database is away there is no snapshot to serve: the table gauges are left out of
 *   the scrape (staysync_database_up says why), and no read is tried.
 */
import type { Logger } from '../util/log.js';
import type { Db, Executor } from '../store/types.js';
import type { DatabaseAvailability } from '../store/availability.js';
import { describeDatabaseError, isDatabaseUnavailable } from '../store/errors.js';
import { quarantineByStream } from '../store/repositories/quarantine.js';
import { queueDepthByProperty } from '../store/repositories/fetch-queue.js';
import { listCursors } from '../store/repositories/cursors.js';
import { cursorStreams } from '../store/states.js';
import { countEvents, pendingEventsByProperty } from '../store/repositories/webhook-events.js';
import { newestChangeByProperty } from '../store/repositories/freshness.js';
import { largestReconciliationGaps, propertyTimeZones } from '../store/repositories/day-close.js';
import { listSweeps } from '../store/repositories/sweeps.js';
import { unreadPmsReads } from '../store/repositories/pms.js';
import { KNOWN_EVENT_TYPES } from '../sync/streams/events.js';
import { isKnownTimeZone, localDate } from '../util/local-time.js';

/** A snapshot serves the scrapes of this long after its read began (several Prometheus servers scraping share it). */
const FRESH_MS = 1_000;
/** How long a scrape waits for a read in flight before it is answered with the last snapshot. */
const SCRAPE_WAIT_MS = 1_000;

export interface TableSnapshot {
  queue: Awaited<ReturnType<typeof queueDepthByProperty>>;
  pmsQueue: Awaited<ReturnType<typeof queueDepthByProperty>>;
  /** Cursors of every stream: the booking list first (list position). */
  cursors: Awaited<ReturnType<typeof listCursors>>;
  events: Awaited<ReturnType<typeof countEvents>>;
  quarantine: Awaited<ReturnType<typeof quarantineByStream>>;
  pendingEvents: Awaited<ReturnType<typeof pendingEventsByProperty>>;
  newestChanges: Awaited<ReturnType<typeof newestChangeByProperty>>;
  reconciliation: Awaited<ReturnType<typeof largestReconciliationGaps>>;
  sweeps: Awaited<ReturnType<typeof listSweeps>>;
  /** What waits for the PMS pass after the backfill, by property. */
  pmsUnread: Awaited<ReturnType<typeof unreadPmsReads>>;
}

/** A snapshot as served: the tables, and when their read began (epoch ms). */
export interface ServedSnapshot {
  tables: TableSnapshot;
  readAt: number;
}

export class TableSnapshots {
  private last: ServedSnapshot | undefined;
  private reading: Promise<void> | undefined;
  /** What the gauges of the scrape in progress get: one wait for all of them. */
  private serving: Promise<ServedSnapshot | undefined> | undefined;
  private failing = false;
  /** Reads that failed or ran over their time limit (metrics). */
  failures = 0;

  constructor(
    private readonly opts: {
      /** The handle's metrics connection. */
      db: Db;
      availability: DatabaseAvailability;
      logger: Logger;
    },
  ) {}

  /** The snapshot this scrape shows; undefined when there is none to show. */
  current(): Promise<ServedSnapshot | undefined> {
    return (this.serving ??= this.serve().finally(() => (this.serving = undefined)));
  }

  private async serve(): Promise<ServedSnapshot | undefined> {
    if (!this.opts.availability.available) return undefined;
    if (!this.reading && (!this.last || Date.now() - this.last.readAt > FRESH_MS)) {
      this.reading = this.read().finally(() => (this.reading = undefined));
    }
    if (this.reading) await waitAtMost(this.reading, SCRAPE_WAIT_MS);
    return this.opts.availability.available ? this.last : undefined;
  }

  private async read(): Promise<void> {
    const readAt = Date.now();
    const log = this.opts.logger;
    try {
      this.last = { tables: await readTables(this.opts.db), readAt };
      if (this.failing) {
        this.failing = false;
        log.info('the table gauges of /metrics are read again');
      }
    } catch (err) {
      // An outage is the availability's to tell (one line each way); the next read waits for its end.
      if (isDatabaseUnavailable(err)) return;
      this.failures += 1;
      if (this.failing) return;
      this.failing = true;
      const since = this.last ? `the snapshot read at ${new Date(this.last.readAt).toISOString()}` : 'no table gauges';
      log.warn(
        { err: describeDatabaseError(err) },
        `the table gauges of /metrics could not be read (${describeDatabaseError(err)}): /metrics shows ${since} until a read succeeds ` +
          '(staysync_metrics_snapshot_age_seconds); the sync and the lease heartbeat are not held up by it',
      );
    }
  }
}

/** Resolves when `p` settles or after `ms`, whichever comes first (`p` never rejects here). */
function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    void p.finally(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Every table read in one read-only transaction: one transaction a scrape, and gauges that agree with each other. */
async function readTables(handle: Db): Promise<TableSnapshot> {
  return handle.transaction().execute((trx) => readTablesIn(trx));
}

async function readTablesIn(db: Executor): Promise<TableSnapshot> {
  const cursors = [];
  for (const stream of cursorStreams) cursors.push(...(await listCursors(db, stream)));
  return {
    queue: await queueDepthByProperty(db, 'booking_detail_queue'),
    pmsQueue: await queueDepthByProperty(db, 'pms_reservation_queue'),
    cursors,
    events: await countEvents(db, KNOWN_EVENT_TYPES),
    quarantine: await quarantineByStream(db),
    pendingEvents: await pendingEventsByProperty(db),
    newestChanges: await newestChangeByProperty(db),
    reconciliation: await largestReconciliationGaps(db, await propertyTodays(db)),
    sweeps: await listSweeps(db),
    pmsUnread: await unreadPmsReads(db),
  };
}

/** Each property's local today (UTC when its zone is not known here), for the nights before it. */
async function propertyTodays(db: Executor): Promise<{ propertyId: string; today: string }[]> {
  const now = Date.now();
  return (await propertyTimeZones(db)).map(({ propertyId, timeZone }) => ({
    propertyId,
    today: localDate(now, timeZone !== null && isKnownTimeZone(timeZone) ? timeZone : 'UTC'),
  }));
}
