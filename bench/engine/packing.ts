// 6. Packed evaluation vs one pass per question, same engine, same model (qwen2.5-0.5b int8):
//   (a) the client workload: ~9 questions on a fresh 300-token state per request;
//   (b) 2,000-token state × 16 questions;
//   (c) packing across requests: 8 concurrent one-question requests on fresh 150-token states,
//       shared passes (batchTokens 2,048) vs one pass per request (batchTokens 0), on the fp32
//       export (dynamic int8 never shares a pass across requests). Planning is
//       inline on both so the 8 reach the engine together, as they do behind a busy engine.
// Both evaluators have the prefix cache off, so every request pays its prefix pass; rounds are
// interleaved (packed and multi-pass alternate) so drift hits both alike.
import { loadEvaluator, TextCodec, type EvaluateRequest } from '../../src/internal.js';
import { ms, ratio, table, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { interleaved, pairedRatio, roundSummary, summarize } from '../lib/stats.js';
import { clientRequestsA, mixedQuestions, textOfTokens } from '../lib/text.js';

export async function packingSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const codec = await TextCodec.load(dir);
  const rounds = ctx.quick ? 3 : 10;
  const longTokens = ctx.quick ? 1000 : 2000;
  const cases: Array<{ name: string; requests: EvaluateRequest[] }> = [
    { name: '(a) ~9 questions, 300-token state', requests: clientRequestsA(codec, rounds + 1, 500) },
    {
      name: `${longTokens.toLocaleString('en')}-token state × 16 questions`,
      requests: Array.from({ length: rounds + 1 }, (_, i) => ({
        state: textOfTokens(codec, longTokens, 900 + i),
        questions: mixedQuestions(16, 11 + i),
      })),
    },
  ];
  const packed = await loadEvaluator({ modelDir: dir, variant: 'int8', threads: ctx.threads, prefixCacheBytes: 0 });
  const multi = await loadEvaluator({
    modelDir: dir,
    variant: 'int8',
    threads: ctx.threads,
    prefixCacheBytes: 0,
    packQuestions: false,
  });
  const rows: Array<Record<string, unknown>> = [];
  try {
    for (const c of cases) {
      ctx.log(`  ${c.name}: ${rounds} round(s)`);
      let i = 0;
      let j = 0;
      // Each round sends the next request to both (a fresh state: no cache on either side).
      const s = await interleaved(
        {
          multi: () => multi.evaluate(c.requests[i++ % c.requests.length]!),
          packed: () => packed.evaluate(c.requests[j++ % c.requests.length]!),
        },
        { rounds, warmup: 1 },
      );
      rows.push({
        workload: c.name,
        multiPass: roundSummary(summarize(s.multi), 1),
        packed: roundSummary(summarize(s.packed), 1),
        speedup: pairedRatio(s.multi, s.packed),
      });
    }
  } finally {
    await packed.close();
    await multi.close();
  }
  // The fp32 export: dynamic int8 never shares a pass across requests (one activation scale per
  // pass would let one request's tokens move another's answers). fp32 passes are slower: fewer rounds.
  const roundsC = ctx.quick ? 2 : 5;
  ctx.log(`  (c) 8 concurrent one-question requests, fp32: ${roundsC} round(s)`);
  const fp32 = await ctx.model('qwen2.5-0.5b', 'fp32');
  const shared = await loadEvaluator({
    modelDir: fp32,
    variant: 'fp32',
    threads: ctx.threads,
    batchTokens: 2048,
    plannerThreads: 0,
  });
  const apart = await loadEvaluator({
    modelDir: fp32,
    variant: 'fp32',
    threads: ctx.threads,
    batchTokens: 0,
    plannerThreads: 0,
  });
  try {
    let seed = 3000;
    const eight = () =>
      Array.from({ length: 8 }, () => ({
        state: textOfTokens(codec, 150, seed++),
        questions: mixedQuestions(1, seed),
      }));
    const passes = { shared: 0, apart: 0 };
    const s = await interleaved(
      {
        apart: async () => void (await Promise.all(eight().map((r) => apart.evaluate(r)))),
        shared: async () => void (await Promise.all(eight().map((r) => shared.evaluate(r)))),
      },
      { rounds: roundsC, warmup: 1 },
    );
    passes.shared = shared.stats().passes / (roundsC + 1);
    passes.apart = apart.stats().passes / (roundsC + 1);
    rows.push({
      workload: `(c) 8 concurrent one-question requests, 150-token states, fp32 (passes per round: ${passes.apart} one by one, ${passes.shared} shared)`,
      multiPass: roundSummary(summarize(s.apart), 1),
      packed: roundSummary(summarize(s.shared), 1),
      speedup: pairedRatio(s.apart, s.shared),
    });
  } finally {
    await shared.close();
    await apart.close();
  }
  const goal = (r: Record<string, unknown>, min: number, name: string): Target => {
    const v = (r.speedup as ReturnType<typeof pairedRatio>).median;
    return { name, goal: `≥ ${min}×`, value: v, unit: '×', met: v >= min };
  };
  const targets = [
    goal(rows[0]!, 1.4, `packed vs multi-pass, ${cases[0]!.name}`),
    goal(rows[1]!, 1.2, `packed vs multi-pass, ${cases[1]!.name}`),
    goal(
      rows[2]!,
      1.3,
      'throughput, 8 concurrent one-question requests on 150-token states, packed across requests vs one by one',
    ),
  ];
  return {
    id: 'packing',
    title: '6. Packed evaluation vs one pass per question',
    config: { model: 'qwen2.5-0.5b-int8', threads: ctx.threads, rounds, quick: ctx.quick },
    results: rows,
    targets,
    notes: [
      '(a), (b): prefix cache off on both; each request has a fresh state. Per-round ratio median (p10–p90).',
      '(c): the columns are one pass per request and passes shared across requests, on the fp32 export (dynamic int8 never shares a pass across requests). On CPU the plain-op attention computes every score of the shared pass before masking, so its cost grows with the square of the packed tokens: which is why batchTokens defaults to 0 on CPU and 4,096 on CUDA.',
      ...(ctx.quick ? ['--quick: a 1,000-token long state and 3 rounds.'] : []),
    ],
    markdown: table(
      ['workload', 'one pass per question (c: per request)', 'packed (c: across requests)', 'speedup'],
      rows.map((r) => [
        r.workload as string,
        ms(r.multiPass as never),
        ms(r.packed as never),
        ratio(r.speedup as never),
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
