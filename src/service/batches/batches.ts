// Batch jobs, the service: an uploaded JSONL input becomes a batch (persisted before it is
// acknowledged), its lines are checked off the event loop (ingest.ts) and answered in the engine's
// batch lane (runner.ts), and its results are read a page at a time while it runs. The store keeps
// batches, lines and results (store.ts); the data directory keeps uploads until they are read in.
//
// An upload is journaled before the store hears of it: `<id>.jsonl` (the bytes, synced) and
// `<id>.json` (the batch's facts) in `<dataDir>/uploads/`. A batch still validating when the
// process stops is read in again from its journal at the next start (its partial lines dropped
// first); the journal goes once the batch has started or failed.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync } from 'node:fs';
import { open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ServiceContext } from '../evaluate.js';
import { BatchNotFoundError, IdempotencyConflictError } from './errors.js';
import { diskFull, StoreHealth, storeFault, watchStore, type BatchStoreStatus } from './store-health.js';
import { Ingest } from './ingest.js';
import { BatchRunner, type RunnerOptions } from './runner.js';
import type { BatchRecord, BatchStore, NewBatch, ResultsPage } from './store.js';

export interface BatchSettings {
  dataDir: string;
  /** Most lines in one input. */
  maxLines: number;
  /** Most bytes in one input. */
  maxBytes: number;
  /** How long a batch has to finish (OpenAI's completion window), ms. */
  windowMs: number;
  /** How long an ended batch keeps its results when they are never read to the end, ms. */
  keepMs: number;
  /** How long results stay after their last page was read, ms (a client that crashed reading them reads again). */
  keepReadMs: number;
  /** How often retention runs, ms. */
  sweepMs: number;
  runner: Pick<RunnerOptions, 'runnerId' | 'maxItems' | 'leaseMs' | 'concurrency' | 'idleMs'>;
}

export type BatchHooks = Pick<RunnerOptions, 'pacer' | 'allows' | 'onLine' | 'onError'> & {
  /** Told when the store's health changes (unreachable, full, back): logged, counted. */
  onStoreChange?(now: BatchStoreStatus, was: BatchStoreStatus): void;
};

export interface NewUpload {
  owner: string;
  /** The file the route wrote the input to (uploadFile()), synced. */
  file: string;
  /** SHA-256 of its bytes, hex. */
  sha256: string;
  idempotencyKey?: string;
  metadata?: Record<string, string>;
  cacheScope?: string;
}

const ID_CHARS = 24;

export class Batches {
  private readonly ingest = new Ingest();
  private runner: BatchRunner | undefined;
  private hooks: BatchHooks = {};
  private readonly uploads: string;
  private sweeper: NodeJS.Timeout | undefined;
  /** The store's health (store-health.ts): every call below goes through `store`, which notes it. */
  private readonly storeHealth = new StoreHealth((now, was) => this.hooks.onStoreChange?.(now, was));
  private readonly store: BatchStore;

  constructor(
    private readonly rawStore: BatchStore,
    private readonly settings: BatchSettings,
  ) {
    this.store = watchStore(rawStore, this.storeHealth);
    this.uploads = join(settings.dataDir, 'uploads');
    mkdirSync(this.uploads, { recursive: true });
  }

  /** What the lines run through (the server's models, the owner's permissions and budget); before start(). */
  attach(service: ServiceContext, hooks: BatchHooks = {}): void {
    this.hooks = hooks;
    this.rawStore.onBackgroundError = (error) => hooks.onError?.(error);
    this.runner = new BatchRunner({ store: this.store, service, ...this.settings.runner, ...hooks });
  }

  /**
   * A failure writing to the data directory (an upload, its journal): a full disk becomes
   * BatchStoreFullError (507) and is noted in the store's health; anything else as it is.
   */
  storageFault(error: unknown): unknown {
    const full = diskFull(error, this.settings.dataDir);
    if (!full) return error;
    this.storeHealth.fault(full);
    return full;
  }

  /** Starts the runner and retention, and reads in again the inputs a stop left half-read. */
  async start(): Promise<void> {
    if (!this.runner) throw new Error('Batches.start() before attach()');
    for (const name of readdirSync(this.uploads)) {
      if (name.endsWith('.part')) await rm(join(this.uploads, name), { force: true });
      if (!name.endsWith('.json')) continue;
      const batch = JSON.parse(await readFile(join(this.uploads, name), 'utf8')) as NewBatch;
      await this.store.delete(batch.owner, batch.id);
      await this.store.create(batch);
      this.readIn(batch);
    }
    this.runner.start();
    this.sweeper = setInterval(() => void this.sweep(), this.settings.sweepMs);
    this.sweeper.unref();
  }

  /** A fresh file for an upload in the data directory (the route streams the body into it). */
  uploadFile(): string {
    return join(this.uploads, `${randomBytes(12).toString('hex')}.part`);
  }

  get limits(): { maxBytes: number; maxLines: number } {
    return { maxBytes: this.settings.maxBytes, maxLines: this.settings.maxLines };
  }

