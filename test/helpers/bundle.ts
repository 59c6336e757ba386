/**
 * The builds the tests make with the production build's bundler configuration
 * (rolldown.config.mjs): the production build's own entry point, bundled from tsc's output as
 * `npm run build` does, and the global setup's programs, bundled straight from their TypeScript.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildOptions } from 'rolldown';

/** `input` and every module it imports, packages included, as the one file `file`. */
export async function bundle(input: string, file: string): Promise<void> {
  const { build } = await import('rolldown');
  const config = ((await import(pathToFileURL(resolve('rolldown.config.mjs')).href)) as { default: BuildOptions }).default;
  await build({ ...config, input: resolve(input), output: { ...config.output, file: resolve(file) } });
}

/** `dist`/cli/main.js (tsc's output) replaced by its bundle, as `npm run build` does. */
export async function bundleEntryPoint(dist = 'dist'): Promise<void> {
  const entry = resolve(dist, 'cli', 'main.js');
  await bundle(entry, entry);
}
