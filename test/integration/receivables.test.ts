/**
 * The accountant's views on real PostgreSQL: receivables (what each PMS reservation still owes,
 * aged by check-out) and receivables_aging (per debtor), with the example of
 * docs/tables-and-reporting.md ("Receivables") worked out by hand, its dates relative to today.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';

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
