/**
 * No secret in the image, nor in git. The operator puts API connections (client secrets) and
 * passwords in the checkout, where the docs say to: `docker build` there must neither send them
 * to the builder (the build context, .dockerignore) nor copy them into a layer (COPY, ADD), and
 * git must leave them out (.gitignore). Checked without a Docker engine:
 * test/helpers/build-context.ts applies Docker's rules. The secrets are planted in a copy of
 * the checkout, never in the checkout itself (other tests read its config/deploy/).
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContextFiles, contextCopies, dockerignorePatterns, filesUnder, IgnoreRules, takenBy } from '../helpers/build-context.js';
import { imageLayout } from '../helpers/docs-commands.js';

const root = resolve('.');

/** Where the docs have the operator put secrets in a checkout, each with the page that says so. */
const PLANTED: Record<string, string> = {
  'config/deploy/connections/hotel-a.json': 'config/deploy/compose.yaml: one file per API connection, with its client secret',
  'config/deploy/.env': 'config/deploy/compose.yaml: STAYSYNC_PG_PASSWORD and STAYSYNC_WEBHOOK_API_KEY in a .env beside it',
  '.env': 'a .env where `docker compose` is run from, the repository root',
  '.env.production': 'a .env of another name',
  'secrets/client_secret': 'README.md, docs/operations.md: the client secret the container example mounts from $PWD/secrets',
  'connections/hotel-a.json': 'docs/configuration.md: the connections directory the container example mounts from $PWD/connections',
  'data/postgres.credentials': "docs/operations.md: the local server's superuser password, under ./data",
};

/**
 * A .env inside a folder the build copies whole: COPY would take it, so the context must not
 * send it.
 */
const PLANTED_IN_SOURCES = ['src/.env'];

/** Files of the deployment beside those secrets that git keeps. */
const KEPT = ['config/deploy/connections/example-hotel.example.json', 'config/deploy/compose.yaml', 'config/default.json'];

/** A path that is a secret of the deployment whatever its name: compose's folder, any .env. */
const secretPlace = (path: string) => path.startsWith('config/deploy/') || /^\.env(\..*)?$/.test(posix.basename(path));

