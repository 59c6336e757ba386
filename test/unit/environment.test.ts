/**
 * The table of environment variables (src/config/environment.ts) is the only place a variable
 * is named: every one the sources read is in it, each sets the key it says, and the
 * documentation's table is the table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { configSchema, loadConfig } from '../../src/config/config.js';
import { environment, environmentVariableNames, variableOfKey } from '../../src/config/environment.js';
import { environmentTable } from '../../tools/docs/environment-table.js';

/** Every `'STAYSYNC_…'` or `'DATABASE_URL'` literal of the sources. */
function namesInSources(): Set<string> {
  const names = new Set<string>();
  for (const entry of readdirSync('src', { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const text = readFileSync(join(entry.parentPath, entry.name), 'utf8');
    for (const m of text.matchAll(/\b(STAYSYNC_[A-Z_]+|DATABASE_URL)\b/g)) names.add(m[1]!);
  }
  return names;
}

/**
 * The boolean keys of the configuration's schema (`pms.enabled`, `sync.sweep.enabled`, …),
 * found by walking it, so that a switch added later is seen without a list to keep up.
 */
function booleanKeys(schema: z.ZodType, path: string[] = []): string[] {
  const def = (schema as unknown as { _zod: { def: { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType; in?: z.ZodType } } })._zod.def;
  switch (def.type) {
    case 'boolean':
      return [path.join('.')];
    case 'object':
      return Object.entries(def.shape!).flatMap(([k, child]) => booleanKeys(child, [...path, k]));
    case 'optional':
    case 'default':
    case 'nullable':
      return booleanKeys(def.innerType!, path);
    case 'pipe':
      return booleanKeys(def.in!, path);
    default:
      return [];
  }
}

/**
 * Switches that are set in a config file only, each with the reason. None today: a first user
 * flips them in a container, where a variable is the easy way (see docs/configuration.md).
 */
const fileOnlySwitches: Record<string, string> = {};

/** Settings besides the switches that a first user changes: each needs a variable too. */
const firstUserKeys = [
  'pms.backfillFrom',
  'privacy.retainPersonalDataDays',
  'privacy.pseudonymKey',
  'webhooks.path',
  'webhooks.retainEventsDays',
  'webhooks.auth',
  'propertyIds',
  'connectionsDir',
];

describe('environment variables', () => {
  it('every switch of the configuration has a variable (or is file-only, with a reason), which flips it', () => {
    const switches = booleanKeys(configSchema);
    // The walk finds them (a schema refactoring that hid them would leave nothing to check).
    expect(switches).toEqual(expect.arrayContaining(['pms.enabled', 'occupancy.enabled', 'content.enabled', 'webhooks.enabled', 'sync.sweep.enabled']));
    const defaults = loadConfig({ env: {} });
    for (const key of switches) {
      if (Object.hasOwn(fileOnlySwitches, key)) {
        expect(variableOfKey(key), `${key} is listed as file-only but has a variable`).toBeUndefined();
        continue;
      }
      const variable = variableOfKey(key);
      expect(
        variable,
        `${key}: a boolean switch without an environment variable (add one to src/config/environment.ts, or list it as file-only with a reason)`,
      ).toBeDefined();
      expect(variable!.kind, key).toBe('boolean');
      const before = key.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], defaults);
      const flipped = String(!(before as boolean));
      // webhooks.allowUnauthenticated is true only with webhooks.auth none, the default.
      const config = loadConfig({ env: { [variable!.name]: flipped } });
      const after = key.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], config);
      expect(after, variable!.name).toBe(!(before as boolean));
    }
    for (const key of Object.keys(fileOnlySwitches)) expect(switches, `file-only ${key} is no switch of the configuration`).toContain(key);
  });

  it('the settings a first user changes have variables', () => {
    for (const key of firstUserKeys) expect(variableOfKey(key), key).toBeDefined();
  });

  it('every variable that can hold a password or a key is a secret, with a _FILE form: no deployment need put it in the environment', () => {
    // By its name; and DATABASE_URL, whose URL may carry the password.
    const holdsSecret = environment.filter((v) => /SECRET|PASSWORD|_KEY\b|TOKEN|_USER\b/.test(v.name) || v.name === 'DATABASE_URL');
    expect(holdsSecret.map((v) => v.name)).toEqual(expect.arrayContaining(['DATABASE_URL', 'STAYSYNC_READER_PASSWORD', 'STAYSYNC_WEBHOOK_API_KEY']));
    expect(holdsSecret.filter((v) => v.kind !== 'secret').map((v) => v.name)).toEqual([]);
    for (const v of holdsSecret) expect(environmentVariableNames, v.name).toContain(`${v.name}_FILE`);
  });

  it('every variable the sources name is in the table', () => {
    const named = [...namesInSources()].filter((n) => !environmentVariableNames.includes(n));
    expect(named).toEqual([]);
    expect(environmentVariableNames).toContain('STAYSYNC_CLIENT_SECRET_FILE');
  });

  it('each sets the key it names, and a configuration error names the variable it came from', () => {
    const samples: Record<string, string> = { text: 'x', integer: '7', boolean: 'true', list: 'a,b', secret: 's' };
    // Webhook credentials are only taken with the mode they belong to.
    const partners: Record<string, Record<string, string>> = {
      STAYSYNC_WEBHOOK_API_KEY: { STAYSYNC_WEBHOOK_AUTH: 'apiKey' },
      STAYSYNC_WEBHOOK_BASIC_USER: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'p' },
      STAYSYNC_WEBHOOK_BASIC_PASSWORD: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'u' },
    };
    for (const v of environment) {
      if (v.key === undefined) continue;
      // A value of the right kind, but not of the key's shape (e.g. 'x' as a URL): either it is
      // taken and appears at the key, or the error names the variable.
      let config: unknown;
      try {
        config = loadConfig({ env: { ...partners[v.name], [v.name]: samples[v.kind]! } });
      } catch (err) {
        expect((err as Error).message, v.name).toContain(v.name);
        continue;
      }
      const value = v.key.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], config);
      const expected = v.kind === 'integer' ? 7 : v.kind === 'boolean' ? true : v.kind === 'list' ? ['a', 'b'] : samples[v.kind];
      expect(value, v.name).toEqual(expected);
    }
  });

  it('docs/configuration.md shows the table as it is (regenerate with npm run docs:environment)', () => {
    const doc = readFileSync('docs/configuration.md', 'utf8');
    expect(doc).toContain(environmentTable());
  });
});
