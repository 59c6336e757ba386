/**
 * Configuration: defaults from `config/default.json`, overridden by an optional JSON file
 * (`--config <path>` or `STAYSYNC_CONFIG`), overridden by environment variables. Parsed
 * once with zod, frozen, and passed down. Every error names the key and what it expected.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Cron } from 'croner';
import { z } from 'zod';
import { readableSchemaOf, secretSchemaOf, SCHEMA_SUFFIX_LENGTH } from './schema-names.js';
import { FileReadError, readFileBounded, type ReadLimits } from '../util/bounded-file.js';
import { jsonSyntaxError } from '../util/json-syntax.js';
import { environment, variableOfKey, type EnvironmentVariable } from './environment.js';

/**
 * Root of the installed package, where config/ and migrations/ live: the nearest folder above
 * this module with a package.json (the same from src/, dist/ and the tools' build).
 */
export const packageRoot = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(resolve(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

const rateWindow = z.strictObject({
  limit: z.number().int().positive(),
  windowMs: z.number().int().positive(),
});
const rateWindows = z.array(rateWindow).min(1);

export const rateLimitScopes = ['bookingList', 'bookingDetails', 'standard', 'integrationStorage', 'token'] as const;
export type RateLimitScope = (typeof rateLimitScopes)[number];
export type RateWindow = z.infer<typeof rateWindow>;

/**
 * The provider's URLs: https, since the client secret and the access tokens travel on them.
 * Plain http only to a loopback address (the simulator, a local TLS-terminating proxy).
 */
const providerUrl = z
  .string()
  .url()
  .refine(
    (u) => u.startsWith('https://') || (u.startsWith('http://') && isLoopbackHost(new URL(u).hostname)),
    'an https:// URL (http:// only to a loopback address such as 127.0.0.1: the client secret and tokens would travel in clear text)',
  )
  .transform((u) => u.replace(/\/+$/, ''));

/** True for a name or literal address of this machine's loopback interface (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || /^::ffff:127(\.\d{1,3}){3}$/.test(h);
}

/** A croner expression that croner accepts. */
const cronExpression = z.string().refine(
  (expr) => {
    try {
      new Cron(expr, { paused: true }).stop();
      return true;
    } catch {
      return false;
    }
  },
  { message: 'a cron expression such as "*/5 * * * *"' },
);

/** A provider property id as configuration and the command line take it. */
export const PROPERTY_ID = /^[A-Za-z0-9_-]+$/;
export const PROPERTY_ID_SHAPE = 'property ids of letters, digits, - or _';

const propertyIdList = z.array(z.string().regex(PROPERTY_ID, PROPERTY_ID_SHAPE));

/**
 * One API connection (connections.ts): its name, its credentials (each inline, from a file, or
 * from an environment variable), its properties (none: all that its content lists) and, where
 * contracted, limits of its own per scope.
 */
/** A connection's name: it is also a path segment of its webhook delivery URL (webhooks.path/<name>). */
export const CONNECTION_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const connectionSpecSchema = z.strictObject({
  name: z.string().regex(CONNECTION_NAME, 'a name of lower-case letters, digits, - or _ (at most 63)'),
  clientId: z.string().min(1).optional(),
  clientIdFile: z.string().min(1).optional(),
  clientIdEnv: z.string().min(1).optional(),
  clientSecret: z.string().min(1).optional(),
  clientSecretFile: z.string().min(1).optional(),
  clientSecretEnv: z.string().min(1).optional(),
  propertyIds: propertyIdList.optional(),
  rateLimits: z
    .strictObject({
      bookingList: rateWindows.optional(),
      bookingDetails: rateWindows.optional(),
      standard: rateWindows.optional(),
      integrationStorage: rateWindows.optional(),
    })
    .optional(),
});
export type ConnectionSpec = z.infer<typeof connectionSpecSchema>;

export const configSchema = z.strictObject({
  database: z.strictObject({
    /** postgres:// URL; absent means a local PostgreSQL server that staysync starts itself, with its data under dataDir. */
    url: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'a postgres:// URL')
      .optional(),
    /** The password of url's user, for a URL without one: put into url as the configuration loads (withDatabasePassword). */
    password: z.string().min(1).optional(),
    // The schemas named after it (<schema>_readable, <schema>_secret: src/store/reader-policy.ts)
    // must be identifiers of at most 63 characters too.
    schema: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a lower-case SQL identifier')
      .max(
        63 - SCHEMA_SUFFIX_LENGTH,
        `at most ${63 - SCHEMA_SUFFIX_LENGTH} characters (staysync names two schemas after it: <schema>_readable and <schema>_secret)`,
      ),
    /** Where the reporting views live (a schema of their own, beside the mirror's). */
    reportingSchema: z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a lower-case SQL identifier'),
    dataDir: z.string().min(1),
    /** TCP port of the local server on 127.0.0.1 (used only without DATABASE_URL). */
    localPort: z.number().int().min(1).max(65535),
    poolSize: z.number().int().min(1).max(100),
    /** How often a process waiting for the schema's start-up lock tries to take it (and the holder checks its session). */
    leaseRetryMs: z.number().int().min(50),
    /** sync --once gives up (exit 1) when the database has been unreachable this long; run waits forever. */
    giveUpAfterMs: z.number().int().min(0),
  }),
  /** Several processes (replicas) sharing the connections of one schema (db/replicas.ts). */
  replicas: z.strictObject({
    /** A dead replica's connections are synced by another within this time; a clean stop hands them over within a quarter of it. */
    takeoverMs: z.number().int().min(400),
    /**
     * At most one admission transaction of the shared token gate per process in this time
     * (src/cluster/token-gate.ts): a token request that comes sooner waits for the next turn.
     * At most 30 s: well inside the minute ahead of expiry that tokens are renewed in.
     */
    tokenGateSpacingMs: z.number().int().min(0).max(30_000),
  }),
  provider: z.strictObject({
    url: providerUrl,
    referenceDataUrl: providerUrl,
    clientId: z.string().min(1).optional(),
    clientSecret: z.string().min(1).optional(),
    requestTimeoutMs: z.number().int().positive(),
    /** A response body longer than this is not read further: its entity is quarantined as too large (a list page, details, content). */
    maxResponseBytes: z.number().int().min(65_536),
    maxAttempts: z.number().int().min(1).max(100),
    tokenRenewBeforeExpiryMs: z.number().int().min(0),
    /**
     * The IP address (or any name for it) that requests leave from: replicas with the same
     * value share the token endpoint's per-IP budget through PostgreSQL.
     */
    egress: z.string().min(1).max(200),
    /** sync --once gives up (exit 1) when the provider has not answered this long; run keeps retrying. */
    giveUpAfterMs: z.number().int().min(0),
  }),
  propertyIds: propertyIdList,
  /** API connections (connections.ts); empty with no connectionsDir: the one of provider.clientId/clientSecret and propertyIds. */
  connections: z.array(connectionSpecSchema),
  /** A directory of connection files (one JSON object per file, as a secrets volume provides them). */
  connectionsDir: z.string().min(1).optional(),
  rateLimits: z.strictObject({
    bookingList: rateWindows,
    bookingDetails: rateWindows,
    standard: rateWindows,
    integrationStorage: rateWindows,
    token: rateWindows,
  }),
  sync: z.strictObject({
    /**
     * croner expression: when the daemon polls a caught-up property for new changes. Absent
     * (the default): adaptive polling, as often as the booking list budget allows (list-scheduler.ts).
     */
    pollCron: cronExpression.optional(),
    /**
     * Adaptive polling: no property is polled more often than every `min` ms; a quiet one (no
     * change for quietAfterMs) not more often than every `quiet` ms (within min and max); none
     * waits longer than `max` ms (when the budget allows).
     */
    pollIntervalMs: z
      .strictObject({ min: z.number().int().min(0), quiet: z.number().int().min(0), max: z.number().int().positive() })
      .refine((v) => v.min <= v.max, { message: 'min at most max' }),
    /** A property with no change for this long is quiet: polled every pollIntervalMs.quiet instead of as often as the budget allows. */
    quietAfterMs: z.number().int().min(0),
    /** While a property backfills, polls and sweeps together use at most this share of the booking list budget; backfill pages get the rest. */
    pollShareDuringBackfill: z.number().gt(0).max(1),
    /** The reconciliation sweep: every `everyMs` each property's summaries are re-read from now − `lookbackMs`, for writes that became visible late. */
    sweep: z.strictObject({
      enabled: z.boolean(),
      everyMs: z.number().int().positive(),
      lookbackMs: z.number().int().positive(),
    }),
    summariesPageSize: z.number().int().min(1).max(1000),
    detailConcurrency: z.number().int().min(1).max(64),
    progressIntervalMs: z.number().int().positive(),
    recoveryOverlapMs: z.number().int().min(0),
    /** A lost continueToken is recovered at once, as --recover would (at most once an hour per property), instead of waiting for the operator. */
    autoRecover: z.boolean(),
    /** The daemon checks again a property failing with a permanent error (403, 400, ...) this often. */
    failingRecheckMs: z.number().int().positive(),
    /** Booking details that answered 404 repeatedly, failed validation or could not be stored are fetched again after this, doubling up to 6 hours. */
    refetchParkedAfterMs: z.number().int().positive(),
    /** A fetch queue drain vacuums its table after taking this many rows (fetch-drain.ts); 0: never, autovacuum does it. */
    vacuumQueueEveryRows: z.number().int().min(0),
  }),
  content: z.strictObject({
    /** Mirror content and reference data (properties, room types, rate plans, rules, lists). */
    enabled: z.boolean(),
    /** croner expression of the scheduled full refresh (also done at start). */
    refreshCron: cronExpression,
  }),
  pms: z
    .strictObject({
      /** Mirror PMS reservations, guests and rooms (needs the PMS API on the API connection). */
      enabled: z.boolean(),
      /** First day of the backfill of PMS reservations, by modification (YYYY-MM-DD). */
      backfillFrom: z
        .string()
        .regex(/^\d{4}-\d{2}-\d{2}$/, 'a date such as 2009-01-01')
        .refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)), 'a valid date'),
      /** croner expression: when a caught-up property's PMS reservations are searched again. */
      pollCron: cronExpression,
      /** How far back each search re-reads the previous window (at least its last minute: minute precision and local time make an exact edge unsafe). */
      overlapMinutes: z.number().int().min(1).max(2_880),
      /** E-mails, phones, birth dates, citizenship and documents of guests: mirrored only when true (names always are). */
      personalData: z.boolean(),
      /**
       * Read the loyalty cards of the reservations' persons (one request per new person, and per
       * person with each newer version of their reservation). Unset: as personalData. Without
       * personal data a card is only its programme id, and the cards were 42 % of a PMS backfill's
       * requests.
       */
      loyaltyCards: z.boolean().optional(),
      /** Reservation fetches in flight (the standard budget still paces them). */
      fetchConcurrency: z.number().int().min(1).max(32),
    })
    .transform((pms) => ({ ...pms, loyaltyCards: pms.loyaltyCards ?? pms.personalData })),
  occupancy: z.strictObject({
    /** Mirror the daily occupancy statistics (PMS analytics). */
    enabled: z.boolean(),
    /** Days before today (property-local) that each refresh covers. */
    daysBack: z.number().int().min(0).max(3_660),
    /** Days after today that each refresh covers. */
    daysAhead: z.number().int().min(0).max(3_660),
    /** croner expression of the scheduled refresh (also done at start). */
    refreshCron: cronExpression,
  }),
  roomInventory: z.strictObject({
    /** Mirror the inventory per PMS room type and night and the stay units per PMS rate plan code (PMS integration storage). */
    enabled: z.boolean(),
    /** Days before today (property-local) that each refresh covers (stay units: from the first of that month). */
    daysBack: z.number().int().min(0).max(731),
    /** Days after today that each refresh covers (stay units: to the end of that month). */
    daysAhead: z.number().int().min(0).max(731),
    /** croner expression of the scheduled refresh (also done at start). */
    refreshCron: cronExpression,
  }),
  webhooks: z.strictObject({
    /** Receive the provider's change events, on a listener of their own (webhooks.host, webhooks.port). */
    enabled: z.boolean(),
    /** Address of the webhook listener: the one port that faces the provider. */
    host: z.string().min(1),
    port: z.number().int().min(0).max(65535),
    /** Path of the receiver. */
    path: z.string().regex(/^\/[A-Za-z0-9/_.-]*$/, 'a URL path such as /webhooks/provider'),
    /** How the provider authenticates, as configured by the hotelier: none, the API-KEY header, or HTTP Basic. */
    auth: z.enum(['none', 'apiKey', 'basic']),
    /** auth none on an address other than loopback is refused at start unless this says it is meant. */
    allowUnauthenticated: z.boolean(),
    apiKey: z.string().min(1).optional(),
    basicUser: z.string().min(1).optional(),
    basicPassword: z.string().min(1).optional(),
    /** A batch body longer than this is refused with 413 as soon as it is passed (1,000 documented events take about 200 KB). */
    maxBodyBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024),
    /**
     * An event of a property that no connection follows waits this long for one to follow it
     * (a connection starting, a content refresh finding the property), then is kept as ignored, never fetched.
     */
    unfollowedAfterMs: z.number().int().min(0).max(86_400_000),
    /** Events that are no longer pending are deleted this many days after they were received. */
    retainEventsDays: z.number().int().min(1).max(3_650),
    /** Refreshes that events may cause per property: `burst` at once, then `perMinute`; events beyond wait their turn. */
    eventFetchesPerProperty: z.strictObject({ burst: z.number().int().min(1).max(10_000), perMinute: z.number().int().min(1).max(600) }),
  }),
  privacy: z.strictObject({
    /**
     * Personal data of bookings and PMS reservations whose stay ended more than this many days
     * ago is erased by the daemon (as forget-guest erases a guest; the figures stay), and
     * quarantined bodies and processed change events expire after it. Absent: kept (the default).
     */
    retainPersonalDataDays: z.number().int().min(1).max(36_500).optional(),
    /**
     * The secret key of the pseudonyms (HMAC-SHA-256 of a guest's normalised e-mail and phone).
     * Absent: no pseudonym is stored (an unkeyed hash of an e-mail can be reversed by guessing).
     */
    pseudonymKey: z.string().min(32, 'at least 32 characters (e.g. openssl rand -hex 32)').max(1024).optional(),
  }),
  ops: z.strictObject({
    /** /healthz, /readyz and /metrics, without authentication: keep it inside the cluster. */
    port: z.number().int().min(0).max(65535),
    host: z.string().min(1),
  }),
  shutdown: z.strictObject({
    /** After SIGTERM, the process ends within this time: in-flight work finishes or is rolled back. */
    graceMs: z.number().int().min(100).max(600_000),
  }),
  log: z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    /** json: one JSON object per line (containers, pipes); text: lines for a person, the progress in place; auto: text on a terminal. */
    format: z.enum(['auto', 'json', 'text']),
  }),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

