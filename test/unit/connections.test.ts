/** API connections from the configuration file, a connections directory, or the one-connection shorthand. */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { configForConnection, resolveConnections } from '../../src/config/connections.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'staysync-connections-'));
function configFile(content: unknown): string {
  const p = join(tmp(), 'c.json');
  writeFileSync(p, JSON.stringify(content));
  return p;
}
/** The ConfigError message of `fn` (fails when it does not throw one). */
function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('connections', () => {
  it('without any: one connection named default from STAYSYNC_CLIENT_ID/SECRET, the property ids and the limits', () => {
    const config = loadConfig({ env: { STAYSYNC_CLIENT_ID: 'id', STAYSYNC_CLIENT_SECRET: 's', STAYSYNC_PROPERTY_IDS: '1,2' } });
    const [c, ...rest] = resolveConnections(config);
    expect(rest).toEqual([]);
    expect(c).toMatchObject({ name: 'default', clientId: 'id', clientSecret: 's', propertyIds: ['1', '2'] });
    expect(c!.rateLimits).toEqual(config.rateLimits);
    expect(errorOf(() => resolveConnections(loadConfig({ env: { STAYSYNC_CLIENT_ID: 'id' } })))).toMatch(
      /provider\.clientSecret \(STAYSYNC_CLIENT_SECRET or STAYSYNC_CLIENT_SECRET_FILE\): expected/,
    );
  });

  it('from the configuration file: credentials inline, from a file or from a variable; limits of its own per scope', () => {
    const secretFile = join(tmp(), 'secret');
    writeFileSync(secretFile, 'from-file\n');
    const config = loadConfig({
      env: {
        STAYSYNC_CONFIG: configFile({
          connections: [
            { name: 'hotel-a', clientId: 'a', clientSecret: 'inline', propertyIds: ['500100'] },
            { name: 'hotel-b', clientIdEnv: 'B_ID', clientSecretFile: secretFile, rateLimits: { bookingList: [{ limit: 6000, windowMs: 3_600_000 }] } },
          ],
        }),
        // Ignored once connections are defined.
        STAYSYNC_CLIENT_ID: 'shorthand',
      },
    });
    const [a, b] = resolveConnections(config, { env: { B_ID: 'b-id' } });
    expect(a).toMatchObject({ name: 'hotel-a', clientId: 'a', clientSecret: 'inline', propertyIds: ['500100'], source: 'connections[0]' });
    expect(b).toMatchObject({ name: 'hotel-b', clientId: 'b-id', clientSecret: 'from-file', propertyIds: [] });
    expect(b!.rateLimits.bookingList).toEqual([{ limit: 6000, windowMs: 3_600_000 }]);
    expect(b!.rateLimits.bookingDetails).toEqual(config.rateLimits.bookingDetails);

    const own = configForConnection(config, b!);
    expect(own.provider.clientId).toBe('b-id');
    expect(own.provider.clientSecret).toBe('from-file');
    expect(own.rateLimits.bookingList).toEqual([{ limit: 6000, windowMs: 3_600_000 }]);
    expect(own.provider.url).toBe(config.provider.url);
    expect(Object.isFrozen(own)).toBe(true);
  });

  it('from a connections directory: one JSON file each, named by the file, hidden entries, examples and other files skipped', () => {
    const dir = tmp();
    writeFileSync(join(dir, 'hotel-b.json'), JSON.stringify({ clientId: 'b', clientSecret: 'sb', propertyIds: ['500200'] }));
    // A secret volume: the visible names are links into a hidden, versioned directory.
    mkdirSync(join(dir, '..2026_11_23'));
    writeFileSync(join(dir, '..2026_11_23', 'hotel-a.json'), JSON.stringify({ clientId: 'a', clientSecret: 'sa' }));
    symlinkSync(join(dir, '..2026_11_23', 'hotel-a.json'), join(dir, 'hotel-a.json'));
    writeFileSync(join(dir, 'README'), 'not a connection');
    writeFileSync(join(dir, '.hidden.json'), '{');
    // The example that compose's folder ships beside the operator's files (its name is no connection's).
    writeFileSync(join(dir, 'example-hotel.example.json'), JSON.stringify({ clientId: 'replace-with-the-client-id', clientSecret: 'x' }));
    const config = loadConfig({ env: { STAYSYNC_CONNECTIONS_DIR: dir } });
    expect(config.connectionsDir).toBe(dir);
    expect(resolveConnections(config).map((c) => [c.name, c.clientId, c.clientSecret, c.source])).toEqual([
      ['hotel-a', 'a', 'sa', join(dir, 'hotel-a.json')],
      ['hotel-b', 'b', 'sb', join(dir, 'hotel-b.json')],
    ]);
  });

  it('names the connection, the key and what it expected, never the secret', () => {
    const dir = tmp();
    const withDir = (files: Record<string, unknown>) => {
      const d = mkdtempSync(join(dir, 'd-'));
      for (const [name, content] of Object.entries(files)) writeFileSync(join(d, name), typeof content === 'string' ? content : JSON.stringify(content));
      return loadConfig({ env: { STAYSYNC_CONNECTIONS_DIR: d } });
    };
    const inFile = (connections: unknown[]) => loadConfig({ env: { STAYSYNC_CONFIG: configFile({ connections }) } });

    expect(errorOf(() => resolveConnections(inFile([{ name: 'a', clientId: 'x' }])))).toBe(
      'connections[0] (a): expected clientSecret, clientSecretFile or clientSecretEnv, got none',
    );
    expect(errorOf(() => resolveConnections(inFile([{ name: 'a', clientId: 'x', clientSecret: 'TOPSECRET', clientSecretEnv: 'S' }])))).toBe(
      'connections[0] (a): expected one of clientSecret, clientSecretEnv, got 2',
    );
    expect(errorOf(() => resolveConnections(inFile([{ name: 'a', clientId: 'x', clientSecretEnv: 'NOPE' }]), { env: {} }))).toBe(
      'connections[0] (a): clientSecretEnv: the environment variable NOPE is not set',
    );
    expect(errorOf(() => resolveConnections(inFile([{ name: 'a', clientId: 'x', clientSecretFile: '/nonexistent/s' }])))).toMatch(
      /^connections\[0\] \(a\): clientSecretFile: cannot read \/nonexistent\/s \(ENOENT\)$/,
    );
    expect(
      errorOf(() =>
        resolveConnections(
          inFile([
            { name: 'a', clientId: 'x', clientSecret: 'TOPSECRET', propertyIds: ['1', '2'] },
            { name: 'b', clientId: 'y', clientSecret: 'TOPSECRET', propertyIds: ['2'] },
          ]),
        ),
      ),
    ).toBe('connections[1]: property 2 is also listed by connection a (connections[0]): expected each property in one connection, whose budget it uses');
    expect(
      errorOf(() =>
        resolveConnections(
          inFile([
            { name: 'a', clientId: 'x', clientSecret: 's' },
            { name: 'a', clientId: 'y', clientSecret: 's' },
          ]),
        ),
      ),
    ).toBe('connections[1]: the connection name a is also used by connections[0]: expected unique names');
    // One client id is one API client, whose limits the provider counts for all its connections together.
    expect(
      errorOf(() =>
        resolveConnections(
          inFile([
            { name: 'a', clientId: 'x', clientSecret: 's', propertyIds: ['1'] },
            { name: 'b', clientId: 'x', clientSecret: 's', propertyIds: ['2'], rateLimits: { bookingDetails: [{ limit: 5, windowMs: 1000 }] } },
          ]),
        ),
      ),
    ).toBe(
      'connections[1]: connection b has the client id of connection a (connections[0]) but other rateLimits: expected the same, as one API client has one budget, shared by its connections',
    );
    const twins = resolveConnections(
      inFile([
        { name: 'a', clientId: 'x', clientSecret: 's', propertyIds: ['1'] },
        { name: 'b', clientId: 'x', clientSecret: 's', propertyIds: ['2'] },
      ]),
    );
    expect(twins.map((c) => [c.name, c.clientId])).toEqual([
      ['a', 'x'],
      ['b', 'x'],
    ]);
    // In the configuration file, zod names the key.
    expect(errorOf(() => inFile([{ name: 'Hotel A', clientId: 'x', clientSecret: 's' }]))).toMatch(
      /connections\.0\.name: expected a name of lower-case letters/,
    );

    const dirError = errorOf(() => resolveConnections(withDir({ 'x.json': { clientId: 'x', clientSecret: 'TOPSECRET', colour: 'red' } })));
    expect(dirError).toMatch(/x\.json: unknown key\(s\) colour: expected name, clientId\(File\|Env\), clientSecret\(File\|Env\), propertyIds, rateLimits/);
    expect(errorOf(() => resolveConnections(withDir({ 'y.json': '{"clientId":' })))).toMatch(
      /y\.json is not a JSON object describing one connection: line 1, column 13: /,
    );
    expect(errorOf(() => resolveConnections(withDir({ 'z.json': [1] })))).toMatch(
      /z\.json is not a JSON object describing one connection: its top level is an array$/,
    );
    expect(errorOf(() => resolveConnections(loadConfig({ env: { STAYSYNC_CONNECTIONS_DIR: '/nonexistent/dir' } })))).toMatch(
      /^connectionsDir \(STAYSYNC_CONNECTIONS_DIR\): cannot read the directory \/nonexistent\/dir \(ENOENT\)$/,
    );
    for (const message of [dirError]) expect(message).not.toContain('TOPSECRET');
  });
});
