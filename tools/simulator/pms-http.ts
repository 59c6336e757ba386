/**
 * The simulator's PMS API, PMS Analytics API and PMS Integration Storage API operations:
 * parameter checks, paging and the response envelopes. The data comes from PmsModel.
 *
 * The PMS and analytics envelopes carry `warnings` and `errors` (`{code, message}`) on every
 * answer, errors included; the integration storage answers errors as `{errors}` only. The one
 * PMS error code known from the provider is "11" (incorrect dates format), used here for bad
 * dates; the other codes are the simulator's own. Clients should treat codes as opaque.
 */
import { dayNumber, wallClockMs } from './local-time.js';
import type { PmsModel, PmsSearchPosition, PmsSearchQuery } from './pms.js';

export interface HttpReply {
  status: number;
  body?: unknown;
}

const MAX_PAGE = 100;
const MAX_WINDOW_MS = 365 * 86_400_000;
const MAX_OCCUPANCY_DAYS = 31;
const LANGUAGES = new Set(['en', 'ru', 'bg', 'cs', 'fr', 'id', 'ka', 'km', 'ko', 'pl', 'th', 'tr', 'uk', 'uz', 'vi']);
const LOCAL_MINUTE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
export const DATE_FORMAT_CODE = '11';

/** The PMS (and PMS Analytics) envelope around a body. */
export function pmsEnvelope(body: Record<string, unknown>): Record<string, unknown> {
  return { warnings: [], errors: [], ...body };
}

export function pmsError(status: number, code: string, message: string): HttpReply {
  return { status, body: { warnings: [], errors: [{ code, message }] } };
}

function storageError(status: number, code: string, message: string): HttpReply {
  return { status, body: { errors: [{ code, message }] } };
}

/** What a reservation search page token holds: the query and the position after the page. */
interface SearchToken {
  kind: 'reservations';
  propertyId: string;
  query: PmsSearchQuery;
  size: number;
  after: PmsSearchPosition;
}

interface RoomsToken {
  kind: 'rooms';
  propertyId: string;
  roomTypeId: string | null;
  size: number;
  afterId: string;
}

/** The page token of a plain list (invoices of a reservation, companies): where the next page starts. */
interface ListToken {
  kind: 'invoices' | 'companies' | 'loyaltyCards';
  propertyId: string;
  /** The reservation number (invoices), the person id (loyalty cards), or null. */
  of: string | null;
  size: number;
  offset: number;
}

function encodeToken(token: SearchToken | RoomsToken | ListToken): string {
  return Buffer.from(JSON.stringify(token), 'utf8').toString('base64');
}

/** The token of a page of a plain paged list, as this simulator gives it: tests make a provider whose pages name one it gave before. */
export function listPageToken(kind: ListToken['kind'], propertyId: string, of: string | null, offset: number, size = MAX_PAGE): string {
  return encodeToken({ kind, propertyId, of, size, offset });
}

function decodeToken(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text.replaceAll(' ', '+'), 'base64').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isWindow = (x: unknown): x is [string, string] =>
  Array.isArray(x) && x.length === 2 && x.every((v) => typeof v === 'string' && LOCAL_MINUTE.test(v) && !Number.isNaN(wallClockMs(v)));

function searchToken(x: unknown, propertyId: string): SearchToken | undefined {
  if (!isObject(x) || x['kind'] !== 'reservations' || x['propertyId'] !== propertyId) return undefined;
  const q = x['query'];
  const after = x['after'];
  const size = x['size'];
  if (!isObject(q) || (q['state'] !== 'Active' && q['state'] !== 'Cancelled')) return undefined;
  if (q['modify'] !== undefined && !isWindow(q['modify'])) return undefined;
  if (q['affect'] !== undefined && !isWindow(q['affect'])) return undefined;
  if (q['roomId'] !== undefined && typeof q['roomId'] !== 'string') return undefined;
  if (!isObject(after) || !Number.isInteger(after['sec']) || typeof after['number'] !== 'string') return undefined;
  if (!Number.isInteger(size) || (size as number) < 1 || (size as number) > MAX_PAGE) return undefined;
  return x as unknown as SearchToken;
}

