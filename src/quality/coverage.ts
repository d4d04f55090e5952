// Coverage at an error budget: keep the answers the model is most certain of, and find how many can
// be kept while the kept answers' error rate stays within a budget (e.g. 5%), and the certainty
// threshold that keeps them. Pure functions, no I/O.
//
// The certainty of an answer (what a threshold compares): noul max(p, 1 − p); choice and score the
// answer's `confidence`; for choice, the chosen option's probability is reported as an alternative.
// An answer is kept when its certainty is ≥ the threshold: answers of equal certainty are kept or
// left together, so a threshold a caller applies keeps exactly the answers counted here.
import type { Answer } from '../protocol/index.js';

export type CertaintyMeasure = 'certainty' | 'confidence' | 'option-probability';

/** How a measure is written in the reports. */
export const MEASURE_TEXT: Record<CertaintyMeasure, string> = {
  certainty: 'max(p, 1 − p)',
  confidence: 'confidence',
  'option-probability': 'chosen option probability',
};

/** The measure a type's thresholds use by default (and the escalation compares). */
export function defaultMeasure(type: Answer['type']): CertaintyMeasure {
  return type === 'noul' ? 'certainty' : 'confidence';
}

/** An answer's certainty: noul max(p, 1 − p); choice and score their confidence (or, for choice, the chosen option's probability). */
export function certainty(a: Answer, measure: CertaintyMeasure = defaultMeasure(a.type)): number {
  if (a.type === 'noul') return Math.max(a.noul, 1 - a.noul);
  if (a.type === 'choice' && measure === 'option-probability') return a.probabilities[a.choice] ?? 0;
  return a.confidence;
}

/** Whether an answer matches its label: noul at 0.5, choice the option, score its expected level within `tolerance` of the labeled one. */
export function answerCorrect(a: Answer, expected: unknown, scoreTolerance: number): boolean {
  if (a.type === 'noul') return a.noul >= 0.5 === expected;
  if (a.type === 'choice') return a.choice === expected;
  return Math.abs(a.score - Number(expected)) <= scoreTolerance;
}

export interface Scored {
  certainty: number;
  correct: boolean;
}

/** One point of the risk–coverage curve: keep every answer with certainty ≥ threshold. */
export interface RiskPoint {
  threshold: number;
  /** Share of the answers kept. */
  coverage: number;
  /** Error rate of the kept answers. */
  risk: number;
  kept: number;
  errors: number;
}

/** The risk–coverage curve: one point per distinct certainty, from the most certain answers down to all of them. */
export function riskCoverage(points: Scored[]): RiskPoint[] {
  const sorted = [...points].sort((a, b) => b.certainty - a.certainty);
  const n = sorted.length;
  const out: RiskPoint[] = [];
  let errors = 0;
  for (let i = 0; i < n; i++) {
    if (!sorted[i]!.correct) errors++;
    // A cut only where the next answer is less certain: equal certainties stay together.
    if (i + 1 < n && sorted[i + 1]!.certainty === sorted[i]!.certainty) continue;
    out.push({ threshold: sorted[i]!.certainty, coverage: (i + 1) / n, risk: errors / (i + 1), kept: i + 1, errors });
  }
  return out;
}

/** Confidence level of the "enough answers" check. */
const ALPHA = 0.05;

/** P(X ≤ x) for X ~ Binomial(n, p), summed in log space (n up to millions stays finite). */
export function binomialCdf(x: number, n: number, p: number): number {
  if (x >= n || p <= 0) return 1;
  if (p >= 1) return 0;
  let logTerm = n * Math.log1p(-p); // k = 0
  let sum = Math.exp(logTerm);
  for (let k = 1; k <= x; k++) {
    logTerm += Math.log((n - k + 1) / k) + Math.log(p) - Math.log1p(-p);
    sum += Math.exp(logTerm);
  }
  return Math.min(1, sum);
}

/**
 * The one-sided 95% (Clopper–Pearson) upper bound of an error rate after `errors` errors in `n`
 * answers: the largest p under which seeing so few errors still has probability ≥ 5%. With no
 * errors it is 1 − 0.05^(1/n) (≈ 3/n, the "rule of three").
 */
export function errorUpperBound(errors: number, n: number, alpha = ALPHA): number {
  if (n === 0) return 1;
  if (errors >= n) return 1;
  if (errors === 0) return 1 - alpha ** (1 / n);
  let [lo, hi] = [errors / n, 1];
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (binomialCdf(errors, n, mid) > alpha) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * The fewest kept answers that can show an error rate within `budget` at 95%: even with no error
 * among them, the upper bound 1 − 0.05^(1/n) is ≤ budget only from n = ⌈ln 0.05 / ln(1 − budget)⌉
 * (59 at 5%, 299 at 1%).
 */
export function minKeptForBudget(budget: number, alpha = ALPHA): number {
  return budget <= 0 ? Infinity : budget >= 1 ? 1 : Math.ceil(Math.log(alpha) / Math.log(1 - budget));
}

export interface CoverageAtBudget {
  budget: number;
  /** Labeled answers of the group. */
  count: number;
  /** The largest share kept with the kept answers' error rate ≤ budget (0: none). */
  coverage: number;
  kept: number;
  errors: number;
  /**
   * Keep answers with certainty ≥ this; null when no threshold meets the budget (escalate / decline
   * them all). Halfway between the least certain kept answer and the most certain one left out, so
   * float noise of another run does not move an answer across it.
   */
  threshold: number | null;
  /** Error rate of the kept answers. */
  risk: number;
  /** One-sided 95% upper bound of that error rate (Clopper–Pearson). */
  riskUpper95: number;
  /** Whether the upper bound is within the budget: the number means something. */
  enough: boolean;
  /** Kept answers needed before any result can show the budget (minKeptForBudget). */
  keptNeeded: number;
  /** Labeled answers needed at this coverage to keep that many (null when nothing is kept). */
  labeledNeeded: number | null;
}

/** Coverage at an error budget, from the risk–coverage curve. */
export function coverageAtBudget(points: Scored[], budget: number): CoverageAtBudget {
  const curve = riskCoverage(points);
  let at = -1;
  curve.forEach((p, i) => {
    if (p.risk <= budget + 1e-12) at = i; // the curve runs to growing coverage: keep the last one within budget
  });
  const best = curve[at];
  const next = curve[at + 1];
  const kept = best?.kept ?? 0;
  const errors = best?.errors ?? 0;
  const riskUpper95 = kept ? errorUpperBound(errors, kept) : 1;
  const keptNeeded = minKeptForBudget(budget);
  const coverage = points.length ? kept / points.length : 0;
  return {
    budget,
    count: points.length,
    coverage,
    kept,
    errors,
    threshold: best === undefined ? null : next === undefined ? best.threshold : (best.threshold + next.threshold) / 2,
    risk: kept ? errors / kept : 0,
    riskUpper95,
    enough: kept > 0 && riskUpper95 <= budget,
    keptNeeded,
    labeledNeeded: coverage > 0 ? Math.ceil(keptNeeded / coverage) : null,
  };
}
