/**
 * The log as a person at a terminal reads it: one short line per record instead of a JSON
 * object (`12:04:31 WARN  details  booking details too large: quarantined  propertyId=500100`),
 * and the sync's progress as one line that is rewritten in place, below the others. pino
 * writes its JSON lines here (a destination stream); a container or a pipe gets the JSON as it
 * is (log.format `auto`: text only when stdout is a TTY).
 */
import { Writable } from 'node:stream';

/** Fields every record has, or that the line shows already: not repeated as key=value. */
const SHOWN = new Set(['level', 'time', 'msg', 'service', 'component', 'connection', 'pid', 'hostname']);
const LEVELS: Record<string, string> = { trace: 'TRACE', debug: 'DEBUG', info: 'INFO ', warn: 'WARN ', error: 'ERROR', fatal: 'FATAL' };
const COLOURS: Record<string, string> = { trace: '\x1b[2m', debug: '\x1b[2m', info: '\x1b[36m', warn: '\x1b[33m', error: '\x1b[31m', fatal: '\x1b[35m' };
const RESET = '\x1b[0m';
const CLEAR_LINE = '\r\x1b[K';

/** A value of a record as text: a string as it is, anything else as JSON. */
const asText = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));

/** A value of a record as `key=value` text: strings bare when they need no quotes, the rest as JSON, long ones cut. */
function fieldText(key: string, value: unknown): string {
  const text = typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return `${key}=${text.length > 120 ? `${text.slice(0, 117)}…` : text}`;
}

/** One record as a line (without the newline). */
export function recordLine(record: Record<string, unknown>, colour: boolean): string {
  const level = asText(record.level ?? 'info');
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const where = [record.connection, record.component].filter((x) => typeof x === 'string' && x !== '').join('/');
  const fields = Object.entries(record)
    .filter(([k, v]) => !SHOWN.has(k) && v !== undefined)
    .map(([k, v]) => fieldText(k, v))
    .join(' ');
  const tag = LEVELS[level] ?? level.toUpperCase();
  const head = colour ? `${COLOURS[level] ?? ''}${tag}${RESET}` : tag;
  return [time, head, where, asText(record.msg ?? ''), fields].filter((p) => p !== '').join('  ');
}

/** The progress record of a connection as one line: each property's position, the details rate, the queue. */
export function progressLine(record: Record<string, unknown>): string {
  const properties = Array.isArray(record.properties)
    ? (record.properties as { propertyId: string; position: string | null; caughtUp: boolean; state: string }[])
    : [];
  const caughtUp = properties.filter((p) => p.caughtUp).length;
  const behind = properties
    .filter((p) => !p.caughtUp)
    .slice(0, 3)
    .map((p) => `${p.propertyId} at ${p.position?.slice(0, 10) ?? 'start'}${p.state === 'active' ? '' : ` (${p.state})`}`);
  const who = typeof record.connection === 'string' ? `${record.connection}: ` : '';
  const parts = [
    `${caughtUp}/${properties.length} properties caught up${behind.length > 0 ? `, ${behind.join(', ')}${properties.length - caughtUp > 3 ? ', …' : ''}` : ''}`,
    `details ${asText(record.detailsPerSecond ?? 0)}/s`,
    `queue ${asText(record.queue ?? 0)} (about ${asText(record.queueEta ?? '0s')})`,
  ];
  if (Number(record.quarantined ?? 0) > 0) parts.push(`${asText(record.quarantined)} quarantined`);
  return `${who}${parts.join(' · ')}`;
}

/** A pino destination that writes lines for a person; `columns` cuts the progress line to the terminal's width. */
export class TerminalLog extends Writable {
  private progress = '';
  private pending = '';

  constructor(
    private readonly out: NodeJS.WritableStream & { columns?: number },
    private readonly colour: boolean,
  ) {
    super();
  }

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.pending += chunk.toString();
    let newline: number;
    while ((newline = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, newline);
      this.pending = this.pending.slice(newline + 1);
      this.show(line);
    }
    done();
  }

  override _final(done: (error?: Error | null) => void): void {
    if (this.progress !== '') this.out.write('\n');
    this.progress = '';
    done();
  }

  private show(line: string): void {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      record = { msg: line };
    }
    const width = Math.max(40, (this.out.columns ?? 120) - 1);
    if (record.component === 'progress' && record.msg === 'progress') {
      this.progress = progressLine(record).slice(0, width);
      this.out.write(`${CLEAR_LINE}${this.progress}`);
      return;
    }
    // Every other line goes above the progress line, which is drawn again below it.
    this.out.write(`${this.progress !== '' ? CLEAR_LINE : ''}${recordLine(record, this.colour)}\n${this.progress}`);
  }
}
