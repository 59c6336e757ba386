/**
 * Conformance of the content and reference-data mirror with the provider's OpenAPI document:
 * property pages, cancellation and extra-stay rules and the six reference lists, generated
 * from the document, are served over HTTP and read by the daemon's content refresh into a
 * real PostgreSQL, refresh after refresh; every typed column is compared with the payload it
 * came from, and nothing spec-valid may be quarantined.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { refreshContent } from '../../src/sync/streams/content.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { byKey, calendarDate, Checks, connect, MISSING, rowsOf, textOf, type Kind, type Row } from './checks.js';
import { generate, MODES, withValue, type Operation, type Payload } from './generator.js';
import { startConformanceProvider, unlimited, type ConformanceProvider } from './provider.js';

type Any = any;

const CONTENT = '/api/content/v1';
const REFERENCE = '/api/reference-data';
const never = new AbortController().signal;
const list = (v: unknown): Any[] => (Array.isArray(v) ? v : []);

let provider: ConformanceProvider | undefined;
let h: Harness | undefined;
let client: pg.Client | undefined;
afterEach(async () => {
  await client?.end();
  await h?.close();
  await provider?.close();
  client = h = provider = undefined;
});

/** The entries of `items` by key, the last occurrence of a key winning (as a second write would). */
function lastBy<T>(items: readonly T[], key: (x: T) => string | null): Map<string, T> {
  const out = new Map<string, T>();
  for (const x of items) {
    const k = key(x);
    if (k !== null) out.set(k, x);
  }
  return out;
}

type Cols = [string, Kind, unknown][];

/** The typed columns of each keyed entry. */
function typedRows(entries: Map<string, Any>, cols: (x: Any) => Cols): Map<string, Cols> {
  const out = new Map<string, Cols>();
  for (const [k, x] of entries) out.set(k, cols(x));
  return out;
}

/** The reference lists: where each is served, its typed table, and the rows it must give. */
const referenceLists: {
  name: string;
  op: Operation;
  path: string;
  table: string;
  key: string;
  /** The typed rows, by key; null when the list was not sent (the table keeps what it had). */
  rows: (body: Any) => Map<string, Cols> | null;
  /** The list says nothing of some entries: its rows are added to what the table had, none removed. */
  partial?: (body: Any) => boolean;
}[] = [
  {
    name: 'mealPlans',
    op: 'mealPlans',
    path: `${CONTENT}/meal-plans`,
    table: 'meal_plans',
    key: 'code',
    rows: (b) =>
      typedRows(
        lastBy(list(b), (m) => m.code ?? null),
        (m) => [['name', 'text', m.name]],
      ),
  },
  {
    name: 'roomTypeCategories',
    op: 'roomTypeCategories',
    path: `${CONTENT}/room-type-categories`,
    table: 'room_type_categories',
    key: 'code',
    rows: (b) =>
      typedRows(
        lastBy(list(b), (m) => m.code ?? null),
        (m) => [['name', 'text', m.name]],
      ),
  },
  {
    name: 'roomAmenityCategories',
    op: 'roomAmenityCategories',
    path: `${CONTENT}/room-amenity-categories`,
    table: 'room_amenities',
    key: 'code',
    // A category whose amenities are null or absent says nothing of them.
    partial: (b) =>
      list(b).some((c) => !Array.isArray(c.amenities)) ||
      (list(b).length > 0 && !list(b).some((c) => list(c.amenities).some((a) => a.code !== null && a.code !== undefined))),
    rows: (b) => {
      const entries = list(b).flatMap((c) => list(c.amenities).map((a) => ({ ...a, category: c.name })));
      return typedRows(
        lastBy(entries, (a) => a.code ?? null),
        (a) => [
          ['name', 'text', a.name],
          ['category_name', 'text', a.category],
        ],
      );
    },
  },
  {
    name: 'paymentMethods',
    op: 'paymentMethods',
    path: `${REFERENCE}/payment-methods`,
    table: 'payment_methods',
    key: 'code',
    rows: (b) =>
      Array.isArray(b.paymentMethods)
        ? typedRows(
            lastBy(b.paymentMethods as Any[], (m) => m.code ?? null),
            (m) => [['type', 'text', m.type]],
          )
        : null,
  },
  {
    name: 'propertyAmenityTypes',
    op: 'propertyAmenityTypes',
    path: `${REFERENCE}/property-amenity-types`,
    table: 'property_amenity_types',
    key: 'code',
    rows: (b) =>
      Array.isArray(b.amenityTypes)
        ? typedRows(
            lastBy(b.amenityTypes as Any[], (m) => m.code ?? null),
            (m) => [
              ['display_name', 'text', m.displayName],
              ['charge_type_applicable', 'bool', m.chargeTypeApplicable],
            ],
          )
        : null,
  },
  {
    name: 'propertyKinds',
    op: 'propertyKinds',
    path: `${REFERENCE}/property-kinds`,
    table: 'property_kinds',
    key: 'property_kind_id',
    rows: (b) =>
      Array.isArray(b.propertyKinds)
        ? typedRows(
            lastBy(b.propertyKinds as Any[], (m) => textOf(m.id)),
            (m) => [
              ['display_name', 'text', m.displayName],
              ['property_kind_type', 'text', m.propertyKindType],
            ],
          )
        : null,
  },
];

