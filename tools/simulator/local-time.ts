/**
 * Property-local wall-clock time for the PMS side of the simulator: the PMS API speaks in the
 * property's IANA time zone without an offset (`YYYY-MM-DDTHH:mm`, and with seconds in the
 * integration storage), while modification times are UTC.
 */

const DAY_MS = 86_400_000;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Zone offsets by (zone, UTC day) and, on the days the offset changes, by (zone, quarter hour); bounded. */
const offsets = new Map<string, number>();
const QUARTER_MS = 900_000;
/** Marks a day whose offset changes within it: look at its quarter hours. */
const CHANGES = Number.NaN;

/** Offset of `timeZone` at exactly `at` (local minus UTC, in ms), from Intl. */
function offsetOf(at: number, timeZone: string): number {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(at))) parts[p.type] = p.value;
  const wall = Date.UTC(
    Number(parts['year']),
    Number(parts['month']) - 1,
    Number(parts['day']),
    Number(parts['hour']),
    Number(parts['minute']),
    Number(parts['second']),
  );
  return wall - at;
}

function remember(key: string, value: number): number {
  if (offsets.size >= 200_000) offsets.clear();
  offsets.set(key, value);
  return value;
}

/**
 * Offset of `timeZone` at the instant `ms` (local minus UTC, in ms). Zones change their offset
 * at most once a day and at a quarter hour of UTC (true of every zone the simulator uses, and
 * of nearly all others since 1970): a day whose start and end have the same offset has it
 * throughout; on the other days the offset is looked up per quarter hour.
 */
function offsetAt(ms: number, timeZone: string): number {
  const day = Math.floor(ms / DAY_MS);
  const dayKey = `${timeZone}|d${day}`;
  let off = offsets.get(dayKey);
  if (off === undefined) {
    const start = offsetOf(day * DAY_MS, timeZone);
    off = remember(dayKey, start === offsetOf((day + 1) * DAY_MS - QUARTER_MS, timeZone) ? start : CHANGES);
  }
  if (!Number.isNaN(off)) return off;
  const quarter = Math.floor(ms / QUARTER_MS);
  const key = `${timeZone}|q${quarter}`;
  return offsets.get(key) ?? remember(key, offsetOf(quarter * QUARTER_MS, timeZone));
}

/** `YYYY-MM-DDTHH:mm:ss` of the instant `ms` in `timeZone` (seconds truncated). */
export function localSeconds(ms: number, timeZone: string): string {
  const floored = Math.floor(ms / 1000) * 1000;
  return new Date(floored + offsetAt(floored, timeZone)).toISOString().slice(0, 19);
}

/** `YYYY-MM-DDTHH:mm` of the instant `ms` in `timeZone` (truncated to the minute). */
export function localMinute(ms: number, timeZone: string): string {
  return localSeconds(ms, timeZone).slice(0, 16);
}

/** `YYYY-MM-DD` of the instant `ms` in `timeZone`. */
export function localDate(ms: number, timeZone: string): string {
  return localSeconds(ms, timeZone).slice(0, 10);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/**
 * Milliseconds of a wall-clock time read as if it were UTC (no zone involved), or NaN when
 * `text` is not `YYYY-MM-DDTHH:mm[:ss]` naming a real calendar time.
 */
export function wallClockMs(text: string): number {
  const m = LOCAL.exec(text);
  if (!m) return NaN;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4], m[5], m[6] ?? '0'].map(Number) as [number, number, number, number, number, number];
  if (h > 23 || mi > 59 || s > 59) return NaN;
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) return NaN;
  return ms;
}

/**
 * The UTC instant of a property-local wall-clock time. In an overlap (the clock set back) it is
 * the earlier of the two instants; in a gap (the clock set forward) the instant the same
 * distance after the gap's start as the time is after it.
 */
export function localToUtcMs(local: string, timeZone: string): number {
  const wall = wallClockMs(local);
  if (Number.isNaN(wall)) throw new Error(`not a local date-time: ${local}`);
  // The offsets before and after any change near this time (zones change at most once in two days).
  const before = wall - offsetAt(wall - DAY_MS, timeZone);
  const after = wall - offsetAt(wall + DAY_MS, timeZone);
  const valid = [before, after].filter((utc) => utc + offsetAt(utc, timeZone) === wall);
  return valid.length > 0 ? Math.min(...valid) : before;
}

/** `YYYY-MM-DD` of a day number (days since 1970-01-01). */
export function dayString(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** Day number of `YYYY-MM-DD`, or NaN when it is not a real date. */
export function dayNumber(date: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return NaN;
  const ms = wallClockMs(`${date}T00:00`);
  return Number.isNaN(ms) ? NaN : ms / DAY_MS;
}

/** Adds minutes to a wall-clock `YYYY-MM-DDTHH:mm` (calendar arithmetic, no zone). */
export function addMinutes(local: string, minutes: number): string {
  return new Date(wallClockMs(local) + minutes * 60_000).toISOString().slice(0, 16);
}
