import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseBooking, parseBookingSummary, parseBookingsPage, parseGetBookingResponse } from '../../src/provider/schemas/bookings.js';
import { parseJsonLossless } from '../../src/provider/json.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'provider');
// As the client parses bodies: numbers keep their text.
const load = (name: string): unknown => parseJsonLossless(readFileSync(join(fixtures, name), 'utf8'));

function ok<T>(r: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!r.ok) throw new Error(`expected success, got: ${r.reason}`);
  return r.value;
}

describe('booking summaries', () => {
  it('parses a page whose propertyId is an integer, normalising it to a string', () => {
    const page = ok(parseBookingsPage(load('read-reservation-booking-summaries-page1-initial-lastModification.json')));
    expect(page.hasMoreData).toBe(true);
    expect(page.continueToken).toBe('eyJCb29raW5nSWRzIjpbMTIwNDAzMzNdLCJNaWxsaXNlY29uZHNGcm9tIjoxNjg3NDM3NTIwMjEwfQ==');
    expect(page.bookingSummaries).toHaveLength(5);
    const first = ok(parseBookingSummary(page.bookingSummaries[0]));
    expect(first).toMatchObject({
      number: '20230622-500821-12025196',
      propertyId: '500821',
      status: 'Active',
      createdDateTime: '2023-06-21T05:17:16Z',
      modifiedDateTime: '2023-06-21T05:17:16Z',
    });
    expect(ok(parseBookingSummary(page.bookingSummaries[1])).status).toBe('Cancelled');
  });

  it('parses a page whose propertyId is a string', () => {
    const page = ok(parseBookingsPage(load('read-reservation-booking-summaries-page-propertyId-as-string.json')));
    const all = page.bookingSummaries.map((s) => ok(parseBookingSummary(s)));
    expect(all.map((s) => s.propertyId)).toEqual(Array(5).fill('500360'));
    expect(all[4]!.modifiedDateTime).toBe('2021-07-10T23:43:51Z');
  });

  it('parses the last page and the synthetic page', () => {
    const last = ok(parseBookingsPage(load('read-reservation-booking-summaries-page3-last-hasMoreData-false.json')));
    expect(last.hasMoreData).toBe(false);
    expect(last.bookingSummaries).toHaveLength(2);
    const synth = ok(parseBookingsPage(load('SYNTH-read-reservation-booking-summaries-page-from-schema-examples.json')));
    expect(ok(parseBookingSummary(synth.bookingSummaries[0])).propertyId).toBe('1024');
  });

  it('keeps unknown statuses and fields, tolerates null tokens and summaries', () => {
    const page = ok(parseBookingsPage({ continueToken: null, hasMoreData: false, bookingSummaries: null, newField: 1 }));
    expect(page).toMatchObject({ continueToken: null, hasMoreData: false, bookingSummaries: [], newField: 1 });
    const s = ok(parseBookingSummary({ number: 'X-1', status: 'Waitlisted', modifiedDateTime: null, channel: 'A' }));
    expect(s).toMatchObject({ number: 'X-1', propertyId: null, status: 'Waitlisted', createdDateTime: null, modifiedDateTime: null, channel: 'A' });
  });

  it('quarantines one bad summary with a reason naming the field, not the page', () => {
    const r = parseBookingSummary({ number: 'X-2', status: 'Active', modifiedDateTime: 'yesterday' });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/bookingSummary\.modifiedDateTime/);
    const r2 = parseBookingSummary({ status: 'Active' });
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(r2.reason).toMatch(/bookingSummary\.number/);
  });

  it('rejects an envelope without hasMoreData', () => {
    const r = parseBookingsPage({ continueToken: 'x', bookingSummaries: [] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/page\.hasMoreData/);
  });
});

