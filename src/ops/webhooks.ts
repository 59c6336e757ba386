/**
 * The receiver of the provider's change events, on a listener of its own (webhooks.host,
 * webhooks.port, path webhooks.path).
 *
 * Webhooks are configured per API connection (in one property's settings), so each connection
 * may get a delivery URL of its own, webhooks.path/<connection>: its events are stored with the
 * connection's name, which is how an integration-storage event (it names no property) finds
 * the properties it may be about. webhooks.path alone stays valid: it names the connection when
 * only one is configured, none otherwise. A name that is not a connection's is refused with 404.
 *
 * The provider POSTs a JSON array (a batch) of up to 1,000 events and delivers the next batch
 * only after a 2xx; it redelivers a batch on any other answer, forever. So:
 * - authentication as the hotelier configured it (none, header API-KEY, or HTTP Basic); a
 *   failed check answers 401, reads no body and stores nothing;
 * - the body is read up to webhooks.maxBodyBytes and not a byte further: a longer one (or one
 *   that announces it) answers 413 and the connection is closed;
 * - a body that is not a batch answers 400 with the reason and stores nothing;
 * - events are checked one by one: those that are not events, or that the database refuses
 *   (a NUL in a string, a number beyond numeric), go to the quarantine with the reason and the
 *   others are stored; the answer is then 400 naming them, so that the provider stops
 *   redelivering a batch that can never be stored (a 503 would hold every later batch behind it);
 * - the events are committed to webhook_events (one row per event id: a redelivered event is
 *   stored once) before the 2xx; when the database is away the answer is 503, and the provider
 *   delivers the batch again.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { CONNECTION_NAME, type Config } from '../config/config.js';
import type { Logger } from '../util/log.js';
import { webhookEventSchema } from '../provider/schemas/pms.js';
import { describeIssues } from '../provider/schemas/bookings.js';
import { eventTarget } from '../sync/streams/events.js';
import { parseJsonLossless } from '../provider/json.js';
import { jsonSyntaxError } from '../util/json-syntax.js';
import type { NewEvent, UnstorableEvent } from '../store/repositories/webhook-events.js';
import { HttpListener, refuseAndClose, reply } from './http.js';

export interface StoreResult {
  /** Events new to webhook_events. */
  stored: number;
  /** Events the database refused because of their content (quarantined with the reason). */
  refused: UnstorableEvent[];
}

export interface WebhookReceiverOptions {
  config: Config['webhooks'];
  /** The names of the connections configured now (a connections directory may change them). */
  connections(): readonly string[];
  /**
   * Commits the events (any replica may: an event id is stored once) and quarantines the
   * `invalid` ones; events the database refuses for their content are quarantined too and
   * returned. Rejects only when the database cannot be reached.
   */
  store(events: (NewEvent & { index: number })[], invalid: UnstorableEvent[]): Promise<StoreResult>;
  /** After a commit: the events stream looks at once. */
  onStored(batch: { stored: number; duplicates: number; refused: number }): void;
  logger: Logger;
}

/** The provider's batches hold at most this many events. */
const MAX_EVENTS = 1000;
/** Time for a whole batch to arrive; a sender slower than this is cut off with 408. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Equal strings, in a time that depends on neither where they differ nor their lengths:
 * both are hashed first, and digests of equal length compared.
 */
function same(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b));
}

/** True when the request carries the credentials the hotelier configured. */
export function authorized(config: Config['webhooks'], headers: IncomingMessage['headers']): boolean {
  if (config.auth === 'none') return true;
  if (config.auth === 'apiKey') {
    const key = headers['api-key'];
    return typeof key === 'string' && config.apiKey !== undefined && same(key, config.apiKey);
  }
  const m = /^Basic\s+([A-Za-z0-9+/=]{1,1024})$/i.exec(headers.authorization ?? '');
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  // Both compared, whatever the first says: the time tells nothing of which one differed.
  const user = same(decoded.slice(0, Math.max(colon, 0)), config.basicUser ?? '');
  const password = same(decoded.slice(colon + 1), config.basicPassword ?? '');
  return colon > 0 && user && password;
}

