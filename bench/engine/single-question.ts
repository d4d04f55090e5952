// 3b. One question per request about the same state (issue: several services asking one document,
// a UI asking as the user types). The prefix is stored on its second sighting, so requests 3..8 on a
// state hit the cache; a one-off one-question request keeps its single pass. Tiny model (the default
// server's), a state of about 3,000 words, cache on as `assay serve` has it.
import { loadEvaluator, TextCodec, type Evaluator, type Question } from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult } from '../lib/context.js';
import { interleaved, pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';

const IN_A_ROW = 8;

export async function singleQuestionSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const stateTokens = ctx.quick ? 1000 : 4000;
  const rounds = ctx.quick ? 2 : 5;
  const dir = await ctx.model('tiny', 'fp32');
  const codec = await TextCodec.load(dir);
  const questions = Object.values(mixedQuestions(IN_A_ROW)) as Question[];
  const state = (seed: number) => textOfTokens(codec, stateTokens, seed);
  const words = state(1).split(/\s+/).length;
  ctx.log(
    `  state ${stateTokens} tokens (${words} words), ${IN_A_ROW} one-question requests in a row, ${rounds} rounds`,
  );
  const on = await loadEvaluator({ modelDir: dir, threads: ctx.threads });
  const off = await loadEvaluator({ modelDir: dir, threads: ctx.threads, prefixCacheBytes: 0 });
  const byPosition: number[][] = Array.from({ length: IN_A_ROW }, () => []);
  let hits: number;
  let oneOff: Record<'admission' | 'cacheOff', number[]>;
  try {
    const ask = (e: Evaluator, s: string, i: number) =>
      e.evaluate({ state: s, questions: { q: questions[i % questions.length]! } }, { cacheScope: 'bench' });
    await ask(on, state(999), 0); // warm-up: sessions, planner
    const before = on.stats().prefixCacheHits;
    for (let r = 0; r < rounds; r++) {
      const s = state(100 + r);
      for (let i = 0; i < IN_A_ROW; i++) byPosition[i]!.push(await timeMs(() => ask(on, s, i)));
    }
    hits = on.stats().prefixCacheHits - before;
    // One-off one-question requests (a new state each time): the admission's bookkeeping (a hash of
    // the prefix, a set of 1,024) against an engine with the cache off, which does none of it.
    let n = 0;
    oneOff = await interleaved(
      { admission: () => ask(on, state(5000 + n++), 0), cacheOff: () => ask(off, state(5000 + n++), 0) },
      { rounds: rounds * 2, warmup: 1 },
    );
  } finally {
    await on.close();
    await off.close();
  }
  const first = summarize(byPosition[0]!);
  const later = summarize(byPosition.slice(2).flat());
  const perRound = byPosition[0]!.map(
    (f, r) => f / (byPosition.slice(2).reduce((a, p) => a + p[r]!, 0) / (IN_A_ROW - 2)),
  );
  const speedup = pairedRatio(
    perRound,
    perRound.map(() => 1),
  );
  const oneOffRatio = pairedRatio(oneOff.admission, oneOff.cacheOff);
  const result = {
    stateTokens,
    words,
    byPosition: byPosition.map((p) => roundSummary(summarize(p), 1)),
    firstVsLater: speedup,
    cacheHits: hits,
    expectedHits: rounds * (IN_A_ROW - 2),
    oneOff: {
      admission: roundSummary(summarize(oneOff.admission), 1),
      cacheOff: roundSummary(summarize(oneOff.cacheOff), 1),
      ratio: oneOffRatio,
    },
  };
  return {
    id: 'single-question',
    title: '3b. One question per request on one state',
    config: { model: 'tiny-fp32', threads: ctx.threads, rounds, quick: ctx.quick },
    results: result,
    targets: [
      {
        name: 'requests 3..8 of one state vs the first (one question each)',
        goal: '≥ 3×',
        value: speedup.median,
        unit: '×',
        met: speedup.median >= 3,
        detail: `p10–p90 ${speedup.p10}–${speedup.p90}; ${hits} cache hits of ${rounds * (IN_A_ROW - 2)}`,
      },
      {
        name: 'one-off one-question request, admission bookkeeping vs none',
        goal: '≤ 1.05× (noise)',
        value: oneOffRatio.median,
        unit: '×',
        met: oneOffRatio.median <= 1.05,
        detail: `p10–p90 ${oneOffRatio.p10}–${oneOffRatio.p90}`,
      },
    ],
    notes: [
      `Request 1 runs the whole prompt in one pass and remembers a hash of its prefix; request 2 sees it again, runs the prefix as a pass of its own and stores it; requests 3..8 hit.`,
      `First request ${ms(first)}; requests 3..8 ${ms(later)} (median over ${rounds} states, min–max, ms).`,
    ],
    markdown:
      table(
        ['request', ...byPosition.map((_, i) => String(i + 1))],
        [['ms (median)', ...byPosition.map((p) => summarize(p).median.toFixed(1))]],
      ) +
      `\n\nRequests 3..8 vs the first: ${ratio(speedup)}. One-off requests with the admission bookkeeping vs the cache off: ${ratio(oneOffRatio)}.`,
    seconds: (performance.now() - started) / 1000,
  };
}
