/**
 * Prepared statements for the statements the sync runs for every booking it writes.
 *
 * PostgreSQL parses and plans an unnamed statement each time it runs. For the booking write
 * (a few statements of many CTEs) that was a third of the database's time per booking
 * (docs/benchmarks.md, "The cost of history on the write path"). A statement marked with
 * `prepared()` is sent as a named statement instead: parsed once per connection, and after
 * five runs PostgreSQL keeps a generic plan when it costs no more than the custom ones, so a
 * booking costs its execution only.
 *
 * Only statements of a fixed text are marked (their values are all parameters): each text
 * becomes one statement on each connection of the pool for the life of the connection. The
 * number of texts is bounded by MAX_NAMED_TEXTS as a safeguard; past it a marked statement is
 * run unnamed, as any other.
 */
import { createHash } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/** How a marked statement's text begins. */
const MARK = '/* prepared */ ';
/** At most this many distinct texts are named (the write path has fewer than ten). */
const MAX_NAMED_TEXTS = 64;

/** Marks a statement of a fixed text to run as a prepared statement (see the module's comment). */
export function prepared<T>(statement: RawBuilder<T>): RawBuilder<T> {
  return sql<T>`${sql.raw(MARK)}${statement}`;
}

/** The same for a statement given as text (its values as parameters). */
export const preparedText = (text: string): string => MARK + text;

const names = new Map<string, string>();

/** The statement name of a marked text (a hash of it: the same text has the same name on every connection), or undefined. */
function nameOf(text: string): string | undefined {
  if (!text.startsWith(MARK)) return undefined;
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED_TEXTS) {
    name = `staysync_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * The pool as kysely's dialect sees it: every client it hands out runs the marked statements as
 * named ones (pg keeps the names it has prepared on each connection, and prepares a name the
 * first time a connection runs it).
 */
export function preparingPool(pool: pg.Pool): PostgresPool {
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    // A cursor (a stream of rows) is passed through as it is.
    const query = (text: unknown, values?: readonly unknown[]): unknown => {
      const name = typeof text === 'string' ? nameOf(text) : undefined;
      return name === undefined
        ? (client.query as (...args: unknown[]) => unknown)(text, values)
        : client.query({ name, text: text as string, values: values as unknown[] });
    };
    return { query: query as PostgresPoolClient['query'], release: () => client.release() };
  };
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}
