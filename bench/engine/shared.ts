// 1. Shared prefix vs independent evaluation.
//
// "Shared": one request with k questions (one prefix pass over template + state, then a suffix pass
// per question). "Independent": each question asked alone, i.e. one whole-prompt pass per question
// (a one-question request is exactly that). Both run on one evaluator with the cross-request prefix
// cache off, so nothing carries over between requests. Each round times the shared requests and
// every single question once, interleaved; independent(k) = the sum of the first k single-question
// times of that round, and the ratio is taken per round.
import { loadEvaluator, TextCodec, type Question, type ShapeName, type SynthDtype } from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';

export interface SharedCase {
  stateTokens: number;
  questionCounts: number[];
  /** Questions timed alone; the independent figure for k questions scales their mean by k when fewer than k. */
  independentQuestions: number;
  rounds: number;
  /** Untimed warm-up passes at this size first (default true; skipped where one pass takes minutes). */
  warmup?: boolean;
}

export interface SharedRow {
  model: string;
  stateTokens: number;
  questions: number;
  inputTokens: number;
  shared: ReturnType<typeof roundSummary>;
  independent: ReturnType<typeof roundSummary>;
  /** independent / shared, per round */
  speedup: ReturnType<typeof pairedRatio>;
  independentScaled: boolean;
  rounds: number;
}

export async function measureShared(
  ctx: BenchContext,
  shape: ShapeName,
  dtype: SynthDtype,
  cases: SharedCase[],
): Promise<SharedRow[]> {
  const dir = await ctx.model(shape, dtype);
  const codec = await TextCodec.load(dir);
  const ev = await loadEvaluator({ modelDir: dir, variant: dtype, threads: ctx.threads, prefixCacheBytes: 0 });
  const rows: SharedRow[] = [];
  try {
    for (const c of cases) {
      const state = textOfTokens(codec, c.stateTokens, c.stateTokens);
      const maxQ = Math.max(...c.questionCounts);
      const all = mixedQuestions(maxQ);
      const keys = Object.keys(all);
      const requests = c.questionCounts.map((k) => ({
        state,
        questions: Object.fromEntries(keys.slice(0, k).map((key) => [key, all[key]!])),
      }));
      const singles = keys
        .slice(0, c.independentQuestions)
        .map((key) => ({ state, questions: { [key]: all[key]! } as Record<string, Question> }));
      ctx.log(
        `  ${shape}-${dtype}: state ${c.stateTokens} tokens × ${c.questionCounts.join('/')} questions, ${c.rounds} round(s)`,
      );
      // Warm-up: the evaluator's first pass pages the weights in; a new length grows onnxruntime's arena.
      if (c.warmup !== false) {
        await ev.evaluate(singles[0]!);
        await ev.evaluate(requests[requests.length - 1]!);
      }

      const sharedMs = requests.map(() => [] as number[]);
      const singleMs: number[][] = [];
      const inputTokens = requests.map(() => 0);
      for (let r = 0; r < c.rounds; r++) {
        const t0 = performance.now();
        for (let i = 0; i < requests.length; i++) {
          let usage = 0;
          sharedMs[i]!.push(await timeMs(async () => (usage = (await ev.evaluate(requests[i]!)).usage.input_tokens)));
          inputTokens[i] = usage;
        }
        const times: number[] = [];
        for (const s of singles) times.push(await timeMs(() => ev.evaluate(s)));
        singleMs.push(times);
        ctx.log(`    round ${r + 1}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
      c.questionCounts.forEach((k, i) => {
        const scaled = k > c.independentQuestions;
        const independent = singleMs.map((t) =>
          scaled ? (t.reduce((a, b) => a + b, 0) / t.length) * k : t.slice(0, k).reduce((a, b) => a + b, 0),
        );
        rows.push({
          model: `${shape}-${dtype}`,
          stateTokens: c.stateTokens,
          questions: k,
          inputTokens: inputTokens[i]!,
          shared: roundSummary(summarize(sharedMs[i]!), 1),
          independent: roundSummary(summarize(independent), 1),
          speedup: pairedRatio(independent, sharedMs[i]!),
          independentScaled: scaled,
          rounds: c.rounds,
        });
      });
    }
  } finally {
    await ev.close();
  }
  return rows;
}

export async function sharedSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const notes: string[] = [];
  let rows: SharedRow[];
  if (ctx.quick) {
    rows = await measureShared(ctx, 'qwen2.5-0.5b', 'int8', [
      { stateTokens: 256, questionCounts: [1, 4, 16], independentQuestions: 16, rounds: 2 },
    ]);
    notes.push(
      '--quick: only the 256-token state (2 rounds); the 2,000- and 8,000-token states and fp32 run in the full bench.',
    );
  } else {
    rows = await measureShared(ctx, 'qwen2.5-0.5b', 'int8', [
      { stateTokens: 256, questionCounts: [1, 4, 16], independentQuestions: 16, rounds: 3 },
      { stateTokens: 2000, questionCounts: [1, 4, 16], independentQuestions: 16, rounds: 2 },
      { stateTokens: 8000, questionCounts: [16], independentQuestions: 2, rounds: 1, warmup: false },
    ]);
    notes.push(
      '8,000 tokens × 16: the independent baseline timed on 2 questions alone and scaled by 8; one round and no warm-up at that length (each whole-prompt pass takes well over a minute).',
    );
    rows.push(
      ...(await measureShared(ctx, 'qwen2.5-0.5b', 'fp32', [
        { stateTokens: 2000, questionCounts: [16], independentQuestions: 3, rounds: 2 },
      ])),
    );
    notes.push('fp32 2,000 × 16: the independent baseline timed on 3 questions (one of each type) and scaled by 16/3.');
  }
  return sharedResult(ctx, rows, notes, started);
}

/** The section result for measured rows (the headline target where the 2,000 × 16 int8 row exists). */
export function sharedResult(ctx: BenchContext, rows: SharedRow[], notes: string[], started: number): SectionResult {
  notes.push(
    'A 1-question request is one whole-prompt pass, the same work as independent evaluation: its ratio is ~1 by construction.',
    'State sizes are the state text in tokens; input tokens (usage) add the template, instructions and each question.',
  );
  const headline = rows.find((r) => r.model === 'qwen2.5-0.5b-int8' && r.stateTokens === 2000 && r.questions === 16);
  const targets: Target[] = headline
    ? [
        {
          name: 'shared prefix vs independent, 2,000 tokens × 16 questions (int8)',
          goal: '≥ 10×',
          value: headline.speedup.median,
          unit: '×',
          met: headline.speedup.median >= 10,
          detail: `${headline.shared.median} ms shared vs ${headline.independent.median} ms independent`,
        },
      ]
    : [];
  const markdown = table(
    [
      'model',
      'state tokens',
      'questions',
      'input tokens',
      'shared (median, min–max)',
      'independent',
      'speed-up (median, p10–p90)',
    ],
    rows.map((r) => [
      r.model,
      r.stateTokens,
      r.questions,
      r.inputTokens,
      ms(r.shared),
      ms(r.independent) + (r.independentScaled ? ' (scaled)' : ''),
      ratio(r.speedup),
    ]),
  );
  return {
    id: 'shared',
    title: '1. Shared prefix vs independent evaluation',
    config: { quick: ctx.quick, threads: ctx.threads, prefixCacheBytes: 0 },
    results: rows,
    targets,
    notes,
    markdown,
    seconds: (performance.now() - started) / 1000,
  };
}
