/**
 * The database of the configuration: the server of DATABASE_URL, or without it the local
 * server that staysync runs itself (started here, or used while another process of this
 * machine runs it), closed with the handle. Every command opens its database here.
 */
import type { Config } from '../config/config.js';
import { openDatabase, type DatabaseHandle, type OpenDatabaseOptions } from '../store/database.js';
import type { Logger } from '../util/log.js';
import { openLocalServer } from './local-server.js';

export async function openConfiguredDatabase(config: Config, logger: Logger, opts: Omit<OpenDatabaseOptions, 'server'> = {}): Promise<DatabaseHandle> {
  if (config.database.url) return openDatabase(config, logger, opts);
  const server = await openLocalServer({ dataDir: config.database.dataDir, port: config.database.localPort }, logger.child({ component: 'database' }));
  try {
    return await openDatabase(config, logger, { ...opts, server });
  } catch (err) {
    await server.close();
    throw err;
  }
}