/** Answers `body` as JSON without reading the rest of the request, then closes the connection (http.ts). */
function refuseAndCloseJson(req: IncomingMessage, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  refuseAndClose(req, res, status, JSON.stringify(body), { 'content-type': 'application/json; charset=utf-8', ...headers });
}

/** The body as text, or TOO_LARGE as soon as more than `max` bytes have come. */
/** What readBody answers for a body over its limit. */
const TOO_LARGE = Symbol('too large');

function readBody(req: IncomingMessage, max: number): Promise<string | typeof TOO_LARGE> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > max) {
        req.off('data', onData);
        req.off('end', onEnd);
        req.pause();
        resolve(TOO_LARGE);
        return;
      }
      chunks.push(c);
    };
    const onEnd = () => resolve(Buffer.concat(chunks, size).toString('utf8'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', reject);
  });
}

/**
 * What a request path names: `{ connection: null }` for webhooks.path itself, the connection of
 * webhooks.path/<connection>, `badName` when what follows is not shaped as a connection name,
 * or undefined for any other path.
 */
export function deliveryPath(path: string, base: string): { connection: string | null } | 'badName' | undefined {
  if (path === base) return { connection: null };
  const prefix = base.endsWith('/') ? base : `${base}/`;
  if (!path.startsWith(prefix)) return undefined;
  const name = path.slice(prefix.length);
  return CONNECTION_NAME.test(name) ? { connection: name } : 'badName';
}

