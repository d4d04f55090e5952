// The encoder families at the real shapes of their published models (synthetic replicas:
// tools/families/laya/replica.ts, nli-replica.ts): Laya on ModernBERT-large (421M) fp32 and int8
// and mmBERT-base fp32; NLI pairs on DeBERTa-v3-large's size (435M) int8 and fp32.
// - Requests of 1 / 5 / 20 questions on 128 / 512 / 1,024-token states through Assay as served
//   (the engine thread, the family's layout and answers), beside onnxruntime running the same graph
//   on the same rows directly (the rows Assay builds, batched the same way; only session.run is
//   timed), each round timing both back to back, alternating which goes first: Assay / bare per
//   round, goal ≤ 1.05.
// - Rows of one request as batches (at most 4,096 padded tokens, the CUDA default) against one by
//   one (the CPU default; fp32; an int8 dynamic export always runs rows one by one).
// - Tokens per second (every padded token of every row) against the ceiling of the CPU's GEMM rate
//   (FACTS.md, 2 threads: fp32 183 GFLOP/s, int8 742 GOP/s) over the Linear products' 2·params.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import {
  loadEvaluator,
  loadRowFamily,
  resolveEngineConfig,
  rowBatches,
  sessionOptions,
  type EvaluateRequest,
  type Evaluator,
  type FamilyRow,
} from '../../src/internal.js';
import { ensureNliReplicaShape, NLI_SHAPES } from '../../tools/families/nli/replica.js';
import { ensureLayaReplicaShape, LAYA_SHAPES, type LayaShapeName } from '../../tools/families/laya/replica.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions } from '../lib/text.js';

/** The GEMM rates of FACTS.md (2 threads, K = N = 1,024, M = 128): fp32 MatMul and int8 MatMulInteger. */
const GEMM = { fp32: 183e9, int8: 742e9 } as const;
const GOAL = 1.05;

type Model =
  | { family: 'laya-markers'; shape: LayaShapeName; variant: 'fp32' | 'int8' }
  | { family: 'nli-pairs'; shape: 'deberta-v3-large'; variant: 'fp32' | 'int8' };

/** Operations per token in the encoder's (and Laya's head's) Linear products (2 per multiply-add). */
function linearOps(m: Model): number {
  if (m.family === 'nli-pairs') {
    const s = NLI_SHAPES[m.shape];
    return 2 * s.layers * (4 * s.hidden * s.hidden + 2 * s.hidden * s.intermediate);
  }
  const s = LAYA_SHAPES[m.shape];
  const layer = 4 * s.hidden * s.hidden + 3 * s.hidden * s.intermediate;
  const head = s.headLayers * (4 * s.hidden * s.hidden + 2 * s.hidden * s.headFf);
  return 2 * (s.layers * layer + head);
}

const PROSE =
  'The customer wrote that the parcel arrived two days late, the box was dented and one of the cups inside was broken; ' +
  'they ask whether they can get a refund or a replacement, and mention that this is the second time it happened this year. ';

/** A state of about `tokens` tokens under the folder's tokenizer (whole sentences, cut at a word). */
function stateOf(tok: Tokenizer, tokens: number, seed: number): string {
  const words = `${seed} ${PROSE.repeat(Math.ceil((tokens * 1.2) / 40) + 1)}`.split(' ');
  let lo = 1;
  let hi = words.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tok.encode(words.slice(0, mid).join(' '), { add_special_tokens: false }).ids.length <= tokens) lo = mid;
    else hi = mid - 1;
  }
  return words.slice(0, lo).join(' ');
}

