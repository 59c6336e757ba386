import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { Logger } from '../log.js';
import type { ProviderClient } from '../provider/client.js';
import type { Clock } from '../util/clock.js';
import type { SyncCounters } from './counters.js';

/** What every stream needs: built once by the engine and passed down. */
export interface SyncContext {
  readonly config: Config;
  readonly db: Db;
  readonly client: ProviderClient;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly counters: SyncCounters;
  /** Called after a page enqueued detail fetches, so an idle details stream wakes at once. */
  onEnqueued?: (() => void) | undefined;
}

/** The provider rejected the stored cursor of a property, or it vanished: restart with --recover. */
export class TokenLostError extends Error {
  override name = 'TokenLostError';
  constructor(
    readonly propertyId: string,
    detail: string,
    options?: ErrorOptions,
  ) {
    super(
      `property ${propertyId}: ${detail}. The bookings of this property are not followed any more. ` +
        `Restart with --recover to resume from the last mirrored modification minus two days ` +
        `(or --recover=<ISO time> to choose the point).`,
      options,
    );
  }
}
