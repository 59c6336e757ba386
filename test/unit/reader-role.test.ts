/**
 * What grant-reader prints and sends: a URL without any password, and a password that reaches
 * the server as a SCRAM verifier (a login with it is checked against a real server in
 * test/integration/local-server.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readerUrl, storedPassword } from '../../src/store/reader-role.js';
import { readerPolicyExpression, SHARED_TABLES, tableRows } from '../../src/store/reader-policy.js';
import { SCHEMA_SUFFIX_LENGTH } from '../../src/config/schema-names.js';
import { loadConfig } from '../../src/config/config.js';

describe('readerUrl', () => {
  it('names the reader and carries no password, neither in the user part nor in the parameters', () => {
    expect(readerUrl('postgres://staysync:daemon-secret@db.example:5432/reporting?sslmode=require&password=p2&sslpassword=p3', 'metabase')).toBe(
      'postgres://metabase@db.example:5432/reporting?sslmode=require',
    );
    expect(readerUrl('postgres://postgres:s3cr%40t@127.0.0.1:54329/postgres', 'staysync_reader')).toBe('postgres://staysync_reader@127.0.0.1:54329/postgres');
  });

  it('says what to use when the URL does not parse, without repeating it', () => {
    expect(readerUrl('not a url :secret@', 'metabase')).toBe('(the URL of DATABASE_URL with user metabase and without password)');
  });
});

describe('storedPassword', () => {
  it('turns a printable ASCII password into a SCRAM-SHA-256 verifier with a fresh salt', () => {
    const verifier = storedPassword('chosen-secret');
    expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=:[A-Za-z0-9+/]{43}=$/);
    expect(verifier).not.toContain('chosen-secret');
    expect(storedPassword('chosen-secret')).not.toBe(verifier);
  });

  it('turns a password of accents, other scripts or control characters into a verifier too: the password itself never reaches the server', () => {
    for (const password of ['mot de passe é', 'пароль-Ω', '密码パスワード', 'tab\tand\u0007bell']) {
      const verifier = storedPassword(password);
      expect(verifier, password).toMatch(/^SCRAM-SHA-256\$4096:/);
      expect(verifier, password).not.toContain(password);
    }
  });

  it('refuses a password that SASLprep would change, which clients might hash otherwise, with the reason', () => {
    // A non-breaking space, a soft hyphen, a zero-width joiner, a full-width letter, a ligature, a decomposed é.
    for (const password of ['pass\u00a0word', 'pass\u00adword', 'pass\u200dword', 'ｐassword', 'ﬁle-secret', 'caf\u0065\u0301']) {
      expect(() => storedPassword(password), JSON.stringify(password)).toThrow(/SASLprep, RFC 4013.*Write it with plain spaces and ordinary letters/);
    }
  });
});

describe('the docs', () => {
  it('hand out no privileges on the mirror by hand: a GRANT of every table or default privileges would give the erasure key and every personal column', () => {
    const root = new URL('../../', import.meta.url);
    const pages = ['README.md', ...readdirSync(new URL('docs/', root)).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));
    const found = pages.flatMap((page) =>
      readFileSync(new URL(page, root), 'utf8')
        .split('\n')
        .filter((line) => /GRANT\s+SELECT\s+ON\s+ALL\s+TABLES\s+IN\s+SCHEMA|ALTER\s+DEFAULT\s+PRIVILEGES\b.*\bGRANT\b/i.test(line))
        .map((line) => `${page}: ${line.trim()}`),
    );
    expect(found).toEqual([]);
  });
});

describe('the rows a reader sees', () => {
  it('are its properties’ in a table of properties, all of a shared list, and of the bookkeeping to readers of every property only', () => {
    expect(tableRows('bookings', true)).toBe('per property');
    expect(tableRows('pos_codes', false)).toBe('shared');
    expect(tableRows('sync_runs', false)).toBe('readers of every property');
    expect(tableRows('a_table_added_later', false)).toBe('readers of every property');
    expect(tableRows('reader_grants', false)).toBe('own row');
    expect(SHARED_TABLES).not.toContain('reader_grants');
    expect(readerPolicyExpression('per property', null)).toBe('true');
    expect(readerPolicyExpression('per property', ['1024'])).toBe("property_id = '1024'");
    expect(readerPolicyExpression('per property', ['1024', '7291'])).toBe("property_id = ANY ('{1024,7291}'::text[])");
    expect(readerPolicyExpression('readers of every property', null)).toBe('true');
    expect(readerPolicyExpression('readers of every property', ['1024'])).toBeNull();
    expect(readerPolicyExpression('shared', ['1024'])).toBeNull();
    expect(readerPolicyExpression('own row', null)).toBeNull();
  });
});

describe('the mirror schema’s name', () => {
  it('leaves room for the schemas named after it, and a longer one is a configuration error naming the variable', () => {
    const longest = `s${'x'.repeat(53)}`;
    expect(longest.length + SCHEMA_SUFFIX_LENGTH).toBeLessThanOrEqual(63);
    expect(loadConfig({ env: { STAYSYNC_DB_SCHEMA: longest } }).database.schema).toBe(longest);
    expect(() => loadConfig({ env: { STAYSYNC_DB_SCHEMA: `${longest}x` } })).toThrow(/STAYSYNC_DB_SCHEMA.*at most 54 characters/);
  });
});

describe('the reporting schema', () => {
  it('may not be a schema of the mirror nor of the database itself: each refused with the reason, naming the variable', () => {
    const env = { STAYSYNC_DB_SCHEMA: 'mirror' };
    for (const [name, reason] of [
      ['mirror', 'the mirror’s own schema'],
      ['mirror_readable', 'the schema of the mirror’s tables without personal data'],
      ['mirror_secret', 'the schema of the erasure key: every reader would be granted it'],
      ['public', 'a schema of the database itself'],
      ['pg_catalog', 'a schema of the database itself'],
      ['information_schema', 'a schema of the database itself'],
    ] as const) {
      expect(() => loadConfig({ env: { ...env, STAYSYNC_REPORTING_SCHEMA: name } }), name).toThrow(
        new RegExp(`^database\\.reportingSchema \\(STAYSYNC_REPORTING_SCHEMA\\) is ${name}, ${reason}.*Give the reporting views a schema of their own`),
      );
    }
    expect(loadConfig({ env: { ...env, STAYSYNC_REPORTING_SCHEMA: 'mirror_reporting' } }).database.reportingSchema).toBe('mirror_reporting');
  });
});
