/**
 * Webhook delivery as the provider does it: events are POSTed as a JSON array (a batch, oldest
 * first), one batch at a time; any 2xx acknowledges the whole batch; anything else (or a
 * network error) sends the same batch again after a gap that doubles from a base up to a cap,
 * and the next batch waits. The gap is reset by a 2xx and by a new configuration, which also
 * makes the next attempt immediate. Deliveries are at least once: a batch may arrive twice,
 * and with `duplicateRate` an acknowledged event is sometimes sent again in a later batch.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mix, mulberry32 } from './random.js';

export type WebhookAuth = { kind: 'none' } | { kind: 'apiKey'; key: string } | { kind: 'basic'; user: string; password: string };

export interface WebhookConfig {
  /** The receiver (http or https). */
  url: string;
  /** Default none. `apiKey` sends `API-KEY: <key>`; `basic` sends `Authorization: Basic ...`. */
  auth?: WebhookAuth;
  /** Events per batch at most; default 1000. */
  maxBatch?: number;
  /** First gap after a failed attempt; doubles with each further failure. Default 500. */
  retryBaseMs?: number;
  /** Cap of the gap; default 30,000. */
  retryMaxMs?: number;
  /** Probability that a batch also carries one already acknowledged event (first in it). Default 0. */
  duplicateRate?: number;
  /** An attempt without an answer within this time fails; default 10,000. */
  timeoutMs?: number;
  /**
   * The integration-storage events also carry `propertyId`. Default false: the documents
   * promise only the id to fetch (`bookingId`, `inventoryBlockId`), and no property.
   */
  storageEventsNameProperty?: boolean;
}

export interface WebhookEvent {
  /** A UUID. */
  eventId: string;
  /** `<module>:<event>`, e.g. `webpms:check_in`. */
  eventType: string;
  /** UTC ISO-8601 with `Z` and 3 or 7 fraction digits. */
  creationTime: string;
  payload: Record<string, unknown>;
}

/** One delivery attempt: the HTTP status it got, or the error that ended it. */
export interface WebhookDelivery {
  /** Wall-clock ms (Date.now) when the attempt started; retry gaps are real time. */
  at: number;
  eventIds: string[];
  status?: number;
  error?: string;
}

export interface SimulatorWebhooks {
  /**
   * Starts (or changes) delivery to a receiver. While configured, every change on the PMS
   * side emits events. Reconfiguring resets the retry gap and attempts at once.
   */
  configure(config: WebhookConfig): void;
  /** Stops delivery and emission. Undelivered events stay queued for a later configure(). */
  stop(): void;
  /** Queues an event of any type (also while stopped) and returns it. */
  emit(eventType: string, payload: Record<string, unknown>): WebhookEvent;
  /** Every delivery attempt, oldest first (the last 10,000). */
  readonly log: readonly WebhookDelivery[];
  /** Copies of every event emitted, oldest first (the last 100,000). */
  events(): WebhookEvent[];
  /** Events emitted and not yet acknowledged. */
  pending(): number;
  /** Resolves once no event is waiting for acknowledgement. */
  idle(): Promise<void>;
}

const LOG_MAX = 10_000;
const EVENTS_MAX = 100_000;
const ACKED_KEPT = 1_000;

interface Settings {
  url: URL;
  headers: Record<string, string>;
  maxBatch: number;
  retryBaseMs: number;
  retryMaxMs: number;
  duplicateRate: number;
  timeoutMs: number;
  storageEventsNameProperty: boolean;
}

function positiveInt(name: string, value: number | undefined, fallback: number): number {
  const v = value ?? fallback;
  if (!Number.isInteger(v) || v < 1) throw new Error(`webhooks.configure: ${name} must be a positive integer`);
  return v;
}

