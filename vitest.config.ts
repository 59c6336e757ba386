import { defineConfig } from 'vitest/config';
import { LongestFirstSequencer } from './test/helpers/long-first-sequencer.js';

/**
 * Integration tests sync thousands of bookings through restarts and lease changes on two
 * shared cores: alone they take about 40 s, and beside other files on a slow hour of this
 * machine over a minute. A test that hangs still fails, later.
 */
const timeouts = { testTimeout: 180_000, hookTimeout: 120_000 };

export default defineConfig({
  test: {
    // Once for the whole run (the projects below do not extend this file, or it would run once
    // per project): builds, chooses the server, migrates the mirror's template.
    globalSetup: ['test/global-setup.ts'],
    // The longest integration files start first (helpers/long-first-sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    projects: [
      // The pure tests share their workers' modules (none mocks a module, changes a global or
      // the environment): src/ is loaded once per worker instead of once per file.
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts', 'tools/**/test/*.test.ts'], isolate: false, ...timeouts } },
      // The integration files share their modules too. Module state of src/ is keyed by the
      // objects a test creates (contexts, engines) or shared on purpose (the scheduler's cron
      // jobs, the in-process local servers); the per-file hooks are in the setup file.
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/conformance/**/*.test.ts'],
          isolate: false,
          setupFiles: ['test/helpers/file-setup.ts'],
          ...timeouts,
        },
      },
    ],
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
