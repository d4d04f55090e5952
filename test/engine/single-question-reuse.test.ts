// One question per request about the same state (several services, one document; a UI asking as
// the user types): the state's prefix is stored on its second sighting, so the third request on
// hits the cache, while a one-off one-question request keeps its single pass and stores nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineStats, type EvaluateResult, type Evaluator } from '../../src/engine/index.js';
import { choice, maxDiff, noul, request, score, tinyFp32, tinyInt8 } from './fixtures.js';

const STATE = 'The quarterly report says revenue grew by nine percent while costs stayed flat. '.repeat(40);

async function counted(
  e: Evaluator,
  run: () => Promise<EvaluateResult>,
): Promise<{ result: EvaluateResult; tokens: number; hits: number; misses: number; bytes: number }> {
  const before: EngineStats = e.stats();
  const result = await run();
  const after = e.stats();
  return {
    result,
    tokens: after.tokensEvaluated - before.tokensEvaluated,
    hits: after.prefixCacheHits - before.prefixCacheHits,
    misses: after.prefixCacheMisses - before.prefixCacheMisses,
    bytes: after.prefixCacheBytes,
  };
}

describe('one question per request reuses the state from its third request', () => {
  let fp32: Evaluator;
  let int8: Evaluator;
  let off: Evaluator;
  beforeAll(async () => {
    fp32 = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1 });
    int8 = await loadEvaluator({ modelDir: await tinyInt8(), threads: 1 });
    off = await loadEvaluator({ modelDir: await tinyFp32(), threads: 1, prefixCacheBytes: 0 });
  });
  afterAll(async () => {
    await Promise.all([fp32.close(), int8.close(), off.close()]);
  });

  it('first: one pass, nothing stored; second: stored; third and later: hits that evaluate only the question', async () => {
    const ask = (q: typeof noul) =>
      counted(fp32, () => fp32.evaluate(request({ q }, STATE), { cacheScope: 'tenant-a' }));
    const first = await ask(noul);
    expect([first.hits, first.bytes]).toEqual([0, 0]);
    const second = await ask(choice);
    expect(second.hits).toBe(0);
    expect(second.bytes).toBeGreaterThan(0);
    const third = await ask(score);
    const fourth = await ask(noul);
    for (const later of [third, fourth]) {
      expect(later.hits).toBe(1);
      expect(later.tokens).toBeLessThan(first.tokens / 4);
    }
    // fp32: the cached prefix + the question equals the whole prompt in one pass, to fp32 rounding.
    expect(maxDiff(fourth.result, first.result)).toBeLessThan(1e-5);
    // The same state under another tenant's scope is a first sighting there: nothing is learned across tenants.
    const other = await counted(fp32, () => fp32.evaluate(request({ q: noul }, STATE), { cacheScope: 'tenant-b' }));
    expect(other.hits).toBe(0);
    expect(other.bytes).toBe(second.bytes);
  });

  it('one-off one-question requests keep the single pass and store nothing', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await counted(fp32, () =>
        fp32.evaluate(request({ q: noul }, `${STATE} Version ${i}.`), { cacheScope: 'tenant-c' }),
      );
      expect(r.hits).toBe(0);
    }
    const bytes = fp32.stats().prefixCacheBytes;
    await fp32.evaluate(request({ q: noul }, `${STATE} Version 99.`), { cacheScope: 'tenant-c' });
    expect(fp32.stats().prefixCacheBytes).toBe(bytes);
  });

  it('with the prefix cache off (zero retention) nothing is stored or remembered, however often a state comes', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await counted(off, () => off.evaluate(request({ q: noul }, STATE)));
      expect([r.hits, r.bytes]).toEqual([0, 0]);
    }
  });

  it('int8: the prefix is stored on the second sighting too, and later answers equal the first', async () => {
    const results: EvaluateResult[] = [];
    for (let i = 0; i < 3; i++) results.push(await int8.evaluate(request({ q: choice }, STATE)));
    expect(int8.stats().prefixCacheHits).toBe(1);
    // An int8 graph runs a one-question request as prefix pass + question pass from the first (its
    // state and questions run in passes of their own kinds, ModelRunner.splitsPrompt), and computes
    // every token the same in any pass: a cache hit changes no answer.
    expect(maxDiff(results[2]!, results[0]!)).toBeLessThanOrEqual(1e-6);
  });
});
