// What keeps an interactive request's wait behind batch work short: (1) an interactive request holds
// the batch lane from the moment it reaches the engine, while it is still being planned, so no
// batch pass starts between its arrival and its first pass; (2) the batch lane packs fewer question
// tokens per pass (batchPackTokens) and prefills its states in pieces no longer, so the one batch
// pass it may wait behind is short. The second
// runs the real engine on the tiny model: the batch lane's request takes exactly the passes its cap
// implies, and answers as the interactive lane does.
import { afterAll, describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/engine/execution/scheduler.js';
import { packWithStems } from '../../src/engine/execution/packing.js';
import { prefillEnds } from '../../src/engine/model/runner.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { expectSameResult, manyQuestions, planOf, request, tinyFp32 } from './fixtures.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('an arriving interactive request', () => {
  it('holds the batch lane until it is admitted, then lets it go on', async () => {
    const s = new Scheduler(8);
    const order: string[] = [];
    const release = s.arrive();
    const batch = s.request((t) => t.pass(async () => void order.push('b1')), undefined, 'batch');
    await tick();
    await tick();
    expect(order).toEqual([]); // being planned: no batch pass starts
    const interactive = s.request((t) => t.pass(async () => void order.push('i1')));
    release();
    release(); // idempotent
    await Promise.all([interactive, batch]);
    expect(order).toEqual(['i1', 'b1']);
  });

  it('lets the batch lane go on when its planning fails (released, never admitted)', async () => {
    const s = new Scheduler(8);
    const release = s.arrive();
    let ran = false;
    const batch = s.request((t) => t.pass(async () => void (ran = true)), undefined, 'batch');
    await tick();
    expect(ran).toBe(false);
    release();
    await batch;
    expect(ran).toBe(true);
  });
});

describe('the batch lane pass size (tiny model)', () => {
  const open: Evaluator[] = [];
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it('packs at most batchPackTokens question tokens a pass in the batch lane, and prefills in pieces as short, with the same answers', async () => {
    const dir = await tinyFp32();
    // The prefix cache off: each lane encodes the whole prefix itself, then its packed passes.
    const settings = {
      modelDir: dir,
      threads: 1,
      prefixCacheBytes: 0,
      packTokens: 512,
      prefillChunk: 256,
      batchPackTokens: 64,
    };
    const evaluator = await loadEvaluator(settings);
    open.push(evaluator);
    const r = request(manyQuestions(30), 'A ticket about a parcel that arrived late. '.repeat(40));
    const plan = await planOf(dir, r);
    // The questions' shared beginnings run first in a pass of their own when they save enough (stems.ts).
    const groups = (budget: number) => {
      const { stems, groups } = packWithStems(plan.questions, budget);
      return groups.length + (stems ? 1 : 0);
    };
    const pieces = (chunk: number) => prefillEnds(plan.prefix.length, 0, chunk).length;
    // Large enough to tell the lanes apart: more than one packed pass, a prefix of several pieces.
    expect(groups(512)).toBeGreaterThan(1);
    expect(groups(64)).toBeGreaterThan(groups(512));
    expect(pieces(64)).toBeGreaterThan(pieces(256));

    const passes = async (lane: 'interactive' | 'batch') => {
      const before = evaluator.stats().passes;
      const result = await evaluator.evaluate(r, { lane });
      return { result, passes: evaluator.stats().passes - before };
    };
    const interactive = await passes('interactive');
    const batch = await passes('batch');
    expect(interactive.passes).toBe(pieces(256) + groups(512));
    expect(batch.passes).toBe(pieces(64) + groups(64));
    // Only the order of fp32 sums differs (prefill pieces, packed groups): far below any answer's precision.
    expectSameResult(interactive.result, batch.result, 1e-4);
  });
});
