/**
 * Scenario C: one content refresh of 500 properties with full content (reference lists, the
 * property list in pages of 200, each property's cancellation and extra-stay rules) against
 * the simulator, with the standard windows scaled like scenario A. Prints the requests, the
 * duration against the theoretical minimum for that many requests, and the 429s received.
 * The refresh runs in this process (the simulator too): the figure of interest is pacing.
 */
import { randomBytes } from 'node:crypto';
import { loadConfig, type Config } from '../../src/config/config.js';
import { openForWriting } from '../common/database.js';
import { createLogger } from '../../src/util/log.js';
import { ProviderClient } from '../../src/provider/client.js';
import { startSimulator } from '../simulator/index.js';
import { refreshContent } from '../../src/sync/streams/content.js';
import { createSyncContext } from '../../src/sync/runtime/context.js';
import type { Limits } from './run.js';
import { minTimeFor } from './theory.js';

export interface ContentBenchResult {
  properties: number;
  requests: number;
  acceptedStandard: number;
  rejected429: number;
  wallMs: number;
  theoreticalMs: number;
  changedRows: number;
  quarantined: number;
  ok: boolean;
}

export async function runContentBench(opts: { properties: number; limits: Limits; databaseUrl: string }): Promise<ContentBenchResult> {
  const sim = await startSimulator({
    clients: [{ clientId: 'bench-client', clientSecret: 'bench-secret' }],
    properties: [{ id: '500100', bookingCount: 0 }],
    contentOnlyProperties: opts.properties - 1,
    rateLimits: opts.limits,
  });
  const schema = `bench_${randomBytes(5).toString('hex')}`;
  const config: Config = loadConfig({
    env: {},
    overrides: {
      database: { url: opts.databaseUrl, schema },
      provider: { url: sim.url, referenceDataUrl: sim.url, clientId: 'bench-client', clientSecret: 'bench-secret' },
      rateLimits: opts.limits,
      log: { level: 'warn' },
    },
  });
  const logger = createLogger('warn');
  const db = await openForWriting(config, logger);
  const client = new ProviderClient({ config, logger });
  try {
    const ctx = createSyncContext({ config, handle: db, client, logger });
    const started = Date.now();
    const r = await refreshContent(ctx, new AbortController().signal);
    const wallMs = Date.now() - started;
    return {
      properties: r.properties,
      requests: r.requests,
      acceptedStandard: sim.stats.accepted.standard ?? 0,
      rejected429: sim.stats.rejected429,
      wallMs,
      theoreticalMs: minTimeFor(opts.limits.standard, r.requests),
      changedRows: r.changedRows,
      quarantined: r.quarantined,
      ok: true,
    };
  } finally {
    await client.close();
    await db.db.schema
      .dropSchema(schema)
      .ifExists()
      .cascade()
      .execute()
      .catch(() => undefined);
    await db.close();
    await sim.close();
  }
}
