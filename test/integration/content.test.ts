/**
 * Content and reference-data mirror against the simulator and real PostgreSQL.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { refreshContent } from '../../src/sync/content.js';
import { daemonEnv, runCli, startCli } from '../helpers/cli.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

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

describe('content mirror', () => {
  it('equals the simulator after a refresh, and a second refresh writes no row', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }, { id: '500200', bookingCount: 5 }, { id: '7291', bookingCount: 5 }] } });
    const ctx = await h.context();
    const first = await refreshContent(ctx, never);
    expect(first.properties).toBe(3);
    expect(first.quarantined).toBe(0);

    for (const id of h.sim.propertyIds()) {
      const p = h.sim.contentProperty(id) as unknown as AnyRecord;
      const [row] = await h.sql<AnyRecord>('SELECT * FROM properties WHERE property_id = $1', [id]);
      expect(row).toMatchObject({ name: p.name, currency: p.currency, time_zone: p.timeZone.id, removed_at: null, check_in_time: p.policy.checkInTime });
      expect(row!.raw).toEqual(p);

      const roomTypes = await h.sql<AnyRecord>('SELECT room_type_id, name, category_code, category_name FROM room_types WHERE property_id = $1 ORDER BY room_type_id', [id]);
      expect(roomTypes).toEqual(
        [...p.roomTypes]
          .sort((a: AnyRecord, b: AnyRecord) => a.id.localeCompare(b.id))
          .map((r: AnyRecord) => ({ room_type_id: r.id, name: r.name, category_code: r.categoryCode, category_name: r.categoryName })),
      );
      const amenities = await h.sql<AnyRecord>('SELECT room_type_id, code FROM room_type_amenities WHERE property_id = $1 ORDER BY room_type_id, position', [id]);
      expect(amenities.length).toBe(p.roomTypes.reduce((n: number, r: AnyRecord) => n + (r.amenities?.length ?? 0), 0));

      const ratePlans = await h.sql<AnyRecord>('SELECT rate_plan_id, name, cancellation_rule_id, extra_stay_rule_id FROM rate_plans WHERE property_id = $1 ORDER BY rate_plan_id', [id]);
      expect(ratePlans).toEqual(
        [...p.ratePlans]
          .sort((a: AnyRecord, b: AnyRecord) => a.id.localeCompare(b.id))
          .map((r: AnyRecord) => ({ rate_plan_id: r.id, name: r.name, cancellation_rule_id: r.cancellationRuleId, extra_stay_rule_id: r.extraStayRuleId ?? null })),
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
      const ruleRows = await h.sql<AnyRecord>('SELECT rule_id, reference_point_kind, is_free FROM cancellation_rules WHERE property_id = $1 ORDER BY rule_id', [id]);
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
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 3 }], contentOnlyProperties: 449 } });
    const ids = h.sim.propertyIds();
    const bad = ids[7]!;
    h.sim.faults.malformedPropertyIds.add(bad);
    const ctx = await h.context();
    const r = await refreshContent(ctx, never);
    expect(r).toMatchObject({ properties: 450, quarantined: 1 });
    const rows = await h.sql<{ property_id: string }>('SELECT property_id FROM properties WHERE removed_at IS NULL ORDER BY property_id');
    expect(rows.map((x) => x.property_id)).toEqual(ids.filter((id) => id !== bad).sort());
    const q = await h.sql<AnyRecord>('SELECT stream, property_id, reason, raw_body FROM quarantine');
    expect(q).toEqual([{ stream: 'content', property_id: bad, reason: expect.stringMatching(/ratePlans|name/), raw_body: expect.stringContaining(bad) }]);
    // The list took 3 pages of 200 plus 2 rules calls per valid property and 6 reference lists.
    expect(r.requests).toBe(3 + 2 * 449 + 6);
  });

  it('joins every booking room stay to its room type name through the views', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 60 }, { id: '7291', bookingCount: 40 }] } });
    const ctx = await h.context();
    const result = await syncOnce(ctx, { streams: 'all' });
    expect(result).toMatchObject({ tokenLost: [], refreshFailures: [], failed: [], fatal: undefined });
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
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 20 }, { id: '500200', bookingCount: 10 }] } });
    const env = daemonEnv(h, { env: { STAYSYNC_PROPERTY_IDS: '' } });
    const run = () => runCli(['sync', '--once'], env);
    const first = await run();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    const counts = async () =>
      Object.fromEntries(
        (await h!.sql<{ property_id: string; n: string }>('SELECT property_id, count(*) AS n FROM bookings GROUP BY 1')).map((r) => [r.property_id, Number(r.n)]),
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
});
