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
//   q      = QuantizeLinear(x, s_row, z_row) along the rows      uint8 [..., M, K]
//   y      = s_row · w_scale · Σ_k (q_k − z_row) · (W_k − w_zp)  exact int32 sums, then two scales
//
// A row's range lies inside the tensor's, so its step is never coarser than the per-tensor form's.
//
// The whole of y is one MatMulIntegerToFloat: onnxruntime's integer GEMM takes one activation zero
// point for all rows, so each row's own is folded into the product. The row is extended by J columns
// holding z_row, and the weight by J rows whose entries sum, per column, to −Σ_k (W_k − w_zp) (the
// column sum, computed here at load), so the extra terms add exactly −z_row · Σ_k (W_k − w_zp):
//
//   [q | z … z] · [W ; D] = Σ_k q_k W_k − z_row · Σ_k W_k          (w_zp = 0 shown)
//
// J = ⌈max_n |Σ_k W_k,n| / L⌉ rows with |D| ≤ L = 127, the most any product reading the activation
// needs (the others' D is padded with rows of w_zp, which add nothing); one extension serves them
// all. A weight whose bytes are in the graph, read by this product alone, takes D in place (the
// graph grows by J rows). An external one keeps its file and D is a small new initializer, joined
// by a Concat that onnxruntime folds into one constant at session creation; the joined copy then
// sits in memory beside the mapped file (measured on the 0.5b int8 shape: about +150 MB resident).
// The row scale is the kernel's activation scale given per row ([..., M, 1]): the kernel
// applies it to its output in place. The rows are quantized along axis −2 in one pass, which takes
// the rows of one sequence: the engine's passes have batch 1, and a batch of several would be
// refused by onnxruntime (a scale per row of every batch does not match that axis), not mixed.
//
// The integer kernel is the one the exports run (u8 × s8, or the exact u8 × u8 form under
// `session.x64quantprecision`, cpu.ts).
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';

export type NodeProto = OnnxTypes.INodeProto;
export type TensorProto = OnnxTypes.ITensorProto;

/** One matrix product to emit. */
export interface PerTokenMatMul {
  /** The fp32 activation [..., M, K]. */
  input: string;
  /** An int8 initializer [K, N], quantized per output channel or per tensor. */
  weight: string;
  /** Its fp32 scales: a scalar or [N]. */
  weightScale: string;
  /** Its zero points (int8): a scalar or [N]; omitted: 0. */
  weightZeroPoint?: string;
  /** The fp32 result [..., M, N]. */
  output: string;
  /** Prefix of every node, tensor and initializer name emitted (unique per product). */
  prefix: string;
  /**
   * The weight's initializer (as `initializer` returns it) holds its bytes and is read by this
   * product only: its correction rows are appended to it in place. Otherwise (external data, other
   * readers) a Concat joins them, which onnxruntime folds at session creation, at the price of
   * holding the joined copy in memory besides what it maps.
   */
  extendInPlace?: boolean;
}

/** A product's correction rows before they are padded to its activation's J. */
interface Correction {
  name: string;
  /** The weight to extend in place, if so. */
  weight?: TensorProto;
  N: number;
  /** Rows × N, row-major. */
  rows: Int8Array;
  /** The weight's zero point per column (padding rows hold it: they add nothing). */
  zeroPoints: (n: number) => number;
}

/** An activation read by per-token products: the names its nodes define, and the rows its products need. */
interface Activation {
  prefix: string;
  corrections: Correction[];
}

/** Largest |entry| of the rows that carry the zero-point correction, unless the caller asks for less. */
const INT8_LEVELS = 127;

/**
 * Emits per-token products: `matMul` for each product (its nodes, returned to take the place of the
 * export's), then `finish` once, which adds the nodes that quantize each activation (after its
 * producer, before the products: the caller orders the graph) and every initializer. `opset` is the
 * model's ai.onnx opset (ReduceMax takes its axes as an input from 18 on).
 */
export class PerTokenInt8 {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly activations = new Map<string, Activation>();
  private readonly names = new Set<string>();

  constructor(
    private readonly opset: number,
    /** Prefix of the constants shared by every product. */
    private readonly namespace = 'assay/per_token',
    /** The graph's initializers by name (the weights, their scales and zero points are read from them). */
    private readonly initializer: (name: string) => TensorProto | undefined = () => undefined,
    /**
     * Largest |entry| of the correction rows. Where the fast u8 × s8 kernel runs without the exact
     * setting on a CPU whose pair sums saturate, |entries| ≤ 64 keep them exact (255 · 64 · 2 < 2¹⁵).
     */
    private readonly levels = INT8_LEVELS,
  ) {}

