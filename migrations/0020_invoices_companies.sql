-- Money the PMS tells (issue 27): the invoices of each PMS reservation with their items, and
-- the companies of each property (customers and agents) that reservations and invoices name.
--
-- Invoices are read with each newer version of their reservation (GET …/reservations/{number}/
-- invoices), as guest profiles are, and replaced whole in the reservation's transaction: what
-- pms_invoices holds is the invoices as they stood at pms_reservations.modified_at. Companies
-- are a refresh of each property's list, with the rooms (content.refreshCron).
--
-- The payer of an invoice is a company or a person: payer_name is personal data (withheld from
-- readers without --personal-data, erased with the reservation's customer), as is raw.

CREATE TABLE pms_invoices (
  property_id       text        NOT NULL,
  number            text        NOT NULL,
  position          integer     NOT NULL,
  invoice_number    text,
  pms_room_stay_id  text,
  payer_name        text,
  total             numeric,
  currency_code     text,
  synced_at         timestamptz NOT NULL DEFAULT now(),
  raw               jsonb       NOT NULL,
  PRIMARY KEY (property_id, number, position)
);
COMMENT ON TABLE pms_invoices IS 'Invoices of a PMS reservation (one per room stay, or one for a group), replaced whole with every newer version of the reservation. Items in pms_invoice_items.';
COMMENT ON COLUMN pms_invoices.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_invoices.number IS 'Reservation number (pms_reservations.number).';
COMMENT ON COLUMN pms_invoices.position IS 'Position of the invoice in the provider''s answer (0-based).';
COMMENT ON COLUMN pms_invoices.invoice_number IS 'Invoice number as the PMS gives it.';
COMMENT ON COLUMN pms_invoices.pms_room_stay_id IS 'The room stay invoiced (pms_room_stays.pms_room_stay_id); NULL for a group invoice.';
COMMENT ON COLUMN pms_invoices.payer_name IS 'Who pays: a company (pms_companies.name) or a person (personal data).';
COMMENT ON COLUMN pms_invoices.total IS 'Sum of the items'' totals with tax (pms_invoice_items.total_with_tax).';
COMMENT ON COLUMN pms_invoices.currency_code IS 'Currency of the items (the reservation''s when an item gives none).';
COMMENT ON COLUMN pms_invoices.synced_at IS 'When staysync last wrote this row (UTC): the transaction that wrote the reservation version the invoice was read with. A rebuild keeps it.';
COMMENT ON COLUMN pms_invoices.raw IS 'The invoice as received (personal data: the payer).';

CREATE TABLE pms_invoice_items (
  property_id       text        NOT NULL,
  number            text        NOT NULL,
  invoice_position  integer     NOT NULL,
  position          integer     NOT NULL,
  kind              text,
  name              text,
  accounting_code   text,
  quantity          numeric,
  unit              text,
  total             numeric,
  vat_applicable    boolean,
  vat_included      boolean,
  vat_percent       numeric,
  currency_code     text,
  -- The amounts an accountant adds up, derived by the database from the four above (cents).
  total_with_tax    numeric GENERATED ALWAYS AS (
    CASE WHEN vat_applicable AND NOT vat_included AND vat_percent IS NOT NULL THEN round(total * (100 + vat_percent) / 100, 2) ELSE total END) STORED,
  total_without_tax numeric GENERATED ALWAYS AS (
    CASE WHEN vat_applicable AND vat_included IS NOT FALSE AND vat_percent IS NOT NULL THEN round(total * 100 / (100 + vat_percent), 2) ELSE total END) STORED,
  synced_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, number, invoice_position, position)
);
CREATE INDEX pms_invoice_items_accounting ON pms_invoice_items (property_id, accounting_code);
COMMENT ON TABLE pms_invoice_items IS 'Line items of PMS invoices: accommodation (RoomType), services (Option), transfers, with quantity, tax and amounts.';
COMMENT ON COLUMN pms_invoice_items.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_invoice_items.number IS 'Reservation number.';
COMMENT ON COLUMN pms_invoice_items.invoice_position IS 'The invoice (pms_invoices.position).';
COMMENT ON COLUMN pms_invoice_items.position IS 'Position of the item in the invoice (0-based).';
COMMENT ON COLUMN pms_invoice_items.kind IS 'RoomType (accommodation), Option (a service), Transfer, or a newer provider value.';
COMMENT ON COLUMN pms_invoice_items.name IS 'Description of the item.';
COMMENT ON COLUMN pms_invoice_items.accounting_code IS 'The hotel''s accounting code of the item, for the ledger.';
COMMENT ON COLUMN pms_invoice_items.quantity IS 'Quantity, in unit.';
COMMENT ON COLUMN pms_invoice_items.unit IS 'Pcs, Hours, Nights, or a newer provider value.';
COMMENT ON COLUMN pms_invoice_items.total IS 'The item''s total as the PMS gives it (documented as tax included).';
COMMENT ON COLUMN pms_invoice_items.total_with_tax IS 'Total with VAT: total, plus VAT when it applies and total does not include it (rounded to cents).';
COMMENT ON COLUMN pms_invoice_items.total_without_tax IS 'Total without VAT (net): total, less the VAT it includes when VAT applies (rounded to cents). The item''s VAT is total_with_tax - total_without_tax.';
COMMENT ON COLUMN pms_invoice_items.vat_applicable IS 'Whether VAT applies to the item.';
COMMENT ON COLUMN pms_invoice_items.vat_included IS 'Whether total includes VAT.';
COMMENT ON COLUMN pms_invoice_items.vat_percent IS 'VAT rate, percent.';
COMMENT ON COLUMN pms_invoice_items.currency_code IS 'Currency of the amounts.';
COMMENT ON COLUMN pms_invoice_items.synced_at IS 'When staysync last wrote this row (UTC): its invoice''s. A rebuild keeps it.';