describe('booking details', () => {
  it('parses the real cancelled channel booking and normalises the daily rate date', () => {
    const b = ok(parseGetBookingResponse(load('read-reservation-booking-details-cancelled-channel.json')));
    expect(b).toMatchObject({
      propertyId: '500360',
      number: '20210325-500360-6987835',
      status: 'Cancelled',
      modifiedDateTime: '2021-03-19T15:18:53Z',
      currencyCode: 'EUR',
      customer: null,
      cancellation: { penaltyAmount: '0.0', cancelledDateTime: '2021-03-19T15:18:53Z' },
      source: { type: 'Channel', code: 'PA2', sourceUrl: null },
    });
    expect(b.guaranteeInfo).toMatchObject({ loyalty: null, totalPrepaid: '0.0', guarantees: [] });
    const stay = b.roomStays[0]!;
    // Local times get their seconds; money keeps the text it was sent with.
    expect(stay.stayDates).toEqual({ arrivalDateTime: '2021-03-25T14:00:00', departureDateTime: '2021-03-26T12:00:00' });
    expect(stay.dailyRates).toEqual([{ ratePlanId: '307225', priceBeforeTax: '28.000', date: '2021-03-25' }]);
    expect(stay.total).toMatchObject({ priceBeforeTax: '28.0000', priceAfterTax: '28.0000', taxAmount: '0.0000' });
    expect(stay.extraStayCharges).toEqual({ earlyArrival: null, lateDeparture: null });
    expect(stay.index).toBeNull();
  });

  it('parses the synthetic booking with every nested object', () => {
    const b = ok(parseGetBookingResponse(load('SYNTH-read-reservation-booking-details-from-schema-examples.json')));
    expect(b.guaranteeInfo?.loyalty?.cards).toEqual([{ cardNumber: '11039500047840', loyaltySystemId: 'TLStatusLevel' }]);
    expect(b.guaranteeInfo?.guarantees).toEqual([{ paymentMethod: 'BankCard' }]);
    const stay = b.roomStays[0]!;
    // int64 in the document: kept as text, since it may exceed 2^53.
    expect(stay.index).toBe('0');
    expect(stay.guestCount).toEqual({ adultCount: 1, childAges: [5] });
    expect(stay.dailyRates[0]!.date).toBe('2024-03-27');
    expect(stay.services[0]).toMatchObject({ id: '42965', kind: 'Meal', mealPlanCode: 'ContinentalBreakfast', inclusive: false });
    expect(stay.extraStayCharges?.earlyArrival?.overriddenDateTime).toBe('2024-03-27T18:00:00');
    expect(stay.extraStayCharges?.lateDeparture?.total?.discounts[0]).toMatchObject({ amount: '1185', discountType: 'Percentage', percent: '15' });
    expect(b.services[0]).toMatchObject({ id: '7898', total: { priceAfterTax: '8650' } });
    expect(b.taxes).toEqual([{ index: 1, name: 'Lodging fee', description: 'Fee per guest, payable at check-in' }]);
    expect(b.customer).toEqual({ firstName: 'Sherlock', lastName: 'Holmes' });
    expect(b.total?.taxes).toEqual([{ amount: '100', index: 1 }]);
  });

  it('is tolerant: unknown fields and enum values kept, numeric ids, null arrays, missing optional objects', () => {
    const raw = {
      propertyId: 7291,
      number: '1-2-3',
      status: 'OnHold',
      modifiedDateTime: '2024-03-27T11:41:04',
      roomStays: [
        {
          stayDates: { arrivalDateTime: '2024-03-27T14:00:00', departureDateTime: '2024-03-28T12:00' },
          dailyRates: [{ ratePlanId: 133467, priceBeforeTax: 10.5, date: '2024-03-27T00:00:00' }],
          total: { priceBeforeTax: 10.5, priceAfterTax: 11, taxAmount: 0.5, taxes: null, discounts: null },
          guests: null,
          futureField: { x: 1 },
        },
      ],
      source: { type: 'Metasearch' },
      brandNew: true,
    };
    const b = ok(parseBooking(raw));
    expect(b.propertyId).toBe('7291');
    expect(b.status).toBe('OnHold');
    expect(b.modifiedDateTime).toBe('2024-03-27T11:41:04Z');
    expect(b.brandNew).toBe(true);
    expect(b.source?.type).toBe('Metasearch');
    expect(b.cancellation).toBeNull();
    expect(b.customer).toBeNull();
    expect(b.services).toEqual([]);
    const stay = b.roomStays[0]!;
    expect(stay.futureField).toEqual({ x: 1 });
    expect(stay.guests).toEqual([]);
    expect(stay.ratePlans).toEqual([]);
    expect(stay.dailyRates[0]).toEqual({ ratePlanId: '133467', priceBeforeTax: '10.5', date: '2024-03-27' });
    expect(stay.stayDates).toEqual({ arrivalDateTime: '2024-03-27T14:00:00', departureDateTime: '2024-03-28T12:00:00' });
    expect(stay.total.taxes).toEqual([]);
  });

  it('fails a malformed booking with a reason naming the path', () => {
    const raw = load('read-reservation-booking-details-cancelled-channel.json') as { booking: Record<string, unknown> };
    raw.booking.roomStays = 'none';
    const r = parseGetBookingResponse(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(/^booking\.roomStays: expected array, received string/);
  });

  it('fails on missing required parts of a room stay, naming each path', () => {
    const r = parseBooking({
      number: 'N',
      status: 'Active',
      modifiedDateTime: '2024-01-01T00:00:00Z',
      roomStays: [
        { stayDates: { arrivalDateTime: '2024-13-99', departureDateTime: '2024-01-02T12:00' }, dailyRates: [{ priceBeforeTax: 'ten', date: '2024-02-30' }] },
      ],
    });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.reason).toContain('booking.roomStays.0.stayDates.arrivalDateTime');
      expect(r.reason).toContain('booking.roomStays.0.dailyRates.0.priceBeforeTax: expected a number');
      expect(r.reason).toContain('booking.roomStays.0.dailyRates.0.date');
      expect(r.reason).toContain('booking.roomStays.0.total');
    }
  });
});
