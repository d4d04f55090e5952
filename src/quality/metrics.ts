// Answer-quality metrics over labeled examples: per question type, the measures users
// compare: accuracy, Brier score, log loss and expected calibration error (ECE) for noul and choice;
// MAE of the expected score and exact-level accuracy for score. Pure functions, no I/O.

/** Log loss clips probabilities to [EPS, 1 − EPS] so one confident miss is large, not infinite. */
const EPS = 1e-12;
/** ECE bins: equal-mass (each bin holds the same number of answers, ± 1), as the issue pins. */
export const ECE_BINS = 15;

export interface NoulExample {
  /** P(yes) the model gave. */
  p: number;
  expected: boolean;
}

export interface ChoiceExample {
  /** Probability per option, as the answer's `probabilities`. */
  probabilities: Record<string, number>;
  expected: string;
}

export interface ScoreExample {
  /** Probability per level ("0", "1", ...), as the answer's `probabilities`. */
  probabilities: Record<string, number>;
  expected: number;
}

export interface ReliabilityBin {
  /** Mean confidence of the answers in the bin. */
  confidence: number;
  /** Share of them that were right. */
  accuracy: number;
  count: number;
}

export interface ClassificationMetrics {
  count: number;
  accuracy: number;
  brier: number;
  logLoss: number;
  ece: number;
  reliability: ReliabilityBin[];
}

export interface ScoreMetrics {
  count: number;
  /** Mean |expected score − labeled level|. */
  mae: number;
  /** Share whose most probable level is the labeled one. */
  exactAccuracy: number;
}

const mean = (xs: number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => a + b, 0) / xs.length);
const clip = (p: number): number => Math.min(1 - EPS, Math.max(EPS, p));

/**
 * Equal-mass reliability bins of (confidence, correct) pairs, sorted by confidence; with fewer
 * answers than bins, one answer a bin. ECE = Σ (bin size / n) · |accuracy − confidence|.
 */
export function reliability(
  points: Array<{ confidence: number; correct: boolean }>,
  bins = ECE_BINS,
): { ece: number; bins: ReliabilityBin[] } {
  const sorted = [...points].sort((a, b) => a.confidence - b.confidence);
  const n = sorted.length;
  const k = Math.min(bins, n);
  const out: ReliabilityBin[] = [];
  let ece = 0;
  for (let b = 0; b < k; b++) {
    const part = sorted.slice(Math.floor((b * n) / k), Math.floor(((b + 1) * n) / k));
    const confidence = mean(part.map((p) => p.confidence));
    const accuracy = mean(part.map((p) => (p.correct ? 1 : 0)));
    out.push({ confidence, accuracy, count: part.length });
    ece += (part.length / n) * Math.abs(accuracy - confidence);
  }
  return { ece: n === 0 ? NaN : ece, bins: out };
}

/** noul: the pick is yes when P(yes) ≥ 0.5; its confidence is max(p, 1 − p). */
export function noulMetrics(examples: NoulExample[], bins = ECE_BINS): ClassificationMetrics {
  const correct = examples.map((e) => e.p >= 0.5 === e.expected);
  const r = reliability(
    examples.map((e, i) => ({ confidence: Math.max(e.p, 1 - e.p), correct: correct[i]! })),
    bins,
  );
  return {
    count: examples.length,
    accuracy: mean(correct.map(Number)),
    brier: mean(examples.map((e) => (e.p - Number(e.expected)) ** 2)),
    logLoss: mean(examples.map((e) => -Math.log(clip(e.expected ? e.p : 1 - e.p)))),
    ece: r.ece,
    reliability: r.bins,
  };
}

/** The most probable key (ties: the first listed, as the API's choice). */
export function argmax(probabilities: Record<string, number>): string {
  let best = '';
  let p = -Infinity;
  for (const [k, v] of Object.entries(probabilities)) if (v > p) [best, p] = [k, v];
  return best;
}

/** choice: multi-class Brier Σ_k (p_k − 1[k = expected])², log loss −ln p_expected, top-label ECE. */
export function choiceMetrics(examples: ChoiceExample[], bins = ECE_BINS): ClassificationMetrics {
  const picks = examples.map((e) => argmax(e.probabilities));
  const correct = examples.map((e, i) => picks[i] === e.expected);
  const r = reliability(
    examples.map((e, i) => ({ confidence: e.probabilities[picks[i]!] ?? 0, correct: correct[i]! })),
    bins,
  );
  return {
    count: examples.length,
    accuracy: mean(correct.map(Number)),
    brier: mean(
      examples.map((e) =>
        Object.entries(e.probabilities).reduce((s, [k, p]) => s + (p - Number(k === e.expected)) ** 2, 0),
      ),
    ),
    logLoss: mean(examples.map((e) => -Math.log(clip(e.probabilities[e.expected] ?? 0)))),
    ece: r.ece,
    reliability: r.bins,
  };
}

/** score: MAE of the probability-weighted level against the label, and exact-level accuracy. */
export function scoreMetrics(examples: ScoreExample[]): ScoreMetrics {
  const expectedScore = (e: ScoreExample) =>
    Object.entries(e.probabilities).reduce((s, [k, p]) => s + Number(k) * p, 0);
  return {
    count: examples.length,
    mae: mean(examples.map((e) => Math.abs(expectedScore(e) - e.expected))),
    exactAccuracy: mean(examples.map((e) => Number(Number(argmax(e.probabilities)) === e.expected))),
  };
}