CREATE TABLE pms_companies (
  property_id   text        NOT NULL,
  company_id    text        NOT NULL,
  name          text,
  company_type  text,
  raw           jsonb       NOT NULL,
  content_hash  text        NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  removed_at    timestamptz,
  synced_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (property_id, company_id)
);
COMMENT ON TABLE pms_companies IS 'Companies of each property in the PMS (customers and agents), refreshed with content. pms_reservations.customer_company_id and pms_invoices.payer_name name them.';
COMMENT ON COLUMN pms_companies.property_id IS 'Provider property id.';
COMMENT ON COLUMN pms_companies.company_id IS 'PMS company id (pms_reservations.customer_company_id).';
COMMENT ON COLUMN pms_companies.name IS 'Company name.';
COMMENT ON COLUMN pms_companies.company_type IS 'Customer (a customer company) or Payer (an agent company).';
COMMENT ON COLUMN pms_companies.raw IS 'The company as received.';
COMMENT ON COLUMN pms_companies.content_hash IS 'Hash of raw: an unchanged company is not written again.';
COMMENT ON COLUMN pms_companies.updated_at IS 'When the row last changed (UTC).';
COMMENT ON COLUMN pms_companies.removed_at IS 'When the company disappeared from the list (UTC); NULL while it is listed.';
COMMENT ON COLUMN pms_companies.synced_at IS 'When staysync last wrote this row (UTC): the refresh that found it new or changed. A rebuild keeps it.';

ALTER TABLE pms_reservations ADD COLUMN invoices_read_at timestamptz;
COMMENT ON COLUMN pms_reservations.invoices_read_at IS 'When the invoices of this version were read (pms_invoices); NULL: not read yet (a reservation mirrored before 0.2.0 until its next change, or one whose invoices could not be read).';

-- The PMS's own words: payAmount is "amount due for payment", refundAmount "amount for a refund".
COMMENT ON COLUMN pms_room_stays.pay_amount IS 'Amount due for payment: what the guest or payer still owes for the stay.';
COMMENT ON COLUMN pms_room_stays.refund_amount IS 'Amount for a refund: what is owed back to the guest.';

ALTER TABLE quarantine DROP CONSTRAINT quarantine_stream_check;
ALTER TABLE quarantine
  ADD CONSTRAINT quarantine_stream_check CHECK (stream IN ('booking_summaries', 'booking_details', 'content', 'pms_reservations', 'pms_rooms', 'pms_guests', 'pms_invoices', 'pms_companies', 'daily_occupancy', 'webhook_events', 'webhook_receiver'));
