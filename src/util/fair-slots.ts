/**
 * A fixed number of slots shared by several parties (API connections), handed out round robin
 * between the parties that wait: a party with one waiting task gets a slot after at most one
 * task of each other party, however many tasks another party has queued. Within a party, tasks
 * run in the order they asked.
 */
export class FairSlots {
  private free: number;
  /** Waiting tasks by party; a party is in `turns` while it has waiting tasks. */
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly turns: string[] = [];

  constructor(readonly size: number) {
    if (!(size >= 1)) throw new RangeError(`FairSlots: size must be at least 1, got ${size}`);
    this.free = size;
  }

  /** Tasks waiting for a slot, all parties together. */
  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  /** Runs `fn` holding one slot, as `party`. */
  async use<T>(party: string, fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free -= 1;
    else await this.enqueue(party);
    try {
      return await fn();
    } finally {
      this.handOver();
    }
  }

  private enqueue(party: string): Promise<void> {
    return new Promise<void>((resolve) => {
      let q = this.waiting.get(party);
      if (!q) {
        q = [];
        this.waiting.set(party, q);
        this.turns.push(party);
      }
      q.push(resolve);
    });
  }

  /** A slot is free: the party whose turn it is gets it, then goes to the back of the line. */
  private handOver(): void {
    const party = this.turns.shift();
    if (party === undefined) {
      this.free += 1;
      return;
    }
    const q = this.waiting.get(party)!;
    const next = q.shift()!;
    if (q.length > 0) this.turns.push(party);
    else this.waiting.delete(party);
    next();
  }
}
