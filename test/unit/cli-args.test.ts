import { describe, expect, it } from 'vitest';
import { commands, commandUsage, parseArgs, usage, UsageError, type CommandName } from '../../src/cli/args.js';

describe('command-line arguments', () => {
  it('parses commands and options', () => {
    expect(parseArgs(['run'])).toMatchObject({ command: 'run', recovery: { mode: 'none' } });
    expect(parseArgs(['sync', '--once', '--recover'])).toMatchObject({ command: 'sync', once: true, recovery: { mode: 'auto' } });
    const at = parseArgs(['run', '--recover=2024-05-01T00:00:00Z', '--config', 'x.json']);
    expect(at.recovery).toEqual({ mode: 'at', from: new Date('2024-05-01T00:00:00Z') });
    expect(at.configPath).toBe('x.json');
    expect(parseArgs(['status', '--json'])).toMatchObject({ command: 'status', json: true });
    expect(parseArgs([])).toMatchObject({ command: 'help' });
    expect(parseArgs(['grant-reader', 'metabase'])).toMatchObject({ command: 'grant-reader', role: 'metabase', personalData: false });
    expect(parseArgs(['grant-reader', 'metabase', '--personal-data'])).toMatchObject({ role: 'metabase', personalData: true });
    expect(parseArgs(['--version'])).toMatchObject({ command: 'version' });
    expect(parseArgs(['-V'])).toMatchObject({ command: 'version' });
    expect(parseArgs(['run', '--version'])).toMatchObject({ command: 'version' });
    expect(parseArgs(['grant-reader', 'metabase']).properties).toBeUndefined();
    expect(parseArgs(['grant-reader', 'hotel_1024', '--properties', '1024, 7291,1024'])).toMatchObject({ role: 'hotel_1024', properties: ['1024', '7291'] });
    expect(parseArgs(['grant-reader', 'hotel_1024', '--properties=1024'])).toMatchObject({ properties: ['1024'] });
    expect(parseArgs(['grant-reader', 'group', '--all-properties'])).toMatchObject({ properties: null });
  });

  it('--property names the properties --recover recovers, before or after it', () => {
    expect(parseArgs(['run', '--recover', '--property', '1024']).recovery).toEqual({ mode: 'auto', propertyIds: ['1024'] });
    expect(parseArgs(['sync', '--property=1024', '--once', '--recover', '--property', '7291', '--property', '1024']).recovery).toEqual({
      mode: 'auto',
      propertyIds: ['1024', '7291'],
    });
    expect(parseArgs(['run', '--recover=2024-05-01T00:00:00Z', '--property', 'hotel-7']).recovery).toEqual({
      mode: 'at',
      from: new Date('2024-05-01T00:00:00Z'),
      propertyIds: ['hotel-7'],
    });
    expect(parseArgs(['run', '--recover']).recovery).toEqual({ mode: 'auto' });
    const refused = (argv: string[]) => {
      try {
        parseArgs(argv);
      } catch (err) {
        return err instanceof UsageError ? err.message : `not a usage error: ${String(err)}`;
      }
      return 'accepted';
    };
    expect(refused(['run', '--property', '1024'])).toBe('--property goes with --recover: it names the property to recover, e.g. --recover --property 1024');
    expect(refused(['run', '--recover', '--property'])).toBe('--property needs a property id, e.g. --recover --property 1024');
    expect(refused(['run', '--recover', '--property', "1024'--"])).toMatch(/^--property: "1024'--" is not a property id/);
    expect(refused(['run', '--recover', '--property', 'x'.repeat(65)])).toBe('--property: a property id has at most 64 characters, not 65');
    expect(refused(['run', '--recover', ...Array.from({ length: 101 }, (_, i) => `--property=${i}`)])).toBe('--property: at most 100 properties at once');
    expect(refused(['status', '--recover', '--property', '1024'])).toBe('--recover goes with run or sync --once');
  });

  it('rejects what it does not understand', () => {
    for (const argv of [
      ['sync'],
      ['migrate', '--recover'],
      ['run', '--recover=soon'],
      ['run', '--frob'],
      ['run', 'extra'],
      ['--config'],
      ['run', '--personal-data'],
      ['run', '--once'],
      ['grant-reader', 'metabase', '--json'],
      ['status', '--properties', '1024'],
      ['migrate', '--all-properties'],
      ['grant-reader', 'r', '--properties'],
      ['grant-reader', 'r', '--properties', ' '],
      ['grant-reader', 'r', '--properties', '1024,'],
      ['grant-reader', 'r', '--properties', "1024'--"],
      ['grant-reader', 'r', '--properties', 'x'.repeat(65)],
      ['grant-reader', 'r', '--properties', Array.from({ length: 1001 }, (_, i) => String(i)).join(',')],
      ['grant-reader', 'r', '--properties', '1024', '--all-properties'],
      ['grant-reader', 'r', '--all-properties', '--properties', '1024'],
      ['run', '--property', '1024'],
      ['migrate', '--property', '1024'],
    ]) {
      expect(() => parseArgs(argv), argv.join(' ')).toThrow(UsageError);
    }
  });

  /** One line a user may type for each command, with every option it takes (as its usage lists them). */
  const examples: Record<CommandName, string[][]> = {
    run: [['run'], ['run', '--recover'], ['run', '--recover=2024-05-01T00:00:00Z'], ['run', '--recover', '--property', '1024']],
    sync: [
      ['sync', '--once'],
      ['sync', '--once', '--recover'],
      ['sync', '--once', '--recover', '--property', '1024'],
    ],
    migrate: [['migrate']],
    status: [['status'], ['status', '--json']],
    rebuild: [['rebuild']],
    'quarantine retry': [['quarantine', 'retry']],
    'grant-reader': [
      ['grant-reader', 'metabase', '--personal-data'],
      ['grant-reader', 'metabase', '--properties', '1024'],
      ['grant-reader', 'metabase', '--all-properties'],
    ],
    'forget-guest': [
      ['forget-guest', '--email', 'a@example.com', '--dry-run'],
      ['forget-guest', '--phone', '+41 79 000 01 23'],
      ['forget-guest', '--person', '45'],
      ['forget-guest', '--booking', '500100/7'],
    ],
  };

  it('--help after any command gives that command, also with other words or mistakes on the line', () => {
    for (const name of Object.keys(commands) as CommandName[]) {
      const words = name.split(' ');
      expect(parseArgs([...words, '--help']), name).toMatchObject({ command: 'help', helpFor: name });
      expect(parseArgs(['-h', ...words]), name).toMatchObject({ command: 'help', helpFor: name });
      expect(parseArgs(['help', ...words]), name).toMatchObject({ command: 'help', helpFor: name });
      // A line that would be a usage error still gets its command's help.
      expect(parseArgs(['--config', 'x.json', ...words, '--frob', '--help']), name).toMatchObject({ command: 'help', helpFor: name });
    }
    expect(parseArgs(['quarantine', '--help'])).toMatchObject({ helpFor: 'quarantine retry' });
    expect(parseArgs(['--help'])).toMatchObject({ command: 'help' });
    expect(parseArgs(['--help']).helpFor).toBeUndefined();
    expect(parseArgs(['nope', '--help']).helpFor).toBeUndefined();
    expect(() => parseArgs(['help', 'nope'])).toThrow(UsageError);
    // The first of --help and --version decides.
    expect(parseArgs(['status', '--version', '--help'])).toMatchObject({ command: 'version' });
    expect(parseArgs(['status', '--help', '--version'])).toMatchObject({ command: 'help', helpFor: 'status' });
  });

  it("each command's usage names it, shows its options, and every example of it parses", () => {
    for (const [name, c] of Object.entries(commands) as [CommandName, (typeof commands)[CommandName]][]) {
      const text = commandUsage(name);
      expect(text.startsWith(`usage: staysync ${c.synopsis}\n`), name).toBe(true);
      for (const option of [...c.options, '--config <path>', '--help, -h']) expect(text, name).toContain(`  ${option}`);
      // No other command's own option is offered.
      const others = Object.values(commands).flatMap((o) => o.options.filter((x) => !(c.options as readonly string[]).includes(x)));
      for (const option of others) expect(text, `${name} offers ${option}`).not.toContain(`  ${option} `);
      expect(usage, name).toContain(`  ${c.synopsis.split('\n')[0]}`);
      const parsed = examples[name].map((argv) => parseArgs(argv).command);
      expect(new Set(parsed), name).toEqual(new Set([name === 'quarantine retry' ? 'quarantine-retry' : name]));
      // Each option the usage lists is used by some example of the command.
      for (const option of c.options) {
        const flag = option.split(/[ [=]/)[0]!;
        expect(
          examples[name].some((argv) => argv.some((a) => a === flag || a.startsWith(`${flag}=`))),
          `${name}: an example with ${flag}`,
        ).toBe(true);
      }
    }
  });
});