  /**
   * The nodes of one product (also kept in `nodes`), or undefined, with nothing added, where the
   * weight's zero point leaves no room for the correction.
   */
  matMul(m: PerTokenMatMul): NodeProto[] | undefined {
    const correction = this.correction(m, `${m.prefix}/per_token_zero_point_rows`);
    if (!correction) return undefined;
    const activation = this.activation(m.input);
    activation.corrections.push(correction);
    const start = this.nodes.length;
    let weight = m.weight;
    if (m.extendInPlace) correction.weight = this.initializer(m.weight);
    else {
      weight = `${m.prefix}/per_token_weight`;
      this.node('Concat', [m.weight, correction.name], weight, [int('axis', 0)]);
    }
    this.node(
      'MatMulIntegerToFloat',
      [
        `${activation.prefix}/rows`,
        weight,
        `${activation.prefix}/row_scale`,
        m.weightScale,
        this.unsignedZero(),
        m.weightZeroPoint ?? '',
      ],
      m.output,
      [],
      'com.microsoft',
    );
    return this.nodes.slice(start);
  }

  /** The nodes quantizing each activation and the initializers, once every product is added. */
  finish(): { nodes: NodeProto[]; initializers: TensorProto[] } {
    const start = this.nodes.length;
    for (const [input, activation] of this.activations) {
      const J = Math.max(...activation.corrections.map((c) => c.rows.length / c.N));
      for (const c of activation.corrections) {
        const rows = padded(c, J);
        if (c.weight) appendRows(c.weight, rows);
        else this.initializers.push(rows);
      }
      this.quantizeRows(input, activation.prefix, J);
    }
    return { nodes: this.nodes.slice(start), initializers: this.initializers };
  }

  private activation(input: string): Activation {
    let a = this.activations.get(input);
    if (!a) {
      a = { prefix: `${this.namespace}/${input.replace(/[^A-Za-z0-9_.]+/g, '_')}`, corrections: [] };
      this.activations.set(input, a);
    }
    return a;
  }

  /**
   * Each row over its own [min, max] (0 included, so zero is a level): 256 levels, a zero point per
   * row; then J copies of the zero point after each row (`<prefix>/rows`, uint8 [..., M, K + J]).
   */
  private quantizeRows(input: string, p: string, J: number): void {
    const lastAxis = this.int64s(`${this.namespace}/last_axis`, [-1]);
    const reduce = (op: string, out: string) => {
      if (this.opset >= 18) this.node(op, [input, lastAxis], `${out}_reduced`, [int('keepdims', 1)]);
      else this.node(op, [input], `${out}_reduced`, [ints('axes', [-1]), int('keepdims', 1)]);
      // onnxruntime reduces an empty pass (no rows) to the input's shape: keep [..., 0, 1].
      const [first, second] = [
        this.int64s(`${this.namespace}/first`, [0]),
        this.int64s(`${this.namespace}/second`, [1]),
      ];
      this.node('Slice', [`${out}_reduced`, first, second, lastAxis], out);
    };
    reduce('ReduceMax', `${p}/max`);
    reduce('ReduceMin', `${p}/min`);
    const zero = this.scalar(`${this.namespace}/float_zero`, 0);
    this.node('Max', [`${p}/max`, zero], `${p}/high`);
    this.node('Neg', [`${p}/min`], `${p}/negated_min`);
    this.node('Max', [`${p}/negated_min`, zero], `${p}/negated_low`);
    this.node('Add', [`${p}/high`, `${p}/negated_low`], `${p}/range`);
    // A row of zeros: any positive range keeps the scale finite and quantizes it to its zero point.
    this.node('Max', [`${p}/range`, this.scalar(`${this.namespace}/smallest_range`, 1e-30)], `${p}/range_nonzero`);
    this.node('Div', [`${p}/range_nonzero`, this.scalar(`${this.namespace}/levels_255`, 255)], `${p}/row_scale`);
    const flat = this.int64s(`${this.namespace}/flat`, [-1]);
    this.node('Reshape', [`${p}/row_scale`, flat], `${p}/row_scale_flat`);
    // z = round(−low / s), saturated to uint8 (it lies in [0, 255]): QuantizeLinear computes exactly that.
    this.node('QuantizeLinear', [`${p}/negated_low`, `${p}/row_scale_flat`], `${p}/zero_point`, [int('axis', -2)]);
    this.node('Reshape', [`${p}/zero_point`, flat], `${p}/zero_point_flat`);
    this.node('QuantizeLinear', [input, `${p}/row_scale_flat`, `${p}/zero_point_flat`], `${p}/quantized`, [
      int('axis', -2),
    ]);
    this.node(
      'Expand',
      [`${p}/zero_point`, this.int64s(`${this.namespace}/columns_${J}`, [1, J])],
      `${p}/zero_columns`,
    );
    this.node('Concat', [`${p}/quantized`, `${p}/zero_columns`], `${p}/rows`, [int('axis', -1)]);
  }

