// Reading a whole-row causal graph (input_ids i64[rows, seq] and the family's positions → the
// head's outputs; positions implicit, 0..seq-1; no attention-mask input) for its continuation
// rewrite (rewrite.ts): where the row's positions enter (the rotary Range, the mask indices, the
// causal Trilu), each attention layer's K after rotary and V before the GQA expand, each causal conv
// and each chunked recurrence (Scan). Everything that mixes tokens along the row must be one of
// these; anything else is a reason, in words, and the engine keeps whole rows.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { GraphIndex } from '../attention-match.js';
import type { ModelProto } from '../graph-rewrite.js';
import { aiOnnxOpset } from '../opset.js';
import type { ConstantValue } from './constants.js';
import { DataType } from '../../../common/index.js';

type NodeProto = OnnxTypes.INodeProto;

export const IDS = 'input_ids';

/** Ops that carry state along the row in ways the rewrite does not read. */
const UNREAD_OPS = new Set(['Loop', 'If', 'RNN', 'GRU', 'LSTM']);
/** Between K after rotary (or V) and the attention product: the GQA expand and K's transpose. */
const KV_PATH = new Set(['Reshape', 'Unsqueeze', 'Expand']);

/** One attention layer: its K after rotary and its V, both [rows, kv_heads, seq, head_dim]. */
export interface AttentionSite {
  softmax: string;
  k: string;
  v: string;
  /** What is added to the scores (after the rewrite it must follow the past length). */
  mask: string;
}

/** A causal conv: `input` [rows, C, seq], its K-1 left padding as Conv pads (then a Slice) or as a Pad before it. */
export interface ConvSite {
  conv: NodeProto;
  input: string;
  kernel: number;
  form: 'slice' | 'pad';
}

/** A chunked recurrence: its zero initial state's shape tensor. */
export interface ScanSite {
  scan: NodeProto;
  shape: string;
  zero: NodeProto;
}

/** A Range over the row: positions (rotary: shifted to P..P+T) or mask indices (keys: −P..T, row-relative). */
export type RangeSite =
  | { range: NodeProto; role: 'positions'; type: DataType }
  | { range: NodeProto; role: 'keys'; type: DataType; keys: NodeProto[] };

/** A causal bias ConstantOfShape([T, T]) → Trilu(upper, k). */
export interface TriluSite {
  trilu: NodeProto;
  fill: NodeProto;
}

/** What the rewrite changes, found in the graph. */
export interface RowPlan {
  attention: AttentionSite[];
  convs: ConvSite[];
  scans: ScanSite[];
  ranges: RangeSite[];
  trilus: TriluSite[];
  /** The family's position inputs (i64, [rows] or [rows, k]). */
  positions: Array<{ name: string; rank: number }>;
  /** The head's outputs, as the graph names them. */
  outputs: string[];
  /** Rows of the embedding table input_ids reads, when it can be told. */
  vocab?: number;
}

/** The graph read for the rewrite, or why not (in words). */
export function matchRowGraph(model: ModelProto, constants: Map<string, ConstantValue>): RowPlan | string {
  const graph = model.graph!;
  if (aiOnnxOpset(model) < 13) return `opset ${aiOnnxOpset(model)}: the rewrite needs 13 or later`;
  const g = new GraphIndex(model);
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
  const m = new Matcher(g, constants, initializers);
  const inputs = graph.input ?? [];
  const ids = inputs.find((i) => i.name === IDS);
  if (!ids || ids.type?.tensorType?.elemType !== DataType.INT64) return 'no input_ids i64[rows, seq] input';
  const positions: RowPlan['positions'] = [];
  for (const i of inputs) {
    if (i.name === IDS || initializers.has(i.name!)) continue;
    const rank = i.type?.tensorType?.shape?.dim?.length ?? 0;
    if (i.type?.tensorType?.elemType !== DataType.INT64 || rank < 1 || rank > 2)
      return `an input other than the row and its positions: ${i.name}`;
    positions.push({ name: i.name!, rank });
  }
  for (const n of graph.node ?? []) {
    if (UNREAD_OPS.has(n.opType!)) return `a ${n.opType} (${n.name}): not read`;
    if (n.domain && n.domain !== 'ai.onnx') return `a ${n.domain} ${n.opType} (${n.name}): not read`;
  }
  const plan: RowPlan = {
    attention: [],
    convs: [],
    scans: [],
    ranges: [],
    trilus: [],
    positions,
    outputs: (graph.output ?? []).map((o) => o.name!),
  };
  const vocab = m.vocab();
  if (vocab !== undefined) plan.vocab = vocab;
  for (const n of graph.node ?? []) {
    let site: string | undefined;
    if (n.opType === 'Range') site = m.range(n, plan);
    else if (n.opType === 'Trilu') site = m.trilu(n, plan);
    else if (n.opType === 'Softmax') site = m.attention(n, plan);
    else if (n.opType === 'Conv') site = m.conv(n, plan);
    else if (n.opType === 'Scan') site = m.scan(n, plan);
    if (site) return `${n.opType} ${n.name || n.output![0]}: ${site}`;
  }
  if (plan.attention.length === 0 && plan.scans.length === 0) return 'no attention layer and no recurrence found';
  if (!plan.ranges.some((r) => r.role === 'positions') && plan.attention.length > 0)
    return 'no rotary positions found (a Range over the row read by Cos and Sin)';
  return plan;
}

