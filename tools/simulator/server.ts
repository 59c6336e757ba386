/**
 * The provider stand-in: a node:http server answering the token endpoint, the Read
 * Reservation API, the Content API, the Reference Data API, the PMS API (reservations,
 * guests, rooms), the PMS Analytics API (daily occupancy) and the PMS Integration Storage API
 * (bookings, inventory blocks) with the provider's shapes, limits and failure modes, and
 * delivering the provider's webhooks.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RateLimitScope, RateWindow } from '../../src/config/config.js';
import {
  compareIds,
  decodeSince,
  encodeSince,
  malformedCancellationRule,
  malformedExtraStayRule,
  malformedPropertyInfo,
  referenceLists,
  servedCancellationRules,
  servedExtraStayRules,
  withDuplicateCancellationRule,
  withDuplicateContent,
  withDuplicateExtraStayRule,
} from './content.js';
import { EPOCH_2009_MS, SimulatorStore, servedProperty, summaryOf, type BookingAmendment, type Cursor, type PropertyStore } from './data.js';
import type { OccupancyInput } from './occupancy.js';
import { PmsModel } from './pms.js';
import { PmsHttp } from './pms-http.js';
import type {
  AccommodationInventory,
  DailyOccupancy,
  DailyRoomTypeInventory,
  IntegrationStorageBooking,
  InventoryBlock,
  PmsCompany,
  PmsInvoice,
  PmsLoyaltyCard,
  PmsPerson,
  PmsReservation,
  PmsRoom,
} from './pms-types.js';
import { hashString, mix, mulberry32 } from './random.js';
import { RateLimiter, defaultRateLimits } from './rate-limit.js';
import { AccessTokens, decodeContinueToken, encodeContinueToken, simulatorClaims, type AccessClaims } from './tokens.js';
import { areaOfPath } from '../../src/provider/api-access.js';
import { WebhookDispatcher, type SimulatorWebhooks } from './webhooks.js';
import type {
  BookingPayload,
  BookingsPage,
  CancellationRule,
  ContentPropertyInfo,
  ContentPropertyPage,
  ExtraStayRule,
  PropertyContent,
  ReferenceLists,
} from './types.js';

/**
 * An API client (an API connection of the provider's extranet): its credentials and, optionally,
 * limits of its own (a contracted budget; scopes not named keep the simulator's) and the
 * properties it may read (others answer 403 Forbidden; default: every property).
 */
export interface SimulatorClient {
  clientId: string;
  clientSecret: string;
  rateLimits?: Partial<Record<RateLimitScope, RateWindow[]>>;
  propertyIds?: string[];
  /**
   * The APIs the hotel ticked for this connection (the Public APIs tab), as the values of
   * `simulatorClaims` (e.g. ['reservation_api', 'content', simulatorClaims.pms]): the access
   * token's api_accesses claim. Requests to an area the token does not grant answer 403, not
   * counted. Default: every area; null: tokens without the claim, served everywhere.
   */
  apiAccesses?: string[] | null;
  /**
   * What the tokens' api_accesses claim says, when it is not `apiAccesses`: the areas granted
   * stay those of `apiAccesses`. A provider whose claim names fewer areas than it grants (the
   * documents show two values, not whether every area is in the claim).
   */
  claim?: string[];
}

export interface SimulatorOptions {
  /** Default '127.0.0.1'. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Default [{ clientId: 'sim-client', clientSecret: 'sim-secret' }]. */
  clients?: SimulatorClient[];
  /** Seed of all generated data; default 1. */
  seed?: number;
  /** Default two properties '500100' and '500200' with 200 bookings each. bookingCount may be 0. */
  properties?: { id: string; bookingCount: number }[];
  /**
   * Extra properties with content and no bookings, after `properties`: ids '900001', '900002', ...
   * (an id already in `properties` is skipped). Default 0.
   */
  contentOnlyProperties?: number;
  /** Per scope, replaces the production windows of that scope. */
  rateLimits?: Partial<Record<RateLimitScope, RateWindow[]>>;
  /** expires_in of access tokens; default 1800. */
  tokenTtlSeconds?: number;
  /** Clock of data, tokens and limits; default Date.now. */
  now?: () => number;
}

/** Failure injection, mutable at run time. */
export interface Faults {
  /** Probability of answering 500 or 503 (503 with retry-after 1) to an API call; not counted against limits. */
  error5xxRate: number;
  /** Probability of answering 429 (retry-after 1) regardless of limits; not counted. */
  spurious429Rate: number;
  /** Probability of answering 401 to a valid token. */
  spurious401Rate: number;
  /** Added to every response (uniform in [min, max]). */
  latencyMs: { min: number; max: number };
  /** Details of these numbers answer 200 with a body that fails the schema, the same every time. */
  malformedBookingNumbers: Set<string>;
  /** Share of bookings whose details are malformed, decided per number by a hash (stable). */
  malformedRate: number;
  /** Details of these numbers answer 404 although the summaries list them. */
  notFoundBookingNumbers: Set<string>;
  /**
   * These properties are served (list with include=All, and the single-property endpoint) with a
   * body that fails the schema: `ratePlans` is the string "n/a" and `name` the number 404404.
   */
  malformedPropertyIds: Set<string>;
  /**
   * Cancellation and extra-stay rules with these ids are served (in the rules endpoints of
   * their property) with a body that fails the rule schema, keeping their `id`: a cancellation
   * rule's `cancellationTerms` is the string "n/a", an extra-stay rule's `earlyCheckInPeriods`
   * and `lateCheckOutPeriods` are. The other rules of the response are served as they are.
   * Empty by default.
   */
  malformedRuleIds: Set<string>;
  /**
   * These properties are served (list with include=All, the single-property endpoint and the
   * rules endpoints) with duplicate ids: the first room type, the first rate plan and the first
   * service are each listed twice, and so are the first cancellation rule and the first
   * extra-stay rule. The second copy follows the first and differs from it (see
   * withDuplicateContent and withDuplicateCancellationRule in content.ts), so that "the last
   * occurrence wins" can be told from "the first does". Empty by default.
   */
  duplicateContentIds: Set<string>;
  /**
   * The properties list with include=All repeats the first property of each page at the end
   * of that page (the same body twice; `next` still points after the page's last distinct id).
   * The id-only list is unaffected. Default false.
   */
  duplicatePropertyInPage: boolean;
  /**
   * The shape of the room amenity categories (GET /v1/room-amenity-categories): `nested`, as the
   * OpenAPI document gives it (categories `{name, amenities: [{code, name}]}`), or `flat`, as the
   * interface specification lists the entry (`{group, code, name}`, one per amenity). Default
   * nested.
   */
  roomAmenityCategoriesShape: 'nested' | 'flat';
  /**
   * Per property id: every authenticated API request for that property (booking list, booking
   * details, content property, cancellation rules and extra-stay rules; the property id is the
   * one in the path) in one of `scopes` (default: bookingList, bookingDetails and standard)
   * answers `status` with an errors body (e.g. 403 `{errors:[{code:'Forbidden',...}]}`),
   * rate-limit headers (retry-after 1 on 429 and 503) and no data; not counted against the
   * limits. Checked before the other faults of a request. Empty by default.
   */
  propertyStatus: Map<string, PropertyStatusFault>;
  /**
   * Probability that an API answer with status 200 stalls mid-body: the status line, the
   * headers (content-length of the whole body) and about half of the body are sent, the rest
   * never is; the connection stays open until the client gives up or close(). Counted against
   * the limits (the provider served it). Default 0.
   */
  stallMidBodyRate: number;
  /**
   * When set, `stallMidBodyRate` applies only to API requests whose path (without the query
   * string) matches; e.g. rate 1 with /\/bookings\/[^/]+$/ stalls every details request.
   */
  stallMidBodyPaths?: RegExp;
  /**
   * Probability that an API answer with status 200 comes back as a complete HTTP message whose
   * body is the JSON cut at about half (content-length matches the cut bytes): invalid JSON.
   * Counted against the limits. Default 0.
   */
  truncatedBodyRate: number;
  /**
   * Probability that an API answer with status 200 is replaced by a gateway's HTML error
   * page ("502 Bad Gateway"), still with status 200 and `content-type: text/html`. Counted
   * against the limits. Default 0.
   */
  htmlBodyRate: number;
  /**
   * Booking details answer 404 BookingNotFound to the first N detail requests for a booking
   * after each change of it (creation or mutate()), then the real body: the summaries list a
   * change before the details replica has it. Requests are counted per booking and change
   * whether or not the fault is on; the 404s are counted against the limits and in
   * `detailCallsByNumber`. Default 0.
   */
  replicaLag404s: number;
  /**
   * Booking details answer, to the N detail requests after each change of a booking that follow
   * the replica-lag 404s, the booking as it was before that change (its previous version, with
   * its own modifiedDateTime): a replica that lists the change but serves an older copy. A
   * change in the same second as the previous one is then indistinguishable by its time.
   * Counted in `stats.staleServed`. Default 0.
   */
  staleDetailReads: number;
  /**
   * Per property id: how many of its next booking-list requests that carry a continueToken
   * answer 400 (a faulty request, section 7 of the specification), whatever the token; Infinity
   * answers every one until the entry is deleted. The token does not expire (section 4.3), so
   * 1 is a one-off fault and Infinity a token refused for good. No body: the documents show
   * none for this API's errors. Counted against the limits, and in
   * `stats.continueTokensRejected`. Empty by default.
   */
  continueTokenRejections: Map<string, number>;
  /**
   * When set, every POST to the token endpoint answers this status (OAuth-style error body;
   * retry-after 1 on 429 and 503) before the token limits, not counted. Default undefined.
   */
  tokenStatus?: number;
  /**
   * Probability of answering 500 or 503 (503 with retry-after 1) to a token request only;
   * not counted. (`error5xxRate` hits the token endpoint too.) Default 0.
   */
  tokenError5xxRate: number;
  /**
   * Share of bookings (decided per number by a hash: stable) whose details spell the daily rates'
   * rate plan key `RatePlanId`, as the interface specification writes it, instead of the OpenAPI
   * document's `ratePlanId`. The truth (`bookings()`) keeps `ratePlanId`. Default 0.
   */
  specRatePlanIdRate: number;
  /**
   * Paged PMS answers (reservation search and rooms) name the token key `pageToken` instead of
   * `nextPageToken`, a variant some provider answers show. Default false.
   */
  pmsLegacyPageTokenKey: boolean;
  /**
   * Paged PMS answers leave `hasNextPage` out: the token alone says that more items exist (the
   * document: "the token is returned when more items exist"), and the last page has none.
   * Default false.
   */
  pmsPagesWithoutHasNextPage: boolean;
  /**
   * Paged PMS answers hold at most this many items, whatever maxPageSize asks: the document
   * gives only the upper bound (100). Default undefined (maxPageSize, 100 when not given).
   */
  pmsMaxPageItems?: number;
  /**
   * Probability that a PMS or PMS Analytics answer the simulator would serve with 200 is an
   * error envelope instead: one error `{code, message}` in `errors`, its status drawn from
   * `pmsErrorEnvelopeStatuses`. A 200 keeps the answer's keys with nothing in them (lists
   * empty, objects and tokens null, hasNextPage false, counts 0): what a 200 with errors means
   * the documents do not show. A 400 or 404 is the envelope alone, as the documents give it.
   * Counted against the limits (the provider answered). Default 0.
   */
  pmsErrorEnvelopeRate: number;
  /** The statuses of pmsErrorEnvelopeRate's envelopes, one drawn per envelope. Default [200]. */
  pmsErrorEnvelopeStatuses: number[];
  /** When set, pmsErrorEnvelopeRate applies only to the paths that match. */
  pmsErrorEnvelopePaths?: RegExp;
  /**
   * Probability that a PMS or PMS Analytics answer served with 200 carries a warning
   * `{code, message}` in `warnings`, its data as it is. Default 0.
   */
  pmsWarningRate: number;
  /**
   * When set, every 200 answer with a JSON body passes through it before it is sent, with the
   * request's path: tests serve bodies the document allows but the generated data does not
   * show (a summary without status, null lists, zoned stay times, numbers with their exact
   * text as `JSON.rawJSON` values). The returned body is served; undefined keeps it as it was.
   */
  rewriteBody?: (path: string, body: unknown) => unknown;
  /**
   * When set and it returns a body for a 200 answer with a JSON body, that text is served
   * instead, as application/json (after rewriteBody; counted against the limits): tests serve
   * what no generator makes, such as a body larger than a client's limit or one that is not
   * JSON at all. `chunked`: sent without content-length, in chunks, so that the client only
   * learns its length by reading it.
   */
  serveText?: (path: string) => { body: string; chunked?: boolean } | undefined;
  /**
   * When set and it returns a status for the path of an authenticated API request, that status
   * is answered with an errors body and no data, not counted against the limits (as
   * propertyStatus, but for one path: the invoices of one reservation, say).
   */
  pathStatus?: (path: string) => number | undefined;
}

