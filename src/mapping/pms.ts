/**
 * PMS payloads as rows: reservations with their room stays, persons (customers and guests),
 * rooms, days of daily occupancy (integration-storage bookings and inventory blocks: integration-storage.ts). Pure: no
 * I/O. What of a person is personal data, and is left out when pms.personalData is off, is
 * decided in personal-data.ts; its pseudonyms are computed in pseudonyms.ts. The sync writes
 * what these give, and the replay (src/replay) derives the same rows again from the payloads
 * the mirror keeps.
 */
import type { DailyOccupancy, PmsCompany, PmsInvoice, PmsLoyaltyCard, PmsPerson, PmsReservation, PmsRoom } from '../provider/schemas/pms.js';
import { isRealDate } from '../provider/schemas/primitives.js';
import type { NewDailyOccupancy, NewPmsGuest, NewPmsGuestLoyaltyCard, NewPmsInvoice, NewPmsInvoiceItem, PmsReservationRows } from '../store/schema.js';
import { formatDecimal, parseDecimal, sum } from '../util/decimal.js';
import { hashOf } from './content.js';
import { keptPayload, keptPerson, type PersonalDataPolicy } from './personal-data.js';
import { emailPseudonym, phonePseudonym } from './pseudonyms.js';

// ------------------------------------------------------------------ reservations and persons

/** Money arrives as its exact text (schema-primitives `num`) and goes to numeric columns as text. */
const money = (v: string | null | undefined): string | null => v ?? null;
/** Text, or null when absent or empty. */
const str = (v: string | null | undefined): string | null => (v === undefined || v === null || v === '' ? null : v);
/**
 * A calendar date or null: the typed column only takes what is a date, and a text that only
 * looks like one (2024-02-30, year 0000) would make PostgreSQL refuse the whole reservation.
 */
function date(v: string | null | undefined): string | null {
  const m = v ? /^(\d{4})-(\d{2})-(\d{2})/.exec(v) : null;
  return m && Number(m[1]) > 0 && isRealDate(Number(m[1]), Number(m[2]), Number(m[3])) ? m[0] : null;
}

/**
 * A person as a row. `raw` is the object to store (already without personal data when it is
 * off); the personal columns are filled only with `policy.personalData`, the pseudonyms of its
 * first e-mail and phone whenever there is a key, from the parsed person (as received).
 */
export function personToRow(propertyId: string, p: PmsPerson, raw: unknown, policy: PersonalDataPolicy, fetchedAt: Date): NewPmsGuest | null {
  if (p.pmsPersonId === null) return null;
  const personalData = policy.personalData;
  return {
    property_id: propertyId,
    pms_person_id: p.pmsPersonId,
    first_name: str(p.personName?.firstName),
    last_name: str(p.personName?.lastName),
    middle_name: str(p.personName?.middleName),
    gender: str(p.gender),
    status_name: str(p.status?.displayName),
    email: personalData ? str(p.emails[0]?.address) : null,
    phone: personalData ? str(p.phones[0]?.phoneNumber) : null,
    birth_date: personalData ? date(p.birthDate) : null,
    citizenship: personalData ? str(p.citizenship) : null,
    email_hash: emailPseudonym(policy.pseudonymKey, p.emails[0]?.address),
    phone_hash: phonePseudonym(policy.pseudonymKey, p.phones[0]?.phoneNumber),
    fetched_at: fetchedAt,
    raw: JSON.stringify(raw),
  };
}

/**
 * Maps a parsed reservation to its rows. `raw` is what is stored (see personToRow). Pure.
 * The key is `r.number`, the number the reservation was fetched by (parseReservationResponse),
 * even when the answer's own is null; `modified_at` is null when the answer's modifyDateTime
 * is null or not an instant (raw keeps the text), and the version guard then goes by
 * fetched_at (savePmsReservation).
 */
