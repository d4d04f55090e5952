// Float64 attention sums (src/engine/model/exact-attention.ts): a token's attention output must be
// the same, bit for bit, whatever else shares its pass. A packed pass puts masked keys (other
// questions, other requests) between the state's keys and the token's own ancestors and runs more
// query rows; the masked keys weigh exactly 0, so only the summation order can differ, and the
// float64 sums absorb it. The attention block is built here as the exporters write it (scores + mask
// → Softmax → MatMul with V) and run by onnxruntime, rewritten and as exported.
import { describe, expect, it } from 'vitest';
import * as ort from 'onnxruntime-node';
import { encodeModel } from '../../src/engine/model/graph-rewrite.js';
import { sumAttentionInFloat64 } from '../../src/engine/model/exact-attention.js';
import { DataType } from '../../src/common/index.js';

const HEADS = 2;
const DIM = 16;
const { FLOAT } = DataType;

const tensor = (name: string, dims: (number | string)[]) => ({
  name,
  type: {
    tensorType: {
      elemType: FLOAT,
      shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
    },
  },
});

/** One attention block as exported: context = Softmax(scores + mask) · V, over [1, heads, S, T]. */
const block = (opset: number) => ({
  irVersion: 8,
  opsetImport: [{ domain: '', version: opset }],
  graph: {
    name: 'attention',
    node: [
      { opType: 'Add', input: ['scores', 'mask'], output: ['masked'] },
      { opType: 'Softmax', input: ['masked'], output: ['probs'], attribute: [{ name: 'axis', type: 2, i: -1 }] },
      { opType: 'MatMul', input: ['probs', 'v'], output: ['context'] },
    ],
    input: [
      tensor('scores', [1, HEADS, 's', 't']),
      tensor('mask', [1, 1, 's', 't']),
      tensor('v', [1, HEADS, 't', DIM]),
    ],
    output: [tensor('context', [1, HEADS, 's', DIM])],
  },
});

/** A deterministic stream of numbers in [-1, 1). */
function numbers(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  };
}

interface Keys {
  /** Per head, per key: the target row's score and the key's value vector. */
  scores: number[][];
  values: number[][][];
}

/** The target row's keys: `past` state keys then `own` ancestors, the same in every pass. */
function keysOf(past: number, own: number, seed: number): Keys {
  const r = numbers(seed);
  const n = past + own;
  return {
    scores: Array.from({ length: HEADS }, () => Array.from({ length: n }, () => r() * 6)),
    values: Array.from({ length: HEADS }, () => Array.from({ length: n }, () => Array.from({ length: DIM }, r))),
  };
}

/**
 * A pass holding the target row: its past keys at columns 0.., `gap` masked keys of other branches,
 * then its own ancestors; `rows` query rows, the target at `at`, the others random.
 */
function pass(k: Keys, past: number, gap: number, rows: number, at: number, seed: number) {
  const r = numbers(seed);
  const own = k.scores[0]!.length - past;
  const t = past + gap + own;
  const column = (j: number) => (j < past ? j : j + gap); // key j of the target → its column
  const scores = new Float32Array(HEADS * rows * t).map(() => r() * 6);
  const v = new Float32Array(HEADS * t * DIM).map(() => r());
  const mask = new Float32Array(rows * t);
  for (let i = 0; i < rows; i++)
    for (let c = 0; c < t; c++) if (i === at && c >= past && c < past + gap) mask[i * t + c] = -1e9;
  for (let h = 0; h < HEADS; h++)
    k.scores[h]!.forEach((x, j) => {
      scores[(h * rows + at) * t + column(j)] = x;
      v.set(k.values[h]![j]!, (h * t + column(j)) * DIM);
    });
  return {
    feeds: {
      scores: new ort.Tensor('float32', scores, [1, HEADS, rows, t]),
      mask: new ort.Tensor('float32', mask, [1, 1, rows, t]),
      v: new ort.Tensor('float32', v, [1, HEADS, t, DIM]),
    },
    row: (out: Float32Array) =>
      Array.from({ length: HEADS }, (_, h) =>
        Array.from(out.subarray((h * rows + at) * DIM, (h * rows + at + 1) * DIM)),
      ),
  };
}

async function session(opset: number, exact: boolean): Promise<ort.InferenceSession> {
  const model = block(opset);
  if (exact) expect(sumAttentionInFloat64(model as never, FLOAT)).toBe(1);
  return ort.InferenceSession.create(encodeModel(model as never), { logSeverityLevel: 3, intraOpNumThreads: 2 });
}

/** Past and own lengths and gaps that cross the kernels' vector lanes and blocks along the keys. */
const CASES = [37, 250, 600].flatMap((past) =>
  [5, 19].flatMap((own) => [1, 7, 33, 130].map((gap) => ({ past, own, gap }))),
);

/** How many cases give the target row other bits packed (3 rows, a gap) than alone (1 row, no gap). */
async function differing(s: ort.InferenceSession): Promise<number> {
  let n = 0;
  for (const [i, { past, own, gap }] of CASES.entries()) {
    const k = keysOf(past, own, 7 + i);
    const alone = pass(k, past, 0, 1, 0, 100 + i);
    const packed = pass(k, past, gap, 3, 1, 200 + i);
    const a = alone.row((await s.run(alone.feeds)).context!.data as Float32Array);
    const b = packed.row((await s.run(packed.feeds)).context!.data as Float32Array);
    if (JSON.stringify(a) !== JSON.stringify(b)) n++;
  }
  return n;
}

describe('attention summed in float64', () => {
  for (const opset of [17, 21]) {
    it(`opset ${opset}: a row's output is the same bits alone and packed with masked keys and other rows`, async () => {
      const s = await session(opset, true);
      expect(await differing(s)).toBe(0);
      await s.release();
    });
  }

  it('the float32 block as exported does not hold that (what the rewrite is for)', async () => {
    const s = await session(21, false);
    expect(await differing(s)).toBeGreaterThan(0);
    await s.release();
  });

  it('computes softmax · V: within a few float32 rounding steps of a float64 reference', async () => {
    // Exp runs in float32 (an error of about one rounding step, u = 2^-24, in each weight) and the
    // result is rounded once: each output within 4u of Σ p|v| of the exact value.
    const s = await session(21, true);
    const [past, own] = [250, 19];
    const k = keysOf(past, own, 3);
    const p = pass(k, past, 33, 3, 1, 4);
    const got = p.row((await s.run(p.feeds)).context!.data as Float32Array);
    for (let h = 0; h < HEADS; h++) {
      const xs = k.scores[h]!.map((x) => Math.fround(x));
      const m = Math.max(...xs);
      const e = xs.map((x) => Math.exp(x - m));
      const sum = e.reduce((a, b) => a + b, 0);
      for (let d = 0; d < DIM; d++) {
        const vs = k.values[h]!.map((v) => Math.fround(v[d]!));
        const want = e.reduce((a, w, j) => a + (w / sum) * vs[j]!, 0);
        const scale = e.reduce((a, w, j) => a + (w / sum) * Math.abs(vs[j]!), 0);
        expect(Math.abs(got[h]![d]! - want)).toBeLessThanOrEqual(4 * 2 ** -24 * scale);
      }
    }
    await s.release();
  });

  it('leaves a float16 graph alone, and a Softmax whose output is not the product’s left operand', () => {
    expect(sumAttentionInFloat64(block(21) as never, DataType.FLOAT16)).toBe(0);
    const other = block(21);
    other.graph.node[2]!.input = ['v', 'probs'];
    expect(sumAttentionInFloat64(other as never, FLOAT)).toBe(0);
  });
});
