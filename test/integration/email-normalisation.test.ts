/**
 * One normalisation of e-mails (src/mapping/pseudonyms.ts normaliseEmail), and the store's
 * match key in SQL (src/store/repositories/erasures.ts matchKeySql) that finds candidates for
 * it: for every text, the database's key of the text as stored equals the key of the text as
 * normalised, so that no address is missed however it is stored (tabs, no-break spaces,
 * capitals outside ASCII), whatever the database's locale.
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { matchKey, normaliseEmail } from '../../src/mapping/pseudonyms.js';
import { matchKeysInDatabase } from '../../src/store/repositories/erasures.js';
import { testDatabaseUrl } from '../helpers/database.js';
import { Kysely, PostgresDialect } from 'kysely';

describe('the match key of e-mails', () => {
  it('is the same in SQL for a stored address as in TypeScript for it normalised: tabs, no-break spaces, capitals outside ASCII', async () => {
    const db = new Kysely<never>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: await testDatabaseUrl(), max: 1 }) }) });
    try {
      const stored = [
        '\tZÉPHYRINE.Q+Stay@EXAMPLE.ORG\u00a0',
        '\u3000\ufeffada@example.com\u2028',
        'İSTANBUL@örnek.com.tr',
        '\u212Aelvin@Example.org',
        'ΣΟΦΊΑΣ@example.gr',
        'straße@EXAMPLE.de',
        'e\u0301mile@example.fr',
      ];
      // And random texts over the characters that matter: every whitespace JavaScript trims, the two capitals whose lower case is ASCII, others.
      const pool = Array.from('aZz09.+@-_ \t\n\u000b\f\r\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeffİ\u212AÉéΣσßÅ\u0301😀'); // code points: the combining accent and the emoji stay whole
      let seed = 7;
      const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
      for (let i = 0; i < 2000; i++) stored.push(Array.from({ length: 1 + Math.floor(next() * 12) }, () => pool[Math.floor(next() * pool.length)]).join(''));
      const inDatabase = await matchKeysInDatabase(db, stored);
      const normalised = stored.map((s) => matchKey(normaliseEmail(s) ?? ''));
      expect(inDatabase.map((k, i) => (k === normalised[i] ? null : { stored: stored[i], inDatabase: k, normalised: normalised[i] })).filter(Boolean)).toEqual(
        [],
      );
      expect(inDatabase.slice(0, 4)).toEqual(['zphyrine.q+stay@example.org', 'ada@example.com', 'istanbul@rnek.com.tr', 'kelvin@example.org']);
    } finally {
      await db.destroy();
    }
  });
});
