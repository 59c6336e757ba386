/**
 * Content and reference-data stream: a full refresh of reference lists, the property list
 * (`/v1/properties`, include=All, pages of 200) and each property's cancellation and
 * extra-stay rules. It runs at low priority within the standard budget, on start and on the
 * `content.refreshCron` schedule. Unchanged rows are not written; rows that disappear are
 * marked removed; a property that fails validation is quarantined and the others land.
 */
import { streamNames } from '../../store/states.js';
import {
  finishContentRefresh,
  markMissingRemoved,
  replaceChildren,
  saveReferenceList,
  startContentRefresh,
  upsertChanged,
  type RemovableTable,
} from '../../store/repositories/content.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import {
  cancellationRulesResponseSchema,
  extraStayRulesResponseSchema,
  parseCancellationRule,
  parseContentProperty,
  parseExtraStayRule,
  parseWith,
  propertyPageSchema,
  type CancellationRule,
  type ContentProperty,
  type ExtraStayRule,
} from '../../provider/schemas/content.js';
import { cancellationRuleRows, extraStayRuleRows, hashOf, propertyRows, REFERENCE_LISTS, type ReferenceListDef, type Row } from '../../mapping/content.js';
import { isDatabaseUnavailable, FenceLostError } from '../../store/errors.js';
import { AuthenticationError, InvalidPayloadError, RequestRejectedError } from '../../provider/errors.js';
import { apiAreas } from '../../provider/api-access.js';
import type { SyncContext } from '../runtime/context.js';
import type { RefreshStream } from './types.js';
import type { z } from 'zod';
import { idTextOf } from '../../provider/schemas/primitives.js';

/** Content yields to the booking streams that share the standard budget. */
const CONTENT_PRIORITY = 10;
const PAGE_SIZE = 200;
const PROPERTY_CONCURRENCY = 4;

export interface ContentRefreshResult {
  /** Properties present in the content API (valid or quarantined). */
  properties: number;
  requests: number;
  changedRows: number;
  quarantined: number;
}

/** The valid rules of a property, and the ids of every rule listed (valid or not). */
export interface ParsedRules<T> {
  rules: T[];
  present: string[];
}

type Trx = Parameters<typeof upsertChanged>[0];

// ------------------------------------------------------------------ writing
// The refresh below and the replay (src/replay) share these: one way of writing the rows the
// mapping (src/mapping/content.ts) gives.

/**
 * A validated reference list, kept as sent in reference_lists and mirrored into its typed
 * table with removal (none when the rows are `partial`: the answer said nothing of some
 * entries). Returns the rows written.
 */
export async function writeReferenceList(
  trx: Trx,
  name: string,
  body: unknown,
  mapped: { table: RemovableTable; rows: Row[] | null; partial?: boolean },
  fetchedAt: Date,
): Promise<number> {
  await saveReferenceList(trx, name, body, hashOf(body), fetchedAt);
  const { table, rows } = mapped;
  if (rows === null) return 0;
  const written = (await upsertChanged(trx, table, rows)).size;
  if (mapped.partial) return written;
  return (
    written +
    (await markMissingRemoved(
      trx,
      table,
      rows.map((r) => String(r[Object.keys(r)[0]!])),
    ))
  );
}

/**
 * A property and its room types, rate plans, services and amenities, in the caller's
 * transaction: nothing is written when the property is unchanged. Returns the rows written.
 */
export async function writeProperty(trx: Trx, p: ContentProperty, raw: unknown): Promise<number> {
  const propertyId = p.id;
  const rows = propertyRows(p, raw);
  const changed = await upsertChanged(trx, 'properties', [rows.property]);
  // The hash covers the whole property: unchanged means its children are unchanged too.
  if (changed.size === 0) return 0;
  let written = 1;
  const rt = await upsertChanged(trx, 'room_types', rows.roomTypes);
  for (const a of rows.roomTypeAmenities.filter((x) => rt.has(x.roomTypeId))) {
    await replaceChildren(trx, 'room_type_amenities', { property_id: propertyId, room_type_id: a.roomTypeId }, a.rows);
  }
  const rp = await upsertChanged(trx, 'rate_plans', rows.ratePlans);
  const sv = await upsertChanged(trx, 'services', rows.services);
  await replaceChildren(trx, 'property_amenities', { property_id: propertyId }, rows.amenities);
  written += rt.size + rp.size + sv.size;
  // A list the provider sent as null (or left out) says nothing about its entries: only a
  // list that was sent can show that an entry is gone.
  const sent = (field: string) => Array.isArray((raw as Record<string, unknown> | null)?.[field]);
  if (sent('roomTypes'))
    written += await markMissingRemoved(
      trx,
      'room_types',
      p.roomTypes.map((r) => r.id),
      { propertyId },
    );
  if (sent('ratePlans'))
    written += await markMissingRemoved(
      trx,
      'rate_plans',
      p.ratePlans.map((r) => r.id),
      { propertyId },
    );
  if (sent('services'))
    written += await markMissingRemoved(
      trx,
      'services',
      p.services.map((s) => s.id),
      { propertyId },
    );
  return written;
}

