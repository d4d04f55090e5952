// The batch store's health as /healthz and /metrics read it: every call through watchStore() notes
// a fault (PostgreSQL away, a full disk) and its end. A full disk ends only when a write succeeds
// (reads succeed on a full disk); an unreachable store ends with any call that succeeds. Each
// change is told once (the log says a fault once when it begins and once when it ends).
import { describe, expect, it } from 'vitest';
import {
  BatchStoreFullError,
  BatchStoreUnavailableError,
  type BatchStore,
  type BatchStoreStatus,
} from '../../src/service/batches/index.js';
import { StoreHealth, watchStore } from '../../src/service/batches/store-health.js';

/** A store whose calls fail with whatever `next` holds (one call each), else succeed. */
function failing(next: unknown[]): BatchStore {
  const call = async () => {
    const e = next.shift();
    if (e) throw e;
    return undefined;
  };
  return {
    get: call,
    counts: call,
    complete: call,
    claim: call,
    close: async () => undefined,
  } as unknown as BatchStore;
}

describe('the batch store health', () => {
  it('notes faults as they begin and end, a full disk ending only with a write', async () => {
    const told: Array<[string, string]> = [];
    const health = new StoreHealth((now: BatchStoreStatus, was: BatchStoreStatus) => told.push([was.state, now.state]));
    const faults: unknown[] = [];
    const store = watchStore(failing(faults), health);

    faults.push(new BatchStoreUnavailableError('PostgreSQL: connect ECONNREFUSED'));
    await expect(store.claim('r', { maxItems: 1, leaseMs: 1, now: 0 })).rejects.toBeInstanceOf(
      BatchStoreUnavailableError,
    );
    expect(health.get()).toMatchObject({ state: 'unreachable', reason: 'PostgreSQL: connect ECONNREFUSED' });
    const since = health.get().since;
    faults.push(new BatchStoreUnavailableError('PostgreSQL: the database system is starting up'));
    await expect(store.get('o', 'b')).rejects.toThrow();
    expect(health.get()).toMatchObject({
      state: 'unreachable',
      since,
      reason: 'PostgreSQL: the database system is starting up',
    });
    await store.get('o', 'b'); // a read: PostgreSQL answers again
    expect(health.get()).toEqual({ state: 'ok' });

    faults.push(new BatchStoreFullError('the data directory /d: its disk is full (ENOSPC)'));
    await expect(store.complete('b', [], 0)).rejects.toBeInstanceOf(BatchStoreFullError);
    await store.get('o', 'b'); // reads work on a full disk: still full
    await store.counts();
    expect(health.get().state).toBe('full');
    await store.complete('b', [], 0); // a write went through: there is room again
    expect(health.get()).toEqual({ state: 'ok' });

    // Another error (a query's own) is not a store fault.
    faults.push(new Error('syntax error'));
    await expect(store.get('o', 'b')).rejects.toThrow('syntax error');
    expect(health.get()).toEqual({ state: 'ok' });
    expect(told).toEqual([
      ['ok', 'unreachable'],
      ['unreachable', 'ok'],
      ['ok', 'full'],
      ['full', 'ok'],
    ]);
  });
});
