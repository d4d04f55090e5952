// Graph nodes in an order ONNX accepts: every node after the producers of its inputs (and of what its
// subgraphs read from the outer scope).
import type { onnx as OnnxTypes } from 'onnx-proto';

/** The nodes sorted so each comes after the producers of its inputs, keeping the given order wherever it can. */
export function topologicalOrder(nodes: OnnxTypes.INodeProto[]): OnnxTypes.INodeProto[] {
  const producerOf = new Map<string, number>();
  nodes.forEach((n, i) => (n.output ?? []).forEach((o) => producerOf.set(o, i)));
  const waiting = nodes.map(
    (n) =>
      new Set(
        reads(n)
          .map((i) => producerOf.get(i))
          .filter((p): p is number => p !== undefined),
      ),
  );
  const consumers = nodes.map(() => [] as number[]);
  waiting.forEach((deps, i) => deps.forEach((d) => consumers[d]!.push(i)));
  const out: OnnxTypes.INodeProto[] = [];
  const ready = waiting.map((d, i) => (d.size === 0 ? i : -1)).filter((i) => i >= 0);
  // A min-ordered ready list keeps the original order wherever the dependencies allow.
  while (ready.length > 0) {
    ready.sort((a, b) => b - a);
    const i = ready.pop()!;
    out.push(nodes[i]!);
    for (const c of consumers[i]!) {
      const deps = waiting[c]!;
      deps.delete(i);
      if (deps.size === 0) ready.push(c);
    }
  }
  if (out.length !== nodes.length) throw new Error('the rewritten graph has a cycle');
  return out;
}

/** What a node reads: its inputs, and the outer-scope names its subgraphs (If, Loop, Scan) read. */
function reads(n: OnnxTypes.INodeProto): string[] {
  const names = [...(n.input ?? [])];
  for (const a of n.attribute ?? []) {
    for (const g of [a.g, ...(a.graphs ?? [])]) {
      if (!g) continue;
      const own = new Set((g.node ?? []).flatMap((m) => m.output ?? []));
      for (const m of g.node ?? []) for (const i of reads(m)) if (!own.has(i)) names.push(i);
    }
  }
  return names;
}
