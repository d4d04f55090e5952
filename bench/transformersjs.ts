// 4. Side by side with transformers.js (@huggingface/transformers 4.3.1) on the same model folder.
//
// Both sides get the same token ids: the engine's own plan (prompt wording, chat template, state
// first, each question after it). transformers.js runs them two ways:
//   naive: one full forward pass per question over the whole prompt (what most users do), reading
//          the answer tokens' logits at the last position;
//   cache: its best: one forward over the shared prefix, then its `present.*` passed back as
//          `past_key_values` in a DynamicCache with each question's suffix.
// Ours: one evaluate() request with all the questions (prefix cache off). Ours also scores
// multi-token labels exactly (extra passes); transformers.js is only asked for first-token logits,
// so the comparison favours it slightly.
import * as ort from 'onnxruntime-node';
import {
  firstTokens,
  loadEvaluator,
  ModelRunner,
  openModelFolder,
  planRequest,
  promptSet,
  TextCodec,
  type Question,
} from '../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from './lib/context.js';
import { interleaved, pairedRatio, round, roundSummary, summarize } from './lib/stats.js';
import { mixedQuestions, textOfTokens } from './lib/text.js';

type TjsTensor = { dims: number[]; data: Float32Array | BigInt64Array; type: string };
type TjsModel = ((inputs: Record<string, unknown>) => Promise<Record<string, TjsTensor>>) & {
  dispose(): Promise<void>;
};

interface Case {
  stateTokens: number;
  questions: number;
  /** Questions the naive path runs per round; its total is scaled to `questions` when fewer. */
  naiveQuestions: number;
  rounds: number;
}

