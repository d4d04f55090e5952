// The scheduler's two lanes: a batch request's pass is granted only while no interactive request is
// in the scheduler, so an interactive request waits behind at most the one batch pass running;
// batch requests are never refused for a full queue and are not counted in queueDepth. The last
// test runs the real engine thread on the tiny model: an interactive request gets the answers it
// gets on an idle engine, and finishes while a long batch request is still running.
import { MessageChannel } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { Scheduler, type Ticket } from '../../src/engine/execution/scheduler.js';
import { AbortedError, OverloadedError } from '../../src/engine/errors.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { workerPlanner } from '../../src/engine/prompting/planner/index.js';
import { resolveEngineConfig } from '../../src/engine/config.js';
import { RequestBatcher } from '../../src/engine/execution/batching.js';
import { PassCount, Passes } from '../../src/engine/execution/passes.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner, type PackedPass } from '../../src/engine/model/runner.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import type { Lane } from '../../src/engine/types.js';
import { choice, expectSameResult, manyQuestions, noul, request, score, tinyFp32 } from './fixtures.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('scheduler lanes', () => {
  /** A request of `n` passes in `lane`, each pass recorded in `order`; `during(i)` runs inside pass i. */
  const passes = (
    s: Scheduler,
    order: string[],
    name: string,
    n: number,
    lane: Lane,
    during: (i: number) => Promise<void> = async () => {},
    signal?: AbortSignal,
  ) =>
    s.request(
      async (ticket: Ticket) => {
        for (let i = 1; i <= n; i++)
          await ticket.pass(async () => {
            order.push(`${name}${i}`);
            await during(i);
          });
      },
      signal,
      lane,
    );

  it("an interactive request arriving during a batch request's pass runs all its passes before the batch's next pass", async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const held = gate();
    let interactive: Promise<void> | undefined;
    const batch = passes(s, order, 'b', 6, 'batch', async (i) => {
      if (i === 3) {
        // Arrives while the batch's third pass runs (the session is busy).
        interactive = passes(s, order, 'i', 4, 'interactive');
        await held.promise;
      }
    });
    while (!interactive) await tick();
    held.open();
    await Promise.all([batch, interactive]);
    expect(order).toEqual(['b1', 'b2', 'b3', 'i1', 'i2', 'i3', 'i4', 'b4', 'b5', 'b6']);
  });

  it('an interactive request that reaches a thread blocked by a batch pass runs before the next batch pass', async () => {
    // As onnxruntime runs a pass: in a setImmediate callback, blocking the thread. The interactive
    // request is a message posted meanwhile, handled in the event loop's next I/O phase, as the
    // engine thread receives one from the server.
    const s = new Scheduler(8);
    const order: string[] = [];
    const { port1, port2 } = new MessageChannel();
    let interactive: Promise<void> | undefined;
    port2.on('message', () => {
      const release = s.arrive();
      interactive = (async () => {
        await tick(); // planned in another thread
        const answered = passes(s, order, 'i', 1, 'interactive');
        release();
        await answered;
      })();
    });
    const blocking = (name: string, during?: () => void) => () =>
      new Promise<void>((resolve) =>
        setImmediate(() => {
          during?.();
          for (const end = Date.now() + 20; Date.now() < end;);
          order.push(name);
          resolve();
        }),
      );
    await s.request(
      async (t) => {
        await t.pass(blocking('b1', () => port1.postMessage('arrives')));
        await t.pass(blocking('b2'));
      },
      undefined,
      'batch',
    );
    while (!interactive) await tick();
    await interactive;
    port1.close();
    expect(order).toEqual(['b1', 'i1', 'b2']);
  });

  it('batch requests take turns round robin among themselves, behind every interactive request', async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const g = gate();
    // An interactive request holds the session; everything else arrives meanwhile.
    const first = passes(s, order, 'i', 1, 'interactive', () => g.promise);
    await tick();
    const all = [
      first,
      passes(s, order, 'a', 3, 'batch'),
      passes(s, order, 'x', 2, 'interactive'),
      passes(s, order, 'b', 2, 'batch'),
      passes(s, order, 'y', 1, 'interactive'),
    ];
    await tick();
    expect(s.queueDepth).toBe(2);
    expect(s.batchQueueDepth).toBe(2);
    g.open();
    await Promise.all(all);
    // Interactive ones interleave with each other as before; the batch lane waits for them all,
    // then its requests take turns pass by pass.
    expect(order).toEqual(['i1', 'x1', 'y1', 'x2', 'a1', 'b1', 'a2', 'b2', 'a3']);
  });

  it('admits batch requests beyond maxQueue (never OverloadedError), outside queueDepth, and still refuses interactive ones', async () => {
    const s = new Scheduler(1);
    const g = gate();
    const order: string[] = [];
    const running = passes(s, order, 'i', 1, 'interactive', () => g.promise);
    const queued = passes(s, order, 'j', 1, 'interactive');
    await tick();
    const batches = Array.from({ length: 10 }, (_, k) => passes(s, order, `b${k}.`, 1, 'batch'));
    await tick();
    expect(s.queueDepth).toBe(1);
    expect(s.batchQueueDepth).toBe(10);
    // The interactive bound still holds: batch requests do not count against it either.
    await expect(passes(s, order, 'k', 1, 'interactive')).rejects.toBeInstanceOf(OverloadedError);
    g.open();
    await Promise.all([running, queued, ...batches]);
    expect(order.slice(0, 2)).toEqual(['i1', 'j1']);
    expect(order).toHaveLength(12);
    expect(s.batchQueueDepth).toBe(0);
    expect(s.running).toBe(0);
  });

  it('aborts a waiting request in either lane, and the others go on', async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const g = gate();
    const holder = passes(s, order, 'h', 1, 'interactive', () => g.promise);
    await tick();
    const stopBatch = new AbortController();
    const stopInteractive = new AbortController();
    const batch = passes(s, order, 'b', 2, 'batch', undefined, stopBatch.signal);
    const other = passes(s, order, 'c', 2, 'batch');
    const interactive = passes(s, order, 'i', 2, 'interactive', undefined, stopInteractive.signal);
    await tick();
    stopBatch.abort();
    stopInteractive.abort();
    await expect(batch).rejects.toBeInstanceOf(AbortedError);
    await expect(interactive).rejects.toBeInstanceOf(AbortedError);
    g.open();
    await Promise.all([holder, other]);
    expect(order).toEqual(['h1', 'c1', 'c2']);
    expect(s.queueDepth).toBe(0);
    expect(s.batchQueueDepth).toBe(0);
  });

  it('a batch request aborted between its passes stops at its next one', async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const stop = new AbortController();
    const batch = passes(
      s,
      order,
      'b',
      5,
      'batch',
      async (i) => {
        if (i === 2) stop.abort();
      },
      stop.signal,
    );
    await expect(batch).rejects.toBeInstanceOf(AbortedError);
    expect(order).toEqual(['b1', 'b2']);
    // The session is free again, for either lane.
    await passes(s, order, 'i', 1, 'interactive');
    await passes(s, order, 'c', 1, 'batch');
    expect(order).toEqual(['b1', 'b2', 'i1', 'c1']);
  });
});

