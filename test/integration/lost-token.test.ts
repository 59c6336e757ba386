/**
 * A continueToken the provider answers 400 (real PostgreSQL, the simulator over HTTP, the
 * engine). The specification: the token does not expire, and 400 is a faulty request. So one
 * 400 among 200s is retried; only five in a row for the same token, while the same list
 * without the token is answered, make it lost. A lost token stops that property's booking
 * list only, and is recovered from its last modification minus two days: with --recover (one
 * property or all), or by itself with sync.autoRecover.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/sync/runtime/engine.js';
import { gatherStatus } from '../../src/ops/status.js';
import { daemonEnv, runCli, waitFor } from '../helpers/cli.js';
import { migrateUpTo } from '../helpers/migrations.js';
import { bookingStreams, mirrorSnapshot, simulatorSnapshot, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** docs/operations.md, Recovery after a lost token: five 400s in a row for the same token. */
const LOST_AFTER = 5;
const LIST = /\/bookings$/;
const DAY = 86_400_000;

/** The booking-list requests of `propertyId` the simulator logged: what they sent, and its answer. */
function listRequests(harness: Harness, propertyId: string): { sent: 'token' | 'from' | 'none'; token: string | null; status: number }[] {
  return (harness.sim.stats.requestLog ?? [])
    .filter((e) => LIST.test(e.path) && e.propertyId === propertyId)
    .map((e) => {
      const q = new URLSearchParams(e.query ?? '');
      return { sent: q.get('continueToken') ? 'token' : q.get('lastModification') ? 'from' : 'none', token: q.get('continueToken'), status: e.status };
    });
}

/** The lastModification the first booking-list request of `propertyId` sent (a recovery's point). */
function firstLastModification(harness: Harness, propertyId: string): string | null {
  const first = (harness.sim.stats.requestLog ?? []).find((e) => LIST.test(e.path) && e.propertyId === propertyId);
  return new URLSearchParams(first?.query ?? '').get('lastModification');
}

const ONE_PROPERTY = [{ id: '500100', bookingCount: 30 }];
const TWO_PROPERTIES = [...ONE_PROPERTY, { id: '500200', bookingCount: 20 }];

/** A harness whose mirror is synced once: equal to the simulator, each property's list caught up with a token. */
async function synced(properties: { id: string; bookingCount: number }[], config?: Record<string, unknown>): Promise<Harness> {
  const harness = await startHarness({ sim: { properties }, ...(config ? { config } : {}) });
  await syncOnce(await harness.context());
  return harness;
}

/** One property's bookings in the mirror, and in the simulator. */
async function mirrorOf(harness: Harness, propertyId: string) {
  return (await mirrorSnapshot(harness)).filter((b) => b.key.startsWith(`${propertyId}/`));
}
function truthOf(harness: Harness, propertyId: string) {
  return simulatorSnapshot(harness.sim).filter((b) => b.key.startsWith(`${propertyId}/`));
}

async function listCursor(harness: Harness, propertyId: string): Promise<{ state: string; last_error: string | null; cursor: string | null }> {
  const rows = await harness.sql<{ state: string; last_error: string | null; cursor: string | null }>(
    "SELECT state, last_error, cursor FROM sync_cursors WHERE property_id = $1 AND stream = 'booking_summaries'",
    [propertyId],
  );
  return rows[0]!;
}