export async function transformersSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const cases: Case[] = ctx.quick
    ? [{ stateTokens: 256, questions: 4, naiveQuestions: 4, rounds: 2 }]
    : [
        { stateTokens: 256, questions: 4, naiveQuestions: 4, rounds: 3 },
        { stateTokens: 2000, questions: 16, naiveQuestions: 4, rounds: 2 },
      ];
  const tjs = await import('@huggingface/transformers');
  const { env, AutoModelForCausalLM, Tensor, DynamicCache } = tjs;
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = `${dir}/..`;
  const name = dir.split('/').pop()!;
  ctx.log(`  loading ${name} in transformers.js (dtype q8)`);
  const model = (await AutoModelForCausalLM.from_pretrained(name, {
    dtype: 'q8',
    use_external_data_format: true,
    session_options: { intraOpNumThreads: ctx.threads, interOpNumThreads: 1 },
  })) as unknown as TjsModel;

  const codec = await TextCodec.load(dir);
  const folder = await openModelFolder(dir, 'int8');
  const endToken = codec.eosTokenId ?? folder.eosTokenIds[0]!;
  const ev = await loadEvaluator({ modelDir: dir, variant: 'int8', threads: ctx.threads, prefixCacheBytes: 0 });

  const ids = (a: number[]) => new Tensor('int64', BigInt64Array.from(a, BigInt), [1, a.length]);
  const ones = (n: number) => new Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]);
  const lastRow = (logits: TjsTensor) => {
    const [, n = 0, v = 0] = logits.dims;
    return (logits.data as Float32Array).subarray((n - 1) * v, n * v);
  };
  const rows: Array<Record<string, unknown>> = [];
  let check: Record<string, unknown> = {};
  try {
    for (const c of cases) {
      const state = textOfTokens(codec, c.stateTokens, 21 + c.stateTokens);
      const questions: Record<string, Question> = mixedQuestions(c.questions);
      const plan = planRequest({ state, questions }, codec, promptSet(folder.manifest.prompt_version), endToken, {
        request: 1e9,
        question: 1e9,
        context: 1e9,
      });
      const prompts = plan.questions.map((q) => [...plan.prefix, ...q.suffix]);
      const starts = plan.questions.map((q) => firstTokens(q.labels));
      const sink: number[] = [];
      const read = (row: Float32Array, tokens: number[]) => sink.push(...tokens.map((t) => row[t]!));

      const naive = async () => {
        for (let i = 0; i < c.naiveQuestions; i++) {
          const prompt = prompts[i]!;
          const out = await model({ input_ids: ids(prompt), attention_mask: ones(prompt.length) });
          read(lastRow(out.logits!), starts[i]!);
        }
      };
      const cached = async () => {
        const pre = await model({ input_ids: ids(plan.prefix), attention_mask: ones(plan.prefix.length) });
        const entries: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(pre))
          if (k.startsWith('present')) entries[k.replace('present', 'past_key_values')] = v;
        const cache = new DynamicCache(entries as never);
        for (let i = 0; i < plan.questions.length; i++) {
          const suffix = plan.questions[i]!.suffix;
          const out = await model({
            input_ids: ids(suffix),
            attention_mask: ones(plan.prefix.length + suffix.length),
            past_key_values: cache,
          });
          read(lastRow(out.logits!), starts[i]!);
        }
      };
      const ours = () => ev.evaluate({ state, questions });
      ctx.log(
        `  state ${c.stateTokens} tokens × ${c.questions} questions (naive on ${c.naiveQuestions}), ${c.rounds} round(s)`,
      );
      const s = await interleaved({ ours, cached, naive }, { rounds: c.rounds, warmup: 1 });
      const scale = c.questions / c.naiveQuestions;
      const naiveTotal = s.naive.map((t) => t * scale);
      rows.push({
        stateTokens: c.stateTokens,
        questions: c.questions,
        inputTokens: plan.usage.input_tokens,
        ours: roundSummary(summarize(s.ours), 1),
        transformersCache: roundSummary(summarize(s.cached), 1),
        transformersNaive: roundSummary(summarize(naiveTotal), 1),
        naiveScaledFrom: c.naiveQuestions < c.questions ? c.naiveQuestions : undefined,
        oursPerQuestionMs: round(summarize(s.ours).median / c.questions, 1),
        naivePerQuestionMs: round(summarize(s.naive).median / c.naiveQuestions, 1),
        speedupVsNaive: pairedRatio(naiveTotal, s.ours),
        speedupVsCache: pairedRatio(s.cached, s.ours),
        rounds: c.rounds,
      });

      if (c === cases[0]) {
        // Numerics: our raw logits for one whole prompt vs transformers.js's, every position.
        const runner = await ModelRunner.create(folder, { modelDir: dir, threads: ctx.threads });
        try {
          const prompt = prompts[0]!;
          const mine = await runner.logits(prompt);
          const theirs = (await model({ input_ids: ids(prompt), attention_mask: ones(prompt.length) })).logits!;
          const v = theirs.dims[2]!;
          let maxAbs = 0;
          let maxLogit = 0;
          for (let p = 0; p < prompt.length; p++) {
            const t = (theirs.data as Float32Array).subarray(p * v, (p + 1) * v);
            for (let j = 0; j < v; j++) {
              maxAbs = Math.max(maxAbs, Math.abs(t[j]! - mine[p]![j]!));
              maxLogit = Math.max(maxLogit, Math.abs(t[j]!));
            }
          }
          check = {
            promptTokens: prompt.length,
            positions: prompt.length,
            vocab: v,
            maxAbsDiff: maxAbs,
            maxAbsLogit: round(maxLogit, 2),
          };
        } finally {
          await runner.close();
        }
      }
    }
  } finally {
    await ev.close();
    await model.dispose();
  }
  void ort;
  const head = rows.find((r) => r.stateTokens === 2000) ?? rows[rows.length - 1]!;
  const vsNaive = head.speedupVsNaive as ReturnType<typeof pairedRatio>;
  const vsCache = head.speedupVsCache as ReturnType<typeof pairedRatio>;
  const label = `${head.stateTokens} tokens × ${head.questions} questions`;
  const targets: Target[] = [
    {
      name: `vs transformers.js per question (naive), ${label}`,
      goal: '≥ 10×',
      value: vsNaive.median,
      unit: '×',
      met: vsNaive.median >= 10,
    },
    {
      name: `vs transformers.js with its KV cache reuse, ${label}`,
      goal: '> 1× (ahead)',
      value: vsCache.median,
      unit: '×',
      met: vsCache.median > 1,
    },
  ];
  return {
    id: 'transformersjs',
    title: '4. Side by side with transformers.js',
    config: {
      model: 'qwen2.5-0.5b-int8 (transformers.js dtype q8)',
      threads: ctx.threads,
      transformersJs: '4.3.1',
      cases,
    },
    results: { rows, logitsCheck: check },
    targets,
    notes: [
      `Logits check: one chat-templated prompt (${check.promptTokens} tokens), every position × ${check.vocab} vocabulary: max |Δ| ours vs transformers.js = ${check.maxAbsDiff} (largest |logit| ${check.maxAbsLogit}).`,
      'Naive: a full forward per question (transformers.js computes and returns logits for every position). Where it ran on fewer questions than the request has, its per-round time is scaled to all of them (naive cost is per question).',
      "Cache: one prefix forward, then each suffix with the prefix's present.* as past_key_values in a DynamicCache.",
      'Ours additionally scores multi-token labels exactly (extra passes); transformers.js reads first-token logits only.',
      ...(ctx.quick
        ? ['--quick: 256-token state × 4 questions only; the 2,000 × 16 headline runs in the full bench.']
        : []),
    ],
    markdown: table(
      ['state tokens', 'questions', 'ours', 'transformers.js + cache', 'transformers.js naive', 'vs naive', 'vs cache'],
      rows.map((r) => [
        r.stateTokens as number,
        r.questions as number,
        ms(r.ours as never),
        ms(r.transformersCache as never),
        ms(r.transformersNaive as never) + (r.naiveScaledFrom ? ` (scaled from ${r.naiveScaledFrom})` : ''),
        ratio(r.speedupVsNaive as never),
        ratio(r.speedupVsCache as never),
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
