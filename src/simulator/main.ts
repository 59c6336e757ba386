/**
 * Stand-alone simulator process:
 *   node dist/simulator/main.js [--host 127.0.0.1] [--port 8080] [--properties 3] [--bookings 500] [--seed 1]
 *                               [--content-only-properties 0]
 *                               [--churn-ms 1000 --churn-per-tick 5 --churn-new-per-tick 1]
 *                               [--webhook-url http://127.0.0.1:9090/webhooks [--webhook-api-key KEY]]
 * Prints the URL and the credentials, runs until SIGINT or SIGTERM. With --webhook-url, the
 * PMS changes (of the churn) are delivered there as the provider's webhooks.
 */
import { parseArgs } from 'node:util';
import { startSimulator } from './index.js';

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
    },
    strict: true,
  });
  const propertyCount = int('properties', values.properties, 2);
  const bookingCount = int('bookings', values.bookings, 200);
  const clientId = 'sim-client';
  const clientSecret = 'sim-secret';
  const sim = await startSimulator({
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
  process.stdout.write(
    `${JSON.stringify({ url: sim.url, clientId, clientSecret, propertyIds: sim.propertyIds(), bookingsPerProperty: bookingCount })}\n`,
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

main().catch((err: unknown) => {
  process.stderr.write(`simulator failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
