/**
 * The log for a person at a terminal: pino's records as short lines, the progress rewritten in
 * place below them; and the JSON as it was everywhere else.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/util/log.js';
import { progressLine, recordLine, TerminalLog } from '../../src/util/terminal-log.js';

const CLEAR_LINE = '\r\x1b[K';

function terminal(): { log: ReturnType<typeof createLogger>; output: () => string } {
  const out = new PassThrough();
  let text = '';
  out.on('data', (d: Buffer) => (text += d.toString()));
  const log = createLogger('info', new TerminalLog(Object.assign(out, { columns: 100 }), false));
  return { log, output: () => text };
}

describe('the log at a terminal', () => {
  it('writes one short line per record: time, level, where, message, the other fields', () => {
    const line = recordLine(
      {
        level: 'warn',
        time: '2026-11-25T12:04:31.123Z',
        service: 'staysync',
        connection: 'default',
        component: 'details',
        propertyId: '500100',
        reason: 'body too large: more than 8388608 bytes',
        msg: 'booking details too large: quarantined',
      },
      false,
    );
    expect(line).toBe(
      '12:04:31  WARN   default/details  booking details too large: quarantined  propertyId=500100 reason="body too large: more than 8388608 bytes"',
    );
  });

  it('shows the progress as one line rewritten in place, and the other lines above it', async () => {
    const { log, output } = terminal();
    const progress = {
      properties: [
        { propertyId: '500100', position: '2024-05-01T00:00:00.000Z', caughtUp: false, rows: 5, state: 'active' },
        { propertyId: '500200', position: null, caughtUp: true, rows: 9, state: 'active' },
      ],
      detailsPerSecond: 12.5,
      queue: 40,
      queueEta: '4s',
      quarantined: 0,
    };
    log.child({ component: 'progress' }).info(progress, 'progress');
    log.info('sync started');
    log.child({ component: 'progress' }).info({ ...progress, queue: 3 }, 'progress');
    await new Promise((r) => setImmediate(r));
    const text = output();
    const first = `1/2 properties caught up, 500100 at 2024-05-01 · details 12.5/s · queue 40 (about 4s)`;
    expect(text.startsWith(`${CLEAR_LINE}${first}`)).toBe(true);
    // The log line clears the progress, is written, and the progress is drawn again below it.
    expect(text).toContain(`${CLEAR_LINE}`);
    expect(text).toMatch(new RegExp(`INFO  +sync started\\n${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    expect(text.endsWith(`${CLEAR_LINE}${first.replace('queue 40', 'queue 3')}`)).toBe(true);
    // No JSON reaches the terminal.
    expect(text).not.toContain('{"level"');
  });

  it('names the connection and what is left when several properties are behind', () => {
    const properties = Array.from({ length: 5 }, (_, i) => ({ propertyId: `p${i}`, position: null, caughtUp: false, state: i === 0 ? 'retrying' : 'active' }));
    expect(progressLine({ connection: 'hotel-a', properties, detailsPerSecond: 0, queue: 0, queueEta: '0s', quarantined: 2 })).toBe(
      'hotel-a: 0/5 properties caught up, p0 at start (retrying), p1 at start, p2 at start, … · details 0/s · queue 0 (about 0s) · 2 quarantined',
    );
  });

  it('keeps JSON lines when asked for json, or when stdout is not a terminal (auto)', () => {
    const isTTY = process.stdout.isTTY;
    const writes: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = (chunk: string | Uint8Array) => (writes.push(String(chunk)), true);
    try {
      Object.defineProperty(process.stdout, 'isTTY', { value: false, configurable: true });
      createLogger('info', undefined, 'auto').info('auto, not a terminal');
      Object.defineProperty(process.stdout, 'isTTY', { value: true, configurable: true });
      createLogger('info', undefined, 'json').info('json on a terminal');
      createLogger('info', undefined, 'auto').info('auto on a terminal');
    } finally {
      process.stdout.write = write;
      Object.defineProperty(process.stdout, 'isTTY', { value: isTTY, configurable: true });
    }
    const joined = writes.join('');
    expect(joined).toMatch(/\{"level":"info".*"msg":"auto, not a terminal"\}/);
    expect(joined).toMatch(/\{"level":"info".*"msg":"json on a terminal"\}/);
    expect(joined).toMatch(/INFO.*auto on a terminal/);
    expect(joined).not.toMatch(/"msg":"auto on a terminal"/);
  });
});
