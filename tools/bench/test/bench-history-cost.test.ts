/** The history-cost pairs of scenario B (tools/bench/history-cost.ts): ratios, their median and the verdict. */
import { describe, expect, it } from 'vitest';
import { historyCostLines } from '../history-cost.js';

describe('history on the write path', () => {
  it('gives each pair its ratio and judges the median against 0.9', () => {
    const lines = historyCostLines(20000, [
      { withHistory: 90, withoutHistory: 100 },
      { withHistory: 240, withoutHistory: 300 },
      { withHistory: 300, withoutHistory: 250 },
    ]);
    expect(lines.map((l) => l.value)).toEqual(['0.90', '0.80', '1.20', '0.90']);
    expect(lines[3]!.verdict).toBe('PASS');
    expect(lines[3]!.detail).toContain('median of 3 pairs');
  });

  it('misses when the median is below 0.9, and has no verdict without a pair', () => {
    const lines = historyCostLines(2000, [
      { withHistory: 80, withoutHistory: 100 },
      { withHistory: 88, withoutHistory: 100 },
    ]);
    expect(lines.at(-1)!.value).toBe('0.84');
    expect(lines.at(-1)!.verdict).toBe('MISS');
    expect(historyCostLines(2000, [])).toEqual([]);
  });
});
