/**
 * What a failure means for the stream it happened in, decided in one place so that every
 * stream reacts the same way: wait for the database or the lease, back off and retry, mark
 * the property failing, stop the property's booking list (token lost), or stop the process.
 */
import { isDatabaseMisconfigured, isTransactionConflict, FenceLostError } from '../../store/errors.js';
import {
  AccessRefusedError,
  AuthenticationError,
  InvalidPayloadError,
  NotFoundError,
  ProviderUnavailableError,
  RequestRejectedError,
} from '../../provider/errors.js';
import { describeNetworkError } from '../../provider/token.js';
import type { SyncContext } from './context.js';
import { RefreshIncompleteError, ContinueTokenLostError, ContinueTokenRetryError, NotGrantedError } from './errors.js';
import type { ApiArea } from '../../provider/api-access.js';

export type Verdict =
  /** The process is stopping: end quietly. */
  | { kind: 'stopped' }
  /** The database is away (already reported and logged once): wait for it, then go on. */
  | { kind: 'database' }
  /** This process does not hold the lease its writes need (now): wait until it does, then go on. */
  | { kind: 'lease' }
  | { kind: 'continueTokenLost'; error: ContinueTokenLostError }
  /** Retrying cannot help anyone (credentials, database settings): the process stops. */
  | { kind: 'fatal'; error: Error }
  /**
   * The API connection may not use the stream's area: not a failure. `refused` when a 403 said
   * so (the current token is then marked as not granting it); otherwise the token's claim did.
   */
  | { kind: 'notGranted'; area: ApiArea; reason: string; refused: boolean }
  /** The provider refuses this property's requests as they are: mark it failing. */
  | { kind: 'permanent'; reason: string }
  /** Likely to pass: back off and retry. `unexpected` when the error is not one we know. */
  | { kind: 'transient'; reason: string; unexpected: boolean };

export function classify(err: unknown, signal: AbortSignal, ctx: Pick<SyncContext, 'database'>): Verdict {
  if (signal.aborted) return { kind: 'stopped' };
  if (err instanceof FenceLostError) return { kind: 'lease' };
  if (ctx.database.report(err)) return { kind: 'database' };
  if (err instanceof ContinueTokenLostError) return { kind: 'continueTokenLost', error: err };
  if (err instanceof AuthenticationError) return { kind: 'fatal', error: err };
  if (isDatabaseMisconfigured(err)) return { kind: 'fatal', error: err as Error };
  if (err instanceof NotGrantedError) return { kind: 'notGranted', area: err.area, reason: err.message, refused: false };
  if (err instanceof AccessRefusedError) return { kind: 'notGranted', area: err.area, reason: err.message, refused: true };
  if (err instanceof RequestRejectedError || err instanceof NotFoundError) return { kind: 'permanent', reason: err.message };
  if (err instanceof InvalidPayloadError) return { kind: 'permanent', reason: `the answer is not the documented shape: ${err.reason}` };
  if (err instanceof ProviderUnavailableError || err instanceof ContinueTokenRetryError) return { kind: 'transient', reason: err.message, unexpected: false };
  if (err instanceof RefreshIncompleteError)
    return err.transient ? { kind: 'transient', reason: err.message, unexpected: false } : { kind: 'permanent', reason: err.message };
  if (isTransactionConflict(err)) return { kind: 'transient', reason: describeNetworkError(err), unexpected: false };
  return { kind: 'transient', reason: err instanceof Error ? err.message : String(err), unexpected: true };
}

/**
 * Backoff of a stream after `failures` transient failures in a row: 1 s, 2 s, 4 s, … capped at
 * one minute, with jitter. The provider client has already retried each request several
 * times; this is the pause between those rounds, and the end of an outage cuts it short.
 */
export function streamBackoffMs(failures: number, random: () => number = Math.random): number {
  const ceiling = Math.min(60_000, 1_000 * 2 ** Math.min(Math.max(0, failures - 1), 9));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
