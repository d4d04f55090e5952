// The continuation rewrite of a whole-row causal graph (match.ts finds the sites): the rows of a
// pass continue a past of P tokens, the same past for every row. One graph serves the state pass
// (one row of the state's tokens, its presents the snapshot) and the question pass (each row the
// whole row's tokens from P on):
//   - positions: the rotary Range(0, T) becomes Range(P, P + T); a mask's key indices Range(0, T)
//     become Range(−P, T), so masks compare row-relative indices (the queries' stay 0..T−1, and a
//     position input such as Arbiter's last_pos is fed relative to P); the causal bias
//     ConstantOfShape([T, T]) → Trilu(k) becomes [T, P + T] with diagonal k + P;
//   - attention: K after rotary and V are Concat(past expanded to the rows, new) on the sequence axis,
//     before the GQA expand, which reads them instead (its shapes follow); the concatenations are the
//     presents;
//   - causal conv: its K−1 zeros of left padding become the past's K−1 columns of its input; the
//     present is the last K−1 columns of past and new;
//   - chunked recurrence: the Scan starts from the past state (expanded to the rows) instead of
//     zeros; its final state is the present.
// The past inputs broadcast: a fresh state pass (P = 0) feeds K/V of shape [1, 1, 0, 1], conv
// columns [1, 1, K−1] and a state [1, 1, 1, 1] of zeros, expanded in the graph to the layer's shape.
import type { onnx as OnnxTypes } from 'onnx-proto';
import { deadCodeRemoved } from '../fuse-attention.js';
import { dependsOnInput, type ModelProto } from '../graph-rewrite.js';
import { topologicalOrder } from '../graph-order.js';
import type { ConstantValue } from './constants.js';
import { IDS, matchRowGraph } from './match.js';
import { PAST_LENGTH, pastConv, pastKey, pastRecurrent, pastValue, presentOf, type RowGraphFacts } from './names.js';
import { AttributeType, DataType } from '../../../common/index.js';

type NodeProto = OnnxTypes.INodeProto;

/** A Slice's open end (past any row). */
const OPEN_END = Number.MAX_SAFE_INTEGER;

