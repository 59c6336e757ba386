/** Command-line arguments of staysync (kept apart from cli.ts so tests can import it). */
import type { Recovery } from '../sync/runtime/recovery.js';
import { PROPERTY_ID, PROPERTY_ID_SHAPE } from '../config/config.js';

export const usage = `usage: staysync <command> [options]

commands:
  run                 follow every change until stopped (SIGTERM or SIGINT)
  sync --once         sync until caught up and the detail queue is drained, then exit
  migrate             apply database migrations and exit
  status [--json]     show where each property stands
  rebuild             derive every typed table again from the raw payloads the mirror
                      keeps (after a mapping fix, instead of a re-sync); no provider request
  quarantine retry    parse the quarantined payloads again with the current schemas and
                      mirror those that now pass; no provider request
  grant-reader <role> [--personal-data] [--properties <ids> | --all-properties]
                      create (if needed) a read-only role for reporting tools: the mirror
                      without the columns of guests' personal data and the reporting
                      views, also those added later; its password from
                      STAYSYNC_READER_PASSWORD, else generated and printed
  forget-guest --email <e-mail> | --phone <phone> | --person <PMS person id>
             | --booking <propertyId>/<number>  [--dry-run]
                      erase one guest's personal data everywhere in the mirror, now and
                      in the versions fetched later; --dry-run shows what would change

options:
  --config <path>     JSON file overriding config/default.json (or STAYSYNC_CONFIG)
  --recover[=<ISO>]   after a lost token: resume from the last mirrored modification
                      minus two days, or from the given time (run and sync only)
  --personal-data     grant-reader: the personal columns too (names, contact data, raw)
  --properties <ids>  grant-reader: only the rows of these properties (e.g. 1024,7291)
  --all-properties    grant-reader: the rows of every property (a new role's default)
  --dry-run           forget-guest: show what would be erased, change nothing
  --version, -V       print the release, the last migration it applies and its mapping
                      version (a newer mapping rebuilds the typed tables at the next start)
  --help              this text

exit status: 0 done, 1 failure, 2 bad usage or configuration, 3 token lost`;

export class UsageError extends Error {}

/** The most properties one reader may be scoped to (reader_grants.properties holds as many), and an id's length. */
export const MAX_READER_PROPERTIES = 1000;
const MAX_PROPERTY_ID_LENGTH = 64;

/** `--properties 1024,7291`: property ids, each of the shape configuration takes, a bounded list. */
function propertyList(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '')
    throw new UsageError('--properties needs a value: property ids separated by commas, e.g. --properties 1024,7291');
  const ids = value.split(',').map((x) => x.trim());
  const bad = ids.find((x) => !PROPERTY_ID.test(x));
  if (bad !== undefined)
    throw new UsageError(`--properties: ${JSON.stringify(bad.slice(0, 80))} is not a property id (${PROPERTY_ID_SHAPE}, separated by commas)`);
  const long = ids.find((x) => x.length > MAX_PROPERTY_ID_LENGTH);
  if (long !== undefined) throw new UsageError(`--properties: a property id has at most ${MAX_PROPERTY_ID_LENGTH} characters, not ${long.length}`);
  const unique = [...new Set(ids)];
  if (unique.length > MAX_READER_PROPERTIES) throw new UsageError(`--properties: at most ${MAX_READER_PROPERTIES} properties, not ${unique.length}`);
  return unique;
}

/** How forget-guest is told whom to erase. */
const SELECTORS = ['email', 'phone', 'person', 'booking'] as const;

export interface Args {
  command: 'run' | 'sync' | 'migrate' | 'status' | 'rebuild' | 'quarantine-retry' | 'grant-reader' | 'forget-guest' | 'help' | 'version';
  /** The person forget-guest erases: one of --email, --phone, --person, --booking. */
  selector?: { kind: 'email' | 'phone' | 'person' | 'booking'; value: string };
  /** forget-guest --dry-run. */
  dryRun: boolean;
  /** The role of grant-reader. */
  role?: string;
  /** grant-reader --personal-data: the personal columns too. */
  personalData: boolean;
  /** grant-reader --properties (a list) or --all-properties (null); absent: as recorded. */
  properties?: string[] | null;
  configPath?: string;
  once: boolean;
  json: boolean;
  recovery: Recovery;
}

