#!/usr/bin/env node
/**
 * staysync command line: the container's entrypoint. The only module that touches process
 * signals, argv and the exit status.
 *
 *   staysync run [--recover[=ISO]]          daemon: poll forever, SIGTERM/SIGINT stop cleanly
 *   staysync sync --once [--recover[=ISO]]  every stream until caught up and drained, then exit
 *   staysync migrate                        apply database migrations
 *   staysync status [--json]                per property: position, last poll, queue, ETA
 *   common: --config <path>
 *
 * Exit status: 0 done, 1 failure, 2 bad usage or configuration, 3 token lost.
 */
import { ConfigError, loadConfig } from './config.js';
import { ExitCode, isExpectedFailure, migrateCommand, statusCommand, syncCommand } from './commands.js';
import { parseArgs, usage, UsageError, type Args } from './cli-args.js';
import { createLogger } from './log.js';

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`staysync: ${err.message}\n\n${usage}\n`);
    return ExitCode.usage;
  }
  if (args.command === 'help') {
    process.stdout.write(`${usage}\n`);
    return ExitCode.ok;
  }

  let config;
  try {
    config = loadConfig({ configPath: args.configPath });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`staysync: ${err.message}\n`);
      return ExitCode.usage;
    }
    throw err;
  }
  const logger = createLogger(config.log.level);

  const controller = new AbortController();
  let signals = 0;
  const onSignal = (name: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) {
      logger.info({ signal: name }, 'stopping: finishing in-flight work (send again to exit at once)');
      controller.abort(new Error(`stopped by ${name}`));
    } else {
      logger.warn({ signal: name }, 'second signal: exiting now; committed pages are safe, in-flight ones are replayed on restart');
      process.exit(ExitCode.failure);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  const env = { config, logger, signal: controller.signal, out: (line: string) => process.stdout.write(`${line}\n`) };
  try {
    switch (args.command) {
      case 'migrate':
        return await migrateCommand(env);
      case 'status':
        return await statusCommand(env, args.json);
      case 'run':
        return await syncCommand(env, 'daemon', args.recovery);
      case 'sync':
        return await syncCommand(env, 'once', args.recovery);
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`staysync: ${err.message}\n`);
      return ExitCode.usage;
    }
    if (isExpectedFailure(err)) {
      logger.error((err as Error).message);
      return ExitCode.failure;
    }
    const e = err as Error;
    const cause = e.cause instanceof Error ? ` (cause: ${e.cause.message})` : '';
    logger.error({ stack: config.log.level === 'debug' || config.log.level === 'trace' ? e.stack : undefined }, `${e.message}${cause}`);
    return ExitCode.failure;
  }
}

// Exit explicitly: every resource was closed in order above, and a stray keep-alive socket
// or timer must not keep a finished `sync --once` alive. Logs are written synchronously.
main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`staysync: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(ExitCode.failure);
  },
);
