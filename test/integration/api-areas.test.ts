/**
 * A hotel's API connection often has only some of the APIs (the Public APIs tab of the
 * extranet): here content, reference data and Read Reservation, no PMS and no PMS analytics.
 * The access token's api_accesses claim says so, and the simulator answers 403 to the areas
 * it does not list. Against the real CLI and real PostgreSQL:
 * - `sync --once` mirrors bookings and content and exits 0, sends no PMS request, and `status`
 *   and `/metrics` show the PMS and occupancy streams as not granted, not failing;
 * - the daemon starts them at the next access token once the hotel grants the PMS APIs.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** What the hotel ticked at first: no PMS, no PMS analytics, no integration storage. */
const WITHOUT_PMS = ['reservation_api', 'content', 'reference_data'];
const WITH_PMS = [...WITHOUT_PMS, 'pms', 'pms_analytics'];

const count = async (table: string): Promise<number> => Number((await h!.sql<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0]!.n);

describe('API areas the connection may not use', () => {
  it('are not failures: sync --once exits 0 with them shown as not granted, and the daemon starts them at the token after the grant', async () => {
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: WITHOUT_PMS }],
        // A few bookings (and as many PMS reservations): the areas and their states are the
        // subject; two properties show them per property.
        properties: [
          { id: '500100', bookingCount: 6 },
          { id: '500200', bookingCount: 4 },
        ],
        // Short-lived tokens (renewed after 2 s): the grant shows in the daemon within seconds.
        tokenTtlSeconds: 4,
      },
    });
    const sim = h.sim;
    const ids = sim.propertyIds();
    sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' } });

    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('bookings')).toBe(sim.bookings().length);
    expect(await count('properties')).toBe(ids.length);
    expect(await count('room_types')).toBeGreaterThan(0);
    expect(await count('pms_reservations')).toBe(0);
    // Nothing was asked of the PMS APIs: not even to learn that they are refused.
    const pmsRequests = (sim.stats.requestLog ?? []).filter((r) => r.path.startsWith('/api/pms'));
    expect(pmsRequests).toEqual([]);
    const warned = logRecords(once.stdout + once.stderr).filter((r) => r.level === 'warn' && / not granted to this API connection/.test(r.msg));
    expect(new Set(warned.map((r) => r.msg.split(' not granted')[0]))).toEqual(new Set(['PMS API', 'PMS Analytics API', 'PMS Integration Storage API']));
    expect(warned[0]!.msg).toContain('Property settings > API connections > the connection > Public APIs tab');
    expect(logRecords(once.stdout + once.stderr).filter((r) => r.level === 'error')).toEqual([]);

    const status = await runCli(['status'], env);
    expect(status.code).toBe(0);
    const pmsRows = status.stdout.split('\n').filter((l) => ids.some((id) => l.startsWith(`${id} `) || l.startsWith(`${id}  `)) && l.includes('not granted'));
    expect(pmsRows, status.stdout).toHaveLength(ids.length);
    for (const row of pmsRows) expect(row.match(/not granted/g)).toHaveLength(2); // the PMS search and the occupancy
    expect(status.stdout).not.toMatch(/FAILING/);
    expect(status.stdout).toContain('Not granted is not a failure');
    expect(status.stdout).toMatch(
      /property 500100: PMS reservations not granted: the API connection is not granted the PMS API \(api_accesses "pms", an assumed name\)/,
    );
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as {
      pms: { state: string; occupancyState: string }[];
      properties: { state: string }[];
    };
    expect(json.pms.map((p) => [p.state, p.occupancyState])).toEqual(ids.map(() => ['not_granted', 'not_granted']));
    expect(json.properties.map((p) => p.state)).toEqual(ids.map(() => 'active'));

    // The daemon: the same streams wait, shown as not granted; the hotel ticks the PMS APIs.
    const port = await freePort();
    const { child, done, output } = startCli(['run'], daemonEnv(h, { allStreams: true, config: { ops: { port } }, env: { STAYSYNC_LOG_LEVEL: 'info' } }));
    try {
      const scrape = () => opsGet(port, '/metrics').then((r) => r.body);
      const before = await waitFor('metrics of the areas', async () => {
        const m = await scrape();
        return metricValue(m, 'staysync_api_area_granted{area="pms"}') === 0 ? m : undefined;
      });
      for (const id of ids) {
        expect(metricValue(before, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="not_granted"}`)).toBe(1);
        expect(metricValue(before, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="failing"}`)).toBe(0);
        expect(metricValue(before, `staysync_property_state{property_id="${id}",stream="daily_occupancy",state="not_granted"}`)).toBe(1);
      }
      expect(metricValue(before, 'staysync_api_area_granted{area="read_reservation"}')).toBe(1);
      expect(metricValue(before, 'staysync_api_area_granted{area="pms_analytics"}')).toBe(0);
      expect((sim.stats.requestLog ?? []).filter((r) => r.path.startsWith('/api/pms'))).toEqual([]);

      const grantedAt = Date.now();
      sim.setApiAccesses(SIM_CLIENT_ID, WITH_PMS);
      const expected = ids.reduce((n, id) => n + sim.pmsReservations(id).length, 0);
      await waitFor('the PMS reservations mirrored after the grant', async () => (await count('pms_reservations')) === expected, 60_000);
      await waitFor('the occupancy refreshed after the grant', async () => (await count('daily_occupancy')) > 0, 30_000);
      const after = await waitFor('the streams active in /metrics', async () => {
        const m = await scrape();
        return ids.every((id) => metricValue(m, `staysync_property_state{property_id="${id}",stream="daily_occupancy",state="active"}`) === 1) ? m : undefined;
      });
      expect(metricValue(after, 'staysync_api_area_granted{area="pms"}')).toBe(1);
      for (const id of ids) expect(metricValue(after, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="active"}`)).toBe(1);
      // Started by the next token, not by a schedule: within a token's lifetime of the grant.
      const firstPms = (sim.stats.requestLog ?? []).find((r) => r.path.startsWith('/api/pms') && r.t >= grantedAt);
      expect(firstPms!.t - grantedAt).toBeLessThan(10_000);
      expect((sim.stats.requestLog ?? []).filter((r) => r.path.startsWith('/api/pms') && r.status === 403)).toEqual([]);
      const statusAfter = await runCli(['status', '--json'], env);
      expect((JSON.parse(statusAfter.stdout) as { pms: { state: string }[] }).pms.map((p) => p.state)).toEqual(ids.map(() => 'active'));
    } finally {
      child.kill('SIGTERM');
      const end = await done;
      expect(end.code, output()).toBe(0);
    }
  }, 120_000);

  it('a 403 of the PMS API, with a token that does not say: that stream is not granted (not failing) until the next token, then runs', async () => {
    h = await startHarness({
      sim: {
        // Tokens without the claim: every area looks granted, and only the 403 tells.
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: null }],
        // A few bookings each: one property granted, one refused, is what this needs.
        properties: [
          { id: '500100', bookingCount: 5 },
          { id: '500200', bookingCount: 5 },
        ],
        tokenTtlSeconds: 4,
      },
    });
    const sim = h.sim;
    // The PMS and PMS analytics APIs of 500200 answer 403 (so do its content rules, kept as they were).
    sim.faults.propertyStatus.set('500200', { status: 403, scopes: ['standard'] });
    sim.stats.requestLog = [];
    const port = await freePort();
    const { child, done, output } = startCli(['run'], daemonEnv(h, { allStreams: true, config: { ops: { port } }, env: { STAYSYNC_LOG_LEVEL: 'info' } }));
    try {
      const scrape = () => opsGet(port, '/metrics').then((r) => r.body);
      const pmsOf = async (id: string) =>
        Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM pms_reservations WHERE property_id = $1', [id]))[0]!.n);
      await waitFor('500100 mirrored from the PMS', async () => (await pmsOf('500100')) === sim.pmsReservations('500100').length, 60_000);
      const before = await waitFor('500200 not granted in /metrics', async () => {
        const m = await scrape();
        return metricValue(m, 'staysync_property_state{property_id="500200",stream="pms_reservations",state="not_granted"}') === 1 ? m : undefined;
      });
      expect(metricValue(before, 'staysync_property_state{property_id="500200",stream="pms_reservations",state="failing"}')).toBe(0);
      expect(metricValue(before, 'staysync_property_state{property_id="500100",stream="pms_reservations",state="active"}')).toBe(1);
      expect(metricValue(before, 'staysync_api_area_granted{area="pms"}')).toBe(1);
      const said = logRecords(output()).filter((r) => r.msg.startsWith('property 500200: PMS reservations not granted: '));
      expect(said).toHaveLength(1);
      expect(said[0]!.level).toBe('warn');
      expect(said[0]!.msg).toContain('tried again at the next access token');
      // Asked again at the next token (renewed every 2 s here, admitted by the token gate at most
      // every 5 s), not in a loop: at most about one 403 per token, not hundreds. (Counted against
      // the tokens issued, not a fixed number: on a loaded machine the time before this point,
      // and so the tokens, vary.)
      const tokens = () => (sim.stats.requestLog ?? []).filter((r) => r.path === '/auth/token' && r.status === 200).length;
      const searches403 = () =>
        (sim.stats.requestLog ?? []).filter((r) => r.status === 403 && r.path.endsWith('/properties/500200/reservations/search')).length;
      const tokensBefore = tokens();
      const refusedBefore = searches403();
      expect(refusedBefore).toBeGreaterThanOrEqual(1);
      await waitFor('the next access token, and the search asked again with it', () => tokens() > tokensBefore && searches403() > refusedBefore, 30_000);
      expect(searches403()).toBeLessThanOrEqual(tokens() + 1);

      sim.faults.propertyStatus.clear();
      await waitFor('500200 mirrored from the PMS after the 403s end', async () => (await pmsOf('500200')) === sim.pmsReservations('500200').length, 30_000);
      await waitFor(
        '500200 active in /metrics',
        async () => metricValue(await scrape(), 'staysync_property_state{property_id="500200",stream="pms_reservations",state="active"}') === 1,
      );
      expect(logRecords(output()).filter((r) => r.level === 'error')).toEqual([]);
    } finally {
      child.kill('SIGTERM');
      const end = await done;
      expect(end.code, output()).toBe(0);
    }
  }, 120_000);

  it('a connection with the content API only: sync --once mirrors the content, asks nothing of the Read Reservation API and exits 0', async () => {
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: ['content'] }],
        properties: [{ id: '500100', bookingCount: 3 }],
      },
    });
    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' } });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('properties')).toBe(1);
    expect(await count('bookings')).toBe(0);
    const asked = new Set((h.sim.stats.requestLog ?? []).map((r) => r.path.split('/').slice(0, 3).join('/')));
    expect([...asked].sort((a, b) => a.localeCompare(b))).toEqual(['/api/content', '/auth/token']);
    const warned = logRecords(once.stdout).filter((r) => r.level === 'warn' && / not granted to this API connection/.test(r.msg));
    expect(warned.map((r) => r.msg.split(':')[0] ?? '').sort((a, b) => a.localeCompare(b))).toEqual([
      'PMS Analytics API not granted to this API connection',
      'PMS API not granted to this API connection',
      'PMS Integration Storage API not granted to this API connection',
      'Read Reservation API not granted to this API connection',
    ]);
    // The reference lists of the Reference Data API are left as they were, said once.
    expect(logRecords(once.stdout).filter((r) => r.msg.startsWith('reference lists of the Reference Data API not refreshed'))).toHaveLength(1);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { properties: { state: string; lastError: string }[] };
    expect(json.properties).toMatchObject([
      { state: 'not_granted', lastError: expect.stringContaining('Read Reservation API (api_accesses "reservation_api")') },
    ]);
  });

  it('a claim value not known here: the APIs of assumed names are tried, and their 403s are not granted, not failures', async () => {
    // As if the provider named the PMS API otherwise: the daemon cannot tell, so it asks.
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: ['reservation_api', 'content', 'webpms_api'] }],
        // Three bookings: the refused areas are the subject, not the volume.
        properties: [{ id: '500100', bookingCount: 3 }],
      },
    });
    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' } });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('bookings')).toBe(3);
    const records = logRecords(once.stdout);
    expect(records.find((r) => r.msg.startsWith('the access token grants'))?.msg).toContain('api_accesses values not known here: webpms_api');
    // Each was asked and answered 403: the reference lists once (then left alone), the PMS search once.
    const refused = (h.sim.stats.requestLog ?? []).filter((r) => r.status === 403).map((r) => r.path);
    expect(refused.filter((p) => p.startsWith('/api/reference-data/'))).toHaveLength(1);
    expect(refused.filter((p) => p.endsWith('/reservations/search'))).toHaveLength(1);
    expect(records.filter((r) => r.msg.startsWith('reference lists of the Reference Data API not refreshed: the provider answered 403'))).toHaveLength(1);
    expect(records.filter((r) => r.level === 'error')).toEqual([]);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { pms: { state: string; occupancyState: string; lastError: string }[] };
    expect(json.pms).toMatchObject([{ state: 'not_granted', occupancyState: 'not_granted', lastError: expect.stringMatching(/HTTP 403/) }]);
  });
});
