/**
 * The cursors of a connection's property streams as this process last read or wrote them, so
 * that a poll of a quiet property reads nothing from the database before it asks the provider.
 *
 * Only the holder of a connection's lease writes the cursors of its properties, so what it
 * knows stays true while it holds the same epoch. A new epoch (the lease lost and taken again:
 * another process may have written meanwhile) empties the cache. A stream that writes its cursor
 * forgets its entry (the next read takes the row as written), and so does the engine when it
 * records a problem on it.
 */
import { findCursor, type CursorRow } from '../../store/repositories/cursors.js';
import type { WriteFence } from '../../store/schema-lock.js';
import type { CursorStream } from '../../store/states.js';
import type { Executor } from '../../store/types.js';

export class CursorCache {
  private readonly rows = new Map<string, CursorRow | undefined>();
  private epoch: string | undefined;

  constructor(
    private readonly db: Executor,
    private readonly fence: WriteFence,
  ) {}

  /** The cursor row (undefined: none stored), read from the database when not known under the current epoch. */
  async get(propertyId: string, stream: CursorStream): Promise<CursorRow | undefined> {
    if (this.fence.epoch !== this.epoch) {
      this.rows.clear();
      this.epoch = this.fence.epoch;
    }
    const key = `${stream}\u0000${propertyId}`;
    if (this.rows.has(key)) return this.rows.get(key);
    const row = await findCursor(this.db, propertyId, stream);
    this.rows.set(key, row);
    return row;
  }

  /** What a poll learned without writing it (the ledger writes it later): the next poll starts from here. */
  update(propertyId: string, stream: CursorStream, change: Partial<CursorRow>): void {
    const key = `${stream}\u0000${propertyId}`;
    const row = this.rows.get(key);
    if (row) this.rows.set(key, { ...row, ...change });
  }

  /** The row changed in the database (a page written, a problem recorded): read it again next time. */
  forget(propertyId: string, stream: CursorStream): void {
    this.rows.delete(`${stream}\u0000${propertyId}`);
  }
}