/** A configuration problem: the message names the key and what was expected. Exit status 2. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge: objects merge key by key; arrays and scalars replace. */
function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? merge(b, v) : v;
  }
  return out;
}

function readJsonFile(path: string, what: string): Json {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${what}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  return parseJsonObject(text, `${what}: ${path}`, 'a JSON object');
}

/**
 * A file's text as a JSON object, or a ConfigError saying where it is not: the line, the
 * column and what is wrong there, never the text itself (it may be part of a secret, and
 * JSON.parse's own message quotes it).
 */
export function parseJsonObject(text: string, where: string, expected: string): Json {
  const error = jsonSyntaxError(text);
  if (error) throw new ConfigError(`${where} is not ${expected}: line ${error.line}, column ${error.column}: ${error.problem}`);
  const parsed: unknown = JSON.parse(text);
  if (!isObject(parsed))
    throw new ConfigError(
      `${where} is not ${expected}: its top level is ${Array.isArray(parsed) ? 'an array' : parsed === null ? 'null' : `a ${typeof parsed}`}`,
    );
  return parsed;
}

/**
 * The bounds of a secret file (a NAME_FILE variable, a connection's clientSecretFile): a secret
 * is a line, and a path that names a FIFO, a terminal or /dev/zero by mistake must not hold up
 * the start or fill the heap.
 */
