/**
 * How many API connections one IP address keeps authenticated. The token endpoint's limit
 * (3/s, 15/min, 300/h) is per IP address, not per connection, and every connection renews its
 * token shortly before it expires: with 15-minute tokens renewed a minute early, each
 * connection asks about 4.3 times an hour, so 300 an hour carry about 70 connections.
 */
import type { Config } from '../config/config.js';

/** The provider's token lifetime (its `expires_in`, 900 s); tokens that live longer raise the capacity. */
export const TOKEN_LIFETIME_MS = 15 * 60_000;

export interface TokenCapacity {
  /** Connections whose tokens the budget renews in time. */
  connections: number;
  /** The binding window, for messages: "300 token requests per 60 min, a token every 14 min per connection". */
  explanation: string;
}

export function tokenCapacity(config: Pick<Config, 'rateLimits' | 'provider'>, lifetimeMs = TOKEN_LIFETIME_MS): TokenCapacity {
  const renewBefore = Math.min(config.provider.tokenRenewBeforeExpiryMs, lifetimeMs / 2);
  const everyMs = lifetimeMs - renewBefore;
  let best: TokenCapacity | undefined;
  for (const w of config.rateLimits.token) {
    // In steady state (start-up staggered by the budget), a connection asks window / every times per window.
    const connections = Math.floor((w.limit * everyMs) / w.windowMs);
    if (!best || connections < best.connections) {
      best = {
        connections,
        explanation: `${w.limit} token requests per ${formatMs(w.windowMs)} per IP, a token every ${formatMs(everyMs)} per connection: at most ${connections} connections`,
      };
    }
  }
  return best ?? { connections: Number.POSITIVE_INFINITY, explanation: 'no token limit configured' };
}

function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 1000)} s`;
}
