// Two runs of one dataset side by side (assay eval --dataset --compare): per question type, how
// many answers flipped (another yes/no, option or most probable level), how many of those were
// fixed or broken against the labels, and how far the probabilities moved. Pure, no I/O.
import type { Answer } from '../protocol/index.js';
import { argmax } from './metrics.js';

export interface FlipCounts {
  /** Answers compared. */
  count: number;
  /** The decision differs: yes/no at 0.5, the chosen option, the most probable level. */
  flipped: number;
  /** Wrong in the first run, right in the second. */
  fixed: number;
  /** Right in the first run, wrong in the second. */
  broken: number;
  /** Mean over answers of the largest change of one outcome's probability. */
  meanMaxDelta: number;
}

/** The answer's decision, comparable with its label (true/false, the option, the level). */
export function decision(a: Answer): boolean | string | number {
  if (a.type === 'noul') return a.noul >= 0.5;
  if (a.type === 'choice') return a.choice;
  return Number(argmax(a.probabilities));
}

function outcomes(a: Answer): Record<string, number> {
  return a.type === 'noul' ? { yes: a.noul, no: 1 - a.noul } : a.probabilities;
}

/** Flips per question type between two runs' answers to the same questions (`expected`: their labels). */
export function countFlips(pairs: Array<{ a: Answer; b: Answer; expected: unknown }>): Record<string, FlipCounts> {
  const out: Record<string, FlipCounts> = {};
  for (const { a, b, expected } of pairs) {
    const c = (out[a.type] ??= { count: 0, flipped: 0, fixed: 0, broken: 0, meanMaxDelta: 0 });
    const [da, db] = [decision(a), decision(b)];
    c.count++;
    if (da !== db) {
      c.flipped++;
      if (db === expected) c.fixed++;
      if (da === expected) c.broken++;
    }
    const [pa, pb] = [outcomes(a), outcomes(b)];
    c.meanMaxDelta += Math.max(...Object.keys(pa).map((k) => Math.abs((pa[k] ?? 0) - (pb[k] ?? 0))));
  }
  for (const c of Object.values(out)) c.meanMaxDelta /= c.count;
  return out;
}