/** Handles one POST to the webhook path; `named` is the connection its path names (deliveryPath), or null. */
export async function receiveWebhook(req: IncomingMessage, res: ServerResponse, opts: WebhookReceiverOptions, named: string | null = null): Promise<void> {
  const answer = (status: number, body: unknown) => reply(res, status, JSON.stringify(body), 'application/json; charset=utf-8');
  const log = opts.logger;
  const max = opts.config.maxBodyBytes;
  if (!authorized(opts.config, req.headers)) {
    log.warn({ auth: opts.config.auth }, 'webhook batch refused: the credentials do not match webhooks.auth (stored nothing)');
    return refuseAndCloseJson(
      req,
      res,
      401,
      { error: 'unauthorized' },
      { 'www-authenticate': opts.config.auth === 'basic' ? 'Basic realm="staysync"' : 'API-KEY' },
    );
  }
  // After the credentials: who may not post learns nothing of which names are connections.
  const configured = opts.connections();
  if (named !== null && !configured.includes(named)) {
    log.warn({ connection: named }, 'webhook batch refused: the delivery URL names a connection that is not configured (404, read nothing)');
    return refuseAndCloseJson(req, res, 404, {
      error: `no API connection named ${named} is configured here: the delivery URL of a connection is ${opts.config.path}/<its name>`,
    });
  }
  // webhooks.path alone names the connection when there is only one.
  const connection = named ?? (configured.length === 1 ? configured[0]! : null);
  const tooLarge = { error: `the body is larger than ${max} bytes (webhooks.maxBodyBytes); a batch of 1,000 events takes a fraction of it` };
  const announced = Number(req.headers['content-length']);
  if (Number.isFinite(announced) && announced > max) {
    log.warn({ bytes: announced, max }, 'webhook batch refused: its announced length is over webhooks.maxBodyBytes (413, read nothing)');
    return refuseAndCloseJson(req, res, 413, tooLarge);
  }
  const text = await readBody(req, max);
  if (text === TOO_LARGE) {
    log.warn({ max }, 'webhook batch refused: the body grew over webhooks.maxBodyBytes (413, stopped reading)');
    return refuseAndCloseJson(req, res, 413, tooLarge);
  }
  let json: unknown;
  try {
    json = parseJsonLossless(text);
  } catch (err) {
    const where = jsonSyntaxError(text);
    const reason = where ? `line ${where.line}, column ${where.column}: ${where.problem}` : (err as Error).message;
    log.warn({ bytes: text.length, reason }, 'webhook batch refused: the body is not JSON');
    return answer(400, { error: `the body is not JSON (${reason})` });
  }
  if (!Array.isArray(json)) {
    log.warn('webhook batch refused: not a JSON array');
    return answer(400, { error: 'expected a JSON array of events {eventId, eventType, creationTime, payload}' });
  }
  if (json.length > MAX_EVENTS) {
    log.warn({ events: json.length }, 'webhook batch refused: more than 1,000 events');
    return answer(400, { error: `expected at most ${MAX_EVENTS} events in a batch, got ${json.length}` });
  }

  const events: (NewEvent & { index: number })[] = [];
  const invalid: UnstorableEvent[] = [];
  const seen = new Set<string>();
  json.forEach((item: unknown, index) => {
    const e = webhookEventSchema.safeParse(item);
    if (!e.success) {
      const id = (item as { eventId?: unknown } | null)?.eventId;
      invalid.push({ index, eventId: typeof id === 'string' ? id : null, reason: describeIssues(e.error, `events[${index}]`), body: JSON.stringify(item) });
      return;
    }
    // One batch may repeat an event: it is stored once.
    if (seen.has(e.data.eventId)) return;
    seen.add(e.data.eventId);
    const t = eventTarget(e.data.eventType, e.data.payload);
    events.push({
      index,
      eventId: e.data.eventId,
      eventType: e.data.eventType,
      creationTime: e.data.creationTime,
      payload: e.data.payload,
      propertyId: t.propertyId,
      entityKey: t.key,
      connection,
    });
  });

  let result: StoreResult;
  try {
    result = await opts.store(events, invalid);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'webhook batch not stored: the database is away; answered 503, the provider delivers it again');
    return answer(503, { error: 'the events could not be stored now; deliver the batch again' });
  }
  const refused = [...invalid, ...result.refused].sort((a, b) => a.index - b.index);
  const counts = { stored: result.stored, duplicates: json.length - refused.length - result.stored, refused: refused.length };
  opts.onStored(counts);
  if (refused.length > 0) {
    log.warn(
      { ...counts, reasons: refused.slice(0, 5).map((r) => r.reason) },
      'webhook batch: events that cannot be stored were quarantined, the others stored; answered 400 so that the provider does not deliver it again',
    );
    return answer(400, {
      error: `${refused.length} of ${json.length} events cannot be stored (kept in staysync's quarantine); the others are stored: do not deliver this batch again`,
      ...counts,
      refusedEvents: refused.slice(0, 20).map((r) => ({ index: r.index, eventId: r.eventId, reason: r.reason })),
    });
  }
  log.debug(counts, 'webhook batch stored');
  return answer(200, { stored: counts.stored, duplicates: counts.duplicates });
}

/** The webhook receiver's listener: POST at webhooks.path or webhooks.path/<connection>, nothing else. */
export function webhookListener(opts: WebhookReceiverOptions): HttpListener {
  return new HttpListener(
    {
      what: 'the webhook receiver',
      hostSetting: 'webhooks.host (STAYSYNC_WEBHOOK_HOST)',
      portSetting: 'webhooks.port (STAYSYNC_WEBHOOK_PORT)',
      maxConnections: 32,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
    },
    (req, res) => {
      const delivery = deliveryPath((req.url ?? '/').split('?')[0]!, opts.config.path);
      if (delivery === undefined) return refuseAndCloseJson(req, res, 404, { error: 'not found' });
      if (delivery === 'badName')
        return refuseAndCloseJson(req, res, 404, {
          error: `not found: after ${opts.config.path}/ comes the name of an API connection (lower-case letters, digits, - or _; at most 63)`,
        });
      if (req.method !== 'POST') return refuseAndCloseJson(req, res, 405, { error: 'method not allowed: POST a batch of events' }, { allow: 'POST' });
      receiveWebhook(req, res, opts, delivery.connection).catch((err: unknown) => {
        opts.logger.error({ err: (err as Error).message }, 'webhook receiver failed');
        if (!res.headersSent)
          reply(res, 503, JSON.stringify({ error: 'the events could not be stored now; deliver the batch again' }), 'application/json; charset=utf-8');
      });
    },
  );
}
