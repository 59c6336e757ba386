/**
 * The entry point bundled as `npm run build` does it (rolldown.config.mjs), for the builds the
 * tests make: the global setup's dist/, and the production build's copy in a folder of its own.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BuildOptions } from 'rolldown';

/** `dist`/cli/main.js (tsc's output) replaced by its bundle, with the configuration of the build. */
export async function bundleEntryPoint(dist = 'dist'): Promise<void> {
  const { build } = await import('rolldown');
  const config = ((await import(pathToFileURL(resolve('rolldown.config.mjs')).href)) as { default: BuildOptions }).default;
  const entry = resolve(dist, 'cli', 'main.js');
  await build({ ...config, input: entry, output: { ...config.output, file: entry } });
}
