// Ingesting an uploaded batch: its lines are read and checked in a worker thread (ingest-thread.ts),
// a chunk at a time, and each chunk is written to the store before the next is read. The batch
// starts (in_progress) once every line is in; it fails at validating when a line is one too many,
// a custom_id repeats, or no line is valid. One input at a time: the worker holds one reader. A
// store fault (PostgreSQL away, a full disk) pauses the reading in: each write is tried again under
// the store's reconnect policy (untilStored), so an accepted batch keeps every line.
import { OnDemandWorker } from '../../workers/index.js';
import type { BatchError, BatchStore, ItemResult, NewItem } from './store.js';
import { untilStored } from './store-health.js';

export interface IngestChunk {
  items: NewItem[];
  invalid: ItemResult[];
  /** No line is left. */
  done: boolean;
  /** The input fails the batch (the reader is closed). */
  error?: BatchError;
}

export type IngestCalls = {
  open: [{ file: string; maxLines: number }, void];
  next: [{ maxItems: number }, IngestChunk];
  close: [undefined, void];
};

/** Lines per chunk handed to the store. */
const CHUNK_LINES = 2000;

/** What ingesting one input gave: the lines in it, or why the batch failed. */
export type IngestOutcome = { ok: true; total: number; valid: number } | { ok: false; errors: BatchError[] };

export class Ingest {
  private readonly thread = new OnDemandWorker<IngestCalls>(
    'ingest-thread',
    import.meta.url,
    'the batch ingest worker',
  );
  /** Inputs are read one after another (the worker holds one reader). */
  private queue: Promise<unknown> = Promise.resolve();
  /** Aborted at close: a write waiting for the store gives up (the journal reads the input in again at the next start). */
  private readonly closing = new AbortController();

  /** Reads `file` into batch `batchId` of `store`, then starts or fails the batch. */
  ingest(store: BatchStore, batchId: string, file: string, maxLines: number): Promise<IngestOutcome> {
    const run = this.queue.then(() => this.run(store, batchId, file, maxLines));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async run(store: BatchStore, batchId: string, file: string, maxLines: number): Promise<IngestOutcome> {
    const channel = this.thread.channel();
    const stored = (write: () => Promise<void>) => untilStored(write, this.closing.signal);
    await channel.call('open', { file, maxLines });
    let total = 0;
    let valid = 0;
    for (;;) {
      const chunk = await channel.call('next', { maxItems: CHUNK_LINES });
      if (chunk.error) {
        await stored(() => store.fail(batchId, [chunk.error!], Date.now()));
        return { ok: false, errors: [chunk.error] };
      }
      if (chunk.items.length > 0 || chunk.invalid.length > 0)
        await stored(() => store.addItems(batchId, chunk.items, chunk.invalid));
      total += chunk.items.length + chunk.invalid.length;
      valid += chunk.items.length;
      if (chunk.done) break;
    }
    if (valid === 0) {
      const error: BatchError =
        total === 0
          ? { code: 'empty_file', message: 'the input has no line' }
          : { code: 'no_valid_line', message: `none of the ${total} lines is a valid request` };
      await stored(() => store.fail(batchId, [error], Date.now()));
      return { ok: false, errors: [error] };
    }
    await stored(() => store.start(batchId, Date.now()));
    return { ok: true, total, valid };
  }

  close(): Promise<void> {
    this.closing.abort();
    return this.thread.close();
  }
}