export const SECRET_FILE_LIMITS: ReadLimits = { maxBytes: 65_536, timeoutMs: 10_000 };

/**
 * The secret in the file at `path`, without the white space around it (the newline `echo` and
 * editors leave). A file that cannot be read, is longer than the limits allow, does not end in
 * time, or holds nothing is a ConfigError that starts with `what` (the variable or key that
 * named the file) and names the path, never the content.
 */
export function readSecretFile(path: string, what: string, limits: ReadLimits = SECRET_FILE_LIMITS): string {
  let text: string;
  try {
    text = readFileBounded(path, limits).trim();
  } catch (err) {
    if (err instanceof FileReadError) throw new ConfigError(`${what}: ${err.message}`);
    throw err;
  }
  if (text === '') throw new ConfigError(`${what}: ${path} is empty`);
  return text;
}

/** A secret from `NAME` or from the file named by `NAME_FILE` (container secrets); undefined when neither is set. */
export function secretFromEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const direct = env[name];
  const file = env[`${name}_FILE`];
  if (direct !== undefined && direct !== '' && file) {
    throw new ConfigError(`${name} and ${name}_FILE are both set: expected only one of them`);
  }
  if (file) return readSecretFile(file, `${name}_FILE`);
  return direct === '' ? undefined : direct;
}

