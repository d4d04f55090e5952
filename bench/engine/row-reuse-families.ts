// The `row-families` section: the causal-row families with the state read once (the export
// rewritten at load into a continuation graph, src/engine/model/row-reuse/; docs/engine.md "Causal
// rows: the state read once") against whole rows, on replicas of the real trunks at the published
// bases' sizes (tools/trunks/sized.ts: Qwen3 attention-only at Qwen2.5-0.5B's dimensions, the
// Qwen3.5 hybrid with Gated DeltaNet as an ONNX Scan at Qwen3.5-0.8B's), each loaded through the
// family loader as a user runs it, twice in the same process:
// - reuse: loadEvaluator as served (the rewrite on, the prefix cache on, rows one by one on CPU);
// - whole: the same with rewriteGraph false (`--no-graph-rewrite`): every question's row reads the state.
// Per cell (questions × state tokens), each round a new state (never sent before), timed as:
// - whole: the request on the whole-rows evaluator;
// - new: the same request on the reuse evaluator (its state new to it: the state pass, then the questions);
// - sent: the same request again on the reuse evaluator (its snapshot a prefix cache hit); not for
//   one question, which runs whole on a state not cached and stores nothing until its second sighting.
// The order alternates every round (whole first, then new, sent first). Every round's answers
// through reuse are compared with the whole rows' (the largest absolute difference of any number).
// Then the short-state threshold: 2 questions (the fewest that share) on new states of 64 … 512
// tokens, reuse against whole rows, interleaved: the shortest state from which reuse pays.
//
//   ASSAY_BENCH_ROW_FAMILIES=kev,decision         families (default kev; also decider-slots, arbiter)
//   ASSAY_BENCH_ROW_TRUNKS=qwen3:0.5b,qwen35:0.8b trunk:size pairs (tiny: the test replicas, a smoke)
//   ASSAY_BENCH_ROW_CELLS=1x256,16x2000           only these cells (questions x state tokens)
//   ASSAY_BENCH_ROW_THRESHOLD=64,128,256,512      the threshold's state lengths ('' for none)
//   ASSAY_BENCH_ROW_TOY=1                         the former section instead (toy trunks, whole rows
//                                                 one by one / batched / bare: row-families.ts)
import * as ort from 'onnxruntime-node';
import { cpuKernels, loadEvaluator, TextCodec, type EvaluateRequest, type Evaluator } from '../../src/internal.js';
import type { TrunkFamily, TrunkKind, TrunkReplica, TrunkSize } from '../../tools/trunks/replicas.js';
import { ensureSizedKev } from '../../tools/trunks/sized.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { textOfTokens } from '../lib/text.js';
import { rowFamiliesToySection, rowFamilyRequest } from './row-families.js';

/** The layout id each trunk replica's family answers as (tools/trunks/replicas.ts FAMILY_FOLDERS). */
const LAYOUT: Record<TrunkFamily, string> = {
  kev: 'kev-pointer',
  decision: 'decision-endpoint',
  'decider-slots': 'decider-slots',
  arbiter: 'arbiter-fixed',
};
const GOALS = { sixteenOverOne: 2.5, sentOverNew: 0.3, oneOverWhole: 1.05, kevSpeedup: 8 } as const;
/** Kev's own serving shares the state from 256 tokens: reuse should pay at least from there. */
const KEV_OWN_THRESHOLD = 256;
const THRESHOLD_QUESTIONS = 2;

type Cell = { questions: number; tokens: number; rounds: number };
type Way = 'whole' | 'new' | 'sent';

/** The largest absolute difference between two answers' numbers (their shapes are the same). */
function maxDiff(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b);
  if (a && b && typeof a === 'object' && typeof b === 'object')
    return Object.keys(a).reduce(
      (m, k) => Math.max(m, maxDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])),
      0,
    );
  return a === b ? 0 : Infinity;
}

const median = (xs: number[]) => summarize(xs).median;

