/**
 * API connections: the credentials, properties and budget a hotel hands a partner. A connection
 * is defined in one of three places:
 * - `connections` in the configuration file, a list;
 * - `connectionsDir` (STAYSYNC_CONNECTIONS_DIR): one JSON file per connection, as a secrets
 *   volume provides them; the file name (without .json) is the name unless the file says one;
 *   hidden entries (Kubernetes' `..data` and the like) and examples (`*.example.json`) are skipped;
 * - neither: the shorthand for one connection, `default`, from provider.clientId/clientSecret
 *   (STAYSYNC_CLIENT_ID/SECRET or their _FILE variants), propertyIds and rateLimits.
 * Each credential is inline (`clientSecret`), in a file (`clientSecretFile`) or in an
 * environment variable named by `clientSecretEnv`: exactly one of the three. A connection's
 * `rateLimits` replace the configuration's per scope (a contracted budget); the others stay.
 * Connections with one client id are one API client: the provider counts its limits for all of
 * them together, so they share one budget (the fleet's) and must give the same `rateLimits`.
 * Every error names the connection, the key and what was expected, never a secret.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { ConfigError, connectionSpecSchema, parseJsonObject, rateLimitScopes, readSecretFile, zodProblem, type Config, type ConnectionSpec } from './config.js';

export interface Connection {
  name: string;
  clientId: string;
  clientSecret: string;
  /** Empty: every property the connection's content lists. */
  propertyIds: string[];
  rateLimits: Config['rateLimits'];
  /** Where it is defined, for messages: `connections[2]`, a file path, or the environment. */
  source: string;
}

/** The name of the shorthand connection (STAYSYNC_CLIENT_ID/SECRET). */
export const DEFAULT_CONNECTION = 'default';

export interface ResolveOptions {
  env?: NodeJS.ProcessEnv;
}

/** The connections the configuration defines, credentials read; throws ConfigError. */
export function resolveConnections(config: Config, opts: ResolveOptions = {}): Connection[] {
  const env = opts.env ?? process.env;
  const specs: { spec: ConnectionSpec; source: string }[] = config.connections.map((spec, i) => ({ spec, source: `connections[${i}]` }));
  if (config.connectionsDir) specs.push(...readConnectionsDir(config.connectionsDir));
  if (specs.length === 0) return [shorthand(config)];

  const connections = specs.map(({ spec, source }) => ({
    name: spec.name,
    clientId: credential(spec, 'clientId', source, env),
    clientSecret: credential(spec, 'clientSecret', source, env),
    propertyIds: [...(spec.propertyIds ?? [])],
    rateLimits: { ...config.rateLimits, ...spec.rateLimits },
    source,
  }));
  const byName = new Map<string, Connection>();
  const byProperty = new Map<string, Connection>();
  const byClient = new Map<string, Connection>();
  for (const c of connections) {
    const twin = byName.get(c.name);
    if (twin) throw new ConfigError(`${c.source}: the connection name ${c.name} is also used by ${twin.source}: expected unique names`);
    byName.set(c.name, c);
    // The provider counts its limits per API client: connections of one client id share one budget.
    const sameClient = byClient.get(c.clientId);
    if (sameClient && JSON.stringify(sameClient.rateLimits) !== JSON.stringify(c.rateLimits)) {
      throw new ConfigError(
        `${c.source}: connection ${c.name} has the client id of connection ${sameClient.name} (${sameClient.source}) but other rateLimits: expected the same, as one API client has one budget, shared by its connections`,
      );
    }
    byClient.set(c.clientId, c);
    for (const id of c.propertyIds) {
      const other = byProperty.get(id);
      if (other) {
        throw new ConfigError(
          `${c.source}: property ${id} is also listed by connection ${other.name} (${other.source}): expected each property in one connection, whose budget it uses`,
        );
      }
      byProperty.set(id, c);
    }
  }
  return connections;
}

