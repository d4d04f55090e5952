// The per-token int8 matrix product: ONNX nodes computing x · W for an fp32 activation x [..., M, K]
// and an int8 weight W [K, N], where each row (token) of x is quantized with its own scale.
//
// A dynamic int8 export (onnxruntime's quantize_dynamic: DynamicQuantizeLinear + MatMulInteger, or
// its fused DynamicQuantizeMatMul) quantizes a whole activation tensor with one scale, so a token's
// numbers depend on every other token of the pass. Here a row's quantized values depend on that row
// alone, and the integer product is exact, so a token's result is the same whatever shares its pass:
//
//   s_row = max(|x_row|) / 127                                  ReduceMax(Abs(x)), keepdims  [..., M, 1]
//   q     = QuantizeLinear(x · (1 / s_row), scale 1, zp 128)    uint8, |x · 1/s| ≤ 127 so no clamp
//   y     = MatMulIntegerToFloat(q, W, 1, w_scale, 128, w_zp)   com.microsoft: exact int32 sums, × w_scale
//         · s_row                                                                            [..., M, N]
//
// Symmetric per-row scales with a fixed zero point keep onnxruntime's u8 × s8 GEMM (and its exact
// u8 × u8 form under `session.x64quantprecision`, cpu.ts): the integer kernel is the one today's
// exports run. (int8 activations with zero point 0 would be exact on AVX2 without that setting, but
// onnxruntime's s8 × s8 GEMM runs about 5× slower there, and the setting refuses s8 activations.)
// The per-row scale cannot go into the kernel (its activation scale is a scalar), so it is one
// multiply of the output. The quantization of an activation is shared by every product that
// reads it (q, k and v; gate and up), as quantize_dynamic shares its DynamicQuantizeLinear.
import type { onnx as OnnxTypes } from 'onnx-proto';

const FLOAT = 1;
const UINT8 = 2;
const INT64 = 7;

export type NodeProto = OnnxTypes.INodeProto;
export type TensorProto = OnnxTypes.ITensorProto;

/** One matrix product to emit. */
export interface PerTokenMatMul {
  /** The fp32 activation [..., K]. */
  input: string;
  /** An int8 (or uint8) initializer [K, N], quantized per output channel or per tensor. */
  weight: string;
  /** Its fp32 scales: a scalar or [N]. */
  weightScale: string;
  /** Its zero points (the weight's type): a scalar or [N]; omitted: 0. */
  weightZeroPoint?: string;
  /** The fp32 result [..., N]. */
  output: string;
  /** Prefix of every node, tensor and initializer name emitted (unique per product). */
  prefix: string;
}

/** What to add to the graph: nodes in a valid order (after the producer of `input`), and initializers. */
export interface PerTokenNodes {
  nodes: NodeProto[];
  initializers: TensorProto[];
}

interface Constants {
  zero: string;
  one: string;
  limit: string;
  lastAxis: string;
  first: string;
  second: string;
}

/** The quantized rows of an activation, shared by the products that read it. */
interface QuantizedRows {
  quantized: string;
  rowScale: string;
}

/**
 * Emits the per-token products into `out`. `opset` is the model's ai.onnx opset (ReduceMax takes
 * its axes as an input from 18 on); `shared` carries each activation's quantization across calls
 * (pass the same map for every product of one graph, so q/k/v quantize their input once).
 */
export class PerTokenInt8 {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly rows = new Map<string, QuantizedRows>();
  private constants: Constants | undefined;

  constructor(
    private readonly opset: number,
    /** Prefix of the constants shared by every product. */
    private readonly namespace = 'assay/per_token',
  ) {}

  /** Adds the nodes of one product; returns the nodes added by this call (also kept in `nodes`). */
  matMul(m: PerTokenMatMul): NodeProto[] {
    const start = this.nodes.length;
    const { quantized, rowScale } = this.quantizeRows(m.input);
    const c = this.shared();
    const product = `${m.prefix}/per_token_product`;
    this.node(
      'MatMulIntegerToFloat',
      [quantized, m.weight, c.one, m.weightScale, c.zero, m.weightZeroPoint ?? ''],
      product,
      [],
      'com.microsoft',
    );
    this.node('Mul', [product, rowScale], m.output);
    return this.nodes.slice(start);
  }

