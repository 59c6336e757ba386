/**
 * Replicas and connection leases: several staysync processes share the API connections of one
 * schema, with PostgreSQL as the only coordinator (migrations/0010_connections.sql).
 *
 * - A replica registers a row in sync_replicas and keeps it alive with a heartbeat every
 *   takeover/4; a replica that misses its heartbeats for takeover × 3/4 counts as dead.
 * - A connection is synced by the replica holding its lease: its row in sync_connections
 *   names the replica and an expiry, renewed with the heartbeat (one statement for all the
 *   replica's leases). A lease may be taken when it is free, expired, or held by a replica
 *   that is dead or gone. So a replica that dies is replaced within the takeover time: its
 *   leases expire at most takeover × 3/4 after its last heartbeat, and the others look every
 *   takeover/4.
 * - Taking a lease increments its epoch. Every write of a connection begins with the fence: a
 *   FOR KEY SHARE read of its row with the epoch this replica took. A replica that lost a lease
 *   (it was away longer than the expiry, another took it) fails the fence and writes nothing,
 *   and the taker locks the row FOR UPDATE first, which waits for the previous holder's
 *   writes in flight: their commits never interleave. The renewals
 *   and state updates change no key column, so they take a lock that FOR KEY SHARE does not
 *   conflict with: a stream of overlapping writes never holds up a heartbeat (with FOR SHARE it
 *   could, since share lockers may keep an updater waiting as long as they overlap).
 * - On the local side, a lease counts as held only until its expiry as last renewed (on this
 *   process's clock, from before the renewal was sent): during a database outage the replica
 *   stops starting writes before any other could take its leases.
 * - A process that restarts on the same host (a container restarted in place, pid 1 again) or
 *   finds a replica of its host whose process is gone removes that replica's row at once, so
 *   its leases are free without waiting for the expiry.
 */
import type { ConnectionState } from '../store/states.js';
import { randomUUID } from 'node:crypto';
import type { RateLimitScope } from '../config/config.js';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import { processAlive } from '../util/process-alive.js';
import { WaitList } from '../util/wait-list.js';
import type { Db } from '../store/types.js';
import {
  CONNECTION_FENCE,
  heartbeat,
  leaseHolder,
  leaseHolderIfBusy,
  liveReplicaRows,
  recordConnectionState,
  registerReplica,
  releaseLease,
  removeReplicas,
  replicasOfHost,
  takeLease,
  type ReplicaRow,
} from '../store/repositories/replicas.js';
import { FenceLostError } from '../store/errors.js';
import { processIdentity, type FenceQuery, type WriteFence } from '../store/schema-lock.js';

export interface ReplicaOptions {
  /** The control pool (small, separate from the sync's writes). */
  db: Db;
  schema: string;
  logger: Logger;
  clock: Clock;
  /** A dead replica's connections are taken over within this time (replicas.takeoverMs). */
  takeoverMs: number;
  /** `sync --once` is not counted when daemons balance the connections between them. */
  command: 'run' | 'sync --once';
}

/** The replicas alive now (their heartbeat has not expired), for messages. */
export async function liveReplicas(db: Db): Promise<{ holder: string; startedAt: Date }[]> {
  return (await liveReplicaRows(db)).map((r) => ({ holder: `${r.host} pid ${r.pid}`, startedAt: r.startedAt }));
}

/** A connection's budget windows as the last holder left them: ages (ms) of its requests, by scope. */
export type BudgetLedger = Partial<Record<RateLimitScope, number[]>>;

/** Who holds a connection now, for the message of a process that cannot take it. */
export interface LeaseHolder {
  holder: string;
  acquiredAt: Date | null;
}

const holderName = `${processIdentity.host} pid ${processIdentity.pid}`;

export class Replica {
  readonly id = randomUUID();
  readonly holder = holderName;
  private readonly leases = new Map<string, ConnectionLease>();
  private readonly log;
  private registered = false;
  /** Leases lost to another replica while held (metrics). */
  losses = 0;

