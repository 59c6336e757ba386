/**
 * Every command the docs tell a user to type (fenced `sh` blocks of README.md and docs/*.md)
 * is one that works as written: each staysync command and option exists (the CLI's own
 * parser), each variable is one the daemon reads, each npm script exists, and each container
 * command (docker, docker compose, kubectl) names paths the image has or the command mounts.
 * A program this test does not know fails it: a new kind of command is checked or classed
 * here, with a reason. test/integration/docs-commands.test.ts runs those that can run here.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseArgs } from '../../src/cli/args.js';
import { loadConfig } from '../../src/config/config.js';
import { environmentVariableNames } from '../../src/config/environment.js';
import {
  afterOptions,
  blockCommands,
  checkoutPathOf,
  commandInImage,
  DOCKER_EXEC_BOOLEAN_FLAGS,
  DOCKER_EXEC_VALUE_FLAGS,
  fencedBlocks,
  imageLayout,
  shellBlocks,
  shellWords,
  staysyncLine,
  where,
  type DocsCommand,
} from '../helpers/docs-commands.js';

const { blocks, unlabelled } = shellBlocks();
const docsCommands = blocks.flatMap(blockCommands);
const layout = imageLayout();
const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;

/**
 * Programs the docs use that no test here runs or parses further, and why. Their variables
 * (`PGPASSWORD=…`) are still checked.
 */
const notChecked: Record<string, string> = {
  psql: "reads a mirror with data in it (the demo's or a production one); the reporting tests run the SQL",
  pg_dump: 'backs up a production mirror: test/integration/backup.test.ts runs the backup and the restore',
  pg_dumpall: "needs a production server's superuser: test/integration/backup.test.ts covers the roles",
  pg_restore: 'restores into a production server: test/integration/backup.test.ts runs it',
  createdb: 'creates a database on a production server (the restore above)',
  curl: "asks a running daemon's ops or webhook port: test/integration/cli.test.ts and the webhook tests ask them",
  openssl: 'makes a random key (e.g. for STAYSYNC_PSEUDONYM_KEY): nothing of staysync',
  mkdir: 'shell housekeeping: a folder for the files the next commands use',
  printf: 'shell housekeeping: writes a file (a secret) the next commands use',
  chmod: 'shell housekeeping: the mode of a file the next commands use',
};

/** Each npm script the docs name: why the integration test does not run it (none is cheap and harmless beside other test files). */
const npmScripts: Record<string, string> = {
  install: 'installs the dependencies: this checkout has them already',
  ci: 'installs the dependencies: this checkout has them already',
  build: 'the global setup built dist/ just now; building again while other test files run the CLI would race with them',
  'build:tools': 'as build, and dist-tools/',
  start: 'the daemon against a provider, until stopped: test/integration/cli.test.ts runs `run`',
  test: 'the whole suite, of which this test is part',
  'test:unit': 'the unit tests, of which this test is one',
  lint: 'npm test runs it',
  typecheck: 'npm test runs it',
  format: 'rewrites files in place',
  demo: 'a daemon that runs until Ctrl-C: test/integration/demo.test.ts runs it with --exit',
  bench: 'minutes to an hour of load on the shared cores',
  simulator: 'a server that runs until stopped: tools/simulator/test/simulator-recipe.test.ts runs the recipe',
  'docs:environment': 'rebuilds dist/; test/unit/environment.test.ts checks that its output is the page',
  'upgrade-fixture': 'builds an earlier release in a worktree: minutes',
};

/** Variables of other programs that the docs set (everything else must be in src/config/environment.ts). */
const otherVariables = new Set(['PGPASSWORD', 'NODE_OPTIONS', 'TZ']);

/** A variable a command sets is one the daemon reads (or another program's, listed above). */
function expectKnownVariable(name: string, c: DocsCommand): void {
  if (otherVariables.has(name)) return;
  expect(environmentVariableNames, `${where(c)}: ${name} is not read by staysync (src/config/environment.ts)`).toContain(name);
}