/** See Faults.propertyStatus. */
export interface PropertyStatusFault {
  status: number;
  /** Scopes the status applies to; default every API scope (PMS and analytics count in standard). */
  scopes?: PropertyStatusScope[];
}

export type PropertyStatusScope = 'bookingList' | 'bookingDetails' | 'standard' | 'integrationStorage';

export interface RequestLogEntry {
  t: number;
  method: string;
  path: string;
  status: number;
  clientId?: string;
  /** The request's user-agent header, when it had one. */
  userAgent?: string;
  /** The property id in the path of a request about one property (booking, content, PMS, analytics, storage). */
  propertyId?: string;
  /** The query string without `?`, when there was one. */
  query?: string;
}

export interface SimulatorStats {
  /** Requests counted against the limits, per scope. */
  accepted: Record<string, number>;
  /** The same per API client (client id → scope → count); token requests are per IP, not here. */
  acceptedByClient: Record<string, Record<string, number>>;
  /** 429 answers per API client (token requests: per IP, not here). */
  rejected429ByClient: Record<string, number>;
  /** 429 answers, limit-based and spurious. */
  rejected429: number;
  /** Answers per HTTP status. */
  byStatus: Record<number, number>;
  tokensIssued: number;
  /** Detail requests that passed authentication and limits, per booking number. */
  detailCallsByNumber: Map<string, number>;
  /** The last 10,000 requests, when `requestLog` is enabled on the stats object (set it to []). */
  requestLog?: RequestLogEntry[];
  /** Answers stalled mid-body (Faults.stallMidBodyRate). */
  stalled: number;
  /** Answers with a truncated body (Faults.truncatedBodyRate). */
  truncated: number;
  /** Answers replaced by an HTML page (Faults.htmlBodyRate). */
  html: number;
  /** Details 404s of the replica-lag fault (Faults.replicaLag404s). */
  lagged404: number;
  /** Details answered with the previous version (Faults.staleDetailReads). */
  staleServed: number;
  /** Booking-list requests answered 400 by Faults.continueTokenRejections. */
  continueTokensRejected: number;
  /** PMS and analytics answers replaced by an error envelope (Faults.pmsErrorEnvelopeRate). */
  errorEnvelopes: number;
  /** PMS and analytics answers served with a warning (Faults.pmsWarningRate). */
  warningsServed: number;
}

export interface Simulator {
  /** 'http://127.0.0.1:PORT': provider base URL (token endpoint and /api/...) and reference-data base URL. */
  readonly url: string;
  readonly faults: Faults;
  readonly stats: SimulatorStats;
  close(): Promise<void>;
  /**
   * Modifies `count` random existing bookings (status flips Active<->Cancelled, or price,
   * guest and room stay changes) and creates `newCount` new ones; modification time = now
   * (never before the end of the property's stream). About a quarter of the changes hit a
   * booking already changed within the same second.
   */
  mutate(opts: { count: number; newCount?: number; propertyId?: string }): void;
  /**
   * One change of a chosen kind to booking `number` of `propertyId`, modified now (strictly
   * after its last change and the end of the property's stream): `reprice` adds 10.00 to each
   * night of its first room stay, `move` moves it a week later, `upgrade` gives its first room
   * stay the next room type of the property, `shorten` takes the last night of each stay (one
   * night stays), `cancel` and `reinstate` flip its status (throws when it already is).
   */
  amendBooking(propertyId: string, number: string, amendment: BookingAmendment): void;
  /**
   * Writes that become visible late, as the provider's can: `count` existing bookings change
   * (as mutate changes them) and `newCount` are created, each with its modification time
   * `lagMs` before now, so a continueToken already past that time never lists them (only a
   * list from an earlier lastModification does). Only bookings last changed before that time
   * are picked. Returns the numbers changed or created.
   */
  mutateLate(opts: { count: number; newCount?: number; propertyId?: string; lagMs: number }): string[];
  /**
   * The API connection's secret regenerated in the extranet (a new value), or the connection
   * deleted (undefined): token requests with the old secret answer 401 unauthorized_client,
   * and tokens issued before answer 401 on every API request.
   */
  setClientSecret(clientId: string, secret: string | undefined): void;
  /**
   * The APIs of the connection changed in the extranet (see SimulatorClient.apiAccesses):
   * tokens issued from now on carry the new api_accesses claim; tokens issued before keep
   * theirs until they expire, as JWTs do.
   */
  setApiAccesses(clientId: string, apiAccesses: string[] | null): void;
  /** Calls mutate every `intervalMs` until stopChurn() or close(). */
  startChurn(opts: { intervalMs: number; perTick: number; newPerTick?: number }): void;
  stopChurn(): void;
  /** Makes every continueToken issued so far invalid: they get 400 InvalidContinueToken. */
  invalidateContinueTokens(): void;
  /** Current truth: the `booking` object GET details serves without faults, per booking. */
  bookings(propertyId?: string): BookingPayload[];
  propertyIds(): string[];
  /** Content model of every property (ids the bookings reference), unaffected by content edits. */
  content(): PropertyContent[];

  // ---- Content API truth (copies) ----
  // The schema-breaking faults (malformedPropertyIds, malformedRuleIds) are not applied: these
  // return the valid body the provider would serve without them. Faults.duplicateContentIds is
  // applied: the duplicated entries are there, as served. Faults.duplicatePropertyInPage
  // concerns the list only.

