// Stems: the beginnings several questions of a request share, computed once for all of them.
//
// A packed pass already shares what the questions in it begin with (its tree is a trie), but a pass
// holds a few questions only (its token budget), so a request of 50 questions computed the prompt's
// "<|im_end|>\n<|im_start|>user\nQuestion: Does the ticket report a problem with the" once per pass,
// not once. The stems are those shared beginnings across every question of the request: one packed
// pass computes them as a tree after the prefix and keeps their keys and values; the question passes
// then run what follows each question's stem, their past the prefix and the stems, each token seeing
// only its own stem's tokens among them (ModelRunner.packed, PackedPass.stems).
//
// A question's tokens see exactly the keys they see in a pass of their own, at the same positions,
// so its answer is unchanged (bit for bit on a graph whose masked attention sums in float64:
// exact-attention.ts); only fewer tokens run.
import type { PlannedQuestion } from '../prompting/plan.js';
import type { PackedPass } from '../model/runner.js';

/**
 * Tokens the stems must save for their pass to be worth running: one more pass costs its fixed
 * overhead (the weights read once more), about what a few dozen tokens cost on a CPU. questionStems
 * asks it of the trie (a stem token shared by n questions runs once instead of n times: n - 1), and
 * packing.ts's packWithStems of the passes themselves, whose tries already share within a pass.
 */
export const MIN_STEM_SAVING = 32;

export interface Stems {
  /** The pass that computes them (no reads): its tokens and their parents, a tree after the prefix. */
  pass: PackedPass;
  /** Each question's stem: the stem token its own tokens continue, and how many of its suffix's tokens the stem holds. */
  of: Map<PlannedQuestion, { node: number; depth: number }>;
}

interface Node {
  token: number;
  parent: number;
  depth: number;
  /** Questions whose suffix runs through this node. */
  count: number;
  children: Map<number, number>;
}

/**
 * The request's stems, at most `budget` tokens of them, or undefined when they would save fewer
 * than MIN_STEM_SAVING tokens. A stem is a trie node that two or more questions run through; a
 * question's last suffix token is never in a stem (its first label is read there, in its own pass).
 */
export function questionStems(questions: readonly PlannedQuestion[], budget: number): Stems | undefined {
  if (questions.length < 2) return undefined;
  const nodes: Node[] = [];
  const roots = new Map<number, number>();
  const paths = new Map<PlannedQuestion, number[]>();
  // In an order of their tokens alone, as packing's: the same questions make the same stems.
  for (const q of [...questions].sort((a, b) => compareTokens(a.suffix, b.suffix))) {
    let parent = -1;
    const path: number[] = [];
    for (const token of q.suffix.slice(0, -1)) {
      const children = parent < 0 ? roots : nodes[parent]!.children;
      let node = children.get(token);
      if (node === undefined) {
        node = nodes.push({ token, parent, depth: path.length, count: 0, children: new Map() }) - 1;
        children.set(token, node);
      }
      nodes[node]!.count++;
      path.push(node);
      parent = node;
    }
    paths.set(q, path);
  }
  // Shared nodes, most shared first (a parent is shared at least as often as its child, and is
  // shallower: it always comes first), as many as the budget holds.
  const shared = nodes
    .map((n, i) => ({ n, i }))
    .filter(({ n }) => n.count >= 2)
    .sort((a, b) => b.n.count - a.n.count || a.n.depth - b.n.depth || a.i - b.i)
    .slice(0, budget);
  const saving = shared.reduce((s, { n }) => s + n.count - 1, 0);
  if (saving < MIN_STEM_SAVING) return undefined;
  // The pass: the kept nodes in trie order (a parent before its children).
  const kept = shared.map(({ i }) => i).sort((a, b) => a - b);
  const index = new Map(kept.map((node, j) => [node, j]));
  const pass: PackedPass = {
    tokens: kept.map((i) => nodes[i]!.token),
    parents: kept.map((i) => (nodes[i]!.parent < 0 ? -1 : index.get(nodes[i]!.parent)!)),
    reads: [],
  };
  const of = new Map<PlannedQuestion, { node: number; depth: number }>();
  for (const [q, path] of paths) {
    let depth = 0;
    while (depth < path.length && index.has(path[depth]!)) depth++;
    if (depth > 0) of.set(q, { node: index.get(path[depth - 1]!)!, depth });
  }
  return { pass, of };
}

/** Orders token sequences (lexicographically, a prefix first). */
export function compareTokens(a: number[], b: number[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}