describe('a 400 to a stored continueToken', () => {
  it('is retried once among 200s, like a faulty request: nothing is lost, nothing is skipped', async () => {
    h = await synced(ONE_PROPERTY);
    const stored = (await listCursor(h, '500100')).cursor;
    h.sim.faults.continueTokenRejections.set('500100', 1);
    h.sim.mutate({ count: 5, newCount: 3 });
    h.sim.stats.requestLog = [];

    const result = await syncOnce(await h.context());
    expect(result.continueTokenLost).toEqual([]);
    expect(result.failed).toEqual([]);
    // The same token again after the 400, and the list went on from it.
    expect(listRequests(h, '500100').slice(0, 2)).toEqual([
      { sent: 'token', token: stored, status: 400 },
      { sent: 'token', token: stored, status: 200 },
    ]);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    expect((await listCursor(h, '500100')).state).toBe('active');
  });

  it('declares the token lost at the fifth 400 in a row, once the same list without the token is answered', async () => {
    h = await synced(TWO_PROPERTIES);
    const stored = (await listCursor(h, '500100')).cursor;
    h.sim.faults.continueTokenRejections.set('500100', Infinity);
    h.sim.mutate({ count: 6, newCount: 4 });
    h.sim.stats.requestLog = [];
    const ctx = await h.context();

    const result = await syncOnce(ctx);
    expect(result.continueTokenLost.map((e) => e.propertyId)).toEqual(['500100']);
    expect(result.continueTokenLost[0]!.message).toContain('staysync run --recover --property 500100');
    // Five times the same token, then once the list without it (answered 200), then nothing more.
    const sent = listRequests(h, '500100');
    expect(sent).toEqual([
      ...Array.from({ length: LOST_AFTER }, () => ({ sent: 'token', token: stored, status: 400 })),
      expect.objectContaining({ sent: 'from', status: 200 }),
    ]);
    const cursor = await listCursor(h, '500100');
    expect(cursor.state).toBe('needs_recover');
    expect(cursor.last_error).toMatch(/HTTP 400 .*5 times in a row/);
    expect(ctx.counters.toJSON()).toMatchObject({ continueTokenRejections: LOST_AFTER, continueTokensLost: 1 });
    // The other property went on: its changes are mirrored.
    expect(await mirrorOf(h, '500200')).toEqual(truthOf(h, '500200'));
  });

  it('is a faulty request, not a lost token, when the list is answered 400 without the token too', async () => {
    h = await synced(ONE_PROPERTY);
    h.sim.faults.propertyStatus.set('500100', { status: 400, scopes: ['bookingList'] });
    h.sim.stats.requestLog = [];

    const result = await syncOnce(await h.context());
    expect(result.continueTokenLost).toEqual([]);
    expect(result.failed.map((f) => f.propertyId)).toEqual(['500100']);
    expect(result.failed[0]!.reason).toMatch(/with and without its continueToken/);
    expect(listRequests(h, '500100').map((r) => r.sent)).toEqual([...Array.from({ length: LOST_AFTER }, () => 'token'), 'from']);
    expect(await listCursor(h, '500100')).toMatchObject({ state: 'failing' });
    expect((await listCursor(h, '500100')).cursor).not.toBeNull();
  });
});