  /** The exact JSON GET /api/content/v1/properties/{id} serves (and the list with include=All); throws for an unknown id. */
  contentProperty(propertyId: string): ContentPropertyInfo;
  /** The `cancellationRules` array GET .../properties/{id}/cancellation-rules serves; throws for an unknown id. */
  cancellationRules(propertyId: string): CancellationRule[];
  /** The `extraStayRules` array GET .../properties/{id}/extra-stay-rules serves; throws for an unknown id. */
  extraStayRules(propertyId: string): ExtraStayRule[];
  /** Every reference list exactly as served (the arrays inside the response bodies). */
  referenceLists(): ReferenceLists;

  // ---- Content edits (served content only: existing and new bookings keep the generated ids and names) ----

  /** The room type disappears from the served property (also from rate plans' availableServices.roomTypeIds). */
  removeRoomType(propertyId: string, roomTypeId: string): void;
  restoreRoomType(propertyId: string, roomTypeId: string): void;
  /** The rate plan disappears; rules referenced only by removed rate plans disappear from the rules endpoints. */
  removeRatePlan(propertyId: string, ratePlanId: string): void;
  restoreRatePlan(propertyId: string, ratePlanId: string): void;
  /** Changes the served name of a room type (booking details keep the original name). */
  renameRoomType(propertyId: string, roomTypeId: string, name: string): void;
  /** A new property: in the content list (in id order) and in the booking endpoints, with `bookingCount` past bookings. */
  addProperty(p: { id: string; bookingCount: number }): void;

  // ---- PMS side (see pms.ts) ----
  // Each booking has a PMS reservation of the same number; a few PMS-only reservations exist
  // besides. mutate() changes the PMS reservation (and the integration-storage booking) of
  // each booking it changes or creates. The accessors return copies of exactly what is served
  // (faults aside) and throw for an unknown property.

  /** Webhook delivery (configure / stop / emit, the attempts log and every event emitted). */
  readonly webhooks: SimulatorWebhooks;
  /** Every PMS reservation of the property, cancelled ones too, in the search order (modifyDateTime, then number). */
  pmsReservations(propertyId: string): PmsReservation[];
  /** The `reservation` GET .../reservations/{number} serves, or undefined. */
  pmsReservation(propertyId: string, number: string): PmsReservation | undefined;
  /** The loyalty cards GET .../guests/{pmsPersonId}/loyalty-cards serves, or undefined for a person the property does not know. */
  pmsLoyaltyCards(propertyId: string, pmsPersonId: string): PmsLoyaltyCard[] | undefined;
  /** The `guest` GET .../guests/{pmsPersonId} serves (a person some reservation references), or undefined. */
  pmsGuest(propertyId: string, pmsPersonId: string): PmsPerson | undefined;
  /** Every room of the property (in id order, as the rooms list serves them). */
  pmsRooms(propertyId: string): PmsRoom[];
  /** The invoices GET …/reservations/{number}/invoices serves (every page), or undefined for an unknown reservation. */
  pmsInvoices(propertyId: string, number: string): PmsInvoice[] | undefined;
  /** The companies GET …/companies serves (every page, in id order). */
  pmsCompanies(propertyId: string): PmsCompany[];
  /** The `dailyOccupancies` GET daily-occupancy serves for these dates (inclusive, YYYY-MM-DD; no 31-day cap here). */
  dailyOccupancy(propertyId: string, startDate: string, endDate: string, otbDate?: string): DailyOccupancy[];
  /** Everything computeDailyOccupancy needs to compute what dailyOccupancy serves (every stay of the property). */
  occupancyInput(propertyId: string): OccupancyInput;
  /** Every integration-storage booking of the property (by id). */
  integrationStorageBookings(propertyId: string): IntegrationStorageBooking[];
  /** Every inventory block of the property. */
  inventoryBlocks(propertyId: string): InventoryBlock[];
  /** The `accommodationInventory` GET obtain-accommodation-inventory serves. */
  accommodationInventory(propertyId: string): AccommodationInventory;
  /** The PMS room type code of each content room type of the property, by room type id. */
  pmsRoomTypeCodes(propertyId: string): Record<string, string>;
  /** The PMS rate plan code of each content rate plan of the property, by rate plan id. */
  pmsRatePlanCodes(propertyId: string): Record<string, string>;
  /** The `inventories` POST inventories/search serves for these codes and dates (inclusive; no 2-year cap here). */
  roomTypeInventory(propertyId: string, roomTypeCodes: readonly string[], startDate: string, endDate: string): DailyRoomTypeInventory[];
  /** The `stayUnits` GET calculate-stay-units serves. */
  stayUnits(propertyId: string, firstStayDate: string, lastStayDate: string, pmsSideRatePlanCode: string): number;
  /** Checks room stay `stayIndex` in now (it must not be checked in yet; a room is assigned when it has none). */
  pmsCheckIn(propertyId: string, number: string, stayIndex?: number): void;
  /** Checks a checked-in room stay out now. */
  pmsCheckOut(propertyId: string, number: string, stayIndex?: number): void;
  /** Moves a room stay to `roomId` (of the stay's room type, free on its nights) or, without it, to another free room. */
  pmsChangeRoom(propertyId: string, number: string, stayIndex: number, roomId?: string): void;
  /** Cancels the reservation on the PMS side only (the booking is left as it is). */
  pmsCancel(propertyId: string, number: string): void;
  /** The integration-storage booking changes now (updateDateTime); its PMS reservation does not. */
  touchIntegrationStorageBooking(propertyId: string, id: string): void;
  /** The inventory block changes now (updateDateTime and one more realized room). */
  touchInventoryBlock(propertyId: string, id: string): void;
}

const DEFAULT_CLIENTS = [{ clientId: 'sim-client', clientSecret: 'sim-secret' }];
const DEFAULT_PROPERTIES = [
  { id: '500100', bookingCount: 200 },
  { id: '500200', bookingCount: 200 },
];
const RATE_HEADERS = ['x-ratelimit-remaining-second', 'x-ratelimit-remaining-minute', 'x-ratelimit-remaining-hour'];
const LIST_PATH = /^\/api\/read-reservation\/v1\/properties\/([^/]+)\/bookings\/?$/;
const DETAILS_PATH = /^\/api\/read-reservation\/v1\/properties\/([^/]+)\/bookings\/([^/]+)\/?$/;
const CONTENT = '/api/content/v1';
const PROPERTIES_PATH = /^\/api\/content\/v1\/properties\/?$/;
const PROPERTY_PATH = /^\/api\/content\/v1\/properties\/([^/]+)\/?$/;
const CANCELLATION_RULES_PATH = /^\/api\/content\/v1\/properties\/([^/]+)\/cancellation-rules\/?$/;
const EXTRA_STAY_RULES_PATH = /^\/api\/content\/v1\/properties\/([^/]+)\/extra-stay-rules\/?$/;
const REFERENCE_DATA = '/api/reference-data';
const PMS_SEARCH_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/search\/?$/;
const PMS_RESERVATION_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/([^/]+)\/?$/;
const PMS_GUEST_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/guests\/([^/]+)\/?$/;
const PMS_LOYALTY_CARDS_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/guests\/([^/]+)\/loyalty-cards\/?$/;
const PMS_ROOMS_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/rooms\/?$/;
const PMS_INVOICES_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/reservations\/([^/]+)\/invoices\/?$/;
const PMS_COMPANIES_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/companies\/?$/;
const OCCUPANCY_PATH = /^\/api\/pms-analytics\/v1\/properties\/([^/]+)\/daily-occupancy\/?$/;
// Same template as the read-reservation details path; only the prefix (and the id kind) differ.
const STORAGE_BOOKING_PATH = /^\/api\/pms-integration-storage\/v1\/properties\/([^/]+)\/bookings\/([^/]+)\/?$/;
const STORAGE_BLOCK_PATH = /^\/api\/pms-integration-storage\/v1\/properties\/([^/]+)\/inventories\/blocks\/([^/]+)\/?$/;
const PMS_ACCOMMODATION_PATH = /^\/api\/pms\/v2\/properties\/([^/]+)\/obtain-accommodation-inventory\/?$/;
const STORAGE_INVENTORY_SEARCH_PATH = /^\/api\/pms-integration-storage\/v1\/properties\/([^/]+)\/inventories\/search\/?$/;
const STORAGE_STAY_UNITS_PATH = /^\/api\/pms-integration-storage\/v1\/properties\/([^/]+)\/calculate-stay-units\/?$/;
/** A POST body over this is answered 413 and not read further. */
const MAX_POST_BODY_BYTES = 1_000_000;
/** Served as they are (never mutated; the public accessor hands out copies). */
const REFERENCE_LISTS: ReferenceLists = referenceLists();
/** Properties page `count`: default and maximum. */
const MAX_PROPERTIES_PAGE = 200;
const LAST_MODIFICATION = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(:\d{2}(\.\d{1,7})?)?(Z|[+-]\d{2}:?\d{2})?$/;

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Sent as text/html instead of `body`. */
  html?: string;
  /** Sent as it is, as application/json, instead of `body` (Faults.serveText); chunked: without content-length. */
  text?: string;
  chunked?: boolean;
  /** Injected damage to the sent body (stall: half of it, then nothing; truncate: half of it as the whole message). */
  damage?: 'stall' | 'truncate';
}

/** An API operation: its rate-limit scope and its handler (run after authentication and limits). */
interface Route {
  scope: RateLimitScope;
  run: () => Reply;
  /** The property id in the path, for the operations on one property. */
  propertyId?: string;
  /** PMS and PMS Analytics operations: every error body also carries `warnings: []`. */
  pmsEnvelope?: boolean;
  /** A POST operation (the inventory search): its handler of the request body, which `run` then calls. */
  post?: (body: string) => Reply;
}

