/**
 * The shell commands of the documentation (README.md and docs/*.md), read as a user would type
 * them: every fenced `sh` block, its lines joined where they end with `\`, split into commands
 * at `&&`, `||`, `;` and `|`, and each command into words as a POSIX shell would (quotes, `$(…)`
 * kept whole; nothing expanded). test/unit/docs-commands.test.ts checks them against the CLI's
 * parser, the table of variables and the Dockerfile; test/integration/docs-commands.test.ts runs
 * those that can run here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { commands, type Args } from '../../src/cli/args.js';

/** The languages of a fenced block that holds commands to type. */
export const SHELL_LANGUAGES = ['sh', 'bash', 'shell', 'console'];

/**
 * Lines that make a block of no language look like commands (such a block must say `sh`): a
 * staysync command or option, npm, docker, kubectl, an export. Output that starts with the
 * word staysync (`staysync bench — …`) is not one.
 */
const COMMAND_LIKE = new RegExp(
  `^(\\$ )?((npx )?staysync (${[...Object.keys(commands).map((c) => c.split(' ')[0]), 'help'].join('|')}|--?[a-zA-Z])|npx |npm (run|install|ci|start|test)\\b|docker |kubectl |export [A-Z_]+=)`,
);

export interface DocsBlock {
  file: string;
  /** Line of the opening fence (1-based). */
  line: number;
  lang: string;
  text: string;
}

export interface DocsCommand {
  file: string;
  /** Line of the command's first line (1-based). */
  line: number;
  /** The command as written (continuations joined). */
  source: string;
  /** `NAME=value` words before the program, as the shell sets them for that command. */
  assignments: Record<string, string>;
  /** The program and its arguments. */
  words: string[];
}

/** The pages whose commands are checked: README.md and every docs/*.md, as they are now. */
export function docsFiles(): string[] {
  return [
    'README.md',
    ...readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join('docs', f)),
  ];
}

/** Every fenced block of a page. */
export function fencedBlocks(file: string, text = readFileSync(file, 'utf8')): DocsBlock[] {
  const blocks: DocsBlock[] = [];
  const lines = text.split('\n');
  let open: { line: number; lang: string; fence: string; body: string[] } | undefined;
  for (const [i, l] of lines.entries()) {
    const m = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)/.exec(l);
    if (open) {
      if (m && m[2]!.startsWith(open.fence) && l.trim() === m[2]) {
        blocks.push({ file, line: open.line, lang: open.lang, text: open.body.join('\n') });
        open = undefined;
      } else open.body.push(l);
    } else if (m) open = { line: i + 1, lang: m[3] ?? '', fence: m[2]!, body: [] };
  }
  return blocks;
}

/** The blocks of commands to type, and the unlabelled blocks that look like commands (an error). */
export function shellBlocks(files = docsFiles()): { blocks: DocsBlock[]; unlabelled: DocsBlock[] } {
  const all = files.flatMap((f) => fencedBlocks(f));
  return {
    blocks: all.filter((b) => SHELL_LANGUAGES.includes(b.lang)),
    unlabelled: all.filter((b) => b.lang === '' && b.text.split('\n').some((l) => COMMAND_LIKE.test(l.trim()))),
  };
}

/** Separators between commands on one line. */
const SEPARATORS = new Set(['&&', '||', ';', '|']);

/**
 * A line's words as a POSIX shell splits them, separators as words of their own, without the
 * comment. Quotes are removed; `$(…)` and `$VAR` are kept as written (nothing is expanded).
 */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  const push = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === ' ' || c === '\t') push();
    else if (c === '#' && word === undefined) break;
    else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated ' in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      for (; j < line.length && line[j] !== '"'; j++) {
        if (line[j] === '\\' && j + 1 < line.length) text += line[++j];
        else if (line[j] === '$' && line[j + 1] === '(') {
          const end = closingParen(line, j + 1);
          text += line.slice(j, end + 1);
          j = end;
        } else text += line[j];
      }
      if (j >= line.length) throw new Error(`unterminated " in: ${line}`);
      word = (word ?? '') + text;
      i = j;
    } else if (c === '\\' && i + 1 < line.length) word = (word ?? '') + line[++i];
    else if (c === '$' && line[i + 1] === '(') {
      const end = closingParen(line, i + 1);
      word = (word ?? '') + line.slice(i, end + 1);
      i = end;
    } else if (c === '&' || c === '|' || c === ';') {
      push();
      const two = line.slice(i, i + 2);
      if (two === '&&' || two === '||') {
        words.push(two);
        i++;
      } else words.push(c);
    } else word = (word ?? '') + c;
  }
  push();
  return words;
}

