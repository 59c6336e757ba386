/**
 * CHANGELOG.md keeps in step with the release: an entry for package.json's version (the one
 * `staysync --version` prints) with its upgrade notes, and one for the release the upgrade
 * fixture was made from.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FIXTURE_RELEASE } from '../../tools/upgrade-fixture/fixture.js';

const changelog = readFileSync(new URL('../../CHANGELOG.md', import.meta.url), 'utf8');
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** The text of the entry `## <version> …` up to the next entry. */
function entry(release: string): string | undefined {
  const sections = changelog.split(/^## /m).slice(1);
  return sections.find((s) => s.startsWith(`${release} `) || s.startsWith(`${release}\n`));
}

describe('CHANGELOG.md', () => {
  it("has an entry for package.json's version, with upgrade notes", () => {
    const current = entry(version);
    expect(current, `an entry "## ${version} …"`).toBeDefined();
    expect(current).toMatch(/^### Upgrade notes$/m);
  });

  it('has an entry for the release of the upgrade fixture, naming its tag and commit', () => {
    const fixture = entry(FIXTURE_RELEASE.tag.replace(/^v/, ''));
    expect(fixture).toContain(`tag \`${FIXTURE_RELEASE.tag}\``);
    expect(fixture).toContain(FIXTURE_RELEASE.commit.slice(0, 7));
  });
});
