// 4-bit exports through the int8 kernels (src/engine/model/q4-to-int8.ts): the converted graph runs
// no MatMulNBits, answers like the native 4-bit path within the int8 bound, keeps each answer
// independent of its companions, and `q4Kernels: 'native'` keeps the export's own 4-bit products.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineNote, type Evaluator, type Question } from '../../src/engine/index.js';
import { decodeModel } from '../../src/engine/model/graph-rewrite.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { kernelPaths } from '../../src/engine/model/cpu.js';
import { requantize } from '../../src/engine/model/q4-to-int8.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { choice, maxDiff, noul, request, score } from './fixtures.js';

const QUESTIONS: Record<string, Question> = { n: noul, c: choice, s: score };
const STATE = 'The quick brown fox jumps over the lazy dog, twice, near the old mill.';

// Bounds, from what each path computes (not from one machine's run):
// - converted against native: the two differ by an int8 rounding of the weights (at most
//   max|w| / 254 per weight, against the 4-bit grid's max|w| / 14) and of the activations per row
//   (native accuracy_level 4 rounds them per block of 32): the rounding an int8 export adds to fp32,
//   so the int8 export's bound against fp32 applies (0.05, test/engine/flavors.test.ts). Measured
//   over every position and the whole vocabulary (AVX-512 VNNI; the integer sums are exact on every
//   CPU class): max |ΔP| 1.7e-3 (0.5B q4), 1.9e-3 (0.5B q4f16), 1.8e-3 (tiny q4) (docs/peers.md).
// - together against alone: the converted products are exact integer sums scaled per row and per
//   column, so a row's result does not depend on the others; what remains is fp32 rounding of the
//   float parts (attention), the fp32 bound (1e-5).
const CONVERTED_VS_NATIVE = 0.05;
const SPLIT = 1e-5;

const opsOf = (path: string) => new Set(decodeModel(readFileSync(path)).graph!.node!.map((n) => n.opType!));

describe('4-bit weights through the int8 kernels', () => {
  let dir: string;
  let converted: Evaluator;
  let native: Evaluator;
  const notes: EngineNote[] = [];
  beforeAll(async () => {
    dir = await ensureFlavor({ dtype: 'q4' });
    converted = await loadEvaluator({ modelDir: dir, threads: 1, onNote: (note) => notes.push(note) });
    native = await loadEvaluator({ modelDir: dir, threads: 1, q4Kernels: 'native' });
  });
  afterAll(async () => {
    await converted?.close();
    await native?.close();
  });

  it('the converted graph has no MatMulNBits; the native setting keeps them', async () => {
    const folder = await openModelFolder(dir);
    const int8 = await ModelRunner.create(folder, { modelDir: dir, threads: 1 });
    const kept = await ModelRunner.create(folder, { modelDir: dir, threads: 1, q4Kernels: 'native' });
    try {
      expect(int8.rewritten).toBe(true);
      const ops = opsOf(int8.graphPath);
      expect(ops.has('MatMulNBits')).toBe(false);
      expect(ops.has('MatMulIntegerToFloat')).toBe(true);
      expect(opsOf(kept.graphPath).has('MatMulNBits')).toBe(true);
    } finally {
      await int8.close();
      await kept.close();
    }
  });

  it('says at load what the conversion costs in memory', () => {
    const note = notes.find((n) => n.kind === 'q4')?.message;
    expect(note).toMatch(/: \d+ matrix products, their weights \d+ MB instead of \d+ MB \(\+\d+ MB\)/);
  });

  it('answers like the native 4-bit path, each question the same alone as among others', async () => {
    const together = await converted.evaluate(request(QUESTIONS, STATE));
    expect(maxDiff(together, await native.evaluate(request(QUESTIONS, STATE)))).toBeLessThanOrEqual(
      CONVERTED_VS_NATIVE,
    );
    for (const [key, q] of Object.entries(QUESTIONS)) {
      const alone = await converted.evaluate(request({ [key]: q }, STATE));
      expect(maxDiff(together, alone, [key]), key).toBeLessThanOrEqual(SPLIT);
    }
  });
});

describe('requantize', () => {
  it('reads the nibbles in order (low first, zero point 8) and rounds each column to int8 within half its step', () => {
    // K = 64 (two blocks of 32, scales 0.5 and 0.25), N = 2: w = (q - 8) · scale of the block.
    const K = 64;
    const N = 2;
    const q = (k: number, n: number) => (k * 7 + n * 3) % 16;
    const blockScale = (k: number) => (k < 32 ? 0.5 : 0.25);
    const b = new Uint8Array(N * 2 * 16);
    for (let n = 0; n < N; n++) for (let k = 0; k < K; k++) b[n * 32 + (k >> 1)]! |= k & 1 ? q(k, n) << 4 : q(k, n);
    const scales4 = Float32Array.from({ length: N * 2 }, (_, i) => (i % 2 === 0 ? 0.5 : 0.25));
    const { weight, scales } = requantize(b, scales4, undefined, K, N, 32);
    for (let n = 0; n < N; n++) {
      // The column's largest |w| is 8 · 0.5 (a q of 0 in the first block): it maps to ±127 exactly.
      expect(scales[n]).toBeCloseTo(4 / 127, 7);
      for (let k = 0; k < K; k++) {
        const w = (q(k, n) - 8) * blockScale(k);
        expect(Math.abs(weight[k * N + n]! * scales[n]! - w), `w[${k}, ${n}]`).toBeLessThanOrEqual(
          scales[n]! / 2 + 1e-7,
        );
      }
    }
    expect(Math.max(...Array.from(weight, Math.abs))).toBe(127);
  });
});

describe('the 4-bit kernel path, as the startup log and /metrics name it', () => {
  const avx2 = { model: 'AVX2 CPU', cores: 2, flags: ['sse4_1', 'avx2'] };
  const vnni = { model: 'VNNI CPU', cores: 2, flags: ['sse4_1', 'avx2', 'avx512f', 'avx512bw', 'avx512_vnni'] };
  it('says the int8 conversion ran, and on which int8 kernel', () => {
    expect(kernelPaths(avx2, { saturates: true, saturatesExact: false }, true).q4).toBe(
      'int8 kernels via load-time conversion: u8u8 (exact, x64quantprecision)',
    );
    expect(kernelPaths(vnni, { saturates: false, saturatesExact: false }, true).q4).toBe(
      'int8 kernels via load-time conversion: avx512-vnni (exact)',
    );
  });
  it('says the native path with --q4-kernels native', () => {
    expect(kernelPaths(avx2, { saturates: true, saturatesExact: false }, true, 'native').q4).toBe(
      'native MatMulNBits, avx2 (accuracy_level 4: int8 dot products)',
    );
  });
});
