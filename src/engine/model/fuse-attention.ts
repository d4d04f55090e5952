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
// Which passes run it: each layer becomes an If. A causal pass of at least FUSED_MIN_ROWS new tokens
// (prefill pieces, long single passes) runs GroupQueryAttention, the flash path. Passes that need
// their own mask (where the graph takes `assay_attention_bias` and it is not the [1, 1] zero: packed
// questions, shared passes across requests, where each token sees the past and its own ancestors
// only) and short passes (a question's few tokens over a cached state: flash attention gains nothing
// on a handful of query rows) run the layer's attention as exported, copied into the other branch
// with the mask it had. So a question computes the same packed or alone, as before the rewrite.
// A per-token int8 graph (everyCausalPass) runs every causal pass fused, however short, and its
// masked passes through the exported attention summed in float64 (exact-attention.ts): each kind
// computes a token the same in every pass of its kind (quantized rows turn a summation-order change
// of 1e-7 into a flipped int8 step now and then), and the strategies keep a state's tokens in the
// first kind and the questions' in the second.
// Both branches read the same projections outside the If: the weights are held once, in one
// session. (The fused op can take the tree mask as its attention_bias too; measured on a 2-core
// AVX2 EPYC that was slower than the exported ops on packed question passes, 0.93× at 2,000 tokens
// × 16 questions.)
import type { onnx as OnnxTypes } from 'onnx-proto';
import { topologicalOrder } from './graph-order.js';
import { GraphIndex, matchLayer, type Layer } from './attention-match.js';
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

/** Passes of fewer new tokens than this keep the exported attention (see fuseAttention). */
export const FUSED_MIN_ROWS = 64;

/** What the fusion did: how many layers now run GroupQueryAttention, or why none does. */
export type Fusion = { layers: number } | { skipped: string };

