/** Running the real entry point (`node dist/cli.js`) as a child process, as the container does. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fastRateLimits, SIM_CLIENT_ID, SIM_CLIENT_SECRET, type Harness } from './harness.js';

const cli = resolve('dist/cli.js');

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the CLI with only PATH and `env` in its environment. */
export function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<Run>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

export const runCli = (args: string[], env: Record<string, string>): Promise<Run> => startCli(args, env).done;

/** Writes `content` as a JSON config file in a fresh temporary folder; returns its path. */
export function configFile(content: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), 'staysync-cli-')), 'config.json');
  writeFileSync(path, JSON.stringify(content));
  return path;
}

/**
 * The environment of a daemon pointed at the harness's simulator and schema, with the
 * harness's short windows. `config` adds keys to the config file; `env` overrides variables
 * (an empty STAYSYNC_PROPERTY_IDS lets the content API decide).
 */
export function daemonEnv(harness: Harness, opts: { config?: Record<string, unknown>; env?: Record<string, string> } = {}): Record<string, string> {
  return {
    DATABASE_URL: harness.dbUrl,
    STAYSYNC_DB_SCHEMA: harness.schema,
    STAYSYNC_PROVIDER_URL: harness.sim.url,
    STAYSYNC_REFERENCE_DATA_URL: harness.sim.url,
    STAYSYNC_CLIENT_ID: SIM_CLIENT_ID,
    STAYSYNC_CLIENT_SECRET: SIM_CLIENT_SECRET,
    STAYSYNC_PROPERTY_IDS: harness.sim.propertyIds().join(','),
    STAYSYNC_CONFIG: configFile({ rateLimits: fastRateLimits, ops: { port: 0 }, ...opts.config }),
    STAYSYNC_LOG_LEVEL: 'warn',
    ...opts.env,
  };
}
