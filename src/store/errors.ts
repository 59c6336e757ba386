/**
 * Errors of the database layer, and how a PostgreSQL or driver error is classified: the
 * database is away (wait for it), the configuration is wrong (stop and say which setting), or
 * the statement itself failed (the caller decides).
 */

/** SQLSTATE codes and driver messages that mean "the server is not there right now". */
const unavailableCodes = new Set([
  // Operating system / network level (from node:net and node:dns).
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
  // PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now (starting or stopping),
  // too_many_connections.
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

const unavailableMessages = [
  /connection terminated/i,
  /connection ended unexpectedly/i,
  /not queryable/i,
  /timeout exceeded when trying to connect/i,
  /server closed the connection unexpectedly/i,
  /the database system is (starting up|shutting down|in recovery mode)/i,
];

/**
 * Errors that no retry fixes: wrong password or user (class 28), the database does not exist
 * (3D000), no permission (42501), an unknown host name (ENOTFOUND).
 */
const configurationCodes = new Set(['28P01', '28000', '3D000', '42501', 'ENOTFOUND']);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** True when `err` means the database server cannot be reached or just went away. */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof DatabaseUnavailableError) return true;
  const code = codeOf(err);
  if (code !== undefined && (unavailableCodes.has(code) || code.startsWith('08'))) return true;
  if (err instanceof AggregateError) return err.errors.some(isDatabaseUnavailable);
  return unavailableMessages.some((re) => re.test(err.message));
}

/** True when `err` means the database settings are wrong (DATABASE_URL, role, privileges). */
export function isDatabaseMisconfigured(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && configurationCodes.has(code);
}

/** A transaction that failed only because it met another one (serialization, deadlock): run it again. */
export function isTransactionConflict(err: unknown): boolean {
  const code = codeOf(err);
  return code === '40001' || code === '40P01';
}

/**
 * True when the database refused a statement for the data it carries, not for its own state:
 * a data exception (class 22: a NUL in text or jsonb, a number beyond numeric, a bad date), an
 * integrity violation (class 23) or a value over a limit (class 54, an index row too large).
 * Storing the same data again fails again.
 */
export function isDataRefused(err: unknown): boolean {
  const code = codeOf(err);
  return code !== undefined && /^(22|23|54)/.test(code);
}

/** `postgres://user@host:port/db` without the password, for messages. */
export function describeDatabaseUrl(url: string | undefined): string {
  if (!url) return 'the embedded database';
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString().replace(/\?.*$/, '');
  } catch {
    return 'the database of DATABASE_URL';
  }
}

/** The database could not be reached (and the caller should wait for it, or give up). */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
}

/** The database refuses us for good: wrong DATABASE_URL, password, database name or privileges. */
export class DatabaseConfigurationError extends Error {
  override name = 'DatabaseConfigurationError';
}

/**
 * A write was refused because this process no longer holds the schema's lock (its
 * lease session dropped, and perhaps another process took over). Nothing was written; the
 * process waits until it holds the lease again.
 */
export class FenceLostError extends Error {
  override name = 'FenceLostError';
}

/** Another process holds the lock of the schema (sync --once does not wait for it). */
export class HeldElsewhereError extends Error {
  override name = 'HeldElsewhereError';
}

/** A migration file failed; the message names it. */
export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** One short line for a database error: its SQLSTATE or errno code, then the message. */
export function describeDatabaseError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof AggregateError && err.errors.length > 0 && !err.message) return describeDatabaseError(err.errors[0]);
  const code = codeOf(err);
  const message = err.message.replace(/\s+/g, ' ').trim() || err.name;
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/** The local server (no DATABASE_URL) cannot be started; the message says which setting to change. */
export class LocalServerError extends Error {
  override name = 'LocalServerError';
}