function roomsToken(x: unknown, propertyId: string): RoomsToken | undefined {
  if (!isObject(x) || x['kind'] !== 'rooms' || x['propertyId'] !== propertyId) return undefined;
  if (x['roomTypeId'] !== null && typeof x['roomTypeId'] !== 'string') return undefined;
  if (typeof x['afterId'] !== 'string') return undefined;
  const size = x['size'];
  if (!Number.isInteger(size) || (size as number) < 1 || (size as number) > MAX_PAGE) return undefined;
  return x as unknown as RoomsToken;
}

function listToken(x: unknown, kind: ListToken['kind'], propertyId: string, of: string | null): ListToken | undefined {
  if (!isObject(x) || x['kind'] !== kind || x['propertyId'] !== propertyId || x['of'] !== of) return undefined;
  const { size, offset } = x;
  if (!Number.isInteger(size) || (size as number) < 1 || (size as number) > MAX_PAGE) return undefined;
  if (!Number.isInteger(offset) || (offset as number) < 0) return undefined;
  return x as unknown as ListToken;
}

/** maxPageSize: absent or empty = 100; otherwise an integer from 1 to 100. */
function pageSize(q: URLSearchParams): number | HttpReply {
  const v = q.get('maxPageSize');
  if (v === null || v === '') return MAX_PAGE;
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > MAX_PAGE) {
    return pmsError(400, 'InvalidMaxPageSize', `maxPageSize must be an integer from 1 to ${MAX_PAGE}`);
  }
  return Number(v);
}

function badLanguage(q: URLSearchParams): HttpReply | undefined {
  const lang = q.get('languageCode');
  if (lang === null || lang === '' || LANGUAGES.has(lang.toLowerCase())) return undefined;
  return pmsError(400, 'InvalidLanguageCode', `languageCode must be one of ${[...LANGUAGES].join(', ')}`);
}

/** A window of two property-local times, both or neither given, at most 365 days long. */
function window(q: URLSearchParams, name: 'Modify' | 'AffectPeriod'): [string, string] | undefined | HttpReply {
  const start = q.get(`start${name}DateTime`) || undefined;
  const end = q.get(`end${name}DateTime`) || undefined;
  if (start === undefined && end === undefined) return undefined;
  if (start === undefined || end === undefined) {
    return pmsError(400, 'IncompletePeriod', `start${name}DateTime and end${name}DateTime must be given together`);
  }
  for (const v of [start, end]) {
    if (!LOCAL_MINUTE.test(v) || Number.isNaN(wallClockMs(v))) {
      return pmsError(400, DATE_FORMAT_CODE, `Incorrect dates format: ${v} (expected yyyy-MM-ddTHH:mm, property-local time)`);
    }
  }
  const span = wallClockMs(end) - wallClockMs(start);
  if (span < 0) return pmsError(400, 'InvalidPeriod', `start${name}DateTime must not be after end${name}DateTime`);
  if (span > MAX_WINDOW_MS) return pmsError(400, 'PeriodTooLong', `the ${name} period must not exceed 365 days`);
  return [start, end];
}

const isReply = (x: unknown): x is HttpReply => isObject(x) && typeof x['status'] === 'number';

/** How paged answers look (Faults.pmsLegacyPageTokenKey, pmsPagesWithoutHasNextPage, pmsMaxPageItems). */
export interface PagingShape {
  /** The token's key is `pageToken`. */
  legacyTokenKey: boolean;
  /** `hasNextPage` is left out. */
  withoutHasNextPage: boolean;
  /** A page holds at most this many items, whatever maxPageSize asks. */
  maxItems: number | undefined;
}

export class PmsHttp {
  constructor(
    private readonly pms: PmsModel,
    private readonly shape: () => PagingShape = () => ({ legacyTokenKey: false, withoutHasNextPage: false, maxItems: undefined }),
  ) {}

  private paged(listKey: string, items: unknown[], next: string | null): HttpReply {
    const { legacyTokenKey, withoutHasNextPage } = this.shape();
    const more = withoutHasNextPage ? {} : { hasNextPage: next !== null };
    return { status: 200, body: pmsEnvelope({ [listKey]: items, ...more, [legacyTokenKey ? 'pageToken' : 'nextPageToken']: next }) };
  }

  /** maxPageSize of a first page, within what the provider serves (PagingShape.maxItems). */
  private pageSize(q: URLSearchParams): number | HttpReply {
    const sized = pageSize(q);
    const cap = this.shape().maxItems;
    return isReply(sized) || cap === undefined ? sized : Math.min(sized, Math.max(1, cap));
  }

