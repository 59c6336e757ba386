/**
 * What the sync tells whoever listens, in one place per connection (its context's `events`):
 * the engine wakes its idle queue drains on `enqueued`, /metrics observes `eventProcessed` and
 * `changeLag` into histograms. One set of listeners per context, nothing per booking; kept
 * per context, so that several engines in one process (a fleet, tests) stay apart.
 */

export interface SyncEventMap {
  /** Work was enqueued (a page of the list, a sweep, a PMS search, a change event): idle queue drains look at once. */
  enqueued: [];
  /** A PMS reservation fetched during a backfill left its invoices or its persons' loyalty cards to the pass after it (pms-deferred-reads.ts). */
  readsDeferred: [];
  /** A change event's refresh committed, `seconds` after the provider created it (`eventType`: a documented type, or `other`). */
  eventProcessed: [eventType: string, seconds: number];
  /** A fresh change of `propertyId` is in the mirror, `seconds` after it was made at the provider. */
  changeLag: [propertyId: string, seconds: number];
}

type Listener = (...args: never[]) => void;

export class SyncEvents {
  private readonly listeners = new Map<keyof SyncEventMap, Set<Listener>>();

  /** Calls `fn` at every `name`; returns how to stop. */
  on<K extends keyof SyncEventMap>(name: K, fn: (...args: SyncEventMap[K]) => void): () => void {
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(fn as Listener);
    return () => void set.delete(fn as Listener);
  }

  emit<K extends keyof SyncEventMap>(name: K, ...args: SyncEventMap[K]): void {
    for (const fn of this.listeners.get(name) ?? []) (fn as (...a: SyncEventMap[K]) => void)(...args);
  }
}
