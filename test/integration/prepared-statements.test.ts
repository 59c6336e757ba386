/**
 * The write path's statements of a fixed text run as prepared statements
 * (src/store/prepared.ts): parsed once per connection, named by their text; other statements
 * are not prepared, and past the cap of texts a marked statement still runs, unnamed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/store/database.js';
import { prepared } from '../../src/store/prepared.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
let db: DatabaseHandle | undefined;
afterEach(async () => {
  await db?.close();
  await h?.close();
  db = undefined;
  h = undefined;
});

/** The statements prepared on the transaction's connection whose text is marked. */
const preparedHere = sql<{ name: string; statement: string }>`
  SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE '/* prepared */%' ORDER BY statement`;

describe('prepared statements', () => {
  it('prepares a marked statement once per connection, under a name of its text, and runs it with each call’s values', async () => {
    h = await startHarness();
    await h.migrate();
    db = await openDatabase(h.config, h.logger);
    await db.db.transaction().execute(async (trx) => {
      const sums: number[] = [];
      for (const n of [1, 2, 3]) sums.push((await prepared(sql<{ x: number }>`SELECT ${n}::int + 1 AS x`).execute(trx)).rows[0]!.x);
      expect(sums).toEqual([2, 3, 4]);
      // An unmarked statement is not prepared.
      await sql`SELECT ${5}::int AS y`.execute(trx);
      const here = (await preparedHere.execute(trx)).rows;
      expect(here).toHaveLength(1);
      expect(here[0]!.name).toMatch(/^staysync_[0-9a-f]{24}$/);
      expect(here[0]!.statement).toContain('SELECT $1::int + 1 AS x');
    });
  });

  it('runs marked statements past the cap of names unnamed, with the right results', async () => {
    h = await startHarness();
    await h.migrate();
    db = await openDatabase(h.config, h.logger);
    await db.db.transaction().execute(async (trx) => {
      const results: number[] = [];
      // 80 distinct texts: more than the 64 the module names.
      for (let i = 0; i < 80; i++) results.push((await prepared(sql<{ x: number }>`SELECT ${i}::int + ${sql.raw(String(i))} AS x`).execute(trx)).rows[0]!.x);
      expect(results).toEqual(Array.from({ length: 80 }, (_, i) => 2 * i));
      const here = (await preparedHere.execute(trx)).rows;
      // The module's names are shared by the process (earlier statements hold some of them).
      expect(here.length).toBeGreaterThan(0);
      expect(here.length).toBeLessThanOrEqual(64);
    });
  });
});
