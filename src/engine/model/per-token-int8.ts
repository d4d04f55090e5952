// The per-token int8 matrix product: ONNX nodes computing x · W for an fp32 activation x [..., M, K]
// and an int8 weight W [K, N], where each row (token) of x is quantized with its own scale.
//
// A dynamic int8 export (onnxruntime's quantize_dynamic: DynamicQuantizeLinear + MatMulInteger, or
// its fused DynamicQuantizeMatMul) quantizes a whole activation tensor with one scale and zero point,
// so a token's numbers depend on every other token of the pass. Here a row's quantized values depend
// on that row alone, and the integer product is exact, so a token's result is the same whatever
// shares its pass. Each row gets what DynamicQuantizeLinear gives the tensor, over its own range:
//
//   lo, hi = min(min x_row, 0), max(max x_row, 0)                ReduceMin / ReduceMax      [..., M, 1]
//   s_row  = (hi − lo) / 255,  z_row = round(−lo / s_row)        256 levels, 0 exactly one of them
//   q      = QuantizeLinear(x / s_row + z_row, scale 1, zp 0)    uint8
//   P      = MatMulIntegerToFloat(q, W, 1, w_scale, 0, w_zp)     com.microsoft: exact int32 sums × w_scale
//   y      = (P − z_row · c) · s_row,   c[n] = w_scale[n] · Σ_k (W[k, n] − w_zp[n])   (c: at load)
//
// A row's range lies inside the tensor's, so its step is never coarser than the per-tensor form's.
// The kernel's activation zero point is a scalar, so each row's is taken out after the product with
// the weight's column sums, and its scale is one multiply of the output. The integer kernel is the
// one the exports run (u8 × s8, or the exact u8 × u8 form under `session.x64quantprecision`,
// cpu.ts). The quantization of an activation is shared by every product that reads it (q, k and v;
// gate and up), as quantize_dynamic shares its DynamicQuantizeLinear.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';

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
  unsignedZero: string;

  one: string;
  lastAxis: string;
  first: string;
  second: string;
}

