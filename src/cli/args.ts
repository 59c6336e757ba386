/** Command-line arguments of staysync (kept apart from cli.ts so tests can import it). */
import type { Recovery } from '../sync/runtime/recovery.js';
import { PROPERTY_ID, PROPERTY_ID_SHAPE } from '../config/config.js';

/**
 * The commands as a user types them, each with its usage, what it does and the options it
 * takes: the global usage lists them, and `staysync <command> --help` prints one of them.
 */
export const commands = {
  run: {
    synopsis: 'run [--recover[=<ISO>] [--property <id>]]',
    summary: 'follow every change until stopped (SIGTERM or SIGINT)',
    options: ['--recover[=<ISO>]', '--property <id>'],
  },
  sync: {
    synopsis: 'sync --once [--recover[=<ISO>] [--property <id>]]',
    summary: 'sync until caught up and the detail queue is drained, then exit',
    options: ['--once', '--recover[=<ISO>]', '--property <id>'],
  },
  migrate: { synopsis: 'migrate', summary: 'apply database migrations and exit', options: [] },
  status: { synopsis: 'status [--json]', summary: 'show where each property stands', options: ['--json'] },
  rebuild: {
    synopsis: 'rebuild',
    summary: 'derive every typed table again from the raw payloads the mirror\nkeeps (after a mapping fix, instead of a re-sync); no provider request',
    options: [],
  },
  'quarantine retry': {
    synopsis: 'quarantine retry',
    summary: 'parse the quarantined payloads again with the current schemas and\nmirror those that now pass; no provider request',
    options: [],
  },
  'grant-reader': {
    synopsis: 'grant-reader <role> [--personal-data] [--properties <ids> | --all-properties]',
    summary:
      "create (if needed) a read-only role for reporting tools: the mirror\nwithout the columns of guests' personal data and the reporting\nviews, also those added later; its password from\nSTAYSYNC_READER_PASSWORD, else generated and printed",
    options: ['--personal-data', '--properties <ids>', '--all-properties'],
  },
  'forget-guest': {
    synopsis: 'forget-guest --email <e-mail> | --phone <phone> | --person <PMS person id>\n           | --booking <propertyId>/<number>  [--dry-run]',
    summary: "erase one guest's personal data everywhere in the mirror, now and\nin the versions fetched later; --dry-run shows what would change",
    options: ['--email <e-mail>', '--phone <phone>', '--person <PMS person id>', '--booking <propertyId>/<number>', '--dry-run'],
    exit: 'exit status: 0 erased (with --dry-run: found), 1 failure, 2 bad usage or configuration,\n4 nobody in the mirror matched (an e-mail, phone or person id still joins the erasure list)',
  },
} as const satisfies Record<string, { synopsis: string; summary: string; options: readonly string[]; exit?: string }>;

export type CommandName = keyof typeof commands;

/** What each option means, for the usages (one entry per option a command lists). */
const optionHelp: Record<string, string> = {
  '--config <path>': 'JSON file overriding config/default.json (or STAYSYNC_CONFIG)',
  '--recover[=<ISO>]': 'after a lost token: resume from the last mirrored modification\nminus two days, or from the given time (run and sync only)',
  '--property <id>': 'with --recover: recover this property only (again for another)',
  '--once': 'sync: stop when caught up (required: `run` is the daemon)',
  '--json': 'status: one JSON document instead of a table',
  '--personal-data': 'grant-reader: the personal columns too (names, contact data, raw)',
  '--properties <ids>': 'grant-reader: only the rows of these properties (e.g. 1024,7291)',
  '--all-properties': "grant-reader: the rows of every property (a new role's default)",
  '--email <e-mail>': 'forget-guest: the guest with this e-mail',
  '--phone <phone>': 'forget-guest: the guest with this phone number',
  '--person <PMS person id>': 'forget-guest: the PMS person with this id',
  '--booking <propertyId>/<number>': 'forget-guest: the customer and guests of this booking',
  '--dry-run': 'forget-guest: show what would be erased, change nothing',
  '--version, -V': 'print the release, the last migration it applies and its mapping\nversion (a newer mapping rebuilds the typed tables at the next start)',
  '--help, -h': "this text; after a command, that command's usage",
};

/** `  name   text`, the text's further lines (and a long or multi-line name's) aligned under its first. */
function entry(name: string, text: string): string {
  const pad = ' '.repeat(22);
  const [first, ...more] = text.split('\n');
  const head = name.length < 20 && !name.includes('\n') ? `  ${name.padEnd(20)}${first}` : `${name.replace(/^/gm, '  ')}\n${pad}${first}`;
  return [head, ...more.map((l) => `${pad}${l}`)].join('\n');
}

const EXIT_STATUS = 'exit status: 0 done, 1 failure, 2 bad usage or configuration, 3 token lost (sync --once), 4 forget-guest found nobody';

export const usage = `usage: staysync <command> [options]

commands:
${Object.values(commands)
  .map((c) => entry(c.synopsis, c.summary))
  .join('\n')}

options:
${[
  '--config <path>',
  '--recover[=<ISO>]',
  '--property <id>',
  '--personal-data',
  '--properties <ids>',
  '--all-properties',
  '--dry-run',
  '--version, -V',
  '--help, -h',
]
  .map((o) => entry(o, optionHelp[o]!))
  .join('\n')}

\`staysync <command> --help\` shows one command's usage.

${EXIT_STATUS}`;