  /**
   * Creates a batch from an upload, or answers the batch its Idempotency-Key already made (the same
   * content; other content: IdempotencyConflictError). The upload is journaled first.
   */
  async create(upload: NewUpload): Promise<{ batch: BatchRecord; created: boolean }> {
    const now = Date.now();
    const id = `batch_${randomBytes(ID_CHARS / 2).toString('hex')}`;
    const batch: NewBatch = {
      id,
      owner: upload.owner,
      createdAt: Math.floor(now / 1000),
      expiresAt: Math.floor((now + this.settings.windowMs) / 1000),
      contentHash: upload.sha256,
      ...(upload.idempotencyKey ? { idempotencyKey: upload.idempotencyKey } : {}),
      ...(upload.metadata ? { metadata: upload.metadata } : {}),
      ...(upload.cacheScope ? { cacheScope: upload.cacheScope } : {}),
    };
    const input = join(this.uploads, `${id}.jsonl`);
    const facts = join(this.uploads, `${id}.json`);
    try {
      await rename(upload.file, input);
      await writeSynced(facts, JSON.stringify(batch));
    } catch (error) {
      await rm(upload.file, { force: true });
      await this.forget(id);
      throw this.storageFault(error);
    }
    let made: { batch: BatchRecord; created: boolean };
    try {
      made = await this.store.create(batch);
    } catch (error) {
      await this.forget(id);
      throw error;
    }
    if (!made.created) {
      await this.forget(id);
      if (made.batch.contentHash !== upload.sha256) throw new IdempotencyConflictError(made.batch.id);
      return made;
    }
    this.readIn(batch);
    return made;
  }

  private readIn(batch: NewBatch): void {
    void this.ingest.ingest(this.store, batch.id, join(this.uploads, `${batch.id}.jsonl`), this.settings.maxLines).then(
      async (outcome) => {
        await this.forget(batch.id);
        if (outcome.ok) this.runner?.wake();
      },
      async (error: unknown) => {
        // Stopped while the store was away: the journal stays, and the next start reads the input in again.
        if (storeFault(error)) return;
        // Reading it in broke (the store refused a write): the batch fails, saying so, rather than
        // staying in validating.
        this.hooks.onError?.(error);
        const message = `the input could not be read in: ${error instanceof Error ? error.message : String(error)}`;
        await this.store.fail(batch.id, [{ code: 'ingest_failed', message }], Date.now()).catch(() => undefined);
        await this.forget(batch.id);
      },
    );
  }

  /** Removes a batch's upload journal. */
  private async forget(id: string): Promise<void> {
    await rm(join(this.uploads, `${id}.jsonl`), { force: true });
    await rm(join(this.uploads, `${id}.json`), { force: true });
  }

  async get(owner: string, id: string): Promise<BatchRecord> {
    const batch = await this.store.get(owner, id);
    if (!batch) throw new BatchNotFoundError(id);
    return batch;
  }

  list(owner: string, options: { after?: string; limit: number }): Promise<{ data: BatchRecord[]; hasMore: boolean }> {
    return this.store.list(owner, options);
  }

  async cancel(owner: string, id: string): Promise<BatchRecord> {
    const batch = await this.store.cancel(owner, id, Date.now());
    if (!batch) throw new BatchNotFoundError(id);
    return batch;
  }

  /** Removes the batch, its input and its results at once. */
  async delete(owner: string, id: string): Promise<void> {
    if (!(await this.store.delete(owner, id))) throw new BatchNotFoundError(id);
    await this.forget(id);
  }

  /** A page of results; reading the last page of an ended batch starts its short retention. */
  async results(owner: string, id: string, options: { after?: string; limit: number }): Promise<ResultsPage> {
    const page = await this.store.results(owner, id, options);
    if (!page) throw new BatchNotFoundError(id);
    // On a full disk the page is still answered: its short retention then starts at a later read.
    if (page.done)
      await this.store.resultsRead(owner, id, Date.now()).catch((error: unknown) => {
        if (!storeFault(error)) throw error;
      });
    return page;
  }

  private async sweep(): Promise<void> {
    try {
      const gone = await this.store.sweep(Date.now(), {
        keepMs: this.settings.keepMs,
        keepReadMs: this.settings.keepReadMs,
      });
      for (const id of gone) await this.forget(id);
    } catch (error) {
      // A store fault is said once, by its health; retention runs again at the next sweep.
      if (!storeFault(error)) this.hooks.onError?.(error);
    }
  }

  /** Runs retention now (tests, and the operator's clock change). */
  sweepNow(): Promise<void> {
    return this.sweep();
  }

  /**
   * The store's health for /healthz and /metrics: ok; unreachable (PostgreSQL away) or full (the
   * data directory's disk), with the reason and since when; restarting (its thread died).
   */
  health(): BatchStoreStatus {
    if (!(this.rawStore.healthy?.() ?? true))
      return { state: 'restarting', reason: 'the batch store thread died and starts again' };
    return this.storeHealth.get();
  }

  counts(): ReturnType<BatchStore['counts']> {
    return this.store.counts();
  }

  /** Stops claiming (lines in flight go back to the store), then closes the store. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await this.runner?.stop();
    await this.ingest.close();
    await this.store.close();
  }
}

/** Writes a file and syncs it to disk before answering. */
export async function writeSynced(file: string, data: string | Uint8Array): Promise<void> {
  await writeFile(file, data);
  await syncFile(file);
}

/** Syncs a written file to disk (an acknowledged upload survives a crash of the machine too). */
export async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
