/**
 * The sync engine: one code path for `sync --once` and `run`.
 *
 * It owns the abort signal of the run and everything the streams share: property discovery,
 * recovery, the registered streams (streams.ts), the wake-up of queue drains when their
 * upstreams enqueue, progress lines, and what a failure means (failures.ts):
 * - the database or the connection's lease is away: every stream waits for it, then goes on;
 * - a transient provider failure: the stream backs off and retries; the property shows
 *   `retrying`; `sync --once` gives up on it after provider.giveUpAfterMs;
 * - a permanent one (403, 400, 404 on a list, an envelope that is not the documented shape):
 *   the property is marked `failing` with the reason, the others go on; `run` checks it again
 *   after sync.failingRecheckMs, `sync --once` reports it (exit 1);
 * - an API area the connection may not use (the access token's api_accesses, or a 403 of the
 *   area): the streams of that area do not run and show `not_granted`, which is not a failure;
 *   `run` starts them at an access token that grants the area;
 * - a lost token: that property's booking list stops (`needs_recover`) and everything else goes
 *   on; recovered at start by --recover, or at once by sync.autoRecover (recovery.ts);
 * - refused credentials or database settings: the run stops.
 * The two modes differ only in what happens once a stream is done: `once` returns when every
 * property is caught up, the queues are drained and each refresh ran once; `daemon` waits
 * for the next poll or refresh tick until its signal aborts.
 */
import { activePropertyIds } from '../../store/repositories/content.js';
import { clearRetrying, markCursorProblem } from '../../store/repositories/cursors.js';
import { HeldElsewhereError } from '../../store/errors.js';
import type { SyncContext } from './context.js';
import type { ContinueTokenLostError } from './errors.js';
import type { Logger } from '../../util/log.js';
import { DatabaseGaveUpError, NothingToFollowError, NotGrantedError, PropertyFailedError, ProviderGaveUpError } from './errors.js';
import { apiAreas, type ApiAccess, type ApiArea } from '../../provider/api-access.js';
import { cursorStreams, type CursorStream } from '../../store/states.js';
import { classify, streamBackoffMs } from './failures.js';
import { ProgressReporter } from './progress.js';
import { applyRecovery, planRecovery, recoveryPoint, type Recovery } from './recovery.js';
import { Tickers } from './schedule.js';
import { WaitList } from '../../util/wait-list.js';
import { registeredStreams } from '../streams/registry.js';
import { type EngineMode, type PropertyStream, type QueueDrain, type QueueStream, type RefreshStream, type StreamRegistry } from '../streams/types.js';

export interface EngineOptions {
  mode: EngineMode;
  recovery: Recovery;
  /** The streams to run (default: all registered ones that the configuration enables). */
  streams?: StreamRegistry;
}

export interface EngineResult {
  /** The properties followed. */
  properties: string[];
  /** Properties whose booking list lost its token and waits for a recovery (`sync --once` exits 3). */
  continueTokenLost: ContinueTokenLostError[];
  /** Property streams that ended failing (`once`; in `run` they are rechecked instead). */
  failed: PropertyFailedError[];
  /** Refreshes whose last run failed, with why. */
  refreshFailures: { stream: string; reason: string }[];
  /** What ended the run for every stream: credentials refused, gave up on the provider or database. */
  fatal: Error | undefined;
}

/** How often `sync --once` compares outages with its give-up times. */
const WATCHDOG_MS = 500;

/** A property stream refused (403) under a token whose claim stays the same is asked again after this. */
const REFUSAL_RECHECK_MS = 3_600_000;

