// Fused causal attention: rewrites each attention layer that an export writes in plain ops
// (QKᵀ · scale + mask → Softmax → · V over the concatenated past and new keys and values, as the
// PyTorch exporter and Assay's synthetic models write it) into onnxruntime's
// com.microsoft.GroupQueryAttention. On CPU that op has a flash path for a causal pass: tiles of
// queries against tiles of keys with an online softmax, the causal mask applied on the fly and the
// key tiles above the diagonal skipped, so no [heads, S, T] score or mask tensor is ever written.
// It takes the past KV in the layout the engine already keeps (BNSH) and returns the present KV in
// the same layout, so nothing else in the engine changes.
//
// What stays as exported: the projections, the rotary embedding (it reads position_ids, so packed
// passes keep their positions), and everything outside attention. What is matched, per layer:
//   scores  = MatMul(Q', K') (times scalar constants, on either side or after);
//   Q'      = Q reached through Reshape / scalar Mul|Div, Q being BNSH (a Transpose 0,2,1,3 upstream);
//   K'      = present K through Transpose (the last two axes swapped) / Unsqueeze / Expand / Reshape
//             / scalar Mul|Div, present K = Concat(past K, new K) on the sequence axis;
//   probs   = Softmax(Add(scores, mask)) over the last axis, the mask computed from attention_mask
//             and not from the past (a plain causal-and-padding mask);
//   context = MatMul(probs, V'), V' from present V = Concat(past V, new V) as K' (no Transpose);
//   output  = context through Reshape / Transpose (0,2,1,3) to the [B, S, heads · head_dim] tensor
//             the output projection reads.
// Every layer must match, or the graph is left as it is and the reason is returned (the runner
// reports it at load).
//
// Passes that need their own mask (packed questions, shared passes across requests: each token sees
// the past and its own ancestors only) keep it: where the graph takes `assay_attention_bias`, each
// layer becomes an If on "is the bias the [1, 1] zero?": then GroupQueryAttention alone (the flash
// path), else GroupQueryAttention with the bias as its attention_bias input [1, 1, S, T] (the op's
// causal mask and the bias together: a packed token's ancestors all come before it, so the bias only
// ever hides what the causal mask lets through). Both branches read the same projections outside
// the If: the weights are held once, in one session.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { topologicalOrder } from './graph-order.js';
import { dependsOnInput } from './graph-rewrite.js';
import { aiOnnxOpset } from './opset.js';
import { AttributeType, DataType } from '../../common/index.js';

type NodeProto = OnnxTypes.INodeProto;
type ModelProto = OnnxTypes.IModelProto;

/** The attention's heads, as config.json gives them. */
export interface AttentionShape {
  heads: number;
  kvHeads: number;
  headDim: number;
}

/** The heads from config.json, or why they cannot be told (or why the fused op does not apply). */
export function attentionShape(config: Record<string, unknown>): AttentionShape | string {
  const n = (k: string) => (typeof config[k] === 'number' ? (config[k] as number) : 0);
  const heads = n('num_attention_heads');
  const kvHeads = n('num_key_value_heads') || heads;
  const headDim = n('head_dim') || (heads ? n('hidden_size') / heads : 0);
  if (!(heads > 0 && kvHeads > 0 && Number.isInteger(headDim) && headDim > 0 && heads % kvHeads === 0))
    return 'config.json does not give the heads (num_attention_heads, num_key_value_heads, head_dim)';
  // A sliding window masks more than causality: the exported mask holds it, the fused op would not.
  if (config.use_sliding_window === true) return 'the model uses sliding-window attention';
  if (typeof config.attn_logit_softcapping === 'number') return 'the model caps its attention logits';
  return { heads, kvHeads, headDim };
}

/** What the fusion did: how many layers now run GroupQueryAttention, or why none does. */
export type Fusion = { layers: number } | { skipped: string };

/** Where a layer's pieces are, once matched. */
interface Layer {
  q: string;
  newK: string;
  newV: string;
  pastK: string;
  pastV: string;
  presentK: string;
  presentV: string;
  output: string;
  scale: number;
  /** The nodes that produce the present KV and the output: replaced by the fused node. */
  replaced: NodeProto[];
}

const { FLOAT, FLOAT16, INT32, INT64 } = DataType;
const PASS_THROUGH_Q = new Set(['Reshape']);
const PASS_THROUGH_KV = new Set(['Reshape', 'Unsqueeze', 'Expand', 'Transpose']);