export function parseArgs(argv: string[]): Args {
  const args: Args = { command: 'help', once: false, json: false, personalData: false, dryRun: false, recovery: { mode: 'none' } };
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--help' || a === '-h') return { ...args, command: 'help' };
    else if (a === '--version' || a === '-V') return { ...args, command: 'version' };
    else if (a === '--once') args.once = true;
    else if (a === '--json') args.json = true;
    else if (a === '--personal-data') args.personalData = true;
    else if (a === '--dry-run') args.dryRun = true;
    else if (a === '--properties' || a.startsWith('--properties=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (args.properties === null) throw new UsageError('grant-reader takes --properties and --all-properties, not both');
      args.properties = propertyList(v);
    } else if (a === '--all-properties') {
      if (args.properties !== undefined) throw new UsageError('grant-reader takes --properties and --all-properties, not both');
      args.properties = null;
    } else if (SELECTORS.some((k) => a === `--${k}` || a.startsWith(`--${k}=`))) {
      const kind = SELECTORS.find((k) => a === `--${k}` || a.startsWith(`--${k}=`))!;
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v === undefined || v === '') throw new UsageError(`--${kind} needs a value`);
      if (args.selector) throw new UsageError(`forget-guest takes one of --email, --phone, --person, --booking, not --${args.selector.kind} and --${kind}`);
      args.selector = { kind, value: v };
    } else if (a === '--config') {
      const v = argv[++i];
      if (!v) throw new UsageError('--config needs a path');
      args.configPath = v;
    } else if (a.startsWith('--config=')) args.configPath = a.slice('--config='.length);
    else if (a === '--recover') args.recovery = { mode: 'auto' };
    else if (a.startsWith('--recover=')) {
      const v = a.slice('--recover='.length);
      const t = Date.parse(v);
      if (!/^\d{4}-\d{2}-\d{2}/.test(v) || Number.isNaN(t)) {
        throw new UsageError(`--recover=${v}: expected an ISO time such as 2024-05-01T00:00:00Z`);
      }
      args.recovery = { mode: 'at', from: new Date(t) };
    } else if (a.startsWith('-')) throw new UsageError(`unknown option ${a}`);
    else positional.push(a);
  }
  const [command, ...rest] = positional;
  if (command === undefined) return args;
  if (command === 'quarantine') {
    // The one command of two words: `quarantine retry`.
    const [sub, ...more] = rest;
    if (sub !== 'retry')
      throw new UsageError(
        sub === undefined ? 'quarantine needs a subcommand: quarantine retry' : `unknown subcommand quarantine ${sub} (expected: quarantine retry)`,
      );
    if (more.length > 0) throw new UsageError(`unexpected argument ${more[0]}`);
    args.command = 'quarantine-retry';
  } else if (command === 'grant-reader') {
    const [role, ...more] = rest;
    if (role === undefined) throw new UsageError('grant-reader needs the name of the role, e.g. staysync grant-reader reporting_reader');
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role))
      throw new UsageError(`grant-reader ${role}: expected a lower-case SQL identifier (letters, digits, _) as the role name`);
    if (more.length > 0) throw new UsageError(`unexpected argument ${more[0]}`);
    args.command = 'grant-reader';
    args.role = role;
  } else if (command === 'forget-guest') {
    if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
    if (!args.selector) throw new UsageError('forget-guest needs the guest: --email, --phone, --person or --booking');
    args.command = 'forget-guest';
  } else {
    if (!['run', 'sync', 'migrate', 'status', 'rebuild', 'help'].includes(command)) throw new UsageError(`unknown command ${command}`);
    if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
    args.command = command as Args['command'];
  }
  if (args.command === 'sync' && !args.once) throw new UsageError('sync needs --once (use run for the daemon)');
  if (args.personalData && args.command !== 'grant-reader') throw new UsageError('--personal-data goes with grant-reader');
  if (args.properties !== undefined && args.command !== 'grant-reader')
    throw new UsageError(`--${args.properties === null ? 'all-properties' : 'properties'} goes with grant-reader`);
  if ((args.selector || args.dryRun) && args.command !== 'forget-guest') throw new UsageError(`--${args.selector?.kind ?? 'dry-run'} goes with forget-guest`);
  if (args.recovery.mode !== 'none' && args.command !== 'run' && args.command !== 'sync') {
    throw new UsageError('--recover goes with run or sync --once');
  }
  return args;
}