export class Engine {
  private readonly inner = new AbortController();
  private readonly tasks = new Set<Promise<void>>();
  private readonly followed = new Set<string>();
  private readonly drains: QueueDrain[] = [];
  /** Streams backing off after a provider failure, woken when an outage ends. */
  private readonly providerBack = new WaitList();
  private readonly tickers = new Tickers();
  private readonly streams: StreamRegistry;
  private readonly mode: EngineMode;
  /** Property streams still catching up: queue drains of `once` wait for them. */
  private catchingUp = 0;
  /** Areas the log said were not granted (one line per area until it is granted again). */
  private readonly notGrantedSaid = new Set<ApiArea>();
  /** Refreshes of the daemon waiting for a token that grants their area. */
  private readonly refreshesAwaitingGrant = new Set<string>();
  /** When sync.autoRecover last recovered each property (at most one a sync.failingRecheckMs). */
  private readonly autoRecoveredAt = new Map<string, number>();
  private started = false;
  private readonly result: EngineResult = {
    properties: [],
    continueTokenLost: [],
    failed: [],
    refreshFailures: [],
    fatal: undefined,
  };
  private readonly log;

  constructor(
    private readonly ctx: SyncContext,
    private readonly opts: EngineOptions,
  ) {
    this.mode = opts.mode;
    const all = opts.streams ?? registeredStreams;
    const on = <T extends { enabled(c: typeof ctx.config): boolean }>(list: readonly T[]) => list.filter((s) => s.enabled(ctx.config));
    this.streams = { property: on(all.property), queues: on(all.queues), refreshes: on(all.refreshes) };
    this.log = ctx.logger.child({ component: 'engine' });
  }

  /** True once the run has started its streams and can do its work (the database and lease are checked by the caller). */
  get running(): boolean {
    return this.started && !this.inner.signal.aborted;
  }

  /**
   * Runs until done (`once`) or until `signal` aborts (`daemon`; also `once`, early).
   * `hooks.onStart` runs once the run is about to write (before the recovery of --recover).
   */
  async run(signal: AbortSignal, hooks: { onStart?: () => Promise<void> } = {}): Promise<EngineResult> {
    const { ctx } = this;
    const onAbort = () => this.inner.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const progress = new ProgressReporter(ctx, this.followed);
    const stopWatchdog = this.mode === 'once' ? this.startWatchdog() : () => undefined;
    const stopOutageListener = this.watchProviderOutages();
    let stopWaking = (): void => undefined;
    let announced = false;
    /** The run is about to write: tell the caller once (it opens its run row). */
    const announce = async (): Promise<boolean> => {
      if (announced) return true;
      announced = true;
      return (await this.guarded(async () => (await hooks.onStart?.(), true))) !== undefined;
    };
    try {
      // Discovering the properties writes content first; with configured ones nothing is
      // written before the recovery check below.
      if (ctx.config.propertyIds.length === 0 && !(await announce())) return this.result;
      const discovered = await this.discoverProperties();
      if (discovered === undefined) return this.result;
      const recoverFrom = await this.guarded(() => planRecovery(ctx, discovered.propertyIds, this.opts.recovery));
      if (recoverFrom === undefined) return this.result;
      if (!(await announce())) return this.result;
      if ((await this.guarded(() => applyRecovery(ctx, recoverFrom).then(() => true))) === undefined) return this.result;

      progress.start();
      this.started = true;
      for (const q of this.streams.queues) {
        const drain = q.create(ctx);
        this.drains.push(drain);
        this.spawn(async () => {
          if (!(await this.untilGranted(q))) return;
          await drain.run(this.inner.signal, { mode: this.mode, upstreamDone: () => this.catchingUp === 0, onFatal: (err) => this.fail(err) });
        });
      }
      stopWaking = ctx.events.on('enqueued', () => this.wakeDrains());
      this.spawn(() => this.initialRefreshes(discovered.refreshed));
      if (this.mode === 'daemon') for (const r of this.streams.refreshes) this.spawn(() => this.scheduledRefreshes(r));
      for (const id of discovered.propertyIds) this.follow(id, recoverFrom.get(id));
      this.wakeDrains();
      // Tasks add tasks (a refresh finds a property): wait until none is left.
      while (this.tasks.size > 0) await Promise.allSettled(this.tasks);
    } finally {
      signal.removeEventListener('abort', onAbort);
      stopWatchdog();
      stopOutageListener();
      this.tickers.stopAll();
      progress.stop();
      if (this.started) progress.report(true);
      stopWaking();
    }
    return this.result;
  }