/** One refresh's worth of generated content: reference lists, property pages, rules. */
interface Round {
  lists: Map<string, Payload>;
  pages: Payload[];
  properties: { property: Any; cancellation: Payload; extraStay: Payload }[];
}

function round(k: number): Round {
  const lists = new Map(referenceLists.map((l, i) => [l.name, generate(l.op, 100_000 * (i + 1) + k)]));
  const pageCount = k % 5 === 0 ? 2 : 1;
  const pages: Payload[] = [];
  const properties: Round['properties'] = [];
  for (let p = 0; p < pageCount; p++) {
    // Seeds step by 7 so that consecutive rounds cycle through every mode (seed % 6).
    const page = generate('propertyPage', 700_000 + 7 * k + p);
    const v = { ...page.value };
    v.properties = list(v.properties).map((prop, j) => {
      const property = { ...prop, id: `${prop.id}~${k}.${p}.${j}` };
      // Rule ids are unique within a response, as the rules of a property are.
      const cancellation = generate('cancellationRules', 800_000 + 7 * (7 * k + p) + j);
      const cv = { ...cancellation.value };
      if (Array.isArray(cv.cancellationRules)) cv.cancellationRules = cv.cancellationRules.map((r: Any, i: number) => ({ ...r, id: `${r.id}~${i}` }));
      const extraStay = generate('extraStayRules', 900_000 + 7 * (7 * k + p) + j);
      const ev = { ...extraStay.value };
      if (Array.isArray(ev.extraStayRules)) ev.extraStayRules = ev.extraStayRules.map((r: Any, i: number) => ({ ...r, id: `${r.id}~${i}` }));
      properties.push({ property, cancellation: withValue(cancellation, cv), extraStay: withValue(extraStay, ev) });
      return property;
    });
    if (p < pageCount - 1) v.next = `round-${k}-page-${p + 1}`;
    // The last page ends the list: no `next`, or a null one.
    else if (k % 2 === 0) delete v.next;
    else v.next = null;
    pages.push(withValue(page, v));
  }
  return { lists, pages, properties };
}