function closingParen(line: string, open: number): number {
  let depth = 0;
  for (let j = open; j < line.length; j++) {
    if (line[j] === '(') depth++;
    else if (line[j] === ')' && --depth === 0) return j;
  }
  throw new Error(`unterminated $( in: ${line}`);
}

/** The commands of a block: continuations joined, comments and blank lines dropped. */
export function blockCommands(block: DocsBlock): DocsCommand[] {
  const commands: DocsCommand[] = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = i;
    let source = lines[i]!;
    while (/\\\s*$/.test(source) && i + 1 < lines.length) source = source.replace(/\\\s*$/, ' ') + lines[++i]!.trim();
    // A `$ ` prompt (console blocks) is not part of the command.
    const words = shellWords(source.replace(/^\s*\$ /, ''));
    let current: string[] = [];
    const flush = () => {
      if (current.length === 0) return;
      const assignments: Record<string, string> = {};
      while (current.length > 0 && /^[A-Za-z_][A-Za-z0-9_]*=/.test(current[0]!)) {
        const [name, ...value] = current.shift()!.split('=');
        assignments[name!] = value.join('=');
      }
      commands.push({ file: block.file, line: block.line + 1 + first, source: source.trim(), assignments, words: current });
      current = [];
    };
    for (const w of words) {
      if (SEPARATORS.has(w)) flush();
      else current.push(w);
    }
    flush();
  }
  return commands;
}

/** Where a command is written, for messages: `docs/operations.md:563: staysync run --recover`. */
export function where(c: DocsCommand): string {
  return `${c.file}:${c.line}: ${c.source}`;
}

/** What the image holds, read from the Dockerfile's last stage. */
export interface ImageLayout {
  workdir: string;
  /** Each path COPY writes in the image, with where its content comes from here (a path of the checkout). */
  copies: { target: string; source: string }[];
  /** Symbolic links a RUN makes: link → target. */
  links: Map<string, string>;
  entrypoint: string[];
  /** The default PATH of the node images (Debian): where a command is found without a path. */
  path: string[];
}

/**
 * The final stage of the Dockerfile: its WORKDIR, what COPY puts where (a `--from=` stage's
 * path mapped to the checkout's, relative to that stage's WORKDIR), the links of `ln -s`, the
 * ENTRYPOINT. Enough to tell whether a path inside the container exists.
 */