/**
 * A rules response (`{ cancellationRules: [...] }` or `{ extraStayRules: [...] }`) validated:
 * the envelope's failure, or the valid rules, the ids of every rule listed and the rules that
 * failed validation (with the entity key the quarantine gives them).
 */
export function parseRulesBody<T>(
  body: unknown,
  envelope: z.ZodType<Record<string, unknown>>,
  field: string,
  parse: (raw: unknown) => { ok: true; value: T } | { ok: false; reason: string },
): { ok: false; reason: string } | ({ ok: true; bad: { entityKey: string; reason: string; raw: unknown }[] } & ParsedRules<T>) {
  const env = parseWith(envelope, body, field);
  if (!env.ok) return env;
  const rules: T[] = [];
  const present: string[] = [];
  const bad: { entityKey: string; reason: string; raw: unknown }[] = [];
  for (const raw of (env.value[field] as unknown[]) ?? []) {
    const rawId = idTextOf((raw as { id?: unknown } | null)?.id);
    // A rule that fails validation is still there at the provider: it is kept (as last
    // mirrored), not marked removed.
    if (rawId !== null) present.push(rawId);
    const parsed = parse(raw);
    if (parsed.ok) rules.push(parsed.value);
    else bad.push({ entityKey: `${field}:${String(rawId ?? '?')}`, reason: parsed.reason, raw });
  }
  return { ok: true, rules, present, bad };
}

/** Upserts cancellation rules (children replaced for those that changed), without removing any. Returns the rules written. */
export async function saveCancellationRules(trx: Trx, propertyId: string, rules: readonly CancellationRule[]): Promise<number> {
  const mapped = rules.map((r) => ({ id: r.id, ...cancellationRuleRows(propertyId, r) }));
  const changed = await upsertChanged(
    trx,
    'cancellation_rules',
    mapped.map((m) => m.rule),
  );
  for (const m of mapped.filter((x) => changed.has(x.id))) {
    const match = { property_id: propertyId, rule_id: m.id };
    await replaceChildren(trx, 'cancellation_rule_terms', match, m.terms);
    await replaceChildren(trx, 'cancellation_rule_arrival_dates', match, m.arrivalDates);
  }
  return changed.size;
}

/** The cancellation rules of a property as listed: upserted, and those no longer listed marked removed. Returns the rows written. */
export async function writeCancellationRules(trx: Trx, propertyId: string, { rules, present }: ParsedRules<CancellationRule>): Promise<number> {
  const written = await saveCancellationRules(trx, propertyId, rules);
  return written + (await markMissingRemoved(trx, 'cancellation_rules', present, { propertyId }));
}

/** Upserts extra-stay rules (periods replaced for those that changed), without removing any. Returns the rules written. */
export async function saveExtraStayRules(trx: Trx, propertyId: string, rules: readonly ExtraStayRule[]): Promise<number> {
  const mapped = rules.map((r) => ({ id: r.id, ...extraStayRuleRows(propertyId, r) }));
  const changed = await upsertChanged(
    trx,
    'extra_stay_rules',
    mapped.map((m) => m.rule),
  );
  for (const m of mapped.filter((x) => changed.has(x.id))) {
    await replaceChildren(trx, 'extra_stay_rule_periods', { property_id: propertyId, rule_id: m.id }, m.periods);
  }
  return changed.size;
}

/** The extra-stay rules of a property as listed: upserted, and those no longer listed marked removed. Returns the rows written. */
export async function writeExtraStayRules(trx: Trx, propertyId: string, { rules, present }: ParsedRules<ExtraStayRule>): Promise<number> {
  const written = await saveExtraStayRules(trx, propertyId, rules);
  return written + (await markMissingRemoved(trx, 'extra_stay_rules', present, { propertyId }));
}

// ------------------------------------------------------------------ the refresh

class Refresh {
  readonly result: ContentRefreshResult = { properties: 0, requests: 0, changedRows: 0, quarantined: 0 };
  private readonly log;