/** The staysync arguments parse, as the CLI parses them. */
function expectStaysyncArgs(args: string[], c: DocsCommand): void {
  expect(() => parseArgs(args), where(c)).not.toThrow();
}

/** Every container name `docker run --name` gives in the docs (others may `docker exec` into it). */
const containerNames = new Set(
  docsCommands
    .filter((c) => c.words[0] === 'docker' && c.words[1] === 'run')
    .flatMap((c) => c.words.flatMap((w, i) => (c.words[i - 1] === '--name' ? [w] : []))),
);
/** Every image tag `docker build -t` gives in the docs. */
const imageTags = new Set(
  docsCommands.filter((c) => c.words[0] === 'docker' && c.words[1] === 'build').flatMap((c) => c.words.flatMap((w, i) => (c.words[i - 1] === '-t' ? [w] : []))),
);

/** The Deployments of the Kubernetes manifests (config/deploy/kubernetes/). */
const deployments = readdirSync('config/deploy/kubernetes')
  .filter((f) => /\.ya?ml$/.test(f))
  .flatMap((f) =>
    parseAllDocuments(readFileSync(join('config/deploy/kubernetes', f), 'utf8')).map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } }),
  )
  .filter((d) => d?.kind === 'Deployment')
  .map((d) => d.metadata?.name);

const tmp = mkdtempSync(join(tmpdir(), 'staysync-docs-commands-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const RUN_VALUE_FLAGS = new Set([
  '-e',
  '--env',
  '-v',
  '--volume',
  '-p',
  '--publish',
  '--name',
  '--network',
  '--env-file',
  '-u',
  '--user',
  '--restart',
  '-w',
  '--workdir',
  '--memory',
  '--cpus',
  '--mount',
]);
const RUN_BOOLEAN_FLAGS = new Set(['-d', '--detach', '--rm', '-i', '-t', '-it', '--init', '--read-only']);

/**
 * `docker run`: the image is one the docs build, each variable one the daemon reads, each
 * path inside the container one the image has or the command mounts (a secret's file always
 * mounted), and the daemon loads the configuration it is given, with the credentials of a
 * connection. Its arguments after the image are staysync's.
 */
function checkDockerRun(c: DocsCommand): void {
  const words = c.words.slice(2);
  const env: Record<string, string> = {};
  const mounts: { source: string; target: string }[] = [];
  let i = 0;
  for (; i < words.length && words[i]!.startsWith('-'); i++) {
    const w = words[i]!;
    const name = w.includes('=') && w.startsWith('--') ? w.slice(0, w.indexOf('=')) : w;
    if (RUN_BOOLEAN_FLAGS.has(w)) continue;
    expect(RUN_VALUE_FLAGS.has(name), `${where(c)}: docker run option ${w} is unknown to this test`).toBe(true);
    const value = name === w ? words[++i]! : w.slice(name.length + 1);
    if (name === '-e' || name === '--env') {
      const [k, ...v] = value.split('=');
      expectKnownVariable(k!, c);
      env[k!] = v.join('=');
    } else if (name === '-v' || name === '--volume') {
      const [source, target] = value.split(':');
      expect(target?.startsWith('/'), `${where(c)}: -v ${value} mounts at an absolute path`).toBe(true);
      // A mount over the image's own files would hide the daemon.
      expect(checkoutPathOf(layout, target!), `${where(c)}: -v ${value} hides the image's ${target}`).toBeUndefined();
      mounts.push({ source: source!, target: target! });
    }
  }
  const [image, ...args] = words.slice(i);
  expect(imageTags, `${where(c)}: the image ${image} is one the docs build (docker build -t)`).toContain(image);
  expectStaysyncArgs(args, c);

  const mounted = (path: string) => mounts.some((m) => path === m.target || path.startsWith(`${m.target}/`));
  const inImage = (path: string) => {
    const local = checkoutPathOf(layout, path);
    return local !== undefined && existsSync(local);
  };
  const configArg = args.flatMap((a, j) => (a === '--config' ? [args[j + 1]!] : a.startsWith('--config=') ? [a.slice('--config='.length)] : []));
  for (const [name, value] of [...Object.entries(env), ...configArg.map((v) => ['--config', v] as const)]) {
    if (!value.startsWith('/')) continue;
    if (name.endsWith('_FILE')) expect(mounted(value), `${where(c)}: ${name}=${value}: a secret's file that the command mounts (-v)`).toBe(true);
    else expect(mounted(value) || inImage(value), `${where(c)}: ${name} ${value}: neither in the image (Dockerfile) nor mounted`).toBe(true);
  }

  // The daemon's view: the mounted files stand for the user's (a secret, an empty config file).
  const local: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (name.endsWith('_FILE') || name === 'STAYSYNC_CONFIG') {
      local[name] = join(tmp, `${name}-${c.line}`);
      writeFileSync(local[name], name === 'STAYSYNC_CONFIG' ? '{}' : 'secret');
    } else if (name === 'STAYSYNC_CONNECTIONS_DIR') continue;
    else local[name] = value;
  }
  expect(env.DATABASE_URL, `${where(c)}: the image has no local server: DATABASE_URL`).toBeDefined();
  const config = loadConfig({ env: local });
  const credentials = env.STAYSYNC_CONNECTIONS_DIR !== undefined || (config.provider.clientId !== undefined && config.provider.clientSecret !== undefined);
  expect(credentials, `${where(c)}: a connection's credentials (STAYSYNC_CLIENT_ID and a secret, or STAYSYNC_CONNECTIONS_DIR)`).toBe(true);
}

