/**
 * /metrics through prom-client: the process's counters, the provider's health (failures by
 * cause, retries, last success, outages, request latency), the database and the lease, and
 * gauges read from the mirror's bookkeeping tables (queue, list position, property states):
 * those come from a snapshot read on a connection of its own, never the lease heartbeat's
 * (table-snapshot.ts). When the database is away they are left out of the scrape
 * (staysync_database_up says why); the rest still answers.
 */
import client from 'prom-client';
import type { DatabaseAvailability } from '../store/availability.js';
import type { Db } from '../store/types.js';
import type { Logger } from '../util/log.js';
import type { Replica } from '../cluster/replicas.js';
import { cursorStates, streamNames } from '../store/states.js';
import type { HttpListener } from './http.js';
import { failureCauses } from '../provider/health.js';
import { apiAreaNames } from '../provider/api-access.js';
import { registerSweepMetrics } from './sweep-status.js';
import { TableSnapshots } from './table-snapshot.js';
import { SyncCounters } from '../sync/runtime/counters.js';
import { heldConnectionStates, type ConnectionView, type Fleet } from '../sync/runtime/fleet.js';

export interface MetricSources {
  /** The process's API connections: their counters and provider figures carry a `connection` label. */
  fleet: Pick<Fleet, 'connections' | 'onConnection' | 'sharedTokenBudget'>;
  availability: DatabaseAvailability;
  /** This process among the replicas: the connection leases it holds. */
  replica: Replica;
  /** Reads for the table gauges: the handle's metrics connection (never the control pool, the heartbeat's). */
  db: Db;
  /** For the one line when the table reads start failing, and the one when they succeed again. */
  logger: Logger;
  /** Whether /readyz would answer ready. */
  ready: () => boolean;
  /** Connections the token endpoint's per-IP limit carries (provider/token-capacity.ts). */
  tokenCapacity: number;
  /** Transactions this process ended in the database so far (store/transaction-count.ts). */
  transactions: () => number;
  /** The HTTP listeners, for the connections their caps closed. */
  listeners?: Record<'ops' | 'webhooks', () => HttpListener | undefined>;
}

const snake = (k: string) => k.replace(/[A-Z]/g, (m) => '_' + m.toLowerCase());

