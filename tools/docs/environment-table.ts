/**
 * The table of environment variables for docs/configuration.md, from the one table the daemon
 * parses them with (src/config/environment.ts) and the defaults of config/default.json.
 * `npm run docs:environment` prints it; test/unit/environment.test.ts checks the page holds it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { packageRoot } from '../../src/config/config.js';
import { environment } from '../../src/config/environment.js';

function defaultOf(key: string | undefined): string {
  if (key === undefined) return '';
  const defaults = JSON.parse(readFileSync(resolve(packageRoot, 'config', 'default.json'), 'utf8')) as Record<string, unknown>;
  const value = key.split('.').reduce<unknown>((node, k) => (node === undefined || node === null ? undefined : (node as Record<string, unknown>)[k]), defaults);
  if (value === undefined) return '';
  return `\`${Array.isArray(value) && value.length === 0 ? '' : typeof value === 'string' ? value : JSON.stringify(value)}\``.replace('``', '');
}

export function environmentTable(): string {
  const rows = environment.map((v) => {
    const name = v.kind === 'secret' ? `\`${v.name}\` (or \`${v.name}_FILE\`)` : `\`${v.name}\``;
    return `| ${name} | ${v.key === undefined ? '' : `\`${v.key}\``} | ${defaultOf(v.key)} | ${v.meaning} |`;
  });
  return ['| variable | config key | default | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