/** What `limited` needs to know about an API request for the faults (absent for the token endpoint). */
interface ApiRequest {
  path: string;
  propertyId?: string;
}

/** Writes `text` in 64 KB chunks, each after the last was taken (a body whose length the client learns by reading); stops when the client hangs up. */
async function writeInChunks(res: ServerResponse, text: string): Promise<void> {
  const CHUNK = 65_536;
  for (let i = 0; i < text.length && !res.destroyed; i += CHUNK) {
    if (res.write(text.slice(i, i + CHUNK))) continue;
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
  if (!res.destroyed) res.end();
}

/** A gateway's error page, as the htmlBodyRate fault serves it. */
const GATEWAY_ERROR_PAGE =
  '<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n' +
  '<h1>502 Bad Gateway</h1>\n<p>The upstream server did not answer in time.</p>\n<hr><p>gateway</p>\n</body>\n</html>\n';

/** Default scopes of the propertyStatus fault. */
const API_SCOPES: readonly PropertyStatusScope[] = ['bookingList', 'bookingDetails', 'standard', 'integrationStorage'];
/** `errors[].code` of the propertyStatus fault per status. */
const STATUS_CODES: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'PropertyNotFound',
  409: 'Conflict',
  410: 'Gone',
  422: 'UnprocessableEntity',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
};

/** OAuth `error` of the token faults per status. */
function oauthError(status: number): string {
  if (status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  if (status === 401) return 'unauthorized_client';
  return 'invalid_request';
}

/** About the first half of `text`, never splitting a surrogate pair. */
function firstHalf(text: string): string {
  let cut = Math.floor(text.length / 2);
  const code = text.charCodeAt(cut - 1);
  if (cut > 0 && code >= 0xd800 && code <= 0xdbff) cut--;
  return text.slice(0, cut);
}

function stripSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

/** languageCode: absent, empty or `en` (the only listed value); anything else is refused. */
function badLanguage(q: URLSearchParams): Reply | undefined {
  const lang = q.get('languageCode');
  if (lang === null || lang === '' || lang.toLowerCase() === 'en') return undefined;
  return { status: 400, body: errorBody('InvalidLanguageCode', 'languageCode must be en or omitted') };
}

function errorBody(code: string, message: string): { errors: { code: string; message: string }[] } {
  return { errors: [{ code, message }] };
}

/** A PMS answer's keys with nothing in them: what the 200 error envelope of Faults.pmsErrorEnvelopeRate keeps. */
function emptied(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(body).map(([k, v]) => [k, Array.isArray(v) ? [] : typeof v === 'boolean' ? false : typeof v === 'number' ? 0 : null]),
  );
}

/** A reply of a PMS operation: an `{errors}` body (of a fault, 401, 429...) gets the envelope's `warnings: []`. */
function withWarnings(reply: Reply): Reply {
  const body = reply.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body) || 'warnings' in body || !('errors' in body)) return reply;
  return { ...reply, body: { warnings: [], ...body } };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 1_000_000) chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * Reads the body of a POST operation, at most `max` bytes, and binds it to the route's handler
 * (`run` then answers with it); undefined when the body is longer (nothing is bound).
 */
async function readBodyUpTo(req: IncomingMessage, max: number, route: Route): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > max) return undefined;
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const post = route.post!;
  route.run = () => post(text);
  return text;
}

class SimulatorImpl implements Simulator {
  url = '';
  readonly faults: Faults = {
    error5xxRate: 0,
    spurious429Rate: 0,
    spurious401Rate: 0,
    latencyMs: { min: 0, max: 0 },
    malformedBookingNumbers: new Set(),
    malformedRate: 0,
    notFoundBookingNumbers: new Set(),
    malformedPropertyIds: new Set(),
    malformedRuleIds: new Set(),
    duplicateContentIds: new Set(),
    duplicatePropertyInPage: false,
    roomAmenityCategoriesShape: 'nested',
    propertyStatus: new Map(),
    stallMidBodyRate: 0,
    truncatedBodyRate: 0,
    htmlBodyRate: 0,
    replicaLag404s: 0,
    staleDetailReads: 0,
    continueTokenRejections: new Map(),
    tokenError5xxRate: 0,
    specRatePlanIdRate: 0,
    pmsLegacyPageTokenKey: false,
    pmsPagesWithoutHasNextPage: false,
    pmsErrorEnvelopeRate: 0,
    pmsErrorEnvelopeStatuses: [200],
    pmsWarningRate: 0,
  };
  readonly stats: SimulatorStats = {
    accepted: {},
    acceptedByClient: {},
    rejected429ByClient: {},
    rejected429: 0,
    byStatus: {},
    tokensIssued: 0,
    detailCallsByNumber: new Map(),
    stalled: 0,
    truncated: 0,
    html: 0,
    lagged404: 0,
    staleServed: 0,
    continueTokensRejected: 0,
    errorEnvelopes: 0,
    warningsServed: 0,
  };

  private readonly server: Server;
  private readonly store: SimulatorStore;
  private readonly limiter: RateLimiter;
  private readonly now: () => number;
  private readonly clients: Map<string, SimulatorClient>;
  /** Per client: how many times its secret was changed (setClientSecret); tokens of an older generation are refused. */
  private readonly generations = new Map<string, number>();
  private readonly ttl: number;
  private readonly faultRng: () => number;
  private tokens!: AccessTokens;
  private continueEpoch = 0;
  private churn: NodeJS.Timeout | undefined;
  /** Responses stalled mid-body, destroyed by close(). */
  private readonly stalledResponses = new Set<ServerResponse>();
  private readonly dispatcher: WebhookDispatcher;
  private readonly pms: PmsModel;
  private readonly pmsHttp: PmsHttp;

