/**
 * Scenario "forecast" (tools/bench/forecast.ts) end to end on a small hotel in a real
 * PostgreSQL: the history it loads reads back as what it sold, and the backtest prints its figures.
 */
import { describe, expect, it } from 'vitest';
import { forecastLines, runForecastBench } from '../../tools/bench/forecast.js';
import { testDatabaseUrl } from '../helpers/database.js';

describe('scenario forecast on a real PostgreSQL', () => {
  it('loads the history the simulation made, backtests and times forecast_at', async () => {
    const r = await runForecastBench({ databaseUrl: await testDatabaseUrl(), rooms: 40, evaluatedNights: 56 });
    expect(r.check).toMatchObject({ ok: true });
    expect(r.errors.map((e) => [e.lead, e.nights])).toEqual([
      [7, 56],
      [14, 56],
      [30, 56],
    ]);
    // A month ahead, the books alone are far short; the pickup forecast is not.
    const month = r.errors.find((e) => e.lead === 30)!;
    expect(month.rooms.otb).toBeGreaterThan(2 * month.rooms.pickup);
    expect(r.forecastRows).toBe(90);
    expect(r.forecastMs).toHaveLength(5);
    const { lines } = forecastLines(r);
    expect(lines.map((l) => l.label)).toContain('30 days ahead, revenue');
  });
});
