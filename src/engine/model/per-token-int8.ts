// The per-token int8 matrix product: ONNX nodes computing x · W for an fp32 activation x [..., M, K]
// and an int8 weight W [K, N], where each row (token) of x is quantized with its own scale.
//
// A dynamic int8 export (onnxruntime's quantize_dynamic: DynamicQuantizeLinear + MatMulInteger, or
// its fused DynamicQuantizeMatMul) quantizes a whole activation tensor with one scale and zero point,
// so a token's numbers depend on every other token of the pass. Here a row's quantized values depend
// on that row alone, and the integer product is exact, so a token's result is the same whatever
// shares its pass. Each row is quantized symmetrically over its own largest magnitude:
//
//   a_row = max(max |x_row|, tiny)                                ReduceMax, ReduceMin       [..., M, 1]
//   s_row = a_row / 127,  q = round(x / s_row) + 128              uint8 [..., M, K], 255 levels around 128
//   y     = s_row · (w_scale · Σ_k (q_k − 128) · (W_k − w_zp))    MatMulIntegerToFloat, then Mul
//
// q is one QuantizeLinear with a block per row (opset 21: a scale per row, all rows in parallel, one
// pass over x; opset.ts raises the model to 21 where it can). Under opset 21 the rows are divided by
// their scale first and one QuantizeLinear quantizes the tensor with scale 1: the same numbers
// (QuantizeLinear divides by its scale too), one more pass over x; a per-axis QuantizeLinear would do
// it in one, but onnxruntime walks its rows one by one, on one thread.
//
// One zero point (128) for every row is what onnxruntime's integer GEMM takes (one activation zero
// point per product), so the kernel runs exactly as for the export, with activation scale 1; the
// row scale ([..., M, 1]) multiplies its output in a Mul, which onnxruntime runs on all its threads
// (given to the product as a per-row activation scale, it is applied in one thread after the GEMM).
// A zero point per row (each row over its own [min, max], as DynamicQuantizeLinear does a tensor)
// was built and measured: folding 256 zero points into one GEMM needs correction terms and a copy
// of every row, and cost 1.11× to 1.17× the export's pass where the divided form cost 1.04× to 1.07×
// (docs/decisions.md); its step is finer only on rows that lean to one side.
//
// Each activation is quantized once for all the products that read it (q, k and v; gate and up).
// The engine's passes have batch 1 (one sequence, or one packed tree of them).
//
// Where a product's output is only multiplied, element by element, into an activation that is itself
// quantized per row (the MLP's up projection: silu(gate) · up → down), the row scale need not be
// applied to it: quantizing a row is blind to a factor on that row, so the factor moves to the next
// product's row scale (one multiply of two [M, 1] vectors instead of a pass over an [M, 4864] output).
//
// The integer kernel is the one the exports run (u8 × s8, or the exact u8 × u8 form under
// `session.x64quantprecision`, cpu.ts).
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';
import { BLOCKED_QUANTIZE_OPSET } from './opset.js';

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
  /** K: the activation's last dimension (the weight's rows). */
  depth: number;
  /** The fp32 result [..., M, N]. */
  output: string;
  /** Prefix of every node, tensor and initializer name emitted (unique per product). */
  prefix: string;
}

/** An activation read by per-token products. */
interface Activation {
  prefix: string;
  /** Its last dimension. */
  depth: number;
  /** The row scale of an activation whose rows carry a factor its producer left out ([..., M, 1]). */
  factor?: string;
}

/** Largest |q − 128| of a row: 255 levels, symmetric around the zero point. */
const LEVELS = 127;
const ZERO_POINT = 128;

/**
 * Emits per-token products: `matMul` for each product (its node, returned to take the place of the
 * export's), then `finish` once, which adds the nodes that quantize each activation (after its
 * producer, before the products: the caller orders the graph) and every initializer. `opset` is the
 * model's ai.onnx opset (ReduceMax takes its axes as an input from 18 on).
 */
export class PerTokenInt8 {
  readonly nodes: NodeProto[] = [];
  readonly initializers: TensorProto[] = [];
  private readonly activations = new Map<string, Activation>();
  /** The MatMulIntegerToFloat node of each product emitted. */
  private readonly products: NodeProto[] = [];
  private readonly names = new Set<string>();

  constructor(
    private readonly opset: number,
    /** Prefix of the constants shared by every product. */
    private readonly namespace = 'assay/per_token',
  ) {}

  /** The nodes of one product (also kept in `nodes`). */
  matMul(m: PerTokenMatMul): NodeProto[] {
    const activation = this.activation(m.input, m.depth);
    const start = this.nodes.length;
    const node = this.node(
      'MatMulIntegerToFloat',
      [
        `${activation.prefix}/rows`,
        m.weight,
        `${activation.prefix}/row_scale`,
        m.weightScale,
        this.zeroPoint(),
        m.weightZeroPoint ?? '',
      ],
      m.output,
      [],
      'com.microsoft',
    );
    this.products.push(node);
    return this.nodes.slice(start);
  }

  /**
   * The nodes quantizing each activation and the initializers, once every product is added.
   * `graph`: the caller's nodes (with the products, without these) and its outputs; given, a
   * product whose output is only multiplied into another per-token activation leaves its row scale
   * to that activation's products.
   */
  finish(graph?: { nodes: NodeProto[]; outputs: string[] }): { nodes: NodeProto[]; initializers: TensorProto[] } {
    if (graph) this.moveFactors(graph.nodes, new Set(graph.outputs));
    const start = this.nodes.length;
    for (const product of this.products) this.scaleRows(product);
    for (const [input, activation] of this.activations) this.quantizeRows(input, activation);
    return { nodes: this.nodes.slice(start), initializers: this.initializers };
  }

