// Temperature scaling: one temperature per question type, fitted on a training split
// by minimising log loss, reported on a held-out split. Pure functions, no I/O.
//
// An answer's outcome probabilities p (as served) become softmax(ln p / T): T > 1 softens
// overconfident answers, T < 1 sharpens timid ones. The log loss of a label under β = 1/T,
//   −β·ln p_y + ln Σ_k p_k^β,
// is convex in β, so a golden-section search over ln β finds the one minimum.
import { seededRandom } from '../common/index.js';

export interface CalibrationExample {
  /** Probability per outcome, as served (noul: [P(yes), P(no)]). */
  probs: number[];
  /** Index of the labeled outcome. */
  expected: number;
}

/** ln p clipped so an outcome with probability 0 (float underflow) stays finite. */
const safeLog = (p: number): number => Math.log(Math.max(p, 1e-300));

/** ln p / t per outcome, and their log-sum-exp. */
function scaled(probs: number[], t: number): { logits: number[]; lse: number } {
  const logits = probs.map((p) => safeLog(p) / t);
  const max = Math.max(...logits);
  return { logits, lse: max + Math.log(logits.reduce((s, l) => s + Math.exp(l - max), 0)) };
}

/** The probabilities softened (T > 1) or sharpened (T < 1) by `t`. */
export function withTemperature(probs: number[], t: number): number[] {
  const { logits, lse } = scaled(probs, t);
  return logits.map((l) => Math.exp(l - lse));
}

/** Mean negative log-likelihood of the labels at temperature `t`. */
export function meanLogLoss(examples: CalibrationExample[], t: number): number {
  let sum = 0;
  for (const e of examples) {
    const { logits, lse } = scaled(e.probs, t);
    sum += lse - logits[e.expected]!;
  }
  return sum / examples.length;
}

/** The temperature in [1/50, 50] that minimises the mean log loss (1 when there are no examples). */
export function fitTemperature(examples: CalibrationExample[]): number {
  if (examples.length === 0) return 1;
  const loss = (logBeta: number) => meanLogLoss(examples, Math.exp(-logBeta));
  const phi = (Math.sqrt(5) - 1) / 2;
  let [lo, hi] = [Math.log(1 / 50), Math.log(50)];
  let x1 = hi - phi * (hi - lo);
  let x2 = lo + phi * (hi - lo);
  let [f1, f2] = [loss(x1), loss(x2)];
  for (let i = 0; i < 80; i++) {
    if (f1 <= f2) {
      [hi, x2, f2] = [x2, x1, f1];
      x1 = hi - phi * (hi - lo);
      f1 = loss(x1);
    } else {
      [lo, x1, f1] = [x1, x2, f2];
      x2 = lo + phi * (hi - lo);
      f2 = loss(x2);
    }
  }
  return Math.exp(-(lo + hi) / 2);
}

/** A seeded shuffle's split of `n` items: `heldOutShare` of them held out (at least one of each when n ≥ 2). */
export function split(n: number, heldOutShare: number, seed = 1): { train: number[]; heldOut: number[] } {
  const order = Array.from({ length: n }, (_, i) => i);
  const random = seededRandom(seed || 1);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const held = n < 2 ? 0 : Math.min(n - 1, Math.max(1, Math.round(n * heldOutShare)));
  return { heldOut: order.slice(0, held).sort((a, b) => a - b), train: order.slice(held).sort((a, b) => a - b) };
}
