// The load-time graph rewrite (project only kept positions, return candidate log-probabilities)
// must change no answer, and must actually apply to the exports we serve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Question } from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import {
  choice,
  expectSameResult,
  manyQuestions,
  noul,
  request,
  score,
  tinyFp32,
  tinyInt8,
  tinyNoPositionIds,
} from './fixtures.js';

describe('graph rewrite', () => {
  it('applies to the fp32, int8 and no-position_ids exports', async () => {
    for (const dir of [await tinyFp32(), await tinyInt8(), await tinyNoPositionIds()]) {
      const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
      expect(runner.rewritten).toBe(true);
      await runner.close();
    }
  });

  it('a packed pass may read more positions than it has tokens (repeated questions after their stems)', async () => {
    // A [batch, sequence_length, vocab] logits still declared after the head was cut to the kept
    // positions made onnxruntime plan the log-normalizer into too small a buffer: the int8 graph
    // failed such a pass ("Shape mismatch attempting to re-use buffer"), a 500 for the request.
    for (const dir of [await tinyInt8(), await tinyFp32()]) {
      const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
      const prefix = (await runner.forward([9707, 11, 1879, 0, 13, 576, 374, 264], null, [], true)).present!;
      const tokens = [785, 6435, 16, 17];
      const once = await runner.packed(
        { tokens, parents: [-1, 0, 1, 2], reads: [{ at: 3, candidates: [9454, 2753] }] },
        prefix,
      );
      const reads = Array.from({ length: 16 }, (_, j) => ({ at: j % 4, candidates: [9454, 2753] }));
      const many = await runner.packed({ tokens, parents: [-1, 0, 1, 2], reads }, prefix);
      expect(many).toHaveLength(16);
      // The same position read again gives the same numbers (rows of one pass are per token).
      expect(many[3]).toEqual(once[0]);
      expect(many[15]).toEqual(once[0]);
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
      const mask = add
        .input!.map((i) => producer.get(i)!)
        .find((n) => n.input?.some((i) => producer.get(i)?.opType === 'CastLike'));
      expect(mask?.opType).toBe('Add');
    }
    expect(layers).toBeGreaterThan(0);
    expect(model.graph!.input!.map((i) => i.name)).toContain(BIAS_INPUT);
    // Topologically sorted still: every node's inputs are produced before it (or are graph inputs/initializers).
    const seen = new Set([
      ...model.graph!.input!.map((i) => i.name!),
      ...model.graph!.initializer!.map((t) => t.name!),
    ]);
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
    const longState = Array.from(
      { length: 80 },
      (_, i) => `Line ${i}: the fox jumped over fence number ${i * 7}.`,
    ).join('\n');
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

describe('per-token int8 (dynamic int8 products rewritten at load)', () => {
  const K = 64;
  const N = 8;
  /**
   * One product as quantize_dynamic writes it (unfused, or fused DynamicQuantizeMatMul with a bias),
   * with int8 weights per output channel; at opset 17 the rows are divided by their scale before one
   * QuantizeLinear, at 21 one QuantizeLinear takes a scale per row (a block per row).
   */
  const product = (fused: boolean, opset: number) => {
    const w = Int8Array.from({ length: K * N }, (_, i) => ((i * 37) % 255) - 127);
    const scales = Array.from({ length: N }, (_, n) => 0.01 * (n + 1));
    const init = [
      { name: 'w', dataType: 3, dims: [K, N], rawData: new Uint8Array(w.buffer) },
      { name: 'w_scale', dataType: 1, dims: [N], floatData: scales },
      { name: 'w_zero_point', dataType: 3, dims: [N], rawData: new Uint8Array(N) },
      { name: 'bias', dataType: 1, dims: [N], floatData: Array.from({ length: N }, (_, n) => n) },
    ];
    const node = fused
      ? [
          {
            opType: 'DynamicQuantizeMatMul',
            domain: 'com.microsoft',
            input: ['x', 'w', 'w_scale', 'w_zero_point', 'bias'],
            output: ['y'],
          },
        ]
      : [
          { opType: 'DynamicQuantizeLinear', input: ['x'], output: ['xq', 'x_scale', 'x_zero_point'] },
          { opType: 'MatMulInteger', input: ['xq', 'w', 'x_zero_point', 'w_zero_point'], output: ['yi'] },
          { opType: 'Cast', input: ['yi'], output: ['yf'], attribute: [{ name: 'to', type: 2, i: 1 }] },
          { opType: 'Mul', input: ['x_scale', 'w_scale'], output: ['scales'] },
          { opType: 'Mul', input: ['yf', 'scales'], output: ['y0'] },
          { opType: 'Add', input: ['y0', 'bias'], output: ['y'] },
        ];
    const model = {
      irVersion: 10,
      opsetImport: [{ domain: '', version: opset }, ...(fused ? [{ domain: 'com.microsoft', version: 1 }] : [])],
      graph: {
        name: 'product',
        node,
        initializer: init,
        input: [
          { name: 'x', type: { tensorType: { elemType: 1, shape: { dim: [{ dimParam: 'm' }, { dimValue: K }] } } } },
        ],
        output: [
          { name: 'y', type: { tensorType: { elemType: 1, shape: { dim: [{ dimParam: 'm' }, { dimValue: N }] } } } },
        ],
      },
    };
    return { model, w, scales };
  };
  /** Row r of x: values of magnitude 10^r, so one tensor-wide scale would crush the small rows. */
  const rows = (m: number) =>
    Float32Array.from({ length: m * K }, (_, i) => Math.sin(i * 1.7) * 10 ** Math.floor(i / K));
  const run = async (model: object, x: Float32Array, m: number): Promise<Float32Array> => {
    const ort = await import('onnxruntime-node');
    const { encodeModel } = await import('../../src/engine/model/graph-rewrite.js');
    const { int8SessionConfig } = await import('../../src/engine/model/cpu.js');
    const session = await ort.InferenceSession.create(encodeModel(model as never), {
      logSeverityLevel: 3,
      extra: await int8SessionConfig(),
    });
    const y = (await session.run({ x: new ort.Tensor('float32', x, [m, K]) })).y!.data as Float32Array;
    await session.release();
    return y;
  };

  for (const [fused, opset] of [
    [false, 17],
    [true, 17],
    [false, 21],
    [true, 21],
  ] as const) {
    it(`${fused ? 'DynamicQuantizeMatMul' : 'DynamicQuantizeLinear + MatMulInteger'}, opset ${opset}: each row is quantized on its own, whatever the other rows are`, async () => {
      const { quantizePerToken, sharesActivationScales } = await import('../../src/engine/model/graph-rewrite.js');
      const { model, w, scales } = product(fused, opset);
      expect(sharesActivationScales(model as never)).toBe(true);
      expect(quantizePerToken(model as never)).toBe(1);
      expect(sharesActivationScales(model as never)).toBe(false);
      // The form of the opset: a block per row from 21 on; under it the rows divided by their scale.
      const quantize = model.graph.node.find((n) => n.opType === 'QuantizeLinear') as {
        attribute?: { name: string; i: number }[];
      };
      const blockSize = quantize.attribute?.find((a) => a.name === 'block_size')?.i;
      expect(blockSize).toBe(opset >= 21 ? K : undefined);
      expect(model.graph.node.filter((n) => n.opType === 'Div').length).toBe(opset >= 21 ? 1 : 2);
      const m = 4;
      const x = rows(m);
      const together = await run(model, x, m);
      for (let r = 0; r < m; r++) {
        const row = x.subarray(r * K, (r + 1) * K);
        // Alone, the row gives the same numbers (the integer product is exact; only float rounding of the scales is left).
        const alone = await run(model, row, 1);
        // And they are the row's own symmetric quantization, in float32 as the graph computes it:
        // s = max |x| / 127, q = round(x / s) + 128 (zero point 128 for every row).
        const f = Math.fround;
        const s = f(Math.max(...row.map(Math.abs)) / 127);
        const z = 128;
        const q = (v: number) => Math.min(255, Math.max(0, roundHalfEven(f(v / s)) + z));
        for (let n = 0; n < N; n++) {
          let sum = 0;
          for (let k = 0; k < K; k++) sum += (q(row[k]!) - z) * w[k * N + n]!;
          const want = sum * s * scales[n]! + n;
          const got = together[r * N + n]!;
          expect(Math.abs(got - alone[n]!)).toBeLessThanOrEqual(1e-6 * Math.abs(want) + 1e-6);
          expect(Math.abs(got - want)).toBeLessThanOrEqual(1e-5 * Math.abs(want) + 1e-5);
        }
      }
      // A pass of no rows gives no rows.
      expect((await run(model, new Float32Array(0), 0)).length).toBe(0);
    });
  }

  it('a product only multiplied into another per-token activation (the MLP up projection) leaves its row scale to the next product, and rows stay independent', async () => {
    const { quantizePerToken, encodeModel } = await import('../../src/engine/model/graph-rewrite.js');
    const ort = await import('onnxruntime-node');
    const { int8SessionConfig } = await import('../../src/engine/model/cpu.js');
    // up = x · W1, gate = Sigmoid(x), h = gate ⊙ up, y = h · W2 (W2 [N, N]); both products fused, no bias.
    const w1 = Int8Array.from({ length: K * N }, (_, i) => ((i * 37) % 255) - 127);
    const w2 = Int8Array.from({ length: N * N }, (_, i) => ((i * 53) % 251) - 125);
    const s1 = Array.from({ length: N }, (_, n) => 0.01 * (n + 1));
    const s2 = Array.from({ length: N }, (_, n) => 0.02 * (N - n));
    const dqmm = (x: string, w: string, out: string) => ({
      opType: 'DynamicQuantizeMatMul',
      domain: 'com.microsoft',
      input: [x, w, `${w}_scale`],
      output: [out],
    });
    const model = {
      irVersion: 8,
      opsetImport: [
        { domain: '', version: 17 },
        { domain: 'com.microsoft', version: 1 },
      ],
      graph: {
        name: 'mlp',
        node: [
          dqmm('x', 'w1', 'up'),
          { opType: 'Sigmoid', input: ['x_gate'], output: ['gate'] },
          { opType: 'Mul', input: ['gate', 'up'], output: ['h'] },
          dqmm('h', 'w2', 'y'),
        ],
        initializer: [
          { name: 'w1', dataType: 3, dims: [K, N], rawData: new Uint8Array(w1.buffer) },
          { name: 'w1_scale', dataType: 1, dims: [N], floatData: s1 },
          { name: 'w2', dataType: 3, dims: [N, N], rawData: new Uint8Array(w2.buffer) },
          { name: 'w2_scale', dataType: 1, dims: [N], floatData: s2 },
        ],
        input: [
          { name: 'x', type: { tensorType: { elemType: 1, shape: { dim: [{ dimParam: 'm' }, { dimValue: K }] } } } },
          {
            name: 'x_gate',
            type: { tensorType: { elemType: 1, shape: { dim: [{ dimParam: 'm' }, { dimValue: N }] } } },
          },
        ],
        output: [
          { name: 'y', type: { tensorType: { elemType: 1, shape: { dim: [{ dimParam: 'm' }, { dimValue: N }] } } } },
        ],
      },
    };
    expect(quantizePerToken(model as never)).toBe(2);
    const producer = (name: string) => model.graph.node.find((n) => n.output[0] === name);
    // The up product's output is used as the kernel gives it; the next product's row scale (the Mul
    // after it) carries the factor.
    expect(producer('up')?.opType).toBe('MatMulIntegerToFloat');
    const scaled = producer('y')!;
    expect(scaled.opType).toBe('Mul');
    expect(producer(scaled.input[0]!)?.opType).toBe('MatMulIntegerToFloat');
    expect(producer(scaled.input[1]!)?.opType).toBe('Mul');
    const session = await ort.InferenceSession.create(encodeModel(model as never), {
      logSeverityLevel: 3,
      extra: await int8SessionConfig(),
    });
    const m = 4;
    const x = rows(m);
    const xGate = Float32Array.from({ length: m * N }, (_, i) => Math.cos(i * 0.9) * 3);
    const forward = async (a: Float32Array, g: Float32Array, count: number) =>
      (
        await session.run({
          x: new ort.Tensor('float32', a, [count, K]),
          x_gate: new ort.Tensor('float32', g, [count, N]),
        })
      ).y!.data as Float32Array;
    const together = await forward(x, xGate, m);
    const f = Math.fround;
    /** y of one row as the per-token form defines it: each activation quantized symmetrically over its own row. */
    const quantized = (v: ArrayLike<number>, w: Int8Array, scales: number[]) => {
      const s = f(Math.max(...Array.from(v, Math.abs)) / 127);
      const q = Array.from(v, (e) => Math.min(255, Math.max(0, roundHalfEven(f(e / s)) + 128)) - 128);
      return {
        s,
        y: scales.map((scale, n) => q.reduce((sum, qk, kk) => sum + qk * w[kk * N + n]!, 0) * s * scale),
      };
    };
    for (let r = 0; r < m; r++) {
      const row = x.subarray(r * K, (r + 1) * K);
      const gateRow = xGate.subarray(r * N, (r + 1) * N);
      const alone = await forward(row, gateRow, 1);
      const up1 = quantized(row, w1, s1).y;
      const h = up1.map((u, n) => u / (1 + Math.exp(-gateRow[n]!)));
      const { s: sh, y: want } = quantized(h, w2, s2);
      for (let n = 0; n < N; n++) {
        const got = together[r * N + n]!;
        expect(Math.abs(got - alone[n]!)).toBeLessThanOrEqual(1e-6 * Math.abs(got) + 1e-6);
        // h's row is quantized without the factor the graph moved: float rounding may put one
        // element on the other side of a half step (one level of one term).
        expect(Math.abs(got - want[n]!)).toBeLessThanOrEqual(1e-5 * Math.abs(want[n]!) + sh * 127 * s2[n]! + 1e-5);
      }
    }
    await session.release();
  });

  it('rewrites every product of the tiny int8 export, records it, and --no-per-token-int8 keeps the per-pass form', async () => {
    const modelDir = await tinyInt8();
    const { readFileSync } = await import('node:fs');
    const { decodeModel } = await import('../../src/engine/model/graph-rewrite.js');
    for (const perTokenInt8 of [true, false]) {
      const runner = await ModelRunner.create(await openModelFolder(modelDir), { modelDir, threads: 1, perTokenInt8 });
      expect(runner.sharesActivationScales).toBe(!perTokenInt8);
      const ops = decodeModel(readFileSync(runner.graphPath)).graph!.node!.map((n) => n.opType);
      expect(ops.includes('DynamicQuantizeLinear')).toBe(!perTokenInt8);
      expect(ops.filter((o) => o === 'MatMulIntegerToFloat').length).toBe(perTokenInt8 ? 15 : 0);
      await runner.close();
    }
  });
});

/** Round half to even, as ONNX's Round and QuantizeLinear do. */
function roundHalfEven(v: number): number {
  const r = Math.round(v);
  return Math.abs(v % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