  private activation(input: string, depth: number): Activation {
    let a = this.activations.get(input);
    if (!a) {
      a = { prefix: `${this.namespace}/${input.replace(/[^A-Za-z0-9_.]+/g, '_')}`, depth };
      this.activations.set(input, a);
    }
    if (a.depth !== depth) throw new Error(`products read ${input} with ${a.depth} and ${depth} columns`);
    return a;
  }

  /**
   * y = x ⊙ (s_row · p) feeding only per-token products: p is what the kernel gives with activation
   * scale 1, and s_row moves to y's row scale (quantizing y's row is blind to the factor).
   */
  private moveFactors(nodes: NodeProto[], outputs: Set<string>): void {
    const consumers = new Map<string, NodeProto[]>();
    for (const n of nodes) for (const i of new Set(n.input ?? [])) consumers.set(i, [...(consumers.get(i) ?? []), n]);
    for (const product of this.products) {
      const output = product.output![0]!;
      const [mul, ...others] = consumers.get(output) ?? [];
      if (!mul || others.length > 0 || outputs.has(output)) continue;
      if (mul.opType !== 'Mul' || (mul.domain ?? '') !== '' || mul.input?.length !== 2) continue;
      if (mul.input[0] === mul.input[1]) continue;
      const y = mul.output![0]!;
      const target = this.activations.get(y);
      // y read by nothing but its row quantization (added by finish), and carrying no factor yet.
      if (!target || target.factor || (consumers.get(y) ?? []).length > 0 || outputs.has(y)) continue;
      target.factor = product.input![2]!;
      product.input![2] = this.scalar(`${this.namespace}/float_one`, 1);
    }
  }

  /**
   * The row scale applied by a Mul after the product (activation scale 1): onnxruntime applies an
   * activation scale given per row in one thread after the GEMM, a Mul runs on all of them.
   */
  private scaleRows(product: NodeProto): void {
    const one = this.scalar(`${this.namespace}/float_one`, 1);
    const rowScale = product.input![2]!;
    if (rowScale === one) return;
    const output = product.output![0]!;
    product.input![2] = one;
    product.output = [`${output}/unscaled`];
    this.nodes.push({
      opType: 'Mul',
      input: [product.output[0]!, rowScale],
      output: [output],
      name: `${output}/scaled_rows`,
      attribute: [],
    });
  }

  /**
   * Each row over its own largest magnitude: a scale per row, zero point 128 (`<prefix>/rows`, uint8
   * [..., M, K]; `<prefix>/row_scale` [..., M, 1], times the row's factor where it has one).
   */
  private quantizeRows(input: string, a: Activation): void {
    const p = a.prefix;
    const lastAxis = this.int64s(`${this.namespace}/last_axis`, [-1]);
    const reduce = (op: string, out: string) => {
      if (this.opset >= 18) this.node(op, [input, lastAxis], out, [int('keepdims', 1)]);
      else this.node(op, [input], out, [ints('axes', [-1]), int('keepdims', 1)]);
    };
    reduce('ReduceMax', `${p}/max`);
    reduce('ReduceMin', `${p}/min`);
    this.node('Neg', [`${p}/min`], `${p}/negated_min`);
    // A row of zeros: any positive scale quantizes it to its zero point.
    const tiny = this.scalar(`${this.namespace}/smallest_magnitude`, 1e-30);
    this.node('Max', [`${p}/max`, `${p}/negated_min`, tiny], `${p}/magnitude_reduced`);
    // onnxruntime reduces an empty pass (no rows) to the input's shape: keep [..., 0, 1].
    const [first, second] = [this.int64s(`${this.namespace}/first`, [0]), this.int64s(`${this.namespace}/second`, [1])];
    this.node('Slice', [`${p}/magnitude_reduced`, first, second, lastAxis], `${p}/magnitude`);
    const own = a.factor ? `${p}/own_scale` : `${p}/row_scale`;
    this.node('Div', [`${p}/magnitude`, this.scalar(`${this.namespace}/levels`, LEVELS)], own);
    if (a.factor) this.node('Mul', [own, a.factor], `${p}/row_scale`);
    if (this.opset >= BLOCKED_QUANTIZE_OPSET) {
      // One block per row (opset 21): onnxruntime quantizes the rows in parallel, each over its own
      // scale, in one pass. The zero points take the scale's shape.
      this.node('Shape', [own], `${p}/scale_shape`);
      this.node('Expand', [this.zeroPoint(), `${p}/scale_shape`], `${p}/zero_points`);
      this.node('QuantizeLinear', [input, own, `${p}/zero_points`], `${p}/rows`, [
        int('axis', -1),
        int('block_size', a.depth),
      ]);
      return;
    }
    // Under opset 21: x / s_row, then one QuantizeLinear for the tensor (scale 1, zero point 128):
    // the same numbers (it divides by the scale too); a per-axis scale would be walked row by row.
    this.node('Div', [input, own], `${p}/scaled`);
    this.node(
      'QuantizeLinear',
      [`${p}/scaled`, this.scalar(`${this.namespace}/float_one`, 1), this.zeroPoint()],
      `${p}/rows`,
    );
  }

  private zeroPoint(): string {
    const name = `${this.namespace}/u8_zero_point`;
    if (this.fresh(name))
      this.initializers.push({ name, dataType: DataType.UINT8, dims: [], rawData: Uint8Array.of(ZERO_POINT) });
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
  ): NodeProto {
    // Trailing empty optional inputs are dropped (an empty name in the middle means "absent").
    while (input.length > 0 && input[input.length - 1] === '') input.pop();
    const node = { opType, input, output: [output], name: output, attribute, ...(domain ? { domain } : {}) };
    this.nodes.push(node);
    return node;
  }
}

function int(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INT, i };
}

function ints(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: AttributeType.INTS, ints: values };
}
