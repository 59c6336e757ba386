/**
 * The documentation (docs/*.md, README.md) names only what the code has, and documents what
 * the code has. The tables, views and functions of the database are checked against a migrated
 * database by test/integration/docs-match-code.test.ts; this file needs none.
 *
 * What counts as naming, strictly (a new kind of mention gets a rule here, not a looser pattern):
 * - a command: the word of lower-case letters and dashes after `staysync ` or
 *   `node dist/cli/main.js ` that starts a backtick span or a line of an `sh` block. A line of an `sh` block without placeholders (`<…>`,
 *   `[…]`, `|`, `…`) must also parse whole (src/cli/args.ts, `parseArgs`);
 * - a flag: `--x` in such a span or line, or a backtick span that is a flag alone (`--x`,
 *   `--x <value>`, `--x=…`, `--x[=…]`). Not in benchmarks.md and development.md, whose flags
 *   are the bench's; not the flags of other programs, listed in FOREIGN_FLAGS;
 * - an environment variable: every `STAYSYNC_…` or `DATABASE_URL` word. It is in the table of
 *   src/config/environment.ts, or the `_FILE` of a secret there, or a variable of the deployment
 *   files (config/deploy/) that the daemon does not read. `STAYSYNC_X_*` is a prefix of some.
 *   (The other way, every variable is documented: test/unit/environment.test.ts checks that
 *   docs/configuration.md holds the table.)
 * - a metric: every `staysync_…` word but the schema, role and database names of NOT_METRICS.
 *   Every metric /metrics exports is in a row of the metrics table of operations.md ("Health
 *   and metrics"), and every name in that table is exported, with the labels it gives
 *   (`name{a,b}`) when it gives them;
 * - an exit status: a row of the exit status table of operations.md, both ways with ExitCode;
 * - the other way for commands: every command and flag of the code's help text (`usage`) is in
 *   the first column of operations.md's table of commands;
 * - a personal column: a row of README.md's table of them, both ways with PERSONAL_COLUMNS;
 * - the example of a configuration error (docs/configuration.md) is what loadConfig prints.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseArgs, usage, UsageError } from '../../src/cli/args.js';
import { ExitCode } from '../../src/cli/exit.js';
import { loadConfig } from '../../src/config/config.js';
import { environment, environmentVariableNames } from '../../src/config/environment.js';
import { createMetrics, type MetricSources } from '../../src/ops/metrics.js';
import { PERSONAL_COLUMNS } from '../../src/store/personal-columns.js';
import { codeBlocks, docPages, spans, tables, cellNames, type DocPage } from '../helpers/docs.js';

const pages = docPages();

/** Flags of other programs the pages name alone in backticks, and whose they are. */
const FOREIGN_FLAGS: Record<string, string> = {
  '--full-refresh': 'dbt (docs/dbt.md)',
  '--max-old-space-size': 'node (the image memory settings)',
  '--max-semi-space-size': 'node (the image memory settings)',
  '--pms-year': 'the bench (npm run bench)',
};

/** `staysync_…` words that are no metric: schemas, roles and databases the pages name. */
const NOT_METRICS: Record<string, string> = {
  staysync_readable: 'the readers schema (reader-policy.ts)',
  staysync_secret: 'the secret schema (reader-policy.ts)',
  staysync_reader: 'the local server reader login (local-pg/reader-login.ts)',
  staysync_reporting: 'a reporting schema in an example',
  staysync_restored: 'the database of the restore example',
  staysync_fixture_reader: 'the reader of the upgrade fixture (tools/upgrade-fixture)',
  staysync_client_secret: 'the secret file of the container examples (/run/secrets/staysync_client_secret)',
};

/** Pages whose lone flags are the bench's, not staysync's. */
const BENCH_PAGES = ['docs/benchmarks.md', 'docs/development.md'];

const PROGRAM = /^(?:staysync|(?:npx )?node dist\/cli\/main\.js)\s+(.*)$/;

interface CommandLine {
  page: string;
  /** What follows the program name, without a trailing `# comment`. */
  args: string;
  /** From an sh block (a line to run) rather than a backtick span (a synopsis). */
  runnable: boolean;
}