  // ------------------------------------------------------------------ properties

  /**
   * The properties to follow: the configured ones, or (none configured) those a discovering
   * refresh lists, which then runs first. Undefined when the run ended meanwhile.
   */
  private async discoverProperties(): Promise<{ propertyIds: string[]; refreshed: Set<string> } | undefined> {
    const { config } = this.ctx;
    const refreshed = new Set<string>();
    if (config.propertyIds.length > 0) {
      this.result.properties = [...config.propertyIds];
      return { propertyIds: [...config.propertyIds], refreshed };
    }
    let lastFailure: string | undefined;
    for (const r of this.streams.refreshes.filter((x) => x.discoversProperties)) {
      const outcome = await this.refreshOnce(r);
      refreshed.add(r.name);
      if (outcome === 'failed') lastFailure = this.result.refreshFailures.at(-1)?.reason;
      if (outcome instanceof NotGrantedError) lastFailure = outcome.message;
    }
    if (this.inner.signal.aborted) return undefined;
    const ids = await this.guarded(() => activePropertyIds(this.ctx.db, this.ctx.connection));
    if (ids === undefined) return undefined;
    if (ids.length === 0) {
      if (lastFailure !== undefined || refreshed.size === 0) {
        this.fail(
          new NothingToFollowError(
            refreshed.size === 0
              ? 'no property to follow: STAYSYNC_PROPERTY_IDS is empty and content.enabled is false'
              : `no property to follow: STAYSYNC_PROPERTY_IDS is empty and the content refresh failed (${lastFailure})`,
          ),
        );
        return undefined;
      }
      this.log.warn('no property to follow: STAYSYNC_PROPERTY_IDS is empty and the content API lists none');
    }
    this.result.properties = [...ids];
    return { propertyIds: ids, refreshed };
  }

  /** After a refresh in the daemon without configured properties: follow the new ones. */
  private async followNewProperties(): Promise<void> {
    if (this.ctx.config.propertyIds.length > 0 || this.mode === 'once') return;
    const ids = await this.guarded(() => activePropertyIds(this.ctx.db, this.ctx.connection));
    const fresh = (ids ?? []).filter((id) => !this.followed.has(id));
    // One whose token is lost (it moved from another connection) says so when its list starts.
    for (const id of fresh) {
      this.log.info({ propertyId: id }, 'new property in the content API: following its bookings');
      this.result.properties.push(id);
      this.follow(id, undefined);
    }
  }

  private follow(propertyId: string, recoverFrom: Date | undefined): void {
    if (this.followed.has(propertyId)) return;
    this.followed.add(propertyId);
    for (const stream of this.streams.property) this.spawn(() => this.followStream(stream, propertyId, recoverFrom));
  }