export async function rowFamiliesSection(ctx: BenchContext): Promise<SectionResult> {
  if (process.env.ASSAY_BENCH_ROW_TOY === '1') return rowFamiliesToySection(ctx);
  const started = performance.now();
  const list = (name: string) => process.env[name]?.split(',').filter(Boolean);
  const families = (list('ASSAY_BENCH_ROW_FAMILIES') ?? ['kev']) as TrunkFamily[];
  const trunks = (list('ASSAY_BENCH_ROW_TRUNKS') ?? (ctx.quick ? ['qwen3:0.5b'] : ['qwen3:0.5b', 'qwen35:0.8b'])).map(
    (t) => t.split(':') as [TrunkKind, TrunkSize],
  );
  const onlyCells = list('ASSAY_BENCH_ROW_CELLS');
  // A whole row of a 2,000-token state takes ~20 s at these sizes on two cores (docs/models.md), so
  // 16 of them ~5 min: the 2,000-token cells run two rounds, the 256-token ones three. --quick: one
  // round, and no 5 or 16 × 2,000 cell unless ASSAY_BENCH_ROW_CELLS names it.
  const all: Cell[] = [1, 5, 16].flatMap((questions) => [
    { questions, tokens: 256, rounds: ctx.quick ? 1 : 3 },
    { questions, tokens: 2000, rounds: ctx.quick ? 1 : 2 },
  ]);
  const quickCells = ['1x256', '16x256', '1x2000'];
  const picked = (c: Cell) => `${c.questions}x${c.tokens}`;
  const cells = all.filter((c) =>
    onlyCells ? onlyCells.includes(picked(c)) : !ctx.quick || quickCells.includes(picked(c)),
  );
  const thresholdEnv = process.env.ASSAY_BENCH_ROW_THRESHOLD;
  const thresholdStates = (thresholdEnv !== undefined ? thresholdEnv : ctx.quick ? '64,256' : '64,128,256,512')
    .split(',')
    .filter(Boolean)
    .map(Number);
  const thresholdRounds = ctx.quick ? 1 : 3;

  const kernels = await cpuKernels();
  const machine = `${kernels.cpu} (${kernels.flags}), ${ctx.threads} threads, onnxruntime ${ort.env.versions.common}; fp32 MatMul (MLAS; BF16 weights cast to fp32 at load), int8 path of this CPU ${kernels.int8} (unused: no int8 export of these families is published)`;
  ctx.log(`  ${machine}`);

  const rows: Array<Record<string, unknown>> = [];
  const thresholds: Array<Record<string, unknown>> = [];
  const notes: string[] = [];
  const targets: Target[] = [];
  let seed = 5400;

  for (const family of families)
    for (const [trunk, size] of trunks) {
      const replica: TrunkReplica = { family, trunk, size };
      const label = `${family} ${trunk} ${size}`;
      ctx.log(`  ${label}: writing or reusing the replica (tools/trunks)`);
      const [dir] = await ensureSizedKev([replica], (l) => ctx.log(`    ${l}`));
      const codec = await TextCodec.load(dir!);
      const ask = rowFamilyRequest(LAYOUT[family]);
      const request = (tokens: number, questions: number): EvaluateRequest =>
        ask(textOfTokens(codec, tokens, seed++), questions, seed++);
      const loaded: Record<'reuse' | 'whole', string[]> = { reuse: [], whole: [] };
      const load = async (way: 'reuse' | 'whole') => {
        const t0 = performance.now();
        const e = await loadEvaluator({
          modelDir: dir!,
          threads: ctx.threads,
          rewriteGraph: way === 'reuse',
          onNote: (n) => {
            if (n.kind === 'reuse' || n.kind === 'whole-rows') loaded[way].push(`${n.kind}: ${n.message}`);
          },
        });
        notes.push(
          `${label} ${way}: loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${loaded[way].join('; ')}`,
        );
        return e;
      };
      const reuse: Evaluator = await load('reuse');
      const whole: Evaluator = await load('whole');
      if (!loaded.reuse.some((n) => n.startsWith('reuse:')))
        notes.push(
          `${label}: the reuse side runs WHOLE ROWS (${loaded.reuse.join('; ')}): its ratios say nothing of reuse`,
        );
      const evaluators: Record<Way, Evaluator> = { whole, new: reuse, sent: reuse };
      try {
        for (const cell of cells) {
          ctx.log(`  ${label}: ${cell.questions} questions × ${cell.tokens}-token state, ${cell.rounds} rounds`);
          const ways: Way[] = cell.questions > 1 ? ['whole', 'new', 'sent'] : ['whole', 'new'];
          // warm both sessions at the cell's shapes (a state neither has seen; rows run one by one on
          // CPU, so two questions show every shape the cell runs)
          const warm = request(cell.tokens, Math.min(cell.questions, 2));
          for (const e of [whole, reuse]) await e.evaluate(warm);
          const times: Record<Way, number[]> = { whole: [], new: [], sent: [] };
          let diff = 0;
          let usage: Record<Way, number> = { whole: 0, new: 0, sent: 0 };
          for (let r = 0; r < cell.rounds; r++) {
            const req = request(cell.tokens, cell.questions);
            const order = r % 2 === 0 ? ways : [...ways.slice(1), ways[0]!];
            const answers: Partial<Record<Way, unknown>> = {};
            for (const way of order) {
              let got: Awaited<ReturnType<Evaluator['evaluate']>> | undefined;
              times[way].push(await timeMs(async () => (got = await evaluators[way].evaluate(req))));
              answers[way] = got!.answers;
              usage = { ...usage, [way]: got!.usage.input_tokens };
            }
            for (const way of ways) diff = Math.max(diff, maxDiff(answers[way], answers.whole));
          }
          const sum = (w: Way) => roundSummary(summarize(times[w]), 1);
          rows.push({
            model: label,
            ...cell,
            inputTokens: usage,
            whole: sum('whole'),
            new: sum('new'),
            sent: ways.includes('sent') ? sum('sent') : undefined,
            newOverWhole: pairedRatio(times.new, times.whole),
            sentOverNew: ways.includes('sent') ? pairedRatio(times.sent, times.new) : undefined,
            maxAnswerDiff: diff,
          });
          ctx.log(
            `    whole ${median(times.whole).toFixed(0)} ms, new ${median(times.new).toFixed(0)} ms` +
              (ways.includes('sent') ? `, sent ${median(times.sent).toFixed(0)} ms` : '') +
              `; answers within ${diff.toExponential(1)}`,
          );
        }
        for (const tokens of thresholdStates) {
          ctx.log(
            `  ${label}: threshold, ${THRESHOLD_QUESTIONS} questions × ${tokens}-token state, ${thresholdRounds} rounds`,
          );
          const warm = request(tokens, THRESHOLD_QUESTIONS);
          for (const e of [whole, reuse]) await e.evaluate(warm);
          const times: Record<'whole' | 'new', number[]> = { whole: [], new: [] };
          for (let r = 0; r < thresholdRounds; r++) {
            const req = request(tokens, THRESHOLD_QUESTIONS);
            for (const way of r % 2 === 0 ? (['whole', 'new'] as const) : (['new', 'whole'] as const))
              times[way].push(await timeMs(() => evaluators[way].evaluate(req)));
          }
          thresholds.push({
            model: label,
            tokens,
            whole: roundSummary(summarize(times.whole), 1),
            new: roundSummary(summarize(times.new), 1),
            newOverWhole: pairedRatio(times.new, times.whole),
          });
        }
      } finally {
        await reuse.close();
        await whole.close();
      }
      targets.push(...replicaTargets(label, family, trunk, size, rows, thresholds));
    }

  return {
    id: 'row-families',
    title: '3g. Causal-row families on real trunks at the published sizes: the state read once against whole rows',
    config: {
      families,
      trunks: trunks.map((t) => t.join(':')),
      cells,
      thresholdStates,
      threads: ctx.threads,
      quick: ctx.quick,
    },
    results: { machine, kernels, rows, thresholds },
    targets,
    notes: [
      machine,
      "Replicas with random seeded weights on real trunks (tools/trunks: Qwen3 attention-only, the Qwen3.5 hybrid whose Gated DeltaNet layers run as an ONNX Scan over 64-token chunks), BF16 weights in external data computed in fp32, exported by torch.onnx.export as whole-row graphs in each family's contract: the cost is real, the answers are not.",
      "Both sides through loadEvaluator in one process: reuse as served (the rewrite and the prefix cache on, rows one by one on CPU), whole with rewriteGraph false (`--no-graph-rewrite`). new: each round a state never sent; sent: the same request again (the snapshot a prefix cache hit). One question on a state not cached runs whole (so 1-question rows compare whole rows with whole rows plus the reuse path's bookkeeping) and has no sent side.",
      `Ratios are the median of per-round ratios (p10–p90); 16 q / 1 q compares the medians of two cells. The threshold: ${THRESHOLD_QUESTIONS} questions on new states, reuse / whole, interleaved; reuse pays from the shortest state at which it and every longer one measured are under 1.`,
      ...notes,
    ],
    markdown: [
      table(
        [
          'model',
          'questions',
          'state tokens',
          'input tokens (whole / reuse)',
          'whole p50',
          'new p50',
          'sent p50',
          'whole / new',
          'new / whole',
          'sent / new',
          'answers within',
        ],
        rows.map((r) => {
          const u = r.inputTokens as Record<Way, number>;
          const nw = r.newOverWhole as { median: number };
          return [
            r.model as string,
            r.questions as number,
            r.tokens as number,
            `${u.whole} / ${u.new}`,
            ms(r.whole as never),
            ms(r.new as never),
            r.sent ? ms(r.sent as never) : '–',
            `${(1 / nw.median).toFixed(2)}×`,
            ratio(r.newOverWhole as never),
            r.sentOverNew ? ratio(r.sentOverNew as never) : '–',
            (r.maxAnswerDiff as number).toExponential(1),
          ];
        }),
      ),
      thresholds.length
        ? `\n\nShort states (${THRESHOLD_QUESTIONS} questions, new states):\n\n` +
          table(
            ['model', 'state tokens', 'whole p50', 'reuse p50', 'reuse / whole'],
            thresholds.map((t) => [
              t.model as string,
              t.tokens as number,
              ms(t.whole as never),
              ms(t.new as never),
              ratio(t.newOverWhole as never),
            ]),
          )
        : '',
    ].join(''),
    seconds: (performance.now() - started) / 1000,
  };
}