describe('packing across requests keeps to a lane (the real tiny model)', () => {
  /** A chain of `n` tokens with no past, read at its last token. */
  const chain = (n: number, first: number): PackedPass => ({
    tokens: Array.from({ length: n }, (_, i) => first + i),
    parents: Array.from({ length: n }, (_, i) => i - 1),
    reads: [{ at: n - 1, candidates: [1, 2, 3] }],
  });

  /** The tiny model's runner, one thread. */
  const tinyRunner = async (): Promise<ModelRunner> => {
    const modelDir = await tinyFp32();
    return ModelRunner.load(await openModelFolder(modelDir), resolveEngineConfig({ modelDir, threads: 1 }));
  };

  it("an interactive shared pass takes the interactive prompts waiting, never the batch lane's", async () => {
    const runner = await tinyRunner();
    try {
      const count = new PassCount();
      const batcher = new RequestBatcher(4096, (pass) => runner.packed(pass, null, count.run));
      const s = new Scheduler(8);
      const g = gate();
      // An interactive request holds the session while the others arrive.
      const holder = s.request((t) => t.pass(() => g.promise));
      await tick();
      const whole = (p: PackedPass, lane: Lane) =>
        s.request((t) => new Passes(runner, t, count, batcher, lane).whole(p), undefined, lane);
      const all = [
        whole(chain(30, 5), 'batch'),
        whole(chain(20, 40), 'interactive'),
        whole(chain(10, 70), 'batch'),
        whole(chain(15, 90), 'interactive'),
      ];
      await tick();
      g.open();
      await Promise.all([holder, ...all]);
      // Two shared passes: the interactive prompts (35 tokens), then the batch ones (40).
      expect([count.passes, count.tokens]).toEqual([2, 75]);
    } finally {
      await runner.close();
    }
  });

  it("a batch lane's shared pass keeps to the batch budget, where an interactive one takes up to the whole budget", async () => {
    const runner = await tinyRunner();
    try {
      const count = new PassCount();
      const passLengths: number[] = [];
      const batcher = new RequestBatcher(
        4096,
        (pass) => (passLengths.push(pass.tokens.length), runner.packed(pass, null, count.run)),
        50,
      );
      const run = async (lane: Lane) => {
        const s = new Scheduler(8);
        const g = gate();
        const holder = s.request((t) => t.pass(() => g.promise), undefined, lane);
        await tick();
        const all = [chain(30, 5), chain(20, 40), chain(15, 70), chain(10, 90)].map((p) =>
          s.request((t) => new Passes(runner, t, count, batcher, lane).whole(p), undefined, lane),
        );
        await tick();
        g.open();
        await Promise.all([holder, ...all]);
      };
      await run('interactive');
      expect(passLengths).toEqual([75]);
      passLengths.length = 0;
      await run('batch');
      // 30 + 20 = 50 tokens, then 15 + 10: no batch pass past 50 tokens.
      expect(passLengths).toEqual([50, 25]);
    } finally {
      await runner.close();
    }
  });
});