/** The matching, node by node; each method adds its site to the plan or says why it cannot. */
class Matcher {
  constructor(
    private readonly g: GraphIndex,
    private readonly constants: Map<string, ConstantValue>,
    private readonly initializers: Map<string, OnnxTypes.ITensorProto>,
  ) {}

  private constant(name: string | undefined): number[] | undefined {
    return name ? this.constants.get(name)?.values : undefined;
  }

  private scalar(name: string | undefined): number | undefined {
    const v = this.constant(name);
    return v?.length === 1 ? v[0] : undefined;
  }

  /** The axis of the row a shape value is: 'seq' (input_ids' axis 1), 'rows' (any axis 0), or undefined. */
  private dim(t: string): 'seq' | 'rows' | undefined {
    for (let depth = 0; depth < 8; depth++) {
      const n = this.g.producer.get(t);
      if (!n) return undefined;
      if (['Cast', 'Identity', 'Squeeze', 'Unsqueeze'].includes(n.opType!)) {
        t = n.input![0]!;
        continue;
      }
      if (n.opType !== 'Gather') return undefined;
      const shape = this.g.producer.get(n.input![0]!);
      const axis = this.scalar(n.input![1]);
      if (shape?.opType !== 'Shape' || (shape.attribute ?? []).length > 0 || axis === undefined) return undefined;
      if (axis === 0) return 'rows';
      return axis === 1 && this.rowShaped(shape.input![0]!) ? 'seq' : undefined;
    }
    return undefined;
  }

  /** input_ids, or the embedding of it: the row's axis 1 is the sequence. */
  private rowShaped(t: string): boolean {
    const n = this.g.producer.get(t);
    return t === IDS || (n?.opType === 'Gather' && n.input![1] === IDS);
  }

  vocab(): number | undefined {
    const gather = (this.g.consumers.get(IDS) ?? []).find((n) => n.opType === 'Gather' && n.input![1] === IDS);
    let table = gather?.input![0];
    for (let depth = 0; table && depth < 3; depth++) {
      const dims = this.initializers.get(table)?.dims;
      if (dims?.length === 2) return Number(dims[0]);
      table = this.g.producer.get(table)?.input?.[0];
    }
    return undefined;
  }

  range(n: NodeProto, plan: RowPlan): string | undefined {
    const [start, limit, delta] = n.input ?? [];
    const of = this.dim(limit!);
    if (of === 'rows') return undefined; // over the rows (the head's row offsets): unchanged
    if (of !== 'seq') return 'a Range whose length is not the row’s nor the batch’s';
    const value = this.constants.get(start!);
    if (value?.values.length !== 1 || value.values[0] !== 0 || this.scalar(delta) !== 1)
      return 'a Range over the row that does not count 0, 1, 2, …';
    const type = value.type === 'float32' ? DataType.FLOAT : value.type === 'int64' ? DataType.INT64 : undefined;
    if (type === undefined) return `a Range of ${value.type}`;
    const out = n.output![0]!;
    if (this.reaches(out, new Set(['Cos', 'Sin']), 6)) {
      plan.ranges.push({ range: n, role: 'positions', type });
      return undefined;
    }
    // Mask indices: Unsqueeze(axis 1) the query's, Unsqueeze(axis 0) the key's.
    const keys: NodeProto[] = [];
    for (const c of this.g.consumers.get(out) ?? []) {
      const axes = c.opType === 'Unsqueeze' ? (this.constant(c.input![1]) ?? this.g.intsAttr(c, 'axes')) : undefined;
      if (axes?.length !== 1) return 'a Range over the row read otherwise than as rotary positions or mask indices';
      if (axes[0] === 0 || axes[0] === -2) keys.push(c);
      else if (axes[0] !== 1 && axes[0] !== -1) return 'mask indices on an axis other than the query’s or the key’s';
    }
    if (keys.length === 0) return 'a Range over the row read by no mask’s key side';
    plan.ranges.push({ range: n, role: 'keys', type, keys });
    return undefined;
  }

