// The worker channel (src/workers/channel.ts) with a real worker thread: answers, errors as data,
// abort, transfer lists, events, and every pending call failing when the thread dies.
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerChannel, workerEntry } from '../../src/workers/index.js';
import type { TestCalls } from './fixtures/test-worker.js';

class DecodedError extends Error {}
const decodeError = (data: unknown): Error => new DecodedError((data as { message: string }).message);

const workers: Worker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.terminate()));
});

/** A test worker and its channel, wired as the project's owners wire them: exit fails the channel. */
function start(events: string[] = []): { worker: Worker; channel: WorkerChannel<TestCalls, string> } {
  const entry = workerEntry('test-worker', new URL('./fixtures/', import.meta.url));
  const worker = new Worker(entry.filename, { workerData: entry.workerData });
  workers.push(worker);
  const channel = new WorkerChannel<TestCalls, string>(worker, { decodeError, onEvent: (e) => events.push(e) });
  worker.on('exit', (code) => channel.fail(new Error(`worker exited (${code})`)));
  return { worker, channel };
}

describe('WorkerChannel', () => {
  it('answers calls, several at once, each with its own result', async () => {
    const { channel } = start();
    const answers = await Promise.all(['a', 'b', 'c'].map((s) => channel.call('echo', s)));
    expect(answers).toEqual(['a', 'b', 'c']);
    expect(channel.waiting).toBe(0);
  });

  it('rejects with the decoded error when the handler throws, and keeps serving', async () => {
    const { channel } = start();
    const error = await channel.call('fail', 'no such thing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecodedError);
    expect((error as Error).message).toBe('no such thing');
    await expect(channel.call('echo', 'still here')).resolves.toBe('still here');
  });

  it("an abort reaches the worker's handler, which ends the call", async () => {
    const { channel } = start();
    const controller = new AbortController();
    const call = channel.call('wait', 60_000, { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await expect(call).rejects.toThrow('aborted');
    // An already aborted signal aborts at once, too.
    await expect(channel.call('wait', 60_000, { signal: AbortSignal.abort() })).rejects.toThrow('aborted');
  });

  it('moves transferred buffers both ways instead of copying them', async () => {
    const { channel } = start();
    const bytes = new Uint8Array(1024);
    const result = await channel.call('take', { bytes, n: 64 }, { transfer: [bytes.buffer] });
    expect(result.seen).toBe(1024);
    expect(bytes.byteLength).toBe(0); // detached here: it was moved
    expect(result.back.byteLength).toBe(64);
  });

  it("delivers the worker's events", async () => {
    const events: string[] = [];
    const { channel } = start(events);
    await channel.call('ping', 'x');
    expect(events).toEqual(['event:x']);
  });

  it('fails every pending call, and every later one, when the worker dies', async () => {
    const { worker, channel } = start();
    const pending = [channel.call('wait', 60_000), channel.call('wait', 60_000)];
    const dying = channel.call('exit', 7);
    const results = await Promise.allSettled([...pending, dying]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect(((r as PromiseRejectedResult).reason as Error).message).toBe('worker exited (7)');
    }
    expect(channel.waiting).toBe(0);
    await expect(channel.call('echo', 'late')).rejects.toThrow('worker exited (7)');
    expect(worker.threadId).toBe(-1);
  });
});