  /** max |x| per row, and the rows quantized symmetrically around 128. */
  private quantizeRows(input: string): QuantizedRows {
    const known = this.rows.get(input);
    if (known) return known;
    const c = this.shared();
    const p = `${this.namespace}/${input.replace(/[^A-Za-z0-9_.]+/g, '_')}`;
    this.node('Abs', [input], `${p}/abs`);
    if (this.opset >= 18) this.node('ReduceMax', [`${p}/abs`, c.lastAxis], `${p}/absmax_reduced`, [int('keepdims', 1)]);
    else this.node('ReduceMax', [`${p}/abs`], `${p}/absmax_reduced`, [ints('axes', [-1]), int('keepdims', 1)]);
    // onnxruntime's reductions return an empty input's own shape ([1, 0, K], not [1, 0, 1]): a pass
    // that reads no position gives the head no rows. The first column is the reduction either way.
    this.node('Slice', [`${p}/absmax_reduced`, c.first, c.second, c.lastAxis], `${p}/absmax`);
    // A row of zeros gets scale 0 and quantizes to 128 (zero): max() only keeps 1/s finite.
    this.node('Max', [`${p}/absmax`, c.limit], `${p}/absmax_nonzero`);
    this.node('Div', [`${p}/absmax_nonzero`, this.scalar(`${this.namespace}/levels`, 127)], `${p}/row_scale_nonzero`);
    this.node('Div', [this.scalar(`${this.namespace}/levels`, 127), `${p}/absmax_nonzero`], `${p}/row_inverse`);
    this.node('Mul', [input, `${p}/row_inverse`], `${p}/scaled`);
    this.node('QuantizeLinear', [`${p}/scaled`, c.one, c.zero], `${p}/quantized`);
    const rows = { quantized: `${p}/quantized`, rowScale: `${p}/row_scale_nonzero` };
    this.rows.set(input, rows);
    return rows;
  }

  private shared(): Constants {
    if (this.constants) return this.constants;
    const n = this.namespace;
    this.initializers.push({ name: `${n}/zero_point`, dataType: UINT8, dims: [], rawData: Uint8Array.of(128) });
    this.constants = {
      zero: `${n}/zero_point`,
      one: this.scalar(`${n}/one`, 1),
      // The smallest normal float32: any row with a nonzero value has a larger max.
      limit: this.scalar(`${n}/smallest`, 1.1754943508222875e-38),
      lastAxis: this.int64s(`${n}/last_axis`, -1),
      first: this.int64s(`${n}/first`, 0),
      second: this.int64s(`${n}/second`, 1),
    };
    return this.constants;
  }

  private int64s(name: string, value: number): string {
    this.initializers.push({ name, dataType: INT64, dims: [1], int64Data: [value] });
    return name;
  }

  private scalar(name: string, value: number): string {
    if (!this.initializers.some((t) => t.name === name))
      this.initializers.push({ name, dataType: FLOAT, dims: [], floatData: [value] });
    return name;
  }

  private node(
    opType: string,
    input: string[],
    output: string,
    attribute: OnnxTypes.IAttributeProto[] = [],
    domain?: string,
  ): void {
    // Trailing empty optional inputs are dropped (an empty name in the middle means "absent").
    while (input.length > 0 && input[input.length - 1] === '') input.pop();
    this.nodes.push({ opType, input, output: [output], name: output, attribute, ...(domain ? { domain } : {}) });
  }
}

/** One product and its activation's quantization, on its own (no sharing): the simplest call. */
export function perTokenInt8MatMul(m: PerTokenMatMul, opset: number): PerTokenNodes {
  const b = new PerTokenInt8(opset, `${m.prefix}/per_token`);
  b.matMul(m);
  return { nodes: b.nodes, initializers: b.initializers };
}

function int(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: 2, i };
}

function ints(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: 7, ints: values };
}