/** The usage of one command: how to type it, what it does, its options and the common ones. */
export function commandUsage(name: CommandName): string {
  const c: { synopsis: string; summary: string; options: readonly string[]; exit?: string } = commands[name];
  const own = c.options.map((o) => entry(o, optionHelp[o]!));
  const common = ['--config <path>', '--help, -h'].map((o) => entry(o, optionHelp[o]!));
  return `usage: staysync ${c.synopsis}

${c.summary}

options:
${[...own, ...common].join('\n')}

${c.exit ?? EXIT_STATUS}`;
}

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

/** `--property 1024`: one property id, of the shape configuration takes. */
function propertyId(value: string | undefined): string {
  if (value === undefined || value.trim() === '') throw new UsageError('--property needs a property id, e.g. --recover --property 1024');
  const id = value.trim();
  if (!PROPERTY_ID.test(id)) throw new UsageError(`--property: ${JSON.stringify(id.slice(0, 80))} is not a property id (${PROPERTY_ID_SHAPE})`);
  if (id.length > MAX_PROPERTY_ID_LENGTH) throw new UsageError(`--property: a property id has at most ${MAX_PROPERTY_ID_LENGTH} characters, not ${id.length}`);
  return id;
}

/** The most properties one --recover may name with --property (each a flag of its own). */
const MAX_RECOVER_PROPERTIES = 100;

/** How forget-guest is told whom to erase. */
const SELECTORS = ['email', 'phone', 'person', 'booking'] as const;

export interface Args {
  command: 'run' | 'sync' | 'migrate' | 'status' | 'rebuild' | 'quarantine-retry' | 'grant-reader' | 'forget-guest' | 'help' | 'version';
  /** help: the command whose usage to print (`staysync status --help`, `staysync help status`); absent: the global usage. */
  helpFor?: CommandName;
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

/**
 * The command a word names, as a user types it (`quarantine` stands for its one subcommand,
 * `quarantine retry`); undefined for any other word.
 */
function commandNamed(word: string): CommandName | undefined {
  if (word === 'quarantine') return 'quarantine retry';
  return Object.hasOwn(commands, word) ? (word as CommandName) : undefined;
}

/**
 * `--help` (or `-h`) anywhere: the usage of the first command named on the line, else the
 * global one. The other words are not checked: whoever asks for help may have typed them wrong.
 */
function helpArgs(argv: string[], base: Args): Args {
  const named = argv.filter((a) => !a.startsWith('-')).map(commandNamed);
  const helpFor = named.find((c) => c !== undefined);
  return helpFor === undefined ? { ...base, command: 'help' } : { ...base, command: 'help', helpFor };
}

export function parseArgs(argv: string[]): Args {
  const args: Args = { command: 'help', once: false, json: false, personalData: false, dryRun: false, recovery: { mode: 'none' } };
  // The first of --help and --version decides, before any other word can be a usage error.
  const asked = argv.find((a) => a === '--help' || a === '-h' || a === '--version' || a === '-V');
  if (asked === '--help' || asked === '-h') return helpArgs(argv, args);
  if (asked !== undefined) return { ...args, command: 'version' };
  const positional: string[] = [];
  const recoverOnly: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--once') args.once = true;
    else if (a === '--json') args.json = true;
    else if (a === '--personal-data') args.personalData = true;
    else if (a === '--dry-run') args.dryRun = true;
    else if (a === '--properties' || a.startsWith('--properties=')) {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (args.properties === null) throw new UsageError('grant-reader takes --properties and --all-properties, not both');
      args.properties = propertyList(v);
    } else if (a === '--property' || a.startsWith('--property=')) {
      const id = propertyId(a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i]);
      if (!recoverOnly.includes(id)) recoverOnly.push(id);
      if (recoverOnly.length > MAX_RECOVER_PROPERTIES) throw new UsageError(`--property: at most ${MAX_RECOVER_PROPERTIES} properties at once`);
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
  } else if (command === 'help') {
    // `staysync help <command>`: that command's usage, as `staysync <command> --help`.
    if (rest.length === 0) return args;
    const helpFor = commandNamed(rest[0]!);
    if (helpFor === undefined) throw new UsageError(`help ${rest[0]}: unknown command (expected one of: ${Object.keys(commands).join(', ')})`);
    if (rest.length > (helpFor === 'quarantine retry' && rest[1] === 'retry' ? 2 : 1)) throw new UsageError(`unexpected argument ${rest.at(-1)}`);
    return { ...args, helpFor };
  } else {
    if (!['run', 'sync', 'migrate', 'status', 'rebuild'].includes(command)) throw new UsageError(`unknown command ${command}`);
    if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
    args.command = command as Args['command'];
  }
  if (args.command === 'sync' && !args.once) throw new UsageError('sync needs --once (use run for the daemon)');
  // An option of another command is a mistake: it would be ignored, and the command would run.
  if (args.once && args.command !== 'sync') throw new UsageError('--once goes with sync');
  if (args.json && args.command !== 'status') throw new UsageError('--json goes with status');
  if (args.personalData && args.command !== 'grant-reader') throw new UsageError('--personal-data goes with grant-reader');
  if (args.properties !== undefined && args.command !== 'grant-reader')
    throw new UsageError(`--${args.properties === null ? 'all-properties' : 'properties'} goes with grant-reader`);
  if ((args.selector || args.dryRun) && args.command !== 'forget-guest') throw new UsageError(`--${args.selector?.kind ?? 'dry-run'} goes with forget-guest`);
  if (args.recovery.mode !== 'none' && args.command !== 'run' && args.command !== 'sync') {
    throw new UsageError('--recover goes with run or sync --once');
  }
  if (recoverOnly.length > 0) {
    if (args.recovery.mode === 'none') throw new UsageError('--property goes with --recover: it names the property to recover, e.g. --recover --property 1024');
    args.recovery = { ...args.recovery, propertyIds: recoverOnly };
  }
  return args;
}
