/**
 * What the integration-storage refreshes cost a property, from the real schedule: the default
 * configuration's roomInventory.refreshCron, horizon (daysBack, daysAhead), and the months and
 * windows the refreshes ask (src/mapping/room-inventory.ts), over a year of days. The figures
 * docs/replicas-and-sizing.md gives ("What the integration storage costs") must be these.
 */
import { readFileSync } from 'node:fs';
import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { dateWindows, monthsOf, stayUnitMonthsToAsk } from '../../src/mapping/room-inventory.js';
import { MAX_CODES_PER_PROPERTY } from '../../src/store/repositories/room-inventory.js';
import { addDays } from '../../src/util/local-time.js';

const config = loadConfig({ env: {} });
const { daysBack, daysAhead, refreshCron } = config.roomInventory;
const YEAR_FROM = new Date('2026-01-01T00:00:00Z');
const YEAR_TO = new Date('2027-01-01T00:00:00Z');

/** The refreshes of a year, as the property-local dates they run on (the zone changes nothing but the day boundary). */
function refreshDays(): string[] {
  const days: string[] = [];
  const cron = new Cron(refreshCron, { timezone: 'UTC' });
  for (let t = cron.nextRun(new Date(YEAR_FROM.getTime() - 1)); t && t < YEAR_TO; t = cron.nextRun(t)) days.push(t.toISOString().slice(0, 10));
  return days;
}

/**
 * Requests per day, averaged over the year, for one rate plan code (stay units) and for the
 * inventory search; and the most one refresh asks for one code (all properties of a client
 * refresh at the same minute: that is what the storage budget's hour must hold).
 */
function perDay(
  back = daysBack,
  ahead = daysAhead,
): { before: number; after: number; inventory: number; refreshesPerDay: number; mostBefore: number; mostAfter: number } {
  const days = refreshDays();
  const readAfterItEnded = new Set<string>();
  let before = 0;
  let after = 0;
  let inventory = 0;
  let mostBefore = 0;
  let mostAfter = 0;
  for (const today of days) {
    const months = monthsOf(addDays(today, -back), addDays(today, ahead));
    const thisMonth = `${today.slice(0, 7)}-01`;
    const asked = stayUnitMonthsToAsk(months, thisMonth, (m) => readAfterItEnded.has(m));
    before += months.length;
    after += asked.length;
    mostBefore = Math.max(mostBefore, months.length);
    // The first refresh reads every month: what is left after it is what a running daemon asks.
    if (readAfterItEnded.size > 0) mostAfter = Math.max(mostAfter, asked.length);
    for (const m of asked) if (m.to < today) readAfterItEnded.add(m.month);
    inventory += dateWindows(addDays(today, -back), addDays(today, ahead), 366).length;
  }
  const n = 365;
  return { before: before / n, after: after / n, inventory: inventory / n, refreshesPerDay: days.length / n, mostBefore, mostAfter };
}

const round = (x: number) => Math.round(x * 10) / 10;

describe('what the integration storage costs a property', () => {
  const cost = perDay();
  const year = perDay(365, 365);
  const budget = config.rateLimits.integrationStorage.find((w) => w.windowMs === 3_600_000)!.limit;
  const codes = MAX_CODES_PER_PROPERTY;

  it('stay units: this month and the later ones at every refresh, the earlier ones once after they ended', () => {
    expect(cost.refreshesPerDay).toBe(4);
    // The default horizon (31 days back, 365 ahead) touches 14 months, asked at every refresh before.
    expect(round(cost.before)).toBe(56.1);
    expect(round(cost.after)).toBe(52);
    // A year back and ahead (25 months): the months before this one were half of what was asked.
    expect(year.mostBefore).toBe(25);
    expect(year.mostAfter).toBe(14);
    // At the most codes, the properties of one client whose refreshes the storage budget's hour holds.
    expect(Math.floor(budget / (codes * year.mostBefore))).toBe(6);
    expect(Math.floor(budget / (codes * year.mostAfter))).toBe(10);
  });

  it('docs/replicas-and-sizing.md gives these figures', () => {
    const page = readFileSync(new URL('../../docs/replicas-and-sizing.md', import.meta.url), 'utf8');
    const fmt = (x: number) => round(x).toLocaleString('en-US');
    const whole = (x: number) => Math.round(x).toLocaleString('en-US');
    const rows = [
      `| stay units, one PMS rate plan code | ${fmt(cost.before)} | ${fmt(cost.after)} |`,
      `| stay units, ${codes} codes (the most asked) | ${whole(codes * cost.before)} | ${whole(codes * cost.after)} |`,
      `| stay units, ${codes} codes, a year back and a year ahead | ${whole(codes * year.before)} | ${whole(codes * year.after)} |`,
      `| inventory per room type and night | ${fmt(cost.inventory)} | ${fmt(cost.inventory)} |`,
      `${codes} codes and a year back and ahead asked ${fmt(codes * year.mostBefore)} requests a refresh`,
      `${fmt(codes * year.mostAfter)} now: the storage budget's ${fmt(budget)} an hour holds the refreshes of ${Math.floor(budget / (codes * year.mostAfter))} such properties of one API client, not ${Math.floor(budget / (codes * year.mostBefore))}`,
    ];
    for (const row of rows) expect(page, row).toContain(row);
  });
});