/**
 * Fuses every attention layer of `model` in place (see above). `bias` names the graph input whose
 * rows restrict what each token sees (undefined: the graph takes none). Runs last in the rewrite:
 * the If subgraphs it adds stop the opset raise of per-token int8.
 */
export function fuseAttention(
  model: ModelProto,
  shape: AttentionShape | string,
  provider: 'cpu' | 'cuda',
  bias?: string,
): Fusion {
  const graph = model.graph!;
  const nodes = graph.node ?? [];
  if (nodes.some((n) => n.opType === 'GroupQueryAttention' || n.opType === 'MultiHeadAttention'))
    return { skipped: 'the export already uses a fused attention op' };
  if (typeof shape === 'string') return { skipped: shape };
  const { heads, kvHeads } = shape;
  const g = new GraphIndex(model);
  const softmaxes = nodes.filter((n) => n.opType === 'Softmax');
  if (softmaxes.length === 0) return { skipped: 'no attention written in plain ops (no Softmax)' };
  const layers: Layer[] = [];
  for (const s of softmaxes) {
    const layer = matchLayer(g, s);
    if (typeof layer === 'string') return { skipped: `layer ${layers.length + 1} does not match: ${layer}` };
    layers.push(layer);
  }
  const kvType = graph.input?.find((i) => i.name === layers[0]!.pastK)?.type?.tensorType?.elemType;
  if (kvType !== FLOAT && kvType !== FLOAT16) return { skipped: 'the KV cache is neither float32 nor float16' };
  // CUDA's GroupQueryAttention takes float16 (and bfloat16) only: a float32 one would run on the CPU.
  if (provider === 'cuda' && kvType !== FLOAT16) return { skipped: 'CUDA runs GroupQueryAttention in float16 only' };

  const opset = aiOnnxOpset(model);
  const added: NodeProto[] = [];
  const initializers: OnnxTypes.ITensorProto[] = [];
  const node = (opType: string, input: string[], output: string, attribute: OnnxTypes.IAttributeProto[] = []) => {
    added.push({ opType, input, output: [output], name: `assay/${output}`, attribute });
    return output;
  };
  const int64 = (name: string, values: number[], dims = [values.length]) => {
    initializers.push({ name, dataType: INT64, dims, int64Data: values });
    return name;
  };
  // seqlens_k (total length − 1 per row) and total_sequence_length, as onnxruntime-genai computes them.
  const mask = 'attention_mask';
  const rowSum =
    opset >= 13
      ? node('ReduceSum', [mask, int64('assay/fa/axis1', [1])], 'assay/fa/row_sum', [intAttr('keepdims', 0)])
      : node('ReduceSum', [mask], 'assay/fa/row_sum', [intsAttr('axes', [1]), intAttr('keepdims', 0)]);
  const seqlens = node(
    'Cast',
    [node('Sub', [rowSum, int64('assay/fa/one', [1], [])], 'assay/fa/seqlens64')],
    'assay/fa/seqlens_k',
    [intAttr('to', INT32)],
  );
  const total = node(
    'Cast',
    [
      node(
        'Gather',
        [node('Shape', [mask], 'assay/fa/mask_shape'), int64('assay/fa/one_index', [1], [])],
        'assay/fa/total64',
        [intAttr('axis', 0)],
      ),
    ],
    'assay/fa/total',
    [intAttr('to', INT32)],
  );
  const plain = bias
    ? node('Equal', [node('Size', [bias], 'assay/fa/bias_size'), int64('assay/fa/one_size', [1], [])], 'assay/fa/plain')
    : undefined;
  const toBsh = int64('assay/fa/bsh', [0, 0, -1]);
  const bsh = (t: string, name: string) =>
    node('Reshape', [node('Transpose', [t], `${name}_bsnh`, [intsAttr('perm', [0, 2, 1, 3])]), toBsh], name);

  const removed = new Set<NodeProto>();
  layers.forEach((l, i) => {
    const p = `assay/fa/${i}`;
    const q = bsh(l.q, `${p}/q`);
    const k = bsh(l.newK, `${p}/k`);
    const v = bsh(l.newV, `${p}/v`);
    const attrs = [
      intAttr('num_heads', heads),
      intAttr('kv_num_heads', kvHeads),
      { name: 'scale', type: AttributeType.FLOAT, f: l.scale },
    ];
    const inputs = [q, k, v, l.pastK, l.pastV, seqlens, total];
    const outputs = [l.output, l.presentK, l.presentV];
    for (const r of l.replaced) removed.add(r);
    if (!plain) {
      added.push({
        opType: 'GroupQueryAttention',
        domain: 'com.microsoft',
        input: inputs,
        output: outputs,
        name: `${p}/gqa`,
        attribute: attrs,
      });
      return;
    }
    const branch = (withBias: boolean): OnnxTypes.IGraphProto => {
      const b = withBias ? 'biased' : 'causal';
      const inner: NodeProto[] = [];
      const extra: string[] = [];
      if (withBias) {
        // [rows, columns] → [1, 1, rows, columns], in the attention's type.
        const axes = opset >= 13 ? [int64(`${p}/${b}/axes`, [0, 1])] : [];
        const unsqueezed = `${p}/${b}/bias4`;
        inner.push({
          opType: 'Unsqueeze',
          input: [bias!, ...axes],
          output: [unsqueezed],
          name: unsqueezed,
          attribute: opset >= 13 ? [] : [intsAttr('axes', [0, 1])],
        });
        let typed = unsqueezed;
        if (kvType === FLOAT16) {
          typed = `${p}/${b}/bias16`;
          inner.push({
            opType: 'Cast',
            input: [unsqueezed],
            output: [typed],
            name: typed,
            attribute: [intAttr('to', FLOAT16)],
          });
        }
        extra.push('', '', '', typed); // cos_cache, sin_cache, position_ids: none; attention_bias
      }
      const outs = ['output', 'present_key', 'present_value'].map((o) => `${p}/${b}/${o}`);
      inner.push({
        opType: 'GroupQueryAttention',
        domain: 'com.microsoft',
        input: [...inputs, ...extra],
        output: outs,
        name: `${p}/${b}/gqa`,
        attribute: attrs,
      });
      return {
        name: `${p}/${b}`,
        node: inner,
        output: outs.map((name) => ({ name, type: { tensorType: { elemType: kvType } } })),
      };
    };
    added.push({
      opType: 'If',
      input: [plain],
      output: outputs,
      name: `${p}/if`,
      attribute: [
        { name: 'then_branch', type: AttributeType.GRAPH, g: branch(false) },
        { name: 'else_branch', type: AttributeType.GRAPH, g: branch(true) },
      ],
    });
  });
  graph.node = topologicalOrder(
    deadCodeRemoved(
      [...nodes.filter((n) => !removed.has(n)), ...added],
      (graph.output ?? []).map((o) => o.name!),
    ),
  );
  graph.initializer = [...(graph.initializer ?? []), ...initializers];
  // Initializers only the removed nodes read (the attention's scale constants, the causal mask's).
  const read = readNames(graph.node);
  graph.initializer = graph.initializer.filter((t) => read.has(t.name!));
  if (!(model.opsetImport ?? []).some((o) => o.domain === 'com.microsoft'))
    model.opsetImport = [...(model.opsetImport ?? []), { domain: 'com.microsoft', version: 1 }];
  return { layers: layers.length };
}

