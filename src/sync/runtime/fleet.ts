/**
 * The fleet: every API connection of the process, each synced by an engine of its own.
 *
 * A connection has its own provider client (token manager, budgets, health), its own list
 * scheduler and counters, its own run row; its streams drain only its own queues. What the
 * connections share is bounded and taken in turns:
 * - the database: one pool; writes take FairSlots turns by connection, so a connection with
 *   one fresh change waits behind at most one write of each other connection, not behind a
 *   backfill's thousands;
 * - the token endpoint: its limit is per IP address, so one token budget serves all the
 *   connections, and start-up requests are spaced by it instead of sent at once;
 * - one HTTP agent (keep-alive sockets per provider host).
 * One connection's troubles stay its own: a refused secret, a 429 storm or an outage of its
 * properties stops or slows that connection only (and a lost token one property's booking list).
 *
 * In the daemon, the set of connections can change while it runs (`reload`, from a watched
 * connections directory or SIGHUP): added ones start, removed ones stop, changed ones restart
 * with their new settings; the others are not touched.
 */
import { Agent, type Dispatcher } from 'undici';
import type { Config } from '../../config/config.js';
import { configForConnection, type Connection } from '../../config/connections.js';
import type { DatabaseHandle } from '../../store/database.js';
import { isDatabaseMisconfigured, HeldElsewhereError } from '../../store/errors.js';
import type { BudgetLedger, ConnectionLease, Replica } from '../../cluster/replicas.js';
import type { TokenGate } from '../../cluster/token-gate.js';
import { adoptProperties } from '../../store/repositories/connections.js';
import { finishRun, startRun } from '../../store/repositories/runs.js';
import { connectionStates, type ConnectionState, streamNames, type RunOutcome } from '../../store/states.js';
import { processIdentity } from '../../store/schema-lock.js';
import type { Logger } from '../../util/log.js';
import { RateBudget, type Budgets } from '../../provider/budget.js';
import { ProviderClient } from '../../provider/client.js';
import { AuthenticationError } from '../../provider/errors.js';
import { systemClock, type Clock } from '../../util/clock.js';
import { FairSlots } from '../../util/fair-slots.js';
import { createSyncContext, type SyncContext } from './context.js';
import { PollLedger } from './poll-ledger.js';
import { Engine, type EngineResult } from './engine.js';
import { type EngineMode } from '../streams/types.js';
import type { Recovery } from './recovery.js';
import type { StreamRegistry } from '../streams/types.js';

/** What a connection is doing, for status, /metrics and the log. */
/** The states a connection of this process can be in (every one of sync_connections but `waiting`, which no process holds). */
export type HeldConnectionState = Exclude<ConnectionState, 'waiting'>;
export const heldConnectionStates = connectionStates.filter((s): s is HeldConnectionState => s !== 'waiting');

/** One connection as the rest of the process sees it (metrics, readiness). */
export interface ConnectionView {
  readonly name: string;
  readonly ctx: SyncContext;
  readonly client: ProviderClient;
  readonly state: HeldConnectionState;
}

export interface FleetOptions {
  /** The process's configuration (each connection gets its own view of it). */
  config: Config;
  handle: DatabaseHandle;
  logger: Logger;
  mode: EngineMode;
  recovery: Recovery;
  /** The process is stopping: no provider request starts after it aborts. */
  stopSignal: AbortSignal;
  streams?: StreamRegistry;
  clock?: Clock;
  /** This process among the replicas: its connection leases. */
  replica: Replica;
  /** The token budget of this IP address shared with the other replicas (none: this process's alone). */
  tokenGate?: TokenGate;
}

export interface ConnectionResult {
  name: string;
  result: EngineResult;
}

export interface FleetResult {
  connections: ConnectionResult[];
  /** What ended the run of every connection (the database refused us, an internal error). */
  fatal: Error | undefined;
}

/** At most this many connections handed over to other replicas in one heartbeat. */
const HANDOVER_BATCH = 50;

/** A connection's fingerprint: a reload restarts it when this changes. */
function settingsOf(c: Connection): string {
  return JSON.stringify([c.clientId, c.clientSecret, [...c.propertyIds].sort(), c.rateLimits]);
}