/** The targets for one replica, from the cells and threshold states it ran. */
function replicaTargets(
  label: string,
  family: TrunkFamily,
  trunk: TrunkKind,
  size: TrunkSize,
  rows: Array<Record<string, unknown>>,
  thresholds: Array<Record<string, unknown>>,
): Target[] {
  const mine = rows.filter((r) => r.model === label);
  const cell = (q: number, t: number) => mine.find((r) => r.questions === q && r.tokens === t);
  const med = (r: Record<string, unknown> | undefined, k: string) => (r?.[k] as { median: number } | undefined)?.median;
  const targets: Target[] = [];
  const one = cell(1, 2000);
  const sixteen = cell(16, 2000);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  if (one && sixteen) {
    const v = round(med(sixteen, 'new')! / med(one, 'new')!);
    targets.push({
      name: `${label}: 16 questions / 1 question, new 2,000-token states`,
      goal: `≤ ${GOALS.sixteenOverOne}`,
      value: v,
      unit: '×',
      met: v <= GOALS.sixteenOverOne,
      detail: "the cells' medians, both through reuse (today's whole rows: 15–16×)",
    });
  }
  if (sixteen) {
    const v = med(sixteen, 'sentOverNew')!;
    targets.push({
      name: `${label}: 16 questions × 2,000 tokens, a state already sent / a new state`,
      goal: `≤ ${GOALS.sentOverNew}`,
      value: v,
      unit: '×',
      met: v <= GOALS.sentOverNew,
      detail: 'median of paired rounds',
    });
    if (family === 'kev' && trunk === 'qwen3' && size === '0.5b') {
      const speedup = round(1 / med(sixteen, 'newOverWhole')!);
      targets.push({
        name: `${label}: 16 questions × 2,000 tokens, whole rows / reuse (new state)`,
        goal: `≥ ${GOALS.kevSpeedup}`,
        value: speedup,
        unit: '×',
        met: speedup >= GOALS.kevSpeedup,
        detail: 'the same run, median of paired rounds',
      });
    }
  }
  const ones = mine.filter((r) => r.questions === 1);
  if (ones.length) {
    const v = Math.max(...ones.map((r) => med(r, 'newOverWhole')!));
    targets.push({
      name: `${label}: one question, reuse on / whole rows`,
      goal: `≤ ${GOALS.oneOverWhole}`,
      value: v,
      unit: '×',
      met: v <= GOALS.oneOverWhole,
      detail: `the worst of ${ones.map((r) => r.tokens).join(' / ')}-token states`,
    });
  }
  const short = thresholds.filter((t) => t.model === label).sort((a, b) => (a.tokens as number) - (b.tokens as number));
  if (short.length) {
    let from: number | undefined;
    for (const t of [...short].reverse()) {
      if (med(t, 'newOverWhole')! < 1) from = t.tokens as number;
      else break;
    }
    targets.push({
      name: `${label}: the shortest state from which reuse pays (${THRESHOLD_QUESTIONS} questions, of ${short.map((t) => t.tokens).join(' / ')})`,
      goal: `≤ ${KEV_OWN_THRESHOLD} (Kev's own serving shares from there)`,
      value: from ?? Math.max(...short.map((t) => t.tokens as number)),
      unit: 'tokens',
      met: from !== undefined && from <= KEV_OWN_THRESHOLD,
      detail:
        from === undefined
          ? 'reuse / whole ≥ 1 at the longest state measured (the value): reuse did not pay at any length measured'
          : 'reuse / whole < 1 there and at every longer state measured',
    });
  }
  return targets;
}