export class WebhookDispatcher implements SimulatorWebhooks {
  readonly log: WebhookDelivery[] = [];
  private settings: Settings | undefined;
  /** Emitted, not yet acknowledged, oldest first. */
  private readonly queue: WebhookEvent[] = [];
  /** The batch being delivered (kept identical across retries), and how many of its events are new. */
  private batch: { events: WebhookEvent[]; fresh: number } | undefined;
  private readonly acked: WebhookEvent[] = [];
  private readonly all: WebhookEvent[] = [];
  private failures = 0;
  /** Set by configure(): the next attempt goes at once, even if the one in flight fails. */
  private urgent = false;
  /** Bumped by stop and close: a delivery loop of an older generation stops. */
  private generation = 0;
  private runningGeneration = -1;
  private cancelWait: (() => void) | undefined;
  private cancelRequest: (() => void) | undefined;
  private idleWaiters: (() => void)[] = [];
  private closed = false;
  private lastMs = -1;
  private sameMs = 0;
  private readonly rng: () => number;

  constructor(
    private readonly now: () => number,
    seed: number,
  ) {
    this.rng = mulberry32(mix(seed, 0x3eb400c));
  }

  /** True while events of PMS changes are to be emitted. */
  active(): boolean {
    return this.settings !== undefined && !this.closed;
  }

  /** True when the integration-storage events also name their property (WebhookConfig). */
  storageEventsNameProperty(): boolean {
    return this.settings?.storageEventsNameProperty ?? false;
  }

  configure(config: WebhookConfig): void {
    if (this.closed) throw new Error('webhooks.configure: the simulator is closed');
    const url = new URL(config.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('webhooks.configure: url must be http or https');
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const auth = config.auth ?? { kind: 'none' };
    if (auth.kind === 'apiKey') headers['API-KEY'] = auth.key;
    else if (auth.kind === 'basic') headers['authorization'] = `Basic ${Buffer.from(`${auth.user}:${auth.password}`, 'utf8').toString('base64')}`;
    const duplicateRate = config.duplicateRate ?? 0;
    if (!(duplicateRate >= 0 && duplicateRate <= 1)) throw new Error('webhooks.configure: duplicateRate must be within [0, 1]');
    this.settings = {
      url,
      headers,
      maxBatch: positiveInt('maxBatch', config.maxBatch, 1000),
      retryBaseMs: positiveInt('retryBaseMs', config.retryBaseMs, 500),
      retryMaxMs: positiveInt('retryMaxMs', config.retryMaxMs, 30_000),
      duplicateRate,
      timeoutMs: positiveInt('timeoutMs', config.timeoutMs, 10_000),
      storageEventsNameProperty: config.storageEventsNameProperty ?? false,
    };
    // An attempt in flight finishes (its answer counts); the next one goes at once, with these settings.
    this.failures = 0;
    this.urgent = true;
    this.cancelWait?.();
    this.kick();
  }

  stop(): void {
    this.settings = undefined;
    this.interrupt();
  }

  /** Stops for good (simulator close): no attempt is made after it. */
  close(): void {
    this.closed = true;
    this.stop();
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  emit(eventType: string, payload: Record<string, unknown>): WebhookEvent {
    const event: WebhookEvent = { eventId: randomUUID(), eventType, creationTime: this.creationTime(), payload: { ...payload } };
    this.all.push(event);
    if (this.all.length > EVENTS_MAX) this.all.splice(0, this.all.length - EVENTS_MAX);
    this.queue.push(event);
    this.kick();
    return structuredClone(event);
  }

  events(): WebhookEvent[] {
    return structuredClone(this.all);
  }

  pending(): number {
    return this.queue.length;
  }

  idle(): Promise<void> {
    if (this.queue.length === 0 || this.closed) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** UTC ISO time of the simulator clock; events within one millisecond get 7 fraction digits to stay ordered. */
  private creationTime(): string {
    const ms = this.now();
    if (ms === this.lastMs) this.sameMs = Math.min(9_999, this.sameMs + 1);
    else {
      this.lastMs = ms;
      this.sameMs = 0;
    }
    const iso = new Date(ms).toISOString();
    return this.sameMs === 0 ? iso : `${iso.slice(0, 23)}${String(this.sameMs).padStart(4, '0')}Z`;
  }

  /** Ends the current loop's wait or request at once (the batch stays queued); that loop then sees a new generation and stops. */
  private interrupt(): void {
    this.generation++;
    this.cancelWait?.();
    this.cancelRequest?.();
  }

  private kick(): void {
    if (!this.settings || this.closed || this.runningGeneration === this.generation) return;
    if (this.queue.length === 0) return;
    const generation = this.generation;
    this.runningGeneration = generation;
    // On the next turn, so that the events of one synchronous burst (one mutate()) share a batch.
    setImmediate(() => {
      void this.run(generation).finally(() => {
        if (this.runningGeneration === generation) this.runningGeneration = -1;
        // Events emitted while the loop was ending.
        if (this.generation === generation) this.kick();
      });
    });
  }

  private nextBatch(s: Settings): { events: WebhookEvent[]; fresh: number } {
    const extra: WebhookEvent[] = [];
    if (s.duplicateRate > 0 && s.maxBatch > 1 && this.acked.length > 0 && this.rng() < s.duplicateRate) {
      extra.push(this.acked[Math.floor(this.rng() * this.acked.length)]!);
    }
    const fresh = this.queue.slice(0, s.maxBatch - extra.length);
    return { events: [...extra, ...fresh], fresh: fresh.length };
  }

  private async run(generation: number): Promise<void> {
    while (!this.closed && this.generation === generation) {
      const s = this.settings;
      if (!s) return;
      if (!this.batch) {
        if (this.queue.length === 0) return;
        this.batch = this.nextBatch(s);
      }
      const batch = this.batch;
      this.urgent = false;
      const ok = await this.post(s, batch.events);
      if (this.generation !== generation) return;
      if (ok) {
        const done = this.queue.splice(0, batch.fresh);
        this.acked.push(...done);
        if (this.acked.length > ACKED_KEPT) this.acked.splice(0, this.acked.length - ACKED_KEPT);
        this.batch = undefined;
        this.failures = 0;
        if (this.queue.length === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
        continue;
      }
      this.failures++;
      if (this.urgent) continue;
      const gap = Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** Math.min(30, this.failures - 1));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, gap);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.cancelWait = done;
      });
      this.cancelWait = undefined;
    }
  }

