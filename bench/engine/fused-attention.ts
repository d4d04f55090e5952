// Fused attention (src/engine/model/fuse-attention.ts) on vs off, on the qwen2.5-0.5b int8 shape:
// - prefill of 256 / 1,000 / 2,000 / 4,000 tokens (one pass through the runner, chunked as served),
// - one request of 2,000 tokens × 16 questions (and 256 × 16) through the engine, prefix cache off,
// each round timing both sides back to back, alternating which goes first (A, B, then B, A), so a
// busy machine slows both alike; the ratio is per round, off / on (above 1: the fused graph is faster);
// - the peak resident memory of one 4,000-token request, each side in a fresh process;
// - where the time of a 2,000-token pass goes, per operator, on both graphs (onnxruntime's profiler).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import * as ort from 'onnxruntime-node';
import {
  int8SessionConfig,
  loadEvaluator,
  ModelRunner,
  openModelFolder,
  TextCodec,
  type EvaluateRequest,
  type Evaluator,
} from '../../src/internal.js';
import { table, ms, ratio, type BenchContext, type SectionResult, type Target } from '../lib/context.js';
import { pairedRatio, roundSummary, summarize, timeMs } from '../lib/stats.js';
import { mixedQuestions, textOfTokens } from '../lib/text.js';

type Side = 'on' | 'off';
const SIDES: Side[] = ['on', 'off'];

/** The goals (2 threads, 0.5B int8): prefill speed-up at 2,000 and 4,000 tokens. */
const GOALS: Record<number, number> = { 2000: 1.4, 4000: 1.7 };

