import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'tools/**/test/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Integration tests sync thousands of bookings through restarts and lease changes on two
    // shared cores: alone they take about 40 s, and beside another file on a slow hour of this
    // machine over a minute. A test that hangs still fails, later.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Four files at a time on two cores: most files wait (for a daemon, a timeout, a restart)
    // as much as they compute, and two workers left 22 % of the CPU idle. The same tree took
    // 521 s with two and 443 s with four. The tests that time a daemon's answers allow for a
    // machine this busy (they passed in every run with four).
    maxWorkers: 4,
    // In CI a JSON report too, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
