/**
 * The table of environment variables (src/config/environment.ts) is the only place a variable
 * is named: every one the sources read is in it, each sets the key it says, and the
 * documentation's table is the table.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { environment, environmentVariableNames } from '../../src/config/environment.js';
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

describe('environment variables', () => {
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
