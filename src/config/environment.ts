/**
 * Every environment variable staysync reads, in one table: it drives their parsing
 * (config.ts), the key a configuration error names when a value came from one, the list the
 * deployment files are checked against, and the table of docs/configuration.md (checked
 * against it by test/unit/environment.test.ts).
 */

/**
 * How a variable's text becomes a value: as it is, a whole number, true/false, a comma list,
 * or a secret (also readable from the file named by NAME_FILE, as container secrets are).
 */
export type VariableKind = 'text' | 'integer' | 'boolean' | 'list' | 'secret';

export interface EnvironmentVariable {
  name: string;
  kind: VariableKind;
  /** The configuration key it sets; undefined for the few read by one command only. */
  key?: string;
  /** One line for the documentation's table. */
  meaning: string;
}

export const environment: readonly EnvironmentVariable[] = [
  {
    name: 'DATABASE_URL',
    kind: 'secret',
    key: 'database.url',
    meaning: 'PostgreSQL URL; without it, the local PostgreSQL server that staysync runs (docs/operations.md)',
  },
  {
    name: 'STAYSYNC_DB_PASSWORD',
    kind: 'secret',
    key: 'database.password',
    meaning: "the password for `DATABASE_URL`, which then carries none: a secret of its own (any characters), such as the file PostgreSQL's container is given",
  },
  {
    name: 'STAYSYNC_DATA_DIR',
    kind: 'text',
    key: 'database.dataDir',
    meaning: 'data directory of the local server (`postgres/`, `postgres.credentials`, `reader.credentials`)',
  },
  { name: 'STAYSYNC_LOCAL_PG_PORT', kind: 'integer', key: 'database.localPort', meaning: 'port of the local server on 127.0.0.1' },
  {
    name: 'STAYSYNC_DB_SCHEMA',
    kind: 'text',
    key: 'database.schema',
    meaning: 'schema of all mirror tables (at most 54 characters: readers use `<schema>_readable`, the erasure key lives in `<schema>_secret`)',
  },
  { name: 'STAYSYNC_REPORTING_SCHEMA', kind: 'text', key: 'database.reportingSchema', meaning: 'schema of the reporting views' },
  { name: 'STAYSYNC_READER_PASSWORD', kind: 'secret', meaning: 'the password `grant-reader` gives its role (else a generated one, printed once)' },
  {
    name: 'STAYSYNC_PROVIDER_URL',
    kind: 'text',
    key: 'provider.url',
    meaning: 'token endpoint and every API area but reference data; `https://` (plain `http://` only to a loopback address, such as the simulator)',
  },
  { name: 'STAYSYNC_REFERENCE_DATA_URL', kind: 'text', key: 'provider.referenceDataUrl', meaning: 'reference-data API' },
  {
    name: 'STAYSYNC_EGRESS',
    kind: 'text',
    key: 'provider.egress',
    meaning: "the IP address requests leave from, or any name for it: replicas with the same value share the token endpoint's per-IP budget",
  },
  { name: 'STAYSYNC_CLIENT_ID', kind: 'secret', key: 'provider.clientId', meaning: 'API client id of the shorthand connection `default`' },
  { name: 'STAYSYNC_CLIENT_SECRET', kind: 'secret', key: 'provider.clientSecret', meaning: 'API client secret of the shorthand connection `default`' },
  {
    name: 'STAYSYNC_PROPERTY_IDS',
    kind: 'list',
    key: 'propertyIds',
    meaning: 'comma-separated property ids to follow; empty: every property the content API lists',
  },
  { name: 'STAYSYNC_CONNECTIONS_DIR', kind: 'text', key: 'connectionsDir', meaning: 'a directory of API connection files, one JSON object each' },
  {
    name: 'STAYSYNC_POLL_CRON',
    kind: 'text',
    key: 'sync.pollCron',
    meaning: 'a fixed schedule for polling a caught-up property (croner syntax); without it, adaptive polling',
  },
  { name: 'STAYSYNC_POLL_MIN_MS', kind: 'integer', key: 'sync.pollIntervalMs.min', meaning: 'adaptive polling: no property is polled more often than this' },
  {
    name: 'STAYSYNC_POLL_QUIET_MS',
    kind: 'integer',
    key: 'sync.pollIntervalMs.quiet',
    meaning: 'adaptive polling: a quiet property (no change for STAYSYNC_QUIET_AFTER_MS) is polled at most this often',
  },
  {
    name: 'STAYSYNC_QUIET_AFTER_MS',
    kind: 'integer',
    key: 'sync.quietAfterMs',
    meaning: 'adaptive polling: a property with no change for this long is quiet',
  },
  {
    name: 'STAYSYNC_POLL_MAX_MS',
    kind: 'integer',
    key: 'sync.pollIntervalMs.max',
    meaning: 'adaptive polling: no property waits longer than this when the budget allows it',
  },
  {
    name: 'STAYSYNC_SWEEP_ENABLED',
    kind: 'boolean',
    key: 'sync.sweep.enabled',
    meaning: 'run the reconciliation sweep: each caught-up property re-reads the last two days of its booking list every hour',
  },
  {
    name: 'STAYSYNC_AUTO_RECOVER',
    kind: 'boolean',
    key: 'sync.autoRecover',
    meaning: "recover a property's lost continueToken at once, as `--recover` would, instead of waiting for the operator (default false)",
  },
  { name: 'STAYSYNC_CONTENT_ENABLED', kind: 'boolean', key: 'content.enabled', meaning: 'mirror content and reference data' },
  {
    name: 'STAYSYNC_PMS_ENABLED',
    kind: 'boolean',
    key: 'pms.enabled',
    meaning: 'mirror PMS reservations, guests and rooms (the API connection needs the PMS API)',
  },
  {
    name: 'STAYSYNC_PMS_BACKFILL_FROM',
    kind: 'text',
    key: 'pms.backfillFrom',
    meaning: 'first day of the PMS backfill, by modification (YYYY-MM-DD)',
  },
  {
    name: 'STAYSYNC_PMS_PERSONAL_DATA',
    kind: 'boolean',
    key: 'pms.personalData',
    meaning: "mirror guests' e-mails, phones, birth dates, citizenship, documents, comments and loyalty card numbers (names always)",
  },
  { name: 'STAYSYNC_CONTENT_CRON', kind: 'text', key: 'content.refreshCron', meaning: 'when content and reference data are refreshed (also at start)' },
  { name: 'STAYSYNC_PMS_POLL_CRON', kind: 'text', key: 'pms.pollCron', meaning: "when a caught-up property's PMS reservations are searched again" },
  {
    name: 'STAYSYNC_PMS_LOYALTY_CARDS',
    kind: 'boolean',
    key: 'pms.loyaltyCards',
    meaning: "read the loyalty cards of the PMS reservations' persons (unset: as pms.personalData; card numbers only with it)",
  },
  {
    name: 'STAYSYNC_OCCUPANCY_ENABLED',
    kind: 'boolean',
    key: 'occupancy.enabled',
    meaning: 'mirror the daily occupancy statistics (needs the PMS analytics API)',
  },
  { name: 'STAYSYNC_OCCUPANCY_CRON', kind: 'text', key: 'occupancy.refreshCron', meaning: 'when the daily occupancy is refreshed (also at start)' },
  {
    name: 'STAYSYNC_ROOM_INVENTORY_ENABLED',
    kind: 'boolean',
    key: 'roomInventory.enabled',
    meaning: 'mirror the inventory per PMS room type and night and the stay units per rate plan (needs the PMS integration storage API)',
  },
  {
    name: 'STAYSYNC_ROOM_INVENTORY_CRON',
    kind: 'text',
    key: 'roomInventory.refreshCron',
    meaning: 'when the inventory per room type and night and the stay units per rate plan are refreshed (also at start)',
  },
  {
    name: 'STAYSYNC_WEBHOOKS_ENABLED',
    kind: 'boolean',
    key: 'webhooks.enabled',
    meaning: "receive the provider's change events (`run` only), on a listener of their own",
  },
  { name: 'STAYSYNC_WEBHOOK_HOST', kind: 'text', key: 'webhooks.host', meaning: 'address of the webhook receiver: the one port that faces the provider' },
  { name: 'STAYSYNC_WEBHOOK_PORT', kind: 'integer', key: 'webhooks.port', meaning: 'port of the webhook receiver' },
  { name: 'STAYSYNC_WEBHOOK_PATH', kind: 'text', key: 'webhooks.path', meaning: 'path of the webhook receiver (the URL given to the provider ends with it)' },
  {
    name: 'STAYSYNC_WEBHOOK_RETAIN_EVENTS_DAYS',
    kind: 'integer',
    key: 'webhooks.retainEventsDays',
    meaning: 'change events no longer pending are deleted this many days after they arrived',
  },
  {
    name: 'STAYSYNC_WEBHOOK_AUTH',
    kind: 'text',
    key: 'webhooks.auth',
    meaning: '`none`, `apiKey` (header `API-KEY`) or `basic`; `none` on an address other than loopback is refused at start',
  },
  {
    name: 'STAYSYNC_RETAIN_PERSONAL_DATA_DAYS',
    kind: 'integer',
    key: 'privacy.retainPersonalDataDays',
    meaning: 'personal data of stays that ended more than this many days ago is erased on a schedule; unset: kept',
  },
  {
    name: 'STAYSYNC_PSEUDONYM_KEY',
    kind: 'secret',
    key: 'privacy.pseudonymKey',
    meaning: "secret key of the guests' pseudonyms (HMAC-SHA-256 of e-mail and phone); unset: no pseudonyms",
  },
  { name: 'STAYSYNC_WEBHOOK_API_KEY', kind: 'secret', key: 'webhooks.apiKey', meaning: 'the key of `apiKey` (an error with any other `webhooks.auth`)' },
  { name: 'STAYSYNC_WEBHOOK_BASIC_USER', kind: 'secret', key: 'webhooks.basicUser', meaning: 'the user of `basic`' },
  { name: 'STAYSYNC_WEBHOOK_BASIC_PASSWORD', kind: 'secret', key: 'webhooks.basicPassword', meaning: 'the password of `basic`' },
  {
    name: 'STAYSYNC_WEBHOOK_ALLOW_UNAUTHENTICATED',
    kind: 'boolean',
    key: 'webhooks.allowUnauthenticated',
    meaning: '`true` accepts `webhooks.auth` `none` on an address others can reach (behind a proxy that authenticates)',
  },
  { name: 'STAYSYNC_OPS_HOST', kind: 'text', key: 'ops.host', meaning: 'address of `/healthz`, `/readyz` and `/metrics` (`run` only)' },
  { name: 'STAYSYNC_OPS_PORT', kind: 'integer', key: 'ops.port', meaning: 'port of `/healthz`, `/readyz` and `/metrics`' },
  { name: 'STAYSYNC_TAKEOVER_MS', kind: 'integer', key: 'replicas.takeoverMs', meaning: 'a replica that dies is replaced within this time' },
  { name: 'STAYSYNC_SHUTDOWN_GRACE_MS', kind: 'integer', key: 'shutdown.graceMs', meaning: 'after SIGTERM the process ends within this time' },
  { name: 'STAYSYNC_LOG_LEVEL', kind: 'text', key: 'log.level', meaning: 'fatal, error, warn, info, debug, trace, silent' },
  {
    name: 'STAYSYNC_LOG_FORMAT',
    kind: 'text',
    key: 'log.format',
    meaning: '`json` (one object per line), `text` (lines for a person, the progress rewritten in place) or `auto` (text on a terminal, JSON otherwise)',
  },
  { name: 'STAYSYNC_CONFIG', kind: 'text', meaning: 'path of a JSON configuration file (also `--config`)' },
];

/** The variable that sets a configuration key, if any. */
export function variableOfKey(key: string): EnvironmentVariable | undefined {
  return environment.find((v) => v.key === key);
}

/** Every name the daemon reads, the `_FILE` forms of the secrets included (the deployment files are checked against it). */
export const environmentVariableNames: readonly string[] = environment.flatMap((v) => (v.kind === 'secret' ? [v.name, `${v.name}_FILE`] : [v.name])).sort();
