/** `rebuild` and `quarantine retry`: the mirror derived again from what it stores, without the provider. */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, type CommandEnv } from './env.js';
import { type DatabaseHandle } from '../../store/database.js';
import { HeldElsewhereError } from '../../store/errors.js';
import { liveReplicas } from '../../cluster/replicas.js';
import { formatRetry, retryQuarantine } from '../../replay/quarantine-retry.js';
import { formatRebuild, rebuild } from '../../replay/rebuild.js';

/**
 * `rebuild` and `quarantine retry`: they write, so they take the schema's lock (without
 * waiting: a running daemon is named and left alone) and apply pending migrations first, as
 * `run` does. A database that does not answer ends them at once with the usual sentence.
 */
async function openForReplay(env: CommandEnv, what: string): Promise<DatabaseHandle> {
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    // A first statement that fails fast: taking the lease would wait for an unreachable database.
    await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
    try {
      await h.schemaLock.acquire(env.signal, { wait: false });
      const daemons = await liveReplicas(h.control);
      if (daemons.length > 0) {
        await h.schemaLock.close();
        throw new HeldElsewhereError(
          `another staysync process (${daemons.map((d) => `${d.holder}, since ${d.startedAt.toISOString()}`).join('; ')}) is syncing into schema ${h.schema}`,
        );
      }
    } catch (err) {
      if (err instanceof HeldElsewhereError) {
        throw new HeldElsewhereError(
          `cannot ${what}: ${err.message}. Stop it first (a daemon that starts with a newer mapping rebuilds and retries the quarantine by itself)`,
        );
      }
      return rethrowDatabase(err, h);
    }
    await h.migrate().catch((err: unknown) => rethrowDatabase(err, h));
    await h.schemaLock.startFencing().catch((err: unknown) => rethrowDatabase(err, h));
    return h;
  } catch (err) {
    await h.close();
    throw err;
  }
}

/** `rebuild`: every typed table derived again from raw, without a provider request. */
export async function rebuildCommand(env: CommandEnv): Promise<number> {
  const h = await openForReplay(env, 'rebuild the typed tables');
  try {
    const result = await rebuild({ handle: h, config: env.config, logger: env.logger, signal: env.signal }).catch((err: unknown) => rethrowDatabase(err, h));
    for (const line of formatRebuild(result)) env.out(line);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/** `quarantine retry`: the quarantined payloads parsed again; those that pass are mirrored. */
export async function quarantineRetryCommand(env: CommandEnv): Promise<number> {
  const h = await openForReplay(env, 'retry the quarantine');
  try {
    const result = await retryQuarantine({ handle: h, config: env.config, logger: env.logger, signal: env.signal }).catch((err: unknown) =>
      rethrowDatabase(err, h),
    );
    for (const line of formatRetry(result)) env.out(line);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}