/** The quantized rows of an activation, shared by the products that read it. */
interface QuantizedRows {
  quantized: string;
  rowScale: string;
  /** Each row's zero point (float, an integer in [0, 255]). */
  zeroPoint: string;
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
    /** The graph's initializers by name (the weights, their scales and zero points are read from them). */
    private readonly initializer: (name: string) => TensorProto | undefined = () => undefined,
  ) {}

  /** Adds the nodes of one product; returns the nodes added by this call (also kept in `nodes`). */
  matMul(m: PerTokenMatMul): NodeProto[] {
    const start = this.nodes.length;
    const rows = this.quantizeRows(m.input);
    const c = this.shared();
    const product = `${m.prefix}/per_token_product`;
    // Σ_k (q_k − z) w_k = Σ_k q_k w_k − z · Σ_k w_k: the kernel takes the first sum with activation
    // zero point 0; the weight's column sums (× its scales) are computed here, once, at load.
    this.node(
      'MatMulIntegerToFloat',
      [rows.quantized, m.weight, c.one, m.weightScale, c.unsignedZero, m.weightZeroPoint ?? ''],
      product,
      [],
      'com.microsoft',
    );
    const columnSums = `${m.prefix}/per_token_column_sums`;
    this.initializers.push(this.columnSums(m, columnSums));
    this.node('Mul', [rows.zeroPoint, columnSums], `${m.prefix}/per_token_offset`);
    this.node('Sub', [product, `${m.prefix}/per_token_offset`], `${m.prefix}/per_token_centered`);
    this.node('Mul', [`${m.prefix}/per_token_centered`, rows.rowScale], m.output);
    return this.nodes.slice(start);
  }

  /**
   * Each row over its own [min, max] (0 included, so zero is a level): 256 levels, a zero point per
   * row. A row's step is never coarser than the per-tensor form's, which spans every row's range.
   */
  private quantizeRows(input: string): QuantizedRows {
    const known = this.rows.get(input);
    if (known) return known;
    const c = this.shared();
    const p = `${this.namespace}/${input.replace(/[^A-Za-z0-9_.]+/g, '_')}`;
    const reduce = (op: string, out: string) => {
      if (this.opset >= 18) this.node(op, [input, c.lastAxis], `${out}_reduced`, [int('keepdims', 1)]);
      else this.node(op, [input], `${out}_reduced`, [ints('axes', [-1]), int('keepdims', 1)]);
      this.node('Slice', [`${out}_reduced`, c.first, c.second, c.lastAxis], out);
    };
    reduce('ReduceMax', `${p}/max`);
    reduce('ReduceMin', `${p}/min`);
    const zero = this.scalar(`${this.namespace}/float_zero`, 0);
    this.node('Max', [`${p}/max`, zero], `${p}/high`);
    this.node('Min', [`${p}/min`, zero], `${p}/low`);
    this.node('Sub', [`${p}/high`, `${p}/low`], `${p}/range`);
    // A row of zeros: any positive range keeps 255 / range finite and quantizes it to its zero point.
    this.node('Max', [`${p}/range`, this.scalar(`${this.namespace}/smallest_range`, 1e-30)], `${p}/range_nonzero`);
    const levels = this.scalar(`${this.namespace}/levels_255`, 255);
    this.node('Div', [`${p}/range_nonzero`, levels], `${p}/row_scale`);
    this.node('Div', [levels, `${p}/range_nonzero`], `${p}/row_inverse`);
    // z = round(−low / s): an integer in [0, 255], kept as float.
    this.node('Mul', [`${p}/low`, `${p}/row_inverse`], `${p}/low_scaled`);
    this.node('Neg', [`${p}/low_scaled`], `${p}/zero_unrounded`);
    this.node('Round', [`${p}/zero_unrounded`], `${p}/zero_point`);
    this.node('Mul', [input, `${p}/row_inverse`], `${p}/scaled`);
    this.node('Add', [`${p}/scaled`, `${p}/zero_point`], `${p}/shifted`);
    this.node('QuantizeLinear', [`${p}/shifted`, c.one, c.unsignedZero], `${p}/quantized`);
    const rows = { quantized: `${p}/quantized`, rowScale: `${p}/row_scale`, zeroPoint: `${p}/zero_point` };
    this.rows.set(input, rows);
    return rows;
  }

  /** w_scale[n] · Σ_k (W[k, n] − w_zp[n]), float32 [N], from the weight's initializers. */
  private columnSums(m: PerTokenMatMul, name: string): TensorProto {
    const tensor = (n: string) => {
      const t = this.initializer(n);
      if (!t) throw new Error(`per-token int8: initializer ${n} not found`);
      return t;
    };
    const w = tensor(m.weight);
    const [K, N] = (w.dims ?? []).map(Number) as [number, number];
    const weight = integers(w);
    const scale = floats(tensor(m.weightScale));
    const zeroPoint = m.weightZeroPoint ? integers(tensor(m.weightZeroPoint)) : [0];
    const sums = new Float64Array(N);
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) sums[n]! += weight[k * N + n]!;
    const out = new Float32Array(N);
    for (let n = 0; n < N; n++) {
      const zp = zeroPoint.length === 1 ? zeroPoint[0]! : zeroPoint[n]!;
      out[n] = (sums[n]! - K * zp) * (scale.length === 1 ? scale[0]! : scale[n]!);
    }
    return { name, dataType: DataType.FLOAT, dims: [N], rawData: new Uint8Array(out.buffer) };
  }

  private shared(): Constants {
    if (this.constants) return this.constants;
    const n = this.namespace;
    this.initializers.push({ name: `${n}/u8_zero`, dataType: DataType.UINT8, dims: [], rawData: Uint8Array.of(0) });
    this.constants = {
      unsignedZero: `${n}/u8_zero`,

      one: this.scalar(`${n}/one`, 1),
      lastAxis: this.int64s(`${n}/last_axis`, -1),
      first: this.int64s(`${n}/first`, 0),
      second: this.int64s(`${n}/second`, 1),
    };
    return this.constants;
  }

  private int64s(name: string, value: number): string {
    this.initializers.push({ name, dataType: DataType.INT64, dims: [1], int64Data: [value] });
    return name;
  }

  private scalar(name: string, value: number): string {
    if (!this.initializers.some((t) => t.name === name))
      this.initializers.push({ name, dataType: DataType.FLOAT, dims: [], floatData: [value] });
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

/** An int8 or uint8 tensor's values. */
function integers(t: TensorProto): ArrayLike<number> {
  if (t.rawData && t.rawData.byteLength > 0) {
    const raw = t.rawData;
    return t.dataType === DataType.UINT8 ? raw : new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  }
  return t.int32Data ?? [];
}

/** A float32 tensor's values. */
function floats(t: TensorProto): ArrayLike<number> {
  if (t.rawData && t.rawData.byteLength > 0) {
    const raw = new Uint8Array(t.rawData);
    return new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4);
  }
  return t.floatData ?? [];
}

function int(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INT, i };
}

function ints(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INTS, ints: values };
}
