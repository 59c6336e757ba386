/**
 * The order in which the integration files start: the longest first. They mostly wait (for a
 * daemon, a timeout, a rate window), and one that starts last runs alone at the end while the
 * other workers have nothing left: on a fresh clone, with no durations of an earlier run,
 * vitest orders by file size, and the demo (43 s) started 255 s into a 298 s run.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The files that take 25 s or more on this machine (four workers), longest first. */
const LONGEST = [
  'attacks',
  'replicas',
  'demo',
  'forget-guest',
  'provider-failures',
  'pms',
  'content',
  'quiet-hotels',
  'sync-engine',
  'versions-missed',
  'grant-reader',
  'reporting',
  'replay',
  'database-outage',
  'cli',
  'connections',
  'local-server',
  'sweep',
];

const rank = (spec: TestSpecification): number => {
  const i = LONGEST.findIndex((name) => spec.moduleId.endsWith(`/integration/${name}.test.ts`));
  return i < 0 ? LONGEST.length : i;
};

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array.prototype.sort is stable: the others keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