function serve(p: ConformanceProvider, r: Round): void {
  p.routes.clear();
  for (const l of referenceLists) p.routes.set(l.path, () => r.lists.get(l.name)!.body);
  p.routes.set(`${CONTENT}/properties`, (q) => {
    const since = q.get('since');
    const m = since === null ? 0 : /^round-\d+-page-(\d+)$/.exec(since)?.[1];
    return m === undefined ? undefined : r.pages[Number(m)]?.body;
  });
  for (const { property, cancellation, extraStay } of r.properties) {
    p.routes.set(`${CONTENT}/properties/${property.id}/cancellation-rules`, () => cancellation.body);
    p.routes.set(`${CONTENT}/properties/${property.id}/extra-stay-rules`, () => extraStay.body);
  }
}

const rowKey =
  (...cols: string[]) =>
  (r: Row) =>
    cols.map((c) => textOf(r[c])).join('/');

const addTo =
  (c: Checks) =>
  (where: string, row: Row | undefined, cols: Cols): void => {
    for (const [name, kind, expected] of cols) c.add(`${where}.${name}`, kind, row === undefined ? MISSING : row[name], expected);
  };

/**
 * The checks that need the rows as they are right after a round's refresh: the reference
 * lists (each refresh replaces them) and which properties are active (the others were
 * marked removed).
 */
async function checkRound(c: Checks, db: pg.Client, k: number, r: Round, referenceState: Map<string, Map<string, Cols>>): Promise<void> {
  const at = (what: string) => `round ${k} ${what}`;
  const add = addTo(c);
  // Reference lists: kept as sent, and their typed tables hold exactly the keyed entries.
  const kept = byKey(await rowsOf(db, 'SELECT list_name, raw FROM reference_lists'), (x) => textOf(x.list_name)!);
  for (const l of referenceLists) {
    const payload = r.lists.get(l.name)!;
    add(at(`reference_lists ${l.name}`), kept.get(l.name), [['raw', 'json', payload.body]]);
    const rows = l.rows(payload.value);
    if (rows !== null) referenceState.set(l.name, l.partial?.(payload.value) ? new Map([...(referenceState.get(l.name) ?? []), ...rows]) : rows);
    const want = referenceState.get(l.name) ?? new Map();
    const got = byKey(await rowsOf(db, `SELECT * FROM ${l.table} WHERE removed_at IS NULL`), rowKey(l.key));
    c.rowsFor(at(l.table), got, want.keys());
    for (const [key, cols] of want) add(at(`${l.table} ${JSON.stringify(key)}`), got.get(key), cols);
  }
  const active = byKey(await rowsOf(db, 'SELECT property_id FROM properties WHERE removed_at IS NULL'), rowKey('property_id'));
  c.rowsFor(
    at('active properties'),
    active,
    r.properties.map((x) => x.property.id as string),
  );
}

/**
 * The checks of every round's properties and rules, on the rows at the end: a property no
 * longer listed is marked removed but keeps its values, and its room types, rate plans,
 * services and rules stay as they were written (property ids never repeat across rounds).
 */
