// startWorker (src/workers/start.ts), the one wiring of a worker's death to its channel, with a real
// worker thread: an exit or an uncaught error fails every pending and later call once, with the
// owner's error when it names one, and tells the owner once.
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { startWorker, workerEntry, type StartWorkerOptions, type WorkerChannel } from '../../src/workers/index.js';
import type { TestCalls } from './fixtures/test-worker.js';

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

function start(o: Partial<StartWorkerOptions<never>> = {}): {
  worker: Worker;
  channel: WorkerChannel<TestCalls>;
  deaths: Error[];
} {
  const entry = workerEntry('test-worker', new URL('./fixtures/', import.meta.url));
  const deaths: Error[] = [];
  const started = startWorker<TestCalls>(
    entry.filename,
    { workerData: entry.workerData },
    {
      name: 'the test worker',
      decodeError: (data) => new Error((data as { message: string }).message),
      onDeath: (error) => deaths.push(error),
      ...o,
    },
  );
  workers.push(started.worker);
  return { ...started, deaths };
}

/** Resolves once the worker has exited (its exit event has run, the channel's owner told). */
const exited = (worker: Worker): Promise<void> => new Promise((resolve) => worker.once('exit', () => resolve()));

describe('startWorker', () => {
  it('a worker that exits fails its pending and later calls with "<name> exited (<code>)", and tells its owner once', async () => {
    const { worker, channel, deaths } = start();
    const gone = exited(worker);
    const pending = channel.call('wait', 60_000);
    await expect(channel.call('exit', 3)).rejects.toThrow('the test worker exited (3)');
    await expect(pending).rejects.toThrow('the test worker exited (3)');
    await expect(channel.call('echo', 'late')).rejects.toThrow('the test worker exited (3)');
    await gone;
    expect(deaths.map((d) => d.message)).toEqual(['the test worker exited (3)']);
  });

  it('an error nothing caught fails the calls with that error, once, though the exit follows it', async () => {
    const { worker, channel, deaths } = start();
    const gone = exited(worker);
    const pending = channel.call('wait', 60_000);
    await expect(channel.call('throw', 'broken inside')).rejects.toThrow('broken inside');
    await expect(pending).rejects.toThrow('broken inside');
    await gone;
    expect(deaths.map((d) => d.message)).toEqual(['broken inside']);
  });

  it("the owner's deathError names the error the calls fail with", async () => {
    class Dead extends Error {}
    const { worker, channel, deaths } = start({
      deathError: (death) => new Dead('error' in death ? `threw ${death.error.message}` : `code ${death.code}`),
    });
    const gone = exited(worker);
    await expect(channel.call('exit', 5)).rejects.toBeInstanceOf(Dead);
    await gone;
    expect(deaths).toHaveLength(1);
    expect(deaths[0]!.message).toBe('code 5');
  });

  it('a live worker answers, and its owner hears of no death', async () => {
    const { channel, deaths } = start();
    await expect(channel.call('echo', 'hello')).resolves.toBe('hello');
    expect(deaths).toEqual([]);
  });
});
