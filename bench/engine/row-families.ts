// The former `row-families` section, run by `ASSAY_BENCH_ROW_TOY=1` (row-reuse-families.ts is the
// section now): whole rows on the toy trunks, which the load-time rewrite does not read.
// The causal-row families (graphs with a gathered-position head: kev-pointer, decision-endpoint,
// arbiter-fixed, decider-slots, one entry of FAMILIES each) at the published 0.5B-class and 0.8B
// models' sizes (synthetic replicas), 1 / 5 / 16 questions (the first public client's mix, in the
// types each family answers) on 256 / 2,000-token states. Their published graphs take whole rows and no KV input (BF16 weights
// computed in fp32; no int8 export is published), so Assay cannot reuse the state across the
// questions: each question's row reads it again. Its one lever is running a request's rows in one
// batched run (rowBatchTokens: 0 on CPU, rows one by one; 4,096 on CUDA). Sides, each round back
// to back, the order reversed every other round:
// - assay: the request through Assay as served on CPU (loadEvaluator, rows one by one);
// - batched: the same request with its rows batched (rowBatchTokens 16,384);
// - bare: onnxruntime's session on the same rows one by one (the rows Assay built; only building
//   the feeds and session.run are timed): Assay / bare is Assay's own cost.
// The rows of every round are planned before the timing, by the family's own layout, and that
// session closed: three sessions of the model are held while timing, not four.
//
//   ASSAY_BENCH_ROW_FAMILIES=kev-pointer       only these families (a comma list)
//   ASSAY_BENCH_ROW_SIZES=qwen2.5-0.5b         only these sizes
//   ASSAY_BENCH_ROW_CELLS=1x256,5x256,16x256   only these cells (questions x state tokens)
//   ASSAY_BENCH_ROW_BATCH_TOKENS=32768         the batched side's rowBatchTokens (default 16,384)
import * as ort from 'onnxruntime-node';
import {
  loadEvaluator,
  loadRowFamily,
  resolveEngineConfig,
  rowBatches,
  sessionOptions,
  TextCodec,
  wholeRows,
  type CausalPlan,
  type EvaluateRequest,
  type Evaluator,
  type FamilyRow,
  type Question,
  type WholeRow,
} from '../../src/internal.js';
import { ensureArbiterReplica, ensureArbiterReplicaSize } from '../../tools/families/arbiter/replica.js';
import { CAUSAL_BASE_SIZES, type CausalSize } from '../../tools/families/kit/causal-replica-kit.js';
import { ensureSlotsReplica, ensureSlotsReplicaSize } from '../../tools/families/decider-slots/replica.js';
import { ensureDecisionReplica, ensureDecisionReplicaSize } from '../../tools/families/decision/replica.js';
import { ensureKevReplica, ensureKevReplicaSize } from '../../tools/families/kev/replica.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { clientQuestions, textOfTokens } from '../lib/text.js';

const GOAL = 1.05;
/**
 * 16,384 by default: at 32,768, 16 rows of a 2,000-token state at the 0.5B size (one batch, 14 heads)
 * ran out of 24 GiB beside the three sessions and the kernel killed the run.
 */
const BATCH_TOKENS = Number(process.env.ASSAY_BENCH_ROW_BATCH_TOKENS ?? 16_384);
/** The row length the published exports take: a multiple of 64 (shared/causal-rows.ts). */
const ROW_MULTIPLE = 64;

/** The published models' sizes every family is timed at (--quick: each family's tiny test replica). */
const SIZES = ['qwen2.5-0.5b', 'qwen3.5-0.8b'] as const satisfies readonly CausalSize[];
type Size = (typeof SIZES)[number] | 'tiny';
/** A causal-row family as this section runs it. */
interface RowFamilyEntry {
  family: string;
  /** The replica's folder at a size, written on demand. */
  replica(size: Size, log: (line: string) => void): string;
  /** A request of `questions` questions on `state`, in the types the family answers. */
  request(state: string, questions: number, seed: number): EvaluateRequest;
}

