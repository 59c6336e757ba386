#!/usr/bin/env node
/**
 * staysync command line: the container's entrypoint. The only module that touches process
 * signals, argv and the exit status.
 *
 *   staysync run [--recover[=ISO]] [--property <id>]          daemon: poll forever, SIGTERM/SIGINT stop cleanly
 *   staysync sync --once [--recover[=ISO]] [--property <id>]  every stream until caught up and drained, then exit
 *   staysync migrate                        apply database migrations
 *   staysync status [--json]                per property: state, position, queue, ETA
 *   staysync rebuild                        typed tables derived again from raw (no provider request)
 *   staysync quarantine retry               quarantined payloads parsed again, mirrored when they pass
 *   staysync grant-reader <role>            a read-only role for reporting tools
 *   staysync forget-guest --email <e-mail>  erase one guest's personal data
 *   staysync --version                      the release, its last migration and mapping version
 *   staysync <command> --help               that command's usage (args.ts)
 *   common: --config <path>
 *
 * `staysync` is this file: on the image's PATH (/usr/local/bin/staysync, see the Dockerfile),
 * and `npx staysync` in a checkout after `npm run build` (package.json's bin).
 *
 * Exit status: 0 done, 1 failure, 2 bad usage or configuration, 3 token lost (sync --once: a
 * property needs --recover), 4 forget-guest found nobody.
 *
 * SIGHUP: `run` reads its API connections again (connections directory), without a restart.
 *
 * Stopping: the first SIGTERM or SIGINT aborts the run (no new request starts, in-flight
 * transactions commit or roll back, the run row is closed, exit 0) within shutdown.graceMs;
 * a second signal ends the process at once (exit 1; the next start closes its run as killed).
 */
import { ConfigError, loadConfig } from '../config/config.js';
import { ExitCode, isExpectedFailure } from './exit.js';
import { commandUsage, parseArgs, usage, UsageError, type Args } from './args.js';
import { createLogger } from '../util/log.js';

/** Before the grace time ends, the command stops waiting for in-flight work and closes its run. */
const GRACE_MARGIN_MS = 750;

/** The exact-number parsing needs JSON.rawJSON (Node.js 22 and later; the image runs 24). */
function unsupportedRuntime(): string | undefined {
  const json = JSON as unknown as { rawJSON?: unknown };
  if (typeof json.rawJSON === 'function') return undefined;
  return `needs Node.js 22 or later (it reads provider numbers exactly with JSON.rawJSON); this is Node.js ${process.versions.node}. Use \`npx staysync\` in the checkout (the project's own Node.js 24), \`npm start\` or the container image`;
}

async function main(): Promise<number> {
  const runtime = unsupportedRuntime();
  if (runtime) {
    process.stderr.write(`staysync: ${runtime}\n`);
    return ExitCode.usage;
  }
  let args: Args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    // The usage of the command that was mistyped, when one is named: shorter, and to the point.
    const { helpFor } = parseArgs([...process.argv.slice(2), '--help']);
    process.stderr.write(`staysync: ${err.message}\n\n${helpFor ? commandUsage(helpFor) : usage}\n`);
    return ExitCode.usage;
  }
  if (args.command === 'help') {
    process.stdout.write(`${args.helpFor ? commandUsage(args.helpFor) : usage}\n`);
    return ExitCode.ok;
  }
  // Before the configuration: the version of an installation whose settings are not ready yet.
  if (args.command === 'version') {
    const { versionLine } = await import('./commands/version.js');
    process.stdout.write(`${await versionLine()}\n`);
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
  const logger = createLogger(config.log.level, undefined, config.log.format);

  // Every failure is caught where it happens; this is the last line, so that a bug shows as
  // a log line instead of ending a daemon that is otherwise working.
  process.on('unhandledRejection', (reason) => {
    logger.error(
      { err: reason instanceof Error ? reason.stack : String(reason) },
      'internal error (unhandled rejection): please report it; the process goes on',
    );
  });

  const stop = new AbortController();
  const grace = new AbortController();
  const graceMs = config.shutdown.graceMs;
  let signals = 0;
  const onSignal = (name: NodeJS.Signals) => {
    signals += 1;
    if (signals === 1) {
      logger.info({ signal: name, graceMs }, 'stopping: finishing in-flight work (send again to exit at once)');
      stop.abort(new Error(`stopped by ${name}`));
      setTimeout(() => grace.abort(new Error('grace time over')), Math.max(graceMs - GRACE_MARGIN_MS, graceMs / 2)).unref();
      // The last resort: the process ends within the grace time whatever is still running.
      setTimeout(() => {
        logger.warn('grace time over: exiting now; uncommitted work is rolled back by the database');
        process.exit(ExitCode.ok);
      }, graceMs).unref();
    } else {
      logger.warn({ signal: name }, 'second signal: exiting now; committed pages are safe, in-flight ones are done again at the next start');
      process.exit(ExitCode.failure);
    }
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  // SIGHUP: the daemon reads its connections again (the default would end the process).
  const onReload = (callback: () => void) => {
    const handler = () => {
      logger.info({ signal: 'SIGHUP' }, 'reloading the API connections');
      callback();
    };
    process.on('SIGHUP', handler);
    return () => void process.off('SIGHUP', handler);
  };
  process.on('SIGHUP', () => undefined);

  const env = { config, logger, signal: stop.signal, graceSignal: grace.signal, out: (line: string) => process.stdout.write(`${line}\n`), onReload };
  try {
    // Each command loads its own modules when it runs (the bundle keeps them unevaluated until
    // then): the database, HTTP and metrics libraries are most of a start's work, which --help,
    // --version and a usage error do not need.
    switch (args.command) {
      case 'migrate':
        return await (await import('./commands/migrate.js')).migrateCommand(env);
      case 'status':
        return await (await import('./commands/status.js')).statusCommand(env, args.json);
      case 'rebuild':
        return await (await import('./commands/replay.js')).rebuildCommand(env);
      case 'quarantine-retry':
        return await (await import('./commands/replay.js')).quarantineRetryCommand(env);
      case 'grant-reader':
        return await (
          await import('./commands/grant-reader.js')
        ).grantReaderCommand(env, { role: args.role!, personalData: args.personalData, properties: args.properties });
      case 'forget-guest':
        return await (await import('./commands/forget-guest.js')).forgetGuestCommand(env, args.selector!, args.dryRun);
      case 'run':
        return await (await import('./commands/sync.js')).syncCommand(env, 'daemon', args.recovery);
      case 'sync':
        return await (await import('./commands/sync.js')).syncCommand(env, 'once', args.recovery);
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