  constructor(private readonly opts: SimulatorOptions) {
    this.now = opts.now ?? Date.now;
    const seed = opts.seed ?? 1;
    this.clients = new Map((opts.clients ?? DEFAULT_CLIENTS).map((c) => [c.clientId, { ...c }]));
    this.ttl = opts.tokenTtlSeconds ?? 1800;
    const ownLimits = new Map([...this.clients.values()].flatMap((c) => (c.rateLimits ? [[c.clientId, c.rateLimits] as const] : [])));
    this.limiter = new RateLimiter({ ...defaultRateLimits, ...opts.rateLimits }, ownLimits);
    this.faultRng = mulberry32(mix(seed, 0xfa17));
    const properties = [...(opts.properties ?? DEFAULT_PROPERTIES)];
    const taken = new Set(properties.map((p) => p.id));
    for (let n = 900_001, added = 0; added < (opts.contentOnlyProperties ?? 0); n++) {
      if (taken.has(String(n))) continue;
      properties.push({ id: String(n), bookingCount: 0 });
      added++;
    }
    this.store = new SimulatorStore({ seed, properties, now: this.now });
    this.dispatcher = new WebhookDispatcher(this.now, seed);
    this.pms = new PmsModel(seed, this.store.stores, this.now, this.dispatcher, this.now());
    this.store.listener = this.pms;
    this.pmsHttp = new PmsHttp(this.pms, () => ({
      legacyTokenKey: this.faults.pmsLegacyPageTokenKey,
      withoutHasNextPage: this.faults.pmsPagesWithoutHasNextPage,
      maxItems: this.faults.pmsMaxPageItems,
    }));
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify(errorBody('InternalError', String(err))));
        } else res.destroy();
      });
    });
    this.server.keepAliveTimeout = 30_000;
  }

  async listen(): Promise<void> {
    const host = this.opts.host ?? '127.0.0.1';
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port ?? 0, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const { port } = this.server.address() as AddressInfo;
    const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
    this.url = `http://${shownHost}:${port}`;
    this.tokens = new AccessTokens(this.url);
  }

  get webhooks(): SimulatorWebhooks {
    return this.dispatcher;
  }

  close(): Promise<void> {
    this.stopChurn();
    this.dispatcher.close();
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      for (const res of this.stalledResponses) res.destroy();
      this.stalledResponses.clear();
      this.server.closeAllConnections();
    });
  }

  mutate(opts: { count: number; newCount?: number; propertyId?: string }): void {
    this.store.mutate(opts);
  }

  amendBooking(propertyId: string, number: string, amendment: BookingAmendment): void {
    this.store.amend(propertyId, number, amendment);
  }

  setApiAccesses(clientId: string, apiAccesses: string[] | null): void {
    const client = this.clients.get(clientId);
    if (!client) throw new Error(`no simulator client ${clientId}`);
    client.apiAccesses = apiAccesses === null ? null : [...apiAccesses];
  }

  setClientSecret(clientId: string, secret: string | undefined): void {
    const client = this.clients.get(clientId);
    if (!client) throw new Error(`no simulator client ${clientId}`);
    this.generations.set(clientId, (this.generations.get(clientId) ?? 0) + 1);
    if (secret === undefined) this.clients.delete(clientId);
    else client.clientSecret = secret;
  }

  mutateLate(opts: { count: number; newCount?: number; propertyId?: string; lagMs: number }): string[] {
    return this.store.mutateLate(opts);
  }

  startChurn(opts: { intervalMs: number; perTick: number; newPerTick?: number }): void {
    this.stopChurn();
    this.churn = setInterval(() => {
      const m: { count: number; newCount?: number } = { count: opts.perTick };
      if (opts.newPerTick !== undefined) m.newCount = opts.newPerTick;
      this.mutate(m);
    }, opts.intervalMs);
    this.churn.unref();
  }

  stopChurn(): void {
    if (this.churn) clearInterval(this.churn);
    this.churn = undefined;
  }

  invalidateContinueTokens(): void {
    this.continueEpoch++;
  }

  bookings(propertyId?: string): BookingPayload[] {
    const stores = propertyId === undefined ? [...this.store.stores.values()] : [this.store.stores.get(propertyId)].filter((s) => !!s);
    return stores.flatMap((s) => s.order.map((b) => this.store.details(s, b)));
  }

  propertyIds(): string[] {
    return this.store.propertyIds();
  }

  content(): PropertyContent[] {
    return [...this.store.stores.values()].map((s) => s.content);
  }

  private mustProperty(propertyId: string): PropertyStore {
    const store = this.store.stores.get(propertyId);
    if (!store) throw new Error(`unknown property ${propertyId}`);
    return store;
  }

  contentProperty(propertyId: string): ContentPropertyInfo {
    return structuredClone(this.validProperty(this.mustProperty(propertyId)));
  }

  cancellationRules(propertyId: string): CancellationRule[] {
    return this.validCancellationRules(this.mustProperty(propertyId));
  }

  extraStayRules(propertyId: string): ExtraStayRule[] {
    return this.validExtraStayRules(this.mustProperty(propertyId));
  }

  /** The served property before the schema-breaking fault: with duplicates when the fault names it. */
  private validProperty(store: PropertyStore): ContentPropertyInfo {
    const p = servedProperty(store);
    return this.faults.duplicateContentIds.has(p.id) ? withDuplicateContent(p) : p;
  }

  /** The served cancellation rules (fresh copies) before malformedRuleIds. */
  private validCancellationRules(store: PropertyStore): CancellationRule[] {
    const rules = servedCancellationRules(store.content, store.edits);
    return this.faults.duplicateContentIds.has(store.content.id) ? withDuplicateCancellationRule(rules) : rules;
  }

  /** The served extra-stay rules (fresh copies) before malformedRuleIds. */
  private validExtraStayRules(store: PropertyStore): ExtraStayRule[] {
    const rules = servedExtraStayRules(store.content, store.edits);
    return this.faults.duplicateContentIds.has(store.content.id) ? withDuplicateExtraStayRule(rules) : rules;
  }

  referenceLists(): ReferenceLists {
    return referenceLists();
  }

  private edit(propertyId: string, kind: 'roomType' | 'ratePlan', id: string, apply: (store: PropertyStore) => void): void {
    const store = this.mustProperty(propertyId);
    const known = kind === 'roomType' ? store.content.roomTypes : store.content.ratePlans;
    if (!known.some((x) => x.id === id)) throw new Error(`unknown ${kind} ${id} of property ${propertyId}`);
    apply(store);
    store.served = undefined;
  }

  removeRoomType(propertyId: string, roomTypeId: string): void {
    this.edit(propertyId, 'roomType', roomTypeId, (s) => s.edits.removedRoomTypes.add(roomTypeId));
  }

  restoreRoomType(propertyId: string, roomTypeId: string): void {
    this.edit(propertyId, 'roomType', roomTypeId, (s) => s.edits.removedRoomTypes.delete(roomTypeId));
  }

  removeRatePlan(propertyId: string, ratePlanId: string): void {
    this.edit(propertyId, 'ratePlan', ratePlanId, (s) => s.edits.removedRatePlans.add(ratePlanId));
  }

  restoreRatePlan(propertyId: string, ratePlanId: string): void {
    this.edit(propertyId, 'ratePlan', ratePlanId, (s) => s.edits.removedRatePlans.delete(ratePlanId));
  }

  renameRoomType(propertyId: string, roomTypeId: string, name: string): void {
    if (name === '') throw new Error('renameRoomType: the name must not be empty');
    this.edit(propertyId, 'roomType', roomTypeId, (s) => s.edits.roomTypeNames.set(roomTypeId, name));
  }

  addProperty(p: { id: string; bookingCount: number }): void {
    const at = this.now();
    this.store.addProperty(p);
    this.pms.propertyAdded(p.id, at);
  }

  // ---- PMS side ----

  pmsReservations(propertyId: string): PmsReservation[] {
    return this.pms.reservations(propertyId);
  }

  pmsReservation(propertyId: string, number: string): PmsReservation | undefined {
    return this.pms.reservationByNumber(propertyId, number);
  }

  pmsLoyaltyCards(propertyId: string, pmsPersonId: string): PmsLoyaltyCard[] | undefined {
    return this.pms.loyaltyCards(propertyId, pmsPersonId);
  }

  pmsGuest(propertyId: string, pmsPersonId: string): PmsPerson | undefined {
    return this.pms.guest(propertyId, pmsPersonId);
  }

  pmsRooms(propertyId: string): PmsRoom[] {
    return this.pms.rooms(propertyId);
  }

  pmsInvoices(propertyId: string, number: string): PmsInvoice[] | undefined {
    return this.pms.invoicesOf(propertyId, number);
  }

  pmsCompanies(propertyId: string): PmsCompany[] {
    return this.pms.companiesOf(propertyId);
  }

  dailyOccupancy(propertyId: string, startDate: string, endDate: string, otbDate?: string): DailyOccupancy[] {
    return this.pms.dailyOccupancy(propertyId, startDate, endDate, otbDate).dailyOccupancies;
  }

  occupancyInput(propertyId: string): OccupancyInput {
    return this.pms.occupancyInput(propertyId);
  }

  integrationStorageBookings(propertyId: string): IntegrationStorageBooking[] {
    return this.pms.storageBookings(propertyId);
  }

  accommodationInventory(propertyId: string): AccommodationInventory {
    return this.pms.accommodationInventory(propertyId);
  }

  pmsRoomTypeCodes(propertyId: string): Record<string, string> {
    return this.pms.roomTypeCodes(propertyId);
  }

  pmsRatePlanCodes(propertyId: string): Record<string, string> {
    return this.pms.ratePlanCodes(propertyId);
  }

  roomTypeInventory(propertyId: string, roomTypeCodes: readonly string[], startDate: string, endDate: string): DailyRoomTypeInventory[] {
    return this.pms.roomTypeInventory(propertyId, roomTypeCodes, startDate, endDate);
  }

  stayUnits(propertyId: string, firstStayDate: string, lastStayDate: string, pmsSideRatePlanCode: string): number {
    return this.pms.stayUnits(propertyId, firstStayDate, lastStayDate, pmsSideRatePlanCode);
  }

  inventoryBlocks(propertyId: string): InventoryBlock[] {
    return this.pms.blocks(propertyId);
  }

  pmsCheckIn(propertyId: string, number: string, stayIndex = 0): void {
    this.pms.checkIn(propertyId, number, stayIndex);
  }

  pmsCheckOut(propertyId: string, number: string, stayIndex = 0): void {
    this.pms.checkOut(propertyId, number, stayIndex);
  }

  pmsChangeRoom(propertyId: string, number: string, stayIndex: number, roomId?: string): void {
    this.pms.changeRoom(propertyId, number, stayIndex, roomId);
  }

  pmsCancel(propertyId: string, number: string): void {
    this.pms.cancel(propertyId, number);
  }

  touchIntegrationStorageBooking(propertyId: string, id: string): void {
    this.pms.touchStorageBooking(propertyId, id);
  }

  touchInventoryBlock(propertyId: string, id: string): void {
    this.pms.touchBlock(propertyId, id);
  }

  // ---- HTTP ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrival = this.now();
    const url = new URL(req.url ?? '/', 'http://simulator');
    const method = req.method ?? 'GET';
    let clientId: string | undefined;
    let propertyId: string | undefined;
    let reply: Reply;
    if (url.pathname === '/auth/token') {
      if (method !== 'POST') reply = { status: 405, headers: { allow: 'POST' } };
      else reply = await this.token(req, arrival);
    } else {
      const route = this.route(url);
      propertyId = route?.propertyId;
      if (!route) reply = { status: 404, body: errorBody('NotFound', `no such path: ${url.pathname}`) };
      else if (method !== (route.post ? 'POST' : 'GET')) reply = { status: 405, headers: { allow: route.post ? 'POST' : 'GET' } };
      else if (route.post && (await readBodyUpTo(req, MAX_POST_BODY_BYTES, route)) === undefined)
        reply = { status: 413, body: errorBody('PayloadTooLarge', 'the request body is too large') };
      else {
        const auth = this.authenticate(req, arrival);
        if ('status' in auth) reply = auth;
        else {
          clientId = auth.azp;
          const api: ApiRequest = { path: url.pathname };
          if (route.propertyId !== undefined) api.propertyId = route.propertyId;
          const forced = this.faults.pathStatus?.(url.pathname);
          reply =
            forced !== undefined
              ? { status: forced, body: errorBody(forced === 404 ? 'NotFound' : forced === 403 ? 'Forbidden' : 'Error', `status ${forced} (fault)`) }
              : (this.areaRefused(url.pathname, auth, route.scope, arrival) ?? this.limited(route.scope, clientId, arrival, route.run, api));
          if (PROPERTIES_PATH.test(url.pathname)) reply = this.onlyOwnProperties(reply, clientId);
        }
      }
      if (route?.pmsEnvelope) reply = withWarnings(reply);
      if (route?.pmsEnvelope && reply.status === 200 && reply.body !== undefined) reply = this.envelopeFaults(url.pathname, reply);
      const rewrite = this.faults.rewriteBody;
      if (rewrite && reply.status === 200 && reply.body !== undefined) {
        // A deep copy: the rewrite must not change the simulator's own state.
        const rewritten = rewrite(url.pathname, structuredClone(reply.body));
        if (rewritten !== undefined) reply = { ...reply, body: rewritten };
      }
      const text = reply.status === 200 && reply.body !== undefined ? this.faults.serveText?.(url.pathname) : undefined;
      if (text !== undefined) reply = { status: reply.status, headers: reply.headers ?? {}, text: text.body, chunked: text.chunked ?? false };
    }
    await this.send(res, reply);
    const entry: RequestLogEntry = { t: arrival, method, path: url.pathname, status: reply.status };
    if (clientId !== undefined) entry.clientId = clientId;
    const userAgent = req.headers['user-agent'];
    if (userAgent !== undefined) entry.userAgent = userAgent;
    if (propertyId !== undefined) entry.propertyId = propertyId;
    if (url.search !== '') entry.query = url.search.slice(1);
    this.record(entry);
  }

  /** The operation of a path, or undefined (404). */
  private route(url: URL): Route | undefined {
    const path = url.pathname;
    const q = url.searchParams;
    const list = LIST_PATH.exec(path);
    if (list) {
      const propertyId = safeDecode(list[1]!);
      return { scope: 'bookingList', run: () => this.listBookings(propertyId, q), propertyId };
    }
    const details = DETAILS_PATH.exec(path);
    if (details) {
      const propertyId = safeDecode(details[1]!);
      return { scope: 'bookingDetails', run: () => this.bookingDetails(propertyId, safeDecode(details[2]!)), propertyId };
    }
    const pms = this.pmsRoute(path, q);
    if (pms) return pms;
    const standard = (run: () => Reply): Route => ({ scope: 'standard', run });
    const ofProperty = (propertyId: string, run: () => Reply): Route => ({ scope: 'standard', run, propertyId });
    if (PROPERTIES_PATH.test(path)) return standard(() => this.listProperties(q));
    const rules = CANCELLATION_RULES_PATH.exec(path);
    if (rules) {
      const propertyId = safeDecode(rules[1]!);
      return ofProperty(propertyId, () =>
        this.withProperty(propertyId, (s) => ({
          cancellationRules: this.validCancellationRules(s).map((r) => (this.faults.malformedRuleIds.has(r.id) ? malformedCancellationRule(r) : r)),
        })),
      );
    }
    const extra = EXTRA_STAY_RULES_PATH.exec(path);
    if (extra) {
      const propertyId = safeDecode(extra[1]!);
      return ofProperty(propertyId, () =>
        this.withProperty(propertyId, (s) => ({
          extraStayRules: this.validExtraStayRules(s).map((r) => (this.faults.malformedRuleIds.has(r.id) ? malformedExtraStayRule(r) : r)),
        })),
      );
    }
    const lists = REFERENCE_LISTS;
    switch (stripSlash(path)) {
      case `${CONTENT}/meal-plans`:
        return standard(() => ({ status: 200, body: lists.mealPlans }));
      case `${CONTENT}/room-type-categories`:
        return standard(() => ({ status: 200, body: lists.roomTypeCategories }));
      case `${CONTENT}/room-amenity-categories`:
        return standard(() => ({
          status: 200,
          body:
            this.faults.roomAmenityCategoriesShape === 'flat'
              ? lists.roomAmenityCategories.flatMap((c) => c.amenities.map((a) => ({ group: c.name, code: a.code, name: a.name })))
              : lists.roomAmenityCategories,
        }));
      case `${REFERENCE_DATA}/payment-methods`:
        return standard(() => ({ status: 200, body: { paymentMethods: lists.paymentMethods } }));
      case `${REFERENCE_DATA}/property-amenity-types`:
        return standard(() => badLanguage(q) ?? { status: 200, body: { amenityTypes: lists.amenityTypes } });
      case `${REFERENCE_DATA}/property-kinds`:
        return standard(() => badLanguage(q) ?? { status: 200, body: { propertyKinds: lists.propertyKinds } });
    }
    const property = PROPERTY_PATH.exec(path);
    if (property) {
      const propertyId = safeDecode(property[1]!);
      return ofProperty(propertyId, () => badLanguage(q) ?? this.withProperty(propertyId, (s) => this.servedFor(s)));
    }
    return undefined;
  }

  /** The PMS, PMS Analytics and PMS Integration Storage operations. */
  private pmsRoute(path: string, q: URLSearchParams): Route | undefined {
    const h = this.pmsHttp;
    const pms = (m: RegExpExecArray, run: (propertyId: string) => Reply): Route => {
      const propertyId = safeDecode(m[1]!);
      return { scope: 'standard', run: () => run(propertyId), propertyId, pmsEnvelope: true };
    };
    const storage = (m: RegExpExecArray, run: (propertyId: string, id: string) => Reply): Route => {
      const propertyId = safeDecode(m[1]!);
      const id = safeDecode(m[2]!);
      return { scope: 'integrationStorage', run: () => run(propertyId, id), propertyId };
    };
    let m: RegExpExecArray | null;
    if ((m = PMS_SEARCH_PATH.exec(path))) return pms(m, (p) => h.searchReservations(p, q));
    if ((m = PMS_RESERVATION_PATH.exec(path))) {
      const number = safeDecode(m[2]!);
      return pms(m, (p) => h.reservation(p, number, q));
    }
    // guests/search is a provider operation the simulator does not serve: 404 as an unknown path.
    if ((m = PMS_GUEST_PATH.exec(path)) && m[2] !== 'search') {
      const personId = safeDecode(m[2]!);
      return pms(m, (p) => h.guest(p, personId, q));
    }
    if ((m = PMS_LOYALTY_CARDS_PATH.exec(path))) {
      const personId = safeDecode(m[2]!);
      return pms(m, (p) => h.loyaltyCards(p, personId, q));
    }
    if ((m = PMS_ROOMS_PATH.exec(path))) return pms(m, (p) => h.rooms(p, q));
    if ((m = PMS_INVOICES_PATH.exec(path))) {
      const number = safeDecode(m[2]!);
      return pms(m, (p) => h.invoices(p, number, q));
    }
    if ((m = PMS_COMPANIES_PATH.exec(path))) return pms(m, (p) => h.companies(p, q));
    if ((m = OCCUPANCY_PATH.exec(path))) return pms(m, (p) => h.dailyOccupancy(p, q));
    if ((m = STORAGE_BOOKING_PATH.exec(path))) return storage(m, (p, id) => h.storageBooking(p, id));
    if ((m = STORAGE_BLOCK_PATH.exec(path))) return storage(m, (p, id) => h.inventoryBlock(p, id));
    if ((m = PMS_ACCOMMODATION_PATH.exec(path))) return pms(m, (p) => h.accommodationInventory(p));
    if ((m = STORAGE_INVENTORY_SEARCH_PATH.exec(path))) {
      const propertyId = safeDecode(m[1]!);
      const post = (body: string) => h.searchInventory(propertyId, body);
      return { scope: 'integrationStorage', run: () => post(''), post, propertyId };
    }
    if ((m = STORAGE_STAY_UNITS_PATH.exec(path))) {
      const propertyId = safeDecode(m[1]!);
      return { scope: 'integrationStorage', run: () => h.stayUnits(propertyId, q), propertyId };
    }
    return undefined;
  }

  private withProperty(propertyId: string, body: (store: PropertyStore) => unknown): Reply {
    const store = this.property(propertyId);
    if (!store) return { status: 404, body: errorBody('PropertyNotFound', `property ${propertyId} not found`) };
    return { status: 200, body: body(store) };
  }

  /** The served property (with duplicates when duplicateContentIds names it), or its malformed body when malformedPropertyIds does. */
  private servedFor(store: PropertyStore): unknown {
    const p = this.validProperty(store);
    return this.faults.malformedPropertyIds.has(p.id) ? malformedPropertyInfo(p) : p;
  }

  /** GET /api/content/v1/properties: keyset pages in id order; `next` = after the page's last id. */
  /** A page of the property list as a client limited to some properties sees it: the others left out. */
  private onlyOwnProperties(reply: Reply, clientId: string): Reply {
    const own = this.clients.get(clientId)?.propertyIds;
    if (!own || reply.status !== 200 || reply.body === undefined) return reply;
    const page = reply.body as ContentPropertyPage;
    return { ...reply, body: { ...page, properties: page.properties.filter((p) => own.includes(String(p.id))) } };
  }

  private listProperties(q: URLSearchParams): Reply {
    const bad = (code: string, message: string): Reply => ({ status: 400, body: errorBody(code, message) });
    let count = MAX_PROPERTIES_PAGE;
    const countParam = q.get('count');
    if (countParam !== null && countParam !== '') {
      if (!/^\d+$/.test(countParam)) return bad('InvalidCount', `count must be an integer from 1 to ${MAX_PROPERTIES_PAGE}`);
      count = Number(countParam);
      if (count < 1 || count > MAX_PROPERTIES_PAGE) return bad('InvalidCount', `count must be an integer from 1 to ${MAX_PROPERTIES_PAGE}`);
    }
    const include = q.get('include') ?? '';
    const full = include.toLowerCase() === 'all';
    if (!full && include !== '') return bad('InvalidInclude', 'include must be All or empty');
    const language = badLanguage(q);
    if (language) return language;
    const since = q.get('since') ?? '';
    let after: string | undefined;
    if (since !== '') {
      after = decodeSince(since);
      if (after === undefined) return bad('InvalidSince', 'since must be the next value of a previous page');
    }
    const ids = this.store.contentOrder();
    let start = 0;
    if (after !== undefined) {
      // First id strictly after `after` (binary search over the sorted ids).
      let lo = 0;
      let hi = ids.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (compareIds(ids[mid]!, after) <= 0) lo = mid + 1;
        else hi = mid;
      }
      start = lo;
    }
    const pageIds = ids.slice(start, start + count);
    const more = start + count < ids.length;
    const properties = pageIds.map((id) => (full ? (this.servedFor(this.store.stores.get(id)!) as ContentPropertyInfo) : { id }));
    if (full && this.faults.duplicatePropertyInPage && properties.length > 0) properties.push(properties[0]!);
    const body: ContentPropertyPage = {
      next: more ? encodeSince(pageIds[pageIds.length - 1]!) : null,
      properties,
      warnings: [],
    };
    return { status: 200, body };
  }

  private record(entry: RequestLogEntry): void {
    const { status } = entry;
    this.stats.byStatus[status] = (this.stats.byStatus[status] ?? 0) + 1;
    if (status === 429) {
      this.stats.rejected429++;
      if (entry.clientId !== undefined) this.stats.rejected429ByClient[entry.clientId] = (this.stats.rejected429ByClient[entry.clientId] ?? 0) + 1;
    }
    const log = this.stats.requestLog;
    if (log) {
      log.push(entry);
      if (log.length > 10_000) log.splice(0, log.length - 10_000);
    }
  }

  private async send(res: ServerResponse, reply: Reply): Promise<void> {
    const { min, max } = this.faults.latencyMs;
    const delay = max > 0 ? min + Math.random() * Math.max(0, max - min) : min;
    if (delay > 0) await new Promise((r) => setTimeout(r, delay));
    // The provider's clock: the Date header follows the simulator's clock, as the data does.
    const headers: Record<string, string> = { date: new Date(this.now()).toUTCString(), ...reply.headers };
    let payload: string | undefined;
    if (reply.text !== undefined) {
      headers['content-type'] = 'application/json; charset=utf-8';
      if (reply.chunked) {
        res.writeHead(reply.status, headers);
        await writeInChunks(res, reply.text);
        return;
      }
      payload = reply.text;
    } else if (reply.html !== undefined) {
      payload = reply.html;
      headers['content-type'] = 'text/html; charset=utf-8';
    } else if (reply.body !== undefined) {
      payload = JSON.stringify(reply.body);
      headers['content-type'] = 'application/json; charset=utf-8';
    }
    if (payload !== undefined && reply.damage === 'truncate') payload = firstHalf(payload);
    headers['content-length'] = String(payload === undefined ? 0 : Buffer.byteLength(payload));
    res.writeHead(reply.status, headers);
    if (payload !== undefined && reply.damage === 'stall') {
      // The whole length is announced; half of it is sent and the rest never is.
      this.stalledResponses.add(res);
      res.once('close', () => this.stalledResponses.delete(res));
      res.write(firstHalf(payload));
      return;
    }
    res.end(payload);
  }

  private rateHeaders(remaining: number[]): Record<string, string> {
    const h: Record<string, string> = {};
    // Window i of a scope is reported in header i, whatever its configured length.
    RATE_HEADERS.forEach((name, i) => {
      const r = remaining[i];
      if (r !== undefined) h[name] = String(r);
    });
    return h;
  }

  /** The claims of a valid bearer token, or the 401 reply. */
  private authenticate(req: IncomingMessage, t: number): AccessClaims | Reply {
    const header = req.headers.authorization ?? '';
    const m = /^Bearer\s+(\S+)$/i.exec(header);
    const claims = m ? this.tokens.verify(m[1]!, t) : undefined;
    if (!claims) {
      return {
        status: 401,
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
        body: errorBody('Unauthorized', 'Token missing, invalid or expired'),
      };
    }
    // A connection deleted (or its secret regenerated) in the extranet: its tokens stop working.
    const client = this.clients.get(claims.azp);
    if (!client || (claims.gen ?? 0) !== (this.generations.get(claims.azp) ?? 0)) {
      return {
        status: 401,
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
        body: errorBody('Unauthorized', 'Token of a revoked API connection'),
      };
    }
    if (this.faultRng() < this.faults.spurious401Rate) {
      return {
        status: 401,
        headers: { 'www-authenticate': 'Bearer error="invalid_token"' },
        body: errorBody('Unauthorized', 'Token invalid (injected fault)'),
      };
    }
    return claims;
  }

  /** 403 for a request to an API area the token's api_accesses claim does not list (a token without the claim may use every area); not counted. */
  private areaRefused(path: string, claims: AccessClaims, scope: RateLimitScope, t: number): Reply | undefined {
    // What the connection could use when the token was issued: its claim, or the areas behind a claim that says less.
    const granted = claims.granted ?? claims.api_accesses;
    const area = areaOfPath(path);
    if (granted === undefined || area === undefined || granted.includes(simulatorClaims[area])) return undefined;
    return {
      status: 403,
      headers: this.rateHeaders(this.limiter.peek(scope, claims.azp, t)),
      body: errorBody('Forbidden', `the access token has no access to this method (api_accesses lacks ${simulatorClaims[area]})`),
    };
  }

  /**
   * Faults first (not counted), then the sliding windows, then the handler, then the faults
   * that damage a served answer (counted). `api` is absent for the token endpoint. A random
   * fault whose rate is 0 draws nothing from faultRng, so runs without it stay as they were.
   */
  private limited(scope: RateLimitScope, key: string, t: number, handler: () => Reply, api?: ApiRequest): Reply {
    const propertyId = api?.propertyId;
    // A property of another API connection: refused, as the provider does, and not counted.
    const allowed = api ? this.clients.get(key)?.propertyIds : undefined;
    if (propertyId !== undefined && allowed && !allowed.includes(propertyId)) {
      return {
        status: 403,
        headers: this.rateHeaders(this.limiter.peek(scope, key, t)),
        body: errorBody('Forbidden', `the API connection has no access to property ${propertyId}`),
      };
    }
    const forProperty = propertyId === undefined ? undefined : this.faults.propertyStatus.get(propertyId);
    if (propertyId !== undefined && forProperty && (forProperty.scopes ?? API_SCOPES).some((s) => s === scope)) {
      return this.propertyFault(forProperty.status, propertyId, scope, key, t);
    }
    if (this.faultRng() < this.faults.spurious429Rate) {
      return {
        status: 429,
        headers: { ...this.rateHeaders(this.limiter.peek(scope, key, t)), 'retry-after': '1' },
        body: errorBody('TooManyRequests', 'Rate limit exceeded (injected fault)'),
      };
    }
    if (this.faultRng() < this.faults.error5xxRate) {
      const status = this.faultRng() < 0.5 ? 500 : 503;
      const headers = this.rateHeaders(this.limiter.peek(scope, key, t));
      if (status === 503) headers['retry-after'] = '1';
      return {
        status,
        headers,
        body: errorBody(status === 500 ? 'InternalError' : 'ServiceUnavailable', 'Injected fault; retry later'),
      };
    }
    const decision = this.limiter.take(scope, key, t);
    const headers = this.rateHeaders(decision.remaining);
    if (!decision.allowed) {
      headers['retry-after'] = String(decision.retryAfterSeconds);
      return { status: 429, headers, body: errorBody('TooManyRequests', 'Rate limit exceeded') };
    }
    this.stats.accepted[scope] = (this.stats.accepted[scope] ?? 0) + 1;
    if (api) {
      const byScope = (this.stats.acceptedByClient[key] ??= {});
      byScope[scope] = (byScope[scope] ?? 0) + 1;
    }
    const reply = handler();
    const served: Reply = { ...reply, headers: { ...reply.headers, ...headers } };
    if (api && reply.status === 200 && reply.body !== undefined) this.damageServed(served, api.path);
    return served;
  }

  /** Faults.pmsErrorEnvelopeRate and pmsWarningRate on a PMS or analytics answer served with 200. */
  private envelopeFaults(path: string, reply: Reply): Reply {
    const f = this.faults;
    const roll = (rate: number) => rate > 0 && this.faultRng() < rate;
    if ((f.pmsErrorEnvelopePaths?.test(path) ?? true) && roll(f.pmsErrorEnvelopeRate)) {
      this.stats.errorEnvelopes++;
      const statuses = f.pmsErrorEnvelopeStatuses.length > 0 ? f.pmsErrorEnvelopeStatuses : [200];
      const status = statuses[Math.floor(this.faultRng() * statuses.length)]!;
      const errors = [{ code: 'SIM_ERROR', message: `the PMS could not answer this request (injected HTTP ${status} error envelope)` }];
      if (status !== 200) return { status, headers: reply.headers ?? {}, body: { warnings: [], errors } };
      return { ...reply, body: { ...emptied(reply.body as Record<string, unknown>), warnings: [], errors } };
    }
    if (roll(f.pmsWarningRate)) {
      this.stats.warningsServed++;
      const body = reply.body as Record<string, unknown>;
      return { ...reply, body: { ...body, warnings: [{ code: 'SIM_WARNING', message: 'a non-critical issue (injected warning)' }] } };
    }
    return reply;
  }

  /** Applies at most one of the stall, truncation and HTML faults to a served 200 answer. */
  private damageServed(reply: Reply, path: string): void {
    const f = this.faults;
    const roll = (rate: number) => rate > 0 && this.faultRng() < rate;
    if ((f.stallMidBodyPaths === undefined || path.search(f.stallMidBodyPaths) !== -1) && roll(f.stallMidBodyRate)) {
      reply.damage = 'stall';
      this.stats.stalled++;
    } else if (roll(f.truncatedBodyRate)) {
      reply.damage = 'truncate';
      this.stats.truncated++;
    } else if (roll(f.htmlBodyRate)) {
      delete reply.body;
      reply.html = GATEWAY_ERROR_PAGE;
      this.stats.html++;
    }
  }

  /** The answer of the propertyStatus fault (not counted against the limits). */
  private propertyFault(status: number, propertyId: string, scope: RateLimitScope, key: string, t: number): Reply {
    const headers = this.rateHeaders(this.limiter.peek(scope, key, t));
    if (status === 429 || status === 503) headers['retry-after'] = '1';
    if (status === 401) headers['www-authenticate'] = 'Bearer error="invalid_token"';
    const code = STATUS_CODES[status] ?? `Http${status}`;
    return { status, headers, body: errorBody(code, `property ${propertyId}: ${code} (injected fault)`) };
  }

  /** The token-only faults (not counted), or undefined. */
  private tokenFault(ip: string, t: number): Reply | undefined {
    let status = this.faults.tokenStatus;
    if (status === undefined && this.faults.tokenError5xxRate > 0 && this.faultRng() < this.faults.tokenError5xxRate) {
      status = this.faultRng() < 0.5 ? 500 : 503;
    }
    if (status === undefined) return undefined;
    const headers = this.rateHeaders(this.limiter.peek('token', ip, t));
    if (status === 429 || status === 503) headers['retry-after'] = '1';
    return { status, headers, body: { error: oauthError(status), error_description: 'Injected fault; retry later' } };
  }

  private async token(req: IncomingMessage, t: number): Promise<Reply> {
    const ip = req.socket.remoteAddress ?? 'unknown';
    const body = await readBody(req);
    const fault = this.tokenFault(ip, t);
    if (fault) return fault;
    return this.limited('token', ip, t, () => {
      const form = new URLSearchParams(body);
      const clientId = form.get('client_id') ?? '';
      const secret = this.clients.get(clientId)?.clientSecret;
      if (form.get('grant_type') !== 'client_credentials' || secret === undefined || secret !== form.get('client_secret')) {
        return {
          status: 401,
          body: { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' },
        };
      }
      this.stats.tokensIssued++;
      return {
        status: 200,
        headers: { 'cache-control': 'no-store', pragma: 'no-cache' },
        body: {
          access_token: this.tokens.issue(clientId, t, this.ttl, this.generations.get(clientId) ?? 0, ...this.apiAccessesOf(clientId)),
          expires_in: this.ttl,
          refresh_expires_in: 0,
          token_type: 'Bearer',
          'not-before-policy': 0,
          scope: '',
        },
      };
    });
  }

  /**
   * The api_accesses claim of the client's next token (its own list, every area by default, none
   * when null), and what it grants when its `claim` says less.
   */
  private apiAccessesOf(clientId: string): [claim: readonly string[] | undefined, granted?: readonly string[]] {
    const client = this.clients.get(clientId);
    const own = client?.apiAccesses;
    const granted = own === null ? undefined : (own ?? Object.values(simulatorClaims));
    return client?.claim === undefined ? [granted] : [client.claim, granted ?? Object.values(simulatorClaims)];
  }

  private property(propertyId: string): PropertyStore | undefined {
    return this.store.stores.get(propertyId);
  }

  private listBookings(propertyId: string, q: URLSearchParams): Reply {
    const store = this.property(propertyId);
    if (!store) return { status: 404, body: errorBody('PropertyNotFound', `property ${propertyId} not found`) };
    const bad = (code: string, message: string): Reply => ({ status: 400, body: errorBody(code, message) });

    let count = 1000;
    const countParam = q.get('count');
    if (countParam !== null && countParam !== '') {
      if (!/^\d+$/.test(countParam)) return bad('InvalidCount', 'count must be an integer from 1 to 1000');
      count = Number(countParam);
      if (count < 1 || count > 1000) return bad('InvalidCount', 'count must be an integer from 1 to 1000');
    }
    const tokenParam = q.get('continueToken') || undefined;
    const lastModParam = q.get('lastModification') || undefined;
    if (tokenParam && lastModParam) {
      return bad('InvalidParameters', 'continueToken and lastModification cannot be sent together');
    }

    const rejections = tokenParam ? (this.faults.continueTokenRejections.get(propertyId) ?? 0) : 0;
    if (rejections > 0) {
      this.faults.continueTokenRejections.set(propertyId, rejections - 1);
      this.stats.continueTokensRejected++;
      return { status: 400 };
    }

    let cursor: Cursor;
    let givenToken: string | undefined;
    if (tokenParam) {
      const decoded = decodeContinueToken(tokenParam, this.continueEpoch);
      if ('error' in decoded) return bad('InvalidContinueToken', decoded.error);
      cursor = decoded;
      givenToken = tokenParam.replaceAll(' ', '+');
    } else if (lastModParam) {
      const m = LAST_MODIFICATION.exec(lastModParam);
      const ms = m ? Date.parse(m[8] ? lastModParam : `${lastModParam}Z`) : NaN;
      if (Number.isNaN(ms)) return bad('InvalidLastModification', 'lastModification must be a UTC date-time');
      if (ms < EPOCH_2009_MS) {
        return bad('InvalidLastModification', 'lastModification must not be earlier than 2009-01-01T00:00:00Z');
      }
      cursor = { ms, ids: [] };
    } else {
      // Full synchronisation from 2009-01-01T00:00:00Z.
      cursor = { ms: EPOCH_2009_MS, ids: [] };
    }

    const page = this.store.page(store, cursor, count);
    const body: BookingsPage = {
      // An empty page hands back the token it was given.
      continueToken: page.items.length === 0 && givenToken !== undefined ? givenToken : encodeContinueToken(page.cursor, this.continueEpoch),
      hasMoreData: page.hasMoreData,
      bookingSummaries: page.items.map((b) => summaryOf(store.content, b)),
    };
    return { status: 200, body };
  }

  private bookingDetails(propertyId: string, number: string): Reply {
    const store = this.property(propertyId);
    const b = store?.byNumber.get(number);
    if (store && b) {
      this.stats.detailCallsByNumber.set(number, (this.stats.detailCallsByNumber.get(number) ?? 0) + 1);
      b.detailReadsSinceChange++;
    }
    const notFound = (): Reply => ({
      status: 404,
      body: errorBody('BookingNotFound', `booking ${number} not found in property ${propertyId}`),
    });
    if (!store || !b || this.faults.notFoundBookingNumbers.has(number)) return notFound();
    if (b.detailReadsSinceChange <= this.faults.replicaLag404s) {
      this.stats.lagged404++;
      return notFound();
    }
    const stale = b.previous !== null && b.detailReadsSinceChange <= this.faults.replicaLag404s + this.faults.staleDetailReads;
    if (stale) this.stats.staleServed++;
    const booking = this.store.details(store, stale ? b.previous! : b);
    const h = hashString(number);
    if (this.faults.malformedBookingNumbers.has(number) || h / 4294967296 < this.faults.malformedRate) {
      return { status: 200, body: { booking: malformed(booking, h) } };
    }
    if (mix(h, 0x7a7e) / 4294967296 < this.faults.specRatePlanIdRate) return { status: 200, body: { booking: withSpecRatePlanId(booking) } };
    return { status: 200, body: { booking } };
  }
}

/** A booking whose daily rates spell the rate plan's key `RatePlanId`, as the interface specification does. */
function withSpecRatePlanId(booking: BookingPayload): Record<string, unknown> {
  return {
    ...booking,
    roomStays: booking.roomStays.map((rs) => ({ ...rs, dailyRates: rs.dailyRates.map(({ ratePlanId, ...rest }) => ({ RatePlanId: ratePlanId, ...rest })) })),
  };
}

/** A body that fails the details schema, the same for a given booking every time. */
function malformed(booking: BookingPayload, hash: number): Record<string, unknown> {
  const bad: Record<string, unknown> = { ...booking };
  if ((hash >>> 7) % 2 === 0) {
    bad['roomStays'] = 'unavailable';
  } else {
    // Required parts of every room stay are missing or of the wrong type, and so is the total.
    bad['roomStays'] = booking.roomStays.map((rs) => {
      const { total: _total, ...rest } = rs;
      return { ...rest, dailyRates: { unavailable: true } };
    });
    delete bad['total'];
  }
  return bad;
}

/** Starts a simulator listening on `opts.host:opts.port` (default 127.0.0.1, a free port). */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const sim = new SimulatorImpl(opts);
  await sim.listen();
  return sim;
}