/** The staysync command lines of a page: backtick spans and lines of sh blocks that start with the program. */
function commandLines(page: DocPage): CommandLine[] {
  const out: CommandLine[] = [];
  for (const s of spans(page)) {
    const m = PROGRAM.exec(s);
    if (m) out.push({ page: page.path, args: m[1]!, runnable: false });
  }
  for (const block of codeBlocks(page).filter((b) => b.lang === 'sh')) {
    for (const raw of block.text.split('\n')) {
      // `docker exec staysync node dist/cli/main.js status`: the program may follow a container's command.
      const line = raw.replace(/^docker exec \S+ /, '').trim();
      const m = PROGRAM.exec(line);
      if (m) out.push({ page: page.path, args: m[1]!.replace(/\s+#.*$/, '').trim(), runnable: true });
    }
  }
  return out;
}

/** Words of a shell line: split at spaces, single- or double-quoted parts kept whole. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Whether parseArgs knows the flag (any other complaint, such as a missing value, means it does). */
function knownFlag(flag: string): boolean {
  try {
    parseArgs([flag]);
    return true;
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return !err.message.startsWith('unknown option');
  }
}

/** The commands of the code's own help text (src/cli/args.ts `usage`): `run`, `sync`, `quarantine`, … */
const COMMANDS = [...(/^commands:\n([\s\S]*?)\n\n/m.exec(usage)?.[1] ?? '').matchAll(/^ {2}([a-z][a-z-]*)/gm)].map((m) => m[1]!);
/** The flags of that help text. */
const FLAGS = [...new Set(usage.match(/--[a-z][a-z-]*/g) ?? [])];

describe('the documentation names what the code has', () => {
  it('every command line parses, every command and flag exists', () => {
    const lines = pages.flatMap(commandLines);
    expect(lines.length).toBeGreaterThan(10);
    const problems: string[] = [];
    for (const l of lines) {
      const first = l.args.split(/\s+/)[0]!;
      // A word of lower-case letters is a command; anything else (`staysync 0.2.0 (…)`, the output of --version; `…`) is not.
      if (/^[a-z][a-z-]*$/.test(first) && !COMMANDS.includes(first)) problems.push(`${l.page}: no command ${first} (${l.args})`);
      for (const flag of l.args.match(/--[a-z][a-z-]*/g) ?? []) if (!knownFlag(flag)) problems.push(`${l.page}: no flag ${flag} (${l.args})`);
      if (l.runnable && !/[<>[\]|…]/.test(l.args)) {
        try {
          parseArgs(shellWords(l.args));
        } catch (err) {
          problems.push(`${l.page}: ${l.args}: ${(err as Error).message}`);
        }
      }
    }
    for (const page of pages.filter((p) => !BENCH_PAGES.includes(p.path))) {
      for (const s of spans(page)) {
        const m = /^(--[a-z][a-z-]*)(?:[= [][^`]*)?$/.exec(s);
        if (!m || PROGRAM.test(s)) continue;
        const flag = m[1]!;
        if (!(flag in FOREIGN_FLAGS) && !knownFlag(flag)) problems.push(`${page.path}: no flag ${flag} (\`${s}\`)`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("every command and flag of the code's help is in operations.md's table of commands", () => {
    expect(COMMANDS).toEqual(expect.arrayContaining(['run', 'sync', 'quarantine', 'grant-reader', 'forget-guest']));
    const operations = pages.find((p) => p.path === 'docs/operations.md')!;
    const table = tables(operations).find((t) => t.header[0] === 'command');
    const firstCells = table!.rows.map((r) => r[0]!).join('\n');
    // Each command parses (with what it needs): the help names none that parseArgs refuses.
    const needs: Record<string, string[]> = { sync: ['--once'], quarantine: ['retry'], 'grant-reader': ['r'], 'forget-guest': ['--email', 'a@b.c'] };
    for (const c of COMMANDS) expect(() => parseArgs([c, ...(needs[c] ?? [])]), c).not.toThrow();
    expect(COMMANDS.filter((c) => !firstCells.includes(`\`staysync ${c}`))).toEqual([]);
    expect(FLAGS.filter((f) => f !== '--help' && !firstCells.includes(f))).toEqual([]);
  });

  it('every environment variable named is one the daemon reads (or a secret file, or the deployment files)', () => {
    const secrets = environment.filter((v) => v.kind === 'secret').map((v) => `${v.name}_FILE`);
    const deploy = readdirSync('config/deploy', { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'))
      .join('\n');
    const problems: string[] = [];
    let named = 0;
    for (const page of pages) {
      for (const m of page.text.matchAll(/\b(STAYSYNC_[A-Z0-9_]*|DATABASE_URL)(\*)?/g)) {
        const name = m[1]!;
        named += 1;
        if (m[2] === '*') {
          if (!environmentVariableNames.some((n) => n.startsWith(name))) problems.push(`${page.path}: no variable starts with ${name}`);
        } else if (!environmentVariableNames.includes(name) && !secrets.includes(name) && !new RegExp(`\\b${name}\\b`).test(deploy)) {
          problems.push(`${page.path}: ${name} is read by nothing (src/config/environment.ts, config/deploy/)`);
        }
      }
    }
    expect(named).toBeGreaterThan(50);
    expect(problems).toEqual([]);
  });

  it('every metric named is exported, and the metrics table of operations.md lists every one exported', () => {
    // Only its names are read (getMetricsAsArray collects nothing): no source is asked for a figure.
    const stub = {} as never;
    const sources: MetricSources = {
      fleet: { connections: [], onConnection: () => undefined, sharedTokenBudget: stub },
      availability: stub,
      replica: stub,
      db: stub,
      logger: stub,
      ready: () => true,
      tokenCapacity: 0,
      transactions: () => 0,
    };
    const metrics = createMetrics(sources)
      .getMetricsAsArray()
      .filter((m) => m.name.startsWith('staysync_'));
    const exported = metrics.map((m) => m.name);
    const labelsOf = new Map(metrics.map((m) => [m.name, [...((m as unknown as { labelNames?: string[] }).labelNames ?? [])].sort()]));
    expect(exported).toContain('staysync_reconciliation_rooms_difference_max');
    expect(exported).toContain('staysync_summaries_total');

    const problems: string[] = [];
    for (const page of pages) {
      for (const m of page.text.matchAll(/\bstaysync_[a-z0-9_]+/g)) {
        if (!(m[0] in NOT_METRICS) && !exported.includes(m[0])) problems.push(`${page.path}: ${m[0]} is not exported by /metrics`);
      }
    }
    const operations = pages.find((p) => p.path === 'docs/operations.md')!;
    const metricsTable = tables(operations).find((t) => t.header[0] === 'metric');
    expect(metricsTable, 'the metrics table of operations.md').toBeDefined();
    const documented = new Set(metricsTable!.rows.flatMap((r) => cellNames(r[0]!)));
    for (const name of exported) if (!documented.has(name)) problems.push(`docs/operations.md: the metrics table lacks ${name}`);
    for (const name of documented) if (name.startsWith('staysync_') && !exported.includes(name)) problems.push(`docs/operations.md: ${name} is not exported`);
    // A name the table gives with its labels (`name{a,b}`) has exactly those.
    for (const m of metricsTable!.rows.flatMap((r) => [...r[0]!.matchAll(/`(staysync_[a-z0-9_]+)\{([^}]*)\}`/g)])) {
      const documentedLabels = m[2]!
        .split(',')
        .map((l) => l.trim())
        .sort();
      if (labelsOf.has(m[1]!) && JSON.stringify(labelsOf.get(m[1]!)) !== JSON.stringify(documentedLabels))
        problems.push(`docs/operations.md: ${m[1]} has the labels ${labelsOf.get(m[1]!)!.join(',')}, not ${documentedLabels.join(',')}`);
    }
    expect(problems).toEqual([]);
  });

  it('the exit statuses of operations.md are those of the code', () => {
    const operations = pages.find((p) => p.path === 'docs/operations.md')!;
    const table = tables(operations).find((t) => t.header[0] === 'status');
    const documented = table!.rows.map((r) => Number(cellNames(r[0]!)[0])).sort((a, b) => a - b);
    expect(documented).toEqual([...new Set(Object.values(ExitCode))].sort((a, b) => a - b));
  });

  it("README's table of personal columns is PERSONAL_COLUMNS", () => {
    const readme = pages.find((p) => p.path === 'README.md')!;
    const table = tables(readme).find((t) => t.header[0] === 'table' && t.header[1] === 'personal columns');
    const documented = Object.fromEntries(table!.rows.map((r) => [cellNames(r[0]!)[0]!, cellNames(r[1]!).sort()]));
    const code = Object.fromEntries(Object.entries(PERSONAL_COLUMNS).map(([t, cols]) => [t, [...cols].sort()]));
    expect(documented).toEqual(code);
  });

  it('the configuration error docs/configuration.md shows is the one loadConfig prints', () => {
    let message = '';
    try {
      loadConfig({ env: {}, overrides: { rateLimits: { bookingList: [{ limit: 0, windowMs: 1000 }] } } });
    } catch (err) {
      message = (err as Error).message;
    }
    const line = message.split('\n').find((l) => l.includes('rateLimits.bookingList.0.limit'));
    expect(line).toBeDefined();
    const doc = pages.find((p) => p.path === 'docs/configuration.md')!.text;
    expect(doc).toContain(`\`${line!.trim()}\``);
  });
});