  /** One attempt; true when the receiver answered 2xx. */
  private post(s: Settings, events: WebhookEvent[]): Promise<boolean> {
    const entry: WebhookDelivery = { at: Date.now(), eventIds: events.map((e) => e.eventId) };
    this.log.push(entry);
    if (this.log.length > LOG_MAX) this.log.splice(0, this.log.length - LOG_MAX);
    const body = Buffer.from(JSON.stringify(events), 'utf8');
    const send = s.url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<boolean>((resolve) => {
      let settled = false;
      const finish = (ok: boolean, status?: number, error?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.cancelRequest = undefined;
        if (status !== undefined) entry.status = status;
        if (error !== undefined) entry.error = error;
        resolve(ok);
      };
      const req = send(s.url, { method: 'POST', agent: false, headers: { ...s.headers, 'content-length': String(body.length) } }, (res: IncomingMessage) => {
        res.resume();
        const status = res.statusCode ?? 0;
        res.on('end', () => finish(status >= 200 && status < 300, status));
        res.on('error', (err) => finish(false, undefined, err.message));
      });
      const timer = setTimeout(() => {
        req.destroy(new Error(`no answer within ${s.timeoutMs} ms`));
      }, s.timeoutMs);
      this.cancelRequest = () => {
        req.destroy(new Error('delivery interrupted'));
        finish(false, undefined, 'delivery interrupted');
      };
      req.on('error', (err) => finish(false, undefined, err.message));
      req.end(body);
    });
  }
}
