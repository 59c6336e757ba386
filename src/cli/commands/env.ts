/**
 * What every command gets (free of process concerns: signals, argv and exit statuses are
 * main.ts's), and how a command turns a database error into the operator's sentence.
 */
import { type Config } from '../../config/config.js';
import { type DatabaseHandle } from '../../store/database.js';
import {
  DatabaseConfigurationError,
  DatabaseUnavailableError,
  describeDatabaseError,
  isDatabaseMisconfigured,
  isDatabaseUnavailable,
} from '../../store/errors.js';
import type { Logger } from '../../util/log.js';

export interface CommandEnv {
  config: Config;
  logger: Logger;
  /** Aborts on the first SIGTERM/SIGINT: stop starting work, finish what is in flight. */
  signal: AbortSignal;
  /** Aborts when the shutdown grace time is nearly over: stop waiting for in-flight work. */
  graceSignal: AbortSignal;
  /** Where human-readable output goes (status). */
  out: (line: string) => void;
  /** Registers a callback for a reload request (SIGHUP); returns how to unregister it. */
  onReload?: (callback: () => void) => () => void;
}

export function databaseSentence(err: unknown, h: DatabaseHandle): string {
  return `the database ${h.description} refused us: ${describeDatabaseError(err)}. Check DATABASE_URL (host, database name, user and password) and the role's privileges`;
}

/** Turns a database error of a command into the sentence the operator needs. */
export function rethrowDatabase(err: unknown, h: DatabaseHandle): never {
  if (isDatabaseMisconfigured(err)) throw new DatabaseConfigurationError(databaseSentence(err, h), { cause: err });
  if (isDatabaseUnavailable(err)) {
    throw new DatabaseUnavailableError(
      `the database ${h.description} is unreachable: ${describeDatabaseError(err)}. Check DATABASE_URL and that PostgreSQL runs`,
      { cause: err },
    );
  }
  throw err;
}

/**
 * For a command that needs the schemas as this staysync knows them (and does not migrate them
 * itself): false, with the sentence logged, when they are missing or older.
 */
export async function schemaIsCurrent(env: CommandEnv, h: DatabaseHandle): Promise<boolean> {
  const pending = await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
  if (pending !== null && pending.length === 0) return true;
  env.logger.error(
    `the schema "${h.schema}" in ${h.description} is missing or older than this staysync: start \`staysync run\` or run \`staysync migrate\` first`,
  );
  return false;
}
