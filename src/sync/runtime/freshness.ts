/**
 * Who hears about the lag of fresh changes: the booking details stream reports each one after
 * its write committed (recorded in change_lags too), /metrics observes it into a histogram.
 * Kept per sync context, so that several engines in one process (tests) stay apart; one set of
 * listeners per context, nothing per booking.
 */
import type { SyncContext } from './context.js';

export type ChangeLagListener = (propertyId: string, seconds: number) => void;

const listeners = new WeakMap<SyncContext, Set<ChangeLagListener>>();

/** Calls `fn` with every fresh change's lag written through `ctx`; returns the unsubscribe. */
export function onChangeLag(ctx: SyncContext, fn: ChangeLagListener): () => void {
  let set = listeners.get(ctx);
  if (!set) listeners.set(ctx, (set = new Set()));
  set.add(fn);
  return () => set.delete(fn);
}

/** A fresh change of `propertyId` is in the mirror, `seconds` after it was made at the provider. */
export function reportChangeLag(ctx: SyncContext, propertyId: string, seconds: number): void {
  for (const fn of listeners.get(ctx) ?? []) fn(propertyId, seconds);
}
