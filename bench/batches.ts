// Batch jobs against the client-side fan-out they replace, on `assay serve` (a child process):
// (1) wall time of a batch (200 states × 50 questions, one question per line, mixed types; submitted,
// its results read while it runs) against the same lines sent one by one through the official
// TypeScript SDK at concurrency 1, 4, 16, 64, the best of them over the batch (goal ≥ 1.3×);
// (2) the p50 / p99 of a light open-loop interactive load (3 questions on a ticket of its own, 4/s:
// about 6% of the engine's time; a p99 needs over 100 samples, and the tiny batch drains in ~35 s)
// while a batch drains, over the same load on the idle server (goal ≤ 1.25×); on the tiny model and
// the 0.5B int8 shape. The batch's answers on ~50 sampled lines equal each fan-out's (1e-6).
// Sizes, by environment (for a shorter run, or the 0.5B shape at full size):
//   ASSAY_BENCH_BATCH_SHAPES=tiny,qwen2.5-0.5b   the models (default both; --quick: tiny)
//   ASSAY_BENCH_BATCH_LINES=10000 or tiny:10000,qwen2.5-0.5b:500   lines (defaults those; --quick 1,000)
//   ASSAY_BENCH_BATCH_QUESTIONS=50               questions per state (one a line)
//   ASSAY_BENCH_BATCH_CONCURRENCY=1,4,16,64      the fan-out's concurrencies
//   ASSAY_BENCH_BATCH_IDLE_S=60                  seconds of interactive load on the idle server (--quick 20)
//   ASSAY_BENCH_BATCH_RPS=4                      interactive requests per second (default 4, 0.5 on 0.5B)
//   ASSAY_BENCH_BATCH_ROUNDS=3                   rounds (default 3; --quick 1): the first runs every
//                                                concurrency, later ones the batch and the best again
//                                                and the interactive load; ratios are the rounds' median
import type { ShapeName, SynthDtype } from '../src/internal.js';
import { table, type BenchContext, type SectionResult, type Target } from './lib/context.js';
import { round, summarize } from './lib/stats.js';
import { measureShape, type ShapePlan, type ShapeResult } from './batches/measure.js';

const DEFAULT_LINES: Record<string, number> = { tiny: 10_000, 'qwen2.5-0.5b': 500 };

function env(name: string): string | undefined {
  const v = process.env[name]?.trim();
  return v ? v : undefined;
}

function numbers(name: string, fallback: number[]): number[] {
  const v = env(name);
  if (!v) return fallback;
  const out = v.split(',').map(Number);
  if (out.some((n) => !Number.isFinite(n) || n <= 0)) throw new Error(`${name}: positive numbers, comma-separated`);
  return out;
}

function linesFor(shape: string, quick: boolean): number {
  const v = env('ASSAY_BENCH_BATCH_LINES');
  if (v && /^\d+$/.test(v)) return Number(v);
  const named = v ? Object.fromEntries(v.split(',').map((p) => p.split(':') as [string, string])) : {};
  if (named[shape]) return Number(named[shape]);
  return quick ? 1_000 : (DEFAULT_LINES[shape] ?? 1_000);
}

export function plans(ctx: BenchContext): ShapePlan[] {
  const shapes = (env('ASSAY_BENCH_BATCH_SHAPES') ?? (ctx.quick ? 'tiny' : 'tiny,qwen2.5-0.5b')).split(',');
  return shapes.map((shape) => ({
    shape: shape as ShapeName,
    dtype: (shape === 'tiny' ? 'fp32' : 'int8') as SynthDtype,
    lines: linesFor(shape, ctx.quick),
    questions: numbers('ASSAY_BENCH_BATCH_QUESTIONS', [50])[0]!,
    concurrency: numbers('ASSAY_BENCH_BATCH_CONCURRENCY', [1, 4, 16, 64]),
    idleSeconds: numbers('ASSAY_BENCH_BATCH_IDLE_S', [ctx.quick ? 20 : 60])[0]!,
    // Light for the model: 4/s is ~6% of the tiny model's engine time, 0.5/s ~30% of the 0.5B int8 shape's
    // on two cores (a 3-question request takes ~0.6 s there; 4/s would leave a batch nothing).
    rps: numbers('ASSAY_BENCH_BATCH_RPS', [shape === 'tiny' ? 4 : 0.5])[0]!,
    rounds: numbers('ASSAY_BENCH_BATCH_ROUNDS', [ctx.quick ? 1 : 3])[0]!,
  }));
}

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The median of the rounds' values, with their range when there are several. */
function overRounds(values: number[]): { median: number; range: string } {
  const sum = summarize(values);
  return {
    median: round(sum.median, 2),
    range: values.length > 1 ? `; rounds ${values.map((v) => `${round(v, 2)}×`).join(', ')}` : '',
  };
}