/** A registry with every staysync metric and Node's default process metrics. */
export function createMetrics(sources: MetricSources): client.Registry {
  const register = new client.Registry();
  client.collectDefaultMetrics({ register });
  const { availability, replica, fleet } = sources;
  const views = () => fleet.connections;

  for (const key of Object.keys(new SyncCounters().toJSON())) {
    new client.Counter({
      name: `staysync_${snake(key)}_total`,
      help: `Sync counter ${key}, by API connection.`,
      labelNames: ['connection'],
      registers: [register],
      collect() {
        this.reset();
        for (const v of views()) this.inc({ connection: v.name }, v.ctx.counters.toJSON()[key] ?? 0);
      },
    });
  }
  new client.Gauge({
    name: 'staysync_connection_state',
    help: 'Each API connection: 1 for its state (starting, running, credentials_refused, failed, stopped), else 0.',
    labelNames: ['connection', 'state'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) for (const state of heldConnectionStates) this.set({ connection: v.name, state }, v.state === state ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'staysync_api_area_granted',
    help: "Each API connection and API area the daemon reads (read_reservation, content, reference_data, pms, pms_analytics, pms_integration_storage): 1 when its streams may ask it under the connection's current access token (a documented area its api_accesses claim names; an area whose claim name is only assumed, always, and a 403 decides per property and method; every area without the claim), 0 when not (its streams do not run: not a failure).",
    labelNames: ['connection', 'area'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) {
        const access = v.client.currentAccess;
        for (const area of apiAreaNames) this.set({ connection: v.name, area: snake(area) }, access.grants(area) ? 1 : 0);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_connections_token_capacity',
    help: "How many connections the token endpoint's per-IP limit keeps authenticated (15-minute tokens); above it, connections wait for tokens.",
    registers: [register],
    collect() {
      this.set(sources.tokenCapacity);
    },
  });
  new client.Gauge({
    name: 'staysync_token_requests_waiting',
    help: 'Token requests of all connections waiting for the per-IP token budget.',
    registers: [register],
    collect() {
      this.set(fleet.sharedTokenBudget.snapshot().waiting);
    },
  });

  new client.Counter({
    name: 'staysync_http_connections_dropped_total',
    help: 'Connections an HTTP listener (ops, webhooks) closed at once because a cap was reached: its connection cap (the connection idle the longest made room, or the new one when every connection had a request in progress), or 4 requests in progress on one connection (pipelined without reading the answers).',
    labelNames: ['listener'],
    registers: [register],
    collect() {
      this.reset();
      for (const [name, listener] of Object.entries(sources.listeners ?? {})) {
        const l = listener();
        if (l) this.inc({ listener: name }, l.dropped);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_ready',
    help: '1 when the daemon can do its work (database reachable, registered among the replicas, not stopping).',
    registers: [register],
    collect() {
      this.set(sources.ready() ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'staysync_database_up',
    help: '1 when the database answers, 0 during an outage.',
    registers: [register],
    collect() {
      this.set(availability.available ? 1 : 0);
    },
  });
  new client.Counter({
    name: 'staysync_database_transactions_total',
    help: 'Transactions this process ended in the database, on all its connections (a statement outside a transaction counts as one): what following the properties costs the database.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(sources.transactions());
    },
  });
  new client.Counter({
    name: 'staysync_database_outages_total',
    help: 'Database outages seen by this process.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(availability.outages);
    },
  });
  new client.Gauge({
    name: 'staysync_lease_held',
    help: 'Connection leases this replica holds (the connections it syncs).',
    registers: [register],
    collect() {
      this.set(replica.held.length);
    },
  });
  new client.Counter({
    name: 'staysync_lease_losses_total',
    help: 'Times this replica lost a connection lease to another while holding it.',
    registers: [register],
    collect() {
      this.reset();
      this.inc(replica.losses);
    },
  });

  new client.Counter({
    name: 'staysync_provider_requests_total',
    help: 'HTTP requests sent to the provider, by API connection and rate-limit scope.',
    labelNames: ['connection', 'scope'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) for (const [scope, n] of Object.entries(v.client.stats().requests)) this.inc({ connection: v.name, scope }, n);
    },
  });
  new client.Counter({
    name: 'staysync_provider_failures_total',
    help: 'Provider attempts without a usable answer, by cause (http_5xx, throttled, timeout, connection_refused, connection_reset, dns, tls, network, invalid_body, provider_errors: a 2xx whose errors was not empty).',
    labelNames: ['connection', 'cause'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) {
        const failures = v.client.health.failures;
        for (const cause of failureCauses) this.inc({ connection: v.name, cause }, failures[cause]);
      }
    },
  });
  new client.Counter({
    name: 'staysync_provider_warnings_total',
    help: 'Warnings in the answers the provider gave (the warnings of the PMS envelope), by API connection. Each kind is logged once.',
    labelNames: ['connection'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) this.inc({ connection: v.name }, v.client.stats().warnings);
    },
  });
  new client.Counter({
    name: 'staysync_provider_retries_total',
    help: 'Provider requests (token requests included) sent again after a failure, by API connection.',
    labelNames: ['connection'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) this.inc({ connection: v.name }, v.client.health.retries);
    },
  });
  new client.Gauge({
    name: 'staysync_provider_up',
    help: '0 while the host is in an outage for a connection (no usable answer for a while), else 1.',
    labelNames: ['connection', 'host'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views()) for (const h of v.client.health.hostsSeen()) this.set({ connection: v.name, host: h.host }, h.outage ? 0 : 1);
    },
  });
  new client.Gauge({
    name: 'staysync_provider_last_success_timestamp_seconds',
    help: 'When the host last gave a connection a usable answer (unix seconds).',
    labelNames: ['connection', 'host'],
    registers: [register],
    collect() {
      this.reset();
      for (const v of views())
        for (const h of v.client.health.hostsSeen()) if (h.lastSuccessAt !== undefined) this.set({ connection: v.name, host: h.host }, h.lastSuccessAt / 1000);
    },
  });
  const latency = new client.Histogram({
    name: 'staysync_provider_request_duration_seconds',
    help: 'Duration of provider HTTP exchanges, by scope and HTTP status (or failure cause when there was no answer).',
    labelNames: ['scope', 'status'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [register],
  });

  const eventLatency = new client.Histogram({
    name: 'staysync_webhook_event_latency_seconds',
    help: 'From the provider creating a change event to its refresh committed in the mirror, by event type (the documented types; any other counts as other).',
    labelNames: ['event_type'],
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
    registers: [register],
  });

  // Freshness: labels per property only (bounded by the properties followed), nothing per booking.
  const changeLag = new client.Histogram({
    name: 'staysync_change_lag_seconds',
    help: "From a fresh change's modification time at the provider (the summary's modifiedDateTime, whole seconds) to its details written in the mirror, by property.",
    labelNames: ['property_id'],
    buckets: [0.25, 0.5, 1, 2, 3, 5, 10, 15, 30, 60, 120, 300, 600],
    registers: [register],
  });
  // Connections started later (a reload) are observed too. The histograms have no connection
  // label: a property belongs to one connection, and 200 connections times buckets would be a lot.
  const observe = (v: ConnectionView) => {
    v.client.health.onExchange((e) => latency.observe({ scope: e.scope, status: e.outcome }, e.seconds));
    v.ctx.events.on('eventProcessed', (eventType, seconds) => eventLatency.observe({ event_type: eventType }, Math.max(0, seconds)));
    v.ctx.events.on('changeLag', (propertyId, seconds) => changeLag.observe({ property_id: propertyId }, Math.max(0, seconds)));
  };
  for (const v of views()) observe(v);
  fleet.onConnection(observe);

  // Table gauges: one snapshot of the bookkeeping, shared by the gauges below and the sweep's.
  const snapshots = new TableSnapshots({ db: sources.db, availability, logger: sources.logger });
  const tables = async () => (await snapshots.current())?.tables;
  new client.Gauge({
    name: 'staysync_metrics_snapshot_age_seconds',
    help: 'Age of the snapshot of the bookkeeping tables that the table gauges of this scrape show (seconds since its read began). It grows while a read is held up (a lock, a busy server): the last snapshot is shown meanwhile. Absent while none is shown (database away, no read finished yet).',
    registers: [register],
    async collect() {
      this.reset();
      const s = await snapshots.current();
      if (s) this.set(Math.max(0, (Date.now() - s.readAt) / 1000));
    },
  });
  new client.Counter({
    name: 'staysync_metrics_snapshot_failures_total',
    help: 'Reads of the bookkeeping tables for /metrics that failed or ran over their time limit (the last snapshot is shown meanwhile).',
    registers: [register],
    collect() {
      this.reset();
      this.inc(snapshots.failures);
    },
  });
  registerSweepMetrics(register, async () => (await tables())?.sweeps);

  new client.Gauge({
    name: 'staysync_detail_queue_pending',
    help: 'Booking detail fetches waiting, by property.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const d of (await tables())?.queue ?? []) this.set({ property_id: d.propertyId }, d.pending);
    },
  });
  new client.Gauge({
    name: 'staysync_detail_queue_parked',
    help: 'Booking detail fetches that answered 404 several times or failed validation, by property and state; fetched again on a growing backoff.',
    labelNames: ['property_id', 'state'],
    registers: [register],
    async collect() {
      this.reset();
      for (const d of (await tables())?.queue ?? []) {
        this.set({ property_id: d.propertyId, state: 'not_found' }, d.notFound);
        this.set({ property_id: d.propertyId, state: 'quarantined' }, d.quarantined);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_quarantine_payloads',
    help: 'Payloads in quarantine, by stream and cause (validation: not the documented shape; write: the database refused to store it). Retried on a growing backoff and by `staysync quarantine retry`.',
    labelNames: ['stream', 'cause'],
    registers: [register],
    async collect() {
      this.reset();
      for (const q of (await tables())?.quarantine ?? []) this.set({ stream: q.stream, cause: q.cause }, q.payloads);
    },
  });
  new client.Gauge({
    name: 'staysync_pms_queue_pending',
    help: 'PMS reservation fetches waiting, by property.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const d of (await tables())?.pmsQueue ?? []) this.set({ property_id: d.propertyId }, d.pending);
    },
  });
  new client.Gauge({
    name: 'staysync_pms_queue_parked',
    help: 'PMS reservation fetches that answered 404 several times or failed validation, by property and state; fetched again on a growing backoff.',
    labelNames: ['property_id', 'state'],
    registers: [register],
    async collect() {
      this.reset();
      for (const d of (await tables())?.pmsQueue ?? []) {
        this.set({ property_id: d.propertyId, state: 'not_found' }, d.notFound);
        this.set({ property_id: d.propertyId, state: 'quarantined' }, d.quarantined);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_pms_queue_oldest_pending_age_seconds',
    help: 'Age of the oldest pending PMS reservation fetch, by property (0 when none).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      const now = Date.now();
      for (const d of (await tables())?.pmsQueue ?? []) this.set({ property_id: d.propertyId }, ageSeconds(now, d.oldestPendingAt));
    },
  });
  new client.Gauge({
    name: 'staysync_webhook_events_pending',
    help: 'Change events stored and not processed yet, by followed property (property_id is empty for events of properties no connection follows, or that name none).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const e of (await tables())?.pendingEvents ?? []) this.set({ property_id: e.propertyId }, e.pending);
    },
  });
  new client.Gauge({
    name: 'staysync_webhook_events_oldest_pending_age_seconds',
    help: 'Time since the oldest change event still pending was stored, by property (0 when none).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      const now = Date.now();
      for (const e of (await tables())?.pendingEvents ?? []) this.set({ property_id: e.propertyId }, ageSeconds(now, e.oldestPendingAt));
    },
  });
  new client.Gauge({
    name: 'staysync_webhook_events',
    help: 'Change events stored, by type (the documented types; any other counts as other) and state (pending, waiting, processed, ignored, failed).',
    labelNames: ['event_type', 'state'],
    registers: [register],
    async collect() {
      this.reset();
      for (const e of (await tables())?.events ?? []) this.set({ event_type: e.eventType, state: e.state }, e.n);
    },
  });
  new client.Gauge({
    name: 'staysync_detail_queue_oldest_pending_age_seconds',
    help: 'Age of the oldest pending booking detail fetch, by property (0 when none).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      const now = Date.now();
      for (const d of (await tables())?.queue ?? []) this.set({ property_id: d.propertyId }, ageSeconds(now, d.oldestPendingAt));
    },
  });
  new client.Gauge({
    name: 'staysync_booking_list_position_seconds',
    help: 'Latest modification time covered by the booking list cursor (unix seconds), by property.',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const c of (await tables())?.cursors ?? [])
        if (c.stream === streamNames.bookingSummaries) this.set({ property_id: c.propertyId }, (c.position?.getTime() ?? 0) / 1000);
    },
  });
  new client.Gauge({
    name: 'staysync_last_poll_timestamp_seconds',
    help: 'When the booking list of the property was last asked successfully (unix seconds; sync_cursors.last_poll_at).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const c of (await tables())?.cursors ?? [])
        if (c.stream === streamNames.bookingSummaries && c.lastPollAt) this.set({ property_id: c.propertyId }, c.lastPollAt.getTime() / 1000);
    },
  });
  new client.Gauge({
    name: 'staysync_stream_last_read_timestamp_seconds',
    help: 'When each stream with a cursor per property last read the property successfully (unix seconds; sync_cursors.last_poll_at): the booking list and sweep, the PMS search, and the PMS refreshes (rooms, companies, accommodation inventory, daily occupancy, inventory by room type, stay units).',
    labelNames: ['property_id', 'stream'],
    registers: [register],
    async collect() {
      this.reset();
      for (const c of (await tables())?.cursors ?? [])
        if (c.lastPollAt) this.set({ property_id: c.propertyId, stream: c.stream }, c.lastPollAt.getTime() / 1000);
    },
  });
  new client.Gauge({
    name: 'staysync_pms_unread',
    help: 'What a PMS backfill left for the pass after it, by property: data="invoices", reservations whose invoices are not read yet; data="loyalty_cards", persons whose loyalty cards are not read yet (absent while pms.loyaltyCards is off: they are not read).',
    labelNames: ['property_id', 'data'],
    registers: [register],
    async collect() {
      this.reset();
      const cardsRead = sources.fleet.connections.some((v) => v.ctx.config.pms.loyaltyCards);
      for (const u of (await tables())?.pmsUnread ?? []) {
        this.set({ property_id: u.propertyId, data: 'invoices' }, u.invoices);
        if (cardsRead) this.set({ property_id: u.propertyId, data: 'loyalty_cards' }, u.loyaltyCards);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_newest_change_age_seconds',
    help: 'Age of the newest booking modification mirrored in bookings, by property (absent while none is).',
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      const now = Date.now();
      for (const n of (await tables())?.newestChanges ?? []) if (n.newestChangeAt) this.set({ property_id: n.propertyId }, ageSeconds(now, n.newestChangeAt));
    },
  });
  new client.Gauge({
    name: 'staysync_property_state',
    help: 'State of each property stream: 1 for its current state (active, retrying, failing, needs_recover: the booking list lost its continueToken and waits for a recovery, not_granted: the API connection may not use the API area of the stream, not a failure), 0 for the others.',
    labelNames: ['property_id', 'stream', 'state'],
    registers: [register],
    async collect() {
      this.reset();
      for (const c of (await tables())?.cursors ?? []) {
        for (const state of cursorStates) this.set({ property_id: c.propertyId, stream: c.stream, state }, c.state === state ? 1 : 0);
      }
    },
  });
  new client.Gauge({
    name: 'staysync_reconciliation_rooms_difference_max',
    help: "Largest difference, in rooms, over a property's last 30 nights (before its local today) between the rooms the mirror has on the books and the rooms the PMS statistics say were occupied (reporting.reconciliation). Properties without PMS statistics have no sample.",
    labelNames: ['property_id'],
    registers: [register],
    async collect() {
      this.reset();
      for (const g of (await tables())?.reconciliation ?? []) this.set({ property_id: g.propertyId }, g.rooms);
    },
  });
  return register;
}

const ageSeconds = (now: number, since: Date | null | undefined): number => (since ? Math.max(0, (now - since.getTime()) / 1000) : 0);