/** `docker exec <container> staysync …`: a container the docs start, a command on the image's PATH. */
function checkDockerExec(c: DocsCommand): void {
  const [container, program] = afterOptions(c.words.slice(2), DOCKER_EXEC_VALUE_FLAGS, DOCKER_EXEC_BOOLEAN_FLAGS);
  expect(
    containerNames.has(container!) || /^<[^>]+>$/.test(container!),
    `${where(c)}: the container ${container} is one the docs start (docker run --name)`,
  ).toBe(true);
  expect(commandInImage(layout, program!), `${where(c)}: ${program} is not on the image's PATH (Dockerfile)`).toBeDefined();
}

/** `docker compose -f <file> …`: the file exists; `exec <service>` names one of its services. */
function checkCompose(c: DocsCommand): void {
  const f = c.words.indexOf('-f');
  const file = f >= 0 ? c.words[f + 1]! : 'compose.yaml';
  expect(existsSync(file), `${where(c)}: ${file}`).toBe(true);
  const exec = c.words.indexOf('exec');
  if (exec < 0) return;
  const services = Object.keys((parse(readFileSync(file, 'utf8')) as { services: Record<string, unknown> }).services);
  const [service] = afterOptions(c.words.slice(exec + 1), DOCKER_EXEC_VALUE_FLAGS, DOCKER_EXEC_BOOLEAN_FLAGS);
  expect(services, where(c)).toContain(service);
}

