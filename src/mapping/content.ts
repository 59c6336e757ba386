/**
 * Content and reference data as rows: a property with its room types (and their amenities),
 * rate plans, services and amenities; cancellation and extra-stay rules with their children;
 * the reference lists (where each is read, and how its body becomes the rows of its table).
 * Pure: no I/O. The content refresh writes what these give, and the replay (src/replay)
 * derives the same rows again from the payloads the mirror keeps.
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import {
  mealPlansSchema,
  parseWith,
  paymentMethodsSchema,
  propertyAmenityTypesSchema,
  propertyKindsSchema,
  roomAmenityCategoriesSchema,
  roomTypeCategoriesSchema,
  type CancellationRule,
  type ContentProperty,
  type ExtraStayRule,
} from '../provider/schemas/content.js';

/** The content hash of a row: a refresh rewrites a row only when it changed. */
export const hashOf = (raw: unknown): string => createHash('sha256').update(JSON.stringify(raw)).digest('base64url');

/** A row of a content table, column by column (JSON values as objects: the writer serializes them). */
export type Row = Record<string, unknown>;

/** The typed tables of the reference lists (each with removal: an entry no longer listed is marked removed). */
export type ReferenceTable = 'meal_plans' | 'room_type_categories' | 'room_amenities' | 'payment_methods' | 'property_amenity_types' | 'property_kinds';

// ------------------------------------------------------------------ reference lists

/** A reference list: where it is read, and how its body becomes the rows of its typed table. */
export interface ReferenceListDef {
  name: string;
  base: 'provider' | 'referenceData';
  path: string;
  /**
   * The body validated and mapped: the entries that have a key, or rows null when the
   * provider sent no list at all (null), which removes nothing. `partial`: the rows are not the
   * whole list (the answer says nothing of some entries): written, and nothing marked removed.
   */
  read(body: unknown): { ok: true; table: ReferenceTable; rows: Row[] | null; partial?: boolean } | { ok: false; reason: string };
}

function referenceListDef<S extends z.ZodType>(
  name: string,
  base: 'provider' | 'referenceData',
  path: string,
  schema: S,
  toRows: (parsed: z.output<S>) => { table: ReferenceTable; rows: Row[] | null; partial?: boolean } | { ok: false; reason: string },
): ReferenceListDef {
  return {
    name,
    base,
    path,
    read(body) {
      const parsed = parseWith(schema, body, name);
      if (!parsed.ok) return parsed;
      const mapped = toRows(parsed.value);
      return 'ok' in mapped ? mapped : { ok: true, ...mapped };
    },
  };
}

const coded = <T extends { code: string | null }>(items: readonly T[]) => items.filter((m): m is T & { code: string } => m.code !== null);

/**
 * The room amenities of a room-amenity-categories answer, whichever shape each entry has: a
 * category with its amenities (the OpenAPI document) or an amenity with its group (the
 * specification). An entry of neither shape refuses the answer (it is quarantined, and nothing
 * is marked removed). The rows are `partial` when the answer says nothing of some amenities: a
 * category whose amenities are null or absent (the document allows both), or entries that give
 * none a code.
 */
function roomAmenityRows(
  v: z.output<typeof roomAmenityCategoriesSchema>,
): { table: ReferenceTable; rows: Row[] | null; partial?: boolean } | { ok: false; reason: string } {
  if (v === null) return { table: 'room_amenities', rows: null };
  const byCode = new Map<string, Row>();
  let partial = false;
  for (const [i, entry] of v.entries()) {
    if (entry.amenities) {
      for (const a of coded(entry.amenities)) byCode.set(a.code, { code: a.code, name: a.name, category_name: entry.name });
    } else if (entry.code !== null || entry.group !== null) {
      if (entry.code !== null) byCode.set(entry.code, { code: entry.code, name: entry.name, category_name: entry.group });
    } else if ('amenities' in entry || entry.name !== null) {
      // A category whose amenities are null or absent: nothing said of them.
      partial = true;
    } else {
      return {
        ok: false,
        reason: `roomAmenityCategories[${i}]: neither a category with its amenities ({name, amenities}) nor an amenity of a group ({group, code, name})`,
      };
    }
  }
  if (v.length > 0 && byCode.size === 0) partial = true;
  return { table: 'room_amenities', rows: [...byCode.values()], ...(partial ? { partial } : {}) };
}

