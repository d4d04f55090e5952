// Packed evaluation: every question of a request in one pass on the prefix's KV cache. The
// questions' suffixes, and the continuation passes of their multi-token labels, are laid out as a
// tree of token sequences (runner PackedPass): each token sees the prefix and its own ancestors
// only, with the positions it would have had in a pass of its own. The tree is a trie: suffixes
// that begin alike ("\n<|im_start|>user\nQuestion: ...", a question asked twice, one instruction
// with two option sets) share those tokens, computed once. So a request of N questions costs one
// pass instead of N (plus one per multi-token label path), over fewer tokens, and the answers are
// those of separate passes (tested within 1e-4 on fp32). What the questions of several passes share
// runs once before them all (stems.ts): a pass then continues each question from its stem.
import { firstTokens, labelLogProbs, labelPasses } from '../prompting/labels.js';
import type { PlannedQuestion } from '../prompting/plan.js';
import type { PackedPass } from '../model/runner.js';
import { compareTokens as compare, MIN_STEM_SAVING, questionStems, type Stems } from './stems.js';

export interface PackedGroup {
  pass: PackedPass;
  /** Each of the group's questions with its labels' log-probabilities, from the pass's (one row per read). */
  finish(logprobs: number[][]): Promise<Array<[PlannedQuestion, number[]]>>;
}

/** Tokens a question adds to a packed pass: its suffix and its labels' continuation inputs. */
export function packedTokens(q: PlannedQuestion): number {
  return q.suffix.length + labelPasses(q.labels).reduce((n, p) => n + p.input.length, 0);
}

/** Tokens a question adds to a packed pass after its stem (stems.ts), if it has one. */
export function tokensAfterStem(q: PlannedQuestion, stems?: Stems): number {
  return packedTokens(q) - (stems?.of.get(q)?.depth ?? 0);
}

/**
 * The questions in groups of at most `budget` tokens each (a question larger than the budget goes
 * alone), each group one packed pass. With `stems` (computed by an earlier pass, now the past's
 * last tokens) each question's pass holds only what follows its stem.
 */
export function packQuestions(
  questions: readonly PlannedQuestion[],
  budget: number,
  trunk: number[] = [],
  stems?: Stems,
): PackedGroup[] {
  if (trunk.length > 0 && stems) throw new Error('a trunk and stems do not ride together');
  const groups: PlannedQuestion[][] = [];
  let current: PlannedQuestion[] = [];
  let size = 0;
  // In an order of their tokens alone: reordering a request's questions or renaming their ids lays
  // out the same passes, so the answers stay bit-identical.
  for (const q of [...questions].sort(byTokens)) {
    const n = tokensAfterStem(q, stems);
    if (current.length > 0 && size + n > budget) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(q);
    size += n;
  }
  if (current.length > 0) groups.push(current);
  if (trunk.length > 0 && groups.length > 1) throw new Error('a trunk rides with a single packed pass only');
  return groups.map((g) => packGroup(g, trunk, stems));
}

/**
 * The packed passes of `questions`, after their stems (stems.ts) where those save at least
 * MIN_STEM_SAVING of the tokens the passes would run without them. A pass's trie already shares
 * what its own questions begin with, so stems save only across passes: never when all fit one.
 */
export function packWithStems(
  questions: readonly PlannedQuestion[],
  budget: number,
): { stems?: Stems; groups: PackedGroup[] } {
  const plain = packQuestions(questions, budget);
  const stems = plain.length > 1 ? questionStems(questions, budget) : undefined;
  if (!stems) return { groups: plain };
  const stemmed = packQuestions(questions, budget, [], stems);
  const saved = passTokens(plain) - stems.pass.tokens.length - passTokens(stemmed);
  return saved >= MIN_STEM_SAVING ? { stems, groups: stemmed } : { groups: plain };
}

function passTokens(groups: readonly PackedGroup[]): number {
  return groups.reduce((n, g) => n + g.pass.tokens.length, 0);
}

function byTokens(a: PlannedQuestion, b: PlannedQuestion): number {
  return (
    compare(a.suffix, b.suffix) ||
    compare(
      a.labels.flatMap((l) => [...l.tokens, -1]),
      b.labels.flatMap((l) => [...l.tokens, -1]),
    )
  );
}

/**
 * One packed pass. `trunk`: tokens of the prompt still to run (the prefix's last prefill piece when its KV
 * is not kept): a chain every question continues from.
 */
function packGroup(questions: PlannedQuestion[], trunk: number[], stems?: Stems): PackedGroup {
  const pass: PackedPass = { tokens: [], parents: [], reads: [] };
  const roots: number[] = [];
  if (stems) pass.stems = { parents: stems.pass.parents, roots };
  /** The trie: children of each node by token (-1: the prefix; -2 - j: stem token j). */
  const children = new Map<number, Map<number, number>>();
  /** Inserts a sequence under `parent`, reusing the nodes it shares; returns each token's node. */
  const insert = (tokens: number[], parent: number): number[] =>
    tokens.map((t) => {
      let next = children.get(parent);
      if (!next) children.set(parent, (next = new Map()));
      let node = next.get(t);
      if (node === undefined) {
        node = pass.tokens.push(t) - 1;
        pass.parents.push(Math.max(-1, parent));
        roots.push(parent < -1 ? -2 - parent : -1);
        next.set(t, node);
      }
      return (parent = node);
    });
  const root = trunk.length > 0 ? insert(trunk, -1).at(-1)! : -1;
  const layout = questions.map((q) => {
    const starts = firstTokens(q.labels);
    const stem = stems?.of.get(q);
    const last = stem ? insert(q.suffix.slice(stem.depth), -2 - stem.node).at(-1)! : insert(q.suffix, root).at(-1)!;
    const firstRead = pass.reads.push({ at: last, candidates: starts }) - 1;
    // Each continuation pass rides on the question's last token; its reads are its own positions.
    // Keyed by the pass's input array: labelLogProbs hands back the same planned pass objects.
    const continuations = new Map<number[], number[]>();
    for (const p of labelPasses(q.labels)) {
      const nodes = insert(p.input, last);
      continuations.set(
        p.input,
        p.candidates.map((candidates, j) => pass.reads.push({ at: nodes[j]!, candidates }) - 1),
      );
    }
    return { q, starts, firstRead, continuations };
  });
  return {
    pass,
    async finish(logprobs) {
      const out: Array<[PlannedQuestion, number[]]> = [];
      for (const { q, starts, firstRead, continuations } of layout) {
        const row = logprobs[firstRead]!;
        const first = new Map(starts.map((token, c) => [token, row[c]!]));
        const logps = await labelLogProbs(q.labels, first, async (input) =>
          continuations.get(input)!.map((r) => logprobs[r]!),
        );
        out.push([q, logps]);
      }
      return out;
    },
  };
}
