/**
 * The local server's login for reporting tools (staysync_reader). The local server's superuser
 * is the daemon's own: a superuser can run programs on the host as the server's OS user
 * (`COPY … TO PROGRAM`), read and write any file the server can, so a reporting tool holding
 * it would hold the machine. `run` and `sync --once` keep this read-only login instead, after
 * their migrations (grant-reader's grants: a reader without personal data, of every property;
 * src/store/reader-role.ts), with no attribute beyond LOGIN, and its password in
 * reader.credentials next to postgres.credentials.
 *
 * Idempotent across restarts: the password file is created once and kept; the role is created
 * when missing, and every start sets its password to the file's again (the file is the truth:
 * a password changed by hand, or a role created by someone else, is brought back to it).
 */
import { access } from 'node:fs/promises';
import type { Logger } from '../util/log.js';
import type { Db } from '../store/types.js';
import { readOrCreatePassword } from './local-server.js';
import type { LocalLogins, ShownLogin } from '../store/database.js';
import { grantReader, roleExists, type ReaderSchemas } from '../store/reader-role.js';

/** Creates or updates the reader login and says, once, how reporting tools connect. */
export async function ensureLocalReader(db: Db, login: ShownLogin, schemas: ReaderSchemas, logger: Logger): Promise<void> {
  const password = await readOrCreatePassword(login.passwordFile);
  const result = await grantReader(db, { role: login.role, password, ...schemas, onlyLogin: true });
  logger.info(
    { url: login.url, passwordFile: login.passwordFile, role: login.role, created: result.created, schemas: result.schemas },
    `reporting tools connect with ${login.url} (read-only), password in ${login.passwordFile}`,
  );
}

/** The local server's logins as `status` shows them: URLs without password, and the password files. */
export interface LocalServerStatus {
  readerRole: string;
  readerUrl: string;
  readerPasswordFile: string;
  /** Whether the reader login exists (false until `run` or `sync --once` has started once with this version). */
  readerReady: boolean;
  /** The superuser: for administration only. */
  superuserUrl: string;
  superuserPasswordFile: string;
}

export async function localServerStatus(db: Db, logins: LocalLogins): Promise<LocalServerStatus> {
  const { reader, superuser } = logins;
  const fileExists = await access(reader.passwordFile).then(
    () => true,
    () => false,
  );
  const role = await roleExists(db, reader.role);
  return {
    readerRole: reader.role,
    readerUrl: reader.url,
    readerPasswordFile: reader.passwordFile,
    readerReady: fileExists && role,
    superuserUrl: superuser.url,
    superuserPasswordFile: superuser.passwordFile,
  };
}

/** The lines of `status` about the local server's logins. */
export function localServerLines(s: LocalServerStatus): string[] {
  return [
    s.readerReady
      ? `Reporting tools connect with ${s.readerUrl} (read-only), password in ${s.readerPasswordFile}`
      : `Reporting tools: the read-only login ${s.readerRole} is created at the next start of \`staysync run\` or \`staysync sync --once\``,
    `Administration only (superuser): ${s.superuserUrl}, password in ${s.superuserPasswordFile}`,
  ];
}
