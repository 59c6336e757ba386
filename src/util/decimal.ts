/**
 * Exact decimal arithmetic on the provider's money texts, with PostgreSQL `numeric`'s rules for
 * the scale of a result and its rounding (half away from zero), so that a figure the daemon
 * computes equals the one the same formula gives in SQL.
 *
 * Why not numbers: money arrives as text with every digit (`28.0000`, 17 significant digits,
 * `1.5E+3`); a float would change it. Why not a library: four operations on bigints are all the
 * mapping needs (a night's share of its stay's taxes).
 */

/** A decimal: `units × 10^-scale`. The scale is kept as numeric keeps it (`28.0000` has scale 4). */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

const NUMERIC = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** Parses a numeric text as PostgreSQL's numeric input does (exponent forms included). */
export function parseDecimal(text: string): Decimal {
  const m = NUMERIC.exec(text.trim());
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error(`not a decimal number: ${JSON.stringify(text)}`);
  const [, sign, whole = '', fraction = '', exponentText] = m;
  const exponent = exponentText === undefined ? 0 : Number(exponentText);
  // numeric keeps the fraction digits written, moved by the exponent, never below zero.
  const scale = Math.max(0, fraction.length - exponent);
  const digits = BigInt(`${whole}${fraction}` || '0');
  const shift = scale - fraction.length + exponent; // how far the written digits move left
  const units = shift >= 0 ? digits * 10n ** BigInt(shift) : digits / 10n ** BigInt(-shift);
  return { units: sign === '-' ? -units : units, scale };
}

const ZERO: Decimal = { units: 0n, scale: 0 };

function rescale(d: Decimal, scale: number): bigint {
  return d.units * 10n ** BigInt(scale - d.scale);
}

/** a + b, at the larger scale (numeric's rule). */
export function add(a: Decimal, b: Decimal): Decimal {
  const scale = Math.max(a.scale, b.scale);
  return { units: rescale(a, scale) + rescale(b, scale), scale };
}

/** a - b, at the larger scale. */
export function subtract(a: Decimal, b: Decimal): Decimal {
  return add(a, { units: -b.units, scale: b.scale });
}

/** The sum of the values (zero at scale 0 for none). */
export function sum(values: readonly Decimal[]): Decimal {
  return values.reduce(add, ZERO);
}

/** Integer division rounded half away from zero. */
function divideRounded(numerator: bigint, denominator: bigint): bigint {
  const negative = numerator < 0n !== denominator < 0n;
  const n = numerator < 0n ? -numerator : numerator;
  const d = denominator < 0n ? -denominator : denominator;
  const q = (2n * n + d) / (2n * d);
  return negative ? -q : q;
}

/**
 * round(a × b / c, places), computed exactly and rounded half away from zero once. SQL's
 * numeric division first rounds the quotient to at least 16 significant digits; the two can
 * differ only when a quotient lies within 10^-16 of a rounding boundary, which money amounts
 * of a few decimals do not reach.
 */
export function mulDivRound(a: Decimal, b: Decimal, c: Decimal, places: number): Decimal {
  if (c.units === 0n) throw new Error('division by zero');
  // a×b/c = (ua·ub / uc) × 10^(sc - sa - sb); scaled to `places` decimals.
  const exponent = places + c.scale - a.scale - b.scale;
  let numerator = a.units * b.units;
  let denominator = c.units;
  if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else denominator *= 10n ** BigInt(-exponent);
  return { units: divideRounded(numerator, denominator), scale: places };
}

/** The decimal as numeric prints it: every digit of its scale. */
export function formatDecimal(d: Decimal): string {
  const negative = d.units < 0n;
  const digits = (negative ? -d.units : d.units).toString().padStart(d.scale + 1, '0');
  const whole = digits.slice(0, digits.length - d.scale);
  const fraction = digits.slice(digits.length - d.scale);
  return `${negative ? '-' : ''}${whole}${d.scale > 0 ? `.${fraction}` : ''}`;
}

/** True when both are the same number, whatever their scales (numeric's equality). */
export function equalDecimals(a: Decimal, b: Decimal): boolean {
  return subtract(a, b).units === 0n;
}
