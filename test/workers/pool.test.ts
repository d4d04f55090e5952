// The worker pool (src/workers/pool.ts) with real worker threads: the queue bound, an abort while
// queued, a dead thread failing its call and being replaced, and closing the pool.
import { afterEach, describe, expect, it } from 'vitest';
import { QueueFullError, WorkerPool, workerEntry } from '../../src/workers/index.js';
import type { TestCalls } from './fixtures/test-worker.js';

const pools: Array<WorkerPool<TestCalls>> = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.destroy()));
});

function pool(size: number, maxQueue: number): WorkerPool<TestCalls> {
  const entry = workerEntry('test-worker', new URL('./fixtures/', import.meta.url), { tag: 'pooled' });
  const p = new WorkerPool<TestCalls>({
    filename: entry.filename,
    worker: { workerData: entry.workerData },
    size,
    maxQueue,
    decodeError: (data) => new Error((data as { message: string }).message),
  });
  pools.push(p);
  return p;
}

/** Resolves once the queue holds `n` calls (the pool queues synchronously, but a start is async). */
async function queued(p: WorkerPool<TestCalls>, n: number): Promise<void> {
  while (p.queueSize !== n) await new Promise((r) => setTimeout(r, 5));
}

describe('WorkerPool', () => {
  it('runs calls on its threads with their data', async () => {
    const p = pool(2, 4);
    expect(await Promise.all([p.call('echo', 'a'), p.call('tag', null)])).toEqual(['a', 'pooled']);
  });

  it('queues calls past its threads and refuses past the queue bound', async () => {
    const p = pool(1, 1);
    const first = p.call('wait', 300);
    const second = p.call('echo', 'queued');
    expect(p.queueSize).toBe(1);
    const refused = await p.call('echo', 'one too many').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(QueueFullError);
    expect((refused as QueueFullError).waiting).toBe(1);
    expect(await first).toBe('done');
    expect(await second).toBe('queued');
    expect(p.queueSize).toBe(0);
  });

  it('an aborted call leaves the queue at once, and the others still run', async () => {
    const p = pool(1, 4);
    const running = p.call('wait', 300);
    const controller = new AbortController();
    const leaving = p.call('echo', 'never', { signal: controller.signal });
    const staying = p.call('echo', 'stays');
    await queued(p, 2);
    controller.abort(new Error('caller went away'));
    await expect(leaving).rejects.toThrow('caller went away');
    expect(p.queueSize).toBe(1);
    expect(await running).toBe('done');
    expect(await staying).toBe('stays');
  });

  it('a thread that dies fails its own call, and a new thread takes the next ones', async () => {
    const p = pool(1, 4);
    const dying = p.call('exit', 9);
    const next = p.call('echo', 'after the death');
    await expect(dying).rejects.toThrow('a pool worker exited (9)');
    expect(await next).toBe('after the death');
    expect(await p.call('tag', null)).toBe('pooled');
  });

  it('closing the pool refuses the queued calls and any later one', async () => {
    const p = pool(1, 4);
    void p.call('wait', 60_000).catch(() => undefined);
    const waiting = expect(p.call('echo', 'queued')).rejects.toThrow('the worker pool is closed');
    await p.destroy();
    await waiting;
    expect(() => p.call('echo', 'late')).toThrow('the worker pool is closed');
  });
});