export function imageLayout(text = readFileSync('Dockerfile', 'utf8')): ImageLayout {
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stageWorkdirs = new Map<string, string>();
  let stage: string | undefined;
  let workdir = '/';
  let layout: ImageLayout = { workdir, copies: [], links: new Map(), entrypoint: [], path: [] };
  for (const line of instructions) {
    const [op, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    switch (op!.toUpperCase()) {
      case 'FROM': {
        if (stage) stageWorkdirs.set(stage, workdir);
        stage = /\bAS\s+(\S+)/i.exec(args)?.[1] ?? '(final)';
        workdir = '/';
        layout = {
          workdir,
          copies: [],
          links: new Map(),
          entrypoint: [],
          path: ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'],
        };
        break;
      }
      case 'WORKDIR':
        workdir = posix.resolve(workdir, args);
        layout.workdir = workdir;
        break;
      case 'COPY': {
        const words = rest.filter((w) => !w.startsWith('--chown') && !w.startsWith('--chmod'));
        const from = words[0]?.startsWith('--from=') ? words.shift()!.slice('--from='.length) : undefined;
        const rawDest = words.pop()!;
        const dest = posix.resolve(workdir, rawDest);
        for (const src of words) {
          // From another stage: its path there, relative to that stage's WORKDIR, is the checkout's.
          const base = from ? (stageWorkdirs.get(from) ?? '/') : '/';
          const source = from ? posix.relative(base, posix.resolve(base, src)) : posix.normalize(src);
          // A directory's content goes to dest; a file into dest when dest is a directory (`./`, several sources).
          const isDir = existsSync(source) ? statSync(source).isDirectory() : !posix.basename(source).includes('.');
          const intoDir = rawDest.endsWith('/') || words.length > 1;
          layout.copies.push({ target: !isDir && intoDir ? posix.join(dest, posix.basename(source)) : dest, source });
        }
        break;
      }
      case 'RUN':
        for (const m of args.matchAll(/\bln\s+-s\S*\s+(\S+)\s+(\S+)/g)) layout.links.set(posix.resolve(workdir, m[2]!), posix.resolve(workdir, m[1]!));
        break;
      case 'ENTRYPOINT':
        layout.entrypoint = args.startsWith('[') ? (JSON.parse(args) as string[]) : args.split(/\s+/);
        break;
    }
  }
  return layout;
}

/**
 * The checkout's file behind a path of the image, or undefined when the image has nothing
 * there. A file of dist/ stands for its source in src/ (tsconfig.build.json: src → dist), so
 * that the answer does not depend on a build having run.
 */
export function checkoutPathOf(layout: ImageLayout, imagePath: string): string | undefined {
  const resolved = layout.links.get(imagePath) ?? imagePath;
  for (const { target, source } of layout.copies) {
    if (resolved !== target && !resolved.startsWith(`${target}/`)) continue;
    const local = posix.join(source, posix.relative(target, resolved));
    return local.startsWith('dist/') ? local.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts') : local;
  }
  return undefined;
}

/** The command a name runs in the image: a file of a PATH directory (or a link there). */
export function commandInImage(layout: ImageLayout, name: string): string | undefined {
  for (const dir of layout.path) {
    const candidate = posix.join(dir, name);
    if (layout.links.has(candidate) || layout.copies.some((c) => c.target === candidate)) return candidate;
  }
  return undefined;
}

/**
 * The staysync commands the docs show that the integration test does not run, and why. Every
 * other one runs there, against a fresh schema of the test database.
 */
export const STAYSYNC_NOT_RUN: Readonly<Partial<Record<Args['command'], string>>> = {
  run: 'the daemon follows a provider until stopped: test/integration/cli.test.ts runs it against the simulator',
  sync: 'syncs from a provider: test/integration/cli.test.ts runs it against the simulator',
  'grant-reader': 'creates a login role on the whole server, which every test file shares: test/integration/grant-reader.test.ts runs it',
};

/**
 * The staysync command line of a docs command, wherever it is: `staysync …`, `npx staysync …`,
 * or inside `docker exec <container> staysync …`, `docker compose … exec <service> staysync …`,
 * `kubectl exec … -- staysync …`. Undefined when the command runs no staysync.
 */
export function staysyncLine(c: DocsCommand): { via: 'path' | 'npx' | 'container'; args: string[] } | undefined {
  const [program, ...rest] = c.words;
  if (program === 'staysync') return { via: 'path', args: rest };
  if (program === 'npx' && rest[0] === 'staysync') return { via: 'npx', args: rest.slice(1) };
  if (program === 'docker' && rest[0] === 'exec') {
    const inner = afterOptions(rest.slice(1), DOCKER_EXEC_VALUE_FLAGS, DOCKER_EXEC_BOOLEAN_FLAGS).slice(1);
    return inner[0] === 'staysync' ? { via: 'container', args: inner.slice(1) } : undefined;
  }
  if ((program === 'docker' && rest[0] === 'compose') || program === 'kubectl') {
    const dashes = rest.indexOf('--');
    const exec = rest.indexOf('exec');
    const inner =
      program === 'kubectl'
        ? dashes >= 0
          ? rest.slice(dashes + 1)
          : []
        : exec >= 0
          ? afterOptions(rest.slice(exec + 1), DOCKER_EXEC_VALUE_FLAGS, DOCKER_EXEC_BOOLEAN_FLAGS).slice(1)
          : [];
    return inner[0] === 'staysync' ? { via: 'container', args: inner.slice(1) } : undefined;
  }
  return undefined;
}

export const DOCKER_EXEC_VALUE_FLAGS = new Set(['-e', '--env', '-u', '--user', '-w', '--workdir']);
export const DOCKER_EXEC_BOOLEAN_FLAGS = new Set(['-i', '-t', '-it', '-ti', '-d', '--interactive', '--tty', '--detach', '-T']);

/** The words after the options (`-x value`, `--x=value`, flags); throws on an option it does not know. */
export function afterOptions(words: string[], valueFlags: ReadonlySet<string>, booleanFlags: ReadonlySet<string>): string[] {
  let i = 0;
  while (i < words.length && words[i]!.startsWith('-')) {
    const w = words[i]!;
    const name = w.includes('=') ? w.slice(0, w.indexOf('=')) : w;
    if (valueFlags.has(name)) i += w.includes('=') ? 1 : 2;
    else if (booleanFlags.has(w)) i += 1;
    else throw new Error(`unknown option ${w}: add it to the test's list of docker options`);
  }
  return words.slice(i);
}
