// The load-time graph rewrite (project only kept positions, return candidate log-probabilities)
// must change no answer, and must actually apply to the exports we serve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model-folder.js';
import { ModelRunner } from '../../src/engine/runner.js';
import { choice, manyQuestions, noul, request, score, tinyFp32, tinyInt8, tinyNoPositionIds } from './fixtures.js';

describe('graph rewrite', () => {
  it('applies to the fp32, int8 and no-position_ids exports', async () => {
    for (const dir of [await tinyFp32(), await tinyInt8(), await tinyNoPositionIds()]) {
      const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
      expect(runner.rewritten).toBe(true);
      await runner.close();
    }
  });

  describe('answers equal those of the export run as is', () => {
    let plain: Evaluator;
    let rewritten: Evaluator;
    beforeAll(async () => {
      const modelDir = await tinyFp32();
      plain = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, rewriteGraph: false });
      rewritten = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
    });
    afterAll(async () => {
      await plain.close();
      await rewritten.close();
    });

    it('for every type, alone and together', async () => {
      for (const questions of [{ n: noul, c: choice, s: score, ...manyQuestions(4) }, { c: choice }]) {
        const a = await plain.evaluate(request(questions));
        const b = await rewritten.evaluate(request(questions));
        expect(b.usage).toEqual(a.usage);
        for (const key of Object.keys(questions)) {
          const x = a.answers[key];
          const y = b.answers[key];
          const px = x.type === 'noul' ? [x.noul] : Object.values(x.probabilities);
          const py = y.type === 'noul' ? [y.noul] : Object.values(y.probabilities);
          px.forEach((p, i) => expect(Math.abs(p - py[i])).toBeLessThan(1e-5));
        }
      }
    });
  });

  it('int8 and no-position_ids exports answer a many-question request (a prefix pass keeps no position)', async () => {
    for (const modelDir of [await tinyInt8(), await tinyNoPositionIds()]) {
      const evaluator = await loadEvaluator({ modelDir, threads: 1 });
      const { answers } = await evaluator.evaluate(request({ n: noul, c: choice, s: score }));
      for (const a of Object.values(answers)) {
        const p = a.type === 'noul' ? [a.noul, 1 - a.noul] : Object.values(a.probabilities);
        expect(p.every((x) => Number.isFinite(x) && x >= 0 && x <= 1)).toBe(true);
        expect(Math.abs(p.reduce((x, y) => x + y, 0) - 1)).toBeLessThan(1e-6);
      }
      await evaluator.close();
    }
  });

  it('temperature from the configuration flattens the distribution', async () => {
    const modelDir = await tinyFp32();
    const sharp = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
    const flat = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, temperature: 50 });
    const a = (await sharp.evaluate(request({ s: score }))).answers.s;
    const b = (await flat.evaluate(request({ s: score }))).answers.s;
    if (a.type !== 'score' || b.type !== 'score') throw new Error('type');
    expect(b.confidence).toBeLessThan(a.confidence);
    expect(b.confidence).toBeLessThan(0.01);
    await sharp.close();
    await flat.close();
  });
});