function targets(r: ShapeResult): Target[] {
  const best = r.fanOuts.reduce((a, b) => (b.ms < a.ms ? b : a));
  const wall = overRounds(r.rounds.map((x) => x.fanOutMs / x.batchMs));
  const speedup = wall.median;
  // Latency over every round's samples pooled (a p99 needs them), each round's ratio beside it.
  const p50 = round(r.interactive.draining.p50 / r.interactive.idle.p50, 2);
  const p99 = round(r.interactive.draining.p99 / r.interactive.idle.p99, 2);
  const p50Rounds = overRounds(r.rounds.map((x) => x.draining.p50 / x.idle.p50)).range;
  const p99Rounds = overRounds(r.rounds.map((x) => x.draining.p99 / x.idle.p99)).range;
  const diff = Number(Math.max(...r.fanOuts.map((f) => f.maxDiff)).toPrecision(3));
  const compared = Math.min(...r.fanOuts.map((f) => f.compared));
  const size = `${r.plan.lines} lines, ${r.model}`;
  // Every round's batch, not only the first's (whose counts the detail shows).
  const complete = r.rounds.every((x) => x.complete);
  return [
    {
      name: `batch wall time against the best SDK fan-out (${size})`,
      goal: '≥ 1.3×',
      value: speedup,
      unit: '×',
      met: speedup >= 1.3,
      detail: `median of ${r.rounds.length} round(s); round 1: batch ${s(r.batch.ms)}, best fan-out concurrency ${best.concurrency} ${s(best.ms)}${wall.range}`,
    },
    {
      name: `interactive p50 while the batch drains over idle (${size})`,
      goal: '≤ 1.25×',
      value: p50,
      unit: '×',
      met: p50 <= 1.25,
      detail: `${r.interactive.draining.p50} ms (${r.interactive.draining.n} requests) over ${r.interactive.idle.p50} ms (${r.interactive.idle.n}), pooled${p50Rounds}`,
    },
    {
      name: `interactive p99 while the batch drains over idle (${size})`,
      goal: '≤ 1.25×',
      value: p99,
      unit: '×',
      met: p99 <= 1.25,
      detail: `${r.interactive.draining.p99} ms over ${r.interactive.idle.p99} ms, pooled${p99Rounds}`,
    },
    {
      name: `batch answers equal the fan-out's, every line once (${size})`,
      goal: '≤ 1e-6',
      value: diff,
      unit: 'max |Δ|',
      met: diff <= 1e-6 && compared > 0 && complete,
      detail: `${compared} sampled lines against each concurrency, ${Math.max(...r.fanOuts.map((f) => f.overCount))} past 1e-6; batch ${r.batch.status}, ${r.batch.ok} answered, ${r.batch.failed} failed, ${r.batch.duplicates} duplicates; every line once in ${r.rounds.filter((x) => x.complete).length} of ${r.rounds.length} round(s)`,
    },
  ];
}