  private unknownProperty(propertyId: string): HttpReply {
    return pmsError(404, 'PropertyNotFound', `property ${propertyId} not found`);
  }

  /** GET /api/pms/v2/properties/{propertyId}/reservations/search */
  searchReservations(propertyId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    let query: PmsSearchQuery;
    let size: number;
    let after: PmsSearchPosition | undefined;
    const tokenText = q.get('pageToken');
    if (tokenText !== null && tokenText !== '') {
      // Every other parameter is ignored.
      const token = searchToken(decodeToken(tokenText), propertyId);
      if (!token) return pmsError(400, 'InvalidPageToken', 'pageToken is not a token of this search');
      ({ query, size, after } = token);
    } else {
      const stateText = q.get('state');
      if (stateText === null || stateText === '') return pmsError(400, 'StateRequired', 'state is required: Active or Cancelled');
      const state = stateText.toLowerCase() === 'active' ? 'Active' : stateText.toLowerCase() === 'cancelled' ? 'Cancelled' : undefined;
      if (!state) return pmsError(400, 'InvalidState', 'state must be Active or Cancelled');
      const modify = window(q, 'Modify');
      if (isReply(modify)) return modify;
      const affect = window(q, 'AffectPeriod');
      if (isReply(affect)) return affect;
      if (!modify && !affect) {
        return pmsError(400, 'PeriodRequired', 'a Modify period or an AffectPeriod period (or both) must be given');
      }
      const sized = this.pageSize(q);
      if (isReply(sized)) return sized;
      size = sized;
      query = { state };
      if (modify) query.modify = modify;
      if (affect) query.affect = affect;
      const roomId = q.get('roomId');
      if (roomId !== null && roomId !== '') query.roomId = roomId;
    }
    const page = this.pms.search(pp, query, size, after);
    const last = page.items[page.items.length - 1];
    const next = page.more && last ? encodeToken({ kind: 'reservations', propertyId, query, size, after: { sec: last.sec, number: last.number } }) : null;
    return this.paged(
      'reservations',
      page.items.map((r) => ({ number: r.number })),
      next,
    );
  }

  /** GET /api/pms/v2/properties/{propertyId}/reservations/{number} */
  reservation(propertyId: string, number: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    const lang = badLanguage(q);
    if (lang) return lang;
    const r = pp.byNumber.get(number);
    if (!r) return pmsError(404, 'ReservationNotFound', `reservation ${number} not found in property ${propertyId}`);
    return { status: 200, body: pmsEnvelope({ reservation: this.pms.reservation(pp, r) }) };
  }

  /** GET /api/pms/v2/properties/{propertyId}/guests/{pmsPersonId} */
  guest(propertyId: string, pmsPersonId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    const lang = badLanguage(q);
    if (lang) return lang;
    const guest = this.pms.guestOf(pp, pmsPersonId);
    if (!guest) return pmsError(404, 'GuestNotFound', `guest ${pmsPersonId} not found in property ${propertyId}`);
    return { status: 200, body: pmsEnvelope({ guest }) };
  }

  /** GET /api/pms/v2/properties/{propertyId}/rooms: in id order, optionally of one room type. */
  rooms(propertyId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    let roomTypeId: string | null;
    let size: number;
    let afterId = '';
    const tokenText = q.get('pageToken');
    if (tokenText !== null && tokenText !== '') {
      const token = roomsToken(decodeToken(tokenText), propertyId);
      if (!token) return pmsError(400, 'InvalidPageToken', 'pageToken is not a token of this list');
      ({ roomTypeId, size, afterId } = token);
    } else {
      roomTypeId = q.get('roomTypeId') || null;
      const sized = this.pageSize(q);
      if (isReply(sized)) return sized;
      size = sized;
    }
    const all = pp.rooms.filter((r) => (roomTypeId === null || r.roomTypeId === roomTypeId) && r.id > afterId);
    const items = all.slice(0, size);
    const last = items[items.length - 1];
    const next = all.length > size && last ? encodeToken({ kind: 'rooms', propertyId, roomTypeId, size, afterId: last.id }) : null;
    return this.paged(
      'rooms',
      items.map((r) => ({ ...r })),
      next,
    );
  }

