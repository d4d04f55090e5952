// Requests take turns pass by pass on one session; a full queue refuses at once; aborted requests leave.
import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/engine/execution/scheduler.js';
import { AbortedError, OverloadedError } from '../../src/engine/errors.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('scheduler', () => {
  it('interleaves the passes of concurrent requests, round robin', async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const passes = (name: string, n: number) =>
      s.request(async (ticket) => {
        for (let i = 1; i <= n; i++) await ticket.pass(async () => void order.push(`${name}${i}`));
      });
    // A long request first, then a short one: the short one waits for one pass, not for all of them.
    await Promise.all([passes('long', 5), passes('short', 1), passes('mid', 2)]);
    expect(order).toEqual(['long1', 'short1', 'mid1', 'long2', 'mid2', 'long3', 'long4', 'long5']);
  });

  it('refuses past the queue bound with a retry hint, and keeps serving', async () => {
    const s = new Scheduler(1);
    const g = gate();
    const running = s.request((t) => t.pass(() => g.promise));
    const queued = s.request(async (t) => t.pass(async () => 'queued'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(s.queueDepth).toBe(1);
    expect(s.running).toBe(1);
    await expect(s.request(async () => 'refused')).rejects.toBeInstanceOf(OverloadedError);
    const error = await s.request(async () => 1).catch((e: OverloadedError) => e);
    expect((error as OverloadedError).retryAfterSeconds).toBeGreaterThan(0);
    // Callers refused one after another are told later and later slots, one request's time apart,
    // so callers that wait exactly what they are told come back one by one.
    const waits: number[] = [];
    for (let i = 0; i < 5; i++)
      waits.push(
        ((await s.request(async () => 1).catch((e: OverloadedError) => e)) as OverloadedError).retryAfterSeconds,
      );
    for (let i = 1; i < waits.length; i++) expect(waits[i]! - waits[i - 1]!).toBeGreaterThan(0.05);
    g.open();
    await running;
    expect(await queued).toBe('queued');
    expect(await s.request(async (t) => t.pass(async () => 'later'))).toBe('later');
  });

  // A fresh server's first burst: no request has finished, so the scheduler has timed nothing. A
  // caller told less than the running request has already held the session comes back while it
  // still runs and spends a retry on another refusal (the official SDK has two).
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const refusal = async (s: Scheduler) =>
    ((await s.request(async () => 1).catch((e: unknown) => e)) as OverloadedError).retryAfterSeconds * 1000;

  it('before any request has finished, a refused caller is told at least what the running one has held so far', async () => {
    const s = new Scheduler(0);
    const g = gate();
    let passStarted = 0;
    const running = s.request((t) =>
      t.pass(async () => {
        passStarted = performance.now();
        await g.promise;
      }),
    );
    await sleep(250);
    const heldAtLeast = performance.now() - passStarted;
    expect(await refusal(s)).toBeGreaterThanOrEqual(heldAtLeast);
    g.open();
    await running;
  });

  it("the first finished request's time is the estimate at once, not a step from a guess", async () => {
    const s = new Scheduler(0);
    let held = 0;
    await s.request((t) =>
      t.pass(async () => {
        const began = performance.now();
        await sleep(250);
        held = performance.now() - began;
      }),
    );
    const g = gate();
    const running = s.request((t) => t.pass(() => g.promise));
    // One request admitted: the wait told is at least its service time as measured.
    expect(await refusal(s)).toBeGreaterThanOrEqual(held);
    g.open();
    await running;
  });

  it('an aborted request leaves at its next pass; a failing pass does not stop the next', async () => {
    const s = new Scheduler(4);
    const g = gate();
    const running = s.request((t) => t.pass(() => g.promise));
    const controller = new AbortController();
    let ran = 0;
    const waiting = s.request(async (t) => {
      await t.pass(async () => ran++);
      await t.pass(async () => ran++);
    }, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(AbortedError);
    expect(ran).toBe(0);
    expect(s.queueDepth).toBe(0);
    const failing = s.request((t) =>
      t.pass(async () => {
        throw new Error('boom');
      }),
    );
    g.open();
    await running;
    await expect(failing).rejects.toThrow('boom');
    expect(await s.request((t) => t.pass(async () => 'ok'))).toBe('ok');
  });
});
