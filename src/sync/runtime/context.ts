import type { Config } from '../../config/config.js';
import type { DatabaseAvailability } from '../../store/availability.js';
import type { DatabaseHandle } from '../../store/database.js';
import type { Db, Trx } from '../../store/types.js';
import type { WriteFence } from '../../store/schema-lock.js';
import type { Logger } from '../../util/log.js';
import type { ProviderClient } from '../../provider/client.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { Semaphore } from '../../util/semaphore.js';
import type { FairSlots } from '../../util/fair-slots.js';
import { DEFAULT_CONNECTION } from '../../config/connections.js';
import { SyncCounters } from './counters.js';
import { CursorCache } from './cursor-cache.js';
import { ListScheduler } from './list-scheduler.js';
import { PollLedger } from './poll-ledger.js';
import { SyncEvents } from './sync-events.js';
import { TokenRejections } from './token-rejections.js';

/** What every stream needs: built once per API connection and passed down. */
export interface SyncContext {
  /** The API connection's name: its rows in the bookkeeping tables carry it. */
  readonly connection: string;
  /**
   * True for the one connection of the process that also processes the change events of
   * properties no connection follows (or that name none): they are kept and counted, not lost.
   */
  readonly handlesUnroutedEvents: () => boolean;
  /** The configuration as this connection sees it: its credentials, properties and limits. */
  readonly config: Config;
  /** Reads. */
  readonly db: Db;
  /**
   * Every write of a stream: one transaction, fenced by the connection's lease, for this connection.
   * With several connections, their writes take turns (FairSlots): none waits behind another's backfill.
   */
  write<T>(fn: (trx: Trx) => Promise<T>): Promise<T>;
  /** Whether the database answers; streams wait on it during an outage. */
  readonly database: DatabaseAvailability;
  /** What this connection's writes are fenced by: its lease among the replicas (or, in-process tests, the schema's). */
  readonly fence: WriteFence;
  readonly client: ProviderClient;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly counters: SyncCounters;
  /**
   * One page of the booking list (or of a sweep) is fetched, turned into rows and written at a
   * time, across the connection's properties: the pages are the largest objects the daemon
   * holds, and V8 keeps the heap it once needed. Per connection, so that a connection whose
   * list request waits (a 429 pause, a stalled answer) never holds up another's.
   */
  readonly pageSlots: Semaphore;
  /** Turns of the booking list budget for polls and sweeps (backfill pages go first). */
  readonly listScheduler: ListScheduler;
  /** What the sync tells whoever listens (sync-events.ts): work enqueued, events processed, the lag of fresh changes. */
  readonly events: SyncEvents;
  /** The property streams' cursors as this process knows them: a quiet poll reads nothing first (cursor-cache.ts). */
  readonly cursors: CursorCache;
  /** Polls that found nothing, written for every property of the process together (poll-ledger.ts). */
  readonly polls: PollLedger;
  /** 400s to the properties' stored continueTokens, counted until one is lost (token-rejections.ts). */
  readonly tokenRejections: TokenRejections;
}

export function createSyncContext(parts: {
  config: Config;
  handle: DatabaseHandle;
  client: ProviderClient;
  logger: Logger;
  clock?: Clock;
  counters?: SyncCounters;
  /** Default: the single connection of STAYSYNC_CLIENT_ID/SECRET. */
  connection?: string;
  handlesUnroutedEvents?: () => boolean;
  /** The process's write turns, shared by its connections (default: none, writes go straight to the pool). */
  writeSlots?: FairSlots;
  /** The connection's lease (default: the schema's lock, which the caller holds). */
  lease?: WriteFence;
  /** The process's ledger of quiet polls (default: one of this context's own that writes each poll at once). */
  polls?: PollLedger;
}): SyncContext {
  const { handle, writeSlots } = parts;
  const connection = parts.connection ?? DEFAULT_CONNECTION;
  const lease = parts.lease ?? handle.schemaLock;
  const write = <T>(fn: (trx: Trx) => Promise<T>): Promise<T> => handle.writeFenced(lease, fn, connection);
  return {
    connection,
    handlesUnroutedEvents: parts.handlesUnroutedEvents ?? (() => true),
    config: parts.config,
    db: handle.db,
    write: writeSlots ? (fn) => writeSlots.use(connection, () => write(fn)) : write,
    database: handle.availability,
    fence: lease,
    client: parts.client,
    logger: parts.logger,
    clock: parts.clock ?? systemClock,
    counters: parts.counters ?? new SyncCounters(),
    pageSlots: new Semaphore(1),
    events: new SyncEvents(),
    listScheduler: new ListScheduler(parts.config, parts.clock ?? systemClock, parts.logger.child({ component: 'poll' })),
    cursors: new CursorCache(handle.db, lease),
    polls: parts.polls ?? new PollLedger(handle.db, parts.logger, { immediate: true }),
    tokenRejections: new TokenRejections(),
  };
}
