/**
 * The states the database keeps, as const unions. Each list is mirrored by a CHECK constraint
 * in migrations/0003_reliability.sql: a value outside it cannot be written by anyone.
 */

/** A stream's cursor of one property (sync_cursors.state). */
export const cursorStates = ['active', 'retrying', 'failing', 'token_lost'] as const;
export type CursorState = (typeof cursorStates)[number];

/** A booking detail fetch (booking_detail_queue.state). */
export const queueStates = ['pending', 'not_found', 'quarantined'] as const;
export type QueueState = (typeof queueStates)[number];

/** How a process's run ended (sync_runs.outcome; NULL while it runs). */
export const runOutcomes = ['ok', 'failed', 'token_lost', 'stopped', 'killed', 'content_failed', 'refresh_failed'] as const;
export type RunOutcome = (typeof runOutcomes)[number];

/** How a content refresh ended (content_refreshes.outcome; NULL while it runs). */
export const refreshOutcomes = ['ok', 'failed', 'stopped', 'killed'] as const;
export type RefreshOutcome = (typeof refreshOutcomes)[number];

/** Streams with a cursor per property (sync_cursors.stream). */
export const cursorStreams = ['booking_summaries', 'booking_sweep', 'pms_reservations', 'daily_occupancy'] as const;
export type CursorStream = (typeof cursorStreams)[number];

/** A received change event (webhook_events.state). */
export const webhookEventStates = ['pending', 'processed', 'ignored', 'failed'] as const;
export type WebhookEventState = (typeof webhookEventStates)[number];
