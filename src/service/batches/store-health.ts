// The batch store's health as clients and operators see it: ok, unreachable (PostgreSQL away),
// full (the data directory's disk), or restarting (the SQLite thread died). Every store call goes
// through watchStore(), which turns a fault into its API error (503 batch_store_unavailable, 507
// insufficient_storage) and notes it; a call that then succeeds clears it (a read clears an
// unreachable store, only a write a full one). /healthz, /metrics and the log read it here.
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULTS } from '../../defaults.js';
import { BatchStoreFullError, BatchStoreUnavailableError } from './errors.js';
import type { BatchStore } from './store.js';

export type StoreState = 'ok' | 'unreachable' | 'full' | 'restarting';

export interface BatchStoreStatus {
  state: StoreState;
  /** What is wrong, in plain words (absent when ok). */
  reason?: string;
  /** Since when (ms since the epoch; absent when ok). */
  since?: number;
}

export type StoreFault = BatchStoreUnavailableError | BatchStoreFullError;

/** A disk-full error of the file system or of SQLite, named so; else undefined. */
export function diskFull(error: unknown, where: string): BatchStoreFullError | undefined {
  if (error instanceof BatchStoreFullError) return error;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : '';
  const full =
    code === 'ENOSPC' || code === 'EDQUOT' || code === 'SQLITE_FULL' || /database or disk is full|ENOSPC/.test(text);
  if (!full) return undefined;
  const what = code === 'EDQUOT' ? 'its disk quota is used up' : 'its disk is full';
  return new BatchStoreFullError(`the data directory ${where}: ${what} (${text.split('\n')[0]})`, { cause: error });
}

/** The store faults: a typed fault error as is; anything else undefined. */
export function storeFault(error: unknown): StoreFault | undefined {
  return error instanceof BatchStoreUnavailableError || error instanceof BatchStoreFullError ? error : undefined;
}

/** The reconnect policy's wait before the n-th try again (0: the first): firstMs, doubling, at most maxMs. */
export function reconnectWait(n: number): number {
  const { firstMs, maxMs } = DEFAULTS.batchStoreRetry;
  return Math.min(maxMs, firstMs * 2 ** Math.min(n, 16));
}

/**
 * Runs `call`, and again after the reconnect policy's wait for as long as the store is away (a
 * fault), until it succeeds or `signal` aborts (then it rejects with the fault).
 */
export async function untilStored<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let n = 0; ; n++) {
    try {
      return await call();
    } catch (error) {
      if (!storeFault(error) || signal?.aborted) throw error;
      await sleep(reconnectWait(n), undefined, { signal }).catch(() => undefined);
    }
  }
}

const READS = new Set<keyof BatchStore>(['get', 'list', 'results', 'counts']);

export class StoreHealth {
  private status: BatchStoreStatus = { state: 'ok' };

  constructor(private readonly onChange?: (now: BatchStoreStatus, was: BatchStoreStatus) => void) {}

  get(): BatchStoreStatus {
    return this.status;
  }

  /** Notes a fault (the first of a kind keeps its time; its reason is the latest). */
  fault(error: StoreFault): void {
    const state: StoreState = error instanceof BatchStoreFullError ? 'full' : 'unreachable';
    const was = this.status;
    this.status = { state, reason: error.reason, since: was.state === state ? was.since : Date.now() };
    if (was.state !== state) this.onChange?.(this.status, was);
  }

  /** A call succeeded: an unreachable store is back; a full one has room again once a write succeeds. */
  succeeded(write: boolean): void {
    const was = this.status;
    if (was.state === 'ok' || (was.state === 'full' && !write)) return;
    this.status = { state: 'ok' };
    this.onChange?.(this.status, was);
  }
}

/** `store` with every call's outcome noted in `health`; a fault rejects as its typed error. */
export function watchStore<S extends BatchStore>(store: S, health: StoreHealth): S {
  return new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver) as unknown;
      if (typeof value !== 'function' || name === 'close' || name === 'healthy') return value;
      const write = !READS.has(name as keyof BatchStore);
      return async (...args: unknown[]) => {
        try {
          const out = await (value as (...a: unknown[]) => unknown).apply(target, args);
          health.succeeded(write);
          return out;
        } catch (error) {
          const fault = storeFault(error);
          if (fault) health.fault(fault);
          throw error;
        }
      };
    },
  });
}
