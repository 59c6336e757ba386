/** `migrate`: applies pending migrations and exits. */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, type CommandEnv } from './env.js';

export async function migrateCommand(env: CommandEnv): Promise<number> {
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    const applied = await h.migrate().catch((err: unknown) => rethrowDatabase(err, h));
    env.logger.info({ applied, schema: h.schema }, applied.length ? 'migrations applied' : 'database schema is up to date');
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}