  constructor(
    private readonly ctx: SyncContext,
    private readonly signal: AbortSignal,
    /** When set, only these properties are mirrored (STAYSYNC_PROPERTY_IDS). */
    private readonly only: ReadonlySet<string> | undefined,
  ) {
    this.log = ctx.logger.child({ component: 'content' });
  }

  /** Adds rows written; a separate step so that concurrent awaits do not lose updates. */
  private count(rows: number): void {
    this.result.changedRows += rows;
  }

  private async get(base: 'provider' | 'referenceData', path: string, query: Record<string, string | number | undefined> = {}) {
    this.result.requests += 1;
    return this.ctx.client.requestJson('standard', base, path, query, this.signal, CONTENT_PRIORITY);
  }

  private async quarantine(entityKey: string | null, propertyId: string | null, reason: string, raw: unknown): Promise<void> {
    this.result.quarantined += 1;
    this.ctx.counters.quarantined += 1;
    this.log.warn({ propertyId, entityKey, reason }, 'content payload failed validation: quarantined');
    await this.ctx.write((trx) =>
      quarantineGuestPayload(
        trx,
        { stream: streamNames.content, propertyId, entityKey, reason, rawBody: typeof raw === 'string' ? raw : JSON.stringify(raw) },
        this.ctx.config.pms.personalData,
      ),
    );
  }

  /**
   * One reference list: fetched, validated, and in one transaction kept as sent in
   * reference_lists and mirrored into its typed table.
   */
  private async referenceList(def: ReferenceListDef): Promise<void> {
    const res = await this.get(def.base, def.path);
    const mapped = def.read(res.body);
    if (!mapped.ok) return this.quarantine(def.name, null, mapped.reason, res.rawBody);
    await this.ctx.write(async (trx) => this.count(await writeReferenceList(trx, def.name, res.body, mapped, res.fetchedAt)));
  }

  /**
   * Every reference list, each on its own: a list of an area the access token does not grant
   * (api-access.ts: the Content API when the claim does not name it) is not asked, said once per
   * area; a list answered 403 ("no access to the method") is left alone, said once per list.
   * Either way the list is kept as last mirrored and the other lists go on: not a failure.
   */
  async referenceLists(): Promise<void> {
    const saidAreas = new Set<string>();
    for (const def of REFERENCE_LISTS) {
      const area = def.base === 'referenceData' ? 'referenceData' : 'content';
      const access = await this.ctx.client.access(this.signal);
      if (!access.grants(area)) {
        if (!saidAreas.has(area))
          this.log.warn(
            { area: apiAreas[area].claim },
            `reference lists of the ${apiAreas[area].title} not refreshed: ${access.whyNot(area)}; kept as they were`,
          );
        saidAreas.add(area);
        continue;
      }
      try {
        await this.referenceList(def);
      } catch (err) {
        if (!(err instanceof RequestRejectedError && err.status === 403)) throw err;
        this.log.warn(
          { area: apiAreas[area].claim, list: def.name },
          `reference list ${def.name} not refreshed: ${err.message}; kept as it was, the other lists go on`,
        );
      }
    }
  }

  /** Pages through the property list; returns the ids seen (valid or quarantined). */
  async properties(): Promise<Set<string>> {
    const seen = new Set<string>();
    let since: string | undefined;
    do {
      const res = await this.get('provider', '/api/content/v1/properties', { since, count: PAGE_SIZE, include: 'All' });
      const page = parseWith(propertyPageSchema, res.body, 'page');
      if (!page.ok) {
        // Without a valid envelope there is no `next`: the refresh cannot go on (and must not
        // mark the unseen properties removed).
        await this.quarantine('properties page', null, page.reason, res.rawBody);
        throw new InvalidPayloadError(
          { rawBody: res.rawBody, reason: `the property list page is malformed: ${page.reason}`, propertyId: null },
          { status: res.status, path: '/api/content/v1/properties' },
        );
      }
      // Keyed by id: a page that lists a property twice writes it once (the last occurrence),
      // not twice concurrently by two workers.
      const valid = new Map<string, { property: ContentProperty; raw: unknown }>();
      for (const raw of page.value.properties) {
        const id = idTextOf((raw as { id?: unknown } | null)?.id);
        if (id !== null && this.only && !this.only.has(id)) continue;
        if (id !== null) seen.add(id);
        const parsed = parseContentProperty(raw);
        if (parsed.ok) valid.set(parsed.value.id, { property: parsed.value, raw });
        else await this.quarantine(id, id, parsed.reason, raw);
      }
      // A few properties at a time: each waits on its rules calls and its writes, and the
      // budget, not this loop, should be what paces the refresh.
      const queue = [...valid.values()];
      let next = 0;
      const worker = async () => {
        while (next < queue.length && !this.signal.aborted) {
          const { property, raw } = queue[next++]!;
          await this.writeProperty(property, raw);
          await this.rules(property.id);
        }
      };
      await Promise.all(Array.from({ length: PROPERTY_CONCURRENCY }, worker));
      since = page.value.next ?? undefined;
    } while (since && !this.signal.aborted);
    this.result.properties = seen.size;
    if (!this.signal.aborted) {
      this.count(await this.ctx.write((trx) => markMissingRemoved(trx, 'properties', seen, { connection: this.ctx.connection })));
    }
    return seen;
  }

