// Rewrites a stock decoder export at load time so a pass computes and returns only what the engine reads:
//
// 1. the vocabulary projection runs on the positions `assay_positions` [keep] only (a stock export
//    projects every position: for a 2,000-token prefix that is a quarter of the model's FLOPs thrown
//    away);
// 2. a new output `assay_logprobs` [batch, keep, K] holds log softmax(logits · inv_temperature) at
//    the candidate tokens `assay_candidates` [batch, keep, K], so a pass returns a few numbers
//    instead of a 600 KB vocabulary row per position (onnxruntime-node copies every fetched output);
// 3. where attention is built from plain ops (Softmax over scores plus a mask derived from
//    attention_mask, as the PyTorch exporter writes it), a new input `assay_attention_bias`
//    [rows, columns] (float32, broadcast) is added to each layer's mask. A [1, 1] zero leaves the
//    model as exported; a [sequence, total] matrix of 0 and -1e9 restricts what each token sees, so
//    one pass can evaluate a tree of token sequences (packed evaluation: every question's suffix on
//    one prefix, each seeing the prefix and its own tokens only). Fused attention kernels
//    (GroupQueryAttention, MultiHeadAttention) take no such bias: those graphs are not given it.
//
// The head is found structurally: walking back from `logits` to the nearest matrix product whose
// weight has a vocabulary-sized dimension; its activation input (before any DynamicQuantizeLinear)
// is the final hidden state, sliced along the sequence axis. When the graph has another shape
// (a reshape after the head, say), the rewrite is skipped and the engine reads full logits instead.
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { topologicalOrder } from './graph-order.js';
import { aiOnnxOpset } from './opset.js';
import { PerTokenInt8 } from './per-token-int8.js';
import { AttributeType, DataType } from '../../common/index.js';

const onnx = onnxProto.onnx;
const { FLOAT, FLOAT16, INT8, INT64 } = DataType;
const MATMULS = new Set([
  'MatMul',
  'Gemm',
  'MatMulInteger',
  'MatMulNBits',
  'DynamicQuantizeMatMul',
  'MatMulIntegerToFloat',
  'FusedMatMul',
]);
/** Nodes the activation passes through between the final norm and the projection. */
const ACTIVATION_PASSTHROUGH = new Set(['DynamicQuantizeLinear', 'Cast']);

/** Bumped whenever the rewrite changes, so graphs rewritten by an older version are not reused. */
export const REWRITE_VERSION = 21;
/** The symbolic dimension of the positions a pass reads (the head's sequence axis after the rewrite). */
const KEEP_DIM = 'assay_keep';

export const POSITIONS_INPUT = 'assay_positions';
export const BIAS_INPUT = 'assay_attention_bias';
export const CANDIDATES_INPUT = 'assay_candidates';
export const INV_TEMPERATURE_INPUT = 'assay_inv_temperature';
export const LOGPROBS_OUTPUT = 'assay_logprobs';

export type ModelProto = OnnxTypes.ModelProto;

/** Decodes an ONNX file. From a Node Buffer, protobufjs returns the initializers' raw bytes as views (no copy). */
export function decodeModel(bytes: Uint8Array): ModelProto {
  return onnx.ModelProto.decode(bytes);
}

export function encodeModel(model: ModelProto): Uint8Array {
  return onnx.ModelProto.encode(model).finish();
}

/** Files the model's initializers live in (external data), relative to the model file. */
export function externalFiles(model: ModelProto): string[] {
  const files = new Set<string>();
  for (const t of model.graph?.initializer ?? []) {
    const location = t.externalData?.find((e) => e.key === 'location')?.value;
    if (location) files.add(location);
  }
  return [...files];
}

/** Ops that quantize activations at run time with one scale over the whole tensor (the whole pass). */
const PER_TENSOR_DYNAMIC_QUANTIZATION = new Set(['DynamicQuantizeLinear', 'DynamicQuantizeMatMul']);

/**
 * Whether the graph quantizes activations at run time with one scale per tensor (onnxruntime's
 * quantize_dynamic, as Optimum's int8 exports are made): then a token's numerics depend on every
 * other token of its pass, so passes must not be shared across requests. Per-block scales
 * (MatMulNBits at accuracy_level 4) and static QDQ scales are per row: a row's result is its own.
 */