/** The configuration layer of the environment: each variable of the table (environment.ts) that is set, at its key. */
function envOverrides(env: NodeJS.ProcessEnv): Json {
  const o: Json = {};
  for (const v of environment) {
    if (v.key === undefined) continue;
    const value = v.kind === 'secret' ? secretFromEnv(env, v.name) : env[v.name];
    if (value === undefined || (value === '' && v.kind !== 'list')) continue;
    const path = v.key.split('.');
    let node = o;
    for (const k of path.slice(0, -1)) node = (node[k] ??= {}) as Json;
    node[path[path.length - 1]!] = variableValue(v, value);
  }
  return o;
}

/** A variable's text as the value of its kind; a ConfigError naming the variable when it is not one. */
function variableValue(v: EnvironmentVariable, text: string): unknown {
  switch (v.kind) {
    case 'integer':
      if (!/^\d+$/.test(text)) throw new ConfigError(`${v.name}: expected a whole number, got ${JSON.stringify(text)}`);
      return Number(text);
    case 'boolean':
      if (!/^(true|false)$/.test(text)) throw new ConfigError(`${v.name}: expected true or false, got ${JSON.stringify(text)}`);
      return text === 'true';
    case 'list':
      return text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    case 'text':
    case 'secret':
      return text;
  }
}

