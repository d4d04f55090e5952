// 7. The real peers, side by side on the same weights (qwen2.5-0.5b shape; our int8 vs llama.cpp
// Q8_0, the same quantization class), the same threads:
//   - node-llama-cpp's LlamaDecisionContext.decideWithMeta (its Structured Decisions: the same
//     product as a library) vs our evaluate(): the same state × 16 questions, a new state each call
//     (our prefix cache off) and the same state repeated (its document cache vs our prefix cache);
//   - llama.cpp used by hand the way a competent user would, on the identical token ids of our plan:
//     the prefix once (controlledEvaluate), each question's suffix on it reading its label logits,
//     then the suffix erased; against our int8 (Q8_0) and our q4 (Q4_0), the four timed in one
//     loop so that both classes see the same minutes of a noisy machine;
//   - prefill throughput at 256 / 512 / 2,000 tokens, and a 16-token suffix on a cached prefix.
// Skipped, and said so, when node-llama-cpp cannot be installed or its CPU binary does not load.
import {
  firstTokens,
  loadEvaluator,
  ModelRunner,
  openModelFolder,
  planRequest,
  promptSet,
  TextCodec,
  type Question,
} from '../../src/internal.js';
import { ratio, table, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { interleaved, pairedRatio, round, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { ggufOf, loadNodeLlamaCpp } from './llamacpp.js';

/** The parts of node-llama-cpp used here (it is not a dependency: no types). */
interface Sequence {
  clearHistory(): Promise<void>;
  eraseContextTokenRanges(ranges: Array<{ start: number; end: number }>): Promise<void>;
  controlledEvaluate(
    input: Array<number | [number, object]>,
  ): Promise<Array<{ next?: { logits?: Map<number, number> } } | undefined>>;
}
interface Model {
  createContext(o: object): Promise<{ getSequence(): Sequence; dispose(): Promise<void> }>;
  createDecisionContext(o: object): Promise<{
    decideWithMeta(
      document: string,
      questions: object,
    ): Promise<{ answers: Record<string, { type: string; value?: number; choice?: string }> }>;
    dispose(): Promise<void>;
  }>;
  dispose(): Promise<void>;
}
interface Llama {
  loadModel(o: { modelPath: string }): Promise<Model>;
  dispose(): Promise<void>;
}

const text = (c: unknown): string => (typeof c === 'string' ? c : JSON.stringify(c));

/** Our questions in node-llama-cpp's decision format (instruction; noul criteria need both sides). */
function asDecisions(questions: Record<string, Question>): object {
  return Object.fromEntries(
    Object.entries(questions).map(([k, q]) => {
      if (q.type === 'noul') return [k, { type: 'noul', instruction: text(q.instructions ?? '') }];
      if (q.type === 'choice')
        return [
          k,
          {
            type: 'choice',
            instruction: text(q.instructions ?? ''),
            criteria: Object.fromEntries(Object.entries(q.criteria).map(([o, d]) => [o, d === null ? null : text(d)])),
          },
        ];
      return [k, { type: 'score', instruction: text(q.instructions ?? ''), criteria: q.criteria.map(text) }];
    }),
  );
}

function skipped(why: string, started: number): SectionResult {
  return {
    id: 'peers',
    title: '7. The real peers: node-llama-cpp and llama.cpp on the same weights',
    config: {},
    results: { skipped: why },
    targets: [],
    notes: [`SKIPPED: ${why}`],
    markdown: `Skipped: ${why}`,
    seconds: (performance.now() - started) / 1000,
  };
}

export async function peersSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const peer = await loadNodeLlamaCpp(ctx.log);
  if (typeof peer === 'string') return skipped(peer, started);
  let llama: Llama;
  try {
    llama = (await peer.getLlama({
      gpu: false,
      build: 'never',
      maxThreads: ctx.threads,
      logLevel: 'error',
    })) as unknown as Llama;
  } catch (error) {
    return skipped(
      `llama.cpp's prebuilt CPU binary does not load here (${(error as Error).message.split('\n')[0]})`,
      started,
    );
  }
  const rounds = ctx.quick ? 2 : 5;
  const stateTokens = ctx.quick ? 1000 : 2000;
  const fp32Dir = await ctx.model('qwen2.5-0.5b', 'fp32');
  const int8Dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const model = await llama.loadModel({ modelPath: ggufOf(fp32Dir, 'Q8_0', ctx.log) });
  const codec = await TextCodec.load(int8Dir);
  const folder = await openModelFolder(int8Dir, 'int8');
  const questions = mixedQuestions(16);
  const decisions = asDecisions(questions);
  const states = Array.from({ length: rounds + 2 }, (_, i) => textOfTokens(codec, stateTokens, 300 + i));
  const rows: Array<Record<string, unknown>> = [];
  const targets: Target[] = [];
  const threads = { ideal: ctx.threads, min: ctx.threads };

  // --- node-llama-cpp decideWithMeta vs our evaluate()
  const decide = await model.createDecisionContext({
    contextSize: stateTokens + 4096,
    batchSize: 512,
    threads: ctx.threads,
  });
  const cold = await loadEvaluator({ modelDir: int8Dir, variant: 'int8', threads: ctx.threads, prefixCacheBytes: 0 });
  const warm = await loadEvaluator({ modelDir: int8Dir, variant: 'int8', threads: ctx.threads });
  try {
    ctx.log(`  decideWithMeta vs evaluate(): ${stateTokens}-token state × 16 questions, ${rounds} rounds`);
    let i = 0;
    let j = 0;
    const fresh = await interleaved(
      {
        ours: () => cold.evaluate({ state: states[i++ % states.length]!, questions }),
        theirs: () => decide.decideWithMeta(states[j++ % states.length]!, decisions),
      },
      { rounds, warmup: 1 },
    );
    const same = await interleaved(
      {
        ours: () => warm.evaluate({ state: states[0]!, questions }),
        theirs: () => decide.decideWithMeta(states[0]!, decisions),
      },
      { rounds, warmup: 1 },
    );
    for (const [name, s] of [
      ['new state each call', fresh],
      ['same state repeated', same],
    ] as const) {
      const r = pairedRatio(s.theirs, s.ours);
      rows.push({
        measure: `decideWithMeta (Q8_0) vs our evaluate() (int8), ${name}`,
        ours: round(summarize(s.ours).median, 0),
        theirs: round(summarize(s.theirs).median, 0),
        unit: 'ms',
        ratio: r,
      });
      targets.push({
        name: `node-llama-cpp decideWithMeta takes ≥ 4× our time, ${name}`,
        goal: '≥ 4×',
        value: r.median,
        unit: '×',
        met: r.median >= 4,
      });
    }
  } finally {
    await decide.dispose();
    await warm.close();
  }

  // --- per quantization class: llama.cpp by hand on our plan's token ids vs our evaluate(), prefill, a suffix
  const plan = planRequest(
    { state: states[1]!, questions },
    codec,
    promptSet(folder.manifest.prompt_version),
    codec.eosTokenId ?? folder.eosTokenIds[0]!,
    {
      request: 1e9,
      question: 1e9,
      context: 1e9,
    },
  );
  const request = { state: states[1]!, questions };
  /** One class: our export and evaluator, llama.cpp's model of the same class with a context of its own. */
  interface QuantClass {
    ours: string;
    theirs: string;
    modelDir: string;
    variant: string;
    model: Model;
    evaluator: Awaited<ReturnType<typeof loadEvaluator>>;
    target: number;
  }
  const openClass = async (c: QuantClass) => {
    const context = await c.model.createContext({
      contextSize: stateTokens + 1024,
      batchSize: 512,
      threads,
      flashAttention: false,
    });
    const sequence = context.getSequence();
    /** Each question's label first-token logits, as the hand-written workload reads them. */
    const handLogits = new Map<string, number[]>();
    const byHand = async (): Promise<void> => {
      await sequence.clearHistory();
      await sequence.controlledEvaluate(plan.prefix);
      for (const q of plan.questions) {
        const out = await sequence.controlledEvaluate(
          q.suffix.map((t, k) => (k === q.suffix.length - 1 ? [t, { generateNext: { logits: true } }] : t)),
        );
        const logits = out[q.suffix.length - 1]?.next?.logits;
        handLogits.set(
          q.key,
          firstTokens(q.labels).map((t) => logits?.get(t) ?? -Infinity),
        );
        await sequence.eraseContextTokenRanges([
          { start: plan.prefix.length, end: plan.prefix.length + q.suffix.length },
        ]);
      }
    };
    return { ...c, context, sequence, handLogits, byHand };
  };
  type OpenClass = Awaited<ReturnType<typeof openClass>>;

  /** The by-hand row and target of a class from its rounds, and how its answers agree with llama.cpp's. */
  const byHandRow = async (c: OpenClass, ours: number[], theirs: number[]): Promise<void> => {
    // Agreement on the identical token ids (questions whose labels are single tokens): the label
    // distribution from llama.cpp's logits vs our answer.
    const ourAnswers = (await c.evaluator.evaluate(request)).answers;
    let compared = 0;
    let samePicks = 0;
    let maxDelta = 0;
    for (const q of plan.questions) {
      if (q.labels.some((l) => l.tokens.length > 1)) continue;
      const z = c.handLogits.get(q.key)!;
      const m = Math.max(...z);
      const e = z.map((v) => Math.exp(v - m));
      const p = e.map((v) => v / e.reduce((x, y) => x + y, 0));
      const a = ourAnswers[q.key]!;
      const mine = a.type === 'noul' ? [a.noul, 1 - a.noul] : Object.values(a.probabilities);
      compared++;
      samePicks += Number(mine.indexOf(Math.max(...mine)) === p.indexOf(Math.max(...p)));
      mine.forEach((v, k) => (maxDelta = Math.max(maxDelta, Math.abs(v - p[k]!))));
    }
    agreements[`${c.theirs} vs ours ${c.ours}`] = {
      questionsCompared: compared,
      samePicks,
      maxProbabilityDelta: round(maxDelta, 3),
    };
    const r = pairedRatio(theirs, ours);
    rows.push({
      measure: `llama.cpp by hand (${c.theirs}: prefix, then each suffix + erase) vs our evaluate() (${c.ours})`,
      ours: round(summarize(ours).median, 0),
      theirs: round(summarize(theirs).median, 0),
      unit: 'ms',
      ratio: r,
    });
    targets.push({
      name: `hand-written llama.cpp workload takes ≥ ${c.target}× our time (${c.theirs} vs ${c.ours})`,
      goal: `≥ ${c.target}×`,
      value: r.median,
      unit: '×',
      met: r.median >= c.target,
    });
  };

  /** Prefill at several sizes and a 16-token suffix on a cached prefix, ours and llama.cpp's, one class. */
  const prefillRows = async (c: OpenClass): Promise<void> => {
    const { sequence } = c;
    const runner = await ModelRunner.create(await openModelFolder(c.modelDir, c.variant), {
      modelDir: c.modelDir,
      threads: ctx.threads,
    });
    try {
      for (const n of ctx.quick ? [256, 512] : [256, 512, 2000]) {
        // A pass at this size on each side first (it pages the weights in and grows onnxruntime's
        // arena, llama.cpp's buffers likewise), then the median of 3, the two sides interleaved.
        const ids = (seed: number) => codec.encode(textOfTokens(codec, n, seed)).slice(0, n);
        const prefill = { ours: [] as number[], theirs: [] as number[] };
        for (let k = 0; k <= 3; k++) {
          const tokens = ids(700 + n + k);
          const ours = await timeMs(() => runner.forward(tokens, null, [[0]], false)); // one position read, no KV fetched
          await sequence.clearHistory();
          const theirs = await timeMs(() => sequence.controlledEvaluate(tokens));
          if (k === 0) continue;
          prefill.ours.push(ours);
          prefill.theirs.push(theirs);
        }
        const [o, t] = [(n / summarize(prefill.ours).median) * 1000, (n / summarize(prefill.theirs).median) * 1000];
        rows.push({
          measure: `prefill ${n} tokens (${c.theirs} / ours ${c.ours})`,
          ours: round(o, 0),
          theirs: round(t, 0),
          unit: 'tok/s',
          ratio: { median: round(o / t, 2), p10: round(o / t, 2), p90: round(o / t, 2) },
        });
      }
      const prefix = plan.prefix;
      const suffix = plan.questions[0]!.suffix.slice(0, 16);
      const past = (await runner.forward(prefix, null, [], true)).present!;
      const mine: number[] = [];
      for (let k = 0; k < 3; k++) mine.push(await timeMs(() => runner.forward(suffix, past, [[0]], false)));
      const oursSuffix = summarize(mine).median;
      await sequence.clearHistory();
      await sequence.controlledEvaluate(prefix);
      const times: number[] = [];
      for (let k = 0; k < 3; k++) {
        times.push(
          await timeMs(() =>
            sequence.controlledEvaluate(
              suffix.map((t, x) => (x === suffix.length - 1 ? [t, { generateNext: { logits: true } }] : t)),
            ),
          ),
        );
        await sequence.eraseContextTokenRanges([{ start: prefix.length, end: prefix.length + suffix.length }]);
      }
      const theirsSuffix = summarize(times).median;
      rows.push({
        measure: `16-token suffix on a cached ${prefix.length}-token prefix (${c.theirs} / ours ${c.ours})`,
        ours: round(oursSuffix, 1),
        theirs: round(theirsSuffix, 1),
        unit: 'ms',
        ratio: {
          median: round(theirsSuffix / oursSuffix, 2),
          p10: round(theirsSuffix / oursSuffix, 2),
          p90: round(theirsSuffix / oursSuffix, 2),
        },
      });
    } finally {
      await runner.close();
    }
  };

  const agreements: Record<string, unknown> = {};
  // The 4-bit class: our q4 export (MatMulNBits, block 32, accuracy_level 4; run through the int8
  // kernels, converted at load, by default: src/engine/model/q4-to-int8.ts) vs llama.cpp Q4_0, same weights.
  const q4Dir = await ensureFlavor({ shape: 'qwen2.5-0.5b', dtype: 'q4' });
  const q4Model = await llama.loadModel({ modelPath: ggufOf(fp32Dir, 'Q4_0', ctx.log) });
  const q4 = await loadEvaluator({ modelDir: q4Dir, variant: 'q4', threads: ctx.threads, prefixCacheBytes: 0 });
  const opened: OpenClass[] = [];
  try {
    opened.push(
      await openClass({
        ours: 'int8',
        theirs: 'Q8_0',
        modelDir: int8Dir,
        variant: 'int8',
        model,
        evaluator: cold,
        target: 5,
      }),
      await openClass({
        ours: 'q4',
        theirs: 'Q4_0',
        modelDir: q4Dir,
        variant: 'q4',
        model: q4Model,
        evaluator: q4,
        target: 3.5,
      }),
    );
    // Both classes' workloads, ours and llama.cpp's, in one loop (rotating order): a class is never
    // timed in other minutes than the other, and each ratio pairs the two sides of one round.
    ctx.log(
      `  llama.cpp by hand vs evaluate() on the same token ids, Q8_0 / int8 and Q4_0 / q4 interleaved, ${rounds} rounds; prefill; a suffix`,
    );
    const tasks = Object.fromEntries(
      opened.flatMap((c) => [
        [c.ours, () => c.evaluator.evaluate(request)],
        [c.theirs, c.byHand],
      ]),
    ) as Record<string, () => Promise<unknown>>;
    const s = await interleaved(tasks, { rounds, warmup: 1 });
    for (const c of opened) await byHandRow(c, s[c.ours]!, s[c.theirs]!);
    for (const c of opened) await prefillRows(c);
  } finally {
    for (const c of opened) await c.context.dispose();
    await cold.close();
    await q4.close();
    await model.dispose();
    await q4Model.dispose();
    await llama.dispose();
  }
  // Our two classes against each other: q4 (through the int8 kernels) and int8 prefill, interleaved,
  // so the 4-bit class's speed is read against the 8-bit one in the same minutes. Single rounds
  // scatter by ±10% on a shared machine, hence 30 rounds (16 quick) where the ratio is a target.
  const classes = {
    q4: await ModelRunner.create(await openModelFolder(q4Dir, 'q4'), { modelDir: q4Dir, threads: ctx.threads }),
    int8: await ModelRunner.create(folder, { modelDir: int8Dir, threads: ctx.threads }),
  };
  try {
    for (const n of ctx.quick ? [256, 512] : [256, 512, 2000]) {
      let seed = 900 + n;
      const s = await interleaved(
        {
          q4: () => classes.q4.forward(codec.encode(textOfTokens(codec, n, seed)).slice(0, n), null, [[0]], false),
          int8: () =>
            classes.int8.forward(codec.encode(textOfTokens(codec, n, seed++)).slice(0, n), null, [[0]], false),
        },
        { rounds: n > 512 ? 6 : ctx.quick ? 16 : 30, warmup: 1 },
      );
      const r = pairedRatio(s.int8, s.q4);
      rows.push({
        measure: `prefill ${n} tokens, ours: q4 / int8, interleaved`,
        ours: round((n / summarize(s.q4).median) * 1000, 0),
        theirs: round((n / summarize(s.int8).median) * 1000, 0),
        unit: 'tok/s',
        ratio: r,
      });
      if (n <= 512)
        targets.push({
          name: `our q4 prefill at least our int8's, ${n} tokens (interleaved)`,
          goal: '≥ 1×',
          value: r.median,
          unit: '×',
          met: r.median >= 1,
        });
    }
  } finally {
    await classes.q4.close();
    await classes.int8.close();
  }
  return {
    id: 'peers',
    title: '7. The real peers: node-llama-cpp and llama.cpp on the same weights',
    config: {
      model:
        'qwen2.5-0.5b: ours int8 (dynamic) vs llama.cpp Q8_0; ours q4 (MatMulNBits, through the int8 kernels) vs llama.cpp Q4_0',
      threads: ctx.threads,
      rounds,
      stateTokens,
      questions: 16,
      quick: ctx.quick,
    },
    results: { rows, agreements },
    targets,
    notes: [
      "Ratios: the peer's time over ours (> 1: we are faster); prefill and suffix rows give both figures and ours / theirs throughput. In the q4 / int8 rows the second figure is our int8's, and the ratio is its time over our q4's (> 1: q4 is faster).",
      `Agreement on the identical token ids (llama.cpp label logits vs our answers, questions with single-token labels): ${JSON.stringify(agreements)}.`,
      ...(ctx.quick ? ['--quick: a 1,000-token state, 2 rounds, prefill at 256 and 512 tokens.'] : []),
    ],
    markdown: table(
      ['measure', 'ours', 'llama.cpp / node-llama-cpp', 'unit', 'ratio'],
      rows.map((r) => [
        r.measure as string,
        r.ours as number,
        r.theirs as number,
        r.unit as string,
        ratio(r.ratio as never),
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
