// Per-token int8 on an export whose weights are external data (Optimum and every export past 2 GB
// write them so): the rewrite reads the weights to take each row's zero point out of the product
// (engine/model/per-token-int8.ts), so it must read them from the data file, not the graph.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { externalize } from '../../src/engine/model/graph-file.js';
import { decodeModel, encodeModel } from '../../src/engine/model/graph-rewrite.js';
import { choice, maxDiff, noul, request, score, tinyInt8 } from './fixtures.js';

const open: Evaluator[] = [];
afterAll(async () => {
  await Promise.all(open.map((e) => e.close()));
});

/** The tiny int8 export with its weights moved to onnx/model.onnx_data. */
async function externalWeights(): Promise<string> {
  const source = await tinyInt8();
  const dir = mkdtempSync(join(tmpdir(), 'assay-int8-external-'));
  mkdirSync(join(dir, 'onnx'));
  for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(source, f), join(dir, f));
  const model = decodeModel(readFileSync(join(source, 'onnx', 'model_quantized.onnx')));
  await externalize(model, join(dir, 'onnx', 'model_quantized.onnx_data'), 'model_quantized.onnx_data');
  writeFileSync(join(dir, 'onnx', 'model_quantized.onnx'), encodeModel(model));
  return dir;
}

describe('per-token int8 with external weights', () => {
  it('answers as the same export with its weights inline (and every probability is a number)', async () => {
    const answers = [];
    for (const modelDir of [await tinyInt8(), await externalWeights()]) {
      const e = await loadEvaluator({
        modelDir,
        threads: 1,
        plannerThreads: 0,
        graphCacheDir: mkdtempSync(join(tmpdir(), 'assay-graph-cache-')),
      });
      open.push(e);
      expect(JSON.parse(readFileSync(`${e.graph}.json`, 'utf8')).perTokenInt8).toBe(15); // every product rewritten
      answers.push(await e.evaluate(request({ n: noul, c: choice, s: score })));
    }
    expect(JSON.stringify(answers[1]!.answers)).not.toMatch(/null|NaN/);
    expect(maxDiff(answers[0]!, answers[1]!)).toBe(0);
  });
});