/**
 * What a zod issue expected, without the heading zod 4 puts before it ("Invalid input: ", "Invalid option: ",
 * "Too small: ", "Too big: "): the sentence then reads "key: expected number to be >0", as
 * docs/configuration.md shows (test/unit/docs-match-code.test.ts prints it from here).
 */
export function zodProblem(message: string): string {
  return message.replace(/^(Invalid input|Invalid option|Too small|Too big): /, '');
}

function describeIssue(issue: z.core.$ZodIssue, env: Json): string {
  const key = issue.path.map(String).join('.');
  const top = issue.path.slice(0, 2).map(String).join('.');
  // A list's items have paths of their own (propertyIds.0): the variable is the list's.
  const variable = variableOfKey(key) ?? variableOfKey(top) ?? variableOfKey(String(issue.path[0] ?? ''));
  // A secret's value may have come from its file: the message names the variable that was set.
  const names = variable === undefined ? [] : variable.kind === 'secret' ? [variable.name, `${variable.name}_FILE`] : [variable.name];
  const fromVariable = names.find((n) => env[n] !== undefined);
  const where = fromVariable ? ` (from ${fromVariable})` : '';
  let expected = issue.message;
  if (issue.code === 'unrecognized_keys') {
    return `${key ? key + ': ' : ''}unknown key(s) ${issue.keys.join(', ')}: expected only the documented keys`;
  }
  if (issue.code === 'invalid_type') expected = `expected ${issue.expected}`;
  else {
    expected = zodProblem(expected);
    if (!/^expected/i.test(expected)) expected = `expected ${expected}`;
  }
  return `${key || '(top level)'}${where}: ${expected}`;
}

