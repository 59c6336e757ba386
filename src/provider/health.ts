/**
 * How the provider is answering, per host: last success, failures by cause, retries, and
 * outages. Every attempt of the client and the token manager reports here. An outage starts
 * when failures have gone on for OUTAGE_AFTER_MS without a success in between (a lone 503
 * among successes is not an outage), and ends with the next success; each is logged once,
 * with the host and the last error, instead of one line per retry.
 */
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';

/** Why an attempt got no usable answer. */
export const failureCauses = [
  'http_5xx',
  'throttled',
  'timeout',
  'connection_refused',
  'connection_reset',
  'dns',
  'tls',
  'network',
  'invalid_body',
  'provider_errors',
] as const;
export type FailureCause = (typeof failureCauses)[number];

/**
 * Failures that make an outage: not a 429 (the provider pacing us, not being away), nor a 2xx
 * whose `errors` is not empty (the provider answers; it could not do this request).
 */
const outageCauses: ReadonlySet<FailureCause> = new Set(failureCauses.filter((c) => c !== 'throttled' && c !== 'provider_errors'));

const OUTAGE_AFTER_MS = 5_000;

/** One HTTP exchange: its rate-limit scope, its HTTP status or the failure cause, and how long it took. */
export interface Exchange {
  scope: string;
  outcome: string;
  seconds: number;
}

export interface ProviderOutage {
  host: string;
  since: number;
  lastError: string;
  /** The setting that names this host, for the operator's sentence. */
  setting: string;
}

interface HostState {
  lastSuccessAt: number | undefined;
  /** First failure since the last success. */
  failingSince: number | undefined;
  lastError: string | undefined;
  outage: boolean;
}

export class ProviderHealth {
  readonly failures = Object.fromEntries(failureCauses.map((c) => [c, 0])) as Record<FailureCause, number>;
  retries = 0;
  private readonly hosts = new Map<string, HostState>();
  private readonly listeners = new Set<(host: string, outage: ProviderOutage | undefined) => void>();
  private readonly exchangeListeners = new Set<(e: Exchange) => void>();

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    /** host → the setting it comes from (STAYSYNC_PROVIDER_URL, STAYSYNC_REFERENCE_DATA_URL). */
    private readonly settingOf: (host: string) => string,
  ) {}

  success(host: string): void {
    const h = this.host(host);
    h.lastSuccessAt = this.clock.now();
    if (h.outage) {
      const seconds = ((h.lastSuccessAt - (h.failingSince ?? h.lastSuccessAt)) / 1000).toFixed(1);
      this.logger.info({ host, outageSeconds: Number(seconds) }, `provider ${host} answers again after ${seconds} s; resuming`);
      h.outage = false;
      this.emit(host, undefined);
    }
    h.failingSince = undefined;
    h.lastError = undefined;
  }

  failure(host: string, cause: FailureCause, description: string): void {
    this.failures[cause] += 1;
    if (!outageCauses.has(cause)) return;
    const h = this.host(host);
    const now = this.clock.now();
    h.failingSince ??= now;
    h.lastError = description;
    if (!h.outage && now - h.failingSince >= OUTAGE_AFTER_MS) {
      h.outage = true;
      const outage = this.outageOf(host, h)!;
      this.logger.warn(
        { host, since: new Date(outage.since).toISOString(), err: description },
        `provider ${host} unreachable since ${new Date(outage.since).toISOString()} (last error: ${description}); retrying with backoff. Check ${outage.setting} and the network`,
      );
      this.emit(host, outage);
    }
  }

  retried(): void {
    this.retries += 1;
  }

  /** One HTTP exchange ended (answered or not): for latency metrics. */
  exchanged(e: Exchange): void {
    for (const l of this.exchangeListeners) l(e);
  }

  onExchange(listener: (e: Exchange) => void): () => void {
    this.exchangeListeners.add(listener);
    return () => this.exchangeListeners.delete(listener);
  }

  /** Epoch ms of the last success on any host (undefined before the first). */
  lastSuccessAt(host?: string): number | undefined {
    if (host !== undefined) return this.hosts.get(host)?.lastSuccessAt;
    let last: number | undefined;
    for (const h of this.hosts.values()) if (h.lastSuccessAt !== undefined && (last === undefined || h.lastSuccessAt > last)) last = h.lastSuccessAt;
    return last;
  }

  /** Hosts and their last success (metrics). */
  hostsSeen(): { host: string; lastSuccessAt: number | undefined; outage: boolean }[] {
    return [...this.hosts].map(([host, h]) => ({ host, lastSuccessAt: h.lastSuccessAt, outage: h.outage }));
  }

  /** Current outages. */
  outages(): ProviderOutage[] {
    return [...this.hosts].flatMap(([host, h]) => (h.outage ? [this.outageOf(host, h)!] : []));
  }

  /**
   * The host that has given no usable answer for the longest time, with how long: what
   * `sync --once` compares with its give-up time. Undefined when every host answers.
   */
  longestFailing(): ProviderOutage | undefined {
    let worst: ProviderOutage | undefined;
    for (const [host, h] of this.hosts) {
      const o = this.outageOf(host, h);
      if (o && (!worst || o.since < worst.since)) worst = o;
    }
    return worst;
  }

  /** Called on every outage start (with it) and end (with undefined). */
  onOutageChange(listener: (host: string, outage: ProviderOutage | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private outageOf(host: string, h: HostState): ProviderOutage | undefined {
    if (h.failingSince === undefined) return undefined;
    return { host, since: h.failingSince, lastError: h.lastError ?? 'unknown', setting: this.settingOf(host) };
  }

  private host(host: string): HostState {
    let h = this.hosts.get(host);
    if (!h) {
      h = { lastSuccessAt: undefined, failingSince: undefined, lastError: undefined, outage: false };
      this.hosts.set(host, h);
    }
    return h;
  }

  private emit(host: string, outage: ProviderOutage | undefined): void {
    for (const l of this.listeners) {
      try {
        l(host, outage);
      } catch (err) {
        this.logger.error({ err: (err as Error).message }, 'provider outage listener failed');
      }
    }
  }
}

/** The cause of a failed exchange without a response, from the error node or undici gave. */
export function causeOfNetworkError(err: unknown): FailureCause {
  const raw = (err as { code?: unknown } | null)?.code;
  const code = typeof raw === 'string' ? raw : '';
  const message = err instanceof Error ? err.message : String(err);
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'dns';
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') return 'connection_reset';
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'timeout';
  if (
    code === 'EPROTO' ||
    code.startsWith('ERR_SSL') ||
    code.startsWith('ERR_TLS') ||
    /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code) ||
    /\b(ssl|tls)\b/i.test(message)
  ) {
    return 'tls';
  }
  return 'network';
}