  /** One property stream of one property: catch up, then (daemon) again at each poll tick. */
  private async followStream(stream: PropertyStream, propertyId: string, recoverFrom: Date | undefined): Promise<void> {
    const { ctx } = this;
    const signal = this.inner.signal;
    const log = ctx.logger.child({ component: stream.name, propertyId });
    let start: { recoverFrom?: Date | undefined } = { recoverFrom };
    let failures = 0;
    let problemSince: number | undefined;
    let shownState: 'retrying' | 'failing' | 'not_granted' | undefined;
    let catchingUp = true;
    this.catchingUp += 1;
    const caughtUp = () => {
      if (!catchingUp) return;
      catchingUp = false;
      this.catchingUp -= 1;
      this.wakeDrains();
    };
    try {
      while (!signal.aborted) {
        try {
          await ctx.database.waitUntilAvailable(signal);
          await ctx.fence.waitUntilHeld(signal);
          await this.mustBeGranted(stream.area, signal);
          await stream.catchUp(ctx, propertyId, signal, { ...start, mode: this.mode });
          start = {};
          if (shownState === 'not_granted') this.notGrantedSaid.delete(stream.area);
          if (shownState) log.info(`property ${propertyId}: ${stream.title} ${shownState === 'not_granted' ? 'granted: it runs' : 'works again'}`);
          failures = 0;
          problemSince = undefined;
          shownState = undefined;
          caughtUp();
          if (this.mode === 'once') return;
          await stream.waitForNextRun(ctx, propertyId, signal, this.tickers);
        } catch (err) {
          const verdict = classify(err, signal, ctx);
          const now = ctx.clock.now();
          switch (verdict.kind) {
            case 'stopped':
              return;
            case 'database':
            case 'lease':
              continue;
            case 'continueTokenLost': {
              // Only this property's booking list stops: the sweep, the details, the other
              // streams and properties go on (the sweep reads only a list that is not lost).
              const from = ctx.config.sync.autoRecover ? await this.recoverAutomatically(propertyId, verdict.error, log) : undefined;
              if (from !== undefined) {
                start = { recoverFrom: from };
                continue;
              }
              if (signal.aborted) return;
              log.error(verdict.error.message);
              this.result.continueTokenLost.push(verdict.error);
              return;
            }
            case 'fatal':
              this.fail(verdict.error);
              return;
            case 'notGranted': {
              // Not a failure: shown as such, and (daemon) tried again at the next access token.
              const refusedUnder = ctx.client.currentAccess;
              if (!verdict.refused) this.notGranted(verdict);
              else if (shownState !== 'not_granted')
                log.warn(
                  { reason: verdict.reason },
                  `property ${propertyId}: ${stream.title} not granted: ${verdict.reason}. Not a failure; ${this.retriedAfterRefusal(refusedUnder)}`,
                );
              shownState = 'not_granted';
              failures = 0;
              problemSince = undefined;
              await this.recordProblem(stream, [propertyId], 'not_granted', verdict.reason);
              if (this.mode === 'once') return;
              caughtUp();
              if (verdict.refused) await this.nextTokenAfterRefusal(refusedUnder, signal);
              else await this.nextToken(signal);
              continue;
            }
            case 'permanent': {
              problemSince ??= now;
              if (shownState !== 'failing') {
                const next = this.mode === 'daemon' ? `; checked again every ${Math.round(ctx.config.sync.failingRecheckMs / 60_000)} min` : '';
                log.error({ reason: verdict.reason }, `property ${propertyId}: ${stream.title} failing: ${verdict.reason}. The other properties go on${next}`);
              }
              shownState = 'failing';
              await this.recordProblem(stream, [propertyId], 'failing', verdict.reason);
              if (this.mode === 'once') {
                this.result.failed.push(new PropertyFailedError(propertyId, stream.title, verdict.reason));
                return;
              }
              caughtUp();
              await ctx.clock.sleep(ctx.config.sync.failingRecheckMs, signal).catch(() => undefined);
              continue;
            }
            case 'transient': {
              failures += 1;
              problemSince ??= now;
              ctx.counters.pollErrors += 1;
              const giveUp = ctx.config.provider.giveUpAfterMs;
              if (this.mode === 'once' && now - problemSince >= giveUp) {
                const reason = `no success for ${Math.round((now - problemSince) / 1000)} s (last error: ${verdict.reason})`;
                log.error({ reason }, `property ${propertyId}: ${stream.title}: sync --once gives up on it: ${reason}`);
                this.result.failed.push(new PropertyFailedError(propertyId, stream.title, reason));
                await this.recordProblem(stream, [propertyId], 'retrying', verdict.reason);
                return;
              }
              const delay = streamBackoffMs(failures);
              if (verdict.unexpected)
                log.error({ err: verdict.reason, retryInMs: delay }, `property ${propertyId}: ${stream.title}: unexpected error, retrying`);
              else if (shownState !== 'retrying')
                log.warn({ err: verdict.reason, retryInMs: delay }, `property ${propertyId}: ${stream.title} failed, retrying with backoff`);
              shownState = 'retrying';
              await this.recordProblem(stream, [propertyId], 'retrying', verdict.reason);
              await this.backoff(delay, signal);
              continue;
            }
          }
        }
      }
    } finally {
      caughtUp();
    }
  }

