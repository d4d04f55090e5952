// Raising a model's ai.onnx opset to 21 (for the per-token products' one-pass row quantization)
// must keep what every node computes, and must leave alone a model it cannot raise that way.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { writeRewrittenGraph } from '../../src/engine/model/graph-file.js';
import { decodeModel, encodeModel } from '../../src/engine/model/graph-rewrite.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { aiOnnxOpset, BLOCKED_QUANTIZE_OPSET, raiseOpset } from '../../src/engine/model/opset.js';
import { int8SessionConfig } from '../../src/engine/model/cpu.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { tinyInt8 } from './fixtures.js';

const F = 1;
const INTS = 7;
const GRAPH = 5;
const tensor = (name: string, dims: (number | string)[]) => ({
  name,
  type: {
    tensorType: {
      elemType: F,
      shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
    },
  },
});

/** The nodes whose form changed between 13 and 21: reductions with axes, an even Split; and some that did not. */
const model = (opset: number, extra: object[] = []) => ({
  irVersion: 8,
  opsetImport: [{ domain: '', version: opset }],
  graph: {
    name: 'forms',
    node: [
      { opType: 'ReduceMean', input: ['x'], output: ['mean'], attribute: [{ name: 'axes', type: INTS, ints: [-1] }] },
      { opType: 'ReduceMax', input: ['x'], output: ['max'], attribute: [{ name: 'keepdims', type: 2, i: 0 }] },
      {
        opType: 'ReduceSumSquare',
        input: ['x'],
        output: ['squares'],
        attribute: [
          { name: 'axes', type: INTS, ints: [0] },
          { name: 'keepdims', type: 2, i: 1 },
        ],
      },
      { opType: 'Split', input: ['x'], output: ['left', 'right'], attribute: [{ name: 'axis', type: 2, i: 1 }] },
      { opType: 'Sub', input: ['left', 'right'], output: ['difference'] },
      { opType: 'Div', input: ['difference', 'mean'], output: ['ratio'] },
      ...extra,
    ],
    input: [tensor('x', ['m', 6])],
    output: [tensor('ratio', ['m', 3]), tensor('max', []), tensor('squares', [1, 6])],
  },
});

async function run(m: object, x: Float32Array): Promise<Record<string, number[]>> {
  const session = await ort.InferenceSession.create(encodeModel(m as never), { logSeverityLevel: 3 });
  const out = await session.run({ x: new ort.Tensor('float32', x, [x.length / 6, 6]) });
  await session.release();
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, Array.from(v.data as Float32Array)]));
}

describe('raising the opset to 21', () => {
  for (const from of [13, 17]) {
    it(`from ${from}: reductions take their axes as an input, an even Split names its outputs, and every output is the same`, async () => {
      const x = Float32Array.from({ length: 24 }, (_, i) => Math.sin(i * 1.3) * (i + 1));
      const before = await run(model(from), x);
      const raised = model(from);
      expect(raiseOpset(raised as never)).toBe(true);
      expect(aiOnnxOpset(raised as never)).toBe(BLOCKED_QUANTIZE_OPSET);
      expect(raised.irVersion).toBe(10);
      const [mean, max, squares, split] = raised.graph.node as { input: string[]; attribute?: { name: string }[] }[];
      expect(mean!.input).toHaveLength(2);
      expect(mean!.attribute?.map((a) => a.name)).toEqual([]);
      expect(max!.input).toHaveLength(1); // no axes: every axis, at 13 as at 21
      expect(squares!.attribute?.map((a) => a.name)).toEqual(['keepdims']);
      expect(split!.attribute?.map((a) => a.name)).toEqual(['axis', 'num_outputs']);
      // Bit for bit: the same kernels compute the same things.
      expect(await run(raised, x)).toEqual(before);
    });
  }

  it('leaves a model at 21 or above as it is', () => {
    const m = model(21);
    const copy = structuredClone(m);
    expect(raiseOpset(m as never)).toBe(true);
    expect(m).toEqual(copy);
  });

  const refused: [string, number, object[]][] = [
    ['an opset under 13', 12, []],
    [
      'GroupNormalization, which computes otherwise at 21',
      18,
      [{ opType: 'GroupNormalization', input: ['x', 's', 'b'], output: ['g'] }],
    ],
    ['GridSample, whose modes were renamed at 20', 17, [{ opType: 'GridSample', input: ['x', 'grid'], output: ['g'] }]],
    [
      'RoiAlign, whose default coordinates changed at 16',
      13,
      [{ opType: 'RoiAlign', input: ['x', 'r', 'i'], output: ['g'] }],
    ],
    [
      'a subgraph',
      17,
      [
        {
          opType: 'If',
          input: ['c'],
          output: ['g'],
          attribute: [{ name: 'then_branch', type: GRAPH, g: { name: 'then', node: [] } }],
        },
      ],
    ],
  ];
  for (const [what, opset, extra] of refused) {
    it(`refuses ${what}, and leaves the model untouched`, () => {
      const m = model(opset, extra);
      const copy = structuredClone(m);
      expect(raiseOpset(m as never)).toBe(false);
      expect(m).toEqual(copy);
    });
  }

  it('leaves a node of another domain as it is (com.microsoft has its own opset)', () => {
    const extra = [
      {
        opType: 'ReduceMean',
        domain: 'com.example',
        input: ['x'],
        output: ['e'],
        attribute: [{ name: 'axes', type: INTS, ints: [1] }],
      },
    ];
    const m = model(17, extra);
    expect(raiseOpset(m as never)).toBe(true);
    expect(m.graph.node.at(-1)).toEqual(extra[0]);
  });
});