describe('the planner of the batch lane', () => {
  it('never refuses a batch request, where the interactive lane past its bound does', async () => {
    const dir = await tinyFp32();
    const codec = await TextCodec.load(dir);
    const budgets = { request: 64_000, question: 32_000, context: 32_768 };
    const planner = workerPlanner({ modelDir: dir, endToken: codec.eosTokenId!, budgets, threads: 1, maxQueue: 2 });
    try {
      const r = request({ n: noul, c: choice }, 'A batch item. '.repeat(200));
      const plans = (lane?: Lane) =>
        Promise.allSettled(Array.from({ length: 8 }, () => planner.plan(r, undefined, lane)));
      const [interactive, batch] = await Promise.all([plans(), plans('batch')]);
      expect(interactive.filter((o) => o.status === 'rejected').length).toBeGreaterThan(0);
      expect(batch.every((o) => o.status === 'fulfilled')).toBe(true);
    } finally {
      await planner.close();
    }
  });
});

describe('lanes through the engine thread (tiny model)', () => {
  const open: Evaluator[] = [];
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it("answers an interactive request as on an idle engine, and finishes it while a batch request's many questions run", async () => {
    // One pass per question (no packing), the prefix cache off: the batch request is many passes.
    const evaluator = await loadEvaluator({
      modelDir: await tinyFp32(),
      threads: 1,
      packQuestions: false,
      prefixCacheBytes: 0,
    });
    open.push(evaluator);
    const interactiveRequest = request({ n: noul, c: choice, s: score }, 'The parcel arrived late and damaged.');
    const idle = await evaluator.evaluate(interactiveRequest);
    const batchRequest = request(manyQuestions(160), 'A long batch item: '.repeat(20));

    const before = evaluator.stats().passes;
    let batchDone = false;
    const batch = evaluator.evaluate(batchRequest, { lane: 'batch' }).then((r) => {
      batchDone = true;
      return r;
    });
    // Once the batch request has run some of its passes, the interactive one arrives.
    while (evaluator.stats().passes < before + 5 && !batchDone) await new Promise((r) => setTimeout(r, 2));
    const during = await evaluator.evaluate(interactiveRequest);
    expect(batchDone).toBe(false);
    expectSameResult(idle, during, 1e-6);
    expect(during.usage).toEqual(idle.usage);
    const done = await batch;
    expect(Object.keys(done.answers)).toHaveLength(160);
    expect(evaluator.stats()).toMatchObject({ queueDepth: 0, batchQueueDepth: 0, running: 0 });
  });
});
