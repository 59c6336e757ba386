/**
 * The simulator's Content API and Reference Data API over real HTTP: properties paging,
 * consistency with the bookings, rules, content edits, malformed faults, reference lists,
 * the standard rate-limit scope and the speed of a full content pass.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type CancellationRule, type ContentPropertyInfo, type ContentPropertyPage, type ExtraStayRule, type Simulator } from '../index.js';
import { noLimits, accessToken, remainingHeaders } from '../../../test/helpers/simulator-http.js';

function get(sim: Simulator, path: string, token: string | undefined, q: Record<string, string> = {}): Promise<Response> {
  const qs = new URLSearchParams(q).toString();
  return fetch(`${sim.url}${path}${qs ? `?${qs}` : ''}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
}

async function getJson<T>(sim: Simulator, path: string, token: string, q: Record<string, string> = {}): Promise<T> {
  const res = await get(sim, path, token, q);
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

/** Pages the properties list to the end. */
async function pageProperties(sim: Simulator, token: string, q: Record<string, string>): Promise<ContentPropertyPage[]> {
  const pages: ContentPropertyPage[] = [];
  let since: string | null = null;
  for (let i = 0; i < 1000; i++) {
    const page: ContentPropertyPage = await getJson<ContentPropertyPage>(sim, '/api/content/v1/properties', token, since === null ? q : { ...q, since });
    pages.push(page);
    since = page.next;
    if (since === null) return pages;
  }
  throw new Error('paging did not end');
}

const PROPERTY = (id: string) => `/api/content/v1/properties/${encodeURIComponent(id)}`;
const byNumericId = (a: string, b: string) => Number(a) - Number(b);

