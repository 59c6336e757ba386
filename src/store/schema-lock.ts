/**
 * The schema's lock: what must run alone (start-up: migrations, a mapping upgrade,
 * registration among the replicas; `rebuild` and `quarantine retry`) runs under it. (The
 * connections' leases, which replicas share out, are another thing: cluster/replicas.ts.)
 *
 * The lock is a PostgreSQL advisory lock held by a session of its own (not a pooled
 * connection), plus an epoch in `sync_lease` that the holder increments when it takes the
 * lock. Every write transaction under it first checks, with FOR SHARE, that the epoch is still
 * the one this process took (`fence`). So:
 * - when the lock's session drops (server restart, pg_terminate_backend, network), the lock is
 *   gone; this process notices (an error or end event on the session, or the heartbeat), stops
 *   starting writes at once, and tries to take the lock again;
 * - if another process takes it meanwhile, its epoch update waits for our in-flight write
 *   transactions (they hold FOR SHARE on the row), and every later write of ours fails the
 *   fence: the two writers never interleave;
 * - a process that finds the lock held waits for it (`run`) or says who holds it (`--once`).
 */
import { hostname } from 'node:os';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import { WaitList } from '../util/wait-list.js';
import { DEFAULT_CONNECTION } from '../config/connections.js';
import type { DatabaseAvailability } from './availability.js';
import { describeDatabaseError, isDatabaseMisconfigured, HeldElsewhereError, FenceLostError } from './errors.js';

/** A dedicated database session: a pg Client, or the embedded database's single connection. */
export interface LockSession {
  query<R extends Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
  /** Registers a callback for the session ending or failing on its own (never for the embedded database). */
  onLost(callback: (reason: string) => void): void;
  end(): Promise<void>;
}

/** Runs one statement inside the write transaction being fenced; returns its rows. */
export type FenceQuery = (text: string, params: unknown[]) => Promise<unknown[]>;

/**
 * What a write transaction is fenced by: the schema's lock (rebuild, quarantine retry,
 * in-process tests) or a connection's lease (replicas.ts). `fence` is the transaction's first
 * statement; it also sets `staysync.connection` for the transaction.
 */
export interface WriteFence {
  readonly held: boolean;
  /** The epoch held (undefined when none): a new epoch means another process may have written meanwhile. */
  readonly epoch: string | undefined;
  waitUntilHeld(signal: AbortSignal): Promise<void>;
  fence(query: FenceQuery, connection?: string): Promise<void>;
}

export interface SchemaLockOptions {
  schema: string;
  openSession: () => Promise<LockSession>;
  availability: DatabaseAvailability;
  logger: Logger;
  clock: Clock;
  /** How often a waiting process tries to take the lease, and how often the holder checks its session. */
  retryMs: number;
}

/** Who this process is, in the lease row and in sync_runs. */
export const processIdentity = { host: hostname(), pid: process.pid };
const holderName = `${processIdentity.host} pid ${processIdentity.pid}`;
const LEASE_ROW = 'writer';

export class SchemaLock implements WriteFence {
  private session: LockSession | undefined;
  private heldEpoch: string | undefined;
  /** True once migrations ran: from then on taking the lock also takes an epoch. */
  private fenced = false;
  private reacquiring: Promise<void> | undefined;
  private readonly waiters = new WaitList();
  private heartbeat: NodeJS.Timeout | undefined;
  /** Aborted by close(): ends a wait for the lease. */
  private readonly closing = new AbortController();
  private readonly log;
  /** Times the lease was lost while held (metrics). */
  losses = 0;

  constructor(private readonly opts: SchemaLockOptions) {
    this.log = opts.logger.child({ component: 'lease', schema: opts.schema });
  }

  /** True while this process holds the lock (and, after migrations, its epoch). */
  get held(): boolean {
    return this.session !== undefined && (!this.fenced || this.heldEpoch !== undefined);
  }

  get epoch(): string | undefined {
    return this.heldEpoch;
  }