const { BOOL, FLOAT, FLOAT16, INT32, INT64 } = DataType;

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
  /**
   * Every causal pass runs the fused op, however short, and only passes with their own mask the
   * exported attention: a graph whose exported attention sums in float64 (exact-attention.ts), where
   * a token must compute the same in every pass that computes it (the strategies keep a state's
   * tokens in causal passes and the questions' in masked ones).
   */
  everyCausalPass = false,
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
  const one = int64('assay/fa/one', [1], []); // a scalar: the sequence axis, an index, a size

  const rowSum =
    opset >= 13
      ? node('ReduceSum', [mask, int64('assay/fa/axis1', [1])], 'assay/fa/row_sum', [intAttr('keepdims', 0)])
      : node('ReduceSum', [mask], 'assay/fa/row_sum', [intsAttr('axes', [1]), intAttr('keepdims', 0)]);
  const seqlens = node('Cast', [node('Sub', [rowSum, one], 'assay/fa/seqlens64')], 'assay/fa/seqlens_k', [
    intAttr('to', INT32),
  ]);
  const total = node(
    'Cast',
    [node('Gather', [node('Shape', [mask], 'assay/fa/mask_shape'), one], 'assay/fa/total64', [intAttr('axis', 0)])],
    'assay/fa/total',
    [intAttr('to', INT32)],
  );
  // The fused op for a causal pass of at least FUSED_MIN_ROWS new tokens (prefill pieces, long
  // single passes); the exported attention for short passes (a question's few tokens over a cached
  // state: flash attention gains nothing on a handful of query rows) and for every packed pass.
  // Short and packed passes then compute exactly as they did before the rewrite, so a question
  // answers the same packed or alone.
  // (A per-token int8 graph: every causal pass fused, however short; see above.)
  const causal = bias ? node('Equal', [node('Size', [bias], 'assay/fa/bias_size'), one], 'assay/fa/causal') : undefined;
  let plain: string;
  if (everyCausalPass) {
    plain = causal ?? 'assay/fa/always';
    if (!causal) initializers.push({ name: plain, dataType: BOOL, dims: [], int32Data: [1] });
  } else {
    const rows = node('Gather', [node('Shape', ['input_ids'], 'assay/fa/ids_shape'), one], 'assay/fa/rows', [
      intAttr('axis', 0),
    ]);
    const long = node(
      'Not',
      [node('Less', [rows, int64('assay/fa/min_rows', [FUSED_MIN_ROWS], [])], 'assay/fa/short')],
      'assay/fa/long',
    );
    plain = causal ? node('And', [long, causal], 'assay/fa/plain') : long;
  }
  const toBsh = int64('assay/fa/bsh', [0, 0, -1]);
  /** [B, N, S, H] → [B, S, N·H], as GroupQueryAttention reads its query, key and value. */
  const bsh = (into: NodeProto[], t: string, name: string) => {
    into.push(
      {
        opType: 'Transpose',
        input: [t],
        output: [`${name}_bsnh`],
        name: `${name}_bsnh`,
        attribute: [intsAttr('perm', [0, 2, 1, 3])],
      },
      { opType: 'Reshape', input: [`${name}_bsnh`, toBsh], output: [name], name },
    );
    return name;
  };

  const removed = new Set<NodeProto>();
  layers.forEach((l, i) => {
    const p = `assay/fa/${i}`;
    // The fused op's inputs are laid out in the branch that reads them (a short or packed pass
    // does not pay for them).
    const layout: NodeProto[] = [];
    const q = bsh(layout, l.q, `${p}/q`);
    const k = bsh(layout, l.newK, `${p}/k`);
    const v = bsh(layout, l.newV, `${p}/v`);
    const attrs = [
      intAttr('num_heads', heads),
      intAttr('kv_num_heads', kvHeads),
      { name: 'scale', type: AttributeType.FLOAT, f: l.scale },
    ];
    const inputs = [q, k, v, l.pastK, l.pastV, seqlens, total];
    const outputs = [l.output, l.presentK, l.presentV];
    for (const r of l.replaced) removed.add(r);
    const causal: OnnxTypes.IGraphProto = {
      name: `${p}/causal`,
      node: [
        ...layout,
        {
          opType: 'GroupQueryAttention',
          domain: 'com.microsoft',
          input: inputs,
          output: outputs.map((o) => `${p}/causal/${o}`),
          name: `${p}/causal/gqa`,
          attribute: attrs,
        },
      ],
      output: outputs.map((o) => ({ name: `${p}/causal/${o}`, type: { tensorType: { elemType: kvType } } })),
    };
    const exported = exportedBranch(nodes, l, `${p}/exported`, kvType);
    added.push({
      opType: 'If',
      input: [plain],
      output: outputs,
      name: `${p}/if`,
      attribute: [
        { name: 'then_branch', type: AttributeType.GRAPH, g: causal },
        { name: 'else_branch', type: AttributeType.GRAPH, g: exported },
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

function intAttr(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INT, i };
}

function intsAttr(name: string, ints: number[]): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INTS, ints };
}

/**
 * The layer's attention as exported, as a subgraph: a copy of every node that lies between the
 * layer's roots (query, new and past KV, the mask) and its outputs (context, present KV), reading
 * the rest (shapes, constants) from the outer scope. Its outputs are renamed copies of the layer's.
 */
function exportedBranch(nodes: NodeProto[], l: Layer, prefix: string, elemType: number): OnnxTypes.IGraphProto {
  const roots = new Set([l.q, l.newK, l.newV, l.pastK, l.pastV, l.mask]);
  const producer = new Map<string, NodeProto>();
  for (const n of nodes) for (const o of n.output ?? []) producer.set(o, n);
  // Forward from the roots (the graph is in topological order).
  const reached = new Set(roots);
  const fromRoots = new Set<NodeProto>();
  for (const n of nodes) {
    if ((n.input ?? []).some((i) => reached.has(i))) {
      fromRoots.add(n);
      for (const o of n.output ?? []) reached.add(o);
    }
  }
  // Back from the outputs, not past the roots.
  const inside = new Set<NodeProto>();
  const stack = [l.output, l.presentK, l.presentV];
  while (stack.length > 0) {
    const t = stack.pop()!;
    const n = producer.get(t);
    if (roots.has(t) || !n || inside.has(n) || !fromRoots.has(n)) continue;
    inside.add(n);
    stack.push(...(n.input ?? []));
  }
  const renamed = (t: string) => `${prefix}/${t}`;
  const own = new Set([...inside].flatMap((n) => n.output ?? []));
  const copies = nodes
    .filter((n) => inside.has(n))
    .map((n) => ({
      ...n,
      name: renamed(n.name || (n.output ?? [])[0] || n.opType!),
      input: (n.input ?? []).map((i) => (own.has(i) ? renamed(i) : i)),
      output: (n.output ?? []).map(renamed),
    }));
  return {
    name: prefix,
    node: copies,
    output: [l.output, l.presentK, l.presentV].map((o) => ({
      name: renamed(o),
      type: { tensorType: { elemType } },
    })),
  };
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
export function deadCodeRemoved(nodes: NodeProto[], outputs: string[]): NodeProto[] {
  let kept = nodes;
  for (;;) {
    const read = readNames(kept);
    for (const o of outputs) read.add(o);
    const next = kept.filter((n) => (n.output ?? []).some((o) => read.has(o)));
    if (next.length === kept.length) return kept;
    kept = next;
  }
}
