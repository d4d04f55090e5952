// One worker thread started on first use, and started again on the next call after it died (its
// calls in flight failed with its death). What the body worker and the batch ingest worker share.
import type { Worker } from 'node:worker_threads';
import type { CallMap, WorkerChannel } from './channel.js';
import { startWorker, workerEntry } from './start.js';

export class OnDemandWorker<Calls extends CallMap> {
  private worker: Worker | undefined;
  private current: WorkerChannel<Calls> | undefined;

  /**
   * @param file the worker's module name beside `base` (`<file>.js` built, `<file>.ts` from sources)
   * @param name who it is, in the error its calls fail with when it dies
   */
  constructor(
    private readonly file: string,
    private readonly base: string | URL,
    private readonly name: string,
  ) {}

  /** The running worker's channel (the worker started now when none runs). */
  channel(): WorkerChannel<Calls> {
    if (this.current) return this.current;
    const entry = workerEntry(this.file, this.base);
    const { worker, channel } = startWorker<Calls>(
      entry.filename,
      { workerData: entry.workerData },
      {
        name: this.name,
        decodeError: (m) => new Error(String(m)),
        refWhilePending: true,
        onDeath: () => {
          if (this.worker === worker) [this.worker, this.current] = [undefined, undefined];
        },
      },
    );
    [this.worker, this.current] = [worker, channel];
    return channel;
  }

  /** Stops the worker (a later call starts another). */
  async close(): Promise<void> {
    const w = this.worker;
    [this.worker, this.current] = [undefined, undefined];
    if (w) await w.terminate();
  }
}
