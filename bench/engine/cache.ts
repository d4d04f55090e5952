// 3. Cross-request prefix cache: the same state asked again (hit) vs a cold engine (cache off).
// Two evaluators of the same model: one with the cache on, warmed by one request with the state;
// one with prefixCacheBytes 0. Rounds alternate between them.
import { loadEvaluator, TextCodec } from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult } from '../lib/context.js';
import { interleaved, pairedRatio, roundSummary, summarize } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';

export async function cacheSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const stateTokens = ctx.quick ? 256 : 2000;
  const rounds = ctx.quick ? 3 : 5;
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const codec = await TextCodec.load(dir);
  const request = { state: textOfTokens(codec, stateTokens, 5), questions: mixedQuestions(4) };
  ctx.log(`  state ${stateTokens} tokens × 4 questions, ${rounds} rounds`);
  const cold = await loadEvaluator({ modelDir: dir, variant: 'int8', threads: ctx.threads, prefixCacheBytes: 0 });
  const warm = await loadEvaluator({
    modelDir: dir,
    variant: 'int8',
    threads: ctx.threads,
    prefixCacheBytes: 256 * 1024 * 1024,
  });
  let samples: Record<'cold' | 'hit', number[]>;
  let hits: number;
  let misses: number;
  let same: boolean;
  let offDelta: number;
  try {
    const a = await cold.evaluate(request);
    const b = await warm.evaluate(request); // a miss: fills the cache
    samples = await interleaved(
      { cold: () => cold.evaluate(request), hit: () => warm.evaluate(request) },
      { rounds, warmup: 1 },
    );
    const c = await warm.evaluate(request);
    // A server answers the same whether its cache hits or not: the miss and the hit run the same passes.
    same =
      JSON.stringify(b.answers) === JSON.stringify(c.answers) && JSON.stringify(b.usage) === JSON.stringify(c.usage);
    // With the cache off the prefix's last chunk rides with the questions: another pass layout, and
    // dynamic int8 scales each pass's activations as a whole.
    offDelta = largestDifference(a.answers, c.answers);
    ({ prefixCacheHits: hits, prefixCacheMisses: misses } = warm.stats());
  } finally {
    await cold.close();
    await warm.close();
  }
  const result = {
    stateTokens,
    questions: 4,
    cold: roundSummary(summarize(samples.cold), 1),
    hit: roundSummary(summarize(samples.hit), 1),
    speedup: pairedRatio(samples.cold, samples.hit),
    cacheHits: hits,
    cacheMisses: misses,
    answersIdentical: same,
    largestDifferenceCacheOff: offDelta,
  };
  return {
    id: 'cache',
    title: '3. Cross-request prefix cache',
    config: { model: 'qwen2.5-0.5b-int8', threads: ctx.threads, rounds, quick: ctx.quick },
    results: result,
    targets: [],
    notes: [
      'Hit: the same state asked again (its prefix KV comes from the cache, only the 4 suffixes run). Cold: prefixCacheBytes 0.',
      `Answers and usage of a hit identical to those of the miss that filled the cache: ${same ? 'yes' : 'NO'}.`,
      `Against the engine with the cache off (the prefix's last chunk rides in the questions' pass, and int8 scales activations per pass): largest difference in any probability or score ${offDelta.toPrecision(2)}.`,
      ...(ctx.quick ? ['--quick: 256-token state instead of 2,000.'] : []),
    ],
    markdown: table(
      ['state tokens', 'questions', 'cold', 'cache hit', 'speed-up (median, p10–p90)', 'hits / misses'],
      [[stateTokens, 4, ms(result.cold), ms(result.hit), ratio(result.speedup), `${hits} / ${misses}`]],
    ),
    seconds: (performance.now() - started) / 1000,
  };
}

/** The largest absolute difference between the numbers at the same places of two answer maps. */
function largestDifference(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b);
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return 0;
  let most = 0;
  for (const [k, v] of Object.entries(a))
    most = Math.max(most, largestDifference(v, (b as Record<string, unknown>)[k]));
  return most;
}
