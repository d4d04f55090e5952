// 3c. What the per-token int8 rewrite costs: the int8 engine rows (one request of k questions on a
// fresh state, the shared section's shapes) on two engines of the same model, one with the load-time
// rewrite (each token's activations quantized with their own scale, the default) and one without it
// (`perTokenInt8: false`: one activation scale per pass, as exported). Both have the prefix cache off
// so every request pays its prefix. Every round times one request (a state of its own) on both
// engines back to back, alternating which goes first (A, B, then B, A), so a busy machine slows both
// alike; the ratio is per round, rewrite on / off. Single rounds on a shared 2-core machine scatter
// by ±10%, several times the effect measured, hence the rounds.
import { loadEvaluator, TextCodec, type EvaluateRequest, type Evaluator } from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';

interface Row {
  stateTokens: number;
  questions: number;
  rounds: number;
}

/** Within this of the engine without the rewrite: the speed the rewrite is allowed to cost. */
const GOAL = 1.05;

export async function perTokenInt8Section(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const rows: Row[] = ctx.quick
    ? [1, 4, 16].map((questions) => ({ stateTokens: 256, questions, rounds: 8 }))
    : [
        ...[1, 4, 16].map((questions) => ({ stateTokens: 256, questions, rounds: 40 })),
        ...[1, 16].map((questions) => ({ stateTokens: 2000, questions, rounds: 12 })),
      ];
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const codec = await TextCodec.load(dir);
  const warnings: string[] = [];
  const load = (perTokenInt8: boolean) =>
    loadEvaluator({
      modelDir: dir,
      variant: 'int8',
      threads: ctx.threads,
      prefixCacheBytes: 0,
      perTokenInt8,
      onNote: (w) => warnings.push(w.message),
    });
  const engines: Record<'on' | 'off', Evaluator> = { on: await load(true), off: await load(false) };
  const measured: Array<Row & { inputTokens: number; on: number[]; off: number[] }> = [];
  try {
    const all = mixedQuestions(16);
    const keys = Object.keys(all);
    let seed = 7000;
    // A fresh state per round (the prefix cache is off anyway), the same on both sides of a round.
    const request = (row: Row): EvaluateRequest => ({
      state: textOfTokens(codec, row.stateTokens, seed++),
      questions: Object.fromEntries(keys.slice(0, row.questions).map((k) => [k, all[k]!])),
    });
    for (const row of rows) {
      ctx.log(`  state ${row.stateTokens} tokens × ${row.questions} questions, ${row.rounds} rounds, rewrite on / off`);
      // Warm-up at this size on both: first passes page the weights in and grow onnxruntime's arena.
      const inputTokens = (await engines.on.evaluate(request(row))).usage.input_tokens;
      await engines.off.evaluate(request(row));
      const times = { on: [] as number[], off: [] as number[] };
      for (let r = 0; r < row.rounds; r++) {
        const order = r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const);
        const req = request(row);
        for (const side of order) times[side].push(await timeMs(() => engines[side].evaluate(req)));
      }
      measured.push({ ...row, inputTokens, ...times });
    }
  } finally {
    await engines.on.close();
    await engines.off.close();
  }
  const results = measured.map((m) => ({
    stateTokens: m.stateTokens,
    questions: m.questions,
    inputTokens: m.inputTokens,
    rounds: m.rounds,
    on: roundSummary(summarize(m.on), 1),
    off: roundSummary(summarize(m.off), 1),
    /** rewrite on / off, per round */
    ratio: pairedRatio(m.on, m.off),
  }));
  const targets: Target[] = results.map((r) => ({
    name: `per-token int8 rewrite on / off, ${r.stateTokens} tokens × ${r.questions} questions`,
    goal: `≤ ${GOAL.toFixed(2)}×`,
    value: r.ratio.median,
    unit: '×',
    met: r.ratio.median <= GOAL,
    detail: `p10–p90 ${r.ratio.p10}–${r.ratio.p90}; ${r.on.median} ms on vs ${r.off.median} ms off`,
  }));
  return {
    id: 'per-token-int8',
    title: '3c. Per-token int8 activations: the rewrite on vs off',
    config: { model: 'qwen2.5-0.5b-int8', threads: ctx.threads, prefixCacheBytes: 0, quick: ctx.quick },
    results,
    targets,
    notes: [
      'Rewrite on: each token’s activations quantized with their own scale, so an answer does not depend on what shares its pass (the default). Off: one scale per pass, as exported.',
      'A ratio above 1 is the rewrite’s cost. Read the p10–p90 spread before a median: on a busy machine single rounds scatter by more than the effect.',
      ...(ctx.quick
        ? [
            '--quick: the 256-token state only, 8 rounds; the full run has 40 rounds and adds the 2,000-token state (12 rounds).',
          ]
        : []),
      ...warnings.map((w) => `Load: ${w}`),
    ],
    markdown: table(
      [
        'state tokens',
        'questions',
        'input tokens',
        'rewrite on (median, min–max)',
        'off',
        'on / off (median, p10–p90)',
      ],
      results.map((r) => [r.stateTokens, r.questions, r.inputTokens, ms(r.on), ms(r.off), ratio(r.ratio)]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