  /**
   * sync.autoRecover: restarts a lost booking list from its recovery point, at most once a
   * sync.failingRecheckMs per property (a provider that refuses every token would otherwise
   * have the list read again and again): the daemon waits out the rest, `sync --once` reports it
   * lost. Returns where the list restarts, or undefined when it does not (now).
   */
  private async recoverAutomatically(propertyId: string, lost: ContinueTokenLostError, log: Logger): Promise<Date | undefined> {
    const { ctx } = this;
    const signal = this.inner.signal;
    const last = this.autoRecoveredAt.get(propertyId);
    const wait = last === undefined ? 0 : last + ctx.config.sync.failingRecheckMs - ctx.clock.now();
    if (wait > 0) {
      if (this.mode === 'once') return undefined;
      log.error(
        { nextAt: new Date(ctx.clock.now() + wait).toISOString() },
        `${lost.message}. It was recovered automatically less than ${Math.round(ctx.config.sync.failingRecheckMs / 60_000)} min ago: the next automatic recovery waits until then`,
      );
      await ctx.clock.sleep(wait, signal).catch(() => undefined);
      if (signal.aborted) return undefined;
    } else {
      log.warn({ reason: lost.detail }, `property ${propertyId}: token lost: ${lost.detail}. Recovering it automatically (sync.autoRecover)`);
    }
    const from = await this.guarded(async () => {
      const point = await recoveryPoint(ctx, propertyId);
      await applyRecovery(ctx, new Map([[propertyId, point]]));
      return point;
    });
    if (from !== undefined) this.autoRecoveredAt.set(propertyId, ctx.clock.now());
    return from;
  }

  /** Waits `ms`, or less when the provider answers again meanwhile (another stream saw it). */
  private async backoff(ms: number, signal: AbortSignal): Promise<void> {
    const local = new AbortController();
    const both = AbortSignal.any([signal, local.signal]);
    try {
      await Promise.race([this.ctx.clock.sleep(ms, both), this.providerBack.wait(both)]);
    } catch {
      /* stopped */
    } finally {
      local.abort();
    }
  }

  /** Shows a property's problem in sync_cursors (status, metrics). Skipped when the database or lease is away. */
  private async recordProblem(
    stream: Pick<PropertyStream, 'name'>,
    propertyIds: readonly string[],
    state: 'retrying' | 'failing' | 'not_granted',
    message: string,
  ): Promise<void> {
    const at = new Date(this.ctx.clock.now());
    await this.ctx
      .write((trx) => markCursorProblem(trx, { propertyIds, stream: stream.name, state, message: message.slice(0, 1000), at }))
      .catch((err: unknown) => this.log.debug({ err: (err as Error).message }, 'could not record the property state'));
    // The rows changed: the next poll reads them, and writes even when it finds nothing, so that the problem is cleared.
    for (const id of propertyIds) this.ctx.cursors.forget(id, stream.name);
  }

  // ------------------------------------------------------------------ API areas

  /** Throws NotGrantedError when the current access token does not grant `area` (a token is fetched when there is none). */
  private async mustBeGranted(area: ApiArea | undefined, signal: AbortSignal): Promise<void> {
    if (area === undefined) return;
    const access = await this.ctx.client.access(signal);
    if (!access.grants(area)) throw new NotGrantedError(area, access.whyNot(area));
  }

