/**
 * The receiver of the provider's change events, on the ops port at webhooks.path.
 *
 * The provider POSTs a JSON array (a batch) of up to 1,000 events and delivers the next batch
 * only after a 2xx; it redelivers a batch on any other answer. So:
 * - authentication as the hotelier configured it (none, header API-KEY, or HTTP Basic); a
 *   failed check answers 401 and stores nothing;
 * - a body that is not such an array answers 400 with the reason (never 500: it would be
 *   redelivered forever), and stores nothing;
 * - the events are committed to webhook_events (one row per event id: a redelivered event is
 *   stored once) before the 200; when they cannot be (database away, this process not the
 *   writer) the answer is 503, so the provider delivers the batch again.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { webhookBatchSchema } from '../provider/pms-schemas.js';
import { describeIssues } from '../provider/schemas.js';
import { eventTarget } from '../sync/events.js';
import { parseJsonLossless } from '../provider/json.js';

/** Larger than 1,000 events of any documented shape. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

export interface StoredBatch {
  stored: number;
  duplicates: number;
}

export interface WebhookReceiverOptions {
  config: Config['webhooks'];
  /** Commits the events (any replica may: an event id is stored once); returns how many were new. */
  store(events: { eventId: string; eventType: string; creationTime: string | null; payload: unknown; propertyId: string | null; entityKey: string | null }[]): Promise<number>;
  /** After a commit: the events stream looks at once. */
  onStored(batch: StoredBatch): void;
  logger: Logger;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** True when the request carries the credentials the hotelier configured. */
export function authorized(config: Config['webhooks'], headers: IncomingMessage['headers']): boolean {
  if (config.auth === 'none') return true;
  if (config.auth === 'apiKey') {
    const key = headers['api-key'];
    return typeof key === 'string' && config.apiKey !== undefined && same(key, config.apiKey);
  }
  const m = /^Basic\s+(\S+)$/i.exec(headers.authorization ?? '');
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon > 0 && same(decoded.slice(0, colon), config.basicUser ?? '') && same(decoded.slice(colon + 1), config.basicPassword ?? '');
}

function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Handles one POST to the webhook path. */
export async function receiveWebhook(req: IncomingMessage, res: ServerResponse, opts: WebhookReceiverOptions): Promise<void> {
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const log = opts.logger;
  if (!authorized(opts.config, req.headers)) {
    req.resume();
    log.warn({ auth: opts.config.auth }, 'webhook batch refused: the credentials do not match webhooks.auth (stored nothing)');
    res.setHeader('www-authenticate', opts.config.auth === 'basic' ? 'Basic realm="staysync"' : 'API-KEY');
    return reply(401, { error: 'unauthorized' });
  }
  const text = await readBody(req);
  if (text === undefined) return reply(413, { error: `the body is larger than ${MAX_BODY_BYTES} bytes` });
  let json: unknown;
  try {
    json = parseJsonLossless(text);
  } catch (err) {
    log.warn({ bytes: text.length }, 'webhook batch refused: the body is not JSON');
    return reply(400, { error: `the body is not JSON: ${(err as Error).message}` });
  }
  const batch = webhookBatchSchema.safeParse(json);
  if (!batch.success) {
    const reason = Array.isArray(json) ? describeIssues(batch.error, 'events') : 'expected a JSON array of events {eventId, eventType, creationTime, payload}';
    log.warn({ reason }, 'webhook batch refused: not a batch of events');
    return reply(400, { error: reason });
  }
  const events = batch.data.map((e) => {
    const t = eventTarget(e.eventType, e.payload);
    return { eventId: e.eventId, eventType: e.eventType, creationTime: e.creationTime, payload: e.payload, propertyId: t.propertyId, entityKey: t.key };
  });
  // One batch may repeat an event: it is stored once.
  const unique = [...new Map(events.map((e) => [e.eventId, e])).values()];
  let stored: number;
  try {
    stored = await opts.store(unique);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'webhook batch not stored: answered 503, the provider delivers it again');
    return reply(503, { error: 'the events could not be stored now; deliver the batch again' });
  }
  const result = { stored, duplicates: events.length - stored };
  opts.onStored(result);
  log.debug(result, 'webhook batch stored');
  return reply(200, result);
}
