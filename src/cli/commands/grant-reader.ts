/** `grant-reader <role>`: a read-only login for a reporting tool. */
import { secretFromEnv } from '../../config/config.js';
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ExitCode } from '../exit.js';
import { rethrowDatabase, schemaIsCurrent, type CommandEnv } from './env.js';
import { grantReader, readerUrl, ReaderBusyError, ReaderPolicyError, ReaderRefusedError } from '../../store/reader-role.js';
import { readableSchemaOf } from '../../config/schema-names.js';

export interface GrantReaderArgs {
  role: string;
  personalData: boolean;
  /** --properties (a list), --all-properties (null), or neither (as recorded). */
  properties: string[] | null | undefined;
}

/**
 * `grant-reader <role>`: a read-only role for reporting tools. Needs the schemas (run or
 * migrate first) and a database role allowed to create roles; takes no lease (it writes no
 * mirror row). A role that would read more than a reader whatever it is granted (the daemon's
 * own, a superuser, …), or a property the mirror does not know, is refused with exit status 2.
 */
export async function grantReaderCommand(env: CommandEnv, args: GrantReaderArgs): Promise<number> {
  const { role, personalData } = args;
  // Before the database: a password file that cannot be read is a configuration error (exit 2).
  const password = secretFromEnv(process.env, 'STAYSYNC_READER_PASSWORD');
  const h = await openConfiguredDatabase(env.config, env.logger);
  try {
    if (!(await schemaIsCurrent(env, h))) return ExitCode.failure;
    const reportingSchema = env.config.database.reportingSchema;
    const configuredProperties = [...env.config.propertyIds, ...env.config.connections.flatMap((c) => c.propertyIds ?? [])];
    let result;
    try {
      result = await grantReader(h.db, {
        role,
        password,
        schema: h.schema,
        reportingSchema,
        personalData,
        properties: args.properties,
        configuredProperties,
      }).catch((err: unknown) =>
        err instanceof ReaderRefusedError || err instanceof ReaderBusyError || err instanceof ReaderPolicyError ? Promise.reject(err) : rethrowDatabase(err, h),
      );
    } catch (err) {
      if (err instanceof ReaderBusyError || err instanceof ReaderPolicyError) {
        env.logger.error(err.message);
        return ExitCode.failure;
      }
      if (!(err instanceof ReaderRefusedError)) throw err;
      process.stderr.write(`staysync: grant-reader refused: ${err.message}\n`);
      return ExitCode.usage;
    }
    const readable = readableSchemaOf(h.schema);
    env.out(
      `${result.created ? 'Created' : 'Updated'} role ${role}: it can read (SELECT only) ` +
        (personalData
          ? `the mirror with the columns of guests’ personal data (--personal-data) in the schema ${h.schema} (and without them in ${readable}), `
          : `the mirror without the columns of guests’ personal data (names, contact data, raw payloads) in the schema ${readable}, the same tables as views of the same names (grant-reader --personal-data grants the schema ${h.schema} with them), `) +
        `and the reporting views in ${reportingSchema}, including those made later.`,
    );
    const scope = result.properties;
    env.out(
      scope === null
        ? 'It sees the rows of every property (grant-reader --properties <ids> limits it).'
        : `It sees the rows of ${scope.length === 1 ? 'property' : 'properties'} ${scope.join(', ')} only (grant-reader --all-properties widens it).`,
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
