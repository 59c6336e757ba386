/**
 * The bench's arithmetic on a finished run and its output lines. Every number printed is
 * computed here from a RunResult and the windows, so index.ts only orchestrates.
 */
import type { RunResult, WindowFill } from './run.js';
import { maxRequestsIn, minTimeFor, type Window } from './theory.js';

export type Verdict = 'PASS' | 'MISS' | '';

export interface Line {
  label: string;
  value: string;
  detail: string;
  goal: string;
  verdict: Verdict;
}

export function formatLines(lines: readonly Line[]): string[] {
  const w = (f: (l: Line) => string, min: number) => Math.max(min, ...lines.map((l) => f(l).length));
  const wl = w((l) => l.label, 22);
  const wv = w((l) => l.value, 8);
  const wd = w((l) => l.detail, 30);
  const wg = w((l) => l.goal, 0);
  return lines.map((l) => `  ${l.label.padEnd(wl)}  ${l.value.padStart(wv)}   ${l.detail.padEnd(wd)}  ${l.goal.padEnd(wg)}  ${l.verdict}`.trimEnd());
}

export const mb = (bytes: number | undefined): string => (bytes === undefined ? 'n/a' : `${Math.round(bytes / 1048576)} MB`);
export const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;

export function windowsText(ws: readonly Window[]): string {
  return ws.map((w) => `${w.limit}/${w.windowMs} ms`).join(', ');
}

/** Peak-RSS goal of the bench: under 200 MB. */
export const RSS_GOAL_BYTES = 200 * 1024 * 1024;
/**
 * "Flat as the booking count grows": peak RSS at each size of scenario B may be at most 10%
 * above the smallest size's (10 and 50 times as many bookings by default).
 */
export const RSS_FLAT_RATIO = 1.1;

export interface BudgetAnalysis {
  lines: Line[];
  /** Extra, informative lines (not goals). */
  notes: string[];
}

/**
 * Scenario A: shares of the binding limits, 429s, calls per version, convergence against
 * the theoretical minimum, peak RSS.
 */