  /**
   * A plain paged list: the first page from maxPageSize (and languageCode when `lang`), the
   * next ones from the token alone (every other parameter is then ignored).
   */
  private list(kind: ListToken['kind'], propertyId: string, of: string | null, q: URLSearchParams, items: () => unknown[], lang: boolean): HttpReply {
    let size: number;
    let offset = 0;
    const tokenText = q.get('pageToken');
    if (tokenText !== null && tokenText !== '') {
      const token = listToken(decodeToken(tokenText), kind, propertyId, of);
      if (!token) return pmsError(400, 'InvalidPageToken', 'pageToken is not a token of this list');
      ({ size, offset } = token);
    } else {
      const bad = lang ? badLanguage(q) : undefined;
      if (bad) return bad;
      const sized = this.pageSize(q);
      if (isReply(sized)) return sized;
      size = sized;
    }
    const all = items();
    const next = all.length > offset + size ? encodeToken({ kind, propertyId, of, size, offset: offset + size }) : null;
    return this.paged(kind, all.slice(offset, offset + size), next);
  }

  /** GET /api/pms/v2/properties/{propertyId}/reservations/{number}/invoices */
  invoices(propertyId: string, number: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    const r = pp.byNumber.get(number);
    if (!r) return pmsError(404, 'ReservationNotFound', `reservation ${number} not found in property ${propertyId}`);
    return this.list('invoices', propertyId, number, q, () => this.pms.invoices(pp, r), true);
  }

  /** GET /api/pms/v2/properties/{propertyId}/guests/{pmsPersonId}/loyalty-cards */
  loyaltyCards(propertyId: string, pmsPersonId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    const cards = this.pms.loyaltyCardsOf(pp, pmsPersonId);
    if (!cards) return pmsError(404, 'GuestNotFound', `guest ${pmsPersonId} not found in property ${propertyId}`);
    return this.list('loyaltyCards', propertyId, pmsPersonId, q, () => cards, false);
  }

  /** GET /api/pms/v2/properties/{propertyId}/companies */
  companies(propertyId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    return this.list('companies', propertyId, null, q, () => this.pms.companies(pp), false);
  }

  /** GET /api/pms-analytics/v1/properties/{propertyId}/daily-occupancy */
  dailyOccupancy(propertyId: string, q: URLSearchParams): HttpReply {
    const pp = this.pms.property(propertyId);
    if (!pp) return this.unknownProperty(propertyId);
    const start = q.get('startStayDate') ?? '';
    const end = q.get('endStayDate') ?? '';
    const otb = q.get('otbDate') || undefined;
    if (start === '' || end === '') return pmsError(400, 'DatesRequired', 'startStayDate and endStayDate are required');
    for (const v of otb === undefined ? [start, end] : [start, end, otb]) {
      if (!DATE.test(v) || Number.isNaN(dayNumber(v))) return pmsError(400, DATE_FORMAT_CODE, `Incorrect dates format: ${v} (expected YYYY-MM-DD)`);
    }
    const days = dayNumber(end) - dayNumber(start) + 1;
    if (days < 1) return pmsError(400, 'InvalidPeriod', 'startStayDate must not be after endStayDate');
    if (days > MAX_OCCUPANCY_DAYS) return pmsError(400, 'PeriodTooLong', `the stay dates must span at most ${MAX_OCCUPANCY_DAYS} days`);
    const report = this.pms.dailyOccupancy(propertyId, start, end, otb);
    return { status: 200, body: pmsEnvelope({ ...report }) };
  }

  /** GET /api/pms-integration-storage/v1/properties/{propertyId}/bookings/{bookingId} */
  storageBooking(propertyId: string, bookingId: string): HttpReply {
    if (!this.pms.property(propertyId)) return storageError(404, 'INVALID_PROPERTY_ID', 'Invalid propertyId');
    const booking = this.pms.storageBookingById(propertyId, bookingId);
    if (!booking) return storageError(404, 'BOOKING_NOT_FOUND', `booking ${bookingId} not found in property ${propertyId}`);
    return { status: 200, body: { booking } };
  }

  /** GET /api/pms-integration-storage/v1/properties/{propertyId}/inventories/blocks/{inventoryBlockId} */
  inventoryBlock(propertyId: string, blockId: string): HttpReply {
    if (!this.pms.property(propertyId)) return storageError(404, 'INVALID_PROPERTY_ID', 'Invalid propertyId');
    const inventoryBlock = this.pms.blockById(propertyId, blockId);
    if (!inventoryBlock) return storageError(404, 'INVENTORY_BLOCK_NOT_FOUND', `inventory block ${blockId} not found in property ${propertyId}`);
    return { status: 200, body: { inventoryBlock } };
  }

