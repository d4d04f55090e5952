// The embedded batch store: the async face of the SQLite store (sqlite-batches.ts), which runs in
// its own worker thread (sqlite-thread.ts) because better-sqlite3 is synchronous and must never run
// on the event loop. A thread that dies fails the calls it held (their transactions roll back),
// is reported (healthy() turns false, onExit is told), and is started again on the next call.
import { accessSync, constants, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startWorker, workerEntry, type WorkerChannel } from '../../workers/index.js';
import { decodeStoreError, SQLITE_FILE, type SqliteCalls, type StoreCall } from './sqlite-calls.js';
import type { BatchStore } from './store.js';
import { diskFull } from './store-health.js';

export interface SqliteStoreOptions {
  /** The data directory (created): the store is `<dataDir>/batches.sqlite`. */
  dataDir: string;
  /** Told when the store's thread dies (before it is started again on the next call). */
  onExit?(error: Error): void;
}

type Async<S> = { [K in keyof S]: S[K] extends (...a: infer A) => infer R ? (...a: A) => Promise<Awaited<R>> : never };

export class SqliteBatchStore implements BatchStore {
  private worker: Worker | undefined;
  private channel: WorkerChannel<SqliteCalls> | undefined;
  private died: Error | undefined;
  private closed = false;
  readonly file: string;

  constructor(private readonly o: SqliteStoreOptions) {
    this.file = join(o.dataDir, SQLITE_FILE);
  }

  /** False once the store's thread has died and until a call has started it again. */
  healthy(): boolean {
    return this.died === undefined;
  }

  /** The thread's death that healthy() reports, if any. */
  get lastError(): Error | undefined {
    return this.died;
  }

  async open(): Promise<void> {
    const dir = this.o.dataDir;
    try {
      mkdirSync(dir, { recursive: true });
      accessSync(dir, constants.W_OK);
    } catch (e) {
      throw new Error(`the batch store's data directory ${dir} is not writable: ${(e as Error).message}`, { cause: e });
    }
    try {
      await this.thread().call('open', undefined);
    } catch (e) {
      const message = (e as Error).message;
      const hint = /locked/.test(message) ? ' (another process serves this data directory)' : '';
      throw new Error(`cannot open the batch store ${this.file}: ${message}${hint}`, { cause: e });
    }
  }

  private call<M extends StoreCall['method']>(method: M, ...args: Extract<StoreCall, { method: M }>['args']) {
    if (this.closed) return Promise.reject(new Error('the batch store is closed'));
    // A full disk rejects as BatchStoreFullError (507, retried by the runner), naming the directory.
    return this.thread()
      .call('call', { method, args } as StoreCall)
      .catch((error: unknown) => {
        throw diskFull(error, this.o.dataDir) ?? error;
      }) as never;
  }

  private thread(): WorkerChannel<SqliteCalls> {
    if (this.channel) return this.channel;
    const entry = workerEntry('sqlite-thread', import.meta.url, { dataDir: this.o.dataDir });
    const { worker, channel } = startWorker<SqliteCalls>(
      entry.filename,
      { workerData: entry.workerData },
      {
        name: 'the batch store thread',
        decodeError: decodeStoreError,
        refWhilePending: true,
        onDeath: (error) => {
          if (this.worker !== worker) return;
          [this.worker, this.channel] = [undefined, undefined];
          if (this.closed) return;
          this.died = error;
          this.o.onExit?.(error);
        },
      },
    );
    [this.worker, this.channel, this.died] = [worker, channel, undefined];
    return channel;
  }

  create: Async<BatchStore>['create'] = (...a) => this.call('create', ...a);
  addItems: Async<BatchStore>['addItems'] = (...a) => this.call('addItems', ...a);
  start: Async<BatchStore>['start'] = (...a) => this.call('start', ...a);
  fail: Async<BatchStore>['fail'] = (...a) => this.call('fail', ...a);
  get: Async<BatchStore>['get'] = (...a) => this.call('get', ...a);
  list: Async<BatchStore>['list'] = (...a) => this.call('list', ...a);
  cancel: Async<BatchStore>['cancel'] = (...a) => this.call('cancel', ...a);
  delete: Async<BatchStore>['delete'] = (...a) => this.call('delete', ...a);
  claim: Async<BatchStore>['claim'] = (...a) => this.call('claim', ...a);
  complete: Async<BatchStore>['complete'] = (...a) => this.call('complete', ...a);
  settle: Async<BatchStore>['settle'] = (...a) => this.call('settle', ...a);
  release: Async<BatchStore>['release'] = (...a) => this.call('release', ...a);
  results: Async<BatchStore>['results'] = (...a) => this.call('results', ...a);
  resultsRead: Async<BatchStore>['resultsRead'] = (...a) => this.call('resultsRead', ...a);
  sweep: Async<BatchStore>['sweep'] = (...a) => this.call('sweep', ...a);
  counts: Async<BatchStore>['counts'] = (...a) => this.call('counts', ...a);

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const [worker, channel] = [this.worker, this.channel];
    if (!worker || !channel) return;
    try {
      await channel.call('close', undefined);
    } finally {
      await worker.terminate();
    }
  }
}

/** Opens (creates) the store in `dataDir`; a data directory that cannot be written fails here, naming it. */
export async function openSqliteStore(o: SqliteStoreOptions): Promise<SqliteBatchStore> {
  const store = new SqliteBatchStore({ ...o, dataDir: resolve(o.dataDir) });
  try {
    await store.open();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw e;
  }
  return store;
}