  /**
   * Takes the lock. With `wait`, waits for a holder to let go (and for the database to be
   * reachable); without, throws HeldElsewhereError naming the holder.
   */
  async acquire(signal: AbortSignal, opts: { wait: boolean }): Promise<void> {
    let toldBusy = false;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      let taken: boolean;
      try {
        taken = await this.tryTake();
      } catch (err) {
        if (isDatabaseMisconfigured(err) || !this.opts.availability.report(err)) throw err;
        await this.opts.availability.waitUntilAvailable(signal);
        continue;
      }
      if (taken) return;
      const holder = await this.describeHolder();
      if (!opts.wait) {
        throw new HeldElsewhereError(`another staysync process (${holder}) is syncing into schema ${this.opts.schema}`);
      }
      if (!toldBusy) {
        this.log.warn({ holder }, `another staysync process (${holder}) holds the lock of schema ${this.opts.schema}: waiting for it`);
        toldBusy = true;
      }
      await this.opts.clock.sleep(this.opts.retryMs, signal);
    }
  }

  /**
   * Called once the schema is migrated: takes an epoch (waiting for the in-flight writes of a
   * previous holder) so that every write can be fenced from now on.
   */
  async startFencing(): Promise<void> {
    this.fenced = true;
    await this.takeEpoch();
  }

  /** Resolves when the lease is held (at once if it is). */
  waitUntilHeld(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return this.held ? Promise.resolve() : this.waiters.wait(signal);
  }

  /**
   * The fence, first statement of every write transaction: fails with FenceLostError unless
   * this process still holds the epoch it took. FOR SHARE makes a new holder's epoch update
   * wait until this transaction ends. The same statement sets the transaction's API connection
   * (`staysync.connection`, the default of the bookkeeping tables' `connection` column), so
   * that costs no round trip of its own.
   */
  async fence(query: FenceQuery, connection = DEFAULT_CONNECTION): Promise<void> {
    const epoch = this.heldEpoch;
    if (!this.held || epoch === undefined) throw new FenceLostError(`this process does not hold the lock of schema ${this.opts.schema}`);
    const rows = await query("SELECT set_config('staysync.connection', $3, true) FROM sync_lease WHERE name = $1 AND epoch = $2 FOR SHARE", [
      LEASE_ROW,
      epoch,
      connection,
    ]);
    if (rows.length === 0) {
      this.lost('another process took the lease (its epoch changed)');
      throw new FenceLostError(`another process took the lock of schema ${this.opts.schema}`);
    }
  }

  /** Lets go of the lease (the session ends, which frees the lock). Idempotent. */
  async close(): Promise<void> {
    this.closing.abort(new Error('lease closed'));
    this.stopHeartbeat();
    const session = this.session;
    this.session = undefined;
    this.heldEpoch = undefined;
    await session?.end().catch(() => undefined);
  }

  // ---------------------------------------------------------------- internals

  private async tryTake(): Promise<boolean> {
    const session = await this.opts.openSession();
    let ok = false;
    try {
      const rows = await session.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [`staysync:${this.opts.schema}`]);
      ok = rows[0]?.ok === true;
    } finally {
      if (!ok) await session.end().catch(() => undefined);
    }
    if (!ok) return false;
    this.session = session;
    session.onLost((reason) => this.lost(`its database session ended (${reason})`));
    if (this.fenced) {
      try {
        await this.takeEpoch();
      } catch (err) {
        this.session = undefined;
        await session.end().catch(() => undefined);
        throw err;
      }
    }
    this.startHeartbeat();
    this.waiters.wakeAll();
    return true;
  }

  private async takeEpoch(): Promise<void> {
    const session = this.session;
    if (!session) throw new FenceLostError('the lease session is gone');
    // Waits for the FOR SHARE locks of a previous holder's in-flight writes.
    const rows = await session.query<{ epoch: string }>(
      `INSERT INTO sync_lease (name, epoch, holder, acquired_at) VALUES ($1, 1, $2, now())
       ON CONFLICT (name) DO UPDATE SET epoch = sync_lease.epoch + 1, holder = excluded.holder, acquired_at = excluded.acquired_at
       RETURNING epoch::text AS epoch`,
      [LEASE_ROW, holderName],
    );
    this.heldEpoch = rows[0]!.epoch;
    this.log.debug({ epoch: this.heldEpoch }, 'schema lock taken');
  }

  private async describeHolder(): Promise<string> {
    try {
      const session = await this.opts.openSession();
      try {
        const rows = await session.query<{ holder: string; acquired_at: Date }>(`SELECT holder, acquired_at FROM sync_lease WHERE name = $1`, [LEASE_ROW]);
        const r = rows[0];
        return r ? `${r.holder}, since ${new Date(r.acquired_at).toISOString()}` : 'holder unknown';
      } finally {
        await session.end().catch(() => undefined);
      }
    } catch {
      return 'holder unknown';
    }
  }

  /** The session is gone or the epoch moved on: stop writing now, then take the lease again. */
  private lost(reason: string): void {
    if (this.closing.signal.aborted || this.session === undefined) return;
    const session = this.session;
    this.session = undefined;
    this.heldEpoch = undefined;
    this.losses += 1;
    this.stopHeartbeat();
    void session.end().catch(() => undefined);
    this.log.error({ reason }, `lost the lock of schema ${this.opts.schema}: ${reason}. Stopped writing; taking it again`);
    this.reacquiring ??= this.reacquire().finally(() => (this.reacquiring = undefined));
  }

  private async reacquire(): Promise<void> {
    try {
      await this.acquire(this.closing.signal, { wait: true });
      this.log.info({ epoch: this.heldEpoch }, `lock of schema ${this.opts.schema} taken again; resuming`);
    } catch (err) {
      if (!this.closing.signal.aborted) this.log.error({ err: describeDatabaseError(err) }, 'could not take the lock of the schema again');
    }
  }

  private startHeartbeat(): void {
    this.stopHeartbeat();
    this.heartbeat = setInterval(() => {
      const session = this.session;
      if (!session) return;
      session.query('SELECT 1').catch((err: unknown) => {
        if (this.session === session) this.lost(describeDatabaseError(err));
      });
    }, this.opts.retryMs);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
  }
}
