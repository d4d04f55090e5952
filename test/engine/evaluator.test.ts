import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { choice, expectClose, manyQuestions, noul, request, score, state, tinyFp32 } from './fixtures.js';

describe('evaluator on the tiny synthetic model', () => {
  let cold: Evaluator; // no cross-request cache: every request runs from scratch
  let cached: Evaluator;

  beforeAll(async () => {
    const modelDir = await tinyFp32();
    cold = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
    cached = await loadEvaluator({ modelDir, threads: 1 });
  });
  afterAll(async () => {
    await cold.close();
    await cached.close();
  });

  it('answers each type with the shape the spec requires', async () => {
    const { answers, usage } = await cold.evaluate(request({ n: noul, c: choice, s: score }));
    const n = answers.n!;
    const c = answers.c!;
    const s = answers.s!;
    expect(n.type).toBe('noul');
    if (n.type === 'noul') expect(n.noul).toBeGreaterThanOrEqual(0);
    expect(Object.keys(n)).toEqual(['type', 'noul']);
    if (c.type !== 'choice' || s.type !== 'score') throw new Error('wrong answer types');
    expect(Object.keys(c.probabilities).sort()).toEqual(Object.keys((choice as { criteria: object }).criteria).sort());
    expect(c.probabilities[c.choice]).toBe(Math.max(...Object.values(c.probabilities)));
    expect(Object.keys(s.probabilities)).toEqual(['0', '1', '2']);
    expect(s.legend).toEqual({ '0': 'slow', '1': { level: 'medium' }, '2': ['fast', 'very'] });
    for (const answer of [c, s]) {
      const p = Object.values(answer.probabilities);
      for (const x of p) expect(x >= 0 && x <= 1).toBe(true);
      expect(Math.abs(p.reduce((a, b) => a + b, 0) - 1)).toBeLessThan(1e-6);
      expect(answer.confidence >= 0 && answer.confidence <= 1).toBe(true);
    }
    const expectation = Object.entries(s.probabilities).reduce((acc, [level, p]) => acc + Number(level) * p, 0);
    expect(s.score).toBeCloseTo(expectation, 12);
    expect(s.score >= 0 && s.score <= 2).toBe(true);
    expect(usage.input_tokens).toBeGreaterThan(50);
    expect(usage.output_tokens).toBeGreaterThan(0);
  });

  it('KV reuse is exact: each type alone (one whole-prompt pass) equals it among 15 others (prefix + suffix)', async () => {
    const questions = { ...manyQuestions(13), n: noul, c: choice, s: score };
    expect(Object.keys(questions)).toHaveLength(16);
    const together = await cold.evaluate(request(questions));
    for (const key of ['n', 'c', 's', 'q0', 'q1', 'q2']) {
      const alone = await cold.evaluate(request({ [key]: questions[key as keyof typeof questions] }));
      expectClose(alone.answers[key]!, together.answers[key]!);
    }
  });

  it('question order and keys do not change any answer', async () => {
    const a = await cold.evaluate(request({ n: noul, c: choice, s: score }));
    const b = await cold.evaluate(request({ third: score, first: choice, second: noul }));
    expect(b.answers.second).toEqual(a.answers.n);
    expect(b.answers.first).toEqual(a.answers.c);
    expect(b.answers.third).toEqual(a.answers.s);
    expect(b.usage).toEqual(a.usage);
  });

  it('is deterministic and reports the same usage whether the prefix came from the cache or not', async () => {
    const req = request({ n: noul, c: choice, s: score }, ['first item', { nested: 'second 😀' }]);
    const missesBefore = cached.stats().prefixCacheMisses;
    const first = await cached.evaluate(req);
    const second = await cached.evaluate(req);
    const fresh = await cold.evaluate(req);
    expect(cached.stats().prefixCacheMisses).toBe(missesBefore + 1);
    expect(cached.stats().prefixCacheHits).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    expect(JSON.stringify(fresh)).toBe(JSON.stringify(first));
  });

  it("a different state never gets another state's cached answers", async () => {
    const a = await cached.evaluate(request({ n: noul, c: choice }, 'The fox is red.'));
    const b = await cached.evaluate(request({ n: noul, c: choice }, 'The fox is red!'));
    const a2 = await cold.evaluate(request({ n: noul, c: choice }, 'The fox is red.'));
    const b2 = await cold.evaluate(request({ n: noul, c: choice }, 'The fox is red!'));
    expect(a).toEqual(a2);
    expect(b).toEqual(b2);
    expect(a.answers.n).not.toEqual(b.answers.n);
  });

  it('string, object and array states all render and answer', async () => {
    for (const s of ['plain text', state, [1, 'two', { three: 3 }]]) {
      const { answers } = await cold.evaluate(request({ n: noul }, s));
      expect(answers.n!.type).toBe('noul');
    }
  });
});
