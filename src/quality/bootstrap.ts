// Paired bootstrap intervals for two runs of the same dataset (assay eval --compare A,B): the answers
// of both arms to one question stay together, the questions are resampled with replacement, and
// each resample's difference B − A of a statistic is computed; the 2.5th and 97.5th percentiles of
// those differences bound a 95% interval. Seeded (common/random.ts's mulberry32), so a CI run is
// reproducible. Pure functions, no I/O.
import type { Answer } from '../protocol/index.js';
import { seededRandom } from '../common/index.js';
import { decision } from './compare.js';
import { answerCorrect, certainty, coverageAtBudget } from './coverage.js';
import { reliability } from './metrics.js';

export const DEFAULT_RESAMPLES = 2000;
export const DEFAULT_SEED = 1;

export interface Interval {
  /** The statistic on arm A and arm B (all answers). */
  a: number;
  b: number;
  /** b − a. */
  diff: number;
  /** 95% percentile interval of the difference over the resamples. */
  low: number;
  high: number;
}

/** The q-quantile of sorted values, linear between neighbours. */
function quantile(sorted: number[], q: number): number {
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

/**
 * The paired bootstrap of a statistic measured on both arms: `stat(indices, arm)` on the items at
 * those indices (repeats allowed). The same resampled indices serve A and B.
 */
export function pairedBootstrap(
  n: number,
  stat: (indices: number[], arm: 'a' | 'b') => number,
  resamples = DEFAULT_RESAMPLES,
  seed = DEFAULT_SEED,
): Interval {
  const all = Array.from({ length: n }, (_, i) => i);
  const a = stat(all, 'a');
  const b = stat(all, 'b');
  const random = seededRandom(seed || 1);
  const diffs: number[] = [];
  const idx = new Array<number>(n);
  for (let r = 0; r < resamples; r++) {
    for (let i = 0; i < n; i++) idx[i] = Math.floor(random() * n);
    diffs.push(stat(idx, 'b') - stat(idx, 'a'));
  }
  diffs.sort((x, y) => x - y);
  return {
    a,
    b,
    diff: b - a,
    low: n && resamples ? quantile(diffs, 0.025) : 0,
    high: n && resamples ? quantile(diffs, 0.975) : 0,
  };
}

export interface AnswerPair {
  a: Answer;
  b: Answer;
  expected: unknown;
}

export interface TypeDrift {
  count: number;
  /** noul and choice: the decision matches the label; score: the most probable level is the labeled one. */
  accuracy: Interval;
  /** Coverage at each error budget (threshold chosen on each resample's own answers). */
  coverage: Array<{ budget: number } & Interval>;
  /** noul and choice: ECE over 15 equal-mass bins. */
  ece?: Interval;
}

export interface DriftOptions {
  budgets: number[];
  scoreTolerance: number;
  resamples?: number;
  seed?: number;
}

/** The confidence the ECE of metrics.ts bins: noul max(p, 1 − p), choice the chosen option's probability. */
const eceConfidence = (a: Answer): number => certainty(a, a.type === 'choice' ? 'option-probability' : undefined);

/** Per question type, the B − A differences with their paired bootstrap intervals. */
export function drift(pairs: AnswerPair[], o: DriftOptions): Record<string, TypeDrift> {
  const byType = new Map<string, AnswerPair[]>();
  for (const p of pairs) {
    if (!byType.has(p.a.type)) byType.set(p.a.type, []);
    byType.get(p.a.type)!.push(p);
  }
  const out: Record<string, TypeDrift> = {};
  for (const [type, ps] of byType) {
    const pick = (i: number, arm: 'a' | 'b') => ps[i]![arm];
    const right = ps.map((p) => ({ a: decision(p.a) === p.expected, b: decision(p.b) === p.expected }));
    const scored = ps.map((p) => ({
      a: { certainty: certainty(p.a), correct: answerCorrect(p.a, p.expected, o.scoreTolerance) },
      b: { certainty: certainty(p.b), correct: answerCorrect(p.b, p.expected, o.scoreTolerance) },
    }));
    const boot = (stat: (indices: number[], arm: 'a' | 'b') => number) =>
      pairedBootstrap(ps.length, stat, o.resamples, o.seed);
    out[type] = {
      count: ps.length,
      accuracy: boot((ix, arm) => ix.reduce((s, i) => s + Number(right[i]![arm]), 0) / ix.length),
      coverage: o.budgets.map((budget) => ({
        budget,
        ...boot(
          (ix, arm) =>
            coverageAtBudget(
              ix.map((i) => scored[i]![arm]),
              budget,
            ).coverage,
        ),
      })),
      // The metrics table's ECE: noul max(p, 1 − p), choice the chosen option's probability.
      ...(type !== 'score'
        ? {
            ece: boot(
              (ix, arm) =>
                reliability(ix.map((i) => ({ confidence: eceConfidence(pick(i, arm)), correct: right[i]![arm] }))).ece,
            ),
          }
        : {}),
    };
  }
  return out;
}

/** Whether B is worse than A beyond the interval: a lower accuracy or coverage whose whole interval is below 0. */
export function worse(d: Record<string, TypeDrift>): string[] {
  const out: string[] = [];
  for (const [type, t] of Object.entries(d)) {
    if (t.accuracy.high < 0) out.push(`${type} ${type === 'score' ? 'exact-level accuracy' : 'accuracy'}`);
    for (const c of t.coverage) if (c.high < 0) out.push(`${type} coverage at ${c.budget * 100}% error`);
  }
  return out;
}
