/**
 * Small pure helpers of scenarios D and E: quantiles of measured latencies, the fewest PMS
 * search requests a backfill can make, and a Prometheus histogram read from its text form.
 */

/**
 * The q-quantile (0 <= q <= 1) of `values`, linearly interpolated between the two nearest
 * ranks (the usual "type 7" definition: the median of [1, 2, 3, 4] is 2.5). NaN when empty.
 */
export function quantile(values: readonly number[], q: number): number {
  if (!(q >= 0 && q <= 1)) throw new Error(`quantile: q must be within [0, 1], got ${q}`);
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export const DAY_MS = 86_400_000;
/** The provider's longest modification window of a reservation search. */
export const SEARCH_WINDOW_MS = 365 * DAY_MS;
/** The provider's largest search page. */
export const SEARCH_PAGE = 100;

export interface SearchMinimum {
  /** Modification windows needed to cover the span. */
  windows: number;
  /** Requests: per window and state, the pages its reservations need (at least one). */
  requests: number;
}

/**
 * The fewest reservation searches that read every reservation modified in [fromMs, toMs]:
 * ceil(span / 365 days) windows laid end to end from `fromMs`, each searched once per state
 * (Active, Cancelled), each search taking max(1, ceil(n / 100)) pages for the n reservations
 * of that window and state. Reservations outside the span are not counted.
 */
export function minSearchRequests(
  reservations: readonly { modifiedMs: number; cancelled: boolean }[],
  fromMs: number,
  toMs: number,
  windowMs = SEARCH_WINDOW_MS,
  pageSize = SEARCH_PAGE,
): SearchMinimum {
  if (!(toMs >= fromMs)) throw new Error('minSearchRequests: toMs must not be before fromMs');
  const windows = Math.max(1, Math.ceil((toMs - fromMs) / windowMs));
  const counts = Array.from({ length: windows }, () => [0, 0]);
  for (const r of reservations) {
    if (r.modifiedMs < fromMs || r.modifiedMs > toMs) continue;
    const w = Math.min(windows - 1, Math.floor((r.modifiedMs - fromMs) / windowMs));
    counts[w]![r.cancelled ? 1 : 0]!++;
  }
  let requests = 0;
  for (const byState of counts) for (const n of byState) requests += Math.max(1, Math.ceil(n / pageSize));
  return { windows, requests };
}

export interface HistogramReading {
  count: number;
  sum: number;
  /** Cumulative counts per upper bound (ascending, +Inf last), summed over every label set. */
  buckets: { le: number; count: number }[];
}

/** The samples of histogram `name` in a Prometheus text exposition, every label set added up; undefined when absent. */
export function readHistogram(text: string, name: string): HistogramReading | undefined {
  let count = 0;
  let sum = 0;
  let seen = false;
  const byLe = new Map<number, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^(\w+)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    if (m[1] === `${name}_count`) {
      count += value;
      seen = true;
    } else if (m[1] === `${name}_sum`) sum += value;
    else if (m[1] === `${name}_bucket`) {
      const le = /le="([^"]+)"/.exec(m[2] ?? '')?.[1];
      if (le === undefined) continue;
      const bound = le === '+Inf' ? Infinity : Number(le);
      byLe.set(bound, (byLe.get(bound) ?? 0) + value);
    }
  }
  if (!seen) return undefined;
  const buckets = [...byLe.entries()].sort(([a], [b]) => a - b).map(([le, c]) => ({ le, count: c }));
  return { count, sum, buckets };
}

/** The smallest bucket bound holding at least a share q of the observations (an upper bound of the q-quantile). */
export function histogramQuantileBound(h: HistogramReading, q: number): number {
  const want = q * h.count;
  for (const b of h.buckets) if (b.count >= want) return b.le;
  return Infinity;
}

/** How long `fn` took (ms), with what it returned. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t = performance.now();
  const value = await fn();
  return { ms: performance.now() - t, value };
}
