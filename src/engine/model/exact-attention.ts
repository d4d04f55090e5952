// Attention whose sums over the keys run in float64: a token's attention output is the same whatever
// pass computes it.
//
// A token's attention sums over the keys it sees. Which other keys share its pass (the other
// questions of a packed pass, another request's tree in a shared pass) adds nothing to the sum,
// since they are masked to exactly zero, but it moves the token's own keys to other columns, and
// with them how onnxruntime's kernels split the sum (the Softmax's vector lanes and tail, the
// product's blocks along the keys). In float32 that moves an output by about 1e-7. An fp32 model
// carries that on as 1e-7; a model whose products quantize every activation row to int8
// (per-token-int8.ts) now and then turns it into a whole int8 step, and through 24 layers into a
// probability that moves by 1e-3 or more (0.025 measured on the 0.5B-shaped replica): a question's
// answer would depend on what shared its pass.
//
// Here the two sums over the keys run in float64, then one rounding back to float32:
//   m = ReduceMax(x)                 x = the masked scores (float32; the max is exact in any order)
//   e = Exp(x − m)                   element by element: the same in any pass
//   context = Cast(MatMul(Cast(e), Cast(V')) / ReduceSum(Cast(e)), FLOAT)     (the sums in float64)
// Float64 sums of these lengths carry an error near 1e-16, far under float32's rounding step (6e-8),
// so the rounded result is the same for any order of summation except when it lies within about
// 1e-16 of a float32 rounding boundary. The scores themselves (Q·Kᵀ, a sum over the head's 64 or so
// dimensions, the same for every pass) and the mask stay float32. It costs about 2.5× the float32
// Softmax and product (onnxruntime's float64 Softmax would be 6×).
//
// It rewrites each attention block as exported (Add(scores, mask) → Softmax over the last axis →
// MatMul with V) in the main graph and in the branches of the Ifs that fused attention adds (their
// exported branch); the MatMul's output name is kept.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';
import { aiOnnxOpset } from './opset.js';

type NodeProto = OnnxTypes.INodeProto;
type GraphProto = OnnxTypes.IGraphProto;
type ModelProto = OnnxTypes.IModelProto;

const { FLOAT, DOUBLE, INT64 } = DataType;
const AXES = 'assay/f64/axes';

/**
 * Rewrites every float32 attention block of `model` (see above) in place; returns how many. Only for a
 * graph whose KV cache is float32 (`kvType`): a float16 block would need casts of its own.
 */
export function sumAttentionInFloat64(model: ModelProto, kvType: number | undefined): number {
  if (kvType !== FLOAT) return 0;
  const opset = aiOnnxOpset(model);
  const count = rewriteGraph(model.graph!, opset);
  if (count > 0 && opset >= 13)
    model.graph!.initializer = [
      ...(model.graph!.initializer ?? []),
      { name: AXES, dataType: INT64, dims: [1], int64Data: [-1] },
    ];
  return count;
}

function rewriteGraph(graph: GraphProto, opset: number): number {
  let count = 0;
  for (const n of graph.node ?? [])
    for (const a of n.attribute ?? []) {
      if (a.g) count += rewriteGraph(a.g, opset);
      for (const g of a.graphs ?? []) count += rewriteGraph(g, opset);
    }
  const nodes = graph.node ?? [];
  const producer = new Map<string, NodeProto>();
  const readers = new Map<string, NodeProto[]>();
  for (const n of nodes) {
    for (const o of n.output ?? []) producer.set(o, n);
    for (const i of n.input ?? []) readers.set(i, [...(readers.get(i) ?? []), n]);
  }
  const replaced = new Map<NodeProto, NodeProto[]>();
  for (const s of nodes.filter((n) => n.opType === 'Softmax' && overLastAxis(n, opset))) {
    const add = producer.get(s.input![0]!);
    const users = readers.get(s.output![0]!) ?? [];
    const product = users[0];
    if (add?.opType !== 'Add' || users.length !== 1 || product!.opType !== 'MatMul') continue;
    if (product!.input![0] !== s.output![0]) continue;
    const p = `assay/f64/${s.output![0]}`;
    const x = s.input![0]!;
    const t = (name: string) => `${p}/${name}`;
    replaced.set(s, [
      reduce('ReduceMax', x, t('max'), opset),
      node('Sub', [x, t('max')], t('shifted')),
      node('Exp', [t('shifted')], t('exp')),
      cast(t('exp'), t('exp64'), DOUBLE),
    ]);
    replaced.set(product!, [
      cast(product!.input![1]!, t('v64'), DOUBLE),
      node('MatMul', [t('exp64'), t('v64')], t('weighted')),
      reduce('ReduceSum', t('exp64'), t('sum'), opset),
      node('Div', [t('weighted'), t('sum')], t('context64')),
      cast(t('context64'), product!.output![0]!, FLOAT),
    ]);
    count++;
  }
  if (replaced.size > 0) graph.node = nodes.flatMap((n) => replaced.get(n) ?? [n]);
  return count;
}

/** A Softmax over the last axis (as fuse-attention's matcher takes it: -1, or 3 / 4 of a rank-4 / 5 tensor). */
function overLastAxis(s: NodeProto, opset: number): boolean {
  const axis = s.attribute?.find((a) => a.name === 'axis')?.i;
  if (axis === undefined || axis === null) return opset >= 13;
  return [-1, 3, 4].includes(Number(axis));
}

/** A reduction over the last axis, keeping it: axes as an input (ReduceSum from 13, the others from 18) or an attribute. */
function reduce(opType: 'ReduceMax' | 'ReduceSum', input: string, output: string, opset: number): NodeProto {
  const asInput = opType === 'ReduceSum' ? opset >= 13 : opset >= 18;
  return node(
    opType,
    asInput ? [input, AXES] : [input],
    output,
    asInput ? [] : [{ name: 'axes', type: AttributeType.INTS, ints: [-1] }],
  );
}

function node(opType: string, input: string[], output: string, attribute: OnnxTypes.IAttributeProto[] = []): NodeProto {
  return { opType, input, output: [output], name: output, attribute };
}

function cast(input: string, output: string, to: number): NodeProto {
  return node('Cast', [input], output, [{ name: 'to', type: AttributeType.INT, i: to }]);
}
