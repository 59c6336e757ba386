/**
 * The pure parts of the PMS mirror: windows of the occupancy refresh, property-local time,
 * what an event names, personal data removal, the webhook settings, and the agent commission.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, isLoopbackHost, loadConfig } from '../../src/config/config.js';
import { authorized } from '../../src/ops/webhooks.js';
import { eventTarget } from '../../src/sync/streams/events.js';
import { keptPayload, keptPerson } from '../../src/mapping/personal-data.js';
import { pmsReservationToRows } from '../../src/mapping/pms.js';
import { parseReservationResponse } from '../../src/provider/schemas/pms.js';
import { occupancyWindows } from '../../src/sync/streams/pms-refreshes.js';
import { addDays, daysBetween, localDate, localMinute } from '../../src/util/local-time.js';

describe('occupancy windows', () => {
  it('cover the horizon in windows of at most 31 days, without gaps or overlaps', () => {
    const w = occupancyWindows('2025-01-01', '2025-03-15');
    expect(w).toEqual([
      { from: '2025-01-01', to: '2025-01-31' },
      { from: '2025-02-01', to: '2025-03-03' },
      { from: '2025-03-04', to: '2025-03-15' },
    ]);
    const year = occupancyWindows('2024-11-23', '2026-11-23');
    expect(year[0]!.from).toBe('2024-11-23');
    expect(year.at(-1)!.to).toBe('2026-11-23');
    for (let i = 0; i < year.length; i++) {
      expect(daysBetween(year[i]!.from, year[i]!.to) + 1).toBeLessThanOrEqual(31);
      if (i > 0) expect(year[i]!.from).toBe(addDays(year[i - 1]!.to, 1));
    }
    expect(occupancyWindows('2025-01-01', '2025-01-01')).toEqual([{ from: '2025-01-01', to: '2025-01-01' }]);
  });
});

describe('property-local time', () => {
  it('formats an instant as the property sees it, across offsets and clock changes', () => {
    const t = Date.parse('2024-03-31T00:59:30Z');
    expect(localMinute(t, 'UTC')).toBe('2024-03-31T00:59');
    expect(localMinute(t, 'Europe/Berlin')).toBe('2024-03-31T01:59');
    // Berlin springs forward at 01:00 UTC: one minute later it is 03:00 local.
    expect(localMinute(t + 60_000, 'Europe/Berlin')).toBe('2024-03-31T03:00');
    expect(localMinute(t, 'Europe/Moscow')).toBe('2024-03-31T03:59');
    expect(localDate(Date.parse('2024-03-30T22:30:00Z'), 'Asia/Bangkok')).toBe('2024-03-31');
  });
});

describe('what an event names', () => {
  it('reads the documented PascalCase payloads and tolerates other spellings', () => {
    expect(eventTarget('webpms:check_in', { BookingNumber: '2026b319-500360-421894386', PropertyId: '500360' })).toEqual({
      kind: 'pmsReservation',
      propertyId: '500360',
      key: '2026b319-500360-421894386',
    });
    expect(eventTarget('pms_integration_storage:booking_changed', { bookingId: 606541, propertyId: '2490' })).toEqual({
      kind: 'storageBooking',
      propertyId: '2490',
      key: '606541',
    });
    expect(eventTarget('pms_integration_storage:inventory_block_changed', { InventoryBlockId: '12345', PropertyId: '2490' })).toMatchObject({
      kind: 'inventoryBlock',
      key: '12345',
    });
    expect(eventTarget('pms_integration_storage:inventory_changed', { PropertyId: '2490' })).toEqual({
      kind: 'roomTypeInventory',
      propertyId: '2490',
      key: null,
    });
    expect(eventTarget('webpms:create_booking', null)).toEqual({ kind: 'pmsReservation', propertyId: null, key: null });
  });

  it('reads the storage events as documented: the id to fetch, and no property', () => {
    expect(eventTarget('pms_integration_storage:booking_changed', { bookingId: '606541' })).toEqual({
      kind: 'storageBooking',
      propertyId: null,
      key: '606541',
    });
    expect(eventTarget('pms_integration_storage:inventory_block_changed', { inventoryBlockId: '12345' })).toEqual({
      kind: 'inventoryBlock',
      propertyId: null,
      key: '12345',
    });
    expect(eventTarget('pms_integration_storage:inventory_changed', {})).toEqual({ kind: 'roomTypeInventory', propertyId: null, key: null });
  });

  it('takes no id that is not one: too long, empty, with spaces or control characters', () => {
    for (const bad of ['x'.repeat(101), '', 'a b', 'a\u0000b', '../../x y'])
      expect(eventTarget('pms_integration_storage:booking_changed', { bookingId: bad, propertyId: bad })).toEqual({
        kind: 'storageBooking',
        propertyId: null,
        key: null,
      });
    expect(eventTarget('pms_integration_storage:booking_changed', { bookingId: 'x'.repeat(100) }).key).toBe('x'.repeat(100));
  });
});

describe('personal data', () => {
  it("is removed from a person and from a reservation's customer, names kept, input untouched", () => {
    const customer = {
      pmsPersonId: '1',
      personName: { firstName: 'Ann', lastName: 'Lee' },
      emails: [{ address: 'a@b.c' }],
      phones: [],
      birthDate: '1990-01-01',
      citizenship: 'GBR',
      gender: 'Female',
    };
    expect(keptPerson(customer, false)).toEqual({ pmsPersonId: '1', personName: { firstName: 'Ann', lastName: 'Lee' }, gender: 'Female' });
    const reservation = { number: 'N', customer, roomStays: [], customerComment: 'call me on +44 20' };
    expect(keptPayload(reservation, false)).toEqual({
      number: 'N',
      customer: { pmsPersonId: '1', personName: { firstName: 'Ann', lastName: 'Lee' }, gender: 'Female' },
      roomStays: [],
    });
    expect(customer.emails).toHaveLength(1);
    expect(keptPayload(reservation, true)).toEqual(reservation);
  });

  it('keeps of a person only the allowed fields, personal data on or off: a field the provider adds is not stored', () => {
    const booking = {
      booking: {
        number: 'B',
        customer: { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com', loyaltyTier: 'Gold' },
        roomStays: [{ guests: [{ firstName: 'Bo', passportNumber: 'X123' }, 'Bo Lee'], guestCount: { adultCount: 2 } }],
        guaranteeInfo: { loyalty: { cards: [{ cardNumber: '1103', loyaltySystemId: 'TL' }] } },
      },
    };
    for (const personalData of [false, true]) {
      const kept = keptPayload(booking, personalData) as typeof booking;
      expect(kept.booking.customer).toEqual({ firstName: 'Ann', lastName: 'Lee' });
      expect(kept.booking.roomStays[0]).toEqual({ guests: [{ firstName: 'Bo' }, null], guestCount: { adultCount: 2 } });
      expect(kept.booking.guaranteeInfo.loyalty.cards[0]).toEqual(personalData ? { cardNumber: '1103', loyaltySystemId: 'TL' } : { loyaltySystemId: 'TL' });
    }
  });
});

describe('webhook settings', () => {
  it('need the key of apiKey and both credentials of basic, naming the variables', () => {
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey' } })).toThrow(ConfigError);
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey' } })).toThrow(/STAYSYNC_WEBHOOK_API_KEY/);
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'u' } })).toThrow(/STAYSYNC_WEBHOOK_BASIC_PASSWORD/);
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'token' } })).toThrow(/webhooks\.auth \(from STAYSYNC_WEBHOOK_AUTH\)/);
    expect(loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k' } }).webhooks).toMatchObject({ auth: 'apiKey', apiKey: 'k' });
  });

  it('refuse credentials of a mode other than the one in force, naming both settings', () => {
    // A key given while auth stays none would be ignored: every request accepted.
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_API_KEY: 'k' } })).toThrow(
      /webhooks\.apiKey \(STAYSYNC_WEBHOOK_API_KEY\) is set, but webhooks\.auth \(STAYSYNC_WEBHOOK_AUTH\) is none/,
    );
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'p' } })).toThrow(
      /basicUser\/basicPassword .* are set, but webhooks\.auth \(STAYSYNC_WEBHOOK_AUTH\) is apiKey/,
    );
    expect(() =>
      loadConfig({
        env: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'u', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'p', STAYSYNC_WEBHOOK_API_KEY: 'k' },
      }),
    ).toThrow(/webhooks\.apiKey .* is set, but webhooks\.auth .* is basic/);
    expect(() =>
      loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k', STAYSYNC_WEBHOOK_ALLOW_UNAUTHENTICATED: 'true' } }),
    ).toThrow(/allowUnauthenticated is true, but webhooks\.auth/);
    expect(() => loadConfig({ env: { STAYSYNC_WEBHOOKS_ENABLED: 'yes' } })).toThrow(/STAYSYNC_WEBHOOKS_ENABLED: expected true or false/);
  });

  it('are off by default, on a port of their own', () => {
    const w = loadConfig({ env: {} }).webhooks;
    expect(w).toMatchObject({ enabled: false, auth: 'none', allowUnauthenticated: false, port: 9465 });
    expect(w.port).not.toBe(loadConfig({ env: {} }).ops.port);
  });

  it('compare credentials in constant time over digests: a key of another length is refused like any other', () => {
    const config = loadConfig({ env: { STAYSYNC_WEBHOOK_AUTH: 'apiKey', STAYSYNC_WEBHOOK_API_KEY: 'k3y' } }).webhooks;
    expect(authorized(config, { 'api-key': 'k3y' })).toBe(true);
    for (const key of ['', 'k3', 'k3yy', 'K3Y', 'x'.repeat(10_000)]) expect(authorized(config, { 'api-key': key }), key).toBe(false);
    expect(authorized(config, {})).toBe(false);
    const basic = loadConfig({
      env: { STAYSYNC_WEBHOOK_AUTH: 'basic', STAYSYNC_WEBHOOK_BASIC_USER: 'exely', STAYSYNC_WEBHOOK_BASIC_PASSWORD: 'pa:55' },
    }).webhooks;
    const header = (s: string) => ({ authorization: `Basic ${Buffer.from(s).toString('base64')}` });
    expect(authorized(basic, header('exely:pa:55'))).toBe(true);
    for (const s of ['exely:pa:5', 'exel:pa:55', ':exely', 'exelypa:55', '']) expect(authorized(basic, header(s)), s).toBe(false);
    expect(authorized(basic, { authorization: `Basic ${'A'.repeat(5000)}` })).toBe(false);
  });
});

describe('provider URLs', () => {
  it('must be https, except to a loopback address (the simulator)', () => {
    expect(() => loadConfig({ env: { STAYSYNC_PROVIDER_URL: 'http://connect.example.net' } })).toThrow(
      /provider\.url \(from STAYSYNC_PROVIDER_URL\): expected an https:\/\/ URL/,
    );
    expect(() => loadConfig({ env: { STAYSYNC_REFERENCE_DATA_URL: 'http://10.0.0.1:8080' } })).toThrow(/provider\.referenceDataUrl/);
    for (const url of ['http://127.0.0.1:8080', 'http://localhost:1', 'http://[::1]:9', 'https://connect.example.net']) {
      expect(loadConfig({ env: { STAYSYNC_PROVIDER_URL: url } }).provider.url, url).toBe(url);
    }
    expect(isLoopbackHost('127.8.0.1')).toBe(true);
    expect(isLoopbackHost('0.0.0.0')).toBe(false);
    expect(isLoopbackHost('127.example.net')).toBe(false);
  });
});

describe('the agent commission', () => {
  const reservation = (agentCommission: unknown) => ({
    reservation: {
      number: 'R1',
      customerLanguageCode: 'en',
      currencyCode: 'EUR',
      creationSource: { id: '1', name: 'Channel' },
      reservationStatus: 'Confirmed',
      roomStays: [],
      agentCommission,
    },
  });
  const rowOf = (agentCommission: unknown) => {
    const body = reservation(agentCommission);
    const parsed = parseReservationResponse(body);
    if (!parsed.ok) return parsed.reason;
    const r = pmsReservationToRows('500100', parsed.value, body.reservation, {
      personalData: false,
      pseudonymKey: undefined,
      fetchedAt: new Date(0),
    }).reservation;
    return [r.agent_commission_amount, r.agent_commission_percent, r.agent_commission_source, r.agent_commission_discount, r.agent_commission_currency];
  };

  it('is typed whole: amount, percent, who calculated it (a value the document does not list kept as sent), discount, currency', () => {
    expect(
      rowOf({ percent: 12.5, calculationSource: 'Pms', amount: { value: 25, currencyCode: 'EUR' }, discount: { value: 2.5, currencyCode: 'EUR' } }),
    ).toEqual(['25', '12.5', 'Pms', '2.5', 'EUR']);
    expect(rowOf({ percent: null, calculationSource: 'Gds', amount: { value: 10 }, discount: null })).toEqual(['10', null, 'Gds', null, null]);
    expect(rowOf(null)).toEqual([null, null, null, null, null]);
  });

  it('refuses a commission of the wrong shape with a reason (the reservation is quarantined, not half written)', () => {
    expect(rowOf({ calculationSource: 7, amount: { value: 10 } })).toMatch(/agentCommission/);
    expect(rowOf({ calculationSource: 'Ota', amount: { value: 'ten' } })).toMatch(/agentCommission/);
  });
});
