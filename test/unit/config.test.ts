import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { resolveConnections } from '../../src/config/connections.js';

function file(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'staysync-config-'));
  const p = join(dir, 'c.json');
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

describe('configuration', () => {
  it('runs on Node.js 24 or later', () => {
    expect(Number(process.versions.node.split('.')[0])).toBeGreaterThanOrEqual(24);
  });

  it('has production defaults', () => {
    const c = loadConfig({ env: {} });
    expect(c.database.url).toBeUndefined();
    expect(c.provider.url).toBe('https://connect.hopenapi.com');
    expect(c.rateLimits.bookingList).toEqual([
      { limit: 3, windowMs: 1000 },
      { limit: 100, windowMs: 60000 },
      { limit: 3000, windowMs: 3600000 },
    ]);
    expect(c.rateLimits.bookingDetails.map((w) => w.limit)).toEqual([10, 200, 4000]);
    expect(Object.isFrozen(c.rateLimits.bookingList[0])).toBe(true);
  });

  it('layers file over defaults and environment over file', () => {
    const path = file({ propertyIds: ['1'], rateLimits: { bookingDetails: [{ limit: 5, windowMs: 100 }] }, log: { level: 'debug' } });
    const c = loadConfig({ env: { STAYSYNC_CONFIG: path, STAYSYNC_PROPERTY_IDS: ' 7291, 500100 ,', STAYSYNC_PROVIDER_URL: 'http://127.0.0.1:9/' } });
    expect(c.propertyIds).toEqual(['7291', '500100']);
    expect(c.rateLimits.bookingDetails).toEqual([{ limit: 5, windowMs: 100 }]);
    expect(c.rateLimits.bookingList).toHaveLength(3);
    expect(c.log.level).toBe('debug');
    expect(c.provider.url).toBe('http://127.0.0.1:9');
  });

  it('reads secrets from *_FILE and refuses both forms at once', () => {
    const secret = file('s3cret\n');
    const c = loadConfig({ env: { STAYSYNC_CLIENT_ID: 'id', STAYSYNC_CLIENT_SECRET_FILE: secret } });
    expect(resolveConnections(c)).toMatchObject([{ name: 'default', clientId: 'id', clientSecret: 's3cret' }]);
    expect(() => loadConfig({ env: { STAYSYNC_CLIENT_SECRET: 'a', STAYSYNC_CLIENT_SECRET_FILE: secret } })).toThrow(
      /STAYSYNC_CLIENT_SECRET and STAYSYNC_CLIENT_SECRET_FILE are both set/,
    );
    expect(() => loadConfig({ env: { STAYSYNC_CLIENT_ID_FILE: '/nonexistent/x' } })).toThrow(/STAYSYNC_CLIENT_ID_FILE: cannot read/);
  });

  it('names the key and what it expected', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ DATABASE_URL: 'mysql://x' }, /database\.url \(from DATABASE_URL\): expected a postgres:\/\/ URL/],
      [{ STAYSYNC_PROPERTY_IDS: 'a b' }, /propertyIds\.0 \(from STAYSYNC_PROPERTY_IDS\)/],
      [{ STAYSYNC_LOG_LEVEL: 'loud' }, /log\.level \(from STAYSYNC_LOG_LEVEL\)/],
      [{ STAYSYNC_CONFIG: file({ rateLimits: { token: [] } }) }, /rateLimits\.token/],
      [{ STAYSYNC_CONFIG: file({ sync: { detailConcurrency: 'many' } }) }, /sync\.detailConcurrency: expected number/],
      [{ STAYSYNC_CONFIG: file({ surprise: true }) }, /unknown key\(s\) surprise/],
      [{ STAYSYNC_CONFIG: file({ replicas: { tokenGateSpacingMs: 3_600_000 } }) }, /replicas\.tokenGateSpacingMs: expected number to be <=30000$/m],
      [{ STAYSYNC_RETAIN_PERSONAL_DATA_DAYS: '0' }, /privacy\.retainPersonalDataDays \(from STAYSYNC_RETAIN_PERSONAL_DATA_DAYS\)/],
      [
        { STAYSYNC_RETAIN_PERSONAL_DATA_DAYS: '40000' },
        /privacy\.retainPersonalDataDays \(from STAYSYNC_RETAIN_PERSONAL_DATA_DAYS\): expected number to be <=\d+$/m,
      ],
      // zod 4's headings ("Too small: ", "Too big: ") are not repeated before "expected".
      [
        { STAYSYNC_CONFIG: file({ rateLimits: { bookingList: [{ limit: 0, windowMs: 1000 }] } }) },
        /rateLimits\.bookingList\.0\.limit: expected number to be >0$/m,
      ],
      [{ STAYSYNC_PSEUDONYM_KEY: 'short' }, /privacy\.pseudonymKey \(from STAYSYNC_PSEUDONYM_KEY\): expected at least 32 characters/],
      [{ STAYSYNC_CONFIG: file('{not json') }, /STAYSYNC_CONFIG: .* is not a JSON object: line 1, column 2: /],
    ];
    for (const [env, message] of cases) {
      let error: unknown;
      try {
        loadConfig({ env });
      } catch (err) {
        error = err;
      }
      expect(error, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
    }
    expect(() => resolveConnections(loadConfig({ env: {} }))).toThrow(/STAYSYNC_CLIENT_ID/);
  });

  it('says where a file is not JSON (line and column), never what is there: it may be part of a secret', () => {
    const secret = 'Zq9-s3cr3t-Vw8';
    const broken = [
      `{\n  "provider": {\n    "clientSecret": ${secret}\n  }\n}`,
      `{\n  "provider": { "clientSecret": "${secret}\n  }\n}`,
      `{"provider": {"clientSecret": "${secret}" "clientId": "x"}}`,
    ];
    const where = ['line 3, column 21', 'line 2, column 48', 'line 1, column 48'];
    broken.forEach((text, i) => {
      let message = '';
      try {
        loadConfig({ env: { STAYSYNC_CONFIG: file(text) } });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, text).toContain(where[i]);
      for (let k = 0; k + 4 <= secret.length; k++) expect(message, text).not.toContain(secret.slice(k, k + 4));
    });
  });
});
