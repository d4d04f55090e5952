// The per-token int8 matrix product: ONNX nodes computing x · W for an fp32 activation x [..., M, K]
// and an int8 weight W [K, N], where each row (token) of x is quantized with its own scale.
//
// A dynamic int8 export (onnxruntime's quantize_dynamic: DynamicQuantizeLinear + MatMulInteger, or
// its fused DynamicQuantizeMatMul) quantizes a whole activation tensor with one scale and zero point,
// so a token's numbers depend on every other token of the pass. Here a row's quantized values depend
// on that row alone, and the integer product is exact, so a token's result is the same whatever
// shares its pass. Each row gets what DynamicQuantizeLinear gives the tensor, over its own range:
//
//   lo, hi = min(min x_row, 0), max(max x_row, 0)                ReduceMin / ReduceMax      [R, 1]
//   s_row  = (hi − lo) / 255,  z_row = round(−lo / s_row)        256 levels, 0 exactly one of them
//   q      = QuantizeLinear(x, s_row, z_row), per row            uint8 [R, K]
//   y      = s_row · w_scale · Σ_k (q_k − z_row) · (W_k − w_zp)  exact int32 sums, then two scales
//
// with x seen as R = M·(batch) rows of K. A row's range lies inside the tensor's, so its step is
// never coarser than the per-tensor form's.
//
// The whole of y is one MatMulIntegerToFloat: onnxruntime's integer GEMM takes one activation zero
// point for all rows, so each row's own is folded into the product itself. The row is extended by J
// columns holding z_row, and the weight by J rows whose entries sum, per column, to −Σ_k (W_k − w_zp)
// (the column sum, computed here at load), so the extra terms add exactly −z_row · Σ_k (W_k − w_zp):
//
//   [q | z … z] · [W ; D] = Σ_k q_k W_k − z_row · Σ_k W_k          (w_zp = 0 shown)
//
// J = ⌈max_n |Σ_k W_k,n| / L⌉ rows with |D| ≤ L = 127 adds J of K + J terms to each sum: under 3%
// at the 0.5B shapes. The weight keeps its
// initializer and D is a small new one; a Concat node joins them, which onnxruntime folds into one
// constant at session creation (then prepacks it as it does the export's weight). The row scale is
// the kernel's activation scale given per row ([R, 1]): the kernel applies it to its output in place.
// So the work added to the export's form is one more read of x (min and max are two reductions),
// a copy of the uint8 rows with their J columns, and one in-place pass over the output.
//
// The integer kernel is the one the exports run (u8 × s8, or the exact u8 × u8 form under
// `session.x64quantprecision`, cpu.ts). The quantization of an activation is shared by every
// product that reads it (q, k and v; gate and up), as quantize_dynamic shares its
// DynamicQuantizeLinear.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';

export type NodeProto = OnnxTypes.INodeProto;
export type TensorProto = OnnxTypes.ITensorProto;

/** One matrix product to emit. */
export interface PerTokenMatMul {
  /** The fp32 activation [..., K]. */
  input: string;
  /** An int8 initializer [K, N], quantized per output channel or per tensor. */
  weight: string;
  /** Its fp32 scales: a scalar or [N]. */
  weightScale: string;
  /** Its zero points (int8): a scalar or [N]; omitted: 0. */
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

/** The quantized rows of an activation, shared by the products that read it. */
interface QuantizedRows {
  /** uint8, the activation's shape. */
  quantized: string;
  /** float [..., M, 1]. */
  rowScale: string;
  /** uint8 [..., M, 1]: each row's zero point. */
  zeroPoint: string;
}

/** Largest |entry| of the rows that carry the zero-point correction, unless the caller asks for less. */
const INT8_LEVELS = 127;

/**
 * Emits the per-token products into `nodes` and `initializers`. `opset` is the model's ai.onnx
 * opset (ReduceMax takes its axes as an input from 18 on; Reshape has allowzero from 14 on, which
 * the one-pass per-row QuantizeLinear needs); the quantization of each activation is shared by the
 * products that read it (q, k and v quantize their input once).
 */
export class PerTokenInt8 {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly rows = new Map<string, QuantizedRows>();
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
   * Adds the nodes of one product; returns the nodes added by this call (also kept in `nodes`), or
   * undefined, with nothing added, where the weight's zero point leaves no room for the correction.
   */
  matMul(m: PerTokenMatMul): NodeProto[] | undefined {
    const correction = this.correctionRows(m, `${m.prefix}/per_token_zero_point_rows`);
    if (!correction) return undefined;
    const start = this.nodes.length;
    const rows = this.quantizeRows(m.input, correction.K);
    this.initializers.push(correction.tensor);
    const weight = `${m.prefix}/per_token_weight`;
    this.node('Concat', [m.weight, correction.tensor.name!], weight, [int('axis', 0)]);
    const zeros = `${m.prefix}/per_token_zero_point_columns`;
    this.node(
      'Expand',
      [rows.zeroPoint, this.int64s(`${this.namespace}/columns_${correction.rows}`, [1, correction.rows])],
      zeros,
    );
    const extended = `${m.prefix}/per_token_rows`;
    this.node('Concat', [rows.quantized, zeros], extended, [int('axis', -1)]);
    this.node(
      'MatMulIntegerToFloat',
      [extended, weight, rows.rowScale, m.weightScale, this.unsignedZero(), m.weightZeroPoint ?? ''],
      m.output,
      [],
      'com.microsoft',
    );
    return this.nodes.slice(start);
  }

