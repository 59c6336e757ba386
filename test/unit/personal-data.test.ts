/** The personal-data policy for quarantined bodies (src/mapping/personal-data.ts quarantinedBody). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PERSONAL_COLUMNS } from '../../src/store/personal-columns.js';
import { PMS_PERSON_COLUMNS } from '../../src/store/repositories/erasures.js';
import { quarantinedBody, WITHHELD_BODY } from '../../src/mapping/personal-data.js';
import { streamNames } from '../../src/store/states.js';

const body = JSON.stringify({
  reservation: {
    number: '2024-7',
    total: 1234.5,
    customer: { personName: { lastName: 'Lovelace' }, emails: [{ address: 'ada@example.com' }], birthDate: '1815-12-10' },
    roomStays: [{ guests: [{ phones: [{ phoneNumber: '+44 20' }], personName: { firstName: 'Ada' } }] }],
  },
});

describe('quarantined bodies', () => {
  it('drops the personal keys of every person of a PMS payload, wherever they are, and keeps the rest with its numbers as sent', () => {
    const kept = quarantinedBody(streamNames.pmsReservations, body.replace('1234.5', '1234.50'), false);
    expect(kept).not.toMatch(/ada@example\.com|1815-12-10|\+44 20/);
    expect(kept).toContain('"total":1234.50');
    expect(JSON.parse(kept)).toMatchObject({
      reservation: { number: '2024-7', customer: { personName: { lastName: 'Lovelace' } }, roomStays: [{ guests: [{ personName: { firstName: 'Ada' } }] }] },
    });
  });

  it('keeps nothing of a PMS body that is not JSON, and everything with personal data on or for another stream', () => {
    expect(quarantinedBody(streamNames.webhookEvents, '<html>ada@example.com', false)).toBe(WITHHELD_BODY);
    expect(quarantinedBody(streamNames.pmsReservations, body, true)).toBe(body);
    expect(quarantinedBody(streamNames.content, body, false)).toBe(body);
  });
});

describe('the README’s personal columns', () => {
  it('lists exactly the columns reader roles are refused (src/store/personal-columns.ts)', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('## Personal data'), readme.indexOf('## How it works'));
    const listed = Object.fromEntries(
      [...section.matchAll(/^\| `(\w+)` \| (.+) \|$/gm)].map(([, table, cells]) => [table, [...cells!.matchAll(/`(\w+)`/g)].map((m) => m[1])]),
    );
    expect(listed).toEqual(PERSONAL_COLUMNS);
  });
});

describe('the columns an erasure empties', () => {
  it('are the personal columns of the PMS tables, raw aside (rewritten whole), and the pseudonyms', () => {
    for (const [table, { names, cleared }] of Object.entries(PMS_PERSON_COLUMNS)) {
      const erased = [...names, ...cleared].filter((c) => !c.endsWith('_hash'));
      expect([...erased].sort(), table).toEqual(PERSONAL_COLUMNS[table]!.filter((c) => c !== 'raw').sort());
      expect(cleared.filter((c) => c.endsWith('_hash')).length, table).toBe(2);
    }
  });
});
