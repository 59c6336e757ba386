/** What the two listeners expose and to whom: refused at start when it would be too much, said once when it starts. */
import { ConfigError, isLoopbackHost, type Config } from '../config/config.js';

/**
 * Receiving webhooks without authentication on an address others can reach would let anyone
 * there write events: refused unless the operator says it is meant.
 */
export function checkWebhookExposure(config: Config): void {
  const w = config.webhooks;
  if (!w.enabled || w.auth !== 'none' || w.allowUnauthenticated || isLoopbackHost(w.host)) return;
  throw new ConfigError(
    `webhooks.auth (STAYSYNC_WEBHOOK_AUTH) is none while the webhook receiver would listen on ${w.host}:${w.port}, an address other machines can reach: ` +
      'anyone there could post events. Set webhooks.auth to apiKey or basic (as configured in the extranet), listen on 127.0.0.1 behind a proxy that authenticates, ' +
      'or set webhooks.allowUnauthenticated (STAYSYNC_WEBHOOK_ALLOW_UNAUTHENTICATED) to true if this is meant',
  );
}

/** What the ops endpoint exposes and to whom, for the start-up line. */
export function opsExposure(host: string): string {
  const who = isLoopbackHost(host) ? 'to processes of this machine only' : 'to anyone who can reach this address (keep it inside the cluster)';
  return `/healthz, /readyz and /metrics, read-only and without authentication, ${who}`;
}

/** What the webhook receiver accepts and from whom, for the start-up line. */
export function webhookExposure(w: Config['webhooks']): string {
  const how =
    w.auth === 'apiKey'
      ? 'with the API-KEY header (webhooks.auth apiKey)'
      : w.auth === 'basic'
        ? 'with HTTP Basic (webhooks.auth basic)'
        : 'WITHOUT authentication';
  const who = isLoopbackHost(w.host)
    ? 'from processes of this machine only'
    : w.auth === 'none'
      ? 'from anyone who can reach this address (webhooks.allowUnauthenticated)'
      : 'from whoever holds the credentials';
  return `POST of change events ${how}, ${who}; bodies up to ${w.maxBodyBytes} bytes`;
}
