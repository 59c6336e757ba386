/**
 * Tolerant schemas of the Content and Reference Data APIs (spec 2.1–2.4; OpenAPI ContentApi_*
 * and ReferenceDataApi_*). Same rules as schemas.ts: unknown fields kept, enums as strings,
 * ids as string, optional objects and arrays may be null. A property must at least have an
 * id, and arrays where arrays belong; everything else is optional.
 */
import { z } from 'zod';
import { asSent, dateOnly, id, list, nullable, optBool, optId, optInt, optNum, optString, serializesAsSent } from './primitives.js';
import { safe, type ParseResult } from './bookings.js';

const addressSchema = z.looseObject({
  postalCode: optString,
  countryCode: optString,
  region: optString,
  cityName: optString,
  addressLine: optString,
  latitude: optNum,
  longitude: optNum,
});

// Room types, rate plans, services and rules are written to `raw` columns as parsed entities:
// they serialize as received (serializesAsSent), so those columns hold the payload as sent.
const roomTypeSchema = serializesAsSent(
  z.looseObject({
    id,
    name: optString,
    description: optString,
    categoryCode: optString,
    categoryName: optString,
    amenities: list(z.looseObject({ code: optString, name: optString })),
    size: nullable(z.looseObject({ value: optNum })),
    occupancy: nullable(z.looseObject({ adultBed: optInt, extraBed: optInt })),
    position: optInt,
  }),
);

const vatSchema = z.looseObject({ applicable: optBool, included: optBool, percent: optNum });

const ratePlanSchema = serializesAsSent(
  z.looseObject({
    id,
    name: optString,
    description: optString,
    currency: optString,
    cancellationRuleId: optId,
    extraStayRuleId: optId,
    corporateOnly: optBool,
    isStayWithChildrenOnly: optBool,
    vat: nullable(vatSchema),
  }),
);

const serviceSchema = serializesAsSent(
  z.looseObject({
    id,
    name: optString,
    description: optString,
    kind: optString,
    mealPlanCode: optString,
    mealPlanName: optString,
    status: optString,
  }),
);

export const contentPropertySchema = z.looseObject({
  id,
  name: optString,
  description: optString,
  currency: optString,
  stars: optInt,
  stayUnitKind: optString,
  propertyKindId: optInt,
  contactInfo: nullable(
    z.looseObject({
      address: nullable(addressSchema),
      // Kept as sent (a JSON column).
      phones: list(asSent(z.looseObject({ phoneNumber: optString, remark: optString }))),
      emails: list(z.string()),
    }),
  ),
  policy: nullable(z.looseObject({ checkInTime: optString, checkOutTime: optString })),
  timeZone: nullable(z.looseObject({ id: optString })),
  images: list(z.unknown()),
  ratePlans: list(ratePlanSchema),
  roomTypes: list(roomTypeSchema),
  services: list(serviceSchema),
  multiLocationProperty: optBool,
  companyDetails: nullable(z.looseObject({})),
  amenities: list(z.looseObject({ code: optString, displayName: optString, chargeType: optString })),
});
export type ContentProperty = z.output<typeof contentPropertySchema>;

/** The list page; properties stay raw so one bad property can be quarantined alone. */
export const propertyPageSchema = z.looseObject({
  next: optString,
  properties: list(z.unknown()),
});
export type PropertyPage = z.output<typeof propertyPageSchema>;

const cancellationTermSchema = z.looseObject({
  beforeArrivalMatching: optString,
  beforeArrivalUnit: optString,
  beforeArrivalValue: optInt,
  beforeArrivalValueMax: optInt,
  penaltyCalculationMethod: optString,
  penaltyValue: optNum,
  penaltyValueCurrency: optString,
  // Date-times in the document; the calendar date as written is what a date column holds.
  arrivalDates: list(z.looseObject({ startDate: nullable(dateOnly), endDate: nullable(dateOnly), isEndless: optBool })),
});
export const cancellationRuleSchema = serializesAsSent(
  z.looseObject({
    id,
    referencePointKind: optString,
    referencePointTime: optString,
    cancellationTerms: list(cancellationTermSchema),
  }),
);
export type CancellationRule = z.output<typeof cancellationRuleSchema>;
export const cancellationRulesResponseSchema = z.looseObject({ cancellationRules: list(z.unknown()) });

const extraStayPeriodSchema = z.looseObject({
  startTime: optString,
  endTime: optString,
  chargeType: optString,
  // Kept as sent (a JSON column): each rate with its amount exactly as written.
  rates: list(asSent(z.looseObject({ currency: optString, rate: optNum }))),
  percentOptions: nullable(z.looseObject({ percentage: optNum, extraPlacementEnabled: optBool, extraServiceOption: optString })),
  occupyQuota: optBool,
});
export const extraStayRuleSchema = serializesAsSent(
  z.looseObject({
    id,
    checkInTime: optString,
    overridesPropertyCheckInTime: optBool,
    earlyCheckInPeriods: list(extraStayPeriodSchema),
    checkOutTime: optString,
    overridesPropertyCheckOutTime: optBool,
    lateCheckOutPeriods: list(extraStayPeriodSchema),
  }),
);
export type ExtraStayRule = z.output<typeof extraStayRuleSchema>;
export const extraStayRulesResponseSchema = z.looseObject({ extraStayRules: list(z.unknown()) });

/**
 * Reference list entries. The document lets codes and arrays be null: an entry without a code
 * cannot be keyed in a typed table and is kept in reference_lists.raw only; a null array is
 * "nothing said", which removes nothing.
 */
const codeName = z.looseObject({ code: optString, name: optString });
export const mealPlansSchema = z.array(codeName).nullable();
export const roomTypeCategoriesSchema = z.array(codeName).nullable();
/**
 * Room amenity categories, in either shape the documents show: nested, as the OpenAPI document
 * gives them (a category `{name, amenities: [{code, name}]}`, amenities nullable), or flat, as
 * the interface specification lists the entry (`{group, code, name}`, one per amenity). Each
 * entry is read as its own keys say (src/mapping/content.ts); `amenities` stays null when sent
 * null: the category says nothing of its amenities.
 */
export const roomAmenityCategoriesSchema = z
  .array(z.looseObject({ name: optString, amenities: z.array(codeName).nullish(), group: optString, code: optString }))
  .nullable();
export const paymentMethodsSchema = z.looseObject({
  paymentMethods: z.array(z.looseObject({ code: optString, type: optString })).nullish(),
});
export const propertyAmenityTypesSchema = z.looseObject({
  amenityTypes: z.array(z.looseObject({ code: optString, displayName: optString, chargeTypeApplicable: optBool })).nullish(),
});
export const propertyKindsSchema = z.looseObject({
  propertyKinds: z.array(z.looseObject({ id: optInt, displayName: optString, propertyKindType: optString })).nullish(),
});

export function parseContentProperty(raw: unknown): ParseResult<ContentProperty> {
  return safe(contentPropertySchema, raw, 'property');
}
export function parseCancellationRule(raw: unknown): ParseResult<CancellationRule> {
  return safe(cancellationRuleSchema, raw, 'cancellationRule');
}
export function parseExtraStayRule(raw: unknown): ParseResult<ExtraStayRule> {
  return safe(extraStayRuleSchema, raw, 'extraStayRule');
}
export { safe as parseWith };
