/**
 * Content and reference-data mirror against the simulator and real PostgreSQL.
 */
import { streamNames } from '../../src/store/states.js';
import { afterEach, describe, expect, it } from 'vitest';
import { refreshContent } from '../../src/sync/streams/content.js';
import { daemonEnv, runCli, startCli } from '../helpers/cli.js';
import { bookingStreams, SIM_CLIENT_ID, SIM_CLIENT_SECRET, startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { tokenResponse } from '../helpers/simulator-http.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const never = new AbortController().signal;
type AnyRecord = Record<string, any>;

/** Every content table with its rows' physical versions: a write changes xmin. */
const contentTables = [
  'properties',
  'room_types',
  'room_type_amenities',
  'rate_plans',
  'services',
  'property_amenities',
  'cancellation_rules',
  'cancellation_rule_terms',
  'cancellation_rule_arrival_dates',
  'extra_stay_rules',
  'extra_stay_rule_periods',
  'meal_plans',
  'room_type_categories',
  'room_amenities',
  'payment_methods',
  'property_amenity_types',
  'property_kinds',
];

async function rowVersions(harness: Harness): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const t of contentTables) {
    const rows = await harness.sql<{ v: string }>(`SELECT xmin::text || ':' || md5(t::text) AS v FROM ${t} t ORDER BY 1`);
    out[t] = rows.map((r) => r.v);
  }
  return out;
}

/** The entries of `items` with one per id, the last occurrence of each, in id order. */
function lastById<T extends { id: string }>(items: readonly T[]): T[] {
  return [...new Map(items.map((x) => [x.id, x])).values()].sort((a, b) => a.id.localeCompare(b.id));
}