export async function fusedAttentionSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const codec = await TextCodec.load(dir);
  const folder = await openModelFolder(dir);
  const warnings: string[] = [];
  const prefillRows = ctx.quick
    ? [
        { tokens: 256, rounds: 4 },
        { tokens: 1000, rounds: 2 },
      ]
    : [
        { tokens: 256, rounds: 8 },
        { tokens: 1000, rounds: 4 },
        { tokens: 2000, rounds: 3 },
        { tokens: 4000, rounds: 2 },
      ];
  const requestRows = ctx.quick
    ? [{ tokens: 256, questions: 16, rounds: 3 }]
    : [256, 2000].map((tokens) => ({ tokens, questions: 16, rounds: tokens > 1000 ? 3 : 6 }));
  let seed = 9100;

  // Prefill: the runner alone (the engine's chunks over the growing past), the last position read.
  const runners: Record<Side, ModelRunner> = {
    on: await ModelRunner.create(folder, {
      modelDir: dir,
      threads: ctx.threads,
      fusedAttention: true,
      onNote: (w) => warnings.push(w.message),
    }),
    off: await ModelRunner.create(folder, { modelDir: dir, threads: ctx.threads, fusedAttention: false }),
  };
  const prefill: Array<{ tokens: number; rounds: number; on: number[]; off: number[] }> = [];
  const graphs = { on: runners.on.graphPath, off: runners.off.graphPath };
  try {
    for (const row of prefillRows) {
      ctx.log(`  prefill ${row.tokens} tokens, ${row.rounds} rounds, fused on / off`);
      const ids = () => codec.encode(textOfTokens(codec, row.tokens, seed++)).slice(0, row.tokens);
      const warm = ids();
      for (const side of SIDES) await runners[side].forward(warm, null, [[32]], false);
      const times = { on: [] as number[], off: [] as number[] };
      for (let r = 0; r < row.rounds; r++) {
        const input = ids();
        for (const side of r % 2 === 0 ? SIDES : [...SIDES].reverse())
          times[side].push(await timeMs(() => runners[side].forward(input, null, [[32]], false)));
      }
      prefill.push({ ...row, ...times });
    }
  } finally {
    for (const side of SIDES) await runners[side].close();
  }

  // Requests: one state × 16 questions through the engine (prefix pass, then packed question passes).
  const load = (fusedAttention: boolean) =>
    loadEvaluator({ modelDir: dir, variant: 'int8', threads: ctx.threads, prefixCacheBytes: 0, fusedAttention });
  const engines: Record<Side, Evaluator> = { on: await load(true), off: await load(false) };
  const requests: Array<{
    tokens: number;
    questions: number;
    rounds: number;
    inputTokens: number;
    on: number[];
    off: number[];
  }> = [];
  try {
    const all = mixedQuestions(16);
    for (const row of requestRows) {
      ctx.log(`  request ${row.tokens} tokens × ${row.questions} questions, ${row.rounds} rounds, fused on / off`);
      const request = (): EvaluateRequest => ({ state: textOfTokens(codec, row.tokens, seed++), questions: all });
      const inputTokens = (await engines.on.evaluate(request())).usage.input_tokens;
      await engines.off.evaluate(request());
      const times = { on: [] as number[], off: [] as number[] };
      for (let r = 0; r < row.rounds; r++) {
        const req = request();
        for (const side of r % 2 === 0 ? SIDES : [...SIDES].reverse())
          times[side].push(await timeMs(() => engines[side].evaluate(req)));
      }
      requests.push({ ...row, inputTokens, ...times });
    }
  } finally {
    for (const side of SIDES) await engines[side].close();
  }

  // Peak RSS of one long request, each side in a process of its own.
  const rssTokens = ctx.quick ? 1000 : 4000;
  const rss = Object.fromEntries(
    SIDES.map((side) => [side, peakRss(dir, side === 'on', ctx.threads, textOfTokens(codec, rssTokens, 77))]),
  ) as Record<Side, { loadMiB: number; peakMiB: number }>;

  // Where the time goes: onnxruntime's per-operator profile of one pass on each graph.
  const profileTokens = ctx.quick ? 1000 : 2000;
  const profiles = {} as Record<Side, Array<{ op: string; ms: number; share: number }>>;
  for (const side of SIDES)
    profiles[side] = await profile(
      graphs[side],
      dirname(folder.onnxPath),
      ctx.threads,
      codec.encode(textOfTokens(codec, profileTokens, 55)).slice(0, profileTokens),
    );

  const prefillResults = prefill.map((p) => ({
    tokens: p.tokens,
    rounds: p.rounds,
    on: roundSummary(summarize(p.on), 1),
    off: roundSummary(summarize(p.off), 1),
    /** off / on, per round: the fused graph's speed-up */
    speedup: pairedRatio(p.off, p.on),
  }));
  const requestResults = requests.map((p) => ({
    tokens: p.tokens,
    questions: p.questions,
    inputTokens: p.inputTokens,
    rounds: p.rounds,
    on: roundSummary(summarize(p.on), 1),
    off: roundSummary(summarize(p.off), 1),
    speedup: pairedRatio(p.off, p.on),
  }));
  const targets: Target[] = [
    ...prefillResults
      .filter((r) => GOALS[r.tokens])
      .map((r) => ({
        name: `prefill ${r.tokens} tokens, fused attention off / on`,
        goal: `≥ ${GOALS[r.tokens]!.toFixed(1)}×`,
        value: r.speedup.median,
        unit: '×',
        met: r.speedup.median >= GOALS[r.tokens]!,
        detail: `p10–p90 ${r.speedup.p10}–${r.speedup.p90}; ${r.on.median} ms on vs ${r.off.median} ms off`,
      })),
    {
      name: `peak RSS of a ${rssTokens}-token request, fused on vs off`,
      goal: 'lower',
      value: rss.on.peakMiB,
      unit: 'MiB',
      met: rss.on.peakMiB < rss.off.peakMiB,
      detail: `${rss.on.peakMiB} MiB on vs ${rss.off.peakMiB} MiB off (after load: ${rss.on.loadMiB} / ${rss.off.loadMiB} MiB)`,
    },
  ];
  const profileTable = (side: Side) =>
    table(
      ['operator', 'ms', 'share'],
      profiles[side].slice(0, 8).map((p) => [p.op, p.ms.toFixed(0), `${(100 * p.share).toFixed(1)}%`]),
    );
  return {
    id: 'fused-attention',
    title: '3d. Fused attention (GroupQueryAttention) on vs off',
    config: { model: 'qwen2.5-0.5b-int8', threads: ctx.threads, prefixCacheBytes: 0, quick: ctx.quick },
    results: {
      prefill: prefillResults,
      requests: requestResults,
      rss: { tokens: rssTokens, ...rss },
      profiles: { tokens: profileTokens, ...profiles },
    },
    targets,
    notes: [
      'Speed-up = off / on per round (above 1: fused is faster), median with p10–p90.',
      'Profiles: onnxruntime kernel time per operator type over one pass (If holds the fused attention of a layer, so its time includes GroupQueryAttention).',
      ...(ctx.quick ? ['--quick: 256 and 1,000-token prefill, 256 × 16 questions, 1,000-token RSS and profile.'] : []),
      ...warnings.map((w) => `Load: ${w}`),
    ],
    markdown: [
      table(
        ['prefill tokens', 'fused (median, min–max)', 'as exported', 'off / on (median, p10–p90)'],
        prefillResults.map((r) => [r.tokens, ms(r.on), ms(r.off), ratio(r.speedup)]),
      ),
      '',
      table(
        ['state tokens', 'questions', 'input tokens', 'fused', 'as exported', 'off / on'],
        requestResults.map((r) => [r.tokens, r.questions, r.inputTokens, ms(r.on), ms(r.off), ratio(r.speedup)]),
      ),
      '',
      `Peak RSS of one ${rssTokens}-token request: ${rss.on.peakMiB} MiB fused, ${rss.off.peakMiB} MiB as exported (after load ${rss.on.loadMiB} / ${rss.off.loadMiB} MiB).`,
      '',
      `Where a ${profileTokens}-token pass goes, fused:`,
      '',
      profileTable('on'),
      '',
      'As exported:',
      '',
      profileTable('off'),
    ].join('\n'),
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * Resident memory after loading the model, and its peak during one request of `tokens` tokens, in a
 * fresh process (sampled every 10 ms from the main thread while the engine thread runs the passes:
 * maxRSS would report the load's own peak, which is higher than a request's).
 */
function peakRss(dir: string, fused: boolean, threads: number, state: string): { loadMiB: number; peakMiB: number } {
  const script = `
    const { loadEvaluator } = await import(${JSON.stringify(resolve('src/engine/index.ts'))});
    const e = await loadEvaluator({ modelDir: ${JSON.stringify(dir)}, variant: 'int8', threads: ${threads}, prefixCacheBytes: 0, fusedAttention: ${fused} });
    await e.evaluate({ state: 'Warm up.', questions: { q: { type: 'noul', instructions: 'Is it short?' } } });
    const loadMiB = Math.round(process.memoryUsage.rss() / 2 ** 20);
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
    await e.evaluate({ state: ${JSON.stringify(state)}, questions: { q: { type: 'noul', instructions: 'Is it long?' } } });
    clearInterval(timer);
    peak = Math.max(peak, process.memoryUsage.rss());
    console.log(JSON.stringify({ loadMiB, peakMiB: Math.round(peak / 2 ** 20) }));
    await e.close();`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  return JSON.parse(out.trim().split('\n').pop()!) as { loadMiB: number; peakMiB: number };
}

/** onnxruntime's kernel time per operator type over one pass of `ids` (no past), on the graph at `path`. */
async function profile(
  path: string,
  weightsDir: string,
  threads: number,
  ids: number[],
): Promise<Array<{ op: string; ms: number; share: number }>> {
  const extra = await int8SessionConfig(true, 'all');
  const out = mkdtempSync(join(tmpdir(), 'assay-profile-'));
  const session = await ort.InferenceSession.create(readFileSync(path), {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    enableProfiling: true,
    profileFilePrefix: join(out, 'profile'),
    logSeverityLevel: 3,
    extra: {
      ...extra,
      session: { ...(extra.session as object | undefined), model_external_initializers_file_folder_path: weightsDir },
    },
  });
  try {
    const feeds: Record<string, ort.Tensor> = {};
    for (const name of session.inputNames) {
      const meta = session.inputMetadata.find((m) => m.name === name);
      const type = meta && meta.isTensor ? meta.type : 'float32';
      if (name === 'input_ids') feeds[name] = new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), [1, ids.length]);
      else if (name === 'attention_mask')
        feeds[name] = new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), [1, ids.length]);
      else if (name === 'position_ids')
        feeds[name] = new ort.Tensor(
          'int64',
          BigInt64Array.from(ids, (_, i) => BigInt(i)),
          [1, ids.length],
        );
      else if (name.startsWith('past_key_values.')) {
        const shape = meta && meta.isTensor ? meta.shape : [];
        feeds[name] = new ort.Tensor(type as 'float32', new Float32Array(0), [
          1,
          Number(shape[1]),
          0,
          Number(shape[3]),
        ]);
      } else if (name === 'assay_attention_bias') feeds[name] = new ort.Tensor('float32', new Float32Array(1), [1, 1]);
      else if (name === 'assay_positions')
        feeds[name] = new ort.Tensor('int64', BigInt64Array.of(BigInt(ids.length - 1)), [1]);
      else if (name === 'assay_candidates') feeds[name] = new ort.Tensor('int64', BigInt64Array.of(32n), [1, 1, 1]);
      else if (name === 'assay_inv_temperature') feeds[name] = new ort.Tensor('float32', Float32Array.of(1), []);
    }
    await session.run(feeds, ['assay_logprobs']);
    session.endProfiling();
  } finally {
    await session.release();
  }
  const file = readdirSync(out).find((f) => f.endsWith('.json'));
  const events = file
    ? (JSON.parse(readFileSync(join(out, file), 'utf8')) as Array<{
        cat: string;
        name: string;
        dur: number;
        args?: { op_name?: string };
      }>)
    : [];
  rmSync(out, { recursive: true, force: true });
  const by = new Map<string, number>();
  let total = 0;
  // GroupQueryAttention runs inside the If of its layer: count it once, as the If's.
  const nested = events.some((e) => e.args?.op_name === 'If');
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    if (e.args?.op_name === 'GroupQueryAttention' && nested) continue;
    const op = e.args?.op_name ?? '?';
    by.set(op, (by.get(op) ?? 0) + e.dur / 1000);
    total += e.dur / 1000;
  }
  return [...by]
    .sort((a, b) => b[1] - a[1])
    .map(([op, msTotal]) => ({ op, ms: msTotal, share: total ? msTotal / total : 0 }));
}