  trilu(n: NodeProto, plan: RowPlan): string | undefined {
    const fill = this.g.producer.get(n.input![0]!);
    if (this.g.intAttr(n, 'upper') === 0) return 'a lower Trilu';
    if (fill?.opType !== 'ConstantOfShape' || this.scalar(n.input![1]) === undefined)
      return 'not a causal bias (Trilu of a ConstantOfShape by a constant diagonal)';
    const concat = this.g.producer.get(fill.input![0]!);
    const sides = concat?.opType === 'Concat' ? (concat.input ?? []) : [];
    if (sides.length !== 2 || !sides.every((s) => this.dim(s) === 'seq'))
      return 'a Trilu over something other than [seq, seq]';
    plan.trilus.push({ trilu: n, fill });
    return undefined;
  }

  attention(s: NodeProto, plan: RowPlan): string | undefined {
    const axis = this.g.intAttr(s, 'axis');
    if (axis !== undefined && axis !== -1 && axis !== 3) return 'not over the last axis';
    const add = this.g.producer.get(s.input![0]!);
    if (add?.opType !== 'Add') return 'does not read scores + mask';
    const scoresAt = add.input!.findIndex((i) => this.scores(i) !== undefined);
    if (scoresAt < 0) return 'its scores are not a MatMul of q and k (times constants)';
    const qk = this.scores(add.input![scoresAt]!)!;
    const k = this.walk(qk.input![1]!, true);
    if (typeof k === 'string') return `keys: ${k}`;
    if (!this.g.bnsh(k.source)) return 'keys: not [rows, heads, seq, head_dim]';
    const pvs = (this.g.consumers.get(s.output![0]!) ?? []).filter((n) => n.opType === 'MatMul');
    if (pvs.length !== 1 || pvs[0]!.input![0] !== s.output![0])
      return 'its probabilities are not read by one MatMul(probs, v)';
    const v = this.walk(pvs[0]!.input![1]!, false);
    if (typeof v === 'string') return `values: ${v}`;
    if (!this.g.bnsh(v.source)) return 'values: not [rows, heads, seq, head_dim]';
    const [kName, vName] = [k.source, v.source];
    if (plan.attention.some((a) => a.k === kName || a.v === vName)) return 'keys or values shared with another layer';
    plan.attention.push({ softmax: s.name || s.output![0]!, k: kName, v: vName, mask: add.input![1 - scoresAt]! });
    return undefined;
  }

  /** The MatMul behind the scores, through scalar Mul / Div. */
  private scores(t: string): NodeProto | undefined {
    for (let n = this.g.producer.get(t); n; n = this.g.producer.get(t)) {
      if (n.opType === 'MatMul') return n;
      if (n.opType !== 'Mul' && n.opType !== 'Div') return undefined;
      const c = this.g.scalarOperand(n);
      if (!c) return undefined;
      t = c.other;
    }
    return undefined;
  }

  /**
   * From what the attention product reads back to the source: through the GQA expand (Reshape,
   * Unsqueeze, Expand), scalar Mul / Div and, for keys, exactly one Transpose of the last two axes.
   * Returns the source, or why not.
   */
  private walk(t: string, keys: boolean): { source: string } | string {
    let transposes = 0;
    for (let n = this.g.producer.get(t); n; n = this.g.producer.get(t)) {
      if (n.opType === 'Transpose' && keys && transposes === 0) {
        const perm = this.g.intsAttr(n, 'perm') ?? [];
        const r = perm.length;
        if (r < 2 || perm[r - 1] !== r - 2 || perm[r - 2] !== r - 1 || !perm.slice(0, -2).every((p, i) => p === i))
          break;
        transposes++;
      } else if (n.opType === 'Mul' || n.opType === 'Div') {
        const c = this.g.scalarOperand(n);
        if (!c) break;
        t = c.other;
        continue;
      } else if (!KV_PATH.has(n.opType!)) break;
      t = n.input![0]!;
    }
    if (keys && transposes !== 1) return 'not transposed once between K and the scores';
    return { source: t };
  }