async function checkProperties(c: Checks, db: pg.Client, rounds: Round[]): Promise<void> {
  const q = async (table: string, ...key: string[]) => byKey(await rowsOf(db, `SELECT * FROM ${table}`), rowKey(...key));
  const add = addTo(c);
  const properties = await q('properties', 'property_id');
  const roomTypes = await q('room_types', 'property_id', 'room_type_id');
  const amenities = await q('room_type_amenities', 'property_id', 'room_type_id', 'position');
  const ratePlans = await q('rate_plans', 'property_id', 'rate_plan_id');
  const services = await q('services', 'property_id', 'service_id');
  const propertyAmenities = await q('property_amenities', 'property_id', 'position');
  const rules = await q('cancellation_rules', 'property_id', 'rule_id');
  const terms = await q('cancellation_rule_terms', 'property_id', 'rule_id', 'position');
  const arrivalDates = await q('cancellation_rule_arrival_dates', 'property_id', 'rule_id', 'term_position', 'position');
  const extraRules = await q('extra_stay_rules', 'property_id', 'rule_id');
  const periods = await q('extra_stay_rule_periods', 'property_id', 'rule_id', 'kind', 'position');
  const want = {
    properties: [] as string[],
    roomTypes: [] as string[],
    amenities: [] as string[],
    ratePlans: [] as string[],
    services: [] as string[],
    propertyAmenities: [] as string[],
    rules: [] as string[],
    terms: [] as string[],
    arrivalDates: [] as string[],
    extraRules: [] as string[],
    periods: [] as string[],
  };

  for (const [k, r] of rounds.entries()) {
    const at = (what: string) => `round ${k} ${what}`;
    for (const { property: p, cancellation, extraStay } of r.properties) {
      const id: string = p.id;
      want.properties.push(id);
      const w = (what: string) => at(`property ${JSON.stringify(id)}${what}`);
      const address = p.contactInfo?.address;
      add(w(''), properties.get(id), [
        ['name', 'text', p.name],
        ['description', 'text', p.description],
        ['currency', 'text', p.currency],
        ['stars', 'int', p.stars],
        ['stay_unit_kind', 'text', p.stayUnitKind],
        ['property_kind_id', 'int', p.propertyKindId],
        ['time_zone', 'text', p.timeZone?.id],
        ['multi_location', 'bool', p.multiLocationProperty],
        ['check_in_time', 'text', p.policy?.checkInTime],
        ['check_out_time', 'text', p.policy?.checkOutTime],
        ['country_code', 'text', address?.countryCode],
        ['region', 'text', address?.region],
        ['city_name', 'text', address?.cityName],
        ['address_line', 'text', address?.addressLine],
        ['postal_code', 'text', address?.postalCode],
        ['latitude', 'float', address?.latitude],
        ['longitude', 'float', address?.longitude],
        ['phones', 'json', JSON.stringify(list(p.contactInfo?.phones))],
        ['emails', 'json', JSON.stringify(list(p.contactInfo?.emails))],
        ['images', 'json', JSON.stringify(list(p.images))],
        ['company_details', 'json', p.companyDetails === undefined || p.companyDetails === null ? null : JSON.stringify(p.companyDetails)],
        ['raw', 'json', JSON.stringify(p)],
      ]);

      for (const [rtId, rt] of lastBy(list(p.roomTypes), (x) => x.id)) {
        want.roomTypes.push(`${id}/${rtId}`);
        add(w(` room type ${JSON.stringify(rtId)}`), roomTypes.get(`${id}/${rtId}`), [
          ['removed_at', 'instant', null],
          ['name', 'text', rt.name],
          ['description', 'text', rt.description],
          ['category_code', 'text', rt.categoryCode],
          ['category_name', 'text', rt.categoryName],
          ['size_value', 'numeric', rt.size?.value],
          ['adult_beds', 'int', rt.occupancy?.adultBed],
          ['extra_beds', 'int', rt.occupancy?.extraBed],
          ['position', 'int', rt.position],
          ['raw', 'json', JSON.stringify(rt)],
        ]);
        list(rt.amenities).forEach((a, position) => {
          want.amenities.push(`${id}/${rtId}/${position}`);
          add(w(` room type ${JSON.stringify(rtId)} amenity ${position}`), amenities.get(`${id}/${rtId}/${position}`), [
            ['code', 'text', a.code],
            ['name', 'text', a.name],
          ]);
        });
      }
      for (const [rpId, rp] of lastBy(list(p.ratePlans), (x) => x.id)) {
        want.ratePlans.push(`${id}/${rpId}`);
        add(w(` rate plan ${JSON.stringify(rpId)}`), ratePlans.get(`${id}/${rpId}`), [
          ['removed_at', 'instant', null],
          ['name', 'text', rp.name],
          ['description', 'text', rp.description],
          ['currency', 'text', rp.currency],
          ['cancellation_rule_id', 'text', rp.cancellationRuleId],
          ['extra_stay_rule_id', 'text', rp.extraStayRuleId],
          ['corporate_only', 'bool', rp.corporateOnly],
          ['stay_with_children_only', 'bool', rp.isStayWithChildrenOnly],
          ['vat_applicable', 'bool', rp.vat?.applicable],
          ['vat_included', 'bool', rp.vat?.included],
          ['vat_percent', 'numeric', rp.vat?.percent],
          ['raw', 'json', JSON.stringify(rp)],
        ]);
      }
      for (const [sId, s] of lastBy(list(p.services), (x) => x.id)) {
        want.services.push(`${id}/${sId}`);
        add(w(` service ${JSON.stringify(sId)}`), services.get(`${id}/${sId}`), [
          ['removed_at', 'instant', null],
          ['name', 'text', s.name],
          ['description', 'text', s.description],
          ['kind', 'text', s.kind],
          ['meal_plan_code', 'text', s.mealPlanCode],
          ['meal_plan_name', 'text', s.mealPlanName],
          ['status', 'text', s.status],
          ['raw', 'json', JSON.stringify(s)],
        ]);
      }
      list(p.amenities).forEach((a, position) => {
        want.propertyAmenities.push(`${id}/${position}`);
        add(w(` amenity ${position}`), propertyAmenities.get(`${id}/${position}`), [
          ['code', 'text', a.code],
          ['display_name', 'text', a.displayName],
          ['charge_type', 'text', a.chargeType],
        ]);
      });

      for (const rule of list(cancellation.value.cancellationRules)) {
        const rk = `${id}/${rule.id}`;
        want.rules.push(rk);
        const ruleTerms = list(rule.cancellationTerms);
        add(w(` cancellation rule ${JSON.stringify(rule.id)}`), rules.get(rk), [
          ['removed_at', 'instant', null],
          ['reference_point_kind', 'text', rule.referencePointKind],
          ['reference_point_time', 'text', rule.referencePointTime],
          ['is_free', 'bool', ruleTerms.length === 0],
          ['raw', 'json', JSON.stringify(rule)],
        ]);
        ruleTerms.forEach((t, position) => {
          want.terms.push(`${rk}/${position}`);
          add(w(` cancellation rule ${JSON.stringify(rule.id)} term ${position}`), terms.get(`${rk}/${position}`), [
            ['before_arrival_matching', 'text', t.beforeArrivalMatching],
            ['before_arrival_unit', 'text', t.beforeArrivalUnit],
            ['before_arrival_value', 'int', t.beforeArrivalValue],
            ['before_arrival_value_max', 'int', t.beforeArrivalValueMax],
            ['penalty_calculation_method', 'text', t.penaltyCalculationMethod],
            ['penalty_value', 'numeric', t.penaltyValue],
            ['penalty_value_currency', 'text', t.penaltyValueCurrency],
          ]);
          list(t.arrivalDates).forEach((d, dp) => {
            want.arrivalDates.push(`${rk}/${position}/${dp}`);
            add(w(` cancellation rule ${JSON.stringify(rule.id)} term ${position} arrival dates ${dp}`), arrivalDates.get(`${rk}/${position}/${dp}`), [
              ['start_date', 'date', calendarDate(d.startDate)],
              ['end_date', 'date', calendarDate(d.endDate)],
              ['is_endless', 'bool', d.isEndless],
            ]);
          });
        });
      }
      for (const rule of list(extraStay.value.extraStayRules)) {
        const rk = `${id}/${rule.id}`;
        want.extraRules.push(rk);
        add(w(` extra-stay rule ${JSON.stringify(rule.id)}`), extraRules.get(rk), [
          ['removed_at', 'instant', null],
          ['check_in_time', 'text', rule.checkInTime],
          ['overrides_property_check_in_time', 'bool', rule.overridesPropertyCheckInTime],
          ['check_out_time', 'text', rule.checkOutTime],
          ['overrides_property_check_out_time', 'bool', rule.overridesPropertyCheckOutTime],
          ['raw', 'json', JSON.stringify(rule)],
        ]);
        const kinds: [string, Any[]][] = [
          ['early_check_in', list(rule.earlyCheckInPeriods)],
          ['late_check_out', list(rule.lateCheckOutPeriods)],
        ];
        for (const [kind, items] of kinds) {
          items.forEach((period, position) => {
            const pk = `${rk}/${kind}/${position}`;
            want.periods.push(pk);
            add(w(` extra-stay rule ${JSON.stringify(rule.id)} ${kind} ${position}`), periods.get(pk), [
              ['start_time', 'text', period.startTime],
              ['end_time', 'text', period.endTime],
              ['charge_type', 'text', period.chargeType],
              ['occupy_quota', 'bool', period.occupyQuota],
              ['percentage', 'numeric', period.percentOptions?.percentage],
              ['extra_placement_enabled', 'bool', period.percentOptions?.extraPlacementEnabled],
              ['extra_service_option', 'text', period.percentOptions?.extraServiceOption],
              ['rates', 'json', JSON.stringify(list(period.rates))],
            ]);
          });
        }
      }
    }
  }
  c.rowsFor('properties', properties, want.properties);
  c.rowsFor('room_types', roomTypes, want.roomTypes);
  c.rowsFor('room_type_amenities', amenities, want.amenities);
  c.rowsFor('rate_plans', ratePlans, want.ratePlans);
  c.rowsFor('services', services, want.services);
  c.rowsFor('property_amenities', propertyAmenities, want.propertyAmenities);
  c.rowsFor('cancellation_rules', rules, want.rules);
  c.rowsFor('cancellation_rule_terms', terms, want.terms);
  c.rowsFor('cancellation_rule_arrival_dates', arrivalDates, want.arrivalDates);
  c.rowsFor('extra_stay_rules', extraRules, want.extraRules);
  c.rowsFor('extra_stay_rule_periods', periods, want.periods);
}

