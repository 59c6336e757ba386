/**
 * The staysync commands of the docs (fenced `sh` blocks of README.md and docs/*.md), run as
 * written against a fresh schema of the test database: `npx staysync …` through npx in this
 * checkout, `staysync …` and the command inside `docker exec <container> staysync …` through a
 * `staysync` link on the PATH to dist/cli/main.js, as the image has it (no container engine
 * here: the link and its shebang are what the image adds). The commands that cannot run here
 * are listed with the reason in STAYSYNC_NOT_RUN (test/helpers/docs-commands.ts); the static
 * checks of every command are test/unit/docs-commands.test.ts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseArgs, type Args } from '../../src/cli/args.js';
import { blockCommands, shellBlocks, staysyncLine, STAYSYNC_NOT_RUN, where } from '../helpers/docs-commands.js';
import { dropSchema, reportingSchemaOf, testDatabaseUrl, uniqueSchema } from '../helpers/database.js';

/** The exit status a command ends with here, when it is not 0, and why. */
const expectedExit: Partial<Record<Args['command'], { code: number; why: string }>> = {
  'forget-guest': { code: 4, why: 'the fresh mirror holds nobody: the guest is looked up and not found' },
};

const bin = mkdtempSync(join(tmpdir(), 'staysync-bin-'));
const schema = uniqueSchema('docs');
let env: Record<string, string>;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(program: string, args: string[]): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(program, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', fail);
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  // The image's /usr/local/bin/staysync: a link to the entry point, found through the PATH;
  // its `#!/usr/bin/env node` finds the project's Node.js 24 in node_modules/.bin.
  symlinkSync(resolve('dist/cli/main.js'), join(bin, 'staysync'));
  // Only what npx and the CLI need, and the test database: no STAYSYNC_ variable of the caller.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k, v]) => v !== undefined && !k.startsWith('STAYSYNC_') && k !== 'DATABASE_URL'),
  ) as Record<string, string>;
  env = {
    ...inherited,
    PATH: [bin, resolve('node_modules/.bin'), process.env.PATH ?? ''].join(delimiter),
    DATABASE_URL: await testDatabaseUrl(),
    STAYSYNC_DB_SCHEMA: schema,
    STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(schema),
    STAYSYNC_LOG_LEVEL: 'warn',
    STAYSYNC_LOG_FORMAT: 'json',
  };
  // `staysync migrate` (the docs show it too): the schema the other commands need.
  const migrated = await run('staysync', ['migrate']);
  if (migrated.code !== 0) throw new Error(`staysync migrate through the PATH link exited ${migrated.code}: ${migrated.stdout}${migrated.stderr}`);
});

afterAll(async () => {
  await dropSchema(await testDatabaseUrl(), schema);
  rmSync(bin, { recursive: true, force: true });
});

describe('the staysync commands of the docs', () => {
  it('run as written: each ends as expected, or is listed with the reason it does not run here', async () => {
    const { blocks } = shellBlocks();
    const lines = blocks.flatMap(blockCommands).flatMap((c) => {
      const line = staysyncLine(c);
      return line ? [{ c, ...line, command: parseArgs(line.args).command }] : [];
    });
    const ran: string[] = [];
    // One at a time: the schema's start-up lock is taken by several of them.
    for (const { c, via, args, command } of lines) {
      if (STAYSYNC_NOT_RUN[command] !== undefined) continue;
      const result = via === 'npx' ? await run('npx', ['staysync', ...args]) : await run('staysync', args);
      const expected = expectedExit[command]?.code ?? 0;
      expect(result.code, `${where(c)}\n${result.stdout}${result.stderr}`).toBe(expected);
      if (command === 'help' || command === 'version') expect(result.stdout, where(c)).toMatch(/^(usage: staysync|staysync \d)/);
      ran.push(`${via}:${command}`);
    }
    // What the docs show today runs: npx in a checkout, staysync on the PATH, and inside the container.
    expect(ran).toEqual(expect.arrayContaining(['npx:help', 'npx:version', 'npx:status', 'container:status', 'path:forget-guest']));
  });
});
