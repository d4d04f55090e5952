// A pool of worker threads speaking the channel (channel.ts), one call at a time per thread: calls
// wait in a bounded queue for a free thread (QueueFullError past the bound), an aborted call leaves
// the queue at once, a thread that dies fails its call and is replaced on the next one.
import type { Worker, WorkerOptions } from 'node:worker_threads';
import type { CallMap, CallOptions, WorkerChannel } from './channel.js';
import { startWorker } from './start.js';

/** The pool's queue is full: the caller refuses the call (its retry hint: `waiting` calls ahead). */
export class QueueFullError extends Error {
  constructor(readonly waiting: number) {
    super(`the worker queue is full (${waiting} waiting)`);
    this.name = 'QueueFullError';
  }
}

export interface PoolOptions {
  filename: string;
  worker: WorkerOptions;
  /** Threads at most; started on demand, kept while the pool lives (their start-up is the cost). */
  size: number;
  /** Threads started at once (the rest on demand). */
  eager?: number;
  /** Calls that may wait for a thread. */
  maxQueue: number;
  decodeError(data: unknown): Error;
}

interface Slot<Calls extends CallMap> {
  worker: Worker;
  channel: WorkerChannel<Calls>;
  busy: boolean;
}

interface Waiting {
  start(): void;
  reject(error: Error): void;
}

export class WorkerPool<Calls extends CallMap> {
  private readonly slots: Array<Slot<Calls>> = [];
  private readonly queue: Waiting[] = [];
  private closed = false;

  constructor(private readonly o: PoolOptions) {
    for (let i = 0; i < Math.min(o.eager ?? 0, o.size); i++) this.spawn();
  }

  /** Calls waiting for a thread. */
  get queueSize(): number {
    return this.queue.length;
  }

  call<K extends keyof Calls & string>(method: K, arg: Calls[K][0], options: CallOptions = {}): Promise<Calls[K][1]> {
    const run = async (slot: Slot<Calls>): Promise<Calls[K][1]> => {
      try {
        return await slot.channel.call(method, arg, options);
      } finally {
        slot.busy = false;
        this.queue.shift()?.start();
      }
    };
    // A free thread takes the call at once (its transfer list moves now); else it waits its turn.
    const free = this.take();
    return free ? run(free) : this.wait(options.signal).then(run);
  }

  async destroy(): Promise<void> {
    this.closed = true;
    for (const w of this.queue.splice(0)) w.reject(new Error('the worker pool is closed'));
    await Promise.all(this.slots.splice(0).map((s) => s.worker.terminate()));
  }

  /** A free thread (started if the pool is not full), marked busy; undefined when all are busy. */
  private take(): Slot<Calls> | undefined {
    if (this.closed) throw new Error('the worker pool is closed');
    const free = this.slots.find((s) => !s.busy) ?? (this.slots.length < this.o.size ? this.spawn() : undefined);
    if (free) free.busy = true;
    return free;
  }

  /** A place in the queue until a thread is free (QueueFullError past the bound; an abort leaves it). */
  private wait(signal?: AbortSignal): Promise<Slot<Calls>> {
    if (this.queue.length >= this.o.maxQueue) return Promise.reject(new QueueFullError(this.queue.length));
    return new Promise((resolve, reject) => {
      const waiting: Waiting = {
        start: () => {
          signal?.removeEventListener('abort', leave);
          try {
            const slot = this.take();
            if (slot) resolve(slot);
            else this.wait(signal).then(resolve, reject);
          } catch (error) {
            reject(error as Error);
          }
        },
        reject,
      };
      const leave = (): void => {
        const at = this.queue.indexOf(waiting);
        if (at >= 0) this.queue.splice(at, 1);
        reject(signal!.reason instanceof Error ? signal!.reason : new Error('aborted'));
      };
      this.queue.push(waiting);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  private spawn(): Slot<Calls> {
    // An idle pool holds nothing open; a pending call keeps the process alive. A dead thread leaves the pool.
    const { worker, channel } = startWorker<Calls>(this.o.filename, this.o.worker, {
      name: 'a pool worker',
      decodeError: this.o.decodeError,
      refWhilePending: true,
      onDeath: () => {
        const at = this.slots.indexOf(slot);
        if (at >= 0) this.slots.splice(at, 1);
      },
    });
    const slot: Slot<Calls> = { worker, channel, busy: false };
    this.slots.push(slot);
    return slot;
  }
}