/** An entry from the family's replica writers (tiny, sized); its request the client's questions as they are unless `request` says otherwise. */
function entry(
  family: string,
  replicas: [() => string, (size: CausalSize, log: (line: string) => void) => string],
  request: RowFamilyEntry['request'] = (state, questions, seed) => ({
    state,
    questions: clientQuestions(questions, seed),
  }),
): RowFamilyEntry {
  return {
    family,
    replica: (size, log) => (size === 'tiny' ? replicas[0]() : replicas[1](size, log)),
    request,
  };
}

/** Arbiter's head scores exactly 6 levels: the client's score questions at 6 levels (it reads no descriptions). */
function sixLevels(state: string, questions: number, seed: number): EvaluateRequest {
  const levels = ['none', 'very low', 'low', 'medium', 'high', 'very high'];
  const asked = Object.entries(clientQuestions(questions, seed)).map(([k, q]) => [
    k,
    q.type === 'score' ? { ...q, criteria: levels } : q,
  ]);
  return { state, questions: Object.fromEntries(asked) as Record<string, Question> };
}

// Kev and Decision answer every type, one row each (Decision: up to 255 options, 10 levels); Arbiter
// noul, a choice of up to 16 options and a score of exactly 6 levels, one row each; decider-slots
// every type, one row per question and one per level of a score.
const FAMILIES: RowFamilyEntry[] = [
  entry('kev-pointer', [ensureKevReplica, ensureKevReplicaSize]),
  entry('decision-endpoint', [ensureDecisionReplica, ensureDecisionReplicaSize]),
  entry('arbiter-fixed', [ensureArbiterReplica, ensureArbiterReplicaSize], sixLevels),
  entry('decider-slots', [ensureSlotsReplica, ensureSlotsReplicaSize]),
];

/** How this section asks a family (its layout id, e.g. `kev-pointer`) questions: the request of `questions` questions on `state`. */
export function rowFamilyRequest(family: string): RowFamilyEntry['request'] {
  const found = FAMILIES.find((f) => f.family === family);
  if (!found) throw new Error(`row-families: no causal-row family ${family}`);
  return found.request;
}

/** Rows' padded tokens as run: each batch its row count × its longest row rounded up to 64. */
function paddedTokens(rows: readonly FamilyRow[], batchTokens: number): number {
  return rowBatches(rows, batchTokens).reduce(
    (n, b) => n + b.length * Math.ceil(Math.max(...b.map((i) => rows[i]!.tokens)) / ROW_MULTIPLE) * ROW_MULTIPLE,
    0,
  );
}

type Cell = { questions: number; tokens: number; rounds: number };
const SIDES = ['assay', 'batched', 'bare'] as const;
type Side = (typeof SIDES)[number];

