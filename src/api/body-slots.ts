// How many big request bodies are on their way to the body worker at once (read from their
// sockets, sent on, checked). Each holds a slot until the worker has answered; a body beyond the
// slots waits its turn, in arrival order, unread: its socket is not read meanwhile, so TCP holds
// the client back and nothing of it is buffered here (body-read.ts).

/** A bounded number of slots, handed out first come, first served. */
export class BodySlots {
  private free: number;
  private readonly waiting: Array<(release: () => void) => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`big-body slots must be a positive integer: ${size}`);
    this.free = size;
  }

  /** Slots in use. */
  get busy(): number {
    return this.size - this.free;
  }

  /** Bodies waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Calls `granted` with the slot's release (idempotent) once a slot is free: at once when one is.
   * Returns the withdrawal of a wait not yet granted (a no-op after the grant).
   */
  take(granted: (release: () => void) => void): () => void {
    if (this.free > 0) {
      this.free--;
      granted(this.releaser());
      return () => {};
    }
    this.waiting.push(granted);
    return () => {
      const i = this.waiting.indexOf(granted);
      if (i >= 0) this.waiting.splice(i, 1);
    };
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next(this.releaser());
      else this.free++;
    };
  }
}