export function sharesActivationScales(model: ModelProto): boolean {
  const inGraph = (g: OnnxTypes.IGraphProto | null | undefined): boolean =>
    (g?.node ?? []).some(
      (n) =>
        PER_TENSOR_DYNAMIC_QUANTIZATION.has(n.opType ?? '') ||
        (n.attribute ?? []).some((a) => inGraph(a.g) || (a.graphs ?? []).some(inGraph)),
    );
  return inGraph(model.graph);
}

/**
 * Rewrites each product that quantizes its activation with one scale per pass into the per-token
 * form (per-token-int8.ts), in place: quantize_dynamic's DynamicQuantizeLinear → MatMulInteger →
 * Cast → Mul(by activation scale × weight scale), and the fused com.microsoft DynamicQuantizeMatMul,
 * each with a constant int8 weight. What it does not recognize stays as it was (then
 * sharesActivationScales still says so). Returns how many products were rewritten.
 */
export function quantizePerToken(model: ModelProto): number {
  const graph = model.graph!;
  const nodes = graph.node ?? [];
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
  const producer = new Map<string, OnnxTypes.INodeProto>();
  const consumers = new Map<string, OnnxTypes.INodeProto[]>();
  for (const n of nodes) {
    for (const o of n.output ?? []) producer.set(o, n);
    for (const i of n.input ?? []) consumers.set(i, [...(consumers.get(i) ?? []), n]);
  }
  const constant = (name: string | undefined) => !name || initializers.has(name);
  const weight = (name: string | undefined) => {
    const t = name ? initializers.get(name) : undefined;
    return t !== undefined && t.dataType === INT8 && (t.dims ?? []).length === 2;
  };
  const floatConstant = (name: string | undefined) => name !== undefined && initializers.get(name)?.dataType === FLOAT;
  const only = (tensor: string) => {
    const c = consumers.get(tensor) ?? [];
    return c.length === 1 && !(graph.output ?? []).some((o) => o.name === tensor) ? c[0] : undefined;
  };
  const builder = new PerTokenInt8(aiOnnxOpset(model));
  /** A node to take out → the nodes that replace it (empty: just removed). */
  const replaced = new Map<OnnxTypes.INodeProto, OnnxTypes.INodeProto[]>();
  const maybeUnused = new Set<OnnxTypes.INodeProto>();
  let count = 0;
  for (const n of nodes) {
    const prefix = `assay/per_token/${count}`;
    if (n.opType === 'DynamicQuantizeMatMul' && n.domain === 'com.microsoft') {
      const [x, w, scale, zeroPoint, bias] = n.input ?? [];
      if (!x || !weight(w) || !floatConstant(scale) || !constant(zeroPoint)) continue;
      const out = n.output![0]!;
      const product = bias ? `${prefix}/unbiased` : out;
      const added = builder.matMul({
        input: x,
        weight: w!,
        depth: Number(initializers.get(w!)!.dims![0]),
        weightScale: scale!,
        ...(zeroPoint ? { weightZeroPoint: zeroPoint } : {}),
        output: product,
        prefix,
      });
      if (bias) added.push({ opType: 'Add', input: [product, bias], output: [out], name: `${prefix}/bias` });
      replaced.set(n, added);
      count++;
      continue;
    }
    if (n.opType !== 'MatMulInteger') continue;
    const [xq, w, xZeroPoint, wZeroPoint] = n.input ?? [];
    const dql = xq ? producer.get(xq) : undefined;
    if (!dql || dql.opType !== 'DynamicQuantizeLinear' || dql.output![0] !== xq || xZeroPoint !== dql.output![2])
      continue;
    if (!weight(w) || !constant(wZeroPoint)) continue;
    const cast = only(n.output![0]!);
    if (cast?.opType !== 'Cast' || Number((cast.attribute ?? []).find((a) => a.name === 'to')?.i) !== FLOAT) continue;
    const mul = only(cast.output![0]!);
    if (mul?.opType !== 'Mul') continue;
    const scales = producer.get(mul.input!.find((i) => i !== cast.output![0])!);
    if (scales?.opType !== 'Mul' || !scales.input!.includes(dql.output![1]!)) continue;
    const weightScale = scales.input!.find((i) => i !== dql.output![1]);
    if (!floatConstant(weightScale)) continue;
    const added = builder.matMul({
      input: dql.input![0]!,
      weight: w!,
      depth: Number(initializers.get(w!)!.dims![0]),
      weightScale: weightScale!,
      ...(wZeroPoint ? { weightZeroPoint: wZeroPoint } : {}),
      output: mul.output![0]!,
      prefix,
    });
    replaced.set(n, []);
    replaced.set(cast, []);
    replaced.set(mul, added);
    maybeUnused.add(scales).add(dql);
    count++;
  }
  if (count === 0) return 0;
  let kept = nodes.flatMap((n) => replaced.get(n) ?? [n]);
  // The activation's quantization and the scale products, once nothing reads them any more.
  for (let again = true; again;) {
    const read = new Set(kept.flatMap((n) => n.input ?? []));
    for (const o of graph.output ?? []) read.add(o.name!);
    const before = kept.length;
    kept = kept.filter((n) => !maybeUnused.has(n) || (n.output ?? []).some((o) => read.has(o)));
    again = kept.length < before;
  }
  // Each activation's row quantization, read by its products.
  const quantization = builder.finish({ nodes: kept, outputs: (graph.output ?? []).map((o) => o.name!) });
  graph.node = topologicalOrder([...kept, ...quantization.nodes]);
  graph.initializer = [...(graph.initializer ?? []), ...quantization.initializers];
  if (!(model.opsetImport ?? []).some((o) => o.domain === 'com.microsoft'))
    model.opsetImport = [...(model.opsetImport ?? []), { domain: 'com.microsoft', version: 1 }];
  return count;
}