/** One command of the docs, checked by what its program is. */
function checkCommand(c: DocsCommand): void {
  for (const name of Object.keys(c.assignments)) expectKnownVariable(name, c);
  const line = staysyncLine(c);
  if (line) expectStaysyncArgs(line.args, c);
  const [program, sub] = c.words;
  switch (program) {
    case 'staysync':
    case 'npx':
      expect(line, `${where(c)}: npx runs staysync only in these docs`).toBeDefined();
      return;
    case 'export':
      for (const w of c.words.slice(1)) expectKnownVariable(w.split('=')[0]!, c);
      return;
    case 'npm': {
      const script = sub === 'run' ? c.words[2]! : sub!;
      if (sub === 'run' || sub === 'start' || sub === 'test') expect(Object.keys(scripts), where(c)).toContain(script);
      expect(npmScripts[script], `${where(c)}: npm ${script} is not classed in this test's list (with why it does not run)`).toBeDefined();
      return;
    }
    case 'docker':
      if (sub === 'build') {
        const context = c.words.at(-1)!;
        expect(existsSync(posix.join(context, 'Dockerfile')), `${where(c)}: a Dockerfile in ${context}`).toBe(true);
      } else if (sub === 'run') checkDockerRun(c);
      else if (sub === 'exec') checkDockerExec(c);
      else if (sub === 'compose') checkCompose(c);
      else if (['logs', 'stop', 'start', 'restart', 'inspect', 'rm', 'kill'].includes(sub!)) {
        const container = afterOptions(
          c.words.slice(2),
          new Set(['--since', '--tail', '-n', '--until', '-t', '--time', '-s', '--signal', '--format']),
          new Set(['-f', '--follow', '--timestamps']),
        )[0];
        expect(
          containerNames.has(container!) || /^<[^>]+>$/.test(container!),
          `${where(c)}: the container ${container} is one the docs start (docker run --name)`,
        ).toBe(true);
      } else expect.fail(`${where(c)}: docker ${sub} is not checked by this test: add it`);
      return;
    case 'kubectl': {
      const f = c.words.indexOf('-f');
      if (f >= 0) expect(existsSync(c.words[f + 1]!), where(c)).toBe(true);
      if (sub === 'exec') {
        // `kubectl exec deploy/<name> -- staysync …`: a Deployment of the manifest, a command on the image's PATH.
        const target = c.words.slice(2).find((w) => !w.startsWith('-'))!;
        const [kind, name] = target.includes('/') ? target.split('/') : ['pod', target];
        if (kind === 'deploy' || kind === 'deployment') expect(deployments, where(c)).toContain(name);
        const dashes = c.words.indexOf('--');
        expect(dashes, `${where(c)}: the command after --`).toBeGreaterThan(0);
        expect(commandInImage(layout, c.words[dashes + 1]!), `${where(c)}: ${c.words[dashes + 1]} is not on the image's PATH`).toBeDefined();
      }
      return;
    }
    default:
      expect(notChecked[program!], `${where(c)}: the program ${program} is neither checked nor classed in this test`).toBeDefined();
  }
}