class ConnectionRuntime implements ConnectionView {
  state: HeldConnectionState = 'starting';
  readonly ctx: SyncContext;
  readonly client: ProviderClient;
  /** Aborts this connection only (removed, changed, or the process stops). */
  readonly stop = new AbortController();
  done: Promise<void> = Promise.resolve();
  runId: string | undefined;
  /** How its last engine run ended (a daemon runs it again after a recheck). */
  lastResult: EngineResult | undefined;

  constructor(
    readonly connection: Connection,
    parts: {
      config: Config;
      handle: DatabaseHandle;
      logger: Logger;
      clock: Clock;
      dispatcher: Dispatcher;
      tokenBudget: RateBudget;
      /** The budgets of another connection of the same API client (see Fleet.start). */
      clientBudgets: Budgets | undefined;
      writeSlots: FairSlots;
      stopSignal: AbortSignal;
      lease: ConnectionLease;
      tokenGate: TokenGate | undefined;
      handlesUnroutedEvents: () => boolean;
      polls: PollLedger;
    },
  ) {
    const config = configForConnection(parts.config, connection);
    const logger = parts.logger.child({ connection: connection.name });
    this.client = new ProviderClient({
      config,
      logger,
      clock: parts.clock,
      dispatcher: parts.dispatcher,
      tokenBudget: parts.tokenBudget,
      budgets: parts.clientBudgets,
      tokenAdmission: parts.tokenGate ? (signal) => parts.tokenGate!.admit(signal) : undefined,
      stopSignal: AbortSignal.any([parts.stopSignal, this.stop.signal]),
    });
    this.ctx = createSyncContext({
      config,
      handle: parts.handle,
      client: this.client,
      logger,
      clock: parts.clock,
      connection: connection.name,
      handlesUnroutedEvents: parts.handlesUnroutedEvents,
      writeSlots: parts.writeSlots,
      lease: parts.lease,
      polls: parts.polls,
    });
  }

  get name(): string {
    return this.connection.name;
  }
}

export class Fleet {
  /** The connections this replica syncs now (it holds their leases). */
  private readonly runtimes = new Map<string, ConnectionRuntime>();
  /** Every connection the configuration defines, by name. */
  private configured = new Map<string, Connection>();
  /** Connections whose run ended here for good (the only connection's refused secret): not taken again. */
  private readonly ended = new Map<string, EngineResult>();
  private readonly dispatcher: Agent;
  private readonly tokenBudget: RateBudget;
  private readonly writeSlots: FairSlots;
  /** The quiet polls of every connection of the process, written together (poll-ledger.ts). */
  private readonly polls: PollLedger;
  private readonly inner = new AbortController();
  private readonly clock: Clock;
  private readonly log;
  private fatal: Error | undefined;
  private started = false;
  private readonly listeners: ((view: ConnectionView) => void)[] = [];
  /** Wakes `run` when the set of connections changed or one ended. */
  private changed: () => void = () => undefined;
  /** One balancing pass at a time (the heartbeat's, a reload's). */
  private balancing: Promise<void> = Promise.resolve();

