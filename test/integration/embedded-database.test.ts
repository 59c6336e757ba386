/**
 * Without DATABASE_URL the daemon uses embedded PGlite under a data directory: the same
 * migrations, repositories and engine, on a machine with no PostgreSQL server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createLogger } from '../../src/log.js';
import { ProviderClient } from '../../src/provider/client.js';
import { createSyncContext } from '../../src/sync/context.js';
import { startSimulator } from '../../src/simulator/index.js';
import { fastRateLimits, syncOnce } from '../helpers/harness.js';

describe('embedded database (PGlite)', () => {
  it('migrates, syncs and keeps the data across reopening', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'staysync-pglite-'));
    const sim = await startSimulator({ properties: [{ id: '500100', bookingCount: 40 }], rateLimits: fastRateLimits });
    try {
      const config = loadConfig({
        env: {},
        overrides: {
          database: { dataDir },
          provider: { url: sim.url, referenceDataUrl: sim.url, clientId: 'sim-client', clientSecret: 'sim-secret' },
          propertyIds: ['500100'],
          rateLimits: fastRateLimits,
          log: { level: 'warn' },
        },
      });
      const logger = createLogger('warn');
      const first = await openDatabase(config, logger);
      expect(first.kind).toBe('pglite');
      const never = new AbortController().signal;
      await first.lease.acquire(never, { wait: false });
      expect(await first.migrate()).toEqual(['0001_bookings', '0002_content', '0003_reliability', '0004_pms', '0005_fidelity']);
      await first.lease.startFencing();
      const client = new ProviderClient({ config, logger });
      const result = await syncOnce(createSyncContext({ config, handle: first, client, logger }), { streams: 'all' });
      expect(result).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
      await client.close();
      await first.close();

      const again = await openDatabase(config, logger);
      expect(await again.migrate()).toEqual([]);
      const rows = await again.db.selectFrom('bookings').select(['number', 'price_after_tax', 'arrival_at']).orderBy('number').execute();
      const expected = sim.bookings('500100').sort((a, b) => a.number.localeCompare(b.number));
      expect(rows.map((r) => r.number)).toEqual(expected.map((b) => b.number));
      // Exact numeric text and property-local times, as with pg.
      expect(Number(rows[0]!.price_after_tax)).toBe(expected[0]!.total.priceAfterTax);
      expect(String(rows[0]!.arrival_at).replace(' ', 'T').slice(0, 16)).toBe(expected[0]!.roomStays[0]!.stayDates.arrivalDateTime.slice(0, 16));
      await again.close();
    } finally {
      await sim.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
