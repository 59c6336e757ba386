/** The handles the store's code runs statements on, for every module of the store. */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

/** The query pool (reads, single statements). */
export type Db = Kysely<Database>;
/** A transaction in progress (every write of the sync is one, fenced by a lease). */
export type Trx = Transaction<Database>;
/** Either of the two: what a repository function runs its statements on. */
export type Executor = Db | Trx;
