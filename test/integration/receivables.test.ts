/**
 * The accountant's views on real PostgreSQL: receivables (what each PMS reservation still owes,
 * aged by check-out) and receivables_aging (per debtor), with the example of
 * docs/tables-and-reporting.md ("Receivables") worked out by hand, its dates relative to today.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;

/** A reservation with its room stays: [days from today of the check-out, amount due, refund due]. */
async function reservation(number: string, company: string | null, status: string, stays: [number, string, string][]): Promise<void> {
  await h!.sql(
    `INSERT INTO pms_reservations (property_id, number, reservation_status, currency_code, customer_company_id, customer_company_name, room_stay_count, fetched_at, raw)
     VALUES ($1, $2, $3, 'EUR', $4, $5, $6, now(), '{}')`,
    [P, number, status, company === null ? null : 'c-acme', company, stays.length],
  );
  for (const [i, [days, due, refund]] of stays.entries()) {
    await h!.sql(
      `INSERT INTO pms_room_stays (property_id, number, position, status, check_in_at, check_out_at, pay_amount, refund_amount, currency_code, guest_person_ids, amenities)
       VALUES ($1, $2, $3, 'New', (now() AT TIME ZONE 'UTC')::date + $4::int - 2, (now() AT TIME ZONE 'UTC')::date + $4::int + time '11:00', $5, $6, 'EUR', '{}', '{}')`,
      [P, number, i, days, due, refund],
    );
  }
}

describe('receivables', () => {
  it('ages what is due by check-out, per reservation and per debtor, as the docs work it out', async () => {
    h = await startHarness();
    await h.migrate();
    // The property's clock: UTC (no content), so "today" is the UTC date.
    await h.sql(`INSERT INTO sync_cursors (property_id, stream) VALUES ($1, 'booking_summaries')`, [P]);
    await h.sql(
      `INSERT INTO pms_companies (property_id, company_id, name, company_type, raw, content_hash) VALUES ($1, 'c-acme', 'Acme Travel GmbH', 'Customer', '{}', 'x')`,
      [P],
    );
    await reservation('R1', null, 'Confirmed', [[0, '120.00', '0']]);
    await reservation('R2', 'Acme Travel GmbH', 'Confirmed', [
      [-20, '300.00', '0'],
      [-20, '150.00', '0'],
    ]);
    await reservation('R3', 'Acme Travel GmbH', 'Confirmed', [[-100, '80.00', '0']]);
    await reservation('R4', null, 'Cancelled', [[-45, '0', '50.00']]);
    await reservation('R5', null, 'Confirmed', [[-30, '0', '0']]);
    await h.sql(
      `INSERT INTO pms_invoices (property_id, number, position, invoice_number, payer_name, total, currency_code, raw) VALUES ($1, 'R2', 0, 'R2-01', 'Acme Travel GmbH', 300.00, 'EUR', '{}'), ($1, 'R2', 1, 'R2-02', 'Acme Travel GmbH', 150.00, 'EUR', '{}')`,
      [P],
    );
    await h.sql(
      `INSERT INTO pms_invoice_items (property_id, number, invoice_position, position, kind, name, total, vat_applicable, vat_included, vat_percent, currency_code)
       VALUES ($1, 'R2', 0, 0, 'RoomType', 'Accommodation', 300.00, true, true, 10, 'EUR'), ($1, 'R2', 1, 0, 'RoomType', 'Accommodation', 150.00, true, true, 10, 'EUR')`,
      [P],
    );
    const reporting = reportingSchemaOf(h.schema);

    const rows = await h.sql(
      `SELECT number, owed_by, company_name, days_since_check_out, aging_bucket, amount_due::text, refund_due::text, balance::text, invoiced::text, invoices, room_stays
         FROM "${reporting}".receivables ORDER BY number`,
    );
    expect(rows).toEqual([
      {
        number: 'R1',
        owed_by: 'guest',
        company_name: null,
        days_since_check_out: 0,
        aging_bucket: 'not due yet',
        amount_due: '120.00',
        refund_due: '0',
        balance: '120.00',
        invoiced: null,
        invoices: 0,
        room_stays: 1,
      },
      {
        number: 'R2',
        owed_by: 'company',
        company_name: 'Acme Travel GmbH',
        days_since_check_out: 20,
        aging_bucket: '1-30',
        amount_due: '450.00',
        refund_due: '0',
        balance: '450.00',
        invoiced: '450.00',
        invoices: 2,
        room_stays: 2,
      },
      {
        number: 'R3',
        owed_by: 'company',
        company_name: 'Acme Travel GmbH',
        days_since_check_out: 100,
        aging_bucket: 'over 90',
        amount_due: '80.00',
        refund_due: '0',
        balance: '80.00',
        invoiced: null,
        invoices: 0,
        room_stays: 1,
      },
      {
        number: 'R4',
        owed_by: 'guest',
        company_name: null,
        days_since_check_out: 45,
        aging_bucket: '31-60',
        amount_due: '0',
        refund_due: '50.00',
        balance: '-50.00',
        invoiced: null,
        invoices: 0,
        room_stays: 1,
      },
    ]);

    const aging = await h.sql(
      `SELECT owed_by, company_name, reservations, not_due_yet::text, days_1_30::text, days_31_60::text, days_61_90::text, days_over_90::text, balance::text
         FROM "${reporting}".receivables_aging ORDER BY owed_by`,
    );
    expect(aging).toEqual([
      {
        owed_by: 'company',
        company_name: 'Acme Travel GmbH',
        reservations: '2',
        not_due_yet: '0',
        days_1_30: '450.00',
        days_31_60: '0',
        days_61_90: '0',
        days_over_90: '80.00',
        balance: '530.00',
      },
      {
        owed_by: 'guest',
        company_name: null,
        reservations: '2',
        not_due_yet: '120.00',
        days_1_30: '0',
        days_31_60: '-50.00',
        days_61_90: '0',
        days_over_90: '0',
        balance: '70.00',
      },
    ]);
  });
});