  constructor(private readonly opts: ReplicaOptions) {
    this.log = opts.logger.child({ component: 'replicas' });
  }

  /** How long a lease or a replica's registration lasts without renewal. */
  get ttlMs(): number {
    return Math.round((this.opts.takeoverMs * 3) / 4);
  }

  /** This replica's row in sync_replicas. */
  private get row(): ReplicaRow {
    return { replicaId: this.id, host: processIdentity.host, pid: processIdentity.pid, command: this.opts.command };
  }

  /** How often the heartbeat renews the registration and the leases (and the fleet rebalances). */
  get heartbeatMs(): number {
    return Math.max(50, Math.round(this.opts.takeoverMs / 4));
  }

  /**
   * Removes the rows of replicas of this host whose process is gone, or that had this very pid
   * (a container restarted in place): their leases are free at once, and their runs are closed
   * as killed. Called before `register`, under the schema's lock.
   */
  async forgetGoneReplicasOfThisHost(): Promise<void> {
    const mine = await replicasOfHost(this.opts.db, processIdentity.host);
    const gone = mine.filter((r) => r.replicaId !== this.id && (r.pid === processIdentity.pid || !processAlive(r.pid))).map((r) => r.replicaId);
    if (gone.length === 0) return;
    await removeReplicas(this.opts.db, gone);
    this.log.info({ replicas: gone.length }, 'a staysync process of this host that is gone left its registration: removed, its connections are free');
  }

  /** Registers this process among the replicas of the schema. */
  async register(): Promise<void> {
    await registerReplica(this.opts.db, this.row, this.ttlMs);
    this.registered = true;
  }

  /**
   * Renews the registration and every lease held, in one round trip; leases that are not ours
   * any more are marked lost. Returns how many daemon replicas are alive (this one included):
   * those the connections are balanced between.
   */
  /**
   * Renews the registration and the leases held. Returns the live daemon replicas (this one
   * included), the held connections with work due (their drains are woken), and whether change
   * events of properties no connection follows are pending.
   */
  async heartbeat(): Promise<{ live: number; workDue: Set<string>; unroutedEvents: boolean }> {
    const { db, clock } = this.opts;
    const sentAt = clock.now();
    const names = [...this.leases.values()].filter((l) => l.epoch !== undefined).map((l) => l.connection);
    const { renewed, otherDaemons, workDue, unroutedEvents } = await heartbeat(db, this.row, this.ttlMs, names);
    for (const name of names) {
      const lease = this.leases.get(name)!;
      if (renewed.get(name) === lease.epoch) lease.renewed(sentAt + this.ttlMs);
      else lease.lost('another replica took it (this one was away longer than the lease lasts)');
    }
    return { live: otherDaemons + 1, workDue, unroutedEvents };
  }

  /** The lease object of a connection (one per name; not taken until `tryTake`). */
  lease(connection: string): ConnectionLease {
    let l = this.leases.get(connection);
    if (!l) {
      l = new ConnectionLease(connection, this, this.opts.clock, this.opts.schema);
      l.onLost(() => (this.losses += 1));
      this.leases.set(connection, l);
    }
    return l;
  }

  /** Leases held now. */
  get held(): ConnectionLease[] {
    return [...this.leases.values()].filter((l) => l.held);
  }

  /**
   * Takes a connection's lease if it is free, expired, or held by a replica that is dead or
   * gone (waiting for that replica's writes in flight). Returns undefined when taken, else who
   * holds it.
   */
  async tryTake(connection: string): Promise<LeaseHolder | undefined> {
    const { db, clock } = this.opts;
    const lease = this.lease(connection);
    // A plain read first: taking locks the row, and that waits for the holder's writes in
    // flight. Only a lease that can be taken is worth that wait.
    const busy = await leaseHolderIfBusy(db, connection, this.id);
    if (busy) return { holder: busy.holder ?? 'holder unknown', acquiredAt: busy.acquiredAt };
    const sentAt = clock.now();
    const taken = await takeLease(db, connection, { replicaId: this.id, name: this.holder, ttlMs: this.ttlMs });
    if (taken) {
      if (taken.ledger && taken.ledgerAgeMs !== null) lease.handedOver = { ledger: taken.ledger, ageMs: taken.ledgerAgeMs };
      lease.taken(taken.epoch, sentAt + this.ttlMs);
      return undefined;
    }
    const row = await leaseHolder(db, connection);
    return { holder: row.holder ?? 'holder unknown', acquiredAt: row.acquiredAt };
  }