describe('a lost token', () => {
  it("stops that property's booking list only: the daemon, the other properties and the details go on", async () => {
    h = await synced(TWO_PROPERTIES);
    h.sim.faults.continueTokenRejections.set('500100', Infinity);
    const ctx = await h.context();
    const stop = new AbortController();
    let ended = false;
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams }).run(stop.signal).finally(() => (ended = true));
    try {
      await waitFor('the token declared lost', async () => (await listCursor(h!, '500100')).state === 'needs_recover', 60_000);
      // Changes of the other property after the loss are mirrored by the same daemon.
      h.sim.mutate({ count: 4, newCount: 2, propertyId: '500200' });
      await waitFor(
        "the other property's changes mirrored",
        async () => JSON.stringify(await mirrorOf(h!, '500200')) === JSON.stringify(truthOf(h!, '500200')),
        30_000,
      );
      expect(ended).toBe(false);
      const status = await gatherStatus(ctx.db, ctx.config);
      expect(status.properties.find((p) => p.propertyId === '500100')).toMatchObject({
        state: 'needs_recover',
        recover: 'staysync run --recover --property 500100',
      });
      expect(status.properties.find((p) => p.propertyId === '500200')).toMatchObject({ state: 'active', recover: null });
    } finally {
      stop.abort();
    }
    const result = await running;
    expect(result.continueTokenLost.map((e) => e.propertyId)).toEqual(['500100']);
    expect(result.fatal).toBeUndefined();
  });

  it('is recovered with --recover --property, that property only, from its last modification minus two days', async () => {
    h = await synced(TWO_PROPERTIES);
    h.sim.invalidateContinueTokens();
    const lost = await syncOnce(await h.context());
    expect(lost.continueTokenLost.map((e) => e.propertyId).sort()).toEqual(['500100', '500200']);
    h.sim.mutate({ count: 8, newCount: 4 });
    const newest = async (id: string) => (await h!.sql<{ m: Date }>('SELECT max(modified_at) AS m FROM bookings WHERE property_id = $1', [id]))[0]!.m.getTime();
    const from = new Date((await newest('500100')) - 2 * DAY).toISOString().replace(/\.\d{3}Z$/, 'Z');
    h.sim.stats.requestLog = [];

    const result = await syncOnce(await h.context(), { recovery: { mode: 'auto', propertyIds: ['500100'] } });
    expect(result.continueTokenLost.map((e) => e.propertyId)).toEqual(['500200']);
    expect(listRequests(h, '500100')[0]).toEqual({ sent: 'from', token: null, status: 200 });
    expect(firstLastModification(h, '500100')).toBe(from);
    expect(listRequests(h, '500200')).toEqual([]);
    expect(await listCursor(h, '500100')).toMatchObject({ state: 'active' });
    expect(await listCursor(h, '500200')).toMatchObject({ state: 'needs_recover' });
    expect(await mirrorOf(h, '500100')).toEqual(truthOf(h, '500100'));
  });

  it('is recovered by itself with sync.autoRecover, from its last modification minus two days', async () => {
    h = await synced(ONE_PROPERTY, { sync: { autoRecover: true } });
    // Rejected five times (lost), then the recovered list's new tokens are answered.
    h.sim.faults.continueTokenRejections.set('500100', LOST_AFTER);
    h.sim.mutate({ count: 5, newCount: 3 });
    h.sim.stats.requestLog = [];

    const result = await syncOnce(await h.context());
    expect(result.continueTokenLost).toEqual([]);
    expect(result.failed).toEqual([]);
    const sent = listRequests(h, '500100');
    // Five rejections, the check without the token, then the recovery's first page from a time.
    expect(sent.slice(0, LOST_AFTER + 2).map((r) => `${r.sent} ${r.status}`)).toEqual([
      ...Array.from({ length: LOST_AFTER }, () => 'token 400'),
      'from 200',
      'from 200',
    ]);
    expect(h.logLines.some((l) => l.includes('token lost') && l.includes('Recovering it automatically (sync.autoRecover)'))).toBe(true);
    expect(await listCursor(h, '500100')).toMatchObject({ state: 'active' });
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('is recovered by itself at most once a sync.failingRecheckMs: a provider that refuses every token is not read again and again', async () => {
    h = await synced(ONE_PROPERTY, { sync: { autoRecover: true } });
    h.sim.faults.continueTokenRejections.set('500100', Infinity);
    h.sim.stats.requestLog = [];
    const ctx = await h.context();
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams }).run(stop.signal);
    try {
      await waitFor('the second loss', () => h!.logLines.find((l) => l.includes('It was recovered automatically less than 60 min ago')), 90_000);
      expect(ctx.counters.toJSON()).toMatchObject({ continueTokensLost: 2, continueTokensRecovered: 1 });
      expect(await listCursor(h, '500100')).toMatchObject({ state: 'needs_recover' });
      // Lost, recovered (one page from a time), lost again: then the daemon asks nothing more.
      const sent = listRequests(h, '500100').map((r) => `${r.sent} ${r.status}`);
      const lostOnce = [...Array.from({ length: LOST_AFTER }, () => 'token 400'), 'from 200'];
      expect(sent).toEqual([...lostOnce, 'from 200', ...lostOnce]);
      await new Promise((r) => setTimeout(r, 2_000));
      expect(listRequests(h, '500100')).toHaveLength(sent.length);
    } finally {
      stop.abort();
      await running;
    }
  });

  it('is also mirrored rows without a cursor: shown needs_recover, the others go on', async () => {
    h = await synced(TWO_PROPERTIES);
    await h.sql("DELETE FROM sync_cursors WHERE property_id = '500100'");
    h.sim.mutate({ count: 4, newCount: 2, propertyId: '500200' });
    const result = await syncOnce(await h.context());
    expect(result.continueTokenLost.map((e) => [e.propertyId, e.detail])).toEqual([['500100', expect.stringMatching(/continueToken is gone/)]]);
    expect(await listCursor(h, '500100')).toMatchObject({ state: 'needs_recover' });
    expect(await mirrorOf(h, '500200')).toEqual(truthOf(h, '500200'));
    // --recover=<time> restarts it from that time.
    h.sim.stats.requestLog = [];
    await syncOnce(await h.context(), { recovery: { mode: 'at', from: new Date('2020-01-01T00:00:00Z') } });
    expect(firstLastModification(h, '500100')).toBe('2020-01-01T00:00:00Z');
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('left by an earlier release (token_lost) is needs_recover after the upgrade, and its connection free for any replica', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 3 }] }, emptySchema: true });
    await migrateUpTo(h, '0024_loyalty_cards.sql');
    await h.sql(
      `INSERT INTO sync_cursors (property_id, stream, cursor, state, last_error, error_since) VALUES ` +
        `('500100', 'booking_summaries', 'kept-for-the-operator', 'token_lost', 'the provider rejected the stored continueToken (HTTP 400)', now())`,
    );
    await h.sql(`INSERT INTO sync_connections (connection, state, reason) VALUES ('default', 'token_lost', 'property 500100: token lost')`);

    const migrated = await runCli(['migrate'], daemonEnv(h));
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(await listCursor(h, '500100')).toEqual({
      state: 'needs_recover',
      last_error: 'the provider rejected the stored continueToken (HTTP 400)',
      cursor: 'kept-for-the-operator',
    });
    expect(await h.sql('SELECT state, reason FROM sync_connections')).toEqual([{ state: 'waiting', reason: null }]);
    const status = JSON.parse((await runCli(['status', '--json'], daemonEnv(h))).stdout) as { properties: { state: string; recover: string | null }[] };
    expect(status.properties).toEqual([expect.objectContaining({ state: 'needs_recover', recover: 'staysync run --recover --property 500100' })]);
  });
});
