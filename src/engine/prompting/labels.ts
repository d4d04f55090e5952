// Exact probabilities of answer labels that span several tokens.
//
// A label's probability is the probability of its whole token sequence after the prompt:
//   P(t1) · P(t2 | t1) · … · P(tm | t1..tm-1)
// and, when the label is also the beginning of another label ("1" and "12"), the answer must end
// there, so the end-of-turn token is scored after it too. The outcome distribution is these
// sequence probabilities normalized over the labels.

export interface LabelSequence {
  label: string;
  tokens: number[];
}

export function labelSequences(
  labels: string[],
  encode: (text: string) => number[],
  endToken: number,
): LabelSequence[] {
  const encoded = labels.map((label) => ({ label, tokens: encode(label) }));
  return encoded.map(({ label, tokens }) => {
    const isPrefixOfAnother = encoded.some((o) => o.tokens.length > tokens.length && startsWith(o.tokens, tokens));
    return { label, tokens: isPrefixOfAnother ? [...tokens, endToken] : tokens };
  });
}

/** Candidate log-probabilities at the last positions of a pass: [position][candidate]. */
export type ReadPass = (input: number[], candidates: number[][]) => Promise<number[][]>;

/** The tokens a label set can start with: the candidates to read right after the prompt. */
export function firstTokens(sequences: LabelSequence[]): number[] {
  return [...new Set(sequences.map((s) => s.tokens[0]!))];
}

/** A continuation pass of a question's labels: `input` after the prompt, and the candidates read at each of its positions. */
export interface LabelPass {
  input: number[];
  candidates: number[][];
}

interface PlannedPasses {
  passes: LabelPass[];
  passOf: Map<LabelSequence, LabelPass>;
}

/**
 * The continuation passes a label set needs. A label whose continuation is the start of another's
 * rides on that one's pass (causal attention: the shorter input's distributions are the longer
 * one's first positions), so there is one pass per distinct longest path, not per label.
 */
function planPasses(sequences: LabelSequence[]): PlannedPasses {
  // Packing asks for a question's passes to size and lay out its pass, then to read its answer:
  // planned once per label set.
  const known = planned.get(sequences);
  if (known) return known;
  const needs = new Map<LabelPass, Array<Set<number>>>();
  const passes: LabelPass[] = [];
  const passOf = new Map<LabelSequence, LabelPass>();
  const longestFirst = sequences.filter((s) => s.tokens.length > 1).sort((a, b) => b.tokens.length - a.tokens.length);
  for (const seq of longestFirst) {
    const input = seq.tokens.slice(0, -1);
    let pass = passes.find((p) => startsWith(p.input, input));
    if (!pass) {
      pass = { input, candidates: [] };
      needs.set(
        pass,
        input.map(() => new Set<number>()),
      );
      passes.push(pass);
    }
    for (let j = 0; j < input.length; j++) needs.get(pass)![j]!.add(seq.tokens[j + 1]!);
    passOf.set(seq, pass);
  }
  for (const pass of passes) pass.candidates = needs.get(pass)!.map((set) => (set.size > 0 ? [...set] : [0]));
  const result = { passes, passOf };
  planned.set(sequences, result);
  return result;
}

const planned = new WeakMap<LabelSequence[], PlannedPasses>();

/** The continuation passes of a label set, in the order labelLogProbs runs them. */
export function labelPasses(sequences: LabelSequence[]): LabelPass[] {
  return planPasses(sequences).passes;
}

/**
 * Log-probability of each label sequence. `first` maps each first token to its log-probability after
 * the prompt; `continueWith(input, candidates)` runs a continuation pass (labelPasses) on the
 * question's cache and reads the candidates' log-probabilities at each of its positions.
 */
export async function labelLogProbs(
  sequences: LabelSequence[],
  first: Map<number, number>,
  continueWith: ReadPass,
): Promise<number[]> {
  const { passes, passOf } = planPasses(sequences);
  const read = new Map<LabelPass, Array<Map<number, number>>>();
  for (const pass of passes) {
    const logprobs = await continueWith(pass.input, pass.candidates);
    read.set(
      pass,
      pass.candidates.map((row, j) => new Map(row.map((token, c) => [token, logprobs[j]![c]!]))),
    );
  }

  return sequences.map((seq) => {
    let logp = first.get(seq.tokens[0]!)!;
    const pass = passOf.get(seq);
    if (pass) {
      const rows = read.get(pass)!;
      for (let j = 1; j < seq.tokens.length; j++) logp += rows[j - 1]!.get(seq.tokens[j]!)!;
    }
    return logp;
  });
}

export function startsWith(a: number[], prefix: number[]): boolean {
  if (prefix.length > a.length) return false;
  for (let i = 0; i < prefix.length; i++) if (a[i] !== prefix[i]) return false;
  return true;
}
