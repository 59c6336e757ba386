import { defineConfig } from 'vitest/config';

/**
 * `npm run test:unit`: the tests that need neither a database, nor a build, nor a child
 * process — seconds, for every change. `npm test` runs them too, with everything else.
 */
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'tools/bench/test/*.test.ts'],
  },
});
