/**
 * What the tools and the tests need of the database beyond what the daemon does: a handle
 * ready for writes without the CLI's start-up (to run streams directly), and SQL text run as
 * it is (the demo's example reports, tests that change a role by hand).
 */
import { openConfiguredDatabase } from '../../src/local-pg/open-database.js';
import { sql } from 'kysely';
import type { Config } from '../../src/config/config.js';
import { type DatabaseHandle } from '../../src/store/database.js';
import type { Db } from '../../src/store/types.js';
import type { Logger } from '../../src/util/log.js';

/**
 * A handle ready for writes: the schema's lock taken (LockBusyError when another process holds
 * it), the schema migrated, the writes fenced. The CLI does the same with waiting and give-up
 * times (src/cli/commands/sync.ts).
 */
export async function openForWriting(config: Config, logger: Logger, signal: AbortSignal = new AbortController().signal): Promise<DatabaseHandle> {
  const h = await openConfiguredDatabase(config, logger);
  try {
    await h.schemaLock.acquire(signal, { wait: false });
    await h.migrate();
    await h.schemaLock.startFencing();
    return h;
  } catch (err) {
    await h.close();
    throw err;
  }
}

/** Runs one SQL text as it is. */
export async function rawQuery(db: Db, text: string): Promise<Record<string, unknown>[]> {
  return (await sql.raw<Record<string, unknown>>(text).execute(db)).rows;
}
