import { describe, expect, it } from 'vitest';
import { parseArgs, UsageError } from '../../src/cli/args.js';

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

  it('rejects what it does not understand', () => {
    for (const argv of [
      ['sync'],
      ['migrate', '--recover'],
      ['run', '--recover=soon'],
      ['run', '--frob'],
      ['run', 'extra'],
      ['--config'],
      ['run', '--personal-data'],
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
    ]) {
      expect(() => parseArgs(argv), argv.join(' ')).toThrow(UsageError);
    }
  });
});