  /** Lets go of a lease (after its engine stopped): another replica may take it at once. */
  async release(connection: string, state: 'waiting' | 'stopped' = 'waiting', reason: string | null = null, ledger?: BudgetLedger): Promise<void> {
    const lease = this.leases.get(connection);
    if (!lease || lease.epoch === undefined) return;
    const epoch = lease.epoch;
    lease.released();
    await releaseLease(this.opts.db, connection, this.id, epoch, { state, reason, ledger });
  }

  /** Records a connection's state for `status` (only while this replica holds it). */
  async recordState(connection: string, state: ConnectionState, reason: string | undefined): Promise<void> {
    await recordConnectionState(this.opts.db, connection, this.id, state, reason ?? null);
  }

  /** Clean stop: every lease released (with its budget's ledger, when given), the registration removed. */
  async deregister(ledgers: ReadonlyMap<string, BudgetLedger> = new Map()): Promise<void> {
    if (!this.registered) return;
    this.registered = false;
    for (const l of this.leases.values()) if (l.epoch !== undefined) await this.release(l.connection, 'waiting', null, ledgers.get(l.connection));
    await removeReplicas(this.opts.db, [this.id]);
  }
}

/** One connection's lease, as the connection's streams and writes see it. */
export class ConnectionLease implements WriteFence {
  /** Set when taken after a clean handover: the previous holder's budget ledger and its age. */
  handedOver: { ledger: BudgetLedger; ageMs: number } | undefined;
  private heldEpoch: string | undefined;
  /** On this process's clock: the lease is not used after this. */
  private validUntil = 0;
  private readonly waiters = new WaitList();
  private readonly lostListeners: ((reason: string) => void)[] = [];

  constructor(
    readonly connection: string,
    private readonly replica: Replica,
    private readonly clock: Clock,
    private readonly schema: string,
  ) {}

  get epoch(): string | undefined {
    return this.heldEpoch;
  }

  get held(): boolean {
    return this.heldEpoch !== undefined && this.clock.now() < this.validUntil;
  }

  waitUntilHeld(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return this.held ? Promise.resolve() : this.waiters.wait(signal);
  }

  /** Called when the lease is lost (another replica took it): the fleet stops the connection. */
  onLost(fn: (reason: string) => void): void {
    this.lostListeners.push(fn);
  }

  async fence(query: FenceQuery): Promise<void> {
    const epoch = this.heldEpoch;
    if (!this.held || epoch === undefined)
      throw new FenceLostError(`this process does not hold the lease of connection ${this.connection} in schema ${this.schema}`);
    const rows = await query(CONNECTION_FENCE, [this.connection, this.replica.id, epoch]);
    if (rows.length === 0) {
      this.lost('another replica took it');
      throw new FenceLostError(`another staysync process took the lease of connection ${this.connection} in schema ${this.schema}`);
    }
  }

  /** @internal Replica: taken with `epoch`, valid until `until` (local clock). */
  taken(epoch: string, until: number): void {
    this.heldEpoch = epoch;
    this.validUntil = until;
    this.waiters.wakeAll();
  }

  /** @internal Replica: renewed until `until`. */
  renewed(until: number): void {
    const wasHeld = this.held;
    this.validUntil = until;
    if (!wasHeld) this.waiters.wakeAll();
  }

  /** @internal Replica: let go. */
  released(): void {
    this.heldEpoch = undefined;
    this.validUntil = 0;
  }

  /** @internal Replica or fence: the lease is another replica's now. */
  lost(reason: string): void {
    if (this.heldEpoch === undefined) return;
    this.released();
    for (const fn of this.lostListeners) fn(reason);
  }
}
