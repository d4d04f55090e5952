// Matching one attention layer written in plain ops (see fuse-attention.ts for the pattern):
// where its query, new and past keys and values, present KV and output are, and the scale of its
// scores; or, in words, why it does not match.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { dependsOnInput } from './graph-rewrite.js';
import { DataType } from '../../common/index.js';

type NodeProto = OnnxTypes.INodeProto;
type ModelProto = OnnxTypes.IModelProto;

const { FLOAT, FLOAT16 } = DataType;
const PASS_THROUGH_Q = new Set(['Reshape']);
const PASS_THROUGH_KV = new Set(['Reshape', 'Unsqueeze', 'Expand', 'Transpose']);

/** Where a layer's pieces are, once matched. */
export interface Layer {
  q: string;
  newK: string;
  newV: string;
  pastK: string;
  pastV: string;
  presentK: string;
  presentV: string;
  output: string;
  /** The mask added to the scores (computed from attention_mask, and the bias where the graph has one). */
  mask: string;
  scale: number;
  /** The nodes that produce the present KV and the output: replaced by the fused node. */
  replaced: NodeProto[];
}

/** One layer's attention around Softmax `s`, or why it does not match. */
export function matchLayer(g: GraphIndex, s: NodeProto): Layer | string {
  const axis = g.intAttr(s, 'axis');
  if (axis !== undefined && axis !== -1 && axis !== 3 && axis !== 4) return 'the Softmax is not over the last axis';
  const add = g.producer.get(s.input![0]!);
  if (!add || add.opType !== 'Add') return 'the Softmax does not read scores + mask';
  const fromPast = (t: string) => g.dependsOnInput(t, (n) => g.pastInputs.has(n));
  const maskIndex = add.input!.findIndex((i) => g.dependsOnInput(i, (n) => n === 'attention_mask') && !fromPast(i));
  if (maskIndex < 0) return 'no mask computed from attention_mask';
  let scale = 1;
  // Scores: MatMul(Q', K') times scalar constants.
  let t = add.input![1 - maskIndex]!;
  for (let n = g.producer.get(t); n && (n.opType === 'Mul' || n.opType === 'Div'); n = g.producer.get(t)) {
    const c = g.scalarOperand(n);
    if (!c) return `a ${n.opType} on the scores by something other than a constant`;
    scale = n.opType === 'Mul' ? scale * c.value : scale / c.value;
    t = c.other;
  }
  const qk = g.producer.get(t);
  if (!qk || qk.opType !== 'MatMul') return 'the scores are not a MatMul';
  // Q side.
  let q = qk.input![0]!;
  for (let n = g.producer.get(q); n; n = g.producer.get(q)) {
    if (PASS_THROUGH_Q.has(n.opType!)) q = n.input![0]!;
    else if (n.opType === 'Mul' || n.opType === 'Div') {
      const c = g.scalarOperand(n);
      if (!c) break;
      scale = n.opType === 'Mul' ? scale * c.value : scale / c.value;
      q = c.other;
    } else break;
  }
  if (!g.bnsh(q)) return 'the query is not [batch, heads, sequence, head_dim] (no Transpose 0,2,1,3 upstream)';
  // K side.
  const k = g.presentThrough(qk.input![1]!, true);
  if (typeof k === 'string') return `keys: ${k}`;
  scale *= k.scale;
  // V side.
  const pvs = (g.consumers.get(s.output![0]!) ?? []).filter(
    (n) => n.opType === 'MatMul' && n.input![0] === s.output![0],
  );
  if (pvs.length !== 1 || (g.consumers.get(s.output![0]!) ?? []).length !== 1)
    return 'the probabilities are not read by one MatMul alone';
  const pv = pvs[0]!;
  const v = g.presentThrough(pv.input![1]!, false);
  if (typeof v === 'string') return `values: ${v}`;
  if (v.scale !== 1) return 'the values are scaled';
  // Output: through Reshape / Transpose to what the output projection reads.
  let out = pv.output![0]!;
  let last: NodeProto = pv;
  let transposed = false;
  for (;;) {
    const next = g.consumers.get(out) ?? [];
    if (next.length !== 1 || g.isGraphOutput(out)) break;
    const n = next[0]!;
    if (n.opType === 'Transpose') {
      const perm = g.intsAttr(n, 'perm');
      if (!perm || perm.join() !== '0,2,1,3') return 'the context is transposed otherwise than 0,2,1,3';
      transposed = true;
    } else if (n.opType !== 'Reshape') break;
    out = n.output![0]!;
    last = n;
  }
  if (!transposed || last.opType !== 'Reshape') return 'the context does not end as [batch, sequence, hidden]';
  if (!(scale > 0) || !Number.isFinite(scale)) return 'the scores are not scaled by a positive constant';
  return {
    q,
    newK: k.concat.input![1]!,
    newV: v.concat.input![1]!,
    pastK: k.concat.input![0]!,
    pastV: v.concat.input![0]!,
    presentK: k.concat.output![0]!,
    presentV: v.concat.output![0]!,
    output: out,
    mask: add.input![maskIndex]!,
    scale,
    replaced: [k.concat, v.concat, last],
  };
}

/** Producers, consumers and constants of a graph, and the tests the matcher asks of them. */
export class GraphIndex {
  readonly producer = new Map<string, NodeProto>();
  readonly consumers = new Map<string, NodeProto[]>();
  readonly pastInputs: Set<string>;
  private readonly initializers: Map<string, OnnxTypes.ITensorProto>;
  private readonly outputs: Set<string>;