  /** What happens next to a property stream the provider refused (403) under `access`, for the log. */
  private retriedAfterRefusal(access: ApiAccess): string {
    if (this.mode === 'once') return 'sync --once syncs what is granted';
    return access.claims === undefined
      ? 'tried again at the next access token'
      : 'tried again at the next access token whose api_accesses differ, or within an hour';
  }

  /**
   * After a 403 of a property stream (daemon): waits for a token whose claim differs from the one
   * refused (the hotel ticked an API) or, at the latest, for the first token after an hour (the
   * claim may not name the API at all). A token without a readable claim says nothing: the next
   * one is tried. So a connection without the PMS costs a refused request per property an hour,
   * not one per token. False when the run ended meanwhile.
   */
  private async nextTokenAfterRefusal(refusedUnder: ApiAccess, signal: AbortSignal): Promise<boolean> {
    const since = this.ctx.clock.now();
    for (;;) {
      if (!(await this.nextToken(signal))) return false;
      const now = this.ctx.client.currentAccess;
      if (now.claims === undefined || !now.sameClaims(refusedUnder) || this.ctx.clock.now() - since >= REFUSAL_RECHECK_MS) return true;
    }
  }

  /** The access token does not grant an area: the log says so once per area, with how to grant it. */
  private notGranted(verdict: { area: ApiArea; reason: string }): void {
    const { area } = verdict;
    if (this.notGrantedSaid.has(area)) return;
    this.notGrantedSaid.add(area);
    const streams = [...this.streams.property, ...this.streams.queues, ...this.streams.refreshes].filter((s) => s.area === area).map((s) => s.name);
    const next =
      this.mode === 'daemon'
        ? 'they start at the next access token that grants it (within its lifetime, about 15 minutes, of the grant)'
        : 'not a failure: sync --once syncs what is granted';
    this.log.warn(
      { area: apiAreas[area].claim, streams, reason: verdict.reason },
      `${apiAreas[area].title} not granted to this API connection: ${streams.join(', ')} ${streams.length === 1 ? 'does' : 'do'} not run; ${next}. ` +
        'To grant it: in the extranet, Property settings > API connections > the connection > Public APIs tab',
    );
  }

  /** Waits for the next access token (daemon); false when the run ended meanwhile. */
  private async nextToken(signal: AbortSignal): Promise<boolean> {
    try {
      await this.ctx.client.renewedAccess(signal);
    } catch {
      // Stopped, or the token request failed: the caller's next look asks again and meets that failure.
      if (!signal.aborted) await this.backoff(streamBackoffMs(1), signal);
    }
    return !signal.aborted;
  }

  /**
   * Whether a queue stream may drain: at once when its area is granted (or the token cannot be
   * had: the drain meets that failure itself). `once`: false when not granted. Daemon: waits
   * for a token that grants it.
   */
  private async untilGranted(q: QueueStream): Promise<boolean> {
    const signal = this.inner.signal;
    while (!signal.aborted) {
      try {
        await this.mustBeGranted(q.area, signal);
        return true;
      } catch (err) {
        const verdict = classify(err, signal, this.ctx);
        if (verdict.kind !== 'notGranted') return !signal.aborted;
        if (this.mode === 'once') return false;
        await this.nextToken(signal);
      }
    }
    return false;
  }

  /**
   * While the provider's host is unreachable, every followed property shows `retrying` with
   * the outage (not only those whose own request gave up); when it answers again they show
   * `active`, before their next page confirms it.
   */
  private watchProviderOutages(): () => void {
    const providerHost = new URL(this.ctx.config.provider.url).host;
    return this.ctx.client.health.onOutageChange((host, outage) => {
      if (host !== providerHost) return;
      if (!outage) this.providerBack.wakeAll();
      const ids = [...this.followed];
      for (const stream of this.streams.property) {
        // A stream the connection may not use waits for a token, not for the provider: it stays `not_granted`.
        if (!this.ctx.client.currentAccess.grants(stream.area)) continue;
        if (outage) {
          void this.recordProblem(stream, ids, 'retrying', `provider ${host} unreachable since ${new Date(outage.since).toISOString()}: ${outage.lastError}`);
        } else {
          void this.ctx
            .write((trx) => clearRetrying(trx, ids, stream.name, new Date(this.ctx.clock.now())))
            .catch(() => undefined)
            .finally(() => {
              for (const id of ids) this.ctx.cursors.forget(id, stream.name);
            });
        }
      }
    });
  }