  constructor(private readonly opts: FleetOptions) {
    this.clock = opts.clock ?? systemClock;
    this.log = opts.logger.child({ component: 'connections' });
    const { config } = opts;
    this.dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: 64 });
    this.tokenBudget = new RateBudget('token', config.rateLimits.token, this.clock, config.provider.requestTimeoutMs + 5_000);
    // One turn fewer than the pool: reads (queue claims, cursors) always find a connection.
    this.writeSlots = new FairSlots(Math.max(1, config.database.poolSize - 1));
    this.polls = new PollLedger(opts.handle.db, this.log, { replicaId: opts.replica.id });
  }

  /** The connections this replica syncs now, in name order. */
  get connections(): ConnectionView[] {
    return [...this.runtimes.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Every connection the configuration defines now, by name, whichever replica syncs it (empty before run). */
  get configuredNames(): string[] {
    return [...this.configured.keys()];
  }

  /** True once the connections were started and the run was not stopped. */
  get running(): boolean {
    return this.started && !this.inner.signal.aborted;
  }

  /** Calls `fn` for each connection started from now on (metrics observe their provider exchanges). */
  onConnection(fn: (view: ConnectionView) => void): void {
    this.listeners.push(fn);
  }

  /** The token budget shared by the connections (per IP address). */
  get sharedTokenBudget(): RateBudget {
    return this.tokenBudget;
  }

  /**
   * `once`: syncs every connection whose lease it can take (a connection another process syncs
   * ends at once, named) until done. `daemon`: until `signal` aborts, takes its share of the
   * connections (all of them when it runs alone), renews its leases, and hands connections
   * over when other replicas come; `reload` changes the set meanwhile.
   */
  async run(signal: AbortSignal, connections: readonly Connection[]): Promise<FleetResult> {
    const onAbort = () => this.inner.abort(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    this.configured = new Map(connections.map((c) => [c.name, c]));
    // `once` renews its leases too (a long sync outlasts a lease), but takes no others.
    const heartbeat = this.startHeartbeat();
    this.polls.start();
    try {
      if (this.opts.mode === 'once') await this.takeAll();
      else await this.rebalance();
      this.started = true;
      // Until every connection is done (`once`), or the daemon stops or has nothing left it may do.
      const stop = new Promise<'changed'>((resolve) => {
        if (this.inner.signal.aborted) resolve('changed');
        else this.inner.signal.addEventListener('abort', () => resolve('changed'), { once: true });
      });
      for (;;) {
        const current = [...this.runtimes.values()];
        const changed = new Promise<'changed'>((resolve) => (this.changed = () => resolve('changed')));
        const outcome = await Promise.race([Promise.all(current.map((r) => r.done)).then(() => 'done' as const), changed, stop]);
        if (this.inner.signal.aborted) break;
        if (outcome === 'done' && sameMembers(current, [...this.runtimes.values()]) && this.finished()) break;
        // Nothing running here (a standby replica): wait for a change, not for the empty set again.
        if (outcome === 'done') await Promise.race([changed, stop]);
      }
    } finally {
      heartbeat();
      signal.removeEventListener('abort', onAbort);
      await Promise.all([...this.runtimes.values()].map((r) => r.done));
      await this.polls.stop();
      await Promise.all([...this.runtimes.values()].map((r) => r.client.close()));
      await this.dispatcher.close().catch(() => undefined);
    }
    const results: ConnectionResult[] = [...this.ended].map(([name, result]) => ({ name, result }));
    for (const rt of this.runtimes.values()) if (!this.ended.has(rt.name)) results.push({ name: rt.name, result: rt.lastResult ?? emptyResult() });
    return { connections: results, fatal: this.fatal };
  }

  /**
   * Whether the run is over: `once` when every connection ran; the daemon when it stops, or
   * when every connection ended here for good and no connections directory can bring others.
   */
  private finished(): boolean {
    if (this.opts.mode === 'once' || this.inner.signal.aborted) return true;
    if (this.runtimes.size > 0 || this.configured.size === 0) return false;
    if (this.opts.config.connectionsDir !== undefined) return false;
    return [...this.configured.keys()].every((name) => this.ended.has(name));
  }

  /**
   * Applies a new set of connections (daemon): added ones are taken (this replica's share),
   * removed ones stop, those whose credentials, properties or limits changed restart; the
   * others are not touched.
   */
  async reload(connections: readonly Connection[]): Promise<{ added: string[]; removed: string[]; changed: string[] }> {
    const wanted = new Map(connections.map((c) => [c.name, c]));
    const added = connections.map((c) => c.name).filter((n) => !this.configured.has(n));
    const removed = [...this.configured.keys()].filter((n) => !wanted.has(n));
    const changed = connections.filter((c) => this.configured.has(c.name) && settingsOf(this.configured.get(c.name)!) !== settingsOf(c)).map((c) => c.name);
    this.configured = wanted;
    for (const name of [...removed, ...changed]) this.ended.delete(name);
    await Promise.all([
      ...removed.map((name) => this.stopConnection(name, 'connection removed', { state: 'stopped', reason: 'removed from the configuration' })),
      ...changed.map((name) => this.stopConnection(name, 'connection changed')),
    ]);
    if (added.length + removed.length + changed.length > 0) {
      this.log.info({ added, removed, changed }, `connections reloaded: ${describeChange(added, removed, changed)}; the others go on untouched`);
    }
    await this.rebalance();
    this.changed();
    return { added, removed, changed };
  }

  // ------------------------------------------------------------------ leases and balance

  /** `once`: every connection whose lease is free; the others end at once, naming their holder. */
  private async takeAll(): Promise<void> {
    for (const c of this.configured.values()) {
      const holder = await this.opts.replica.tryTake(c.name);
      if (holder) {
        const since = holder.acquiredAt ? `, since ${holder.acquiredAt.toISOString()}` : '';
        const busy = new HeldElsewhereError(
          `another staysync process (${holder.holder}${since}) is syncing connection ${c.name} into schema ${this.opts.handle.schema}`,
        );
        this.ended.set(c.name, { ...emptyResult(), fatal: busy });
        continue;
      }
      this.start(c);
    }
  }

  private startHeartbeat(): () => void {
    const timer = setInterval(() => void this.rebalance(), this.opts.replica.heartbeatMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** One heartbeat and balancing pass (queued behind the one running). */
  private rebalance(): Promise<void> {
    this.balancing = this.balancing
      .then(() => this.balanceOnce())
      .catch((err: unknown) => {
        this.log.debug({ err: (err as Error).message }, 'replica heartbeat failed: retried at the next one');
      });
    return this.balancing;
  }

  /**
   * Renews this replica and its leases; then moves towards its share of the connections
   * (ceil(connections / live replicas)): takes free ones (free, expired, or a dead replica's)
   * when it has fewer, hands one over when it has more.
   */
  private async balanceOnce(): Promise<void> {
    if (this.inner.signal.aborted) return;
    const { replica } = this.opts;
    const { live, workDue, unroutedEvents } = await replica.heartbeat();
    // Drains sleep while nothing is due: work another process put in their queues wakes them here.
    for (const rt of this.runtimes.values()) {
      if (workDue.has(rt.name) || (unroutedEvents && rt.ctx.handlesUnroutedEvents())) rt.ctx.events.emit('enqueued');
    }
    if (this.opts.mode === 'once') return;
    const wanted = [...this.configured.keys()].filter((n) => !this.ended.has(n));
    const share = Math.ceil(wanted.length / Math.max(1, live));
    const mine = [...this.runtimes.keys()];
    if (mine.length > share) {
      // The excess at once, up to HANDOVER_BATCH a heartbeat: the others take them at their next
      // heartbeat, then the count is looked at again. One a heartbeat took a replica of 500
      // connections an hour to hand 250 over, each a restart with a new token, all that hour.
      const names = mine.sort().slice(share).slice(0, HANDOVER_BATCH);
      this.log.info(
        { connections: names, share, replicas: live },
        `handing ${names.length === 1 ? `connection ${names[0]}` : `${names.length} connections`} over to another replica (${live} replicas share ${wanted.length} connections)`,
      );
      await Promise.all(names.map((name) => this.stopConnection(name, 'handed over to another replica')));
      return;
    }
    // Each replica tries the connections in an order of its own, so that they do not all contend for the same ones.
    const order = wanted.filter((n) => !this.runtimes.has(n)).sort((a, b) => rank(replica.id, a) - rank(replica.id, b));
    for (const name of order) {
      if (this.runtimes.size >= share || this.inner.signal.aborted) break;
      const c = this.configured.get(name);
      if (!c) continue;
      if ((await replica.tryTake(name)) === undefined) this.start(c);
    }
  }

  /** Stops a connection's engine, then lets go of its lease (`waiting`: another replica may take it). */
  private async stopConnection(
    name: string,
    why: string,
    end: { state: 'waiting' | 'stopped'; reason: string | null } = { state: 'waiting', reason: null },
  ): Promise<void> {
    const rt = this.runtimes.get(name);
    if (!rt) return;
    rt.stop.abort(new Error(why));
    await rt.done;
    await rt.client.close();
    if (this.runtimes.get(name) === rt) this.runtimes.delete(name);
    // The budget's ledger goes with the lease: the next holder counts these requests.
    await this.opts.replica.release(name, end.state, end.reason, rt.client.budgets.ledger()).catch(() => undefined);
    this.changed();
  }

  // ------------------------------------------------------------------ one connection

  private start(c: Connection): void {
    const lease = this.opts.replica.lease(c.name);
    // The provider counts its limits per API client, all its connections together: a connection
    // whose client id another one here uses takes its requests from that one's budgets.
    const sameClient = [...this.runtimes.values()].find((r) => r.connection.clientId === c.clientId);
    const rt = new ConnectionRuntime(c, {
      config: this.opts.config,
      handle: this.opts.handle,
      logger: this.opts.logger,
      clock: this.clock,
      dispatcher: this.dispatcher,
      tokenBudget: this.tokenBudget,
      clientBudgets: sameClient?.client.budgets,
      writeSlots: this.writeSlots,
      stopSignal: this.opts.stopSignal,
      lease,
      tokenGate: this.opts.tokenGate,
      // The first connection by name also takes the change events no connection follows.
      handlesUnroutedEvents: () => this.connections[0]?.name === c.name,
      polls: this.polls,
    });
    this.runtimes.set(c.name, rt);
    // Taken over cleanly: the previous holder's requests still count in this budget's windows.
    // Not into a budget a running connection shares: it may count them already (an excess
    // would never leave it), and the provider's remaining-headers add those it lacks.
    if (lease.handedOver) {
      if (!sameClient) rt.client.budgets.seed(lease.handedOver.ledger, lease.handedOver.ageMs);
      lease.handedOver = undefined;
    }
    lease.onLost((reason) => {
      if (this.runtimes.get(c.name) !== rt || rt.stop.signal.aborted) return;
      rt.ctx.logger.error({ reason }, `lost the lease of connection ${c.name}: ${reason}. Stopped syncing it; the replica that holds it goes on`);
      rt.stop.abort(new Error('lease lost'));
      void rt.done.then(async () => {
        await rt.client.close();
        if (this.runtimes.get(c.name) === rt) this.runtimes.delete(c.name);
        this.changed();
      });
    });
    for (const fn of this.listeners) fn(rt);
    rt.done = this.supervise(rt).finally(() => this.changed());
  }

  private setState(rt: ConnectionRuntime, state: HeldConnectionState, reason?: string): void {
    rt.state = state;
    void this.opts.replica.recordState(rt.name, state, reason).catch(() => undefined);
  }

  /**
   * Runs a connection's engine; in the daemon, runs it again after refused credentials or a
   * failure of its own (after sync.failingRecheckMs), until the connection or the process stops.
   */
  private async supervise(rt: ConnectionRuntime): Promise<void> {
    const { mode, handle } = this.opts;
    const ctx = rt.ctx;
    const log = ctx.logger.child({ component: 'connection' });
    const signal = AbortSignal.any([this.inner.signal, rt.stop.signal]);
    const several = () => this.configured.size > 1 || this.opts.config.connectionsDir !== undefined;
    let recovery = this.opts.recovery;
    while (!signal.aborted) {
      this.setState(rt, 'starting');
      const engine = new Engine(ctx, { mode, recovery, ...(this.opts.streams ? { streams: this.opts.streams } : {}) });
      const result = await engine.run(signal, {
        onStart: async () => {
          // Configured properties may have belonged to another connection: they move with their rows.
          if (ctx.config.propertyIds.length > 0) {
            const moved = await ctx.write((trx) => adoptProperties(trx, ctx.connection, ctx.config.propertyIds));
            if (moved > 0) log.info({ rows: moved }, `connection ${ctx.connection}: took over the bookkeeping of its properties from another connection`);
          }
          rt.runId = await startRun(handle.control, mode === 'once' ? 'sync --once' : 'run', processIdentity, ctx.connection);
          this.setState(rt, 'running');
        },
      });
      rt.lastResult = result;
      // --recover applies to the first run of a connection only.
      recovery = { mode: 'none' };
      await this.closeRun(rt, result, signal.aborted);
      if (result.fatal && isProcessWide(result.fatal)) {
        this.fail(result.fatal);
        return;
      }
      if (mode === 'once' || signal.aborted) {
        this.setState(rt, result.fatal || result.failed.length > 0 ? 'failed' : 'stopped', result.fatal?.message);
        return;
      }
      if (!result.fatal) {
        this.setState(rt, 'stopped');
        return;
      }
      // A connection's own failure: refused credentials, nothing to follow.
      if (!several()) {
        // The process's only connection, and nothing can change it: the run ends (exit 1).
        this.setState(rt, 'failed', result.fatal.message);
        this.ended.set(rt.name, result);
        this.runtimes.delete(rt.name);
        return;
      }
      this.setState(rt, result.fatal instanceof AuthenticationError ? 'credentials_refused' : 'failed', result.fatal.message);
      const recheck = this.opts.config.sync.failingRecheckMs;
      log.error(
        { reason: result.fatal.message },
        `connection ${ctx.connection}: ${result.fatal.message}. Tried again in ${Math.round(recheck / 1000)} s or when its file changes; the other connections go on`,
      );
      await this.clock.sleep(recheck, signal).catch(() => undefined);
      // Stopped while waiting: it ends as stopped, not as the failure it was waiting out.
      if (signal.aborted) {
        rt.lastResult = emptyResult();
        rt.state = 'stopped';
      }
    }
  }

  private async closeRun(rt: ConnectionRuntime, result: EngineResult, stopped: boolean): Promise<void> {
    const id = rt.runId;
    rt.runId = undefined;
    if (!id) return;
    const { outcome, error } = runOutcome(result, stopped);
    await finishRun(this.opts.handle.control, id, outcome, statsOf(rt), error).catch((err: unknown) =>
      rt.ctx.logger.warn({ err: (err as Error).message }, 'could not close the run row; the next start closes it as killed'),
    );
  }

  /** Each connection's budget ledger, for the leases handed over at a clean stop. */
  ledgers(): Map<string, BudgetLedger> {
    return new Map([...this.runtimes.values()].map((rt) => [rt.name, rt.client.budgets.ledger()]));
  }

  /** After the shutdown grace time: closes the open run rows without waiting for the engines. */
  async abandon(reason: string): Promise<void> {
    await Promise.all(
      [...this.runtimes.values()].map(async (rt) => {
        const id = rt.runId;
        rt.runId = undefined;
        if (id) await finishRun(this.opts.handle.control, id, 'stopped', statsOf(rt), reason).catch(() => undefined);
      }),
    );
  }

  private fail(err: Error): void {
    this.fatal ??= err;
    if (!this.inner.signal.aborted) this.inner.abort(err);
  }
}

/** A stable pseudo-random rank of a connection for a replica (FNV-1a of both). */
function rank(replicaId: string, name: string): number {
  let h = 0x811c9dc5;
  for (const ch of `${replicaId}/${name}`) {
    h ^= ch.charCodeAt(0);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Errors that are not one connection's: the database refused us. They end every connection. */
function isProcessWide(err: Error): boolean {
  return isDatabaseMisconfigured(err);
}

/** The outcome of one engine run, for its run row. */
export function runOutcome(result: EngineResult, stopped: boolean): { outcome: RunOutcome; error?: string } {
  if (result.fatal) return { outcome: 'failed', error: result.fatal.message };
  if (stopped) return { outcome: 'stopped' };
  if (result.continueTokenLost.length > 0) return { outcome: 'token_lost', error: result.continueTokenLost.map((e) => e.message).join('\n') };
  if (result.failed.length > 0) return { outcome: 'failed', error: result.failed.map((f) => f.message).join('\n') };
  if (result.refreshFailures.length > 0) {
    const contentOnly = result.refreshFailures.every((f) => f.stream === streamNames.content);
    return { outcome: contentOnly ? 'content_failed' : 'refresh_failed', error: result.refreshFailures.map((f) => `${f.stream}: ${f.reason}`).join('\n') };
  }
  return { outcome: 'ok' };
}

/** A connection's counters and provider figures: the run row's stats and the closing log line. */
export function statsOf(view: Pick<ConnectionView, 'ctx' | 'client'>): Record<string, unknown> {
  return { ...view.ctx.counters.toJSON(), provider: view.client.stats() };
}

function emptyResult(): EngineResult {
  return { properties: [], continueTokenLost: [], failed: [], refreshFailures: [], fatal: undefined };
}

function sameMembers(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}

function describeChange(added: string[], removed: string[], changed: string[]): string {
  const parts = [
    added.length ? `started ${added.join(', ')}` : '',
    removed.length ? `stopped ${removed.join(', ')}` : '',
    changed.length ? `restarted ${changed.join(', ')} with new settings` : '',
  ].filter(Boolean);
  return parts.join('; ');
}