  /**
   * The rows D [J, N] (the weight's type) appended to the weight so that, against J activation
   * columns holding the row's zero point z, they add −z · Σ_k (W[k, n] − w_zp[n]): each column of
   * D − w_zp sums to minus the weight's column sum, in steps of at most `levels`.
   */
  private correction(m: PerTokenMatMul, name: string): Correction | undefined {
    const tensor = (n: string) => {
      const t = this.initializer(n);
      if (!t) throw new Error(`per-token int8: initializer ${n} not found`);
      return t;
    };
    const w = tensor(m.weight);
    const [K, N] = (w.dims ?? []).map(Number) as [number, number];
    const weight = integers(w);
    const zeroPoints = m.weightZeroPoint ? integers(tensor(m.weightZeroPoint)) : [0];
    const zp = (n: number) => (zeroPoints.length === 1 ? zeroPoints[0]! : zeroPoints[n]!);
    const sums = new Float64Array(N);
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) sums[n]! += weight[k * N + n]!;
    // Per column: the step toward −sum that int8 allows around its zero point.
    const step = new Float64Array(N);
    let J = 1;
    for (let n = 0; n < N; n++) {
      sums[n]! -= K * zp(n);
      step[n] = Math.min(this.levels, sums[n]! > 0 ? 128 + zp(n) : 127 - zp(n));
      if (sums[n] !== 0 && step[n]! < 1) return undefined;
      if (sums[n] !== 0) J = Math.max(J, Math.ceil(Math.abs(sums[n]!) / step[n]!));
    }
    const rows = new Int8Array(J * N);
    for (let n = 0; n < N; n++) {
      let rest = -sums[n]!;
      for (let j = 0; j < J; j++) {
        const d = Math.max(-step[n]!, Math.min(step[n]!, rest));
        rows[j * N + n] = zp(n) + d;
        rest -= d;
      }
    }
    return { name, N, rows, zeroPoints: zp };
  }

  private unsignedZero(): string {
    const name = `${this.namespace}/u8_zero`;
    if (this.fresh(name))
      this.initializers.push({ name, dataType: DataType.UINT8, dims: [], rawData: Uint8Array.of(0) });
    return name;
  }

  private int64s(name: string, values: number[]): string {
    if (this.fresh(name))
      this.initializers.push({ name, dataType: DataType.INT64, dims: [values.length], int64Data: values });
    return name;
  }

  private scalar(name: string, value: number): string {
    if (this.fresh(name)) this.initializers.push({ name, dataType: DataType.FLOAT, dims: [], floatData: [value] });
    return name;
  }

  /** Whether a shared constant is not yet among the initializers (and marks it as there). */
  private fresh(name: string): boolean {
    if (this.names.has(name)) return false;
    this.names.add(name);
    return true;
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

/** Appends int8 rows [J, N] to an inline int8 weight [K, N]: [K + J, N]. */
function appendRows(weight: TensorProto, rows: TensorProto): void {
  const [K, N] = (weight.dims ?? []).map(Number) as [number, number];
  const J = Number(rows.dims![0]);
  const joined = new Uint8Array((K + J) * N);
  joined.set(integerBytes(weight));
  joined.set(rows.rawData!, K * N);
  weight.rawData = joined;
  weight.int32Data = [];
  weight.dims = [K + J, N];
}

/** An int8 tensor's bytes, whether stored raw or widened to int32Data. */
function integerBytes(t: TensorProto): Uint8Array {
  if (t.rawData && t.rawData.byteLength > 0) return t.rawData;
  return new Uint8Array(Int8Array.from(t.int32Data ?? []).buffer);
}

/** A product's correction rows padded to J rows with the weight's zero point (rows that add nothing). */
function padded(c: Correction, J: number): TensorProto {
  const rows = new Int8Array(J * c.N);
  rows.set(c.rows);
  for (let j = c.rows.length / c.N; j < J; j++) for (let n = 0; n < c.N; n++) rows[j * c.N + n] = c.zeroPoints(n);
  return { name: c.name, dataType: DataType.INT8, dims: [J, c.N], rawData: new Uint8Array(rows.buffer) };
}

/** An int8 or uint8 tensor's values. */
function integers(t: TensorProto): ArrayLike<number> {
  if (t.rawData && t.rawData.byteLength > 0) {
    const raw = t.rawData;
    return t.dataType === DataType.UINT8 ? raw : new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength);
  }
  return t.int32Data ?? [];
}

function int(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INT, i };
}

function ints(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INTS, ints: values };
}
