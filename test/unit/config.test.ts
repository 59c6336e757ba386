import { spawn, execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, readSecretFile, secretFromEnv, SECRET_FILE_LIMITS } from '../../src/config/config.js';
import { resolveConnections } from '../../src/config/connections.js';
import { environment } from '../../src/config/environment.js';

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

  it('reads the loyalty cards by default only with personal data on: without it they give only programme ids, at one request per person', () => {
    const cards = (env: Record<string, string>) => loadConfig({ env }).pms.loyaltyCards;
    expect(cards({})).toBe(false);
    expect(cards({ STAYSYNC_PMS_PERSONAL_DATA: 'true' })).toBe(true);
    // Set, it is what it says either way.
    expect(cards({ STAYSYNC_PMS_LOYALTY_CARDS: 'true' })).toBe(true);
    expect(cards({ STAYSYNC_PMS_PERSONAL_DATA: 'true', STAYSYNC_PMS_LOYALTY_CARDS: 'false' })).toBe(false);
    expect(loadConfig({ env: {}, overrides: { pms: { personalData: true, loyaltyCards: false } } }).pms.loyaltyCards).toBe(false);
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

  it('every secret has a _FILE form that works as the others: the text without its newline; a file missing, unreadable, too long or empty, or both forms set, is an error naming NAME_FILE', () => {
    const secrets = environment.filter((v) => v.kind === 'secret');
    expect(secrets.map((v) => v.name)).toEqual(expect.arrayContaining(['DATABASE_URL', 'STAYSYNC_CLIENT_SECRET', 'STAYSYNC_READER_PASSWORD']));
    // A value each key takes, and what the others it needs are set to.
    const values: Record<string, string> = { DATABASE_URL: 'postgres://u@h:5432/d', STAYSYNC_PSEUDONYM_KEY: 'k'.repeat(40) };
    const partners: Record<string, Record<string, string>> = {
      STAYSYNC_DB_PASSWORD: { DATABASE_URL: 'postgres://u@h:5432/d' },
      STAYSYNC_WEBHOOK_API_KEY: { STAYSYNC_WEBHOOK_AUTH: 'apiKey' },
      STAYSYNC_WEBHOOK_BASIC_USER: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'p' },
      STAYSYNC_WEBHOOK_BASIC_PASSWORD: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'u' },
    };
    const tooLong = file('x'.repeat(SECRET_FILE_LIMITS.maxBytes + 1));
    for (const v of secrets) {
      const value = values[v.name] ?? 'a-secret-of-the-operator';
      // What the daemon makes of it: the configuration's key; the few read by one command only, as that command reads them.
      const read = (env: Record<string, string>): unknown => {
        if (v.key === undefined) return secretFromEnv(env, v.name);
        const config = loadConfig({ env: { ...partners[v.name], ...env } });
        // The database password goes into the URL.
        if (v.name === 'STAYSYNC_DB_PASSWORD') return decodeURIComponent(new URL(config.database.url!).password);
        return v.key.split('.').reduce<unknown>((node, k) => (node as Record<string, unknown>)[k], config);
      };
      const name = `${v.name}_FILE`;
      expect(read({ [name]: file(`${value}\n`) }), name).toBe(value);
      const bad: [string, RegExp][] = [
        ['/nonexistent/secret', /cannot read \/nonexistent\/secret \(ENOENT\)$/],
        [tmpdir(), /cannot read .* \(EISDIR\)$/],
        [tooLong, /.* is longer than 65536 bytes$/],
        [file('\n'), /.* is empty$/],
      ];
      for (const [path, problem] of bad) {
        let error: unknown;
        try {
          read({ [name]: path });
        } catch (err) {
          error = err;
        }
        expect(error, `${name}=${path}`).toBeInstanceOf(ConfigError);
        expect((error as Error).message, `${name}=${path}`).toMatch(new RegExp(`^${name}: ${problem.source}`));
      }
      expect(() => read({ [v.name]: value, [name]: file(value) })).toThrow(`${v.name} and ${name} are both set`);
    }
  });

  it('reads a secret file within a size and a time: a FIFO nobody finishes, a device without end; a pipe whose writer finishes in time is read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'staysync-secret-fifo-'));
    const limits = { maxBytes: 1024, timeoutMs: 300 };
    // A writer that holds the FIFO open and never writes: the start would wait for ever.
    const held = join(dir, 'held');
    execFileSync('mkfifo', [held]);
    const writer = openSync(held, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      const started = performance.now();
      expect(() => readSecretFile(held, 'X_FILE', limits)).toThrow(`X_FILE: ${held} did not end within 0.3 s`);
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      closeSync(writer);
    }
    // /dev/zero: read up to the limit, not until the heap is full.
    expect(() => readSecretFile('/dev/zero', 'X_FILE')).toThrow(`X_FILE: /dev/zero is longer than ${SECRET_FILE_LIMITS.maxBytes} bytes`);
    expect(() => readSecretFile('/dev/null', 'X_FILE')).toThrow('X_FILE: /dev/null is empty');
    // A writer that opens the FIFO after it, and writes a moment later (a secret manager piping it).
    const piped = join(dir, 'piped');
    execFileSync('mkfifo', [piped]);
    const late = spawn('sh', ['-c', 'sleep 0.2; printf "s3cret\\n" > "$0"', piped]);
    const exited = new Promise((resolve) => late.once('exit', resolve));
    expect(readSecretFile(piped, 'X_FILE', { maxBytes: 1024, timeoutMs: 10_000 })).toBe('s3cret');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });

  it('the database password: a secret file of its own, put into the URL (any characters); refused with no URL, a URL with a password, or one without a host', () => {
    const password = 'p@ss:w/rd%41 é';
    const c = loadConfig({ env: { DATABASE_URL: 'postgres://staysync@db:5432/mirror?sslmode=require', STAYSYNC_DB_PASSWORD_FILE: file(`${password}\n`) } });
    expect(c.database.url).toBe(`postgres://staysync:${encodeURIComponent(password)}@db:5432/mirror?sslmode=require`);
    expect(decodeURIComponent(new URL(c.database.url!).password)).toBe(password);
    expect(c.database.password).toBeUndefined();
    expect(loadConfig({ env: { DATABASE_URL_FILE: file('postgres://staysync:pw@db/mirror\n') } }).database.url).toBe('postgres://staysync:pw@db/mirror');
    const cases: [Record<string, string>, RegExp][] = [
      [{ STAYSYNC_DB_PASSWORD: 'pw' }, /database\.password \(STAYSYNC_DB_PASSWORD\) is set, but database\.url \(DATABASE_URL\) is not/],
      [{ STAYSYNC_DB_PASSWORD: 'pw', DATABASE_URL: 'postgres://u:other@h/d' }, /has a password too: expected only one of them/],
      [{ STAYSYNC_DB_PASSWORD: 'pw', DATABASE_URL: 'postgres:///d?host=/run/postgresql' }, /names no host/],
      // A URL from a file is named by the variable that was set.
      [{ DATABASE_URL_FILE: file('mysql://x') }, /^invalid configuration:\n {2}database\.url \(from DATABASE_URL_FILE\): expected a postgres:\/\/ URL$/],
    ];
    for (const [env, message] of cases) expect(() => loadConfig({ env }), JSON.stringify(env)).toThrow(message);
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
