// The engine under concurrent load: passes interleave fairly, aborts stop mid-prefill, the prefix
// cache is scoped, and planning in worker threads gives exactly the main thread's plans and errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AbortedError,
  BudgetError,
  loadEvaluator,
  OverloadedError,
  type Evaluator,
  type Question,
} from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { workerPlanner } from '../../src/engine/prompting/planner/index.js';
import { promptSet } from '../../src/engine/prompting/prompts.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { choice, manyQuestions, noul, request, score, tinyFp32 } from './fixtures.js';

const longState = Array.from({ length: 200 }, (_, i) => `Line ${i}: the fox jumped over fence number ${i * 7}.`).join(
  '\n',
);

function options(n: number): Question {
  const criteria: Record<string, null> = {};
  for (let i = 0; i < n; i++) criteria[`option number ${i}`] = null;
  return { type: 'choice', instructions: 'Pick one', criteria };
}

describe('fair scheduling on the real engine', () => {
  let evaluator: Evaluator;
  beforeAll(async () => {
    evaluator = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, prefixCacheBytes: 0, prefillChunk: 64 });
  });
  afterAll(() => evaluator.close());

  it('a one-question request sent while a 255-option and a 400-question request run is answered first', async () => {
    const done: string[] = [];
    const track = (name: string, p: Promise<unknown>) => p.then(() => void done.push(name));
    const heavy = [
      track('400 questions', evaluator.evaluate(request(manyQuestions(400)))),
      track('255 options', evaluator.evaluate(request({ c: options(255) }, longState))),
    ];
    // Both heavy requests are running passes before the small one arrives.
    while (evaluator.stats().running < 2) await new Promise((r) => setTimeout(r, 5));
    await track('one question', evaluator.evaluate(request({ n: noul })));
    expect(evaluator.stats().running).toBeGreaterThanOrEqual(1);
    await Promise.all(heavy);
    expect(done[0]).toBe('one question');
    expect(done.indexOf('one question')).toBeLessThan(done.indexOf('400 questions'));
  });

  it('an abort stops a long prefill between chunks', async () => {
    const hugeState = Array.from({ length: 1500 }, (_, i) => `Row ${i}: value ${i * 13} in zone ${i % 17}.`).join('\n');
    const before = evaluator.stats().tokensEvaluated;
    const controller = new AbortController();
    const pending = evaluator.evaluate(request({ n: noul, c: choice }, hugeState), { signal: controller.signal });
    while (evaluator.stats().tokensEvaluated === before) await new Promise((r) => setTimeout(r, 1));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(AbortedError);
    const evaluated = evaluator.stats().tokensEvaluated - before;
    // Far less than the state's ~20k tokens: it stopped within a chunk or two of the abort.
    expect(evaluated).toBeLessThan(2_000);
    expect(evaluator.stats().running).toBe(0);
  });
});

describe('prefix cache scopes', () => {
  it('a request only reuses the prefix stored under its own scope', async () => {
    const evaluator = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1 });
    try {
      const r = request({ n: noul, s: score });
      const hits = () => evaluator.stats().prefixCacheHits;
      const a = await evaluator.evaluate(r, { cacheScope: 'tenant-a' });
      expect(hits()).toBe(0);
      const b = await evaluator.evaluate(r, { cacheScope: 'tenant-b' });
      expect(hits()).toBe(0); // tenant B never hits tenant A's prefix
      await evaluator.evaluate(r, { cacheScope: 'tenant-a' });
      expect(hits()).toBe(1);
      await evaluator.evaluate(r);
      expect(hits()).toBe(1); // the shared scope is a scope of its own
      expect(b.answers).toEqual(a.answers);
    } finally {
      await evaluator.close();
    }
  });
});