/** Rewrites the model in place; false (and the model untouched) when the head was not recognized. */
export function rewriteHead(model: ModelProto, vocabSize: number): boolean {
  const graph = model.graph!;
  const logitsType = (graph.output ?? []).find((o) => o.name === 'logits')?.type?.tensorType?.elemType;
  if (logitsType !== undefined && logitsType !== FLOAT && logitsType !== FLOAT16) return false;
  const nodes = graph.node!;
  const producer = new Map<string, OnnxTypes.INodeProto>();
  for (const n of nodes) for (const o of n.output ?? []) producer.set(o, n);
  const dimsOf = new Map<string, number[]>();
  for (const t of graph.initializer ?? []) dimsOf.set(t.name!, (t.dims ?? []).map(Number));

  // 1. The head: nearest matrix product upstream of logits with a vocabulary-sized weight.
  const head = findHead('logits', producer, dimsOf, vocabSize);
  if (!head) return false;
  let hidden = head.input![0]!;
  for (let n = producer.get(hidden); n && ACTIVATION_PASSTHROUGH.has(n.opType!); n = producer.get(hidden))
    hidden = n.input![0]!;
  // The path hidden → logits must not reshape (its output keeps the [batch, seq, vocab] layout).
  if (!pathIsRankPreserving(hidden, 'logits', producer)) return false;

  const opset = aiOnnxOpset(model);
  const added: OnnxTypes.INodeProto[] = [];
  const init: OnnxTypes.ITensorProto[] = [];
  const c = (name: string, values: number[]): string => {
    init.push({ name, dataType: INT64, dims: [values.length], int64Data: values });
    return name;
  };
  const node = (
    opType: string,
    input: string[],
    output: string,
    attribute: OnnxTypes.IAttributeProto[] = [],
  ): string => {
    added.push({ opType, input, output: [output], name: `assay/${output}`, attribute });
    return output;
  };

  // 2. The hidden state at the positions read: Gather along the sequence axis.
  const sliced = 'assay/hidden_kept';
  node('Gather', [hidden, POSITIONS_INPUT], sliced, [{ name: 'axis', type: AttributeType.INT, i: 1 }]);
  // Consumers of the hidden state on the head's path read the slice; any other keeps the full tensor.
  for (const n of nodes) {
    n.input = n.input!.map((i) =>
      i === hidden && (n.output ?? []).some((o) => dependsOn('logits', o, producer)) ? sliced : i,
    );
  }

  // The head's tensors now hold the kept positions, not the sequence: their declared shapes say so.
  // onnxruntime plans buffers from declared dimensions, so a `logits` still declared
  // [batch, sequence_length, vocab] made a pass that reads more positions than it has tokens (16
  // questions' reads on 4 tokens after their stems) fail with "Shape mismatch attempting to re-use
  // buffer": its log-normalizer was planned into a buffer of a [batch, sequence_length, 1] tensor.
  declareKeptPositions(graph, sliced);

  // 3. Log-probabilities of the candidate tokens, in float32 whatever the export's logits are:
  //    float16 logits (fp16 / q4f16 exports, onnxruntime-genai CUDA builds) are cast first, so the
  //    temperature and the log-softmax run in float32 and the output type is always float32.
  const logits =
    logitsType === FLOAT16
      ? node('Cast', ['logits'], 'assay/logits_f32', [{ name: 'to', type: AttributeType.INT, i: FLOAT }])
      : 'logits';
  node('Mul', [logits, INV_TEMPERATURE_INPUT], 'assay/scaled');
  if (opset >= 18)
    node('ReduceLogSumExp', ['assay/scaled', c('assay/last_axis', [-1])], 'assay/log_z', [
      { name: 'keepdims', type: AttributeType.INT, i: 1 },
    ]);
  else
    node('ReduceLogSumExp', ['assay/scaled'], 'assay/log_z', [
      { name: 'axes', type: AttributeType.INTS, ints: [-1] },
      { name: 'keepdims', type: AttributeType.INT, i: 1 },
    ]);
  node('GatherElements', ['assay/scaled', CANDIDATES_INPUT], 'assay/picked', [
    { name: 'axis', type: AttributeType.INT, i: 2 },
  ]);
  node('Sub', ['assay/picked', 'assay/log_z'], LOGPROBS_OUTPUT);

  // 4. The attention bias, where the graph's attention takes one.
  const biased = opset >= 15 && addAttentionBias(nodes, producer, added);

  graph.node = topologicalOrder([...nodes, ...added]);
  graph.initializer = [...(graph.initializer ?? []), ...init];
  graph.input = [
    ...(graph.input ?? []),
    ...(biased ? [tensorInfo(BIAS_INPUT, FLOAT, ['assay_bias_rows', 'assay_bias_columns'])] : []),
    tensorInfo(POSITIONS_INPUT, INT64, [KEEP_DIM]),
    tensorInfo(CANDIDATES_INPUT, INT64, ['batch_size', KEEP_DIM, 'assay_candidates']),
    tensorInfo(INV_TEMPERATURE_INPUT, FLOAT, []),
  ];
  graph.output = [
    ...(graph.output ?? []),
    tensorInfo(LOGPROBS_OUTPUT, FLOAT, ['batch_size', KEEP_DIM, 'assay_candidates']),
  ];
  return true;
}

