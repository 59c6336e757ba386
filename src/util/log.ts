/**
 * Logging: pino, one child logger per component. Secrets never reach a log line: the
 * redaction paths below cover every place a token, secret or Authorization header is kept.
 */
import { pino, type Logger, type DestinationStream } from 'pino';

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'staysync' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
