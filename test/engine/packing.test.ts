// Packed evaluation: a request's questions (and their labels' continuations) in one pass on the
// prefix, as a tree each of whose branches sees only the prefix and itself. The answers must be those
// of one pass per question (today's path) within 1e-4 on fp32, for every kind of label set.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Question } from '../../src/engine/index.js';
import { ensureFlavor } from '../../tools/flavors.js';
import {
  choice,
  expectSameResult,
  manyQuestions,
  noul,
  request,
  score,
  state,
  tinyFp32,
  tinyInt8,
  tinyNoPositionIds,
} from './fixtures.js';

/** Labels that share first tokens, are prefixes of one another, and span several tokens. */
const tricky: Record<string, Question> = {
  n: noul,
  c: choice,
  s: score,
  prefixes: {
    type: 'choice',
    instructions: 'Which one?',
    criteria: { a: null, ab: null, abc: null, 'abc def': null, 'abc defg hij': null },
  },
  long: {
    type: 'choice',
    instructions: 'Which city?',
    criteria: { 'San Francisco': null, 'San Diego': null, 'Santa Fe': null, 'São Paulo': null, Springfield: null },
  },
  numbers: {
    type: 'choice',
    instructions: 'Which number?',
    criteria: { '1': null, '12': null, '123': null, '1234': null },
  },
  levels: {
    type: 'score',
    instructions: 'How much?',
    criteria: ['none at all', 'none', 'a little', 'a lot more than that'],
  },
};

let packed: Evaluator;
let perQuestion: Evaluator;
beforeAll(async () => {
  const modelDir = await tinyFp32();
  packed = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
  perQuestion = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, packQuestions: false });
});
afterAll(async () => {
  await packed?.close();
  await perQuestion?.close();
});

describe('packed evaluation', () => {
  it('answers as one pass per question does, within 1e-4: multi-token labels, labels that are prefixes of others', async () => {
    for (const s of [state, 'short', 'A much longer state. '.repeat(40), ['a', { b: 'c' }]]) {
      const r = request(tricky, s);
      const [p0, q0] = [packed.stats().passes, perQuestion.stats().passes];
      expectSameResult(await perQuestion.evaluate(r), await packed.evaluate(r), 1e-4);
      // The prefix cache is off and these prefixes are under one prefill chunk: the questions ride
      // with the prefix in one pass, against the prefix and a pass per question and label path.
      expect(packed.stats().passes - p0).toBe(1);
      expect(perQuestion.stats().passes - q0).toBeGreaterThan(Object.keys(tricky).length);
    }
  });

  it('many questions over several packed passes (token budget) answer the same', async () => {
    const modelDir = await tinyFp32();
    const small = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, packTokens: 40 });
    try {
      const r = request({ ...manyQuestions(30), ...tricky });
      expectSameResult(await perQuestion.evaluate(r), await small.evaluate(r), 1e-4);
      expectSameResult(await perQuestion.evaluate(r), await packed.evaluate(r), 1e-4);
    } finally {
      await small.close();
    }
  });

  it('one question with multi-token labels is one pass, its label continuations included, cache on or off', async () => {
    const modelDir = await tinyFp32();
    const withCache = await loadEvaluator({ modelDir, threads: 1 });
    try {
      // A state is stored on its second sighting (single-question-reuse.test.ts), so each question
      // here asks about a state this evaluator has not seen: the first sighting is one pass.
      for (const key of ['long', 'prefixes', 'numbers'] as const) {
        const r = request({ [key]: tricky[key]! }, `${state} (${key})`);
        const before = withCache.stats().passes;
        expectSameResult(await perQuestion.evaluate(r), await withCache.evaluate(r), 1e-4);
        expect(withCache.stats().passes - before, key).toBe(1);
      }
    } finally {
      await withCache.close();
    }
  });

  it("answers keep the request's order of questions", async () => {
    const keys = ['zeta', 'alpha', 'mid', 'b', 'a'];
    const qs = [score, noul, choice, tricky.long!, tricky.numbers!];
    const r = await packed.evaluate(request(Object.fromEntries(keys.map((k, i) => [k, qs[i]!]))));
    expect(Object.keys(r.answers)).toEqual(keys);
  });

  it('no question sees another: a question answers the same alone and among others', async () => {
    const alone = await packed.evaluate(request({ c: choice }));
    for (const others of [{ n: noul }, { s: score, x: tricky.long! }, manyQuestions(12)]) {
      const together = await packed.evaluate(request({ ...others, c: choice }));
      expectSameResult(
        { answers: { c: alone.answers.c! }, usage: alone.usage },
        { answers: { c: together.answers.c! }, usage: alone.usage },
        1e-4,
      );
    }
  });

  it('the questions ride with the last prefill chunk when the prefix KV is not kept; with the cache on, the prefix pass is kept', async () => {
    const modelDir = await tinyFp32();
    const long = request(tricky, 'A long state that takes several prefill chunks. '.repeat(60)); // ~600 tokens
    const chunked = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, prefillChunk: 128 });
    const cached = await loadEvaluator({ modelDir, threads: 1, prefillChunk: 128 });
    try {
      const reference = await perQuestion.evaluate(long);
      const a = await chunked.evaluate(long);
      expectSameResult(reference, a, 1e-4);
      const b = await cached.evaluate(long);
      expectSameResult(reference, b, 1e-4);
      // Cache off: the head in whole chunks, then what is left of the prefix and every question in one pass.
      // Cache on: the whole prefix in chunks (its KV stored), then one packed pass.
      expect(cached.stats().passes).toBe(chunked.stats().passes + 1);
      const hit = await cached.evaluate(long);
      expectSameResult(b, hit, 1e-6);
    } finally {
      await chunked.close();
      await cached.close();
    }
  });

  it('a prefix-cache hit answers as the cold pass', async () => {
    const modelDir = await tinyFp32();
    const cached = await loadEvaluator({ modelDir, threads: 1 });
    try {
      const r = request(tricky);
      const cold = await cached.evaluate(r);
      const hit = await cached.evaluate(r);
      expect(cached.stats().prefixCacheHits).toBe(1);
      expectSameResult(cold, hit, 1e-6);
      expectSameResult(await perQuestion.evaluate(r), hit, 1e-4);
    } finally {
      await cached.close();
    }
  });

  it('int8 packs too, and agrees with its own per-question answers', async () => {
    const modelDir = await tinyInt8();
    const a = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
    const b = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, packQuestions: false });
    try {
      const r = request(tricky);
      // Dynamic int8 quantization scales by the whole pass's activations: close, not equal (here the
      // questions also share their pass with the prefix; README, Exactness: up to 0.064 before packing).
      expectSameResult(await b.evaluate(r), await a.evaluate(r), 0.1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('graphs that cannot pack fall back to one pass per question, and say so at load', async () => {
    for (const modelDir of [await tinyNoPositionIds(), await ensureFlavor({ dtype: 'fp32', attention: 'gqa' })]) {
      const warnings: string[] = [];
      const e = await loadEvaluator({
        modelDir,
        threads: 1,
        prefixCacheBytes: 0,
        onNote: (m) => warnings.push(m.message),
      });
      try {
        expect(warnings.some((w) => w.includes('one pass per question'))).toBe(true);
        const r = await e.evaluate(request(tricky));
        expect(Object.keys(r.answers)).toEqual(Object.keys(tricky));
      } finally {
        await e.close();
      }
    }
  });
});
