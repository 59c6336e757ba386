/** `grant-reader <role>`: a read-only login for a reporting tool. */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, schemaIsCurrent, type CommandEnv } from './env.js';
import { grantReader, readerUrl } from '../../store/reader-role.js';

/**
 * `grant-reader <role>`: a read-only role for reporting tools. Needs the schemas (run or
 * migrate first) and a database role allowed to create roles; takes no lease (it writes no
 * mirror row).
 */
export async function grantReaderCommand(env: CommandEnv, role: string, personalData = false): Promise<number> {
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    if (!(await schemaIsCurrent(env, h))) return ExitCode.failure;
    const password = process.env.STAYSYNC_READER_PASSWORD || undefined;
    const result = await grantReader(h.db, {
      role,
      password,
      schemas: [h.schema, env.config.database.reportingSchema],
      personalData,
    }).catch((err: unknown) => rethrowDatabase(err, h));
    env.out(
      `${result.created ? 'Created' : 'Updated'} role ${role}: it can read (SELECT only) the schemas ${result.schemas.join(' and ')}, ` +
        'tables and views, including those added by later migrations, ' +
        (personalData
          ? 'with the columns of guests’ personal data (--personal-data).'
          : 'without the columns of guests’ personal data (names, contact data, raw payloads; grant-reader --personal-data grants them).'),
    );
    // A password generated here is shown once, on its own line; the URL never carries one.
    if (result.generatedPassword) env.out(`Its password (shown once): ${result.generatedPassword}`);
    const which = result.generatedPassword ? 'the password above' : password ? 'the password of STAYSYNC_READER_PASSWORD' : 'its password';
    env.out(`Reporting tools connect with ${readerUrl(h.url, role)} and ${which}`);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}
