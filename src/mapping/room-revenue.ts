/**
 * How a room stay's revenue splits into nights. The provider gives each night's price before
 * tax, and the taxes and fees only per room stay (price after tax minus price before tax). Each
 * night gets a share of them in proportion to its net price (evenly when the stay's nights are
 * all zero-rate), rounded cumulatively to the amounts' scale (at least cents): a night's share
 * is round(taxes × net of the nights up to it / net of the stay) minus the same for the nights
 * before it. So a stay's shares add up to its taxes exactly, and its nightly gross amounts to
 * its price after tax. Pure; the same rule as docs/tables-and-reporting.md states.
 */
import { add, formatDecimal, mulDivRound, parseDecimal, subtract, sum, type Decimal } from '../util/decimal.js';

/** What the split needs of a room stay. */
export interface StayTotals {
  price_before_tax: string | null;
  price_after_tax: string | null;
  tax_amount: string | null;
}

const dec = (text: string | null): Decimal | null => (text === null ? null : parseDecimal(text));

/**
 * The taxes of a stay: price after tax minus price before tax when both are given, else its
 * tax amount, else zero.
 */
function stayTaxes(stay: StayTotals): Decimal {
  const before = dec(stay.price_before_tax);
  const after = dec(stay.price_after_tax);
  if (before && after) return subtract(after, before);
  return dec(stay.tax_amount) ?? { units: 0n, scale: 0 };
}

/**
 * The gross amount of each night of a stay, in the order of `nets` (the nights in stay order):
 * its net plus its share of the stay's taxes; null where the net is null.
 */
export function nightlyGross(stay: StayTotals | undefined, nets: readonly (string | null)[]): (string | null)[] {
  if (nets.length === 0) return [];
  const taxes = stay ? stayTaxes(stay) : { units: 0n, scale: 0 };
  const places = Math.max(2, taxes.scale);
  const values = nets.map(dec);
  const known = values.filter((v): v is Decimal => v !== null);
  const netSum = known.length > 0 ? sum(known) : null;
  const byNet = netSum !== null && netSum.units !== 0n;
  const count = { units: BigInt(nets.length), scale: 0 };
  let through: Decimal = { units: 0n, scale: 0 };
  let before = mulDivRound(taxes, { units: 0n, scale: 0 }, { units: 1n, scale: 0 }, places);
  return values.map((net, i) => {
    let upTo: Decimal;
    if (byNet) {
      if (net !== null) through = add(through, net);
      upTo = mulDivRound(taxes, through, netSum, places);
    } else {
      upTo = mulDivRound(taxes, { units: BigInt(i + 1), scale: 0 }, count, places);
    }
    const share = subtract(upTo, before);
    before = upTo;
    return net === null ? null : formatDecimal(add(net, share));
  });
}