  constructor(model: ModelProto) {
    const graph = model.graph!;
    for (const n of graph.node ?? []) {
      for (const o of n.output ?? []) this.producer.set(o, n);
      for (const i of n.input ?? []) this.consumers.set(i, [...(this.consumers.get(i) ?? []), n]);
    }
    this.initializers = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
    this.outputs = new Set((graph.output ?? []).map((o) => o.name!));
    this.pastInputs = new Set(
      (graph.input ?? [])
        .map((i) => i.name!)
        .filter((n) => n.startsWith('past_key_values.') || n.startsWith('past_key.') || n.startsWith('past_value.')),
    );
  }

  isGraphOutput(name: string): boolean {
    return this.outputs.has(name);
  }

  intAttr(n: NodeProto, name: string): number | undefined {
    const a = (n.attribute ?? []).find((x) => x.name === name);
    return a?.i === undefined || a.i === null ? undefined : Number(a.i);
  }

  intsAttr(n: NodeProto, name: string): number[] | undefined {
    return (n.attribute ?? []).find((x) => x.name === name)?.ints?.map(Number);
  }

  /** A scalar constant operand of a binary node (an initializer or a Constant node), and the other operand. */
  scalarOperand(n: NodeProto): { value: number; other: string } | undefined {
    const [a, b] = n.input ?? [];
    for (const [c, other] of [
      [b, a],
      [a, b],
    ] as const) {
      if (!c || !other) continue;
      const value = this.scalar(c);
      // x / c only (c / x is not a scaling).
      if (value !== undefined && !(n.opType === 'Div' && c === a)) return { value, other };
    }
    return undefined;
  }

  private scalar(name: string): number | undefined {
    const t = this.initializers.get(name) ?? constantValue(this.producer.get(name));
    if (!t || (t.dims ?? []).reduce<number>((a, d) => a * Number(d), 1) !== 1) return undefined;
    if (t.dataType === FLOAT) {
      if (t.floatData?.length) return t.floatData[0]!;
      if (t.rawData && t.rawData.byteLength >= 4)
        return new DataView(t.rawData.buffer, t.rawData.byteOffset, 4).getFloat32(0, true);
    }
    if (t.dataType === FLOAT16) {
      const bits = t.int32Data?.length
        ? t.int32Data[0]!
        : t.rawData && t.rawData.byteLength >= 2
          ? new DataView(t.rawData.buffer, t.rawData.byteOffset, 2).getUint16(0, true)
          : undefined;
      return bits === undefined ? undefined : halfBitsToNumber(bits);
    }
    return undefined;
  }

  /** Whether tensor `t` is computed from a graph input `isInput` accepts. */
  dependsOnInput(t: string, isInput: (name: string) => boolean): boolean {
    return dependsOnInput(t, isInput, this.producer);
  }

  /** Whether `t` is BNSH: a Transpose 0,2,1,3 upstream of it before any matrix product (the projection). */
  bnsh(t: string): boolean {
    const queue = [t];
    const seen = new Set<string>();
    while (queue.length > 0 && seen.size < 64) {
      const name = queue.shift()!;
      if (seen.has(name)) continue;
      seen.add(name);
      const n = this.producer.get(name);
      if (!n) continue;
      if (n.opType === 'Transpose') {
        if (this.intsAttr(n, 'perm')?.join() === '0,2,1,3') return true;
        continue;
      }
      if (/MatMul|Gemm/.test(n.opType!)) continue;
      queue.push(...(n.input ?? []).filter(Boolean));
    }
    return false;
  }

  /**
   * From what a product reads back to the present KV: Concat(past, new) on the sequence axis, through
   * Reshape / Unsqueeze / Expand (repeated KV heads) and, for keys, one Transpose of the last two axes.
   */
  presentThrough(t: string, keys: boolean): { concat: NodeProto; scale: number } | string {
    let transposes = 0;
    let scale = 1;
    for (let n = this.producer.get(t); n; n = this.producer.get(t)) {
      if (n.opType === 'Concat') {
        const axis = this.intAttr(n, 'axis');
        const [past, fresh] = n.input ?? [];
        if (n.input?.length !== 2 || !past || !fresh || !this.pastInputs.has(past) || (axis !== 2 && axis !== -2))
          return 'not Concat(past, new) on the sequence axis';
        if (transposes !== (keys ? 1 : 0)) return keys ? 'not transposed once' : 'transposed';
        if (!this.bnsh(fresh)) return 'the new tokens are not [batch, heads, sequence, head_dim]';
        return { concat: n, scale };
      }
      if (n.opType === 'Mul' || n.opType === 'Div') {
        const c = this.scalarOperand(n);
        if (!c) return `a ${n.opType} by something other than a constant`;
        scale = n.opType === 'Mul' ? scale * c.value : scale / c.value;
        t = c.other;
        continue;
      }
      if (!PASS_THROUGH_KV.has(n.opType!)) return `a ${n.opType} between the cache and the product`;
      if (n.opType === 'Transpose') {
        const perm = this.intsAttr(n, 'perm') ?? [];
        const r = perm.length;
        const swapsLast =
          r >= 2 && perm[r - 1] === r - 2 && perm[r - 2] === r - 1 && perm.slice(0, -2).every((p, i) => p === i);
        if (!swapsLast) return 'a Transpose other than of the last two axes';
        transposes++;
      }
      t = n.input![0]!;
    }
    return 'not read from the present KV';
  }
}

/** A Constant node's value as a tensor. */
function constantValue(n: NodeProto | undefined): OnnxTypes.ITensorProto | undefined {
  if (!n || n.opType !== 'Constant') return undefined;
  const a = (n.attribute ?? [])[0];
  if (a?.name === 'value' && a.t) return a.t;
  if (a?.name === 'value_float' && typeof a.f === 'number') return { dataType: FLOAT, dims: [], floatData: [a.f] };
  return undefined;
}

function halfBitsToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}