/** One GET of the simulator over plain HTTP with the harness's client, for checking what a fault serves. */
async function simGet(harness: Harness, path: string): Promise<AnyRecord> {
  const tokenRes = await tokenResponse(harness.sim, { grant_type: 'client_credentials', client_id: SIM_CLIENT_ID, client_secret: SIM_CLIENT_SECRET });
  expect(tokenRes.status).toBe(200);
  const { access_token } = (await tokenRes.json()) as { access_token: string };
  const res = await fetch(`${harness.sim.url}${path}`, { headers: { authorization: `Bearer ${access_token}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as AnyRecord;
}

describe('content mirror', () => {
  it('equals the simulator after a refresh, and a second refresh writes no row', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 5 },
          { id: '500200', bookingCount: 5 },
          { id: '7291', bookingCount: 5 },
        ],
      },
    });
    const ctx = await h.context();
    const first = await refreshContent(ctx, never);
    expect(first.properties).toBe(3);
    expect(first.quarantined).toBe(0);

    for (const id of h.sim.propertyIds()) {
      const p = h.sim.contentProperty(id) as unknown as AnyRecord;
      const [row] = await h.sql<AnyRecord>('SELECT * FROM properties WHERE property_id = $1', [id]);
      expect(row).toMatchObject({ name: p.name, currency: p.currency, time_zone: p.timeZone.id, removed_at: null, check_in_time: p.policy.checkInTime });
      expect(row!.raw).toEqual(p);

      const roomTypes = await h.sql<AnyRecord>(
        'SELECT room_type_id, name, category_code, category_name FROM room_types WHERE property_id = $1 ORDER BY room_type_id',
        [id],
      );
      expect(roomTypes).toEqual(
        [...p.roomTypes]
          .sort((a: AnyRecord, b: AnyRecord) => a.id.localeCompare(b.id))
          .map((r: AnyRecord) => ({ room_type_id: r.id, name: r.name, category_code: r.categoryCode, category_name: r.categoryName })),
      );
      const amenities = await h.sql<AnyRecord>('SELECT room_type_id, code FROM room_type_amenities WHERE property_id = $1 ORDER BY room_type_id, position', [
        id,
      ]);
      expect(amenities.length).toBe(p.roomTypes.reduce((n: number, r: AnyRecord) => n + (r.amenities?.length ?? 0), 0));

      const ratePlans = await h.sql<AnyRecord>(
        'SELECT rate_plan_id, name, cancellation_rule_id, extra_stay_rule_id FROM rate_plans WHERE property_id = $1 ORDER BY rate_plan_id',
        [id],
      );
      expect(ratePlans).toEqual(
        [...p.ratePlans]
          .sort((a: AnyRecord, b: AnyRecord) => a.id.localeCompare(b.id))
          .map((r: AnyRecord) => ({
            rate_plan_id: r.id,
            name: r.name,
            cancellation_rule_id: r.cancellationRuleId,
            extra_stay_rule_id: r.extraStayRuleId ?? null,
          })),
      );
      const services = await h.sql<AnyRecord>('SELECT service_id, kind, meal_plan_code FROM services WHERE property_id = $1 ORDER BY service_id', [id]);
      expect(services).toEqual(
        [...p.services]
          .sort((a: AnyRecord, b: AnyRecord) => a.id.localeCompare(b.id))
          .map((s: AnyRecord) => ({ service_id: s.id, kind: s.kind, meal_plan_code: s.mealPlanCode ?? null })),
      );
      // Amenity codes may repeat: the mirror keeps them by position, duplicates included.
      const propertyAmenities = await h.sql<{ code: string }>('SELECT code FROM property_amenities WHERE property_id = $1 ORDER BY position', [id]);
      expect(propertyAmenities.map((a) => a.code)).toEqual(p.amenities.map((a: AnyRecord) => a.code));

      const rules = h.sim.cancellationRules(id) as unknown as AnyRecord[];
      const ruleRows = await h.sql<AnyRecord>('SELECT rule_id, reference_point_kind, is_free FROM cancellation_rules WHERE property_id = $1 ORDER BY rule_id', [
        id,
      ]);
      expect(ruleRows).toEqual(
        [...rules]
          .sort((a, b) => a.id.localeCompare(b.id))
          .map((r) => ({ rule_id: r.id, reference_point_kind: r.referencePointKind, is_free: r.cancellationTerms.length === 0 })),
      );
      const terms = await h.sql<{ n: string }>('SELECT count(*) AS n FROM cancellation_rule_terms WHERE property_id = $1', [id]);
      expect(Number(terms[0]!.n)).toBe(rules.reduce((n, r) => n + r.cancellationTerms.length, 0));
      const extra = h.sim.extraStayRules(id) as unknown as AnyRecord[];
      const periods = await h.sql<{ n: string }>('SELECT count(*) AS n FROM extra_stay_rule_periods WHERE property_id = $1', [id]);
      expect(Number(periods[0]!.n)).toBe(extra.reduce((n, r) => n + r.earlyCheckInPeriods.length + r.lateCheckOutPeriods.length, 0));
    }

    const lists = h.sim.referenceLists() as unknown as AnyRecord;
    expect((await h.sql<AnyRecord>('SELECT code, name FROM meal_plans ORDER BY code')).map((r) => r.code)).toEqual(
      lists.mealPlans.map((m: AnyRecord) => m.code).sort(),
    );
    expect((await h.sql('SELECT * FROM payment_methods')).length).toBe(lists.paymentMethods.length);
    expect((await h.sql('SELECT * FROM property_kinds')).length).toBe(lists.propertyKinds.length);
    expect((await h.sql('SELECT * FROM property_amenity_types')).length).toBe(lists.amenityTypes.length);
    expect((await h.sql('SELECT * FROM room_amenities')).length).toBe(
      new Set(lists.roomAmenityCategories.flatMap((c: AnyRecord) => c.amenities.map((a: AnyRecord) => a.code))).size,
    );

    const before = await rowVersions(h);
    const second = await refreshContent(await h.context(), never);
    expect(second).toMatchObject({ changedRows: 0, properties: 3 });
    expect(await rowVersions(h)).toEqual(before);
  });

  it('reads the room amenity categories in both documented shapes, flat and nested, and marks nothing removed on an answer it cannot read', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 0 }] } });
    const ctx = await h.context();
    const categories = (h.sim.referenceLists() as unknown as AnyRecord).roomAmenityCategories as {
      name: string;
      amenities: { code: string; name: string }[];
    }[];
    const expected = categories
      .flatMap((c) => c.amenities.map((a) => ({ code: a.code, name: a.name, category_name: c.name, removed: false })))
      .sort((a, b) => a.code.localeCompare(b.code));
    const amenities = () => h!.sql(`SELECT code, name, category_name, removed_at IS NOT NULL AS removed FROM room_amenities ORDER BY code`);

    // The specification's shape: one entry per amenity, with its group.
    h.sim.faults.roomAmenityCategoriesShape = 'flat';
    expect((await simGet(h, '/api/content/v1/room-amenity-categories'))[0]).toEqual({
      group: categories[0]!.name,
      code: categories[0]!.amenities[0]!.code,
      name: categories[0]!.amenities[0]!.name,
    });
    await refreshContent(ctx, never);
    expect(await amenities()).toEqual(expected);
    // The OpenAPI document's shape: the same rows, none written again.
    h.sim.faults.roomAmenityCategoriesShape = 'nested';
    const before = await rowVersions(h);
    await refreshContent(ctx, never);
    expect((await rowVersions(h)).room_amenities).toEqual(before.room_amenities);

    // Entries of neither shape: quarantined with the reason, nothing marked removed.
    h.sim.faults.rewriteBody = (path) => (path.endsWith('/room-amenity-categories') ? [{ title: 'Bathroom', items: ['shower'] }] : undefined);
    await refreshContent(ctx, never);
    expect(await amenities()).toEqual(expected);
    const [q] = await h.sql<AnyRecord>(`SELECT stream, entity_key, reason FROM quarantine`);
    expect(q).toMatchObject({ stream: 'content', entity_key: 'roomAmenityCategories' });
    expect(q!.reason).toContain('roomAmenityCategories[0]: neither a category with its amenities');
    // A category that says nothing of its amenities (null, as the document allows) removes none of them.
    h.sim.faults.rewriteBody = (path, body) =>
      path.endsWith('/room-amenity-categories') ? (body as AnyRecord[]).map((c, i) => (i === 0 ? { ...c, amenities: null } : c)) : undefined;
    await refreshContent(ctx, never);
    expect(await amenities()).toEqual(expected);
    // A flat list whose entries give no code yields no amenity: none is removed either.
    h.sim.faults.rewriteBody = (path, body) =>
      path.endsWith('/room-amenity-categories')
        ? (body as AnyRecord[]).flatMap((c) => c.amenities.map((a: AnyRecord) => ({ group: c.name, code: null, name: a.name })))
        : undefined;
    await refreshContent(ctx, never);
    expect(await amenities()).toEqual(expected);
  });

  it('marks a removed room type and rate plan removed, and revives them when they return', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    const ctx = await h.context();
    await refreshContent(ctx, never);
    const p = h.sim.contentProperty('500100') as unknown as AnyRecord;
    const roomTypeId: string = p.roomTypes[0].id;
    const ratePlanId: string = p.ratePlans[0].id;

    h.sim.removeRoomType('500100', roomTypeId);
    h.sim.removeRatePlan('500100', ratePlanId);
    await refreshContent(ctx, never);
    const removedRt = await h.sql<AnyRecord>('SELECT removed_at FROM room_types WHERE room_type_id = $1', [roomTypeId]);
    const removedRp = await h.sql<AnyRecord>('SELECT removed_at FROM rate_plans WHERE rate_plan_id = $1', [ratePlanId]);
    expect(removedRt[0]!.removed_at).toBeInstanceOf(Date);
    expect(removedRp[0]!.removed_at).toBeInstanceOf(Date);
    const stillThere = await h.sql<{ n: string }>('SELECT count(*) AS n FROM room_types WHERE removed_at IS NULL');
    expect(Number(stillThere[0]!.n)).toBe(p.roomTypes.length - 1);

    h.sim.restoreRoomType('500100', roomTypeId);
    h.sim.restoreRatePlan('500100', ratePlanId);
    h.sim.renameRoomType('500100', p.roomTypes[1].id, 'Renamed Suite');
    await refreshContent(ctx, never);
    const revived = await h.sql<AnyRecord>('SELECT room_type_id, removed_at, name FROM room_types ORDER BY room_type_id');
    expect(revived.every((r) => r.removed_at === null)).toBe(true);
    expect(revived.find((r) => r.room_type_id === p.roomTypes[1].id)!.name).toBe('Renamed Suite');
    const rp = await h.sql<AnyRecord>('SELECT removed_at FROM rate_plans WHERE rate_plan_id = $1', [ratePlanId]);
    expect(rp[0]!.removed_at).toBeNull();
  });

  it('reads a property list of several pages completely, quarantines a malformed property and lands the others', async () => {
    // 250 properties: a full page of 200 and the rest on a second.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 3 }], contentOnlyProperties: 249 } });
    const ids = h.sim.propertyIds();
    const bad = ids[7]!;
    h.sim.faults.malformedPropertyIds.add(bad);
    const ctx = await h.context();
    const r = await refreshContent(ctx, never);
    expect(r).toMatchObject({ properties: 250, quarantined: 1 });
    const rows = await h.sql<{ property_id: string }>('SELECT property_id FROM properties WHERE removed_at IS NULL ORDER BY property_id');
    expect(rows.map((x) => x.property_id)).toEqual(ids.filter((id) => id !== bad).sort());
    const q = await h.sql<AnyRecord>('SELECT stream, property_id, reason, raw_body FROM quarantine');
    expect(q).toEqual([
      { stream: streamNames.content, property_id: bad, reason: expect.stringMatching(/ratePlans|name/), raw_body: expect.stringContaining(bad) },
    ]);
    // The list took 2 pages of 200 plus 2 rules calls per valid property and 6 reference lists.
    expect(r.requests).toBe(2 + 2 * 249 + 6);
  });

  it('joins every booking room stay to its room type name through the views', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 60 },
          { id: '7291', bookingCount: 40 },
        ],
      },
    });
    const ctx = await h.context();
    // The bookings and the content they are joined to (the PMS streams add nothing to these views).
    const bookingsAndContent = { ...bookingStreams, refreshes: registeredStreams.refreshes.filter((s) => s.name === streamNames.content) };
    const result = await syncOnce(ctx, { streams: bookingsAndContent });
    expect(result).toMatchObject({ continueTokenLost: [], refreshFailures: [], failed: [], fatal: undefined });
    const stays = await h.sql<{ n: string }>('SELECT count(*) AS n FROM booking_room_stays');
    const named = await h.sql<AnyRecord>('SELECT * FROM booking_room_stays_named');
    expect(named.length).toBe(Number(stays[0]!.n));
    expect(named.length).toBeGreaterThan(100);
    // The category only comes from content: a stay without it did not join.
    expect(named.filter((s) => s.room_type_category_name === null || s.property_name === null)).toEqual([]);
    const services = await h.sql<AnyRecord>('SELECT * FROM booking_services_named');
    expect(services.length).toBeGreaterThan(0);
    expect(services.filter((s) => s.kind === 'Meal' && s.meal_plan_name === null)).toEqual([]);
    const rates = await h.sql<AnyRecord>('SELECT * FROM booking_daily_rates_named WHERE rate_plan_name IS NULL');
    expect(rates).toEqual([]);
  });

  it('comments every table and column', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    await h.migrate();
    const missing = await h.sql<AnyRecord>(
      `SELECT c.table_name, c.column_name
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.table_name NOT LIKE 'kysely_%'
          AND col_description((quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))::regclass, c.ordinal_position) IS NULL`,
    );
    expect(missing).toEqual([]);
    const tables = await h.sql<AnyRecord>(
      `SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'v')
         AND relname NOT LIKE 'kysely_%' AND obj_description(oid, 'pg_class') IS NULL`,
    );
    expect(tables).toEqual([]);
  });

  it('follows the properties the content API lists when none are configured, and picks up new ones', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 20 },
          { id: '500200', bookingCount: 10 },
        ],
      },
    });
    const env = daemonEnv(h, { env: { STAYSYNC_PROPERTY_IDS: '' } });
    const run = () => runCli(['sync', '--once'], env);
    const first = await run();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const counts = async () =>
      Object.fromEntries(
        (await h!.sql<{ property_id: string; n: string }>('SELECT property_id, count(*) AS n FROM bookings GROUP BY 1')).map((r) => [
          r.property_id,
          Number(r.n),
        ]),
      );
    expect(await counts()).toEqual({ '500100': 20, '500200': 10 });

    h.sim.addProperty({ id: '600600', bookingCount: 7 });
    const second = await run();
    expect(second.code, second.stdout + second.stderr).toBe(0);
    expect(await counts()).toEqual({ '500100': 20, '500200': 10, '600600': 7 });

    const status = (await runCli(['status'], env)).stdout;
    expect(status).toMatch(/Content: last refresh started \S+, ok, 3 properties/);
    expect(status).toContain('600600');
  });

  it('lets the daemon follow a property that a scheduled refresh finds, and polls again on schedule', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 10 }] } });
    await h.migrate(); // the tables exist before the daemon starts, so the test can poll them
    // croner takes seconds as a sixth field: refresh and poll every second.
    const { child, done } = startCli(
      ['run'],
      daemonEnv(h, { env: { STAYSYNC_PROPERTY_IDS: '' }, config: { content: { refreshCron: '* * * * * *' }, sync: { pollCron: '* * * * * *' } } }),
    );
    const waitFor = async (sql: string, expected: number) => {
      for (let i = 0; i < 200; i++) {
        const rows = await h!.sql<{ n: string }>(sql);
        if (Number(rows[0]?.n) === expected) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`timed out waiting for ${sql} = ${expected}`);
    };
    try {
      await waitFor('SELECT count(*) AS n FROM bookings', 10);
      h.sim.addProperty({ id: '600600', bookingCount: 6 });
      await waitFor(`SELECT count(*) AS n FROM bookings WHERE property_id = '600600'`, 6);
      // A change of a followed property arrives with the next scheduled poll.
      h.sim.mutate({ count: 0, newCount: 3, propertyId: '500100' });
      await waitFor(`SELECT count(*) AS n FROM bookings WHERE property_id = '500100'`, 13);
    } finally {
      child.kill('SIGTERM');
    }
    const r = await done;
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('quarantines a cancellation and an extra-stay rule that fail validation without marking them removed', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 1 },
          { id: '500200', bookingCount: 1 },
        ],
      },
    });
    const ctx = await h.context();
    const first = await refreshContent(ctx, never);
    expect(first.quarantined).toBe(0);
    const cancellation = h.sim.cancellationRules('500100');
    const extraStay = h.sim.extraStayRules('500100');
    // The property has another cancellation rule, which must stay as it is.
    expect(cancellation.length).toBeGreaterThanOrEqual(2);
    expect(extraStay.length).toBeGreaterThanOrEqual(1);
    const badCancellation = cancellation[0]!.id;
    const badExtraStay = extraStay[0]!.id;
    const rules = (table: string) => h!.sql<AnyRecord>(`SELECT property_id, rule_id, removed_at FROM ${table} ORDER BY property_id, rule_id`);
    const cancellationBefore = await rules('cancellation_rules');
    const extraStayBefore = await rules('extra_stay_rules');
    expect(cancellationBefore.filter((r) => r.property_id === '500100').map((r) => r.rule_id)).toEqual(cancellation.map((r) => r.id).sort());
    expect(extraStayBefore.filter((r) => r.property_id === '500100').map((r) => r.rule_id)).toEqual(extraStay.map((r) => r.id).sort());
    expect([...cancellationBefore, ...extraStayBefore].every((r) => r.removed_at === null)).toBe(true);
    const before = await rowVersions(h);

    h.sim.faults.malformedRuleIds.add(badCancellation).add(badExtraStay);
    // What the provider serves now: the two rules keep their ids and fail the schema.
    const served = {
      cancellation: (await simGet(h, '/api/content/v1/properties/500100/cancellation-rules')).cancellationRules as AnyRecord[],
      extraStay: (await simGet(h, '/api/content/v1/properties/500100/extra-stay-rules')).extraStayRules as AnyRecord[],
    };
    expect(served.cancellation.find((r) => r.id === badCancellation)!.cancellationTerms).toBe('n/a');
    expect(served.cancellation.filter((r) => r.id !== badCancellation)).toEqual(cancellation.filter((r) => r.id !== badCancellation));
    expect(served.extraStay.find((r) => r.id === badExtraStay)!.earlyCheckInPeriods).toBe('n/a');

    const faulted = await refreshContent(ctx, never);
    expect(faulted).toMatchObject({ properties: 2, quarantined: 2, changedRows: 0 });
    const quarantined = await h.sql<AnyRecord>('SELECT stream, property_id, entity_key, raw_body, occurrences FROM quarantine ORDER BY entity_key');
    expect(quarantined).toEqual([
      {
        stream: streamNames.content,
        property_id: '500100',
        entity_key: `cancellationRules:${badCancellation}`,
        raw_body: expect.stringContaining('"n/a"'),
        occurrences: 1,
      },
      {
        stream: streamNames.content,
        property_id: '500100',
        entity_key: `extraStayRules:${badExtraStay}`,
        raw_body: expect.stringContaining('"n/a"'),
        occurrences: 1,
      },
    ]);
    expect(JSON.parse(quarantined[0]!.raw_body as string).id).toBe(badCancellation);
    // The rules are still at the provider: their rows are kept as last mirrored, not removed,
    // and no other row of the mirror (the property's other rules included) was written.
    expect(await rules('cancellation_rules')).toEqual(cancellationBefore);
    expect(await rules('extra_stay_rules')).toEqual(extraStayBefore);
    expect(await rowVersions(h)).toEqual(before);

    h.sim.faults.malformedRuleIds.clear();
    const healed = await refreshContent(ctx, never);
    expect(healed).toMatchObject({ properties: 2, quarantined: 0, changedRows: 0 });
    expect(await rowVersions(h)).toEqual(before);
    // The quarantine keeps its history.
    expect(await h.sql<AnyRecord>('SELECT entity_key, occurrences FROM quarantine ORDER BY entity_key')).toEqual([
      { entity_key: `cancellationRules:${badCancellation}`, occurrences: 1 },
      { entity_key: `extraStayRules:${badExtraStay}`, occurrences: 1 },
    ]);
  });

  it('writes the valid rules of a property whose other rule fails validation the first time it is seen', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    const cancellation = h.sim.cancellationRules('500100');
    const extraStay = h.sim.extraStayRules('500100');
    expect(cancellation.length).toBeGreaterThanOrEqual(2);
    const bad = cancellation[0]!.id;
    h.sim.faults.malformedRuleIds.add(bad);
    const ctx = await h.context();
    expect(await refreshContent(ctx, never)).toMatchObject({ quarantined: 1 });
    const good = cancellation.filter((r) => r.id !== bad);
    expect(await h.sql<AnyRecord>('SELECT rule_id, removed_at FROM cancellation_rules ORDER BY rule_id')).toEqual(
      good.map((r) => ({ rule_id: r.id, removed_at: null })).sort((a, b) => a.rule_id.localeCompare(b.rule_id)),
    );
    const terms = await h.sql<{ n: string }>('SELECT count(*) AS n FROM cancellation_rule_terms');
    expect(Number(terms[0]!.n)).toBe(good.reduce((n, r) => n + r.cancellationTerms.length, 0));
    expect((await h.sql<AnyRecord>('SELECT rule_id FROM extra_stay_rules ORDER BY rule_id')).map((r) => r.rule_id)).toEqual(extraStay.map((r) => r.id).sort());

    h.sim.faults.malformedRuleIds.clear();
    expect(await refreshContent(ctx, never)).toMatchObject({ quarantined: 0 });
    expect((await h.sql<AnyRecord>('SELECT rule_id FROM cancellation_rules WHERE removed_at IS NULL ORDER BY rule_id')).map((r) => r.rule_id)).toEqual(
      cancellation.map((r) => r.id).sort(),
    );
  });

  it('takes the last occurrence of an id listed twice in a property, its rules or a properties page, and quarantines nothing', async () => {
    // 201 properties: two pages of the list (200 and 1).
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }], contentOnlyProperties: 200 } });
    const ids = h.sim.propertyIds();
    expect(ids).toHaveLength(201);
    // The first property of page 1, one in its middle, and the only one of page 2.
    const duplicated = ['500100', ids[57]!, ids[200]!];
    for (const id of duplicated) h.sim.faults.duplicateContentIds.add(id);
    h.sim.faults.duplicatePropertyInPage = true;

    // What the provider serves: each page repeats its first property at its end.
    const page1 = await simGet(h, '/api/content/v1/properties?include=All&count=200');
    expect(page1.properties).toHaveLength(201);
    expect(page1.properties[200]).toEqual(page1.properties[0]);
    const page2 = await simGet(h, `/api/content/v1/properties?include=All&count=200&since=${encodeURIComponent(page1.next as string)}`);
    expect((page2.properties as AnyRecord[]).map((p) => p.id)).toEqual([ids[200], ids[200]]);
    expect(page2.next).toBeNull();
    for (const id of duplicated) {
      const p = h.sim.contentProperty(id) as unknown as AnyRecord;
      // The first entry is listed twice, the second copy different from the first.
      for (const list of [p.roomTypes, p.ratePlans, p.services] as AnyRecord[][]) {
        expect(list[1]!.id).toBe(list[0]!.id);
        expect(list[1]!.name).not.toBe(list[0]!.name);
      }
      const rules = h.sim.cancellationRules(id);
      expect(rules[1]!.id).toBe(rules[0]!.id);
      expect(rules[1]!.referencePointKind).not.toBe(rules[0]!.referencePointKind);
      const extra = h.sim.extraStayRules(id);
      expect(extra[1]!.id).toBe(extra[0]!.id);
    }
    expect((await simGet(h, `/api/content/v1/properties/${ids[57]}`)).roomTypes).toEqual(h.sim.contentProperty(ids[57]!).roomTypes);

    const ctx = await h.context();
    const r = await refreshContent(ctx, never);
    expect(r).toMatchObject({ properties: 201, quarantined: 0 });
    expect(await h.sql('SELECT * FROM quarantine')).toEqual([]);
    const propertyRows = await h.sql<AnyRecord>('SELECT property_id FROM properties WHERE removed_at IS NULL ORDER BY property_id');
    expect(propertyRows.map((x) => x.property_id)).toEqual([...ids].sort());

    // Every property: one row per distinct id, whichever property was duplicated.
    const expectedCounts = { room_types: 0, rate_plans: 0, services: 0, cancellation_rules: 0, extra_stay_rules: 0 };
    for (const id of ids) {
      const p = h.sim.contentProperty(id);
      expectedCounts.room_types += lastById(p.roomTypes).length;
      expectedCounts.rate_plans += lastById(p.ratePlans).length;
      expectedCounts.services += lastById(p.services).length;
      expectedCounts.cancellation_rules += lastById(h.sim.cancellationRules(id)).length;
      expectedCounts.extra_stay_rules += lastById(h.sim.extraStayRules(id)).length;
    }
    for (const [table, n] of Object.entries(expectedCounts)) {
      const rows = await h.sql<{ n: string }>(`SELECT count(*) AS n FROM ${table} WHERE removed_at IS NULL`);
      expect(Number(rows[0]!.n), table).toBe(n);
    }

    // The duplicated properties hold the values of the last occurrence.
    for (const id of duplicated) {
      const p = h.sim.contentProperty(id);
      const roomTypes = lastById(p.roomTypes);
      expect(await h.sql<AnyRecord>('SELECT room_type_id, name FROM room_types WHERE property_id = $1 ORDER BY room_type_id', [id])).toEqual(
        roomTypes.map((x) => ({ room_type_id: x.id, name: x.name })),
      );
      const twice = p.roomTypes[1]!;
      expect(
        (await h.sql<AnyRecord>('SELECT code FROM room_type_amenities WHERE property_id = $1 AND room_type_id = $2 ORDER BY position', [id, twice.id])).map(
          (a) => a.code,
        ),
      ).toEqual((twice.amenities ?? []).map((a) => a.code));
      expect(await h.sql<AnyRecord>('SELECT rate_plan_id, name FROM rate_plans WHERE property_id = $1 ORDER BY rate_plan_id', [id])).toEqual(
        lastById(p.ratePlans).map((x) => ({ rate_plan_id: x.id, name: x.name })),
      );
      expect(await h.sql<AnyRecord>('SELECT service_id, name FROM services WHERE property_id = $1 ORDER BY service_id', [id])).toEqual(
        lastById(p.services).map((x) => ({ service_id: x.id, name: x.name })),
      );
      const rules = lastById(h.sim.cancellationRules(id));
      expect(
        await h.sql<AnyRecord>('SELECT rule_id, reference_point_kind, is_free FROM cancellation_rules WHERE property_id = $1 ORDER BY rule_id', [id]),
      ).toEqual(rules.map((x) => ({ rule_id: x.id, reference_point_kind: x.referencePointKind, is_free: x.cancellationTerms.length === 0 })));
      const terms = await h.sql<AnyRecord>('SELECT rule_id, count(*)::int AS n FROM cancellation_rule_terms WHERE property_id = $1 GROUP BY 1 ORDER BY 1', [
        id,
      ]);
      expect(terms).toEqual(rules.filter((x) => x.cancellationTerms.length > 0).map((x) => ({ rule_id: x.id, n: x.cancellationTerms.length })));
      const extra = lastById(h.sim.extraStayRules(id));
      const periods = await h.sql<AnyRecord>(
        `SELECT rule_id, count(*) FILTER (WHERE kind = 'early_check_in')::int AS early, count(*) FILTER (WHERE kind = 'late_check_out')::int AS late
           FROM extra_stay_rule_periods WHERE property_id = $1 GROUP BY 1 ORDER BY 1`,
        [id],
      );
      expect(periods).toEqual(extra.map((x) => ({ rule_id: x.id, early: x.earlyCheckInPeriods.length, late: x.lateCheckOutPeriods.length })));
    }

    // The same pages again: the mirror already holds the last occurrences, so nothing is written.
    const before = await rowVersions(h);
    expect(await refreshContent(ctx, never)).toMatchObject({ properties: 201, quarantined: 0, changedRows: 0 });
    expect(await rowVersions(h)).toEqual(before);
  });
});