export async function familiesSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const only = process.env.ASSAY_BENCH_FAMILIES?.split(',');
  const all: Model[] = ctx.quick
    ? [{ family: 'laya-markers', shape: 'tiny', variant: 'fp32' }]
    : [
        { family: 'laya-markers', shape: 'modernbert-large', variant: 'fp32' },
        { family: 'laya-markers', shape: 'modernbert-large', variant: 'int8' },
        { family: 'laya-markers', shape: 'mmbert-base', variant: 'fp32' },
        { family: 'nli-pairs', shape: 'deberta-v3-large', variant: 'int8' },
        { family: 'nli-pairs', shape: 'deberta-v3-large', variant: 'fp32' },
      ];
  // ASSAY_BENCH_FAMILIES=nli-pairs (a comma list) runs only those families.
  const models = all.filter((m) => !only || only.includes(m.family));
  type Cell = { questions: number; tokens: number; rounds: number };
  // A 421M encoder reads ~100-250 tokens/s on two cores: the full grid (1 / 5 / 20 questions on
  // 128 / 512 / 1,024 tokens) is run on ModernBERT-large fp32, a third of it on the other two.
  const full: Cell[] = [
    { questions: 1, tokens: 128, rounds: 3 },
    { questions: 5, tokens: 128, rounds: 2 },
    { questions: 20, tokens: 128, rounds: 2 },
    { questions: 1, tokens: 512, rounds: 2 },
    { questions: 5, tokens: 512, rounds: 2 },
    { questions: 1, tokens: 1024, rounds: 2 },
  ];
  const some: Cell[] = [
    { questions: 1, tokens: 128, rounds: 3 },
    { questions: 5, tokens: 128, rounds: 2 },
    { questions: 1, tokens: 512, rounds: 2 },
  ];
  const cellsOf = (m: Model): Cell[] =>
    ctx.quick
      ? [
          { questions: 1, tokens: 128, rounds: 3 },
          { questions: 5, tokens: 512, rounds: 2 },
        ]
      : m.family === 'laya-markers' && m.shape === 'modernbert-large' && m.variant === 'fp32'
        ? full
        : some;
  const rows: Array<Record<string, unknown>> = [];
  const batching: Array<Record<string, unknown>> = [];
  const notes: string[] = [];
  let seed = 3700;

  for (const m of models) {
    const label = `${m.shape} ${m.variant}${m.family === 'nli-pairs' ? ' (NLI pairs)' : ''}`;
    ctx.log(`  ${label}: writing or reusing the replica`);
    const log = (l: string) => ctx.log(`    ${l}`);
    const dir =
      m.family === 'laya-markers'
        ? ensureLayaReplicaShape(m.shape, [m.variant], { log })
        : ensureNliReplicaShape(m.shape, [m.variant], { log });
    const tokDir = m.family === 'laya-markers' ? join(dir, 'tokenizer') : dir;
    const tokConfig = JSON.parse(readFileSync(join(tokDir, 'tokenizer_config.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const tok = new Tokenizer(JSON.parse(readFileSync(join(tokDir, 'tokenizer.json'), 'utf8')), tokConfig);
    const config = resolveEngineConfig({ modelDir: dir, variant: m.variant, threads: ctx.threads });
    // The rows Assay builds (the family's layout, outside any timing) and the graph it runs.
    const family = await loadRowFamily(config, m.family);
    const graph = family.runner.graph;
    const warnings: string[] = [];
    const assay: Evaluator = await loadEvaluator({
      modelDir: dir,
      variant: m.variant,
      threads: ctx.threads,
      onNote: (w) => warnings.push(w.message),
    });
    const bare = await ort.InferenceSession.create(graph, await sessionOptions(config));
    const alone = family.runner.rowsAlone;
    notes.push(`${label}: ${graph.replace(dir, '<replica>')}${alone ? ' (dynamic int8: rows one by one)' : ''}`);
    // The graph's inputs as the family's runner builds them.
    const feeds = (batch: FamilyRow[]) => family.runner.feeds(batch);
    const runBare = async (planned: FamilyRow[]) => {
      for (const batch of rowBatches(planned, alone ? 0 : config.rowBatchTokens))
        await bare.run(feeds(batch.map((i) => planned[i]!)));
    };
    try {
      for (const cell of cellsOf(m)) {
        ctx.log(`  ${label}: ${cell.questions} questions × ${cell.tokens}-token state, ${cell.rounds} rounds`);
        const request = (): EvaluateRequest => ({
          state: stateOf(tok, cell.tokens, seed++),
          questions: mixedQuestions(cell.questions),
        });
        const warm = request();
        await assay.evaluate(warm);
        await runBare(family.reader.plan(warm).rows);
        const times = { assay: [] as number[], bare: [] as number[] };
        let padded = 0;
        let inputTokens = 0;
        for (let r = 0; r < cell.rounds; r++) {
          const req = request();
          const planned = family.reader.plan(req).rows;
          inputTokens = planned.reduce((n, row) => n + row.tokens, 0);
          padded = rowBatches(planned, alone ? 0 : config.rowBatchTokens).reduce(
            (n, b) => n + b.length * Math.max(...b.map((i) => planned[i]!.tokens)),
            0,
          );
          const sides = r % 2 === 0 ? (['assay', 'bare'] as const) : (['bare', 'assay'] as const);
          for (const side of sides)
            times[side].push(await timeMs(() => (side === 'assay' ? assay.evaluate(req) : runBare(planned))));
        }
        const a = roundSummary(summarize(times.assay), 1);
        const overhead = pairedRatio(times.assay, times.bare);
        rows.push({
          model: label,
          ...cell,
          inputTokens,
          padded,
          assay: a,
          bare: roundSummary(summarize(times.bare), 1),
          overhead,
          questionsPerSecond: Math.round((1000 * cell.questions * 100) / a.median) / 100,
          tokensPerSecond: Math.round((1000 * padded) / a.median),
          ceiling: Math.round(GEMM[m.variant] / linearOps(m)),
        });
      }
      // Rows of one request batched (4,096 padded tokens, the CUDA default) against one by one (the CPU default).
      if (!alone && m.family === 'laya-markers' && m.shape === 'modernbert-large' && !ctx.quick) {
        const oneByOne = await loadEvaluator({
          modelDir: dir,
          variant: m.variant,
          threads: ctx.threads,
          rowBatchTokens: 0,
        });
        const batchedBy = await loadEvaluator({
          modelDir: dir,
          variant: m.variant,
          threads: ctx.threads,
          rowBatchTokens: 4096,
        });
        try {
          for (const cell of [
            { questions: 5, tokens: 128, rounds: 2 },
            { questions: 5, tokens: 512, rounds: 1 },
          ]) {
            ctx.log(`  ${label}: batched vs one by one, ${cell.questions} × ${cell.tokens}`);
            const times = { batched: [] as number[], alone: [] as number[] };
            for (let r = 0; r < cell.rounds; r++) {
              const req: EvaluateRequest = {
                state: stateOf(tok, cell.tokens, seed++),
                questions: mixedQuestions(cell.questions),
              };
              const sides = r % 2 === 0 ? (['batched', 'alone'] as const) : (['alone', 'batched'] as const);
              for (const side of sides)
                times[side].push(await timeMs(() => (side === 'batched' ? batchedBy : oneByOne).evaluate(req)));
            }
            batching.push({
              model: label,
              ...cell,
              batched: roundSummary(summarize(times.batched), 1),
              alone: roundSummary(summarize(times.alone), 1),
              speedup: pairedRatio(times.alone, times.batched),
            });
          }
        } finally {
          await oneByOne.close();
          await batchedBy.close();
        }
      }
    } finally {
      await assay.close();
      await family.runner.close();
      await bare.release();
    }
    for (const w of warnings) notes.push(`${label} load: ${w}`);
  }

  const worst = rows.reduce((w, r) => Math.max(w, (r.overhead as { median: number }).median), 0);
  const targets: Target[] = [
    {
      name: "Assay's own cost: a request through Assay / the same rows on the bare onnxruntime session",
      goal: `≤ ${GOAL.toFixed(2)}`,
      value: Math.round(worst * 1000) / 1000,
      unit: '×',
      met: worst <= GOAL,
      detail: 'the worst cell (median of its paired rounds)',
    },
  ];
  return {
    id: 'families',
    title: '3e. Model families: Laya and NLI pairs at the real shapes, Assay beside the bare session',
    config: { models, cells: { full, some }, threads: ctx.threads, quick: ctx.quick, gemm: GEMM },
    results: { rows, batching },
    targets,
    notes: [
      'Replicas with random weights at the published shapes: the cost is real, the answers are not.',
      'Assay: loadEvaluator as served (engine thread, layout, batches, answers); bare: session.run on the rows Assay built, batched alike, nothing else timed.',
      'tokens/s counts padded tokens of every row; ceiling = the GEMM rate / (2 · Linear parameters) per token (attention and the rest excluded, so it is an upper bound).',
      ...(ctx.quick ? ['--quick: the tiny replica, 1 × 128 and 5 × 512.'] : []),
      ...notes,
    ],
    markdown: [
      table(
        [
          'model',
          'questions',
          'state tokens',
          'input tokens',
          'Assay p50 (min–max)',
          'bare',
          'Assay / bare',
          'questions/s',
          'tokens/s',
          'ceiling tok/s',
        ],
        rows.map((r) => [
          r.model as string,
          r.questions as number,
          r.tokens as number,
          r.inputTokens as number,
          ms(r.assay as never),
          ms(r.bare as never),
          ratio(r.overhead as never),
          r.questionsPerSecond as number,
          r.tokensPerSecond as number,
          r.ceiling as number,
        ]),
      ),
      '',
      batching.length
        ? table(
            ['model', 'questions', 'state tokens', 'batched', 'one by one', 'one by one / batched'],
            batching.map((b) => [
              b.model as string,
              b.questions as number,
              b.tokens as number,
              ms(b.batched as never),
              ms(b.alone as never),
              ratio(b.speedup as never),
            ]),
          )
        : '',
    ].join('\n'),
    seconds: (performance.now() - started) / 1000,
  };
}
