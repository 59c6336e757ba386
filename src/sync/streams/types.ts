/**
 * What the engine runs, by kind: the contract between the runtime (engine.ts, fetch-drain.ts)
 * and the streams. There are three kinds:
 * - property streams follow each property with a cursor of their own, page by page until
 *   caught up, then again on their poll schedule (the booking list);
 * - queue streams drain a durable queue that other streams fill (booking details);
 * - refresh streams re-read a whole data set at start and on a schedule (content).
 */
import type { Config } from '../../config/config.js';
import type { ApiArea } from '../../provider/api-access.js';
import type { CursorStream, StreamName } from '../../store/states.js';
import type { SyncContext } from '../runtime/context.js';
import type { Tickers } from '../runtime/schedule.js';

export type EngineMode = 'once' | 'daemon';

export interface PropertyStream {
  /** The cursor stream name (sync_cursors.stream). */
  readonly name: CursorStream;
  /** The API area it reads: it runs only while the access token grants it (api-access.ts). */
  readonly area: ApiArea;
  /** For messages: "booking list". */
  readonly title: string;
  enabled(config: Config): boolean;
  /**
   * Reads until caught up (throws on failure; the engine classifies and retries).
   * `start.recoverFrom` replaces a lost cursor for the first page (--recover); `start.mode` is
   * the engine's.
   */
  catchUp(ctx: SyncContext, propertyId: string, signal: AbortSignal, start: { recoverFrom?: Date | undefined; mode: EngineMode }): Promise<void>;
  /**
   * Daemon: resolves when the caught-up property should be read again (its poll schedule);
   * rejects with the signal's reason when it aborts first. `tickers` are the engine's shared
   * cron schedules.
   */
  waitForNextRun(ctx: SyncContext, propertyId: string, signal: AbortSignal, tickers: Tickers): Promise<void>;
}

export interface QueueDrain {
  /** More work was enqueued: an idle drain looks again at once. */
  wake(): void;
  /**
   * Drains until `signal` aborts. In `once` mode, returns when nothing is left that the run
   * should wait for and `upstreamDone()` says no more work is coming. Never rejects except
   * with a fatal error (`onFatal` is the engine's); every other failure is handled inside.
   */
  run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void>;
}

export interface QueueStream {
  readonly name: StreamName;
  /** The API area it reads, if it needs one: it drains only while the access token grants it. */
  readonly area?: ApiArea;
  enabled(config: Config): boolean;
  create(ctx: SyncContext): QueueDrain;
}

export interface RefreshStream {
  readonly name: StreamName;
  /** The API area it reads, if it needs one: it runs only while the access token grants it. */
  readonly area?: ApiArea;
  enabled(config: Config): boolean;
  /** croner expression of the scheduled refresh (the first one runs at start). */
  cron(config: Config): string;
  /**
   * One full refresh; throws on failure (after recording it). `only`: the configured
   * properties (empty: all that the provider lists).
   */
  run(ctx: SyncContext, signal: AbortSignal, only: readonly string[]): Promise<void>;
  /** True when this refresh decides which properties exist (followed when none are configured). */
  readonly discoversProperties: boolean;
}

export interface StreamRegistry {
  property: readonly PropertyStream[];
  queues: readonly QueueStream[];
  refreshes: readonly RefreshStream[];
}
