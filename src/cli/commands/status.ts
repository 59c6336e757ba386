/** `status [--json]`: what the mirror holds and how its streams, connections and replicas are doing. */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, type CommandEnv } from './env.js';
import { localServerLines, localServerStatus } from '../../local-pg/reader-login.js';
import { formatStatus, gatherStatus } from '../../ops/status.js';

/** `status [--json]`: reads only; never takes the lease, never migrates. */
export async function statusCommand(env: CommandEnv, json: boolean): Promise<number> {
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    const pending = await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
    if (pending === null || pending.length > 0) {
      const what =
        pending === null
          ? `the database ${h.description} has no staysync schema "${h.schema}" yet`
          : `the schema "${h.schema}" in ${h.description} is older than this staysync (pending migrations: ${pending.join(', ')})`;
      env.logger.error(`${what}: start \`staysync run\` or run \`staysync migrate\` first (status changes nothing)`);
      return ExitCode.failure;
    }
    const report = await gatherStatus(h.control, env.config);
    // The local server's logins (it answers only on 127.0.0.1): URLs without password, and where the passwords are.
    const local = h.localServer ? await localServerStatus(h.control, h.localServer).catch((err: unknown) => rethrowDatabase(err, h)) : undefined;
    if (json) env.out(JSON.stringify({ ...report, ...(local ? { localServer: local } : {}) }, null, 2));
    else {
      if (local) for (const line of [`Database: ${h.description}`, ...localServerLines(local)]) env.out(line);
      for (const line of formatStatus(report)) env.out(line);
    }
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}
