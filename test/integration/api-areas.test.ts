/**
 * A hotel's API connection often has only some of the APIs (the Public APIs tab of the
 * extranet): here content, reference data and Read Reservation, no PMS and no PMS analytics.
 * The access token's api_accesses claim names what it may use; the documents show two of its
 * values (`reservation_api`, `content`), and the simulator names the other areas its own way.
 * A documented area the claim does not name is not granted; an area whose name the daemon
 * only assumes is tried, and a 403 decides, per method. Against the real CLI and real PostgreSQL:
 * - `sync --once` mirrors bookings and content and exits 0; the PMS is asked once per property
 *   and method, and `status` and `/metrics` show those streams as not granted, not failing;
 * - the daemon starts them at the next access token once the hotel grants the PMS APIs;
 * - a claim that names only the documented APIs does not keep the others from being mirrored;
 * - a 403 of one reference list leaves the other lists mirrored.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, freePort, logRecords, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { SIM_CLIENT_ID, SIM_CLIENT_SECRET, startHarness, type Harness } from '../helpers/harness.js';
import { simulatorClaims } from '../../tools/simulator/index.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** What the hotel ticked at first: no PMS, no PMS analytics, no integration storage. */
const WITHOUT_PMS = ['reservation_api', 'content', simulatorClaims.referenceData];
const WITH_PMS = [...WITHOUT_PMS, simulatorClaims.pms, simulatorClaims.pmsAnalytics];

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
    // The PMS was tried, since the claim's name for it is not documented: its search once per
    // property, answered 403, and nothing else of it twice.
    const pmsRequests = (sim.stats.requestLog ?? []).filter((r) => r.path.startsWith('/api/pms'));
    expect(pmsRequests.every((r) => r.status === 403)).toBe(true);
    expect(pmsRequests.filter((r) => r.path.endsWith('/reservations/search')).map((r) => r.propertyId)).toEqual(expect.arrayContaining(ids));
    expect(pmsRequests.filter((r) => r.path.endsWith('/reservations/search'))).toHaveLength(ids.length);
    const records = logRecords(once.stdout + once.stderr);
    const refused = records.filter((r) => r.level === 'warn' && /^property \d+: PMS reservations not granted: /.test(r.msg));
    expect(refused).toHaveLength(ids.length);
    expect(refused[0]!.msg).toContain('grant it in the extranet, Property settings > API connections > Public APIs');
    expect(records.filter((r) => r.level === 'error')).toEqual([]);

    const status = await runCli(['status'], env);
    expect(status.code).toBe(0);
    const pmsRows = status.stdout.split('\n').filter((l) => ids.some((id) => l.startsWith(`${id} `) || l.startsWith(`${id}  `)) && l.includes('not granted'));
    expect(pmsRows, status.stdout).toHaveLength(ids.length);
    for (const row of pmsRows) expect(row.match(/not granted/g)).toHaveLength(2); // the PMS search and the occupancy
    expect(status.stdout).not.toMatch(/FAILING/);
    expect(status.stdout).toContain('Not granted is not a failure');
    expect(status.stdout).toMatch(/property 500100: PMS reservations not granted: .*HTTP 403.*no access to the PMS API/);
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
      const before = await waitFor('the PMS not granted in /metrics', async () => {
        const m = await scrape();
        // The connection's own gauge too: the property states alone may still be those sync --once left.
        const refused = ids.every((id) => metricValue(m, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="not_granted"}`) === 1);
        return refused && metricValue(m, 'staysync_api_area_granted{area="read_reservation"}') === 1 ? m : undefined;
      });
      for (const id of ids) {
        expect(metricValue(before, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="failing"}`)).toBe(0);
        expect(metricValue(before, `staysync_property_state{property_id="${id}",stream="daily_occupancy",state="not_granted"}`)).toBe(1);
      }
      expect(metricValue(before, 'staysync_api_area_granted{area="read_reservation"}')).toBe(1);
      // Tried: its name in the claim is not documented.
      expect(metricValue(before, 'staysync_api_area_granted{area="pms"}')).toBe(1);

      const grantedAt = Date.now();
      sim.setApiAccesses(SIM_CLIENT_ID, WITH_PMS);
      const expected = ids.reduce((n, id) => n + sim.pmsReservations(id).length, 0);
      await waitFor('the PMS reservations mirrored after the grant', async () => (await count('pms_reservations')) === expected, 60_000);
      await waitFor('the occupancy refreshed after the grant', async () => (await count('daily_occupancy')) > 0, 30_000);
      const after = await waitFor('the streams active in /metrics', async () => {
        const m = await scrape();
        return ids.every((id) => metricValue(m, `staysync_property_state{property_id="${id}",stream="daily_occupancy",state="active"}`) === 1) ? m : undefined;
      });
      for (const id of ids) expect(metricValue(after, `staysync_property_state{property_id="${id}",stream="pms_reservations",state="active"}`)).toBe(1);
      // Started by the next token, not by a schedule: within a token's lifetime of the grant.
      const firstPms = (sim.stats.requestLog ?? []).find((r) => r.path.startsWith('/api/pms') && r.status === 200 && r.t >= grantedAt);
      expect(firstPms!.t - grantedAt).toBeLessThan(10_000);
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
    // The claim does not name reservation_api, a documented value: the Read Reservation API is not asked.
    const asked = (h.sim.stats.requestLog ?? []).filter((r) => r.path.startsWith('/api/'));
    expect(asked.filter((r) => r.path.startsWith('/api/read-reservation/'))).toEqual([]);
    // The areas of assumed names were tried, and answered 403.
    expect(asked.filter((r) => !r.path.startsWith('/api/content/')).every((r) => r.status === 403)).toBe(true);
    const records = logRecords(once.stdout);
    const warned = records.filter((r) => r.level === 'warn' && / not granted to this API connection/.test(r.msg));
    expect(warned.map((r) => r.msg.split(':')[0] ?? '')).toEqual(['Read Reservation API not granted to this API connection']);
    // Each reference list of the Reference Data API is left as it was, said once each.
    expect(records.filter((r) => /^reference list \w+ not refreshed: .*HTTP 403/.test(r.msg)).map((r) => r.msg.split(' ')[2])).toEqual([
      'paymentMethods',
      'propertyAmenityTypes',
      'propertyKinds',
    ]);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { properties: { state: string; lastError: string }[] };
    expect(json.properties).toMatchObject([
      { state: 'not_granted', lastError: expect.stringContaining('Read Reservation API (api_accesses "reservation_api")') },
    ]);
  });

  it('a claim value not known here is said once; the APIs of assumed names are tried, and their 403s are not granted, not failures', async () => {
    // As if the provider named an API otherwise: the daemon cannot tell which, so it asks.
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, apiAccesses: ['reservation_api', 'content', 'webpms_api'] }],
        // Three bookings: the refused areas are the subject, not the volume.
        properties: [{ id: '500100', bookingCount: 3 }],
        tokenTtlSeconds: 4,
      },
    });
    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' } });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('bookings')).toBe(3);
    const records = logRecords(once.stdout);
    const unknown = records.filter((r) => r.msg.startsWith("the access token's api_accesses holds values staysync does not know"));
    expect(unknown).toHaveLength(1);
    expect(unknown[0]!.msg).toContain('webpms_api');
    // Each was asked and answered 403: every reference list once, the PMS search once.
    const refused = (h.sim.stats.requestLog ?? []).filter((r) => r.status === 403).map((r) => r.path);
    expect(refused.filter((p) => p.startsWith('/api/reference-data/'))).toHaveLength(3);
    expect(refused.filter((p) => p.endsWith('/reservations/search'))).toHaveLength(1);
    expect(records.filter((r) => r.level === 'error')).toEqual([]);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { pms: { state: string; occupancyState: string; lastError: string }[] };
    expect(json.pms).toMatchObject([{ state: 'not_granted', occupancyState: 'not_granted', lastError: expect.stringMatching(/HTTP 403/) }]);
  });

  it('a claim that names only the documented APIs: the others are tried and mirrored', async () => {
    // The claim says reservation_api and content, as the documents' sample; the connection may use
    // every API. A daemon that believed the claim alone mirrored no PMS, no occupancy, no lists.
    h = await startHarness({
      sim: {
        clients: [{ clientId: SIM_CLIENT_ID, clientSecret: SIM_CLIENT_SECRET, claim: ['reservation_api', 'content'] }],
        properties: [{ id: '500100', bookingCount: 4 }],
      },
    });
    const env = daemonEnv(h, { allStreams: true, env: { STAYSYNC_LOG_LEVEL: 'info' } });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('pms_reservations')).toBe(h.sim.pmsReservations('500100').length);
    expect(await count('daily_occupancy')).toBeGreaterThan(0);
    expect(await count('payment_methods')).toBeGreaterThan(0);
    expect(await count('property_kinds')).toBeGreaterThan(0);
    const records = logRecords(once.stdout);
    expect(records.filter((r) => / not granted/.test(r.msg))).toEqual([]);
    const said = records.find((r) => r.msg.startsWith('the access token grants'));
    expect(said?.msg).toContain('tried although the claim does not name them: Reference Data API, PMS API, PMS Analytics API, PMS Integration Storage API');
  });

  it('a 403 of one reference list leaves the other lists mirrored', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 2 }] } });
    // "No access to the method": this list alone.
    h.sim.faults.pathStatus = (path) => (path === '/api/reference-data/payment-methods' ? 403 : undefined);
    const once = await runCli(['sync', '--once'], daemonEnv(h, { env: { STAYSYNC_LOG_LEVEL: 'info' } }));
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(await count('payment_methods')).toBe(0);
    expect(await count('property_amenity_types')).toBeGreaterThan(0);
    expect(await count('property_kinds')).toBeGreaterThan(0);
    const said = logRecords(once.stdout).filter((r) => r.msg.startsWith('reference list '));
    expect(said.map((r) => [r.level, r.msg.split(':')[0]])).toEqual([['warn', 'reference list paymentMethods not refreshed']]);
  });
});
