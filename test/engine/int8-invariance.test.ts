// An int8 model answers a question the same whatever else runs with it: a request sent alone, with
// other questions, after a prefix-cache hit, or as a batch item (the batch lane's shorter prefill
// pieces) gives the same probabilities. This is what lets a batch line re-run after a crash, or on
// another replica, return the answer it returned the first time, and what batch results are held to
// against the same requests sent one by one (1e-6).
//
// It is checked on the 0.5B-shaped int8 replica (24 layers: a summation-order change of 1e-7 in
// attention that flips one int8 step is carried far enough there to show; on the 2-layer tiny shape
// it rarely reaches a probability). Before attention summed in float64 (exact-attention.ts) and the
// prompts of such a graph were split by pass kind (ModelRunner.splitsPrompt), a question packed with
// others moved by 1.4e-3 from the same question alone, and a batch item by 6.8e-3.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EvaluateResult, type Evaluator } from '../../src/engine/index.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { packWithStems } from '../../src/engine/execution/packing.js';
import type { Question } from '../../src/engine/types.js';
import { manyQuestions, maxDiff, planOf, request, tinyFp32, tinyInt8 } from './fixtures.js';

const QUESTIONS = manyQuestions(6);
const WORDS = ['river', 'ledger', 'quarterly', 'Zürich', '東京', 'invoice', 'refund', 'pump', 'shipment', '42'];
/** A state of about 700 tokens: three prefill pieces of 256 interactive, six of 128 in the batch lane. */
const STATE = Array.from({ length: 300 }, (_, i) => WORDS[(i * 7 + (i >> 3)) % WORDS.length]).join(' ');
const pick = (...keys: string[]) => Object.fromEntries(keys.map((k) => [k, QUESTIONS[k]!]));

describe('which graphs split their prompts', () => {
  it('the per-token int8 graph with fused attention does; an fp32 one does not', async () => {
    for (const [dir, splits] of [
      [await tinyInt8(), true],
      [await tinyFp32(), false],
    ] as const) {
      const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
      expect(runner.splitsPrompt, dir).toBe(splits);
      await runner.close();
    }
  }, 120_000);
});

describe('an int8 question answers the same in every composition (0.5B-shaped replica)', () => {
  let cacheOff: Evaluator;
  let cacheOn: Evaluator;
  let all: EvaluateResult;
  beforeAll(async () => {
    const modelDir = await ensureSynthModel({ shape: 'qwen2.5-0.5b', dtype: 'int8' });
    const config = { modelDir, threads: 2, prefillChunk: 256 };
    cacheOff = await loadEvaluator({ ...config, prefixCacheBytes: 0 });
    cacheOn = await loadEvaluator({ ...config, prefixCacheBytes: 1e9 });
    all = await cacheOff.evaluate(request(QUESTIONS, STATE));
  }, 300_000);
  afterAll(async () => {
    await cacheOff?.close();
    await cacheOn?.close();
  });

  it('alone, and with another question, as with all six', async () => {
    for (const k of ['q1', 'q2']) {
      const alone = await cacheOff.evaluate(request(pick(k), STATE));
      expect(maxDiff(all, alone, [k]), k).toBeLessThanOrEqual(1e-6);
    }
    const two = await cacheOff.evaluate(request(pick('q1', 'q4'), STATE));
    expect(maxDiff(all, two, ['q1', 'q4'])).toBeLessThanOrEqual(1e-6);
  }, 120_000);

  it('after a prefix-cache hit, as computed whole', async () => {
    await cacheOn.evaluate(request(pick('q5'), STATE));
    await cacheOn.evaluate(request(pick('q5'), STATE)); // the second sighting stores the prefix
    const hits = cacheOn.stats().prefixCacheHits;
    const hit = await cacheOn.evaluate(request(QUESTIONS, STATE));
    expect(cacheOn.stats().prefixCacheHits).toBe(hits + 1);
    expect(maxDiff(all, hit)).toBeLessThanOrEqual(1e-6);
    const one = await cacheOn.evaluate(request(pick('q2'), STATE));
    expect(maxDiff(all, one, ['q2'])).toBeLessThanOrEqual(1e-6);
  }, 120_000);

  it('with stems (alike questions’ shared beginnings run once, in a pass of their own), as each alone, in either lane', async () => {
    const rubric: Record<string, Question> = {};
    for (const aspect of ['the delivery', 'the invoice', 'the price', 'the refund', 'the website', 'the staff']) {
      rubric[`n ${aspect}`] = { type: 'noul', instructions: `Does the customer report a problem with ${aspect}?` };
      rubric[`s ${aspect}`] = {
        type: 'score',
        instructions: `How strongly does the customer feel about ${aspect}?`,
        criteria: ['not at all', 'a little', 'strongly'],
      };
    }
    const plan = await planOf(cacheOff.modelDir, request(rubric, STATE));
    // Stems in the batch lane's passes (128 tokens: the questions span several); the interactive
    // lane's 512-token passes share those beginnings within each pass already, so it runs none here.
    expect(packWithStems(plan.questions, 128).stems).toBeDefined();
    expect(packWithStems(plan.questions, 512).stems).toBeUndefined();
    const together = await cacheOff.evaluate(request(rubric, STATE));
    const item = await cacheOff.evaluate(request(rubric, STATE), { lane: 'batch' });
    for (const k of Object.keys(rubric)) {
      const alone = await cacheOff.evaluate(request({ [k]: rubric[k]! }, STATE));
      expect(maxDiff(together, alone, [k]), k).toBeLessThanOrEqual(1e-6);
      expect(maxDiff(item, alone, [k]), k).toBeLessThanOrEqual(1e-6);
    }
  }, 120_000);

  it('as a batch item (prefilled in the batch lane’s shorter pieces), as sent interactively', async () => {
    const item = await cacheOff.evaluate(request(pick('q1', 'q2', 'q3'), STATE), { lane: 'batch' });
    expect(maxDiff(all, item, ['q1', 'q2', 'q3'])).toBeLessThanOrEqual(1e-6);
  }, 120_000);
});