const tmp = mkdtempSync(join(tmpdir(), 'staysync-build-context-'));
/** A copy of the checkout (without what the builds and installs make) with the secrets planted. */
const checkout = join(tmp, 'checkout');
beforeAll(() => {
  const made = /^(node_modules|\.git|dist|dist-tools|data|coverage)(\/|$)/;
  cpSync(root, checkout, { recursive: true, filter: (from) => !made.test(relative(root, from)) });
  for (const path of [...Object.keys(PLANTED), ...PLANTED_IN_SOURCES]) {
    mkdirSync(dirname(join(checkout, path)), { recursive: true });
    writeFileSync(join(checkout, path), path.endsWith('.json') ? '{ "clientId": "planted", "clientSecret": "planted-secret" }\n' : 'PLANTED=secret\n');
  }
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const ignoredBy = (lines: string[]) => {
  const rules = new IgnoreRules(dockerignorePatterns(lines.join('\n')));
  return (path: string) => rules.ignored(path);
};

describe('the build context', () => {
  it("reads .dockerignore by Docker's rules: filepath.Match with **, paths from the root, folders with their content, ! exceptions, the last match deciding", () => {
    // The examples of Docker's documentation of .dockerignore.
    const oneDown = ignoredBy(['# comment', '*/temp*']);
    expect(['somedir/temporary.txt', 'somedir/temp', 'somedir/temp/x'].filter(oneDown)).toHaveLength(3);
    expect(['temp.txt', 'a/b/temp', '# comment'].filter(oneDown)).toEqual([]);
    expect(ignoredBy(['*/*/temp*'])('a/b/temporary')).toBe(true);
    const oneChar = ignoredBy(['temp?']);
    expect(['tempa', 'tempb/inside'].filter(oneChar)).toHaveLength(2);
    expect(['temp', 'tempab', 'x/tempa'].filter(oneChar)).toEqual([]);
    const anyDepth = ignoredBy(['**/*.go']);
    expect(['a.go', 'x/y/a.go'].filter(anyDepth)).toHaveLength(2);
    expect(anyDepth('a.gox')).toBe(false);
    const markdown = ignoredBy(['*.md', '!README*.md', 'README-secret.md']);
    expect(['README.md', 'README-secret.md', 'other.md'].filter((p) => !markdown(p))).toEqual(['README.md']);
    const lastWins = ignoredBy(['*.md', 'README-secret.md', '!README*.md']);
    expect(['README.md', 'README-secret.md', 'other.md'].filter((p) => !lastWins(p))).toEqual(['README.md', 'README-secret.md']);

    // Cleaned, and relative to the root whatever the leading / or ./; a class.
    const cleaned = ignoredBy(['/secrets', './data/', 'a//b/../c', 'file[0-9].txt']);
    expect(['secrets/x', 'data/pg/x', 'a/c', 'file7.txt'].filter(cleaned)).toHaveLength(4);
    expect(['x/secrets', 'a/b', 'filex.txt', 'literal'].filter(cleaned)).toEqual([]);

    // An allow-list: a folder let back whole, one file of another, a file left out inside either.
    const allow = new IgnoreRules(dockerignorePatterns(['*', '!src', '!config/default.json', '**/.env'].join('\n')));
    expect(['src/a/b.ts', 'config/default.json'].filter((p) => allow.ignored(p))).toEqual([]);
    expect(['config/deploy/x.json', 'config', 'tools/a.ts', '.env', 'src/.env', 'src/a/.env'].every((p) => allow.ignored(p))).toBe(true);
    expect(allow.ignored('src/a/x.env')).toBe(false);
    // Left-out folders are entered only where an exception may let something back.
    expect(allow.mayLetBackBelow('config')).toBe(true);
    expect(allow.mayLetBackBelow('config/deploy')).toBe(false);
    expect(allow.mayLetBackBelow('node_modules')).toBe(false);
  });

  it('leaves out the secrets planted where the docs put them, and holds what the Dockerfile copies', () => {
    const context = buildContextFiles(checkout);
    expect(context.filter((p) => p in PLANTED || PLANTED_IN_SOURCES.includes(p) || secretPlace(p))).toEqual([]);
    // Not the tools, the tests, or the dashboard (see the Dockerfile) either.
    expect(context.filter((p) => /^(tools|test|config\/grafana)\//.test(p))).toEqual([]);
    // What the build takes is there: each source of the Dockerfile's COPY.
    const copies = contextCopies(readFileSync(join(checkout, 'Dockerfile'), 'utf8'));
    expect(copies.length).toBeGreaterThan(3);
    for (const copy of copies) {
      for (const source of copy.sources) expect(takenBy(source, context).length, `${copy.instruction}: ${source} in the context`).toBeGreaterThan(0);
    }
    expect(context).toEqual(expect.arrayContaining(['package.json', 'config/default.json', 'src/cli/main.ts', 'migrations/reporting/views.sql']));

    // The checkout itself, as it is: the same holds.
    const real = buildContextFiles(root);
    expect(real.filter(secretPlace)).toEqual([]);
    expect(real).toEqual(expect.arrayContaining(['package.json', 'config/default.json', 'src/cli/main.ts']));
  });

  it('no COPY or ADD of any stage takes a secret planted where the docs put it, or config/deploy/, even from a context that sent them', () => {
    const everything = filesUnder(checkout);
    expect(everything).toEqual(expect.arrayContaining(Object.keys(PLANTED)));
    for (const copy of contextCopies(readFileSync(join(checkout, 'Dockerfile'), 'utf8'))) {
      const taken = copy.sources.flatMap((s) => takenBy(s, everything));
      expect(
        taken.filter((p) => p in PLANTED || p.startsWith('config/deploy/')),
        `${copy.instruction} (stage ${copy.stage})`,
      ).toEqual([]);
    }
  });

  it('the image takes only what it runs: the bundle and its packages from the build stage, package.json, config/default.json, migrations/', () => {
    const layout = imageLayout();
    expect(layout.copies.map((c) => c.source).sort()).toEqual(['config/default.json', 'dist', 'migrations', 'node_modules', 'package.json']);
    // From the context, in the image's stage: the same three.
    const copies = contextCopies(readFileSync('Dockerfile', 'utf8'));
    const imageStage = copies.at(-1)!.stage;
    expect(copies.filter((c) => c.stage === imageStage).flatMap((c) => c.sources)).toEqual(['package.json', 'config/default.json', 'migrations']);
  });
});

describe('git', () => {
  it('leaves out the secrets where the docs put them, and keeps the example connection', () => {
    // git's own answer, per path: the pattern that decides (an exception starts with !), or none.
    const verdicts = execFileSync(
      'git',
      ['check-ignore', '--no-index', '--verbose', '--non-matching', ...Object.keys(PLANTED), ...PLANTED_IN_SOURCES, ...KEPT],
      {
        encoding: 'utf8',
      },
    );
    const ignored = new Set(
      verdicts
        .trim()
        .split('\n')
        .map((line) => line.split('\t'))
        .filter(([source]) => !source!.endsWith('::') && !/:\d+:!/.test(source!))
        .map(([, path]) => path),
    );
    expect([...Object.keys(PLANTED), ...PLANTED_IN_SOURCES].filter((p) => !ignored.has(p))).toEqual([]);
    expect(KEPT.filter((p) => ignored.has(p))).toEqual([]);
  });
});