/** Rewrites the graph in place into its continuation form; or, the graph untouched, why it cannot. */
export function rewriteRowGraph(model: ModelProto, constants: Map<string, ConstantValue>): RowGraphFacts | string {
  const plan = matchRowGraph(model, constants);
  if (typeof plan === 'string') return plan;
  const graph = model.graph!;
  const b = new Builder();
  const nodes = graph.node!;
  const rename = new Map<string, string>();
  /** Every reader of `from` (but the rewrite's own nodes) reads `to`. */
  const reroute = (from: string, to: string) => rename.set(from, to);

  // The row length T ([1]) and P ([1], and cast to what each Range counts in).
  const idsShape = b.node('Shape', [IDS], 'ids_shape');
  const T1 = b.node('Slice', [idsShape, b.ints('one', [1]), b.ints('two', [2])], 'seq');
  const P1 = b.node('Unsqueeze', [PAST_LENGTH, b.ints('axis0', [0])], 'past_1d');
  const pastAs = (type: number) =>
    type === DataType.INT64 ? PAST_LENGTH : b.node('Cast', [PAST_LENGTH], `past_as_${type}`, [b.int('to', type)]);

  for (const site of plan.ranges) {
    const [, limit, delta] = site.range.input!;
    const P = pastAs(site.type);
    if (site.role === 'positions') {
      site.range.input = [P, b.node('Add', [limit!, P], `${site.range.name}/limit`), delta!];
    } else {
      const keys = b.node(
        'Range',
        [b.node('Neg', [P], `${site.range.name}/start`), limit!, delta!],
        `${site.range.name}/keys`,
      );
      for (const u of site.keys) u.input![0] = keys;
    }
  }
  for (const { trilu, fill } of plan.trilus) {
    const shape = b.node('Concat', [T1, b.node('Add', [T1, P1], `${trilu.name}/keys`)], `${trilu.name}/shape`, [
      b.int('axis', 0),
    ]);
    const filled = b.node('ConstantOfShape', [shape], `${trilu.name}/fill`, fill.attribute ?? []);
    const diagonal = b.node('Add', [trilu.input![1]!, PAST_LENGTH], `${trilu.name}/k`);
    reroute(trilu.output![0]!, b.node('Trilu', [filled, diagonal], `${trilu.name}/bias`, trilu.attribute ?? []));
  }
  plan.attention.forEach((site, l) => {
    for (const [fresh, past] of [
      [site.k, pastKey(l)],
      [site.v, pastValue(l)],
    ] as const) {
      // [rows, kv, 1, d]: the layer's shape with one position, for the past to expand to
      const to = b.node(
        'Add',
        [
          b.node('Mul', [b.node('Shape', [fresh], `${past}/shape`), b.ints('keep_bhd', [1, 1, 0, 1])], `${past}/bhd`),
          b.ints('one_s', [0, 0, 1, 0]),
        ],
        `${past}/rows`,
      );
      const expanded = b.node('Expand', [past, to], `${past}/expanded`);
      reroute(fresh, b.node('Concat', [expanded, fresh], presentOf(past), [b.int('axis', 2)], true));
    }
  });
  plan.convs.forEach((site, c) => {
    const past = pastConv(c);
    const to = b.node(
      'Add',
      [
        b.node('Mul', [b.node('Shape', [site.input], `${past}/shape`), b.ints('keep_bc', [1, 1, 0])], `${past}/bc`),
        b.ints('one_t', [0, 0, 1]),
      ],
      `${past}/rows`,
    );
    const joined = b.node('Concat', [b.node('Expand', [past, to], `${past}/expanded`), site.input], `${past}/joined`, [
      b.int('axis', 2),
    ]);
    site.conv.input![0] = joined;
    if (site.form === 'slice')
      site.conv.attribute = (site.conv.attribute ?? []).map((a) => (a.name === 'pads' ? { ...a, ints: [0, 0] } : a));
    b.node(
      'Slice',
      [joined, b.ints(`tail_${site.kernel}`, [1 - site.kernel]), b.ints('open_end', [OPEN_END]), b.ints('axis2', [2])],
      presentOf(past),
      [],
      true,
    );
  });
  plan.scans.forEach((site, r) => {
    const past = pastRecurrent(r);
    site.scan.input![0] = b.node('Expand', [past, site.shape], `${past}/expanded`);
    reroute(site.scan.output![0]!, presentOf(past));
    site.scan.output![0] = presentOf(past);
  });

  // The graph's readers of a rerouted tensor read its replacement (the rewrite's nodes read the original).
  for (const n of nodes) n.input = (n.input ?? []).map((i) => rename.get(i) ?? i);
  const outputs = (graph.output ?? []).map((o) => o.name!);
  const pasts: Array<{ name: string; rank?: number }> = [
    ...plan.attention.flatMap((_, l) => [pastKey(l), pastValue(l)].map((name) => ({ name, rank: 4 }))),
    ...plan.convs.map((_, c) => ({ name: pastConv(c), rank: 3 })),
    ...plan.scans.map((_, r) => ({ name: pastRecurrent(r) })),
  ];
  graph.node = topologicalOrder(
    deadCodeRemoved([...nodes, ...b.nodes], [...outputs, ...pasts.map((p) => presentOf(p.name))]),
  );
  const read = new Set(graph.node.flatMap((n) => n.input ?? []));
  graph.initializer = [...(graph.initializer ?? []), ...b.initializers.filter((t) => read.has(t.name!))];
  // Declared shapes of tensors whose length changed would mislead onnxruntime's planning: it infers them again.
  graph.valueInfo = [];
  graph.input = [
    ...(graph.input ?? []),
    tensorInfo(PAST_LENGTH, DataType.INT64, 0),
    ...pasts.map((p) => tensorInfo(p.name, DataType.FLOAT, p.rank)),
  ];
  graph.output = [...(graph.output ?? []), ...pasts.map((p) => tensorInfo(presentOf(p.name), DataType.FLOAT, p.rank))];

  // Every attention layer's mask now follows P (its key side, or the bias), else the rewrite missed one.
  const producer = new Map<string, NodeProto>();
  for (const n of graph.node) for (const o of n.output ?? []) producer.set(o, n);
  const unmoved = plan.attention.find(
    (a) => !dependsOnInput(rename.get(a.mask) ?? a.mask, (i) => i === PAST_LENGTH, producer),
  );
  if (unmoved)
    return `the mask of ${unmoved.softmax} is not built from the row's positions in a form the rewrite reads`;
  const facts: RowGraphFacts = {
    outputs,
    positions: plan.positions,
    attention: plan.attention.length,
    convs: plan.convs.map((c) => c.kernel),
    recurrences: plan.scans.length,
  };
  if (plan.vocab !== undefined) facts.vocab = plan.vocab;
  return facts;
}

/** The rewrite's nodes and constants, named under assay/rows/. */
class Builder {
  readonly nodes: NodeProto[] = [];
  readonly initializers: OnnxTypes.ITensorProto[] = [];
  private readonly constants = new Set<string>();

  /** A node with one output: `name` under assay/rows/ (as is, when `exact`); returns the output. */
  node(op: string, input: string[], name: string, attribute: OnnxTypes.IAttributeProto[] = [], exact = false): string {
    const output = exact ? name : `assay/rows/${name}`;
    this.nodes.push({ opType: op, input, output: [output], name: `assay/rows/${name}`, attribute });
    return output;
  }

  /** An i64 [n] constant. */
  ints(name: string, values: number[]): string {
    const full = `assay/rows/${name}`;
    if (!this.constants.has(full)) {
      this.constants.add(full);
      this.initializers.push({ name: full, dataType: DataType.INT64, dims: [values.length], int64Data: values });
    }
    return full;
  }

  int(name: string, i: number): OnnxTypes.IAttributeProto {
    return { name, type: AttributeType.INT, i };
  }
}

function tensorInfo(name: string, elemType: number, rank?: number): OnnxTypes.IValueInfoProto {
  const shape =
    rank === undefined
      ? {}
      : { shape: { dim: Array.from({ length: rank }, (_, i) => ({ dimParam: `${name}_${i}` })) } };
  return { name, type: { tensorType: { elemType, ...shape } } };
}