  // ------------------------------------------------------------------ refreshes and queues

  /** The refreshes at start, one after the other in registry order (unless discovery ran them). */
  private async initialRefreshes(done: ReadonlySet<string>): Promise<void> {
    for (const r of this.streams.refreshes) {
      if (this.inner.signal.aborted) return;
      if (done.has(r.name)) continue;
      await this.refreshOnce(r);
      if (r.discoversProperties) await this.followNewProperties();
    }
  }

  /** Daemon: a refresh whose area was not granted runs as soon as a token grants it, not at its next tick (once per refresh). */
  private refreshWhenGranted(r: RefreshStream, area: ApiArea): void {
    if (this.mode !== 'daemon' || this.refreshesAwaitingGrant.has(r.name)) return;
    this.refreshesAwaitingGrant.add(r.name);
    const refusedUnder = this.ctx.client.currentAccess;
    this.spawn(async () => {
      const signal = this.inner.signal;
      // As a property stream refused: at a token whose claim differs, or after an hour, since
      // a claim may not name the API at all (the area is then tried, and a 403 decides).
      while (await this.nextTokenAfterRefusal(refusedUnder, signal)) {
        if (!this.ctx.client.currentAccess.grants(area)) continue;
        // Before the refresh: should it meet a 403, it waits again.
        this.refreshesAwaitingGrant.delete(r.name);
        await this.refreshOnce(r);
        if (r.discoversProperties) await this.followNewProperties();
        return;
      }
    });
  }

  /** The daemon's refreshes at each tick of their schedule. */
  private async scheduledRefreshes(r: RefreshStream): Promise<void> {
    const signal = this.inner.signal;
    const ticker = this.tickers.get(r.cron(this.ctx.config));
    while (!signal.aborted) {
      try {
        await ticker.next(signal);
      } catch {
        return;
      }
      await this.refreshOnce(r);
      if (r.discoversProperties) await this.followNewProperties();
    }
  }

