// A product with a constant weight, dynamically quantized to int8 the way onnxruntime's
// quantize_dynamic writes it: the activation to uint8 per tensor at run time
// (DynamicQuantizeLinear), the weight to int8 symmetric per tensor (scale max|W| / 127, zero point
// 0), MatMulInteger → Cast → × (activation scale · weight scale). onnxruntime fuses the pattern
// into DynamicQuantizeMatMul. Shared by the synthetic decoders and the tools' encoder replicas.
import { DataType, type GraphBuilder } from '../onnx/graph-builder.js';
import { quantizeSymmetric } from './random.js';

/** DynamicQuantizeLinear outputs (quantized, scale, zero point) per activation name. */
export type DynamicQuantized = Map<string, [string, string, string]>;

/**
 * How a DynamicQuantizeLinear's outputs are named: after the activation, `<x>_quantized`,
 * `<x>_scale`, `<x>_zero_point`, as quantize_dynamic names them; or `fresh` builder names (the
 * NLI replica's graphs were written so, and keep their bytes).
 */
export type QuantizedNames = 'activation' | 'fresh';

/**
 * x · W for the constant `w` [inDim, outDim] (row-major, as the graph's MatMul reads it), stored
 * as `<name>_quantized`, `<name>_scale` and `<name>_zero_point`. An activation quantized before
 * (its entry in `dql`) is reused, as quantize_dynamic shares one DynamicQuantizeLinear among the
 * products that read the same tensor.
 */
export function int8Product(
  g: GraphBuilder,
  x: string,
  name: string,
  w: Float32Array,
  dims: [number, number],
  dql: DynamicQuantized,
  names: QuantizedNames = 'activation',
): string {
  const { q, scale } = quantizeSymmetric(w);
  const wq = g.initializer(`${name}_quantized`, DataType.INT8, dims, q);
  const ws = g.initializer(`${name}_scale`, DataType.FLOAT, [], Float32Array.of(scale));
  const wzp = g.initializer(`${name}_zero_point`, DataType.INT8, [], Int8Array.of(0));
  let dq = dql.get(x);
  if (!dq) {
    const outs = g.node('DynamicQuantizeLinear', [x], {
      outputs: names === 'fresh' ? 3 : [`${x}_quantized`, `${x}_scale`, `${x}_zero_point`],
    });
    dq = [outs[0]!, outs[1]!, outs[2]!];
    dql.set(x, dq);
  }
  const mi = g.op('MatMulInteger', [dq[0], wq, dq[2], wzp]);
  const cast = g.op('Cast', [mi], { to: { i: DataType.FLOAT } });
  const sc = g.op('Mul', [dq[1], ws]);
  return g.op('Mul', [cast, sc]);
}