describe('invoices and receivables per currency', () => {
  it('reads an item total as tax included, whatever vat.included says, and adds amounts per currency only: the worked example of the docs', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 10 }] } });
    const ctx = await h.context();
    const number = h.sim.pmsReservations(P).find((r) => r.reservationStatus !== 'Cancelled')!.number;
    // The property has no content here: its clock is UTC, as in the example above.
    const [{ today }] = (await h.sql<{ today: string }>(`SELECT ((now() AT TIME ZONE 'UTC')::date)::text AS today`)) as [{ today: string }];
    const day = (offset: number) => new Date(Date.parse(`${today}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);
    const stay = (i: number, currencyCode: string, due: number) => ({
      pmsRoomStayId: `R6-${i}`,
      roomId: null,
      roomTypeId: null,
      guestsIds: [],
      checkInDateTime: `${day(-12)}T14:00`,
      checkOutDateTime: `${day(-10)}T11:00`,
      actualCheckInDateTime: null,
      actualCheckOutDateTime: null,
      status: 'CheckedOut',
      guestCount: { adults: 1, children: 0 },
      totalPrice: { amount: null, payAmount: { value: due, currencyCode }, refundAmount: { value: 0, currencyCode } },
      amenities: [],
    });
    const vat = (applicable: boolean, included: boolean, percent: number) => ({ applicable, included, percent });
    const item = (name: string, kind: string, value: number, currencyCode: string, v: ReturnType<typeof vat>) => ({
      accountingCode: null,
      name,
      kind,
      total: { value, currencyCode },
      vat: v,
      quantity: { value: 1, unit: 'Pcs' },
    });
    const invoices = [
      {
        number: 'R6-01',
        pmsRoomStayId: 'R6-0',
        payer: { name: 'Ada Lovelace' },
        items: [
          item('Accommodation', 'RoomType', 180, 'EUR', vat(true, true, 10)),
          item('Breakfast', 'Option', 30, 'EUR', vat(true, false, 20)),
          item('Airport transfer', 'Transfer', 45, 'USD', vat(false, false, 0)),
        ],
      },
      { number: 'R6-02', pmsRoomStayId: 'R6-1', payer: { name: 'Ada Lovelace' }, items: [item('Accommodation', 'RoomType', 75, 'USD', vat(true, false, 7))] },
    ];
    h.sim.faults.rewriteBody = (path, body) => {
      const base = `/api/pms/v2/properties/${P}/reservations/${number}`;
      if (path === base) {
        const r = (body as { reservation: AnyRecord }).reservation;
        return {
          ...(body as AnyRecord),
          reservation: { ...r, customer: null, customerCompany: null, currencyCode: 'EUR', roomStays: [stay(0, 'EUR', 210), stay(1, 'USD', 120)] },
        };
      }
      if (path === `${base}/invoices`) return { ...(body as AnyRecord), invoices, hasNextPage: false, nextPageToken: null };
      return undefined;
    };
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });

    expect(
      await h.sql(
        `SELECT invoice_position, position, name, total::text, vat_included, total_with_tax::text, total_without_tax::text, currency_code
           FROM pms_invoice_items WHERE property_id = $1 AND number = $2 ORDER BY invoice_position, position`,
        [P, number],
      ),
    ).toEqual([
      {
        invoice_position: 0,
        position: 0,
        name: 'Accommodation',
        total: '180',
        vat_included: true,
        total_with_tax: '180',
        total_without_tax: '163.64',
        currency_code: 'EUR',
      },
      {
        invoice_position: 0,
        position: 1,
        name: 'Breakfast',
        total: '30',
        vat_included: false,
        total_with_tax: '30',
        total_without_tax: '25.00',
        currency_code: 'EUR',
      },
      {
        invoice_position: 0,
        position: 2,
        name: 'Airport transfer',
        total: '45',
        vat_included: false,
        total_with_tax: '45',
        total_without_tax: '45',
        currency_code: 'USD',
      },
      {
        invoice_position: 1,
        position: 0,
        name: 'Accommodation',
        total: '75',
        vat_included: false,
        total_with_tax: '75',
        total_without_tax: '70.09',
        currency_code: 'USD',
      },
    ]);
    expect(
      await h.sql(
        `SELECT currency_code, sum(total_with_tax - total_without_tax)::text AS vat FROM pms_invoice_items WHERE property_id = $1 AND number = $2 GROUP BY 1 ORDER BY 1`,
        [P, number],
      ),
    ).toEqual([
      { currency_code: 'EUR', vat: '21.36' },
      { currency_code: 'USD', vat: '4.91' },
    ]);
    // An invoice whose items are in two currencies has no one total.
    expect(
      await h.sql(`SELECT invoice_number, total::text, currency_code FROM pms_invoices WHERE property_id = $1 AND number = $2 ORDER BY position`, [P, number]),
    ).toEqual([
      { invoice_number: 'R6-01', total: null, currency_code: null },
      { invoice_number: 'R6-02', total: '75', currency_code: 'USD' },
    ]);
    const reporting = reportingSchemaOf(h.schema);
    expect(
      await h.sql(
        `SELECT currency_code, owed_by, days_since_check_out, aging_bucket, amount_due::text, balance::text, invoiced::text, invoices, room_stays
           FROM "${reporting}".receivables WHERE property_id = $1 AND number = $2 ORDER BY currency_code`,
        [P, number],
      ),
    ).toEqual([
      {
        currency_code: 'EUR',
        owed_by: 'guest',
        days_since_check_out: 10,
        aging_bucket: '1-30',
        amount_due: '210',
        balance: '210',
        invoiced: '210',
        invoices: 1,
        room_stays: 1,
      },
      {
        currency_code: 'USD',
        owed_by: 'guest',
        days_since_check_out: 10,
        aging_bucket: '1-30',
        amount_due: '120',
        balance: '120',
        invoiced: '120',
        invoices: 2,
        room_stays: 1,
      },
    ]);
  });
});