/** The configuration as one connection's streams see it: its credentials, properties and limits. */
export function configForConnection(config: Config, c: Connection): Config {
  return Object.freeze({
    ...config,
    provider: Object.freeze({ ...config.provider, clientId: c.clientId, clientSecret: c.clientSecret }),
    propertyIds: Object.freeze([...c.propertyIds]) as string[],
    rateLimits: Object.freeze({ ...c.rateLimits }),
  });
}

function shorthand(config: Config): Connection {
  const { clientId, clientSecret } = config.provider;
  if (!clientId)
    throw new ConfigError('provider.clientId (STAYSYNC_CLIENT_ID or STAYSYNC_CLIENT_ID_FILE): expected the API client id, got nothing (or define connections)');
  if (!clientSecret)
    throw new ConfigError(
      'provider.clientSecret (STAYSYNC_CLIENT_SECRET or STAYSYNC_CLIENT_SECRET_FILE): expected the API client secret, got nothing (or define connections)',
    );
  return {
    name: DEFAULT_CONNECTION,
    clientId,
    clientSecret,
    propertyIds: [...config.propertyIds],
    rateLimits: config.rateLimits,
    source: 'STAYSYNC_CLIENT_ID/STAYSYNC_CLIENT_SECRET',
  };
}

/** clientId or clientSecret: from exactly one of the value, a file, or an environment variable. */
function credential(spec: ConnectionSpec, key: 'clientId' | 'clientSecret', source: string, env: NodeJS.ProcessEnv): string {
  const inline = spec[key];
  const file = spec[`${key}File`];
  const envName = spec[`${key}Env`];
  const given = [inline !== undefined && key, file !== undefined && `${key}File`, envName !== undefined && `${key}Env`].filter(
    (k): k is string => typeof k === 'string',
  );
  const where = `${source} (${spec.name})`;
  if (given.length === 0) throw new ConfigError(`${where}: expected ${key}, ${key}File or ${key}Env, got none`);
  if (given.length > 1) throw new ConfigError(`${where}: expected one of ${given.join(', ')}, got ${given.length}`);
  if (inline !== undefined) return inline;
  if (file !== undefined) return readSecretFile(file, `${where}: ${key}File`);
  const value = env[envName!];
  if (value === undefined || value === '') throw new ConfigError(`${where}: ${key}Env: the environment variable ${envName} is not set`);
  return value.trim();
}

/**
 * The ending of an example connection file: the template config/deploy/connections/ ships
 * beside the operator's own files, which compose mounts with it. Never a connection.
 */
export const EXAMPLE_SUFFIX = '.example.json';

/** One connection per `*.json` file of `dir` (but examples, `*.example.json`), sorted by file name. */
export function readConnectionsDir(dir: string): { spec: ConnectionSpec; source: string }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    throw new ConfigError(
      `connectionsDir (STAYSYNC_CONNECTIONS_DIR): cannot read the directory ${dir} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  }
  const out: { spec: ConnectionSpec; source: string }[] = [];
  for (const file of names.filter((n) => n.endsWith('.json') && !n.endsWith(EXAMPLE_SUFFIX) && !n.startsWith('.')).sort()) {
    const path = join(dir, file);
    // A secret volume's entries are symbolic links: what they point at must be a file.
    if (!statSync(path, { throwIfNoEntry: false })?.isFile()) continue;
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigError(`${path}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    const raw = parseJsonObject(text, path, 'a JSON object describing one connection');
    const withName = { name: file.slice(0, -'.json'.length), ...raw };
    const parsed = connectionSpecSchema.safeParse(withName);
    if (!parsed.success) throw new ConfigError(`${path}: ${describeSpecIssues(parsed.error)}`);
    out.push({ spec: parsed.data, source: path });
  }
  return out;
}

function describeSpecIssues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const key = i.path.map(String).join('.');
      if (i.code === 'unrecognized_keys')
        return `unknown key(s) ${i.keys.join(', ')}: expected name, clientId(File|Env), clientSecret(File|Env), propertyIds, rateLimits (${rateLimitScopes.filter((x) => x !== 'token').join(', ')}; the token endpoint's limit is per IP address, set in rateLimits.token of the configuration)`;
      return `${key || '(top level)'}: ${zodProblem(i.message)}`;
    })
    .join('; ');
}
