// One model session runs one request at a time (onnxruntime already uses every core for one pass);
// the rest wait in a bounded FIFO queue. A full queue refuses at once instead of growing memory.
import { AbortedError, OverloadedError } from './errors.js';

interface Job {
  start: () => void;
  signal?: AbortSignal;
  onAbort?: () => void;
}

export class Scheduler {
  private readonly waiting: Job[] = [];
  private busy = false;
  /** Moving average of how long one job runs, for retry-after hints. */
  private averageMs = 100;

  constructor(private readonly maxQueue: number) {}

  get queueDepth(): number {
    return this.waiting.length;
  }

  get running(): number {
    return this.busy ? 1 : 0;
  }

  run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) return Promise.reject(new AbortedError());
    if (this.busy && this.waiting.length >= this.maxQueue) {
      const seconds = Math.max(1, Math.ceil(((this.waiting.length + 1) * this.averageMs) / 1000));
      return Promise.reject(new OverloadedError(seconds));
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        signal,
        start: () => {
          signal?.removeEventListener('abort', job.onAbort!);
          const began = performance.now();
          work()
            .then(resolve, reject)
            .finally(() => {
              this.averageMs = 0.8 * this.averageMs + 0.2 * (performance.now() - began);
              this.busy = false;
              this.next();
            });
        },
      };
      job.onAbort = () => {
        const i = this.waiting.indexOf(job);
        if (i >= 0) {
          this.waiting.splice(i, 1);
          reject(new AbortedError());
        }
      };
      signal?.addEventListener('abort', job.onAbort, { once: true });
      this.waiting.push(job);
      this.next();
    });
  }

  private next(): void {
    if (this.busy) return;
    const job = this.waiting.shift();
    if (!job) return;
    this.busy = true;
    job.start();
  }
}
