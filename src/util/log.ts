/**
 * Logging: pino, one child logger per component. Secrets never reach a log line: the
 * redaction paths below cover every place a token, secret or Authorization header is kept.
 */
import { pino, type Logger, type DestinationStream } from 'pino';
import { TerminalLog } from './terminal-log.js';

export type { Logger };

export const redactPaths = [
  'clientSecret',
  'client_secret',
  'accessToken',
  'access_token',
  'token',
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.clientSecret',
  '*.client_secret',
  '*.accessToken',
  '*.access_token',
  '*.authorization',
  '*.headers.authorization',
  'apiKey',
  'basicPassword',
  '*.apiKey',
  '*.basicPassword',
  'headers["api-key"]',
  'config.provider.clientSecret',
  'config.webhooks.apiKey',
  'config.webhooks.basicPassword',
  'config.provider.clientId',
];

/**
 * The process's logger. `format` (log.format): JSON lines, or lines for a person (TerminalLog)
 * when asked, or with `auto` when stdout is a terminal. An explicit `destination` (tests) is
 * written as it is.
 */
export function createLogger(level: string, destination?: DestinationStream, format: 'auto' | 'json' | 'text' = 'json'): Logger {
  const text = destination === undefined && (format === 'text' || (format === 'auto' && process.stdout.isTTY === true));
  return pino(
    {
      level,
      base: { service: 'staysync' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    text ? new TerminalLog(process.stdout, process.stdout.isTTY === true && !process.env.NO_COLOR) : destination,
  );
}