export function pmsReservationToRows(propertyId: string, r: PmsReservation, raw: unknown, opts: PersonalDataPolicy & { fetchedAt: Date }): PmsReservationRows {
  const key = { property_id: propertyId, number: r.number };
  const c = r.customer;
  const personal = opts.personalData;
  const rawCustomer = (raw as { customer?: unknown } | null)?.customer ?? null;
  return {
    reservation: {
      ...key,
      reservation_status: str(r.reservationStatus),
      modified_at: r.modifyDateTime,
      currency_code: str(r.currencyCode),
      customer_person_id: c?.pmsPersonId ?? null,
      customer_first_name: str(c?.personName?.firstName),
      customer_last_name: str(c?.personName?.lastName),
      customer_middle_name: str(c?.personName?.middleName),
      customer_language_code: str(r.customerLanguageCode),
      customer_email: personal ? str(c?.emails[0]?.address) : null,
      customer_phone: personal ? str(c?.phones[0]?.phoneNumber) : null,
      customer_birth_date: personal ? date(c?.birthDate) : null,
      customer_citizenship: personal ? str(c?.citizenship) : null,
      customer_email_hash: emailPseudonym(opts.pseudonymKey, c?.emails[0]?.address),
      customer_phone_hash: phonePseudonym(opts.pseudonymKey, c?.phones[0]?.phoneNumber),
      customer_company_id: r.customerCompany?.id ?? null,
      customer_company_name: str(r.customerCompany?.name),
      customer_company_type: str(r.customerCompany?.type),
      visit_purpose_id: r.visitPurpose?.id ?? null,
      visit_purpose_name: str(r.visitPurpose?.displayName),
      creation_source_id: r.creationSource?.id ?? null,
      creation_source_name: str(r.creationSource?.name),
      channel_name: str(r.channelInformation?.channelName),
      group_name: str(r.groupName),
      customer_comment: personal ? str(r.customerComment) : null,
      agent_commission_percent: money(r.agentCommission?.percent),
      agent_commission_amount: money(r.agentCommission?.amount?.value),
      agent_commission_source: str(r.agentCommission?.calculationSource),
      agent_commission_discount: money(r.agentCommission?.discount?.value),
      agent_commission_currency: str(r.agentCommission?.amount?.currencyCode),
      room_stay_count: r.roomStays.length,
      fetched_at: opts.fetchedAt,
      synced_at: new Date(),
      raw: JSON.stringify(raw),
    },
    roomStays: r.roomStays.map((s, position) => ({
      ...key,
      position,
      pms_room_stay_id: s.pmsRoomStayId,
      room_id: s.roomId,
      room_type_id: s.roomTypeId,
      status: str(s.status),
      check_in_at: s.checkInDateTime,
      check_out_at: s.checkOutDateTime,
      actual_check_in_at: s.actualCheckInDateTime,
      actual_check_out_at: s.actualCheckOutDateTime,
      adults: s.guestCount?.adults ?? null,
      children: s.guestCount?.children ?? null,
      amount: money(s.totalPrice?.amount?.value),
      pay_amount: money(s.totalPrice?.payAmount?.value),
      refund_amount: money(s.totalPrice?.refundAmount?.value),
      deposit: money(s.deposit?.value),
      // The currency of the stay's amounts: its price's, else that of what it owes or is owed
      // (a stay without a price may still owe), else the reservation's.
      currency_code:
        str(s.totalPrice?.amount?.currencyCode) ??
        str(s.totalPrice?.payAmount?.currencyCode) ??
        str(s.totalPrice?.refundAmount?.currencyCode) ??
        str(r.currencyCode),
      guest_person_ids: s.guestsIds,
      amenities: s.amenities.map((a) => a.name).filter((n): n is string => n !== null),
    })),
    customer: c ? personToRow(propertyId, c, rawCustomer, opts, opts.fetchedAt) : null,
  };
}

/**
 * A validated reservation as its rows, and the reservation object to store: as the
 * personal-data policy keeps it (personal-data.ts keptPayload; its pseudonyms, with a key,
 * either way). Pure; shared with the replay (src/replay).
 */
export function reservationRows(
  propertyId: string,
  r: PmsReservation,
  rawReservation: unknown,
  policy: PersonalDataPolicy,
  fetchedAt: Date,
): { rows: PmsReservationRows; stored: unknown } {
  const stored = keptPayload(rawReservation, policy.personalData);
  return { rows: pmsReservationToRows(propertyId, r, stored, { ...policy, fetchedAt }), stored };
}

/** A validated guest profile as its pms_guests row (personal data and pseudonyms as for reservations), or null without a person id. Pure. */
export function guestRow(propertyId: string, p: PmsPerson, rawGuest: unknown, policy: PersonalDataPolicy, fetchedAt: Date): NewPmsGuest | null {
  return personToRow(propertyId, p, keptPerson(rawGuest, policy.personalData), policy, fetchedAt);
}

/**
 * A person's loyalty cards as rows: the programme always, the card number only with personal
 * data on (personal-data.ts counts card numbers as personal wherever they are), and each card
 * as stored (`raw`: keptPayload of the card as received). Pure; shared with the replay.
 */