/** Every reference list, in the order a refresh reads them. */
export const REFERENCE_LISTS: readonly ReferenceListDef[] = [
  referenceListDef('mealPlans', 'provider', '/api/content/v1/meal-plans', mealPlansSchema, (v) => ({
    table: 'meal_plans',
    rows: v && coded(v).map((m) => ({ code: m.code, name: m.name })),
  })),
  referenceListDef('roomTypeCategories', 'provider', '/api/content/v1/room-type-categories', roomTypeCategoriesSchema, (v) => ({
    table: 'room_type_categories',
    rows: v && coded(v).map((m) => ({ code: m.code, name: m.name })),
  })),
  referenceListDef('roomAmenityCategories', 'provider', '/api/content/v1/room-amenity-categories', roomAmenityCategoriesSchema, roomAmenityRows),
  referenceListDef('paymentMethods', 'referenceData', '/api/reference-data/payment-methods', paymentMethodsSchema, (v) => ({
    table: 'payment_methods',
    rows: v.paymentMethods ? coded(v.paymentMethods).map((m) => ({ code: m.code, type: m.type })) : null,
  })),
  referenceListDef('propertyAmenityTypes', 'referenceData', '/api/reference-data/property-amenity-types', propertyAmenityTypesSchema, (v) => ({
    table: 'property_amenity_types',
    rows: v.amenityTypes
      ? coded(v.amenityTypes).map((m) => ({ code: m.code, display_name: m.displayName, charge_type_applicable: m.chargeTypeApplicable }))
      : null,
  })),
  referenceListDef('propertyKinds', 'referenceData', '/api/reference-data/property-kinds', propertyKindsSchema, (v) => ({
    table: 'property_kinds',
    rows: v.propertyKinds
      ? v.propertyKinds
          .filter((m) => m.id !== null)
          .map((m) => ({ property_kind_id: m.id, display_name: m.displayName, property_kind_type: m.propertyKindType }))
      : null,
  })),
];

// ------------------------------------------------------------------ properties

/** The rows of one property: the property itself, its room types (with their amenities), rate plans, services and amenities. */
export interface PropertyRows {
  property: Row;
  roomTypes: Row[];
  /** Per room type, in payload order (an id listed twice appears twice; the last one wins). */
  roomTypeAmenities: { roomTypeId: string; rows: Row[] }[];
  ratePlans: Row[];
  services: Row[];
  amenities: Row[];
}

/** Maps a validated property (and the body as received) to its rows. Pure. */
export function propertyRows(p: ContentProperty, raw: unknown): PropertyRows {
  const propertyId = p.id;
  const address = p.contactInfo?.address;
  return {
    property: {
      property_id: propertyId,
      name: p.name,
      description: p.description,
      currency: p.currency,
      stars: p.stars,
      stay_unit_kind: p.stayUnitKind,
      property_kind_id: p.propertyKindId,
      time_zone: p.timeZone?.id ?? null,
      multi_location: p.multiLocationProperty,
      check_in_time: p.policy?.checkInTime ?? null,
      check_out_time: p.policy?.checkOutTime ?? null,
      country_code: address?.countryCode ?? null,
      region: address?.region ?? null,
      city_name: address?.cityName ?? null,
      address_line: address?.addressLine ?? null,
      postal_code: address?.postalCode ?? null,
      latitude: address?.latitude ?? null,
      longitude: address?.longitude ?? null,
      phones: p.contactInfo?.phones ?? [],
      emails: p.contactInfo?.emails ?? [],
      images: p.images,
      company_details: p.companyDetails,
      raw,
      content_hash: hashOf(raw),
    },
    roomTypes: p.roomTypes.map((r) => ({
      property_id: propertyId,
      room_type_id: r.id,
      name: r.name,
      description: r.description,
      category_code: r.categoryCode,
      category_name: r.categoryName,
      size_value: r.size?.value ?? null,
      adult_beds: r.occupancy?.adultBed ?? null,
      extra_beds: r.occupancy?.extraBed ?? null,
      position: r.position,
      raw: r,
      content_hash: hashOf(r),
    })),
    roomTypeAmenities: p.roomTypes.map((r) => ({
      roomTypeId: r.id,
      rows: r.amenities.map((a, position) => ({ property_id: propertyId, room_type_id: r.id, position, code: a.code, name: a.name })),
    })),
    ratePlans: p.ratePlans.map((r) => ({
      property_id: propertyId,
      rate_plan_id: r.id,
      name: r.name,
      description: r.description,
      currency: r.currency,
      cancellation_rule_id: r.cancellationRuleId,
      extra_stay_rule_id: r.extraStayRuleId,
      corporate_only: r.corporateOnly,
      stay_with_children_only: r.isStayWithChildrenOnly,
      vat_applicable: r.vat?.applicable ?? null,
      vat_included: r.vat?.included ?? null,
      vat_percent: r.vat?.percent ?? null,
      raw: r,
      content_hash: hashOf(r),
    })),
    services: p.services.map((s) => ({
      property_id: propertyId,
      service_id: s.id,
      name: s.name,
      description: s.description,
      kind: s.kind,
      meal_plan_code: s.mealPlanCode,
      meal_plan_name: s.mealPlanName,
      status: s.status,
      raw: s,
      content_hash: hashOf(s),
    })),
    amenities: p.amenities.map((a, position) => ({ property_id: propertyId, position, code: a.code, display_name: a.displayName, charge_type: a.chargeType })),
  };
}