describe('the per-token products of real exports, in one pass (CPU) and divided (CUDA)', () => {
  const cache = mkdtempSync(join(tmpdir(), 'assay-opset-'));
  afterAll(() => rmSync(cache, { recursive: true, force: true }));

  /** The rewritten graph's first output (candidate log-probabilities) for one prefill of `tokens`, on the CPU. */
  const forward = async (path: string, externalDir: string | undefined, tokens: number): Promise<Float32Array> => {
    const session = await ort.InferenceSession.create(readFileSync(path), {
      logSeverityLevel: 3,
      extra: {
        // The int8 setting of this CPU (exact on saturating kernels); weights stay in the export's
        // folder, or were written beside the rewritten graph.
        session: {
          ...((await int8SessionConfig()) as { session?: object }).session,
          model_external_initializers_file_folder_path: externalDir ?? dirname(path),
        },
      },
    } as ort.InferenceSession.SessionOptions);
    const ids = (f: (i: number) => number) => BigInt64Array.from({ length: tokens }, (_, i) => BigInt(f(i)));
    const feeds: Record<string, ort.Tensor> = {};
    for (const m of session.inputMetadata) {
      if (!m.isTensor) continue;
      const shape = m.shape.map((d, i) => (i === 0 ? 1 : i === 2 ? 0 : Number(d))); // empty past
      feeds[m.name] =
        m.name === 'input_ids'
          ? new ort.Tensor(
              'int64',
              ids((i) => 100 + ((i * 7919) % 5000)),
              [1, tokens],
            )
          : m.name === 'attention_mask'
            ? new ort.Tensor(
                'int64',
                ids(() => 1),
                [1, tokens],
              )
            : m.name === 'position_ids'
              ? new ort.Tensor(
                  'int64',
                  ids((i) => i),
                  [1, tokens],
                )
              : m.name === 'assay_positions'
                ? new ort.Tensor('int64', BigInt64Array.of(BigInt(tokens - 1)), [1])
                : m.name === 'assay_candidates'
                  ? new ort.Tensor('int64', BigInt64Array.of(1n, 2n, 3n), [1, 1, 3])
                  : m.name === 'assay_attention_bias'
                    ? new ort.Tensor('float32', new Float32Array(tokens * tokens), [tokens, tokens])
                    : m.name === 'assay_inv_temperature'
                      ? new ort.Tensor('float32', Float32Array.of(1), [])
                      : new ort.Tensor('float32', new Float32Array(0), shape);
    }
    const name = session.outputNames[0]!;
    const out = (await session.run(feeds, [name]))[name]!.data as Float32Array;
    await session.release();
    return out;
  };

  for (const flavor of ['int8', 'q4'] as const) {
    it(`${flavor}: the CPU graph is raised to 21 with a block per row, the CUDA graph keeps its opset and divides; the same numbers bit for bit`, async () => {
      const dir = flavor === 'int8' ? await tinyInt8() : await ensureFlavor({ dtype: 'q4' });
      const folder = await openModelFolder(dir);
      const blocked = (path: string) =>
        decodeModel(readFileSync(path))
          .graph!.node!.filter((n) => n.opType === 'QuantizeLinear')
          .map((n) => (n.attribute ?? []).some((a) => a.name === 'block_size'));
      const tokens = [1, 37];
      // One rewrite of an export is kept in the cache at a time: the CPU graph is read before the CUDA one is written.
      const cpu = (await writeRewrittenGraph(folder, 151936, { cacheDir: cache }))!;
      expect(cpu.raisedOpset).toEqual({ from: 17, to: BLOCKED_QUANTIZE_OPSET });
      expect(blocked(cpu.path).length).toBeGreaterThan(0);
      expect(blocked(cpu.path).every(Boolean)).toBe(true);
      const onePass = await Promise.all(tokens.map((t) => forward(cpu.path, cpu.externalDataDir, t)));
      const cuda = (await writeRewrittenGraph(folder, 151936, { cacheDir: cache, provider: 'cuda' }))!;
      expect(cuda.raisedOpset).toBeUndefined();
      expect(blocked(cuda.path).some(Boolean)).toBe(false);
      // Both quantize round(x / s_row) + 128 with an IEEE division; everything else is the same graph.
      for (const [i, t] of tokens.entries()) {
        const divided = await forward(cuda.path, cuda.externalDataDir, t);
        expect(divided.length).toBeGreaterThan(0);
        expect(Array.from(onePass[i]!)).toEqual(Array.from(divided));
      }
    });
  }
});