export function loyaltyCardRows(
  propertyId: string,
  personId: string,
  cards: readonly PmsLoyaltyCard[],
  raw: readonly unknown[],
  personalData: boolean,
): NewPmsGuestLoyaltyCard[] {
  return cards.map((c, position) => ({
    property_id: propertyId,
    pms_person_id: personId,
    position,
    program_id: c.programId,
    card_number: personalData ? c.cardNumber : null,
    raw: JSON.stringify(raw[position] ?? null),
  }));
}

// ------------------------------------------------------------------ invoices and companies

/**
 * A reservation's invoices (as read with one of its versions) as rows: each invoice with its
 * payer and the sum of its items when they are in one currency, each item typed (its total is
 * tax included, as documented; the database derives the amounts with and without tax,
 * migrations/0025_documented_units.sql). `rawInvoices` are the invoices to store
 * (keptPayload of the answer's: the payer is a person or a company, and kept as names are).
 * Pure; shared with the replay (src/replay).
 */
export function invoicesToRows(
  propertyId: string,
  number: string,
  invoices: readonly PmsInvoice[],
  rawInvoices: readonly unknown[],
  reservationCurrency: string | null,
): { invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] } {
  const key = { property_id: propertyId, number };
  const items: NewPmsInvoiceItem[] = [];
  const rows = invoices.map((inv, position): NewPmsInvoice => {
    const lines = inv.items.map((it, i): NewPmsInvoiceItem => ({
      ...key,
      invoice_position: position,
      position: i,
      kind: str(it.kind),
      name: str(it.name),
      accounting_code: str(it.accountingCode),
      quantity: money(it.quantity?.value),
      unit: str(it.quantity?.unit),
      total: money(it.total?.value),
      vat_applicable: it.vat?.applicable ?? null,
      vat_included: it.vat?.included ?? null,
      vat_percent: money(it.vat?.percent),
      currency_code: str(it.total?.currencyCode) ?? reservationCurrency,
    }));
    items.push(...lines);
    // Amounts of different currencies are never added: an invoice whose items are in several
    // has no one total (its items have theirs).
    const currencies = new Set(lines.map((l) => l.currency_code).filter((c) => c !== null));
    const currency = currencies.size > 1 ? null : ([...currencies][0] ?? reservationCurrency);
    const totals = inv.items.map((it) => it.total?.value).filter((v): v is string => v !== null && v !== undefined);
    return {
      ...key,
      position,
      invoice_number: str(inv.number),
      pms_room_stay_id: inv.pmsRoomStayId,
      payer_name: str(inv.payer?.name),
      total: totals.length > 0 && currencies.size <= 1 ? formatDecimal(sum(totals.map(parseDecimal))) : null,
      currency_code: currency,
      raw: JSON.stringify(rawInvoices[position] ?? null),
    };
  });
  return { invoices: rows, items };
}

/** A validated company (and the company as received) as its pms_companies row. Pure. */
export function companyToRow(propertyId: string, c: PmsCompany, raw: unknown): Record<string, unknown> {
  return {
    property_id: propertyId,
    company_id: c.id,
    name: str(c.name),
    company_type: str(c.type),
    raw,
    content_hash: hashOf(raw),
  };
}

// ------------------------------------------------------------------ rooms and daily occupancy

/** A validated room (and the room as received) as its pms_rooms row. Pure; shared with the replay (src/replay). */
export function roomToRow(propertyId: string, r: PmsRoom, raw: unknown): Record<string, unknown> {
  return {
    property_id: propertyId,
    room_id: r.id,
    display_name: r.displayName,
    room_type_id: r.roomTypeId,
    floor_id: r.floorId,
    raw,
    content_hash: hashOf(raw),
  };
}

/**
 * One day of an occupancy answer as its daily_occupancy row: the day's figures, and the
 * currency and room count the answer gives for all its days. `raw` is the day as received.
 * Pure; shared with the replay (src/replay).
 */
export function occupancyDayToRow(
  propertyId: string,
  answer: { currencyCode: string | null; propertyRoomCount: number },
  d: DailyOccupancy,
  raw: unknown,
  refreshedAt: Date,
): NewDailyOccupancy {
  return {
    property_id: propertyId,
    stay_date: d.date,
    currency_code: answer.currencyCode,
    property_room_count: answer.propertyRoomCount,
    occupancy_rate: d.occupancyRate,
    closed_room_count: d.closedRoomCount,
    occupancy_room_count: d.occupancyRoomCount,
    complimentary_occupancy_room_count: d.complimentaryOccupancyRoomCount,
    room_revenue: d.roomRevenue,
    revenue: d.revenue,
    meal_revenue: d.mealRevenue,
    arrival_count: d.arrivalCount,
    guest_count: d.guestCount,
    refreshed_at: refreshedAt,
    raw: JSON.stringify(raw),
  };
}
