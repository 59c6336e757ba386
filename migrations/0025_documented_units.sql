-- Totals and units as the provider's documents give them (issue 36, point 3).

-- ------------------------------------------------------------------ invoice items

-- An invoice item's total is documented "Cost of an invoice item, tax INCLUDED"
-- (PmsApi_InvoiceItem.total). 0020 read vat.included = false as "VAT comes on top of total" and
-- added it; the document says the total holds the tax whatever vat.included says (which tells
-- how the hotel quotes its prices). So the total with tax is the total, and the net is the
-- total less the VAT it holds whenever VAT applies.
--
-- PostgreSQL 15 cannot change a generated column's expression: the two columns are made again.
-- CASCADE drops what reads them: staysync's own readable views and reporting layer, made again
-- after the migrations at this same start (pms_invoice_items is new in 0.2.0: no view of a
-- user's can read it yet).
ALTER TABLE pms_invoice_items DROP COLUMN total_with_tax CASCADE, DROP COLUMN total_without_tax CASCADE;
ALTER TABLE pms_invoice_items
  ADD COLUMN total_with_tax numeric GENERATED ALWAYS AS (total) STORED,
  ADD COLUMN total_without_tax numeric GENERATED ALWAYS AS (
    CASE WHEN vat_applicable AND vat_percent IS NOT NULL THEN round(total * 100 / (100 + vat_percent), 2) ELSE total END) STORED;
COMMENT ON COLUMN pms_invoice_items.total IS 'The item''s total as the PMS gives it: tax included, as documented ("Cost of an invoice item, tax INCLUDED"), whatever vat_included says.';
COMMENT ON COLUMN pms_invoice_items.total_with_tax IS 'Total with VAT: total itself (documented as tax included).';
COMMENT ON COLUMN pms_invoice_items.total_without_tax IS 'Total without VAT (net): total less the VAT it includes when VAT applies (total × 100 / (100 + vat_percent), rounded to cents), else total. The item''s VAT is total_with_tax - total_without_tax.';
COMMENT ON COLUMN pms_invoice_items.vat_included IS 'The PMS''s vat.included ("Is VAT included in the total price?"): how the hotel quotes the price. The item''s total includes VAT either way.';
COMMENT ON COLUMN pms_invoice_items.currency_code IS 'Currency of the amounts (the reservation''s when the item gives none). The items of one invoice may be in several currencies.';

-- An invoice's total adds its items' totals when they are in one currency; with items in
-- several it has none (pms_invoice_items has each). The mapping version 6 rebuild derives both
-- again from raw.
COMMENT ON COLUMN pms_invoices.total IS 'Sum of the items'' totals, tax included (pms_invoice_items.total), when the items are in one currency; NULL when they are in several (add pms_invoice_items per currency) or give no total.';
COMMENT ON COLUMN pms_invoices.currency_code IS 'Currency of the items (the reservation''s when an item gives none); NULL when the items are in several currencies.';

-- ------------------------------------------------------------------ meal revenue

-- The specification lists a day's mealRevenue with no description and no promise that it is
-- there; 0004 stored a day without one as a meal revenue of 0. Not given is NULL: the nights
-- mirrored before get it from their raw (the day as received), and their open version in
-- daily_occupancy_history with them, so that occupancy_as_of says the same. A version that has
-- ended kept no raw: it stays as it was.
ALTER TABLE daily_occupancy ALTER COLUMN meal_revenue DROP NOT NULL;
ALTER TABLE daily_occupancy_history ALTER COLUMN meal_revenue DROP NOT NULL;
UPDATE daily_occupancy_history h SET meal_revenue = NULL
  FROM daily_occupancy d
 WHERE d.property_id = h.property_id AND d.stay_date = h.stay_date AND h.valid_to IS NULL
   AND COALESCE(d.raw -> 'mealRevenue', 'null') = 'null' AND h.meal_revenue = 0;
UPDATE daily_occupancy SET meal_revenue = NULL
 WHERE COALESCE(raw -> 'mealRevenue', 'null') = 'null' AND meal_revenue = 0;
COMMENT ON COLUMN daily_occupancy.meal_revenue IS 'Meal revenue of the day; NULL when the PMS did not give it (not the same as 0).';
COMMENT ON COLUMN daily_occupancy_history.meal_revenue IS 'Meal revenue of the day; NULL when the PMS did not give it (not the same as 0).';

-- ------------------------------------------------------------------ loyalty cards

-- A loyalty card keeps its raw answer, as every other payload does (0024 kept the programme and
-- the number only): a field the provider sends that no column holds is not lost, and a rebuild
-- derives the columns again. It is personal data (the number, with pms.personalData), withheld
-- from readers without --personal-data and erased with its person. The cards mirrored before
-- (0024 is new in 0.2.0: a build of main) get what their columns kept.
ALTER TABLE pms_guest_loyalty_cards ADD COLUMN raw jsonb;
UPDATE pms_guest_loyalty_cards
   SET raw = jsonb_build_object('programId', program_id) || CASE WHEN card_number IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('cardNumber', card_number) END;
ALTER TABLE pms_guest_loyalty_cards ALTER COLUMN raw SET NOT NULL;
COMMENT ON COLUMN pms_guest_loyalty_cards.raw IS 'The card as received (PmsApi_PersonLoyalty), its number only with pms.personalData (personal data: erased with the person).';