  conv(n: NodeProto, plan: RowPlan): string | undefined {
    const kernel = this.g.intsAttr(n, 'kernel_shape');
    const pads = this.g.intsAttr(n, 'pads') ?? [0, 0];
    const ones = (a: number[] | undefined) => !a || a.every((x) => x === 1);
    if (kernel?.length !== 1) return 'not a 1-D conv with its kernel_shape';
    const K = kernel[0]!;
    if (!ones(this.g.intsAttr(n, 'dilations')) || !ones(this.g.intsAttr(n, 'strides')))
      return 'a dilated or strided conv';
    const autoPad = (n.attribute ?? []).find((a) => a.name === 'auto_pad')?.s;
    if (autoPad && new TextDecoder().decode(autoPad) !== 'NOTSET') return 'auto_pad';
    if (pads[0] === K - 1 && pads[1] === K - 1) {
      // transformers' form: pads K-1 on both sides, then the first T outputs
      const readers = this.g.consumers.get(n.output![0]!) ?? [];
      const slice = readers[0];
      if (readers.length !== 1 || slice?.opType !== 'Slice') return 'padded on both sides and not sliced';
      const [, starts, , axes, steps] = slice.input ?? [];
      const axis = this.constant(axes);
      if (this.constant(starts)?.join() !== '0' || !axis || (axis[0] !== 2 && axis[0] !== -1))
        return 'padded on both sides and not sliced to its first outputs';
      if (steps && this.constant(steps)?.join() !== '1') return 'sliced with a step';
      plan.convs.push({ conv: n, input: n.input![0]!, kernel: K, form: 'slice' });
      return undefined;
    }
    if (pads[0] !== 0 || pads[1] !== 0) return 'padded otherwise than causally';
    const pad = this.g.producer.get(n.input![0]!);
    if (pad?.opType !== 'Pad') return 'not causal: no left padding';
    const mode = (pad.attribute ?? []).find((a) => a.name === 'mode')?.s;
    const value = pad.input![2] ? this.scalar(pad.input![2]) : 0;
    if ((mode && new TextDecoder().decode(mode) !== 'constant') || value !== 0 || pad.input![3])
      return 'its Pad is not zeros';
    if (this.constant(pad.input![1])?.join() !== [0, 0, K - 1, 0, 0, 0].join())
      return `its Pad is not ${K - 1} zeros on the left of the sequence`;
    plan.convs.push({ conv: n, input: pad.input![0]!, kernel: K, form: 'pad' });
    return undefined;
  }

  scan(n: NodeProto, plan: RowPlan): string | undefined {
    const scanned = this.g.intAttr(n, 'num_scan_inputs') ?? 0;
    const zeros = (name: string) => (this.g.intsAttr(n, name) ?? []).every((x) => x === 0);
    if ((n.input ?? []).length - scanned !== 1) return 'not one carried state';
    if (!zeros('scan_input_axes') || !zeros('scan_input_directions')) return 'not scanned forward over axis 0';
    const zero = this.g.producer.get(n.input![0]!);
    const fill = (zero?.attribute ?? []).find((a) => a.name === 'value')?.t;
    const filled = fill ? (fill.floatData ?? []).every((x) => x === 0) && rawZero(fill.rawData) : true;
    if (zero?.opType !== 'ConstantOfShape' || !filled) return 'its initial state is not zeros';
    plan.scans.push({ scan: n, shape: zero.input![0]!, zero });
    return undefined;
  }

  /** Whether `t` reaches an op of `ops` within `depth` consumers. */
  private reaches(t: string, ops: Set<string>, depth: number): boolean {
    let front = [t];
    for (let d = 0; d < depth && front.length > 0; d++) {
      const next: string[] = [];
      for (const name of front)
        for (const c of this.g.consumers.get(name) ?? []) {
          if (ops.has(c.opType!)) return true;
          next.push(...(c.output ?? []));
        }
      front = next;
    }
    return false;
  }
}

function rawZero(raw: Uint8Array | null | undefined): boolean {
  return !raw || raw.every((b) => b === 0);
}
