/**
 * What `run` and `sync --once` do when the mirror was built with an older mapping than this
 * one's (MAPPING_VERSION, src/mapping/version.ts): rebuild the typed tables from raw and retry
 * the quarantine before syncing, so that a mapping fix reaches every stored row without a
 * re-sync. The version the typed tables were built with is kept in mirror_settings.
 */
import { MAPPING_VERSION } from '../mapping/version.js';
import { mirrorHoldsRows, saveMappingVersion, storedMappingVersion } from '../store/repositories/mapping-version.js';
import { maxQuarantineId } from '../store/repositories/quarantine.js';
import { rebuild, type ReplayEnv } from './rebuild.js';
import { retryQuarantine } from './quarantine-retry.js';

export type MappingUpgrade = 'current' | 'recorded' | 'rebuilt' | 'stopped';

/**
 * Run after migrations, holding the schema's lock, before the streams start. When the stored
 * version is missing or older than MAPPING_VERSION: on an empty mirror the version is just
 * recorded; otherwise the typed tables are rebuilt from raw, the quarantine that was there is
 * retried, and only then the version is recorded (a stop or a failure in between leaves the
 * old version, so the next start does it again: both steps are idempotent).
 */
export async function upgradeMapping(env: ReplayEnv): Promise<MappingUpgrade> {
  const { handle, logger } = env;
  const stored = await storedMappingVersion(handle.db);
  if (stored !== null && stored >= MAPPING_VERSION) {
    if (stored > MAPPING_VERSION) {
      logger.warn(
        { stored, mapping: MAPPING_VERSION },
        `the typed tables were built by a newer staysync (mapping version ${stored}, this one has ${MAPPING_VERSION}): they are left as they are`,
      );
    }
    return 'current';
  }
  if (!(await mirrorHoldsRows(handle.db))) {
    await handle.write((trx) => saveMappingVersion(trx, MAPPING_VERSION));
    return 'recorded';
  }
  logger.info(
    { from: stored, to: MAPPING_VERSION },
    `the mapping from raw payloads to typed rows is newer than the mirror's (version ${stored ?? 'none'} → ${MAPPING_VERSION}): rebuilding the typed tables from raw and retrying the quarantine before syncing, without provider requests`,
  );
  // Rows the rebuild quarantines were just found failing: the retry leaves them.
  const upToId = await maxQuarantineId(handle.db);
  const rebuilt = await rebuild(env);
  if (rebuilt.stopped) return 'stopped';
  const retried = await retryQuarantine(env, { upToId });
  if (retried.stopped) return 'stopped';
  await handle.write((trx) => saveMappingVersion(trx, MAPPING_VERSION));
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const sources = Object.values(rebuilt.sources);
  const streams = Object.values(retried.byStream);
  logger.info(
    { rebuild: rebuilt.sources, children: rebuilt.children, quarantine: retried.byStream },
    `mapping version ${MAPPING_VERSION} recorded: ${sum(sources.map((c) => c.rebuilt))} rows rebuilt from raw (${sum(sources.map((c) => c.changed))} changed, ` +
      `${sum(sources.map((c) => c.quarantined))} quarantined) in ${(rebuilt.ms / 1000).toFixed(1)} s; quarantine: ${sum(streams.map((c) => c.mirrored))} mirrored, ` +
      `${sum(streams.map((c) => c.stillFailing))} still failing, ${sum(streams.map((c) => c.notReplayable))} not replayable`,
  );
  return 'rebuilt';
}
