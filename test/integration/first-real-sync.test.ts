/**
 * docs/first-real-sync.md promises SQL that runs as the login of `staysync grant-reader` (the
 * default reader: no personal data, every property). Every ```sql block of the page runs here,
 * as such a login, on a mirror synced from the simulator; the schema names are the test's own.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { readableSchemaOf } from '../../src/config/schema-names.js';
import { daemonEnv, runCli } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { closeWithRoles, connectAs } from '../helpers/readers.js';

let h: Harness | undefined;
const roles: string[] = [];
afterEach(async () => {
  await closeWithRoles(h, roles);
  h = undefined;
});

const page = readFileSync(new URL('../../docs/first-real-sync.md', import.meta.url), 'utf8');
const blocks = [...page.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);

describe('docs/first-real-sync.md', () => {
  it('has SQL that runs as the default reader', async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 300 }] } });
    await syncOnce(await h.context());
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const granted = await runCli(['grant-reader', role], { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'first-sync-doc' });
    expect(granted.code, granted.stderr).toBe(0);

    const reporting = reportingSchemaOf(h.schema);
    const readable = readableSchemaOf(h.schema);
    const reader = await connectAs(h.dbUrl, role, 'first-sync-doc');
    try {
      const results: Record<string, unknown>[][] = [];
      for (const block of blocks) {
        const sql = block.replaceAll('reporting.', `"${reporting}".`).replaceAll('staysync_readable.', `"${readable}".`);
        results.push((await reader.query(sql)).rows);
      }
      // The completeness check: the sync above ended, so the property is complete.
      const completeness = results.find((rows) => rows[0] && 'phase' in rows[0])!;
      expect(completeness).toEqual([expect.objectContaining({ property_id: '500100', complete: true })]);
      // On the books: the mirror's own count of the next 30 nights' rooms, read as the daemon's role.
      const onTheBooks = results.find((rows) => rows[0] && 'room_nights_now' in rows[0]) ?? [];
      const [expected] = await h.sql<{ n: string }>(
        `SELECT count(*) AS n FROM "${reporting}".room_nights r JOIN "${reporting}".property_clock c USING (property_id)
          WHERE NOT r.is_cancelled AND r.stay_date >= c.today AND r.stay_date < c.today + 30`,
      );
      expect(Number(expected!.n)).toBeGreaterThan(0);
      expect(onTheBooks.reduce((n, r) => n + Number(r.room_nights_now), 0)).toBe(Number(expected!.n));
    } finally {
      await reader.end();
    }
  }, 60_000);
});
