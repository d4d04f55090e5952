// The service's batch lane: a caller with lane 'batch' (a batch job's runner) reaches the engine's
// batch lane through evaluateRequest, directly and through an escalating entry (both of its
// models), so it is never refused for a full queue where an interactive caller is (529); its
// Evaluation carries the usage per question, except an escalating entry's. On the real engine
// (the tiny model, in its thread) with maxQueue 0: one request running fills the interactive queue.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, OverloadedError, type Evaluator } from '../../src/engine/index.js';
import { checkRegistry, loadRegistry, type Registry } from '../../src/registry/registry.js';
import { evaluateRequest, staticModels, type ServiceContext } from '../../src/service/index.js';
import { manyQuestions, noul, choice, score, tinyFp32 } from '../engine/fixtures.js';

const STATE = 'The parcel arrived two days late and the lamp inside was broken.';
const SMALL = { n: noul, c: choice, s: score };

describe('the batch lane through the service', () => {
  let evaluator: Evaluator;
  let ctx: ServiceContext;
  beforeAll(async () => {
    const base = loadRegistry();
    const registry: Registry = checkRegistry(
      {
        default: base.default,
        aliases: base.aliases,
        models: {
          ...base.models,
          // Every question goes to the second model too.
          'cascade-all': {
            path: '',
            escalate: { first: 'svc-1.13.0', second: 'tiny-tasks-1', below: { noul: null, choice: null, score: null } },
            description: 'escalating (test)',
            release_date: '2026-11-27',
          },
        },
      },
      base.file,
    );
    // One pass per question and no prefix cache: the long request holds the engine for many passes.
    evaluator = await loadEvaluator({
      modelDir: await tinyFp32(),
      threads: 1,
      maxQueue: 0,
      packQuestions: false,
      prefixCacheBytes: 0,
    });
    ctx = { registry, models: staticModels({ 'svc-1.13.0': evaluator, 'tiny-tasks-1': evaluator }) };
  });
  afterAll(async () => {
    await evaluator.close();
  });

  it('admits batch callers past a full queue (directly and through an escalating entry) where an interactive caller is refused', async () => {
    // The batch lane's planner thread starts on its first request: started here, before the test proper.
    await evaluateRequest(ctx, { state: STATE, model: 'svc-1.13.0', questions: SMALL }, { lane: 'batch' });
    let longDone = false;
    const long = evaluateRequest(ctx, { state: STATE, model: 'svc-1.13.0', questions: manyQuestions(160) }).then(
      (r) => ((longDone = true), r),
    );
    while (evaluator.stats().running < 1) await new Promise((r) => setTimeout(r, 2));
    await expect(evaluateRequest(ctx, { state: STATE, model: 'svc-1.13.0', questions: SMALL })).rejects.toBeInstanceOf(
      OverloadedError,
    );
    const batch = evaluateRequest(ctx, { state: STATE, model: 'svc-1.13.0', questions: SMALL }, { lane: 'batch' });
    const cascade = evaluateRequest(ctx, { state: STATE, model: 'cascade-all', questions: SMALL }, { lane: 'batch' });
    // Both wait in the batch lane behind the interactive request, not refused.
    while (evaluator.stats().batchQueueDepth < 2 && !longDone) await new Promise((r) => setTimeout(r, 2));
    expect(longDone).toBe(false);
    expect(evaluator.stats().batchQueueDepth).toBe(2);
    expect(evaluator.stats().queueDepth).toBe(0);

    const direct = await batch;
    const parts = direct.usageParts!;
    expect(Object.keys(parts.questions).sort()).toEqual(['c', 'n', 's']);
    const sum = Object.values(parts.questions).reduce(
      (a, u) => ({ input_tokens: a.input_tokens + u.input_tokens, output_tokens: a.output_tokens + u.output_tokens }),
      parts.shared,
    );
    expect(sum).toEqual(direct.response.usage);

    const escalated = await cascade;
    expect(Object.keys(escalated.response.answers).sort()).toEqual(['c', 'n', 's']);
    // Both models answered (usage adds them), and no parts: its lines are not merged.
    expect(escalated.response.usage.input_tokens).toBe(2 * direct.response.usage.input_tokens);
    expect(escalated.usageParts).toBeUndefined();
    expect((await long).response.answers).toHaveProperty('q159');
  });
});
