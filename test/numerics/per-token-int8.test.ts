// Per-token activation quantization (engine/model/per-token-int8.ts) against the fp32 twin: at least
// as close as the export's own per-tensor scales, on whatever CPU runs this (CI: natively, and on an
// emulated AVX2 CPU through test/numerics/avx2.sh). The measured numbers are printed.
//
// Not a theorem: a row's scale (max|x_row| / 127) is never coarser than a tensor-wide one, but the
// per-tensor form spends 256 levels on [min, max] where the per-row one spends 255 on
// [−max|x|, max|x|], so on rows of one sign its steps can be up to 2× finer. On these fixtures the
// integer arithmetic is exact on every CPU (the default settings), so the comparison is the same
// everywhere up to float rounding; trained weights, whose outlier tokens set the tensor-wide scale,
// gain most.
import { afterAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { cpuKernels } from '../../src/engine/model/cpu.js';
import { inScope } from './scope.js';

const TRAINED = 'models/trained/tiny-tasks.safetensors';
// The emulated AVX2 run (scope.ts) takes the random-weights twin only: its margin is the narrow one
// (0.343 against 0.442, docs/cpu.md), and both run the same int8 kernels.
const TWINS: Array<{ name: string; fp32: () => Promise<string>; int8: () => Promise<string>; kernels?: boolean }> = [
  {
    name: 'tiny-tasks-1 (trained)',
    fp32: () =>
      ensureSynthModel({ shape: 'tiny', dtype: 'fp32', weights: TRAINED, out: 'models/generated/tiny-tasks-fp32' }),
    int8: () =>
      ensureSynthModel({ shape: 'tiny', dtype: 'int8', weights: TRAINED, out: 'models/generated/tiny-tasks-int8' }),
  },
  {
    name: 'tiny (random weights)',
    fp32: () => ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }),
    int8: () => ensureSynthModel({ shape: 'tiny', dtype: 'int8' }),
    kernels: true,
  },
];
/** 64 token ids spread over the vocabulary. */
const IDS = Array.from({ length: 64 }, (_, i) => (i * 7919 + 13) % 150000);

const runners: ModelRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.close()));
});

async function logits(modelDir: string, perTokenInt8 = true): Promise<Float32Array[]> {
  const runner = await ModelRunner.create(await openModelFolder(modelDir), { modelDir, threads: 1, perTokenInt8 });
  runners.push(runner);
  return runner.logits(IDS);
}

/** Each row's softmax over the vocabulary, once per pass (the reference's serves both comparisons). */
function softmax(rows: Float32Array[]): Float32Array[] {
  // Loops, not Math.max(...row) or row.map: a vocabulary-sized spread overflows the stack of a
  // worker thread, and closures per element cost minutes under the emulated CPU.
  return rows.map((row) => {
    let max = -Infinity;
    for (let j = 0; j < row.length; j++) max = Math.max(max, row[j]!);
    const e = new Float32Array(row.length);
    let z = 0;
    for (let j = 0; j < row.length; j++) {
      e[j] = Math.exp(row[j]! - max);
      z += e[j]!;
    }
    for (let j = 0; j < row.length; j++) e[j] = e[j]! / z;
    return e;
  });
}

interface Pass {
  logits: Float32Array[];
  p: Float32Array[];
}

async function pass(modelDir: string, perTokenInt8 = true): Promise<Pass> {
  const rows = await logits(modelDir, perTokenInt8);
  return { logits: rows, p: softmax(rows) };
}

/** max |Δlogit| and max |ΔP| (softmax over the vocabulary) at every position. */
function errors(a: Pass, b: Pass): { logit: number; p: number } {
  let logit = 0;
  let p = 0;
  a.logits.forEach((row, i) => {
    const other = b.logits[i]!;
    for (let j = 0; j < row.length; j++) logit = Math.max(logit, Math.abs(row[j]! - other[j]!));
    const pa = a.p[i]!;
    const pb = b.p[i]!;
    for (let j = 0; j < pa.length; j++) p = Math.max(p, Math.abs(pa[j]! - pb[j]!));
  });
  return { logit, p };
}

describe('per-token int8 against the fp32 twin', () => {
  for (const twin of inScope(TWINS)) {
    it(`${twin.name}: no further from fp32 than per-tensor scales`, async () => {
      const reference = await pass(await twin.fp32());
      const int8 = await twin.int8();
      const perToken = errors(reference, await pass(int8, true));
      const perTensor = errors(reference, await pass(int8, false));
      const k = await cpuKernels();
      console.log(
        `[per-token int8] ${twin.name}, ${IDS.length} tokens, ${k.cpu} (int8 ${k.int8}): max |Δlogit| per-tensor ${perTensor.logit.toFixed(4)}, per-token ${perToken.logit.toFixed(4)}; ` +
          `max |ΔP| per-tensor ${perTensor.p.toExponential(2)}, per-token ${perToken.p.toExponential(2)}`,
      );
      expect(perToken.logit).toBeLessThanOrEqual(perTensor.logit);
      expect(perToken.logit).toBeGreaterThan(0); // it is int8: the test would notice an fp32 graph
    });
  }
});
