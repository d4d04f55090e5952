// The decoder decision-model contracts at the published models' sizes: decider's label-token
// contract (`decider-labels`) and a contract declared in the folder (`label-tokens`, a generic chat
// contract) on synthetic int8 decoders of Qwen2.5-0.5B's and Qwen3.5-0.8B's size, 1 / 5 / 16
// questions (the first public client's mix) on 256 / 2,000-token states, through Assay as served
// against the same contract without Assay's reuse: each question its own request on an engine with
// the prefix cache off (one row per question, the state encoded again for each).
//
//   ASSAY_BENCH_CONTRACTS=label-tokens         only these contracts (a comma list)
//   ASSAY_BENCH_CONTRACT_SHAPES=qwen2.5-0.5b   only these sizes
//   ASSAY_BENCH_CONTRACT_CELLS=1x256,16x2000   only these cells (questions x state tokens)
// - assay: the request on a state the engine has not seen (the state's KV encoded once, each
//   question a suffix on it);
// - assay, state seen: the same request again (the state's KV from the prefix cache);
// - no reuse: the questions one by one on the cache-less engine.
// Each round runs the sides back to back, alternating which goes first; no reuse / assay per round.
import { mkdirSync, readdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  ensureSynthModel,
  loadEvaluator,
  TextCodec,
  type EvaluateRequest,
  type Evaluator,
} from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { clientQuestions, textOfTokens } from '../lib/text.js';

type Shape = 'qwen2.5-0.5b' | 'qwen3.5-0.8b';

type Contract = 'decider-labels' | 'label-tokens';

/** A label-token contract as the bench's label-tokens folders declare it (a generic chat contract, docs/families/label-tokens.md). */
const BENCH_CONTRACT = {
  name: 'bench-chat',
  chat: { system: 'Answer the question about the state with the label of one option.' },
  state: 'State:\n{state}\n\n',
  question: 'Question: {question}\nOptions:\n{options}Answer with the label only.',
  option: '{label}. {text}\n',
};

/**
 * A contract folder over a synthetic decoder: the decoder's files linked, and the contract's own
 * (decision.json's layout, calibration.json: decider's [T, 1, T] at decider-0.8b's T).
 */
function contractFolder(base: string, contract: Contract): string {
  const dir = join(base, '..', `${basename(base)}-${contract === 'decider-labels' ? 'decider' : contract}`);
  if (!existsSync(join(dir, 'decision.json'))) {
    mkdirSync(dir, { recursive: true });
    for (const name of readdirSync(base))
      if (!existsSync(join(dir, name))) symlinkSync(join(base, name), join(dir, name));
    const decision =
      contract === 'decider-labels'
        ? { layout: 'decider-labels-v1' }
        : { layout: 'label-tokens-v1', contract: BENCH_CONTRACT };
    writeFileSync(join(dir, 'decision.json'), `${JSON.stringify(decision, null, 2)}\n`);
    writeFileSync(join(dir, 'calibration.json'), `${JSON.stringify({ temperature: [1.03, 1, 1.03] }, null, 2)}\n`);
  }
  return dir;
}

/** A comma list from the environment, else all of `all`. */
function picked<T extends string>(name: string, all: readonly T[]): T[] {
  const list = process.env[name]?.split(',').map((s) => s.trim());
  return list ? all.filter((x) => list.includes(x)) : [...all];
}

