// The model's ai.onnx opset, and raising it to 21 where every node means the same there.
//
// From opset 21, QuantizeLinear takes a scale per block of an axis: with one block per row, it
// quantizes each token's row over its own scale in one pass over the activation, on all of
// onnxruntime's threads (per-token-int8.ts). Exports are stamped with older opsets and a model has
// one ai.onnx opset for all its nodes, so the rewrite raises it, converting the few nodes whose form
// changed on the way (the ONNX changelog, opsets 13 to 21):
//   - the reductions other than ReduceSum take their axes as an input from 18 on (an attribute before);
//   - Split without `split` lengths needs `num_outputs` from 18 on (13 splits evenly by the outputs);
//   - RoiAlign (16), GridSample and DFT (20) and GroupNormalization (21) changed what they compute:
//     a model using one stays where it is (as does one with subgraphs, model-local functions or an
//     opset under 13), and its products quantize their rows with a Div and a tensor-wide QuantizeLinear.
// Every other change between 13 and 21 adds types, attributes with defaults that keep the old
// behaviour, or optional inputs.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';

type ModelProto = OnnxTypes.IModelProto;
type NodeProto = OnnxTypes.INodeProto;

/** The first opset whose QuantizeLinear takes a scale per block (`block_size`). */
export const BLOCKED_QUANTIZE_OPSET = 21;

/** The model's ai.onnx opset (17 when it names none: what the exports this reads are stamped). */
export function aiOnnxOpset(model: ModelProto): number {
  return Number((model.opsetImport ?? []).find((o) => !o.domain || o.domain === 'ai.onnx')?.version ?? 17);
}

/** Reductions whose axes move from an attribute to an input at opset 18 (ReduceSum did at 13). */
const AXES_TO_INPUT = new Set([
  'ReduceL1',
  'ReduceL2',
  'ReduceLogSum',
  'ReduceLogSumExp',
  'ReduceMax',
  'ReduceMean',
  'ReduceMin',
  'ReduceProd',
  'ReduceSumSquare',
]);

/** Operators whose result changed at this opset: a model reading one under it is not raised past it. */
const CHANGED_AT: Record<string, number> = { RoiAlign: 16, GridSample: 20, DFT: 20, GroupNormalization: 21 };

const aiOnnx = (n: NodeProto) => !n.domain || n.domain === 'ai.onnx';

/**
 * Raises the model's ai.onnx opset to `BLOCKED_QUANTIZE_OPSET` in place, converting the nodes whose
 * form changed. False, and the model untouched, where that cannot be done with the same meaning.
 */
export function raiseOpset(model: ModelProto): boolean {
  const from = aiOnnxOpset(model);
  if (from >= BLOCKED_QUANTIZE_OPSET) return true;
  const graph = model.graph!;
  const nodes = graph.node ?? [];
  if (from < 13 || (model.functions ?? []).length > 0) return false;
  for (const n of nodes) {
    const subgraph = (n.attribute ?? []).some((a) => a.type === AttributeType.GRAPH || a.type === AttributeType.GRAPHS);
    if (subgraph || (aiOnnx(n) && from < (CHANGED_AT[n.opType!] ?? 0))) return false;
  }
  const added: OnnxTypes.ITensorProto[] = [];
  const names = new Set([
    ...(graph.initializer ?? []).map((t) => t.name!),
    ...(graph.input ?? []).map((i) => i.name!),
    ...nodes.flatMap((n) => n.output ?? []),
  ]);
  for (const n of nodes) {
    if (!aiOnnx(n) || from >= 18) continue;
    const attributes = n.attribute ?? [];
    if (AXES_TO_INPUT.has(n.opType!)) {
      const axes = attributes.find((a) => a.name === 'axes');
      if (!axes) continue; // no axes: every axis, at 13 as at 18
      let name = `${n.name || n.output![0]}/axes`;
      while (names.has(name)) name += '_';
      names.add(name);
      added.push({ name, dataType: DataType.INT64, dims: [(axes.ints ?? []).length], int64Data: axes.ints ?? [] });
      n.attribute = attributes.filter((a) => a !== axes);
      n.input = [n.input![0]!, name];
    } else if (n.opType === 'Split' && !n.input?.[1] && !attributes.some((a) => a.name === 'num_outputs')) {
      n.attribute = [...attributes, { name: 'num_outputs', type: AttributeType.INT, i: n.output!.length }];
    }
  }
  graph.initializer = [...(graph.initializer ?? []), ...added];
  model.opsetImport = [
    ...(model.opsetImport ?? []).filter((o) => o.domain && o.domain !== 'ai.onnx'),
    { domain: '', version: BLOCKED_QUANTIZE_OPSET },
  ];
  // IR version 10 is the one that goes with opset 21.
  if (Number(model.irVersion ?? 0) < 10) model.irVersion = 10;
  return true;
}