describe('conformance with the OpenAPI document: content and reference data', () => {
  it('mirrors every generated property page, rules response and reference list, typed columns equal to the payloads, none quarantined', async () => {
    provider = await startConformanceProvider();
    h = await startHarness({
      // The project's simulator is not asked anything here: it starts with nothing to generate.
      sim: { properties: [{ id: '1', bookingCount: 0 }] },
      config: { provider: { url: provider.url, referenceDataUrl: provider.url }, rateLimits: unlimited },
    });
    await h.migrate();
    client = await connect(h.dbUrl, h.schema);
    const ctx = await h.context();

    const ROUNDS = 100;
    const checks = new Checks();
    const referenceState = new Map<string, Map<string, Cols>>();
    const counts = { pages: 0, properties: 0, modes: new Set<string>() };
    const rounds: Round[] = [];
    for (let k = 0; k < ROUNDS; k++) {
      const r = round(k);
      rounds.push(r);
      serve(provider, r);
      const result = await refreshContent(ctx, never);
      expect(result, `round ${k}`).toMatchObject({ quarantined: 0, properties: r.properties.length });
      await checkRound(checks, client, k, r, referenceState);
      counts.pages += r.pages.length;
      counts.properties += r.properties.length;
      for (const p of r.pages) counts.modes.add(p.mode.name);
    }
    await checkProperties(checks, client, rounds);
    const q = await client.query<{ stream: string; entity_key: string | null; reason: string }>(
      'SELECT stream, entity_key, reason FROM quarantine ORDER BY id',
    );
    expect(q.rows.map((x) => `${x.stream} ${x.entity_key}: ${x.reason}`)).toEqual([]);
    expect(counts.pages).toBeGreaterThanOrEqual(ROUNDS);
    expect(counts.properties).toBeGreaterThanOrEqual(100);
    expect(counts.modes).toEqual(new Set(MODES.map((m) => m.name)));
    expect(await checks.mismatches(client)).toEqual([]);
  });
});
