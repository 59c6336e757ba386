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
    // Two cores, three files at a time: most integration tests wait (on a simulator's windows,
    // a timeout, a child process), and a third file fills that time (the suite took 285 s with
    // two, 239 s with three, every test passing).
    maxWorkers: 3,
    // In CI a JSON report too, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
