// Small statistics and timing helpers. Every comparison in the suite is a ratio inside one run,
// measured interleaved (A, B, A, B, ...) so that both sides see the same noise on a shared machine.

export interface Summary {
  n: number;
  median: number;
  min: number;
  max: number;
  p10: number;
  p90: number;
  mean: number;
}

export function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function summarize(samples: number[]): Summary {
  const s = [...samples].sort((a, b) => a - b);
  return {
    n: s.length,
    median: quantile(s, 0.5),
    min: s[0] ?? NaN,
    max: s[s.length - 1] ?? NaN,
    p10: quantile(s, 0.1),
    p90: quantile(s, 0.9),
    mean: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length),
  };
}

/** Rounds for JSON output (3 significant decimals in ms is plenty). */
export function round(x: number, digits = 3): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function roundSummary(s: Summary, digits = 3): Summary {
  return {
    n: s.n,
    median: round(s.median, digits),
    min: round(s.min, digits),
    max: round(s.max, digits),
    p10: round(s.p10, digits),
    p90: round(s.p90, digits),
    mean: round(s.mean, digits),
  };
}

export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * Times several tasks interleaved: `warmup` untimed rounds, then `rounds` rounds in which every task
 * runs once (in rotating order). Returns each task's samples in milliseconds.
 */
export async function interleaved<K extends string>(
  tasks: Record<K, () => Promise<unknown>>,
  opts: { rounds: number; warmup?: number },
): Promise<Record<K, number[]>> {
  const names = Object.keys(tasks) as K[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let w = 0; w < (opts.warmup ?? 1); w++) for (const n of names) await tasks[n]();
  for (let r = 0; r < opts.rounds; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]!);
    for (const n of order) samples[n].push(await timeMs(tasks[n]));
  }
  return samples;
}

/**
 * Ratio of two paired sample sets: the median of per-round ratios a[i]/b[i] (robust to drift),
 * with its p10/p90 spread, and the ratio of medians.
 */
export function pairedRatio(a: number[], b: number[]): { median: number; p10: number; p90: number; ofMedians: number } {
  const r = a.map((x, i) => x / b[i]!).sort((x, y) => x - y);
  return {
    median: round(quantile(r, 0.5), 2),
    p10: round(quantile(r, 0.1), 2),
    p90: round(quantile(r, 0.9), 2),
    ofMedians: round(summarize(a).median / summarize(b).median, 2),
  };
}