  /** A property and its room types, rate plans, services and amenities, in one transaction. */
  private async writeProperty(p: ContentProperty, raw: unknown): Promise<void> {
    await this.ctx.write(async (trx) => this.count(await writeProperty(trx, p, raw)));
  }

  /** Cancellation and extra-stay rules of one property; rules can change without the property. */
  private async rules(propertyId: string): Promise<void> {
    const path = `/api/content/v1/properties/${encodeURIComponent(propertyId)}`;
    try {
      const cancellation = await this.parseRules(
        propertyId,
        `${path}/cancellation-rules`,
        cancellationRulesResponseSchema,
        'cancellationRules',
        parseCancellationRule,
      );
      const extraStay = await this.parseRules(propertyId, `${path}/extra-stay-rules`, extraStayRulesResponseSchema, 'extraStayRules', parseExtraStayRule);
      await this.ctx.write(async (trx) => {
        if (cancellation) this.count(await writeCancellationRules(trx, propertyId, cancellation));
        if (extraStay) this.count(await writeExtraStayRules(trx, propertyId, extraStay));
      });
    } catch (err) {
      if (this.signal.aborted || err instanceof AuthenticationError || err instanceof FenceLostError || isDatabaseUnavailable(err)) throw err;
      // One property's rules failing (after the client's retries) does not stop the refresh.
      this.log.warn({ propertyId, err: (err as Error).message }, 'rules of a property could not be refreshed: kept as they were');
    }
  }

  private async parseRules<T>(
    propertyId: string,
    path: string,
    envelope: z.ZodType<Record<string, unknown>>,
    field: string,
    parse: (raw: unknown) => { ok: true; value: T } | { ok: false; reason: string },
  ): Promise<ParsedRules<T> | null> {
    const res = await this.get('provider', path);
    const parsed = parseRulesBody(res.body, envelope, field, parse);
    if (!parsed.ok) {
      await this.quarantine(field, propertyId, parsed.reason, res.rawBody);
      return null;
    }
    for (const b of parsed.bad) await this.quarantine(b.entityKey, propertyId, b.reason, b.raw);
    return { rules: parsed.rules, present: parsed.present };
  }
}

/**
 * One full refresh of content and reference data. Records it in content_refreshes and returns
 * what it did; on failure records that too (when the database allows) and throws, for the
 * engine to classify (the database is away, the provider is, or the credentials are refused).
 */
export async function refreshContent(
  ctx: SyncContext,
  signal: AbortSignal,
  opts: { only?: readonly string[] | undefined } = {},
): Promise<ContentRefreshResult> {
  const log = ctx.logger.child({ component: 'content' });
  const only = opts.only && opts.only.length > 0 ? new Set(opts.only) : undefined;
  const refresh = new Refresh(ctx, signal, only);
  const id = await ctx.write((trx) => startContentRefresh(trx));
  const started = ctx.clock.now();
  try {
    await refresh.referenceLists();
    await refresh.properties();
    const outcome = signal.aborted ? 'stopped' : 'ok';
    await ctx.write((trx) => finishContentRefresh(trx, id, { outcome, ...refresh.result }));
    log.info({ ...refresh.result, ms: ctx.clock.now() - started }, 'content refresh finished');
    return { ...refresh.result };
  } catch (err) {
    const stopped = signal.aborted;
    await ctx
      .write((trx) =>
        finishContentRefresh(trx, id, {
          outcome: stopped ? 'stopped' : 'failed',
          ...refresh.result,
          error: stopped ? undefined : (err as Error).message,
        }),
      )
      .catch(() => undefined);
    throw err;
  }
}

/** Content and reference data, registered with the engine. */
export const contentStream: RefreshStream = {
  name: streamNames.content,
  area: 'content',
  enabled: (config) => config.content.enabled,
  cron: (config) => config.content.refreshCron,
  run: async (ctx, signal, only) => {
    await refreshContent(ctx, signal, { only });
  },
  discoversProperties: true,
};