// ------------------------------------------------------------------ rules

/** A cancellation rule's rows: the rule, its terms and their arrival date ranges. Pure. */
export function cancellationRuleRows(propertyId: string, r: CancellationRule): { rule: Row; terms: Row[]; arrivalDates: Row[] } {
  const match = { property_id: propertyId, rule_id: r.id };
  return {
    rule: {
      property_id: propertyId,
      rule_id: r.id,
      reference_point_kind: r.referencePointKind,
      reference_point_time: r.referencePointTime,
      is_free: r.cancellationTerms.length === 0,
      raw: r,
      content_hash: hashOf(r),
    },
    terms: r.cancellationTerms.map((t, position) => ({
      ...match,
      position,
      before_arrival_matching: t.beforeArrivalMatching,
      before_arrival_unit: t.beforeArrivalUnit,
      before_arrival_value: t.beforeArrivalValue,
      before_arrival_value_max: t.beforeArrivalValueMax,
      penalty_calculation_method: t.penaltyCalculationMethod,
      penalty_value: t.penaltyValue,
      penalty_value_currency: t.penaltyValueCurrency,
    })),
    arrivalDates: r.cancellationTerms.flatMap((t, termPosition) =>
      t.arrivalDates.map((d, position) => ({
        ...match,
        term_position: termPosition,
        position,
        start_date: d.startDate,
        end_date: d.endDate,
        is_endless: d.isEndless,
      })),
    ),
  };
}

/** An extra-stay rule's rows: the rule and its early check-in and late check-out periods. Pure. */
export function extraStayRuleRows(propertyId: string, r: ExtraStayRule): { rule: Row; periods: Row[] } {
  const match = { property_id: propertyId, rule_id: r.id };
  const periods = [
    ...r.earlyCheckInPeriods.map((p, position) => ({ kind: 'early_check_in', position, p })),
    ...r.lateCheckOutPeriods.map((p, position) => ({ kind: 'late_check_out', position, p })),
  ];
  return {
    rule: {
      property_id: propertyId,
      rule_id: r.id,
      check_in_time: r.checkInTime,
      overrides_property_check_in_time: r.overridesPropertyCheckInTime,
      check_out_time: r.checkOutTime,
      overrides_property_check_out_time: r.overridesPropertyCheckOutTime,
      raw: r,
      content_hash: hashOf(r),
    },
    periods: periods.map(({ kind, position, p }) => ({
      ...match,
      kind,
      position,
      start_time: p.startTime,
      end_time: p.endTime,
      charge_type: p.chargeType,
      occupy_quota: p.occupyQuota,
      percentage: p.percentOptions?.percentage ?? null,
      extra_placement_enabled: p.percentOptions?.extraPlacementEnabled ?? null,
      extra_service_option: p.percentOptions?.extraServiceOption ?? null,
      rates: p.rates,
    })),
  };
}