describe('the commands of the docs', () => {
  it('are found: every block of commands says sh, and the ones the docs are known to hold are there', () => {
    expect(unlabelled.map((b) => `${b.file}:${b.line}`)).toEqual([]);
    const sources = docsCommands.map((c) => c.source);
    // The extraction works: a few commands that must be found, in their pages.
    expect(sources.some((s) => s.startsWith('docker exec staysync staysync status'))).toBe(true);
    expect(sources.some((s) => s.startsWith('staysync forget-guest --email ada@example.com --dry-run'))).toBe(true);
    expect(docsCommands.length).toBeGreaterThan(40);
  });

  it('each is a command this test checks, and passes its checks', () => {
    for (const c of docsCommands) checkCommand(c);
    // Each kind is there: a change that dropped one from the docs would be seen here first.
    expect(docsCommands.filter((c) => staysyncLine(c)?.via === 'container').length).toBeGreaterThan(0);
    expect(docsCommands.filter((c) => c.words[0] === 'docker' && c.words[1] === 'run').length).toBeGreaterThan(0);
  });

  it('use one command name: staysync, never node dist/cli/main.js', () => {
    for (const c of docsCommands) {
      expect(c.words.join(' '), where(c)).not.toMatch(/\bnode\s+(\S*\/)?dist\/cli\/main\.js/);
    }
  });

  it('the image: staysync on its PATH is the entry point, executable, and the ENTRYPOINT runs it', () => {
    const path = commandInImage(layout, 'staysync');
    expect(path, 'a link /usr/local/bin/staysync (or another PATH directory) in the Dockerfile').toBeDefined();
    expect(checkoutPathOf(layout, path!)).toBe('src/cli/main.ts');
    expect(readFileSync('src/cli/main.ts', 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    // A build may leave the file without its executable bit: the image sets it.
    expect(readFileSync('Dockerfile', 'utf8')).toMatch(/chmod\s+(0?755|\+x|a\+x)\s+\S*dist\/cli\/main\.js/);
    expect(
      layout.entrypoint[0] === 'staysync' || layout.entrypoint.some((w) => checkoutPathOf(layout, posix.resolve(layout.workdir, w)) === 'src/cli/main.ts'),
    ).toBe(true);
  });
});

describe('the checks themselves', () => {
  const one = (text: string): DocsCommand[] => fencedBlocks('example.md', `\`\`\`sh\n${text}\n\`\`\`\n`).flatMap(blockCommands);

  it('split lines as a shell does', () => {
    expect(shellWords(`a 'b c' "d \\"e\\" $(f g)" h\\ i # j`)).toEqual(['a', 'b c', 'd "e" $(f g)', 'h i']);
    const [first, second] = one('X=1 staysync status && docker exec c \\\n  staysync --help');
    expect(first).toMatchObject({ assignments: { X: '1' }, words: ['staysync', 'status'] });
    expect(second!.words).toEqual(['docker', 'exec', 'c', 'staysync', '--help']);
  });

  it('fail on what the issue found: an unmounted secret file, node dist/cli/main.js, an unknown option or variable', () => {
    const docker = (extra: string) => one(`docker run -d --name staysync -e DATABASE_URL=postgres://u@h/d -e STAYSYNC_CLIENT_ID=x ${extra} staysync`)[0]!;
    expect(() => checkCommand(docker('-e STAYSYNC_CLIENT_SECRET_FILE=/run/secrets/s'))).toThrow(/mounts/);
    expect(() => checkCommand(docker('-v "$PWD/s:/run/secrets/s:ro" -e STAYSYNC_CLIENT_SECRET_FILE=/run/secrets/s'))).not.toThrow();
    expect(() => checkCommand(docker(''))).toThrow(/credentials/);
    expect(() => checkCommand(docker('-v "$PWD/s:/app/dist:ro" -e STAYSYNC_CLIENT_SECRET=s'))).toThrow(/hides/);
    expect(() => checkCommand(docker('-e STAYSYNC_CLIENT_SECRET=s -e STAYSYNC_CONFIG=/etc/x.json'))).toThrow(/neither in the image/);
    expect(() => checkCommand(docker('-e STAYSYNC_CLIENT_SECRET=s -e STAYSYNC_CONFIG=/app/config/default.json'))).not.toThrow();
    expect(() => checkCommand(one('docker exec staysync node dist/cli/main.js status')[0]!)).toThrow(/PATH/);
    expect(() => checkCommand(one('docker exec staysync staysync status --frob')[0]!)).toThrow();
    expect(() => checkCommand(one('staysync grant-reader')[0]!)).toThrow();
    expect(() => checkCommand(one('export STAYSYNC_NO_SUCH=1')[0]!)).toThrow(/not read by staysync/);
    expect(() => checkCommand(one('npm run no-such-script')[0]!)).toThrow();
    expect(() => checkCommand(one('wget http://127.0.0.1:9464/metrics')[0]!)).toThrow(/neither checked nor classed/);
    expect(() => checkCommand(one('docker logs nobody')[0]!)).toThrow(/one the docs start/);
    expect(() => checkCommand(one('docker logs -f staysync')[0]!)).not.toThrow();
    expect(() => checkCommand(one('kubectl exec deploy/nobody -- staysync status')[0]!)).toThrow();
    expect(() => checkCommand(one('kubectl exec deploy/staysync -- node dist/cli/main.js status')[0]!)).toThrow(/PATH/);
    expect(() => checkCommand(one('docker compose -f config/deploy/compose.yaml exec nobody staysync status')[0]!)).toThrow();
  });
});