export interface LoadConfigOptions {
  /** Path of a JSON file that overrides the defaults (`--config`); falls back to STAYSYNC_CONFIG. */
  configPath?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /** Extra overrides applied last (tests, bench). */
  overrides?: Json;
}

/** Loads, merges and validates the configuration. Throws ConfigError naming the bad key. */
export function loadConfig(opts: LoadConfigOptions = {}): Config {
  const env = opts.env ?? process.env;
  const defaults = readJsonFile(resolve(packageRoot, 'config', 'default.json'), 'built-in defaults');
  const path = opts.configPath ?? (env.STAYSYNC_CONFIG || undefined);
  const fileLayer = path ? readJsonFile(resolve(path), opts.configPath ? '--config' : 'STAYSYNC_CONFIG') : {};
  const merged = merge(merge(merge(defaults, fileLayer), envOverrides(env)), opts.overrides ?? {});
  const result = configSchema.safeParse(merged);
  if (!result.success) {
    const lines = result.error.issues.map((i) => describeIssue(i, env as Json));
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  checkWebhookCredentials(result.data.webhooks);
  checkReportingSchema(result.data.database);
  withDatabasePassword(result.data.database);
  return deepFreeze(result.data);
}

/**
 * database.password (STAYSYNC_DB_PASSWORD, or its _FILE) into database.url, percent-encoded.
 * So the password can be a secret file of its own, the one a compose file hands PostgreSQL too,
 * while the URL, which then holds none, stays a plain variable. Refused when one of the two
 * would be ignored: a URL with a password of its own, no URL (the local server keeps its own
 * passwords), or a URL without a host to log in to.
 */
function withDatabasePassword(database: z.infer<typeof configSchema>['database']): void {
  const { url, password } = database;
  if (password === undefined) return;
  if (url === undefined)
    throw new ConfigError('database.password (STAYSYNC_DB_PASSWORD) is set, but database.url (DATABASE_URL) is not: expected the URL it is the password of');
  const withPassword = URL.canParse(url) ? new URL(url) : undefined;
  if (withPassword?.password)
    throw new ConfigError('database.password (STAYSYNC_DB_PASSWORD) is set, and database.url (DATABASE_URL) has a password too: expected only one of them');
  if (withPassword) withPassword.password = encodeURIComponent(password);
  // A URL without a host (a Unix socket in its query) takes no password there: the setter leaves it out.
  if (!withPassword?.password)
    throw new ConfigError(
      "database.password (STAYSYNC_DB_PASSWORD) is set, but database.url (DATABASE_URL) names no host to log in to with it: give the password in the URL's query (password=…)",
    );
  database.url = withPassword.href;
  delete database.password;
}

/**
 * The credentials of webhooks.auth are there, and no credential of another mode is: a key
 * given while auth stays none would be ignored, and the operator would believe the endpoint
 * closed. Checked whether or not webhooks are enabled, so that enabling them later holds no surprise.
 */
function checkWebhookCredentials(w: z.infer<typeof configSchema>['webhooks']): void {
  const mode = `webhooks.auth (STAYSYNC_WEBHOOK_AUTH) is ${w.auth}`;
  if (w.auth !== 'apiKey' && w.apiKey !== undefined) {
    throw new ConfigError(
      `webhooks.apiKey (STAYSYNC_WEBHOOK_API_KEY) is set, but ${mode}: the key would be ignored. Set webhooks.auth to apiKey, or remove the key`,
    );
  }
  if (w.auth !== 'basic' && (w.basicUser !== undefined || w.basicPassword !== undefined)) {
    throw new ConfigError(
      `webhooks.basicUser/basicPassword (STAYSYNC_WEBHOOK_BASIC_USER/PASSWORD) are set, but ${mode}: they would be ignored. Set webhooks.auth to basic, or remove them`,
    );
  }
  if (w.auth !== 'none' && w.allowUnauthenticated) {
    throw new ConfigError(`webhooks.allowUnauthenticated is true, but ${mode}: it allows nothing then. Remove it, or set webhooks.auth to none`);
  }
  if (w.auth === 'apiKey' && !w.apiKey) {
    throw new ConfigError(
      'webhooks.apiKey (STAYSYNC_WEBHOOK_API_KEY or STAYSYNC_WEBHOOK_API_KEY_FILE): expected the key the provider sends in the API-KEY header, since webhooks.auth is apiKey',
    );
  }
  if (w.auth === 'basic' && (!w.basicUser || !w.basicPassword)) {
    throw new ConfigError(
      'webhooks.basicUser and webhooks.basicPassword (STAYSYNC_WEBHOOK_BASIC_USER, STAYSYNC_WEBHOOK_BASIC_PASSWORD, or their _FILE variants): expected both, since webhooks.auth is basic',
    );
  }
}

/**
 * The reporting schema is one staysync empties and refills: it drops every view and function
 * there when the layer changes (src/store/reporting.ts). So it may not be a schema of the mirror
 * (its views would go, or the erasure key would be shown to every reader), nor one that holds
 * the database's own objects. Whether it holds another mirror's is checked at start, in the database.
 */
function checkReportingSchema(d: z.infer<typeof configSchema>['database']): void {
  const mirrors: [string, string][] = [
    [d.schema, 'the mirror’s own schema (database.schema): its views would be dropped with the reporting layer’s'],
    [readableSchemaOf(d.schema), 'the schema of the mirror’s tables without personal data: each would drop the other’s views at every start'],
    [secretSchemaOf(d.schema), 'the schema of the erasure key: every reader would be granted it'],
  ];
  const taken = mirrors.find(([name]) => name === d.reportingSchema);
  const why =
    taken?.[1] ??
    (d.reportingSchema === 'public' || d.reportingSchema === 'information_schema' || d.reportingSchema.startsWith('pg_')
      ? 'a schema of the database itself: staysync drops every view and function of the reporting schema when it makes the layer again'
      : undefined);
  if (why !== undefined)
    throw new ConfigError(
      `database.reportingSchema (STAYSYNC_REPORTING_SCHEMA) is ${d.reportingSchema}, ${why}. Give the reporting views a schema of their own (the default: reporting)`,
    );
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const child of Object.values(v)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}