describe('simulator content: properties paging', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    // 50 properties given with zero bookings (in reverse id order) and 400 content-only ones.
    sim = await startSimulator({
      rateLimits: noLimits,
      properties: Array.from({ length: 50 }, (_, i) => ({ id: String(100_500 - i * 10), bookingCount: 0 })),
      contentOnlyProperties: 400,
    });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('450 properties with count 200: 3 pages in id order, each property once, next null at the end', async () => {
    expect(sim.propertyIds()).toHaveLength(450);
    const pages = await pageProperties(sim, token, { count: '200', include: 'All' });
    expect(pages.map((p) => p.properties.length)).toEqual([200, 200, 50]);
    expect(pages.map((p) => p.next === null)).toEqual([false, false, true]);
    expect(pages[2]).toHaveProperty('next', null);
    for (const p of pages) expect(p.warnings).toEqual([]);
    const ids = pages.flatMap((p) => p.properties.map((x) => x.id));
    expect(new Set(ids).size).toBe(450);
    expect(ids).toEqual([...sim.propertyIds()].sort(byNumericId));
    // With include=All each property is exactly what the single endpoint serves.
    for (const p of pages.flatMap((x) => x.properties)) expect(p).toEqual(sim.contentProperty(p.id));
    const one = await getJson<ContentPropertyInfo>(sim, PROPERTY(ids[123]!), token);
    expect(one).toEqual(sim.contentProperty(ids[123]!));
  });

  it('include empty returns ids only; count defaults to 200; since continues after the previous page', async () => {
    const first = await getJson<ContentPropertyPage>(sim, '/api/content/v1/properties', token);
    expect(first.properties).toHaveLength(200);
    for (const p of first.properties) expect(Object.keys(p)).toEqual(['id']);
    expect(typeof first.next).toBe('string');
    const withEmpty = await getJson<ContentPropertyPage>(sim, '/api/content/v1/properties', token, { include: '', count: '7' });
    expect(withEmpty.properties).toEqual(first.properties.slice(0, 7));
    const second = await getJson<ContentPropertyPage>(sim, '/api/content/v1/properties', token, { since: withEmpty.next!, count: '3' });
    expect(second.properties).toEqual(first.properties.slice(7, 10));
    // An exactly full last page still ends with next null.
    const all = await pageProperties(sim, token, { count: '150' });
    expect(all.map((p) => p.properties.length)).toEqual([150, 150, 150]);
    expect(all[2]!.next).toBeNull();
  });

  it('rejects bad count, since, include and languageCode with 400; accepts languageCode=en', async () => {
    const list = '/api/content/v1/properties';
    const bad: Record<string, string>[] = [
      { count: '0' },
      { count: '201' },
      { count: 'ten' },
      { count: '-1' },
      { since: 'not a cursor!' },
      { since: 'aGVsbG8=' },
      { include: 'Everything' },
      { languageCode: 'de' },
    ];
    for (const q of bad) {
      const res = await get(sim, list, token, q);
      expect(res.status, JSON.stringify(q)).toBe(400);
      expect(((await res.json()) as { errors: unknown[] }).errors).toHaveLength(1);
    }
    expect((await get(sim, list, token, { count: '200', include: 'All', languageCode: 'en' })).status).toBe(200);
    expect((await get(sim, PROPERTY('900001'), token, { languageCode: 'en' })).status).toBe(200);
    expect((await get(sim, PROPERTY('900001'), token, { languageCode: 'xx' })).status).toBe(400);
  });

  it('unknown properties answer 404 on the property and rules endpoints; unknown paths 404; wrong methods 405; no token 401', async () => {
    for (const path of [PROPERTY('424242'), `${PROPERTY('424242')}/cancellation-rules`, `${PROPERTY('424242')}/extra-stay-rules`]) {
      expect((await get(sim, path, token)).status).toBe(404);
    }
    expect((await get(sim, '/api/content/v1/nothing-here', token)).status).toBe(404);
    expect((await get(sim, '/api/reference-data/corporates-nope', token)).status).toBe(404);
    const post = await fetch(`${sim.url}/api/content/v1/meal-plans`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(post.status).toBe(405);
    for (const path of ['/api/content/v1/properties', PROPERTY('900001'), '/api/content/v1/meal-plans', '/api/reference-data/property-kinds']) {
      expect((await get(sim, path, undefined)).status).toBe(401);
    }
  });

  it('data is deterministic by seed', async () => {
    const a = await startSimulator({ seed: 9, properties: [{ id: '77', bookingCount: 5 }], contentOnlyProperties: 3 });
    const b = await startSimulator({ seed: 9, properties: [{ id: '77', bookingCount: 5 }], contentOnlyProperties: 3 });
    try {
      for (const id of a.propertyIds()) {
        expect(a.contentProperty(id)).toEqual(b.contentProperty(id));
        expect(a.cancellationRules(id)).toEqual(b.cancellationRules(id));
        expect(a.extraStayRules(id)).toEqual(b.extraStayRules(id));
      }
      expect(a.propertyIds()).toEqual(['77', '900001', '900002', '900003']);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('simulator content: consistency with bookings and reference lists', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({
      rateLimits: noLimits,
      properties: [
        { id: '500100', bookingCount: 300 },
        { id: '500200', bookingCount: 300 },
        { id: 'hotel-x', bookingCount: 100 },
      ],
      contentOnlyProperties: 20,
    });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('every room type, rate plan and service a booking uses exists in the served content', async () => {
    const served = new Map<string, ContentPropertyInfo>();
    for (const id of sim.propertyIds()) served.set(id, await getJson<ContentPropertyInfo>(sim, PROPERTY(id), token));
    let checked = 0;
    for (const b of sim.bookings()) {
      const p = served.get(b.propertyId)!;
      const roomTypes = new Map(p.roomTypes.map((r) => [r.id, r]));
      const ratePlans = new Set(p.ratePlans.map((r) => r.id));
      const services = new Map(p.services.map((s) => [s.id, s]));
      expect(b.currencyCode).toBe(p.currency);
      for (const rs of b.roomStays) {
        expect(roomTypes.get(rs.roomType.id)?.name).toBe(rs.roomType.name);
        for (const rp of rs.ratePlans) expect(ratePlans.has(rp.id)).toBe(true);
        for (const d of rs.dailyRates) expect(ratePlans.has(d.ratePlanId)).toBe(true);
        for (const s of rs.services ?? []) {
          const svc = services.get(s.id);
          expect(svc?.kind).toBe(s.kind);
          expect(svc?.name).toBe(s.name);
          if (s.kind === 'Meal') expect(svc?.mealPlanCode).toBe(s.mealPlanCode);
        }
        expect(rs.stayDates.arrivalDateTime.slice(11)).toBe(p.policy.checkInTime);
        expect(rs.stayDates.departureDateTime.slice(11)).toBe(p.policy.checkOutTime);
      }
      for (const s of b.services ?? []) expect(services.get(s.id)?.kind).toBe('Common');
      checked++;
    }
    expect(checked).toBe(700);
  });

  it('rate plans reference existing rules; rules have the documented shapes', async () => {
    for (const id of sim.propertyIds()) {
      const p = sim.contentProperty(id);
      const { cancellationRules } = await getJson<{ cancellationRules: CancellationRule[] }>(sim, `${PROPERTY(id)}/cancellation-rules`, token);
      const { extraStayRules } = await getJson<{ extraStayRules: ExtraStayRule[] }>(sim, `${PROPERTY(id)}/extra-stay-rules`, token);
      expect(cancellationRules).toEqual(sim.cancellationRules(id));
      expect(extraStayRules).toEqual(sim.extraStayRules(id));
      const cr = new Set(cancellationRules.map((r) => r.id));
      const er = new Set(extraStayRules.map((r) => r.id));
      for (const rp of p.ratePlans) {
        expect(cr.has(rp.cancellationRuleId)).toBe(true);
        if (rp.extraStayRuleId != null) expect(er.has(rp.extraStayRuleId)).toBe(true);
        expect(rp.currency).toBe(p.currency);
      }
      // Every rule served is used by some rate plan.
      expect([...cr].every((r) => p.ratePlans.some((rp) => rp.cancellationRuleId === r))).toBe(true);
      for (const rule of cancellationRules) {
        expect(rule.propertyId).toBe(id);
        expect(rule.referencePointTime === null).toBe(rule.referencePointKind !== 'CustomArrivalTime');
        for (const t of rule.cancellationTerms) {
          expect(['NoMatter', 'AtLeast', 'NoMoreThan', 'Between']).toContain(t.beforeArrivalMatching);
          expect(t.beforeArrivalUnit === 'None').toBe(t.beforeArrivalMatching === 'NoMatter');
          expect('beforeArrivalValueMax' in t).toBe(t.beforeArrivalMatching === 'Between');
          expect(['PrepaymentPercent', 'FirstNights', 'NoPenalty', 'FirstNightPercent']).toContain(t.penaltyCalculationMethod);
          expect(t.penaltyValueCurrency).toBe(p.currency);
          for (const d of t.arrivalDates ?? []) {
            expect(d.startDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
            expect(d.endDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
            expect(typeof d.isEndless).toBe('boolean');
          }
        }
      }
      for (const rule of extraStayRules) {
        expect(rule.propertyId).toBe(id);
        const early = rule.earlyCheckInPeriods;
        const late = rule.lateCheckOutPeriods;
        expect(early[0]!.startTime).toBe('00:00');
        expect(early.at(-1)!.endTime).toBe(rule.checkInTime);
        expect(late[0]!.startTime).toBe(rule.checkOutTime);
        expect(late.at(-1)!.endTime).toBe('24:00');
        for (const periods of [early, late]) {
          for (let i = 1; i < periods.length; i++) expect(periods[i]!.startTime).toBe(periods[i - 1]!.endTime);
          for (const period of periods) {
            expect(period.rates.length > 0).toBe(period.chargeType === 'Fixed' || period.chargeType === 'HourlyRate');
            expect(period.percentOptions !== undefined).toBe(period.chargeType === 'Percent');
            for (const r of period.rates) expect(r.currency).toBe(p.currency);
            expect(typeof period.occupyQuota).toBe('boolean');
          }
        }
        expect(rule.overridesPropertyCheckInTime).toBe(rule.checkInTime !== p.policy.checkInTime);
      }
    }
  });

  it("room amenity categories in the specification's flat shape on demand: one entry per amenity with its group", async () => {
    sim.faults.roomAmenityCategoriesShape = 'flat';
    try {
      const flat = await getJson<{ group: string; code: string; name: string }[]>(sim, '/api/content/v1/room-amenity-categories', token);
      expect(flat).toEqual(sim.referenceLists().roomAmenityCategories.flatMap((c) => c.amenities.map((a) => ({ group: c.name, code: a.code, name: a.name }))));
      for (const e of flat) expect(Object.keys(e)).toEqual(['group', 'code', 'name']);
    } finally {
      sim.faults.roomAmenityCategoriesShape = 'nested';
    }
  });

  it('reference lists have the documented shapes and the content uses only their codes', async () => {
    const lists = sim.referenceLists();
    const mealPlans = await getJson<unknown>(sim, '/api/content/v1/meal-plans', token);
    const categories = await getJson<unknown>(sim, '/api/content/v1/room-type-categories', token);
    const amenityCategories = await getJson<unknown>(sim, '/api/content/v1/room-amenity-categories', token);
    const paymentMethods = await getJson<Record<string, unknown>>(sim, '/api/reference-data/payment-methods', token);
    const amenityTypes = await getJson<Record<string, unknown>>(sim, '/api/reference-data/property-amenity-types', token);
    const kinds = await getJson<Record<string, unknown>>(sim, '/api/reference-data/property-kinds', token, { languageCode: 'en' });
    expect(mealPlans).toEqual(lists.mealPlans);
    expect(categories).toEqual(lists.roomTypeCategories);
    expect(amenityCategories).toEqual(lists.roomAmenityCategories);
    expect(paymentMethods).toEqual({ paymentMethods: lists.paymentMethods });
    expect(amenityTypes).toEqual({ amenityTypes: lists.amenityTypes });
    expect(kinds).toEqual({ propertyKinds: lists.propertyKinds });

    for (const m of lists.mealPlans) expect(Object.keys(m)).toEqual(['code', 'name']);
    for (const c of lists.roomTypeCategories) expect(Object.keys(c)).toEqual(['code', 'name']);
    for (const c of lists.roomAmenityCategories) {
      expect(Object.keys(c)).toEqual(['name', 'amenities']);
      for (const a of c.amenities) expect(Object.keys(a)).toEqual(['code', 'name']);
    }
    expect(lists.paymentMethods.map((p) => p.code).sort()).toEqual(['AtArrival', 'BankCard', 'BankCardGuarantee', 'SBP']);
    for (const p of lists.paymentMethods) expect(['Cash', 'Prepay']).toContain(p.type);
    for (const t of lists.amenityTypes) expect(Object.keys(t)).toEqual(['code', 'displayName', 'chargeTypeApplicable']);
    for (const k of lists.propertyKinds) {
      expect(Object.keys(k)).toEqual(['id', 'displayName', 'propertyKindType']);
      expect(Number.isInteger(k.id)).toBe(true);
    }

    const mealNames = new Map(lists.mealPlans.map((m) => [m.code, m.name]));
    const categoryNames = new Map(lists.roomTypeCategories.map((c) => [c.code, c.name]));
    const roomAmenities = new Map(lists.roomAmenityCategories.flatMap((c) => c.amenities.map((a) => [a.code, a.name])));
    const amenityTypeByCode = new Map(lists.amenityTypes.map((t) => [t.code, t]));
    const kindIds = new Set(lists.propertyKinds.map((k) => k.id));
    const duplicated = new Set<string>();
    for (const id of sim.propertyIds()) {
      const p = sim.contentProperty(id);
      expect(kindIds.has(p.propertyKindId!)).toBe(true);
      expect(['NightRate', 'DailyRate']).toContain(p.stayUnitKind);
      expect(p.contactInfo.address.countryCode).toMatch(/^[A-Z]{3}$/);
      expect(p.timeZone.id).toMatch(/^[A-Za-z]+\/[A-Za-z_]+$/);
      for (const rt of p.roomTypes) {
        expect(categoryNames.get(rt.categoryCode)).toBe(rt.categoryName);
        for (const a of rt.amenities ?? []) expect(roomAmenities.get(a.code)).toBe(a.name);
        expect(rt.placements.length).toBeGreaterThan(0);
      }
      for (const s of p.services) {
        if (s.kind === 'Meal') expect(mealNames.get(s.mealPlanCode!)).toBe(s.mealPlanName);
        else expect([s.mealPlanCode, s.mealPlanName]).toEqual([null, null]);
      }
      const seen = new Set<string>();
      for (const a of p.amenities) {
        const t = amenityTypeByCode.get(a.code);
        expect(t).toBeDefined();
        expect(a.chargeType === 'None').toBe(!t!.chargeTypeApplicable);
        expect(['None', 'Free', 'Chargeable']).toContain(a.chargeType);
        if (seen.has(a.code)) {
          expect(['swimming_pool', 'restaurant']).toContain(a.code);
          duplicated.add(a.code);
        }
        seen.add(a.code);
      }
    }
    // Over 23 properties some repeat swimming_pool or restaurant, as real ones do.
    expect(duplicated.size).toBeGreaterThan(0);
    // The accessor hands out copies.
    lists.mealPlans.length = 0;
    expect(sim.referenceLists().mealPlans.length).toBeGreaterThan(0);
  });
});

describe('simulator content: edits, new properties and malformed faults', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: noLimits, properties: [{ id: '500100', bookingCount: 150 }], contentOnlyProperties: 5 });
    token = await accessToken(sim);
  });
  afterEach(() => sim.faults.malformedPropertyIds.clear());
  afterAll(() => sim.close());

  const listed = async (id: string): Promise<ContentPropertyInfo> => {
    const pages = await pageProperties(sim, token, { include: 'All' });
    const found = pages.flatMap((p) => p.properties).find((p) => p.id === id);
    expect(found).toBeDefined();
    return found as ContentPropertyInfo;
  };

  it('removeRoomType hides it from the list and the single endpoint; restoreRoomType brings it back; bookings stay', async () => {
    const before = sim.contentProperty('500100');
    const bookingsBefore = sim.bookings('500100');
    const victim = before.roomTypes[1]!.id;
    sim.removeRoomType('500100', victim);
    const single = await getJson<ContentPropertyInfo>(sim, PROPERTY('500100'), token);
    expect(single.roomTypes.map((r) => r.id)).not.toContain(victim);
    expect(single.roomTypes).toHaveLength(before.roomTypes.length - 1);
    expect((await listed('500100')).roomTypes.map((r) => r.id)).not.toContain(victim);
    for (const rp of single.ratePlans) {
      for (const s of rp.availableServices ?? []) expect(s.roomTypeIds ?? []).not.toContain(Number(victim));
    }
    expect(single).toEqual(sim.contentProperty('500100'));
    expect(sim.bookings('500100')).toEqual(bookingsBefore);

    sim.restoreRoomType('500100', victim);
    expect(await getJson<ContentPropertyInfo>(sim, PROPERTY('500100'), token)).toEqual(before);
    expect(await listed('500100')).toEqual(before);
  });

  it('removeRatePlan hides it and the rules only it referenced; renameRoomType changes the served name only', async () => {
    const before = sim.contentProperty('500100');
    const rulesBefore = sim.cancellationRules('500100');
    const plans = before.ratePlans;
    // Remove every plan using one cancellation rule: that rule is no longer served.
    const ruleId = plans[0]!.cancellationRuleId;
    const using = plans.filter((rp) => rp.cancellationRuleId === ruleId);
    for (const rp of using) sim.removeRatePlan('500100', rp.id);
    const single = await getJson<ContentPropertyInfo>(sim, PROPERTY('500100'), token);
    expect(single.ratePlans.map((r) => r.id)).toEqual(plans.filter((rp) => rp.cancellationRuleId !== ruleId).map((r) => r.id));
    const { cancellationRules } = await getJson<{ cancellationRules: CancellationRule[] }>(sim, `${PROPERTY('500100')}/cancellation-rules`, token);
    expect(cancellationRules.map((r) => r.id)).not.toContain(ruleId);
    expect(cancellationRules).toEqual(sim.cancellationRules('500100'));
    for (const rp of using) sim.restoreRatePlan('500100', rp.id);
    expect(sim.cancellationRules('500100')).toEqual(rulesBefore);

    const rt = before.roomTypes[0]!;
    const bookingsBefore = sim.bookings('500100');
    sim.renameRoomType('500100', rt.id, 'Standard Plus');
    expect((await getJson<ContentPropertyInfo>(sim, PROPERTY('500100'), token)).roomTypes[0]!.name).toBe('Standard Plus');
    expect((await listed('500100')).roomTypes[0]!.name).toBe('Standard Plus');
    expect(sim.bookings('500100')).toEqual(bookingsBefore);
    sim.renameRoomType('500100', rt.id, rt.name);
    expect(sim.contentProperty('500100')).toEqual(before);

    expect(() => sim.removeRoomType('500100', 'nope')).toThrow();
    expect(() => sim.removeRatePlan('nope', plans[0]!.id)).toThrow();
    expect(() => sim.contentProperty('nope')).toThrow();
  });

  it('addProperty: the new property is listed in id order, served, and has bookings', async () => {
    sim.addProperty({ id: '600000', bookingCount: 40 });
    expect(() => sim.addProperty({ id: '600000', bookingCount: 1 })).toThrow();
    const ids = (await pageProperties(sim, token, { count: '2' })).flatMap((p) => p.properties.map((x) => x.id));
    expect(ids).toEqual(['500100', '600000', '900001', '900002', '900003', '900004', '900005']);
    const p = await getJson<ContentPropertyInfo>(sim, PROPERTY('600000'), token);
    expect(p).toEqual(sim.contentProperty('600000'));
    const page = await getJson<{ bookingSummaries: { number: string }[] }>(sim, '/api/read-reservation/v1/properties/600000/bookings', token);
    expect(page.bookingSummaries).toHaveLength(40);
    const roomTypeIds = new Set(p.roomTypes.map((r) => r.id));
    for (const b of sim.bookings('600000')) for (const rs of b.roomStays) expect(roomTypeIds.has(rs.roomType.id)).toBe(true);
    // Ids of the new property's content do not collide with the others'.
    const other = sim.contentProperty('500100');
    expect(p.roomTypes.some((r) => other.roomTypes.some((o) => o.id === r.id))).toBe(false);
  });

  it('a malformed property is served with a schema-breaking body in the list and the single endpoint', async () => {
    sim.faults.malformedPropertyIds.add('900002');
    for (const body of [
      await getJson<Record<string, unknown>>(sim, PROPERTY('900002'), token),
      (await listed('900002')) as unknown as Record<string, unknown>,
    ]) {
      expect(body['ratePlans']).toBe('n/a');
      expect(typeof body['name']).toBe('number');
      expect(body['id']).toBe('900002');
    }
    // Others are unaffected, the id-only list is unaffected, and the truth stays clean.
    expect(await getJson<ContentPropertyInfo>(sim, PROPERTY('900003'), token)).toEqual(sim.contentProperty('900003'));
    const ids = await getJson<ContentPropertyPage>(sim, '/api/content/v1/properties', token);
    expect(ids.properties.find((p) => p.id === '900002')).toEqual({ id: '900002' });
    expect(Array.isArray(sim.contentProperty('900002').ratePlans)).toBe(true);
    sim.faults.malformedPropertyIds.clear();
    expect(await getJson<ContentPropertyInfo>(sim, PROPERTY('900002'), token)).toEqual(sim.contentProperty('900002'));
  });
});

describe('simulator content: standard rate-limit scope and faults', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({
      now: () => t,
      properties: [{ id: '500100', bookingCount: 10 }],
      rateLimits: {
        standard: [
          { limit: 3, windowMs: 1000 },
          { limit: 5, windowMs: 10_000 },
        ],
      },
    });
    token = await accessToken(sim);
  });
  afterEach(() => {
    sim.faults.error5xxRate = 0;
    sim.faults.spurious429Rate = 0;
  });
  afterAll(() => sim.close());

  it('content and reference endpoints share the standard scope: 429 with retry-after and headers', async () => {
    const paths = ['/api/content/v1/properties', '/api/reference-data/payment-methods', PROPERTY('500100')];
    const seen: (string | null)[][] = [];
    for (const path of paths) {
      const res = await get(sim, path, token);
      expect(res.status).toBe(200);
      seen.push(remainingHeaders(res));
    }
    expect(seen).toEqual([
      ['2', '4', null],
      ['1', '3', null],
      ['0', '2', null],
    ]);
    const rejected = await get(sim, '/api/content/v1/meal-plans', token);
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get('retry-after')).toBe('1');
    expect(remainingHeaders(rejected)).toEqual(['0', '2', null]);
    expect(sim.stats.accepted['standard']).toBe(3);
    // Booking endpoints have their own scopes.
    expect((await get(sim, '/api/read-reservation/v1/properties/500100/bookings', token)).status).toBe(200);

    t += 1000;
    expect((await get(sim, `${PROPERTY('500100')}/cancellation-rules`, token)).status).toBe(200);
    expect((await get(sim, `${PROPERTY('500100')}/extra-stay-rules`, token)).status).toBe(200);
    const windowFull = await get(sim, '/api/reference-data/property-kinds', token);
    expect(windowFull.status).toBe(429);
    expect(windowFull.headers.get('retry-after')).toBe('9');
    expect(remainingHeaders(windowFull)).toEqual(['1', '0', null]);
    expect(sim.stats.accepted['standard']).toBe(5);
  });

  it('injected 5xx and 429 faults apply to content endpoints too, not counted', async () => {
    t += 60_000;
    sim.faults.error5xxRate = 1;
    const res = await get(sim, '/api/content/v1/room-type-categories', token);
    expect([500, 503]).toContain(res.status);
    expect(res.headers.get('x-ratelimit-remaining-second')).toBe('3');
    sim.faults.error5xxRate = 0;
    sim.faults.spurious429Rate = 1;
    expect((await get(sim, '/api/content/v1/room-amenity-categories', token)).status).toBe(429);
    sim.faults.spurious429Rate = 0;
    expect((await get(sim, '/api/content/v1/room-amenity-categories', token)).status).toBe(200);
  });
});

describe('simulator content: speed', () => {
  it('serves 500 full properties page by page in well under a second', async () => {
    const sim = await startSimulator({ rateLimits: noLimits, properties: [], contentOnlyProperties: 500 });
    try {
      const token = await accessToken(sim);
      const started = performance.now();
      const pages = await pageProperties(sim, token, { include: 'All', count: '200' });
      const elapsed = performance.now() - started;
      expect(pages.flatMap((p) => p.properties)).toHaveLength(500);
      expect(elapsed).toBeLessThan(1000);
    } finally {
      await sim.close();
    }
  });
});