/**
 * Adds BIAS_INPUT to the mask of every attention layer written in plain ops: each Softmax whose
 * input is Add(scores, mask), the mask being the operand computed from attention_mask and from no
 * past_key_values input (the scores are). All layers must match, or nothing is changed.
 */
function addAttentionBias(
  nodes: OnnxTypes.INodeProto[],
  producer: Map<string, OnnxTypes.INodeProto>,
  added: OnnxTypes.INodeProto[],
): boolean {
  const softmaxes = nodes.filter((n) => n.opType === 'Softmax');
  if (softmaxes.length === 0) return false;
  const fromPast = (t: string) =>
    dependsOnInput(
      t,
      (name) => name.startsWith('past_key_values.') || name.startsWith('past_key.') || name.startsWith('past_value.'),
      producer,
    );
  const masks: Array<{ add: OnnxTypes.INodeProto; index: number }> = [];
  for (const s of softmaxes) {
    const add = producer.get(s.input![0]!);
    if (!add || add.opType !== 'Add') return false;
    const index = add.input!.findIndex((i) => dependsOn(i, 'attention_mask', producer) && !fromPast(i));
    const other = add.input![1 - index];
    if (index < 0 || other === undefined || !fromPast(other)) return false;
    masks.push({ add, index });
  }
  const cast = new Map<string, string>();
  for (const { add, index } of masks) {
    const mask = add.input![index]!;
    // The bias takes the mask's type (float16 in fp16 exports): CastLike, then one Add per mask tensor.
    let biased = cast.get(mask);
    if (!biased) {
      biased = `assay/biased_mask_${cast.size}`;
      added.push({
        opType: 'CastLike',
        input: [BIAS_INPUT, mask],
        output: [`${biased}_bias`],
        name: `assay/${biased}_bias`,
      });
      added.push({ opType: 'Add', input: [mask, `${biased}_bias`], output: [biased], name: `assay/${biased}` });
      cast.set(mask, biased);
    }
    add.input![index] = biased;
  }
  return true;
}

