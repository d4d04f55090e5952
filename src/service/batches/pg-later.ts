// The PostgreSQL store of a replica that started while the database was away: opened at the first
// call that finds it. Until then every call rejects as the store's fault (BatchStoreUnavailableError:
// 503 with retry-after, /healthz degraded, the runner waiting under the reconnect policy), exactly as
// when the database goes away later, so the replica takes batches once it is back, without a restart.
import { storeFault } from './store-health.js';
import { openPgStore, type PgBatchStore, type PgStoreOptions } from './pg-store.js';
import type { BatchStore } from './store.js';

type Method = Exclude<keyof BatchStore, 'healthy' | 'onBackgroundError' | 'close'>;

export class PgStoreLater implements BatchStore {
  private opening: Promise<PgBatchStore> | undefined;
  private opened: PgBatchStore | undefined;
  private closed = false;
  onBackgroundError?: (error: unknown) => void;

  constructor(private readonly options: PgStoreOptions) {}

  /** The store, opened by the first call that reaches the database (one attempt at a time). */
  private store(): Promise<PgBatchStore> {
    if (this.opened) return Promise.resolve(this.opened);
    if (this.closed) return Promise.reject(new Error('the batch store is closed'));
    this.opening ??= openPgStore(this.options).then(
      (store) => {
        if (this.closed) return store.close().then(() => Promise.reject(new Error('the batch store is closed')));
        store.onBackgroundError = (e) => this.onBackgroundError?.(e);
        return (this.opened = store);
      },
      (e: Error) => {
        this.opening = undefined;
        // Still away: the store's own fault (the database's words); anything else as it is.
        throw storeFault(e.cause) ?? e;
      },
    );
    return this.opening;
  }

  private call<K extends Method>(name: K) {
    return (async (...args: unknown[]) => {
      const store = await this.store();
      return (store[name] as (...a: unknown[]) => unknown)(...args);
    }) as unknown as BatchStore[K];
  }

  create = this.call('create');
  addItems = this.call('addItems');
  start = this.call('start');
  fail = this.call('fail');
  get = this.call('get');
  list = this.call('list');
  cancel = this.call('cancel');
  delete = this.call('delete');
  claim = this.call('claim');
  complete = this.call('complete');
  settle = this.call('settle');
  release = this.call('release');
  results = this.call('results');
  resultsRead = this.call('resultsRead');
  sweep = this.call('sweep');
  counts = this.call('counts');

  async close(): Promise<void> {
    this.closed = true;
    const store = this.opened ?? (await this.opening?.catch(() => undefined));
    await store?.close();
  }
}
