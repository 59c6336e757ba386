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
    // Two cores, two files at a time: three finished sooner (239 s against 285 s), but the tests
    // that time /healthz under an attack then measured the machine's load rather than the daemon
    // (one answer took 104 ms, on a test that allows 100).
    maxWorkers: 2,
    // In CI a JSON report too, from which .ci/run prints the plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