export function analyseBudgetRun(r: RunResult, detailWindows: readonly Window[], listWindows: readonly Window[]): BudgetAnalysis {
  const lines: Line[] = [];
  const notes: string[] = [];

  // Detail calls: the share is taken over the period the stream was active (first to last
  // accepted call), against what a perfect client could get in that same period.
  const dPeriod = Math.max(0, r.details.lastMs - r.details.firstMs);
  const dMax = maxRequestsIn(detailWindows, dPeriod);
  const dShare = dMax > 0 ? r.details.count / dMax : 0;
  lines.push({
    label: 'detail calls/s',
    value: (r.details.count / Math.max(dPeriod / 1000, 1e-3)).toFixed(1),
    detail: `share of binding limit ${pct(dShare)} (${r.details.count}/${dMax} in ${secs(dPeriod)})`,
    goal: '(goal >= 95%)',
    verdict: dShare >= 0.95 ? 'PASS' : 'MISS',
  });

  // List calls: pages of one property are sequential (each needs the previous token), so
  // a short list stream is bounded by round trips and page writes, not by the budget. It is
  // called budget-bound only when a perfect client would need a noticeable part of the
  // observed period to send the same number of calls.
  const lPeriod = Math.max(0, r.list.lastMs - r.list.firstMs);
  const lMax = maxRequestsIn(listWindows, lPeriod);
  const lShare = lMax > 0 ? r.list.count / lMax : 0;
  const lMinNeeded = minTimeFor(listWindows, r.list.count);
  const listBound = lPeriod > 0 && lMinNeeded >= 0.5 * lPeriod;
  lines.push({
    label: 'list calls/s',
    value: (r.list.count / Math.max(lPeriod / 1000, 1e-3)).toFixed(1),
    detail: listBound
      ? `share of binding limit ${pct(lShare)} (${r.list.count}/${lMax} in ${secs(lPeriod)})`
      : `not budget-bound: ${r.list.count} sequential pages in ${secs(lPeriod)}, share ${pct(lShare)}`,
    goal: listBound ? '(goal >= 95%)' : '(goal n/a)',
    verdict: listBound ? (lShare >= 0.95 ? 'PASS' : 'MISS') : '',
  });

  lines.push({
    label: '429 responses',
    value: String(r.rejected429),
    detail: statusText(r.byStatus),
    goal: '(goal 0)',
    verdict: r.rejected429 === 0 ? 'PASS' : 'MISS',
  });

  const perVersion = r.details.count / Math.max(1, r.bookings);
  lines.push({
    label: 'detail calls/version',
    value: perVersion.toFixed(2),
    detail: `${r.details.count} calls, ${r.bookings} versions, ${r.details.count - r.bookings} repeats`,
    goal: '(goal 1.00)',
    // Without churn every booking has one version: any call more than one per booking is waste,
    // even one that "1.00" would round away.
    verdict: r.details.count === r.bookings && r.distinctBookingsFetched === r.bookings ? 'PASS' : 'MISS',
  });

  // The theoretical minimum: the details stream binds (N bookings, N detail calls); the list
  // stream must also fit, and the first detail needs a listed summary, but requests are
  // instantaneous in the model, so the bound is the larger of the two greedy schedules.
  // Process start, migrations, the token and the first page's round trip all count against
  // the daemon: they are part of "time to converge".
  const theoryMs = Math.max(minTimeFor(detailWindows, r.bookings), minTimeFor(listWindows, r.list.count));
  const ratio = r.wallMs / Math.max(1, theoryMs);
  lines.push({
    label: 'converge / theoretical',
    value: ratio.toFixed(3),
    detail: `(${secs(r.wallMs)} / ${secs(theoryMs)})`,
    goal: '(goal <= 1.05)',
    verdict: ratio <= 1.05 ? 'PASS' : 'MISS',
  });

  lines.push({
    label: 'peak RSS',
    value: mb(r.peakRssBytes),
    detail: 'sync --once child (VmHWM)',
    goal: '(goal < 200 MB)',
    verdict: r.peakRssBytes === undefined ? '' : r.peakRssBytes < RSS_GOAL_BYTES ? 'PASS' : 'MISS',
  });

  notes.push(
    `first detail call ${secs(r.details.firstMs)} after spawn, last ${secs(r.details.lastMs)}, exit ${secs(r.wallMs)}; ` +
      `mirror ${r.mirroredBookings}/${r.bookings} bookings, ${r.queuePending} pending; ` +
      `${r.distinctBookingsFetched} distinct bookings fetched, at most ${r.maxCallsForOneBooking} calls for one`,
  );
  // Which window bound the run: a window never filled was not what limited the rate.
  notes.push(`detail window fill (fullest seen / limit): ${fillText(r.detailFill)}`);
  notes.push(logText(r));
  return { lines, notes };
}

export function fillText(fills: readonly WindowFill[]): string {
  return fills.map((f) => `${f.maxSeen}/${f.limit} per ${f.windowMs} ms`).join(', ');
}

export function statusText(byStatus: Record<number, number>): string {
  const parts = Object.entries(byStatus)
    .sort(([a], [b]) => Number(a) - Number(b))
    .map(([s, n]) => `${s}×${n}`);
  return `answers by status: ${parts.join(' ')}`;
}

export function logText(r: { log: RunResult['log'] }): string {
  const { warnings, errors, messages } = r.log;
  if (warnings === 0 && errors === 0) return 'daemon log: no warnings or errors';
  const top = messages
    .slice(0, 3)
    .map((m) => `${m.level} ×${m.count} "${m.msg.slice(0, 100)}"`)
    .join('; ');
  return `daemon log: ${warnings} warnings, ${errors} errors: ${top}`;
}
