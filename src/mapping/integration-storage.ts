/**
 * PMS integration-storage payloads as rows (migrations/0004_pms.sql, 0022_storage_typed.sql):
 * a storage booking with its booking channels and its nights (revenue per room stay and stay
 * date, with the stay's market segment, source of business and guests), and an inventory block
 * with its days (blocked, realised, cut-off, prices). Pure: no I/O. The sync writes what these
 * give; the replay (src/replay) derives the same rows again from the raw the mirror keeps.
 */
import type { InventoryBlock, StorageBooking } from '../provider/schemas/pms.js';
import type { InventoryBlockRows, NewIntegrationStorageBookingNight, StorageBookingRows } from '../store/schema.js';
import { keptPayload } from './personal-data.js';

/** Text, or null when absent or empty. */
const str = (v: string | null | undefined): string | null => (v === undefined || v === null || v === '' ? null : v);

type RoomStay = StorageBooking['roomStays'][number];
type Indexed = RoomStay['roomTypes'][number];

/**
 * The element a room rate names by its index (roomTypeIndex, ratePlanIndex, inventoryBlockIndex).
 * Without an index, the only element of a list is meant for room types and rate plans (a stay has
 * one of each, as a rule); for blocks no index means no block, as the document says.
 */
function byIndex(items: readonly Indexed[], index: number | null, onlyWhenAbsent: boolean): Indexed | undefined {
  if (index === null) return onlyWhenAbsent && items.length === 1 ? items[0] : undefined;
  return items.find((i) => i.index === index);
}

/** The nights of one room stay: one per room rate (stay date), with the stay's segment, source and guests. */
function stayNights(
  propertyId: string,
  bookingId: string,
  stay: RoomStay,
  stayPosition: number,
  bookingCurrency: string | null,
): NewIntegrationStorageBookingNight[] {
  let adults = 0;
  let children = 0;
  for (const g of stay.guestCounts) {
    if (g.ageQualifyingCode === 'AdultBed') adults += g.count ?? 0;
    else children += g.count ?? 0;
  }
  return stay.roomRates.map((rate, position) => {
    const roomType = byIndex(stay.roomTypes, rate.roomTypeIndex, true);
    return {
      property_id: propertyId,
      booking_id: bookingId,
      room_stay_position: stayPosition,
      position,
      room_stay_index: stay.index,
      stay_date: rate.stayDate,
      market_code: str(stay.marketCode),
      source_of_business: str(stay.sourceOfBusiness),
      room_type_code: str(roomType?.pmsSideCode),
      room_number: str(roomType?.pmsSideRoomNumber),
      rate_plan_code: str(byIndex(stay.ratePlans, rate.ratePlanIndex, true)?.pmsSideCode),
      inventory_block_code: str(byIndex(stay.inventoryBlocks, rate.inventoryBlockIndex, false)?.pmsSideCode),
      amount_after_tax: rate.total?.amountAfterTax ?? null,
      currency_code: str(rate.total?.currencyCode) ?? bookingCurrency,
      adults,
      children,
    };
  });
}

/**
 * A validated integration-storage booking (and the booking as received) as its rows; what is
 * stored of raw follows the personal-data policy (the document gives it no persons, but one the
 * provider adds is not stored by accident). Pure.
 */
export function storageBookingToRows(propertyId: string, b: StorageBooking, raw: unknown, fetchedAt: Date, personalData: boolean): StorageBookingRows {
  const arrivals = b.roomStays
    .map((s) => s.stayDates?.arrivalDateTime)
    .filter((v): v is string => !!v)
    .sort();
  const departures = b.roomStays
    .map((s) => s.stayDates?.departureDateTime)
    .filter((v): v is string => !!v)
    .sort();
  const currency = str(b.total?.currencyCode);
  return {
    booking: {
      property_id: propertyId,
      booking_id: b.id,
      status: str(b.status),
      booking_number: b.uniqueIds.find((u) => u.idContext === 'External' && u.id)?.id ?? null,
      updated_at: b.updateDateTime,
      pms_updated_at: b.pmsSideUpdateDateTime,
      pms_created_at: b.pmsSideCreateDateTime,
      cancelled_at: b.cancellationInfo?.pmsSideCancelDateTime ?? null,
      cancel_reason: str(b.cancellationInfo?.cancelReason),
      amount_after_tax: b.total?.amountAfterTax ?? null,
      currency_code: currency,
      guarantee_code: str(b.guaranteeInfo?.guaranteeCode),
      arrival_at: arrivals[0] ?? null,
      departure_at: departures[departures.length - 1] ?? null,
      market_code: str(b.roomStays[0]?.marketCode),
      source_of_business: str(b.roomStays[0]?.sourceOfBusiness),
      fetched_at: fetchedAt,
      synced_at: new Date(),
      raw: JSON.stringify(keptPayload(raw, personalData)),
    },
    channels: b.bookingChannels.map((c, position) => ({
      property_id: propertyId,
      booking_id: b.id,
      position,
      code: str(c.code),
      code_type: str(c.codeType),
      name: str(c.name),
      channel_type: str(c.bookingChannelType),
    })),
    nights: b.roomStays.flatMap((stay, i) => stayNights(propertyId, b.id, stay, i, currency)),
  };
}

/** A validated inventory block (and the block as received) as its rows: the block and its days. Pure. */
export function inventoryBlockToRows(propertyId: string, b: InventoryBlock, raw: unknown, fetchedAt: Date): InventoryBlockRows {
  return {
    block: {
      property_id: propertyId,
      inventory_block_id: b.id,
      pms_side_id: str(b.pmsSideId),
      pms_side_code: str(b.pmsSideCode),
      block_status: str(b.blockStatus),
      pms_block_status: str(b.pmsBlockStatus),
      updated_at: b.updateDateTime,
      pms_created_at: b.pmsSideCreateDateTime,
      pms_cancelled_at: b.pmsSideCancelDateTime,
      rate_plan_codes: b.ratePlanCodes,
      fetched_at: fetchedAt,
      synced_at: new Date(),
      raw: JSON.stringify(raw),
    },
    days: b.dailyItems.map((d, position) => ({
      property_id: propertyId,
      inventory_block_id: b.id,
      position,
      stay_date: d.date,
      room_type_code: str(d.roomTypeCode),
      blocked_count: d.blockedCount,
      realized_count: d.realizedCount,
      cutoff_date: d.cutoffDate,
      one_adult_price: d.pricing?.oneAdultPrice ?? null,
      services_price: d.pricing?.servicesPrice ?? null,
      currency_code: str(d.pricing?.currencyCode),
    })),
  };
}
