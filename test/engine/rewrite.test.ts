// The load-time graph rewrite (project only kept positions, return candidate log-probabilities)
// must change no answer, and must actually apply to the exports we serve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Question } from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { choice, expectSameResult, manyQuestions, noul, request, score, tinyFp32, tinyInt8, tinyNoPositionIds } from './fixtures.js';

describe('graph rewrite', () => {
  it('applies to the fp32, int8 and no-position_ids exports', async () => {
    for (const dir of [await tinyFp32(), await tinyInt8(), await tinyNoPositionIds()]) {
      const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
      expect(runner.rewritten).toBe(true);
      await runner.close();
    }
  });

  it("adds the attention bias to every layer's mask, and keeps the graph in topological order", async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { decodeModel, rewriteHead, BIAS_INPUT } = await import('../../src/engine/model/graph-rewrite.js');
    const dir = await tinyFp32();
    const model = decodeModel(readFileSync(join(dir, 'onnx', 'model.onnx')));
    const layers = model.graph!.node!.filter((n) => n.opType === 'Softmax').length;
    expect(rewriteHead(model, 151936)).toBe(true);
    const nodes = model.graph!.node!;
    const producer = new Map(nodes.flatMap((n) => (n.output ?? []).map((o) => [o, n] as const)));
    for (const softmax of nodes.filter((n) => n.opType === 'Softmax')) {
      const add = producer.get(softmax.input![0]!)!;
      // Softmax(scores + (mask + CastLike(bias)))
      const mask = add.input!.map((i) => producer.get(i)!).find((n) => n.input?.some((i) => producer.get(i)?.opType === 'CastLike'));
      expect(mask?.opType).toBe('Add');
    }
    expect(layers).toBeGreaterThan(0);
    expect(model.graph!.input!.map((i) => i.name)).toContain(BIAS_INPUT);
    // Topologically sorted still: every node's inputs are produced before it (or are graph inputs/initializers).
    const seen = new Set([...model.graph!.input!.map((i) => i.name!), ...model.graph!.initializer!.map((t) => t.name!)]);
    for (const n of nodes) {
      for (const i of n.input ?? []) if (i) expect(seen.has(i), `${n.name} reads ${i}`).toBe(true);
      for (const o of n.output ?? []) seen.add(o);
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
        expectSameResult(await plain.evaluate(request(questions)), await rewritten.evaluate(request(questions)));
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
    const a = (await sharp.evaluate(request({ s: score }))).answers.s!;
    const b = (await flat.evaluate(request({ s: score }))).answers.s!;
    if (a.type !== 'score' || b.type !== 'score') throw new Error('type');
    expect(b.confidence).toBeLessThan(a.confidence);
    expect(b.confidence).toBeLessThan(0.01);
    await sharp.close();
    await flat.close();
  });
});

describe('chunked prefill', () => {
  it('gives the answers of one pass over the whole prompt', async () => {
    const modelDir = await tinyFp32();
    const whole = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, prefillChunk: 0 });
    const chunked = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, prefillChunk: 64 });
    const longState = Array.from({ length: 80 }, (_, i) => `Line ${i}: the fox jumped over fence number ${i * 7}.`).join('\n');
    const sets: Array<Record<string, Question>> = [{ c: choice }, { n: noul, c: choice, s: score }];
    for (const questions of sets) {
      const a = await whole.evaluate(request(questions, longState));
      const b = await chunked.evaluate(request(questions, longState));
      expect(a.usage.input_tokens).toBeGreaterThan(64 * 8);
      expectSameResult(a, b);
    }
    await whole.close();
    await chunked.close();
  });
});