function markdown(rows: ShapeResult[]): string {
  const wall = rows.flatMap((r) => {
    const lps = (ms: number) => round(r.plan.lines / (ms / 1000), 1);
    return [
      [
        r.model,
        `${r.plan.lines} (${r.states} × ${r.plan.questions})`,
        'batch',
        '–',
        s(r.batch.ms),
        lps(r.batch.ms),
        r.batch.failed,
        '–',
        '1.00×',
      ],
      ...r.fanOuts.map((f) => [
        r.model,
        `${r.plan.lines} (${r.states} × ${r.plan.questions})`,
        'SDK fan-out',
        f.concurrency,
        s(f.ms),
        lps(f.ms),
        f.failed,
        f.retried,
        `${round(f.ms / r.batch.ms, 2)}×`,
      ]),
    ];
  });
  const live = rows.flatMap((r) => {
    const { idle, draining, drainBatch } = r.interactive;
    return [
      [
        r.model,
        'idle (before and after)',
        idle.n,
        idle.failed,
        idle.p50,
        idle.p99,
        '',
        '',
        `${idle.engine.p50} / ${idle.engine.p99}`,
        `${idle.server.p50} / ${idle.server.p99}`,
      ],
      [
        r.model,
        `batch draining (${s(drainBatch.ms)})`,
        draining.n,
        draining.failed,
        draining.p50,
        draining.p99,
        `${round(draining.p50 / idle.p50, 2)}×`,
        `${round(draining.p99 / idle.p99, 2)}×`,
        `${draining.engine.p50} / ${draining.engine.p99}`,
        `${draining.server.p50} / ${draining.server.p99}`,
      ],
    ];
  });
  const perRound = rows.flatMap((r) =>
    r.rounds.map((x, i) => [
      r.model,
      i + 1,
      s(x.batchMs),
      `${s(x.fanOutMs)} (${x.concurrency})`,
      `${round(x.fanOutMs / x.batchMs, 2)}×`,
      `${x.idle.p50} / ${x.idle.p99}`,
      `${x.draining.p50} / ${x.draining.p99}`,
      `${round(x.draining.p50 / x.idle.p50, 2)}× / ${round(x.draining.p99 / x.idle.p99, 2)}×`,
    ]),
  );
  return [
    table(
      [
        'model',
        'lines (states × questions)',
        'client',
        'concurrency',
        'wall',
        'lines/s',
        'failed',
        'retried',
        'over the batch',
      ],
      wall,
    ),
    '',
    table(
      [
        'model',
        'interactive load',
        'requests',
        'failed',
        'p50 ms',
        'p99 ms',
        'p50 / idle',
        'p99 / idle',
        'engine p50 / p99 ms',
        'server p50 / p99 ms',
      ],
      live,
    ),
    '',
    table(
      [
        'model',
        'round',
        'batch',
        'fan-out (concurrency)',
        'fan-out / batch',
        'idle p50 / p99 ms',
        'draining p50 / p99 ms',
        'draining / idle',
      ],
      perRound,
    ),
  ].join('\n');
}

export async function batchesSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const rows: ShapeResult[] = [];
  for (const plan of plans(ctx)) rows.push(await measureShape(ctx, plan));
  return {
    id: 'batches',
    title: 'Batch jobs against the SDK fan-out, and interactive latency while a batch drains',
    config: { plans: rows.map((r) => r.plan), threads: ctx.threads, quick: ctx.quick },
    results: rows.map(({ plan: _plan, ...r }) => r),
    targets: rows.flatMap(targets),
    notes: [
      "Every run on a fresh `assay serve` (prefix cache empty); per-key limits raised so neither client is paced. The lines are state-major (a ticket's questions one after another), the order that gives the fan-out its prefix-cache hits.",
      'Batch wall time: from the first byte of POST /v1/batches to the last result line read (pages of 10,000 read while it runs, following Link). Fan-out: the official TypeScript SDK (`@typesafe-ai/sdk`), one request a line, N in flight, 20 retries honouring retry-after (refusals counted as retried).',
      `Interactive: an open loop (sent on a clock) of 3-question requests on tickets of their own, another key; idle is half before the batch and half after it on the same server, draining is while a batch of the same lines runs, its client (submitting, then reading its results as they come) in a thread of its own, as a separate client. Its server reports Server-Timing: engine (queue wait + passes) and the whole request (server), to tell a wait in the engine's lanes from one around it.`,
      'Rounds: the first runs the batch and the fan-out at every concurrency (the first table), each later one the batch and the best concurrency again, and every round the interactive load (the second table pools their samples). The wall-time target is the median of the rounds’ ratios, the latency targets the pooled percentiles, each round’s ratios beside them (the third table): on two cores shared with other machines a single run moves by ±20% over minutes.',
    ],
    markdown: markdown(rows),
    seconds: (performance.now() - started) / 1000,
  };
}