/** One layer's attention around Softmax `s`, or why it does not match. */
function matchLayer(g: GraphIndex, s: NodeProto): Layer | string {
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
    scale,
    replaced: [k.concat, v.concat, last],
  };
}

/** Producers, consumers and constants of a graph, and the tests the matcher asks of them. */
class GraphIndex {
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
    if (!t || (t.dims ?? []).reduce((a, d) => a * Number(d), 1) !== 1) return undefined;
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

function intAttr(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INT, i };
}

function intsAttr(name: string, ints: number[]): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INTS, ints };
}

/** Every tensor name a node reads, subgraphs (outer-scope reads) included. */
function readNames(nodes: NodeProto[]): Set<string> {
  const read = new Set<string>();
  const visit = (list: NodeProto[]) => {
    for (const n of list) {
      for (const i of n.input ?? []) if (i) read.add(i);
      for (const a of n.attribute ?? []) {
        if (a.g) visit(a.g.node ?? []);
        for (const sub of a.graphs ?? []) visit(sub.node ?? []);
      }
    }
  };
  visit(nodes);
  return read;
}

/** The nodes without those whose outputs nothing reads (repeated until none is left). */
function deadCodeRemoved(nodes: NodeProto[], outputs: string[]): NodeProto[] {
  let kept = nodes;
  for (;;) {
    const read = readNames(kept);
    for (const o of outputs) read.add(o);
    const next = kept.filter((n) => (n.output ?? []).some((o) => read.has(o)));
    if (next.length === kept.length) return kept;
    kept = next;
  }
}
