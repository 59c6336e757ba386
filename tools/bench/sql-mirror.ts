/**
 * A mirror that a scenario fills through SQL rather than through the daemon (H, reporting; I,
 * erasure): a million bookings generated in the database in minutes, where a sync would take
 * days. What both need before their load: the schema migrated as the daemon migrates it, empty,
 * in a schema of its own; and a client for the load whose running statement an interrupt
 * (Ctrl-C, `signal`) cancels from a second connection, since one load step takes minutes.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadConfig, type Config } from '../../src/config/config.js';
import { createLogger } from '../../src/util/log.js';
import { openForWriting } from '../common/database.js';
import { dropBenchSchemas, withPg } from './run.js';

export interface SqlMirror {
  schema: string;
  reportingSchema: string;
  config: Config;
  /** The loading client, search_path on the mirror's schema. */
  client: pg.Client;
  /** Ends the client; drops the schemas unless `keep`. */
  close(keep?: boolean): Promise<void>;
}

export async function openSqlMirror(opts: {
  databaseUrl: string;
  signal?: AbortSignal | undefined;
  /** What the scenario needs of the configuration beyond the database (e.g. pms.personalData). */
  overrides?: Record<string, unknown>;
  /** application_name of the loading client. */
  name: string;
}): Promise<SqlMirror> {
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const reportingSchema = `${schema}_reporting`;
  const config = loadConfig({
    env: {},
    overrides: { ...opts.overrides, database: { url: opts.databaseUrl, schema, reportingSchema }, log: { level: 'warn' } },
  });
  const drop = () => dropBenchSchemas(opts.databaseUrl, schema, reportingSchema);
  try {
    const handle = await openForWriting(config, createLogger('warn'));
    await handle.close();
  } catch (err) {
    await drop();
    throw err;
  }
  const client = new pg.Client({ connectionString: opts.databaseUrl, application_name: opts.name });
  await client.connect();
  const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const cancel = () => void withPg(opts.databaseUrl, (x) => x.query('SELECT pg_cancel_backend($1)', [pid])).catch(() => undefined);
  opts.signal?.addEventListener('abort', cancel, { once: true });
  await client.query(`SET search_path TO "${schema}", public`);
  return {
    schema,
    reportingSchema,
    config,
    client,
    async close(keep = false) {
      opts.signal?.removeEventListener('abort', cancel);
      await client.end();
      if (!keep) await drop();
    },
  };
}
