// The small constants of a graph (axes, pads, slice bounds, a Trilu's diagonal, a Range's start and
// step), as values: every node output the graph computes from constants alone (Constant nodes and
// small inline initializers, never a weight), evaluated by onnxruntime itself in one pass over a
// graph of those nodes. Exporters write such values as chains (torch's F.pad: the pad tuple through
// Shape, Gather, Sub, ConstantOfShape, Concat, Reshape, Slice, Transpose, Cast), which onnxruntime
// evaluates exactly as the model would; the matcher then reads them as numbers.
import * as ort from 'onnxruntime-node';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { encodeModel, type ModelProto } from '../graph-rewrite.js';
import { DataType } from '../../../common/index.js';

type NodeProto = OnnxTypes.INodeProto;

/** Initializers read as constants: inline and at most this many elements (never a weight matrix). */
const SMALL = 4096;
/** Producers whose outputs are not asked for (they may be large); still evaluated where a small one needs them. */
const LARGE_OUTPUTS = new Set(['ConstantOfShape', 'Expand', 'Tile', 'Range']);

/** A constant's value: its numbers (int64 as numbers) and its shape. */
export interface ConstantValue {
  values: number[];
  dims: number[];
  type: ort.Tensor.Type;
}

const elements = (t: OnnxTypes.ITensorProto) => (t.dims ?? []).reduce((n: number, d) => n * Number(d), 1);

/** Every small constant node output of the main graph, by name (empty when none, or when onnxruntime cannot run them). */
export async function smallConstants(model: ModelProto): Promise<Map<string, ConstantValue>> {
  const graph = model.graph!;
  const small = new Map(
    (graph.initializer ?? [])
      .filter((t) => t.dataLocation !== 1 && !(t.externalData ?? []).length && elements(t) <= SMALL)
      .map((t) => [t.name!, t]),
  );
  const known = new Set(small.keys());
  const nodes: NodeProto[] = [];
  const used = new Set<string>();
  for (const n of graph.node ?? []) {
    const subgraph = (n.attribute ?? []).some((a) => a.g || (a.graphs ?? []).length);
    const standard = !n.domain || n.domain === 'ai.onnx';
    if (subgraph || !standard || !(n.input ?? []).every((i) => !i || known.has(i))) continue;
    if (n.opType === 'Constant' && (n.attribute ?? []).some((a) => a.t && elements(a.t) > SMALL)) continue;
    nodes.push(n);
    for (const i of n.input ?? []) if (i && small.has(i)) used.add(i);
    for (const o of n.output ?? []) if (o) known.add(o);
  }
  const values = new Map<string, ConstantValue>();
  for (const [name, t] of small) {
    const v = initializerValue(t);
    if (v) values.set(name, v);
  }
  const asked = nodes.filter((n) => !LARGE_OUTPUTS.has(n.opType!)).flatMap((n) => (n.output ?? []).filter(Boolean));
  if (asked.length === 0) return values;
  const sub: ModelProto = {
    irVersion: model.irVersion,
    opsetImport: model.opsetImport,
    graph: {
      name: 'assay_constants',
      node: nodes,
      initializer: [...used].map((name) => small.get(name)!),
      output: asked.map((name) => ({ name })),
    },
  } as ModelProto;
  let session: ort.InferenceSession | undefined;
  try {
    session = await ort.InferenceSession.create(encodeModel(sub), { graphOptimizationLevel: 'disabled' });
    const out = await session.run({});
    for (const [name, t] of Object.entries(out)) {
      const data = t.data as ArrayLike<number | bigint | boolean>;
      values.set(name, { values: Array.from(data, Number), dims: t.dims.map(Number), type: t.type });
    }
    return values;
  } catch {
    return values;
  } finally {
    await session?.release();
  }
}

/** An inline initializer's numbers (float32, int64, int32), from its typed field or its raw bytes. */
function initializerValue(t: OnnxTypes.ITensorProto): ConstantValue | undefined {
  const dims = (t.dims ?? []).map(Number);
  const raw =
    t.rawData && t.rawData.byteLength > 0
      ? new DataView(t.rawData.buffer, t.rawData.byteOffset, t.rawData.byteLength)
      : undefined;
  const count = elements(t);
  if (t.dataType === DataType.FLOAT) {
    const values = raw
      ? Array.from({ length: count }, (_, i) => raw.getFloat32(4 * i, true))
      : (t.floatData ?? []).map(Number);
    return { values, dims, type: 'float32' };
  }
  if (t.dataType === DataType.INT64) {
    const values = raw
      ? Array.from({ length: count }, (_, i) => Number(raw.getBigInt64(8 * i, true)))
      : (t.int64Data ?? []).map(Number);
    return { values, dims, type: 'int64' };
  }
  if (t.dataType === DataType.INT32) {
    const values = raw
      ? Array.from({ length: count }, (_, i) => raw.getInt32(4 * i, true))
      : (t.int32Data ?? []).map(Number);
    return { values, dims, type: 'int32' };
  }
  return undefined;
}