describe('planning in worker threads', () => {
  it('gives the plans of the main thread, and budget errors with their fields', async () => {
    const dir = await tinyFp32();
    const folder = await openModelFolder(dir);
    const codec = await TextCodec.load(dir);
    const endToken = codec.eosTokenId!;
    const budgets = { request: 500, question: 400, context: folder.maxContext };
    const planner = workerPlanner({ modelDir: dir, endToken, budgets, threads: 1, maxQueue: 8 });
    try {
      const r = request({ n: noul, c: choice, s: score, ...manyQuestions(3) });
      expect(await planner.plan(r)).toEqual(planRequest(r, codec, promptSet(), endToken, budgets));
      const over = request({ n: noul }, longState);
      const error = await planner.plan(over).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(BudgetError);
      let expected: unknown;
      try {
        planRequest(over, codec, promptSet(), endToken, budgets);
      } catch (e) {
        expected = e;
      }
      expect({ ...(error as BudgetError), message: (error as Error).message }).toEqual({
        ...(expected as BudgetError),
        message: (expected as Error).message,
      });
    } finally {
      await planner.close();
    }
  });
});

describe('the planning queue is bounded', () => {
  it('past its bound a request is refused with OverloadedError, and the rest are planned', async () => {
    const dir = await tinyFp32();
    const codec = await TextCodec.load(dir);
    const budgets = { request: 64_000, question: 32_000, context: 32_768 };
    const planner = workerPlanner({ modelDir: dir, endToken: codec.eosTokenId!, budgets, threads: 1, maxQueue: 2 });
    try {
      const r = request({ n: noul }, longState);
      const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => planner.plan(r)));
      const refused = outcomes.filter((o) => o.status === 'rejected');
      expect(refused.length).toBeGreaterThan(0);
      for (const o of refused) expect((o as PromiseRejectedResult).reason).toBeInstanceOf(OverloadedError);
      expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBeGreaterThanOrEqual(3);
    } finally {
      await planner.close();
    }
  });
});

describe('bodies given as bytes plan in a lane of their own', () => {
  /** A worker planner with one thread per lane on the tiny model. */
  const onePlannerThread = async () => {
    const dir = await tinyFp32();
    const codec = await TextCodec.load(dir);
    return workerPlanner({
      modelDir: dir,
      endToken: codec.eosTokenId!,
      budgets: { request: 64_000, question: 32_000, context: 32_768 },
      threads: 1,
      maxQueue: 8,
    });
  };
  const bytes = (r: unknown) => new TextEncoder().encode(JSON.stringify(r));

  it('the same plan as the request object, and a small request is planned while a 6 MB body still is', async () => {
    const planner = await onePlannerThread();
    try {
      const r = request({ n: noul, c: choice, s: score });
      expect(await planner.planBody(bytes(r))).toEqual(await planner.plan(r));
      // 2,000,000 empty arrays: seconds to parse, render and count against the budget (then refused).
      const big = bytes(
        request(
          { n: noul },
          Array.from({ length: 2_000_000 }, () => []),
        ),
      );
      const done: string[] = [];
      const bigPlan = planner.planBody(big).then(
        () => done.push('big'),
        (e: unknown) => done.push(e instanceof BudgetError ? 'big refused' : String(e)),
      );
      expect(big.byteLength).toBe(0); // transferred to the planner thread, not copied
      await planner.plan(request({ n: noul }));
      done.push('small');
      await bigPlan;
      expect(done).toEqual(['small', 'big refused']);
    } finally {
      await planner.close();
    }
  });
  it('a plan aborted while it waits for a thread leaves the queue at once, before the plan ahead of it ends', async () => {
    const planner = await onePlannerThread();
    try {
      let bigEnded = false;
      const big = planner
        .planBody(
          bytes(
            request(
              { n: noul },
              Array.from({ length: 2_000_000 }, () => []),
            ),
          ),
        )
        .catch(() => undefined)
        .finally(() => (bigEnded = true));
      const controller = new AbortController();
      const waiting = planner.planBody(bytes(request({ n: noul })), controller.signal);
      controller.abort();
      await expect(waiting).rejects.toBeInstanceOf(AbortedError);
      expect(bigEnded).toBe(false);
      await big;
      // The thread is free again: the next plan is answered.
      expect((await planner.plan(request({ n: noul }))).questions).toHaveLength(1);
    } finally {
      await planner.close();
    }
  });
});