  /** GET /api/pms/v2/properties/{propertyId}/obtain-accommodation-inventory */
  accommodationInventory(propertyId: string): HttpReply {
    if (!this.pms.property(propertyId)) return this.unknownProperty(propertyId);
    return { status: 200, body: pmsEnvelope({ accommodationInventory: this.pms.accommodationInventory(propertyId) }) };
  }

  /**
   * POST /api/pms-integration-storage/v1/properties/{propertyId}/inventories/search. The body
   * (SearchInventoryRequest, no other keys) needs roomTypeCodes, startDate and endDate; the
   * range is at most 2 years (endDate before startDate + 2 years). Codes the PMS does not know
   * have no records. A body that breaks these rules is answered 422.
   */
  searchInventory(propertyId: string, bodyText: string): HttpReply {
    if (!this.pms.property(propertyId)) return storageError(404, 'INVALID_PROPERTY_ID', 'Invalid propertyId');
    let body: unknown;
    try {
      body = JSON.parse(bodyText) as unknown;
    } catch {
      return storageError(422, 'INVALID_REQUEST', 'the body is not JSON');
    }
    if (!isObject(body)) return storageError(422, 'INVALID_REQUEST', 'the body must be a SearchInventoryRequest object');
    const extra = Object.keys(body).filter((k) => k !== 'roomTypeCodes' && k !== 'startDate' && k !== 'endDate');
    if (extra.length > 0) return storageError(422, 'INVALID_REQUEST', `unknown fields: ${extra.join(', ')}`);
    const codes = body['roomTypeCodes'];
    if (!Array.isArray(codes) || codes.length === 0 || !codes.every((c) => typeof c === 'string' && c !== '')) {
      return storageError(422, 'INVALID_ROOM_TYPE_CODES', 'roomTypeCodes must be a non-empty array of room type codes');
    }
    const start = body['startDate'];
    const end = body['endDate'];
    for (const v of [start, end]) {
      if (typeof v !== 'string' || !DATE.test(v) || Number.isNaN(dayNumber(v)))
        return storageError(422, 'INVALID_DATE', `startDate and endDate must be yyyy-MM-dd dates`);
    }
    const from = start as string;
    const to = end as string;
    if (dayNumber(to) < dayNumber(from)) return storageError(422, 'INVALID_DATE_RANGE', 'startDate must not be after endDate');
    const limit = `${String(Number(from.slice(0, 4)) + 2).padStart(4, '0')}${from.slice(4)}`;
    if (dayNumber(to) >= dayNumber(limit.endsWith('-02-29') ? `${limit.slice(0, 8)}28` : limit)) {
      return storageError(422, 'DATE_RANGE_TOO_LONG', 'the date range must not exceed 2 years');
    }
    const inventories = this.pms.roomTypeInventory(propertyId, codes as string[], from, to);
    return { status: 200, body: { inventory: { propertyId, inventories } } };
  }

  /** GET /api/pms-integration-storage/v1/properties/{propertyId}/calculate-stay-units */
  stayUnits(propertyId: string, q: URLSearchParams): HttpReply {
    if (!this.pms.property(propertyId)) return storageError(404, 'INVALID_PROPERTY_ID', 'Invalid propertyId');
    const first = q.get('firstStayDate') ?? '';
    const last = q.get('lastStayDate') ?? '';
    const code = q.get('pmsSideRatePlanCode') ?? '';
    if (code === '') return storageError(422, 'INVALID_RATE_PLAN_CODE', 'pmsSideRatePlanCode is required');
    for (const v of [first, last]) {
      if (!DATE.test(v) || Number.isNaN(dayNumber(v))) return storageError(422, 'INVALID_DATE', 'firstStayDate and lastStayDate must be yyyy-MM-dd dates');
    }
    if (dayNumber(last) < dayNumber(first)) return storageError(422, 'INVALID_DATE_RANGE', 'firstStayDate must not be after lastStayDate');
    return { status: 200, body: { stayUnits: this.pms.stayUnits(propertyId, first, last, code) } };
  }
}