  /**
   * Runs a refresh until it succeeds, waiting for the database and lease when they are away;
   * a transient failure is retried with backoff in the daemon; any other failure is recorded
   * and waits for the next tick. An area not granted is no failure: the refresh does not run,
   * its properties show `not_granted` (a refresh with a cursor per property), and the daemon
   * runs it at a token that grants the area. Returns 'ok', 'failed', or why it did not run.
   */
  private async refreshOnce(r: RefreshStream): Promise<'ok' | 'failed' | NotGrantedError> {
    const { ctx } = this;
    const signal = this.inner.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        await ctx.database.waitUntilAvailable(signal);
        await ctx.fence.waitUntilHeld(signal);
        await this.mustBeGranted(r.area, signal);
        await r.run(ctx, signal, ctx.config.propertyIds);
        return 'ok';
      } catch (err) {
        const verdict = classify(err, signal, ctx);
        if (verdict.kind === 'stopped') return 'failed';
        if (verdict.kind === 'database' || verdict.kind === 'lease') continue;
        if (verdict.kind === 'fatal' || verdict.kind === 'continueTokenLost') {
          this.fail(verdict.error);
          return 'failed';
        }
        if (verdict.kind === 'notGranted') {
          // Refused by a 403 (an API of an assumed claim name): the refresh said so for each
          // property it asked. Refused by the claim: said here, once for the API.
          if (!verdict.refused) {
            this.notGranted(verdict);
            const perProperty = cursorStreams.find((c): c is CursorStream => c === r.name);
            if (perProperty) await this.recordProblem({ name: perProperty }, this.result.properties, 'not_granted', verdict.reason);
          }
          this.refreshWhenGranted(r, verdict.area);
          return new NotGrantedError(verdict.area, verdict.reason);
        }
        failures += 1;
        const reason = verdict.reason;
        if (this.mode === 'once' || verdict.kind === 'permanent' || failures > 5) {
          this.log.error(
            { stream: r.name, reason },
            `${r.name} refresh failed: ${reason}; ${this.mode === 'once' ? 'reported at the end' : 'the next scheduled refresh tries again'}`,
          );
          this.result.refreshFailures.push({ stream: r.name, reason });
          return 'failed';
        }
        const delay = Math.max(30_000, streamBackoffMs(failures + 5));
        this.log.warn({ stream: r.name, reason, retryInMs: delay }, `${r.name} refresh failed: retrying`);
        await ctx.clock.sleep(delay, signal).catch(() => undefined);
      }
    }
    return 'failed';
  }

  private wakeDrains(): void {
    for (const d of this.drains) d.wake();
  }

  // ------------------------------------------------------------------ plumbing

  /** Starts a task; its failure can never be an unhandled rejection (it is logged and ends the run). */
  private spawn(task: () => Promise<void>): void {
    const p: Promise<void> = task()
      .catch((err: unknown) => {
        if (this.inner.signal.aborted) return;
        this.log.error({ err: (err as Error)?.stack ?? String(err) }, 'internal error in a stream');
        this.fail(err instanceof Error ? err : new Error(String(err)));
      })
      .finally(() => this.tasks.delete(p));
    this.tasks.add(p);
  }

  /** Runs a read or write of the engine's own, waiting for the database and lease; undefined when the run ended. */
  private async guarded<T>(fn: () => Promise<T>): Promise<T | undefined> {
    const signal = this.inner.signal;
    while (!signal.aborted) {
      try {
        await this.ctx.database.waitUntilAvailable(signal);
        await this.ctx.fence.waitUntilHeld(signal);
        return await fn();
      } catch (err) {
        const verdict = classify(err, signal, this.ctx);
        if (verdict.kind === 'database' || verdict.kind === 'lease') continue;
        if (verdict.kind === 'stopped') return undefined;
        this.fail(err instanceof Error ? err : new Error(String(err)));
        return undefined;
      }
    }
    return undefined;
  }

  /** Ends the run for every stream (the first fatal error is the one reported). */
  private fail(err: Error): void {
    this.result.fatal ??= err;
    if (!this.inner.signal.aborted) this.inner.abort(err);
  }

  /**
   * `sync --once` does not wait forever: it gives up when the provider has given no usable
   * answer, the database has been unreachable, or the lease has been away for their give-up times.
   */
  private startWatchdog(): () => void {
    const { ctx } = this;
    let leaseGoneSince: number | undefined;
    const timer = setInterval(() => {
      const now = ctx.clock.now();
      const failing = ctx.client.health.longestFailing();
      if (failing && now - failing.since >= ctx.config.provider.giveUpAfterMs) {
        this.fail(new ProviderGaveUpError(failing.host, failing.setting, now - failing.since, failing.lastError));
        return;
      }
      const db = ctx.database.current;
      if (db && now - db.since >= ctx.config.database.giveUpAfterMs) {
        this.fail(new DatabaseGaveUpError(ctx.database.description, now - db.since, db.lastError));
        return;
      }
      leaseGoneSince = ctx.fence.held ? undefined : (leaseGoneSince ?? now);
      if (leaseGoneSince !== undefined && !db && now - leaseGoneSince >= ctx.config.database.giveUpAfterMs) {
        this.fail(new HeldElsewhereError(`sync --once gave up: it lost the lease of connection ${ctx.connection} and could not take it back`));
      }
    }, WATCHDOG_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}