export async function decisionFamiliesSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const shapes: Shape[] = ctx.quick
    ? ['qwen2.5-0.5b']
    : picked('ASSAY_BENCH_CONTRACT_SHAPES', ['qwen2.5-0.5b', 'qwen3.5-0.8b'] as const);
  const contracts = picked('ASSAY_BENCH_CONTRACTS', ['decider-labels', 'label-tokens'] as const);
  type Cell = { questions: number; tokens: number; rounds: number };
  const allCells: Cell[] = ctx.quick
    ? [
        { questions: 1, tokens: 256, rounds: 2 },
        { questions: 16, tokens: 256, rounds: 2 },
      ]
    : [
        { questions: 1, tokens: 256, rounds: 3 },
        { questions: 5, tokens: 256, rounds: 3 },
        { questions: 16, tokens: 256, rounds: 3 },
        { questions: 1, tokens: 2000, rounds: 1 },
        { questions: 5, tokens: 2000, rounds: 1 },
        { questions: 16, tokens: 2000, rounds: 1 },
      ];
  const cellNames = process.env.ASSAY_BENCH_CONTRACT_CELLS?.split(',');
  const cells = allCells.filter((c) => !cellNames || cellNames.includes(`${c.questions}x${c.tokens}`));
  const rows: Array<Record<string, unknown>> = [];
  const notes: string[] = [];
  let seed = 3800;
  for (const [shape, contract] of shapes.flatMap((s) => contracts.map((c) => [s, c] as const))) {
    const base = await ensureSynthModel({ shape, dtype: 'int8' });
    const dir = contractFolder(base, contract);
    const label = `${shape} int8 (${contract})`;
    const codec = await TextCodec.load(dir);
    const warnings: string[] = [];
    const load = (extra: object) =>
      loadEvaluator({
        modelDir: dir,
        variant: 'int8',
        threads: ctx.threads,
        onNote: (w) => warnings.push(w.message),
        ...extra,
      });
    const assay: Evaluator = await load({});
    const plain: Evaluator = await load({ prefixCacheBytes: 0, packQuestions: false, batchTokens: 0 });
    const oneByOne = async (req: EvaluateRequest) => {
      let inputTokens = 0;
      for (const [key, question] of Object.entries(req.questions))
        inputTokens += (await plain.evaluate({ state: req.state, questions: { [key]: question } })).usage.input_tokens;
      return inputTokens;
    };
    try {
      for (const cell of cells) {
        ctx.log(`  ${label}: ${cell.questions} questions × ${cell.tokens}-token state, ${cell.rounds} rounds`);
        const request = (): EvaluateRequest => ({
          state: textOfTokens(codec, cell.tokens, seed++),
          questions: clientQuestions(cell.questions, seed++),
        });
        const warm = request();
        await assay.evaluate(warm);
        await oneByOne({ ...warm, questions: { q0: Object.values(warm.questions)[0]! } });
        const times = { assay: [] as number[], seen: [] as number[], plain: [] as number[] };
        const tokens = { assay: 0, plain: 0 };
        for (let r = 0; r < cell.rounds; r++) {
          const req = request();
          const sides = r % 2 === 0 ? (['assay', 'plain'] as const) : (['plain', 'assay'] as const);
          for (const side of sides) {
            if (side === 'assay') {
              let used = 0;
              times.assay.push(await timeMs(async () => (used = (await assay.evaluate(req)).usage.input_tokens)));
              times.seen.push(await timeMs(() => assay.evaluate(req)));
              tokens.assay = used;
            } else {
              let used = 0;
              times.plain.push(await timeMs(async () => (used = await oneByOne(req))));
              tokens.plain = used;
            }
          }
        }
        rows.push({
          model: label,
          ...cell,
          inputTokens: tokens,
          assay: roundSummary(summarize(times.assay), 1),
          seen: roundSummary(summarize(times.seen), 1),
          plain: roundSummary(summarize(times.plain), 1),
          speedup: pairedRatio(times.plain, times.assay),
          speedupSeen: pairedRatio(times.plain, times.seen),
        });
      }
    } finally {
      await assay.close();
      await plain.close();
    }
    for (const w of warnings) notes.push(`${label} load: ${w}`);
  }
  const at = (q: number, t: number) =>
    rows.filter((r) => r.questions === q && r.tokens === t).map((r) => (r.speedup as { median: number }).median);
  const longest = Math.max(...cells.map((c) => c.tokens));
  const worst16 = Math.min(...at(16, longest));
  const targets: Target[] = [
    {
      name: "label-token contracts, 16 questions: no reuse / Assay (the state's KV encoded once)",
      goal: '> 1',
      value: Math.round(worst16 * 100) / 100,
      unit: '×',
      met: worst16 > 1,
      detail: `the lowest of the shapes and contracts, ${longest}-token state`,
    },
  ];
  return {
    id: 'decision-families',
    title: "3f. Decision-model contracts on decoders: label-token contracts with and without Assay's reuse",
    config: { shapes, contracts, cells, threads: ctx.threads, quick: ctx.quick },
    results: { rows },
    targets,
    notes: [
      'Synthetic decoders with random weights at the published sizes, int8 (per-token rewrite): the cost is real, the answers are not.',
      "Questions: the first public client's mix (60% noul, 28% choice of 4, 12% score of at most 5 levels; a score is one yes/no row per level under decider's contract, one row under a label-tokens contract).",
      `label-tokens: a generic chat contract from the folder (${JSON.stringify(BENCH_CONTRACT)}), digit labels for score levels.`,
      "no reuse: each question its own request on an engine with the prefix cache off and packing off, so the state is encoded again per question (a score question's level rows still share its one request).",
      'input tokens: every token the engine was given (usage.input_tokens), Assay / no reuse.',
      ...notes,
    ],
    markdown: table(
      [
        'model',
        'questions',
        'state tokens',
        'input tokens (Assay / no reuse)',
        'Assay p50',
        'Assay, state seen',
        'no reuse',
        'no reuse / Assay',
        'no reuse / seen',
      ],
      rows.map((r) => {
        const t = r.inputTokens as { assay: number; plain: number };
        return [
          r.model as string,
          r.questions as number,
          r.tokens as number,
          `${t.assay} / ${t.plain}`,
          ms(r.assay as never),
          ms(r.seen as never),
          ms(r.plain as never),
          ratio(r.speedup as never),
          ratio(r.speedupSeen as never),
        ];
      }),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
