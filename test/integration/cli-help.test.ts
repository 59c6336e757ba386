/**
 * `--help` of every command and `--version`, through the real entry point (dist/cli/main.js,
 * what `staysync` runs in the image and `npx staysync` in a checkout): each answers without a
 * database or a valid configuration, exit 0, on stdout.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { commands, type CommandName } from '../../src/cli/args.js';
import { runCli } from '../helpers/cli.js';

/** A configuration that cannot load: help and version must not need one. */
const broken = { STAYSYNC_OPS_PORT: 'not-a-port', DATABASE_URL: 'mysql://nope' };

describe('staysync --help and --version', () => {
  it('every command prints its own usage with --help, and `help <command>` does the same', async () => {
    const names = Object.keys(commands) as CommandName[];
    const runs = await Promise.all(names.map((name) => runCli([...name.split(' '), '--help'], broken)));
    const viaHelp = await Promise.all(names.map((name) => runCli(['help', ...name.split(' ')], broken)));
    for (const [i, name] of names.entries()) {
      for (const run of [runs[i]!, viaHelp[i]!]) {
        expect(run.code, `${name} --help: ${run.stderr}`).toBe(0);
        expect(run.stdout.startsWith(`usage: staysync ${commands[name].synopsis}\n`), `${name}:\n${run.stdout}`).toBe(true);
        // Its own usage, not the list of every command.
        expect(run.stdout, name).not.toContain('\ncommands:\n');
        expect(run.stderr, name).toBe('');
      }
    }
  });

  it('--help alone prints every command; a mistyped command gets its own usage and exit 2', async () => {
    const all = await runCli(['--help'], broken);
    expect(all.code).toBe(0);
    for (const c of Object.values(commands)) expect(all.stdout).toContain(`  ${c.synopsis.split('\n')[0]}`);
    const wrong = await runCli(['grant-reader', 'metabase', '--frob'], broken);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('unknown option --frob');
    expect(wrong.stderr).toContain(`usage: staysync ${commands['grant-reader'].synopsis}\n`);
  });

  it('--version prints the release of package.json', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const run = await runCli([flag], broken);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^staysync ${version.replace(/\./g, '\\.')} \\(migrations up to \\d{4}_\\w+, mapping version \\d+\\)\n$`));
    }
  });
});