  /**
   * Each row over its own [min, max] (0 included, so zero is a level): 256 levels, a zero point per
   * row. A row's step is never coarser than the per-tensor form's, which spans every row's range.
   */
  private quantizeRows(input: string, K: number): QuantizedRows {
    const known = this.rows.get(input);
    if (known) return known;
    const p = `${this.namespace}/${input.replace(/[^A-Za-z0-9_.]+/g, '_')}`;
    const lastAxis = this.int64s(`${this.namespace}/last_axis`, [-1]);
    const reduce = (op: string, out: string) => {
      if (this.opset >= 18) this.node(op, [input, lastAxis], `${out}_reduced`, [int('keepdims', 1)]);
      else this.node(op, [input], `${out}_reduced`, [ints('axes', [-1]), int('keepdims', 1)]);
      // An empty pass (no rows) must still give [..., 0, 1].
      this.node(
        'Slice',
        [
          `${out}_reduced`,
          this.int64s(`${this.namespace}/first`, [0]),
          this.int64s(`${this.namespace}/second`, [1]),
          lastAxis,
        ],
        out,
      );
    };
    reduce('ReduceMax', `${p}/max`);
    reduce('ReduceMin', `${p}/min`);
    const zero = this.scalar(`${this.namespace}/float_zero`, 0);
    this.node('Max', [`${p}/max`, zero], `${p}/high`);
    this.node('Min', [`${p}/min`, zero], `${p}/low`);
    this.node('Sub', [`${p}/high`, `${p}/low`], `${p}/range`);
    // A row of zeros: any positive range keeps the scale finite and quantizes it to its zero point.
    this.node('Max', [`${p}/range`, this.scalar(`${this.namespace}/smallest_range`, 1e-30)], `${p}/range_nonzero`);
    this.node('Div', [`${p}/range_nonzero`, this.scalar(`${this.namespace}/levels_255`, 255)], `${p}/row_scale`);
    // z = round(−low / s): an integer in [0, 255].
    this.node('Div', [`${p}/low`, `${p}/row_scale`], `${p}/low_scaled`);
    this.node('Neg', [`${p}/low_scaled`], `${p}/zero_unrounded`);
    this.node('Round', [`${p}/zero_unrounded`], `${p}/zero_float`);
    this.node('Cast', [`${p}/zero_float`], `${p}/zero_point`, [int('to', DataType.UINT8)]);
    const quantized = `${p}/quantized`;
    if (this.opset >= 14) {
      // One pass: QuantizeLinear along the rows of a [R, K] view, then back to the input's shape
      // (allowzero, so that an empty pass keeps its zero-length axis).
      const flat = this.int64s(`${this.namespace}/flat`, [-1]);
      const shape = `${p}/shape`;
      this.node('Shape', [input], shape);
      this.node('Reshape', [input, this.int64s(`${this.namespace}/rows_of_${K}`, [-1, K])], `${p}/rows`);
      this.node('Reshape', [`${p}/row_scale`, flat], `${p}/row_scale_flat`);
      this.node('Reshape', [`${p}/zero_point`, flat], `${p}/zero_point_flat`);
      this.node('QuantizeLinear', [`${p}/rows`, `${p}/row_scale_flat`, `${p}/zero_point_flat`], `${p}/quantized_rows`, [
        int('axis', 0),
      ]);
      this.node('Reshape', [`${p}/quantized_rows`, shape], quantized, [int('allowzero', 1)]);
    } else {
      // Older opsets: x / s + z, then QuantizeLinear with scale 1 and zero point 0.
      this.node('Div', [input, `${p}/row_scale`], `${p}/scaled`);
      this.node('Add', [`${p}/scaled`, `${p}/zero_float`], `${p}/shifted`);
      this.node(
        'QuantizeLinear',
        [`${p}/shifted`, this.scalar(`${this.namespace}/one`, 1), this.unsignedZero()],
        quantized,
      );
    }
    const rows = { quantized, rowScale: `${p}/row_scale`, zeroPoint: `${p}/zero_point` };
    this.rows.set(input, rows);
    return rows;
  }

  /**
   * The rows D [J, N] (the weight's type) appended to the weight so that, against J activation
   * columns holding the row's zero point z, they add −z · Σ_k (W[k, n] − w_zp[n]): each column of
   * D − w_zp sums to minus the weight's column sum, in steps of at most `levels`.
   */
  private correctionRows(
    m: PerTokenMatMul,
    name: string,
  ): { tensor: TensorProto; rows: number; K: number } | undefined {
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
    return {
      tensor: { name, dataType: DataType.INT8, dims: [J, N], rawData: new Uint8Array(rows.buffer) },
      rows: J,
      K,
    };
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

/** One product and its activation's quantization, on its own (no sharing): the simplest call. */
export function perTokenInt8MatMul(
  m: PerTokenMatMul,
  opset: number,
  initializer: (name: string) => TensorProto | undefined,
): PerTokenNodes | undefined {
  const b = new PerTokenInt8(opset, `${m.prefix}/per_token`, initializer);
  return b.matMul(m) ? { nodes: b.nodes, initializers: b.initializers } : undefined;
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