export async function rowFamiliesToySection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const list = (name: string) => process.env[name]?.split(',').filter(Boolean);
  const onlyFamilies = list('ASSAY_BENCH_ROW_FAMILIES');
  const onlySizes = list('ASSAY_BENCH_ROW_SIZES');
  const onlyCells = list('ASSAY_BENCH_ROW_CELLS');
  const families = FAMILIES.filter((f) => !onlyFamilies || onlyFamilies.includes(f.family));
  const sizes: Size[] = ctx.quick ? ['tiny'] : SIZES.filter((s) => !onlySizes || onlySizes.includes(s));
  // About 230 tokens/s per side on two cores at these sizes: the 2,000-token cells take one round.
  const all: Cell[] = ctx.quick
    ? [
        { questions: 1, tokens: 256, rounds: 2 },
        { questions: 5, tokens: 256, rounds: 2 },
      ]
    : [
        { questions: 1, tokens: 256, rounds: 3 },
        { questions: 5, tokens: 256, rounds: 2 },
        { questions: 16, tokens: 256, rounds: 2 },
        { questions: 1, tokens: 2000, rounds: 2 },
        { questions: 5, tokens: 2000, rounds: 1 },
        { questions: 16, tokens: 2000, rounds: 1 },
      ];
  const cells = all.filter((c) => !onlyCells || onlyCells.includes(`${c.questions}x${c.tokens}`));
  const rows: Array<Record<string, unknown>> = [];
  const notes: string[] = [];
  let seed = 3900;

  for (const entry of families)
    for (const size of sizes) {
      const label = `${entry.family} ${size}`;
      ctx.log(`  ${label}: writing or reusing the replica`);
      const dir = entry.replica(size, (l) => ctx.log(`    ${l}`));
      const codec = await TextCodec.load(dir);
      const config = resolveEngineConfig({ modelDir: dir, threads: ctx.threads });
      // Every round's request and its whole rows, planned by the family's layout before any timing;
      // the graph's inputs are the family runner's own (the same feeds it runs).
      const family = await loadRowFamily(config, entry.family);
      const graph = family.runner.graph;
      const feeds = (batch: readonly WholeRow[]) => family.runner.feeds(batch);
      const planned = cells.map((cell) =>
        Array.from({ length: cell.rounds + 1 }, (_, r) => {
          const state = textOfTokens(codec, cell.tokens, seed++);
          const request = entry.request(state, r === 0 ? 1 : cell.questions, seed++);
          const rows = wholeRows(family.reader.plan(request) as CausalPlan).map((w) => ({
            ...w,
            tokens: w.ids.length,
          }));
          return { request, rows };
        }),
      );
      await family.runner.close();
      notes.push(`${label}: ${graph.replace(dir, '<replica>')}`);
      const warnings: string[] = [];
      const load = (rowBatchTokens: number) =>
        loadEvaluator({ modelDir: dir, threads: ctx.threads, rowBatchTokens, onNote: (w) => warnings.push(w.message) });
      const assay: Evaluator = await load(config.rowBatchTokens);
      const batched: Evaluator = await load(BATCH_TOKENS);
      const bare = await ort.InferenceSession.create(graph, await sessionOptions(config));
      const runBare = async (planned: readonly WholeRow[]) => {
        for (const row of planned) await bare.run(feeds([row]));
      };
      const run = (side: Side, p: { request: EvaluateRequest; rows: Array<WholeRow & FamilyRow> }) =>
        side === 'assay'
          ? assay.evaluate(p.request)
          : side === 'batched'
            ? batched.evaluate(p.request)
            : runBare(p.rows);
      try {
        for (const [c, cell] of cells.entries()) {
          ctx.log(`  ${label}: ${cell.questions} questions × ${cell.tokens}-token state, ${cell.rounds} rounds`);
          const [warm, ...rounds] = planned[c]!;
          for (const side of SIDES) await run(side, warm!);
          const times: Record<Side, number[]> = { assay: [], batched: [], bare: [] };
          for (const [r, p] of rounds.entries()) {
            const order = r % 2 === 0 ? SIDES : [...SIDES].reverse();
            for (const side of order) times[side].push(await timeMs(() => run(side, p)));
          }
          const last = rounds[rounds.length - 1]!.rows;
          rows.push({
            model: label,
            ...cell,
            rows: last.length,
            inputTokens: last.reduce((n, row) => n + row.tokens, 0),
            padded: { alone: paddedTokens(last, 0), batched: paddedTokens(last, BATCH_TOKENS) },
            assay: roundSummary(summarize(times.assay), 1),
            batched: roundSummary(summarize(times.batched), 1),
            bare: roundSummary(summarize(times.bare), 1),
            batching: pairedRatio(times.batched, times.assay),
            overhead: pairedRatio(times.assay, times.bare),
          });
        }
      } finally {
        await assay.close();
        await batched.close();
        await bare.release();
      }
      for (const w of new Set(warnings)) notes.push(`${label} load: ${w}`);
    }

  const worst = rows.reduce((w, r) => Math.max(w, (r.overhead as { median: number }).median), 0);
  const targets: Target[] = [
    {
      name: "Assay's own cost on the causal-row families: a request through Assay / the same rows on the bare session",
      goal: `≤ ${GOAL.toFixed(2)}`,
      value: Math.round(worst * 1000) / 1000,
      unit: '×',
      met: worst <= GOAL,
      detail: 'the worst cell (median of its paired rounds)',
    },
  ];
  return {
    id: 'row-families',
    title: '3g. Causal-row families at the published sizes: rows one by one, batched, and the bare session',
    config: {
      families: families.map((f) => f.family),
      sizes,
      shapes: ctx.quick ? undefined : CAUSAL_BASE_SIZES,
      cells,
      batchTokens: BATCH_TOKENS,
      threads: ctx.threads,
      quick: ctx.quick,
    },
    results: { rows },
    targets,
    notes: [
      'Replicas with random weights at the published sizes, BF16 weights in external data computed in fp32 (no int8 export of these families is published): the cost is real, the answers are not.',
      "The graphs take whole rows and no KV input: the state cannot be encoded once and reused, each question's row reads it again (one row per question is the contract itself, so there is no cheaper no-reuse side to compare with). Assay's one lever is batching a request's rows in one run.",
      "The replicas' trunk (tools/families/kit/causal-net.ts) differs from the real bases: learned positions (Kev, decider-slots) or none (Decision, Arbiter) instead of rotary, LayerNorm and GELU instead of RMSNorm and SwiGLU, every layer full attention (Qwen3.5 mixes linear-attention layers), plain-op attention (no fused kernel). Hidden size, layers and heads are the bases' (Qwen2.5-0.5B: 896, 24, 14; Qwen3.5-0.8B: 1,024, 24, 8), and the 2-matrix MLP is 1.5 × the base's SwiGLU width (7,296; 5,376), so the cost per token is matched by parameter count; the vocabulary is the Qwen3.5-id tokenizer's (248,320 rows, a gather; Decision 248,045, Arbiter its stand-in tokenizer's).",
      "Questions: the first public client's mix (60% noul, 28% choice of 4, 12% score of at most 5 levels): one row each under Kev's and Decision's contracts, one per question and one per score level under decider-slots', and Arbiter's scores at 6 levels (the only count its head scores).",
      `assay: loadEvaluator as served on CPU (rows one by one, rowBatchTokens 0); batched: rowBatchTokens ${BATCH_TOKENS.toLocaleString('en-US')} (rows sorted by length, padded to the longest rounded up to 64); bare: session.run per row on the rows Assay built. Each round times the three back to back, the order reversed every other round; the rows and padded tokens are the last round's.`,
      "Memory: each of the three sessions holds about 4.3 GB at the 0.5B size (the BF16 data and the fp32 weights its Casts fold to; one evaluator's RSS after load), and a batch holds attention scores of rows × heads × seq² floats per layer (7 rows of 2,112 tokens at 14 heads: about 1.7 GB, several alive at once; 16 such rows in one batch, rowBatchTokens 32,768, ran out of 24 GiB at the 0.5B size): lower ASSAY_BENCH_ROW_BATCH_TOKENS, or pick cells with ASSAY_BENCH_ROW_CELLS, where memory is short.",
      ...(ctx.quick
        ? [
            "--quick: each family's tiny test replica, 1 and 5 questions on a 256-token state: a row takes milliseconds there, so Assay / bare measures Assay's fixed cost per request (the layout's tokenizing, the engine thread), not its share of a real row's.",
          ]
        : []),
      ...notes,
    ],
    markdown: table(
      [
        'model',
        'questions',
        'state tokens',
        'rows',
        'padded tokens (alone / batched)',
        'Assay p50',
        'batched p50',
        'bare p50',
        'batched / alone',
        'Assay / bare',
      ],
      rows.map((r) => {
        const p = r.padded as { alone: number; batched: number };
        return [
          r.model as string,
          r.questions as number,
          r.tokens as number,
          r.rows as number,
          `${p.alone} / ${p.batched}`,
          ms(r.assay as never),
          ms(r.batched as never),
          ms(r.bare as never),
          ratio(r.batching as never),
          ratio(r.overhead as never),
        ];
      }),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