/** Whether tensor `output` is computed from a graph input whose name `isInput` accepts. */
export function dependsOnInput(
  output: string,
  isInput: (name: string) => boolean,
  producer: Map<string, OnnxTypes.INodeProto>,
): boolean {
  const stack = [output];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (isInput(name)) return true;
    if (seen.has(name)) continue;
    seen.add(name);
    stack.push(...(producer.get(name)?.input ?? []));
  }
  return false;
}

function findHead(
  output: string,
  producer: Map<string, OnnxTypes.INodeProto>,
  dimsOf: Map<string, number[]>,
  vocab: number,
): OnnxTypes.INodeProto | undefined {
  const queue: Array<[string, number]> = [[output, 0]];
  const seen = new Set<string>();
  while (queue.length > 0) {
    const [name, depth] = queue.shift()!;
    const n = producer.get(name);
    if (!n || seen.has(name) || depth > 8) continue;
    seen.add(name);
    if (MATMULS.has(n.opType!) && n.input!.slice(1).some((w) => weightHasDim(w, producer, dimsOf, vocab))) return n;
    for (const i of n.input ?? []) queue.push([i, depth + 1]);
  }
  return undefined;
}

/** Whether a tensor is (a transpose/dequantization of) an initializer with a dimension of size `vocab`. */
function weightHasDim(
  name: string,
  producer: Map<string, OnnxTypes.INodeProto>,
  dimsOf: Map<string, number[]>,
  vocab: number,
): boolean {
  for (let depth = 0; depth < 4; depth++) {
    if (dimsOf.get(name)?.includes(vocab)) return true;
    const n = producer.get(name);
    if (!n || !n.input?.length) return false;
    name = n.input[0]!;
  }
  return false;
}

/** No Reshape/Flatten/Squeeze between the hidden state and logits. */
function pathIsRankPreserving(from: string, to: string, producer: Map<string, OnnxTypes.INodeProto>): boolean {
  const stack = [to];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (name === from || seen.has(name)) continue;
    seen.add(name);
    const n = producer.get(name);
    if (!n) continue;
    if (['Reshape', 'Flatten', 'Squeeze', 'Unsqueeze', 'Transpose'].includes(n.opType!) && reaches(n, from, producer))
      return false;
    stack.push(...(n.input ?? []));
  }
  return true;
}

function reaches(n: OnnxTypes.INodeProto, target: string, producer: Map<string, OnnxTypes.INodeProto>): boolean {
  return (n.input ?? []).some((i) => dependsOn(i, target, producer));
}

/** Whether tensor `output` is computed from tensor `on`. */
function dependsOn(output: string, on: string, producer: Map<string, OnnxTypes.INodeProto>): boolean {
  const stack = [output];
  const seen = new Set<string>();
  while (stack.length > 0) {
    const name = stack.pop()!;
    if (name === on) return true;
    if (seen.has(name)) continue;
    seen.add(name);
    stack.push(...(producer.get(name)?.input ?? []));
  }
  return false;
}

/**
 * Declares the sequence axis of the head's outputs (every tensor computed from the kept hidden
 * state `sliced`) as the kept count: `logits` as [batch, assay_keep, vocab]; value_info of the
 * tensors between them is dropped (onnxruntime infers it again from the inputs' dimensions).
 */
function declareKeptPositions(graph: OnnxTypes.IGraphProto, sliced: string): void {
  const downstream = new Set([sliced]);
  for (let grew = true; grew;) {
    grew = false;
    for (const n of graph.node ?? [])
      if ((n.input ?? []).some((i) => downstream.has(i)))
        for (const o of n.output ?? [])
          if (!downstream.has(o)) {
            downstream.add(o);
            grew = true;
          }
  }
  graph.valueInfo = (graph.valueInfo ?? []).filter((v) => !downstream.has(v.name!));
  for (const o of graph.output ?? []) {
    const dims = o.type?.tensorType?.shape?.dim;
    if (downstream.has(o.name!) && dims && dims.length >= 2) dims[1] = { dimParam: KEEP_DIM };
  }
}

function tensorInfo(name: string, elemType: number, dims: Array<number | string>): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}
