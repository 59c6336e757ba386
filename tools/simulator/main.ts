/**
 * Stand-alone simulator process (`npm run simulator -- <options>`):
 *   node dist-tools/tools/simulator/main.js [--host 127.0.0.1] [--port 8080] [--properties 3] [--bookings 500] [--seed 1]
 *                               [--scale 60] [--daemon-config data/simulator/staysync.json]
 *                               [--content-only-properties 0]
 *                               [--churn-ms 1000 --churn-per-tick 5 --churn-new-per-tick 1]
 *                               [--webhook-url http://127.0.0.1:9090/webhooks [--webhook-api-key KEY]]
 * Prints the URL, the credentials and the command that runs the daemon against it; runs until
 * SIGINT or SIGTERM. With --webhook-url, the PMS changes (of the churn) are delivered there as
 * the provider's webhooks.
 *
 * --scale N divides every window of the production rate limits by N (60: an hour lasts a
 * minute), as the demo and the bench do, so that a full sync takes seconds. The daemon must pace
 * itself by the same windows: with the production ones it would wait an hour where the
 * simulator waits a minute. Rate limits are given to the daemon only in a config file, so the
 * simulator writes one (--daemon-config) and names it in the command it prints.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { RateLimitScope, RateWindow } from '../../src/config/config.js';
import { defaultRateLimits, startSimulator } from './index.js';

function int(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value)) {
    process.stderr.write(`--${name}: expected a whole number, got ${JSON.stringify(value)}\n`);
    process.exit(2);
  }
  return Number(value);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      properties: { type: 'string' },
      bookings: { type: 'string' },
      seed: { type: 'string' },
      'content-only-properties': { type: 'string' },
      'churn-ms': { type: 'string' },
      'churn-per-tick': { type: 'string' },
      'churn-new-per-tick': { type: 'string' },
      'webhook-url': { type: 'string' },
      'webhook-api-key': { type: 'string' },
      scale: { type: 'string' },
      'daemon-config': { type: 'string' },
    },
    strict: true,
  });
  const propertyCount = int('properties', values.properties, 2);
  const bookingCount = int('bookings', values.bookings, 200);
  const clientId = 'sim-client';
  const clientSecret = 'sim-secret';
  const scale = int('scale', values.scale, 1);
  if (scale < 1) {
    process.stderr.write('--scale: expected 1 or more\n');
    process.exit(2);
  }
  const rateLimits = Object.fromEntries(
    Object.entries(defaultRateLimits).map(([scope, windows]) => [
      scope,
      windows.map((w) => ({ limit: w.limit, windowMs: Math.max(1, Math.round(w.windowMs / scale)) })),
    ]),
  ) as Record<RateLimitScope, RateWindow[]>;
  const sim = await startSimulator({
    rateLimits,
    host: values.host ?? '127.0.0.1',
    port: int('port', values.port, 8080),
    seed: int('seed', values.seed, 1),
    clients: [{ clientId, clientSecret }],
    properties: Array.from({ length: propertyCount }, (_, i) => ({ id: String(500_100 + i * 100), bookingCount })),
    contentOnlyProperties: int('content-only-properties', values['content-only-properties'], 0),
  });
  const webhookUrl = values['webhook-url'];
  if (webhookUrl !== undefined) {
    const key = values['webhook-api-key'];
    sim.webhooks.configure({ url: webhookUrl, auth: key === undefined ? { kind: 'none' } : { kind: 'apiKey', key } });
  }
  const churnMs = int('churn-ms', values['churn-ms'], 0);
  if (churnMs > 0) {
    sim.startChurn({
      intervalMs: churnMs,
      perTick: int('churn-per-tick', values['churn-per-tick'], 1),
      newPerTick: int('churn-new-per-tick', values['churn-new-per-tick'], 0),
    });
  }
  const configPath = resolve(values['daemon-config'] ?? 'data/simulator/staysync.json');
  mkdirSync(dirname(configPath), { recursive: true });
  // Scaled windows would let adaptive polling ask many times a second; once a second is fresh enough to watch.
  const sync = scale > 1 ? { pollIntervalMs: { min: 1000, max: 60_000 } } : {};
  writeFileSync(configPath, `${JSON.stringify({ rateLimits, sync }, null, 2)}\n`);
  process.stdout.write(
    `${JSON.stringify({ url: sim.url, clientId, clientSecret, propertyIds: sim.propertyIds(), bookingsPerProperty: bookingCount, scale, daemonConfig: configPath })}\n`,
  );
  const time = scale === 1 ? 'the production rate limits' : `rate limits scaled 1/${scale} (an hour lasts ${formatDuration(3_600_000 / scale)})`;
  process.stdout.write(
    [
      '',
      `simulator of the provider at ${sim.url}: ${propertyCount} properties of ${bookingCount} bookings, ${time}`,
      `rate limits for the daemon written to ${configPath}`,
      '',
      'Run the daemon against it from the repository (`npm run simulator` has built dist/); without',
      'DATABASE_URL it keeps the mirror in its local database under ./data, with it in the PostgreSQL you name:',
      '',
      `  STAYSYNC_CONFIG=${configPath} \\`,
      `  STAYSYNC_PROVIDER_URL=${sim.url} STAYSYNC_REFERENCE_DATA_URL=${sim.url} \\`,
      `  STAYSYNC_CLIENT_ID=${clientId} STAYSYNC_CLIENT_SECRET=${clientSecret} STAYSYNC_PROPERTY_IDS=${sim.propertyIds().join(',')} \\`,
      '  npx staysync sync --once      # or: run (the daemon; /metrics on :9464)',
      '',
    ].join('\n') + '\n',
  );
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return ms === 60_000 ? 'a minute' : `${ms / 60_000} minutes`;
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms)} ms`;
}

main().catch((err: unknown) => {
  process.stderr.write(`simulator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
