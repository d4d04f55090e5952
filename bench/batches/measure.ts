// One model's runs of the batch bench, each on a fresh `assay serve` (so no run answers from another's
// prefix cache): the batch alone; the same lines fanned out through the SDK at each concurrency; then
// the interactive load on an idle server (half before, half after) and while a batch of the same
// lines drains. Two keys: the batch and fan-out key, and the interactive callers' key. In rounds:
// the first runs every concurrency, each later one the batch and the first round's best concurrency
// again, and each round the interactive load (the cores' speed drifts over minutes).
import { TextCodec, type ShapeName, type SynthDtype } from '../../src/internal.js';
import type { BenchContext } from '../lib/context.js';
import { startBenchServer, type BenchServer } from '../lib/server.js';
import { round, summarize } from '../lib/stats.js';
import {
  fanOut,
  maxDiff,
  openLoop,
  runBatch,
  runBatchApart,
  type BatchRun,
  type FanOutRun,
  type LoadRun,
} from './clients.js';
import { corpusLines, interactiveRequest } from './corpus.js';

export const BATCH_KEY = 'bench-batches-corpus-key';
export const LIVE_KEY = 'bench-batches-interactive-key';

export interface ShapePlan {
  shape: ShapeName;
  dtype: SynthDtype;
  lines: number;
  questions: number;
  concurrency: number[];
  /** Seconds of interactive load on the idle server, half before the drain and half after. */
  idleSeconds: number;
  rps: number;
  /**
   * Rounds: the first runs the batch and every concurrency, each later one the batch and the best
   * concurrency of the first again, then the interactive load once a round; the ratios are the
   * median of the rounds' (a two-core machine shared with others moves by ±20% over minutes).
   */
  rounds: number;
}

export interface Latency {
  n: number;
  failed: number;
  /** As the client sees it, ms. */
  p50: number;
  p99: number;
  /** The server's parts (Server-Timing): the engine (queue wait + passes) and the whole request, ms. */
  engine: { p50: number; p99: number };
  server: { p50: number; p99: number };
}

export interface ShapeResult {
  plan: ShapePlan;
  model: string;
  states: number;
  batch: Omit<BatchRun, 'sample'>;
  fanOuts: Array<
    Omit<FanOutRun, 'sample'> & {
      maxDiff: number;
      compared: number;
      /** Sampled lines whose answers differ from the batch's past 1e-6: how many, and the first 20. */
      overCount: number;
      over: string[];
    }
  >;
  interactive: { idle: Latency; draining: Latency; drainBatch: Omit<BatchRun, 'sample'> };
  /** Each round's wall times (the first round's are `batch` and the best of `fanOuts`) and interactive p50 / p99, ms. */
  rounds: Array<{
    batchMs: number;
    fanOutMs: number;
    concurrency: number;
    idle: { p50: number; p99: number };
    draining: { p50: number; p99: number };
    /** The round's batch completed with every line answered once. */
    complete: boolean;
  }>;
}

/** The median and the 99th percentile (nearest rank) of `samples`, ms. */
function percentiles(samples: number[]): { p50: number; p99: number } {
  const all = [...samples].sort((a, b) => a - b);
  const p99 = all.length === 0 ? NaN : all[Math.min(all.length - 1, Math.ceil(all.length * 0.99) - 1)]!;
  return { p50: round(summarize(all).median, 1), p99: round(p99, 1) };
}

function latency(runs: LoadRun[]): Latency {
  return {
    n: runs.reduce((n, r) => n + r.latencies.length, 0),
    failed: runs.reduce((n, r) => n + r.failed, 0),
    ...percentiles(runs.flatMap((r) => r.latencies)),
    engine: percentiles(runs.flatMap((r) => r.engine)),
    server: percentiles(runs.flatMap((r) => r.server)),
  };
}

function rounded<T extends { ms: number; sample: unknown }>(r: T): Omit<T, 'sample'> {
  const { sample: _sample, ...rest } = r;
  void _sample;
  return { ...rest, ms: round(rest.ms, 0) };
}

export async function measureShape(ctx: BenchContext, plan: ShapePlan): Promise<ShapeResult> {
  const dir = await ctx.model(plan.shape, plan.dtype);
  const codec = await TextCodec.load(dir);
  const model = 'bench-model';
  const lines = corpusLines(codec, model, plan.lines, plan.questions);
  const states = new Set(lines.map((l) => l.body.state)).size;
  // About 50 lines spread over the corpus are compared between the batch and every fan-out.
  const step = Math.max(1, Math.floor(lines.length / 50));
  const sampled = new Set(lines.filter((_, i) => i % step === 0).map((l) => l.custom_id));
  const label = `${plan.shape}-${plan.dtype}`;
  let live = 0;
  const nextLive = (i: number) => interactiveRequest(codec, model, i);
  const server = async <T>(what: string, run: (s: BenchServer) => Promise<T>, timing = false): Promise<T> => {
    ctx.log(`  ${label}: ${what}`);
    const s = await startBenchServer({
      modelDir: dir,
      variant: plan.dtype,
      threads: ctx.threads,
      key: `${BATCH_KEY},${LIVE_KEY}`,
      // Neither side is paced by the per-key limits: the bench compares the work, not the quotas.
      args: [
        '--rpm',
        '100000000',
        '--tps',
        '1000000000',
        '--deadline-ms',
        '900000',
        // Where the interactive load's time goes (engine queue and passes, or the server around them).
        ...(timing ? ['--server-timing-engine'] : []),
      ],
    });
    try {
      // Warm-up: the first passes of a fresh session, on states nobody asks again.
      for (let i = 0; i < 2; i++)
        await openLoop(s, LIVE_KEY, nextLive, { rps: 1000, maxMs: 0, first: 900_000 + live++ });
      return await run(s);
    } finally {
      await s.stop();
    }
  };

  const batchRun = () =>
    server(`a batch of ${lines.length} lines (${states} states)`, (s) => runBatch(s, BATCH_KEY, lines, sampled));
  const fanOutRun = (c: number) =>
    server(`the same lines through the SDK, concurrency ${c}`, (s) => fanOut(s, BATCH_KEY, lines, c, sampled));
  const fanOuts: ShapeResult['fanOuts'] = [];
  /** The fan-out's answers on the sampled lines against the batch's: the largest difference, and the lines past 1e-6. */
  const compare = (batch: Awaited<ReturnType<typeof batchRun>>, f: Awaited<ReturnType<typeof fanOutRun>>) => {
    const compared = [...batch.sample.keys()].filter((id) => f.sample.has(id));
    const diffs = compared.map((id) => [id, maxDiff(batch.sample.get(id), f.sample.get(id))] as const);
    const diff = Math.max(0, ...diffs.map(([, d]) => d));
    // Lines whose answers moved past 1e-6 (the first few), to tell one layout's from every line's.
    const over = diffs.filter(([, d]) => d > 1e-6).map(([id, d]) => `${id}: ${d.toPrecision(3)}`);
    ctx.log(`    ${(f.ms / 1000).toFixed(1)} s, ${f.ok} ok, ${f.failed} failed, max |Δ| ${diff} on ${compared.length}`);
    if (over.length > 0)
      ctx.log(`    past 1e-6: ${over.length} of ${compared.length} (${over.slice(0, 8).join(', ')})`);
    return { maxDiff: diff, compared: compared.length, over: over.slice(0, 20), overCount: over.length };
  };
  const logBatch = (b: Awaited<ReturnType<typeof batchRun>>) =>
    ctx.log(`    ${(b.ms / 1000).toFixed(1)} s, ${b.status}, ${b.ok} ok, ${b.failed} failed`);

  const interactiveRun = () =>
    server(
      `interactive ${plan.rps}/s idle, while a batch drains, idle again`,
      async (s) => {
        const half = (plan.idleSeconds * 1000) / 2;
        const before = await openLoop(s, LIVE_KEY, nextLive, { rps: plan.rps, maxMs: half, first: 0 });
        let submitted!: () => void;
        const accepted = new Promise<void>((r) => (submitted = r));
        let done = false;
        // The batch's client runs apart (its own event loop): the interactive callers are other clients.
        const drain = runBatchApart(s, BATCH_KEY, lines, new Set(), submitted).finally(() => (done = true));
        await accepted;
        const during = await openLoop(s, LIVE_KEY, nextLive, {
          rps: plan.rps,
          maxMs: 3_600_000,
          first: 100_000 + live,
          stop: () => done,
        });
        const drained = await drain;
        const after = await openLoop(s, LIVE_KEY, nextLive, { rps: plan.rps, maxMs: half, first: 200_000 + live });
        live += 1_000;
        return { idle: [before, after], draining: [during], drainBatch: rounded(drained) };
      },
      true,
    );

  const batch = await batchRun();
  logBatch(batch);
  for (const c of plan.concurrency) {
    const f = await fanOutRun(c);
    fanOuts.push({ ...rounded(f), ...compare(batch, f) });
  }
  const best = fanOuts.reduce((a, b) => (b.ms < a.ms ? b : a));
  const loads = [await interactiveRun()];
  const rounds: ShapeResult['rounds'] = [
    {
      batchMs: round(batch.ms, 0),
      fanOutMs: best.ms,
      concurrency: best.concurrency,
      ...livePercentiles(loads[0]!),
      complete: completed(batch, lines.length),
    },
  ];
  for (let i = 1; i < plan.rounds; i++) {
    ctx.log(`  ${label}: round ${i + 1} of ${plan.rounds}`);
    const b = await batchRun();
    logBatch(b);
    const f = await fanOutRun(best.concurrency);
    const check = compare(b, f);
    // A later round's answers are held to the same bound: its worst counts in the first round's row.
    const row = fanOuts.find((x) => x.concurrency === best.concurrency)!;
    if (check.maxDiff > row.maxDiff) Object.assign(row, check);
    const load = await interactiveRun();
    loads.push(load);
    rounds.push({
      batchMs: round(b.ms, 0),
      fanOutMs: round(f.ms, 0),
      concurrency: best.concurrency,
      ...livePercentiles(load),
      complete: completed(b, lines.length),
    });
  }
  const interactive = {
    idle: latency(loads.flatMap((l) => l.idle)),
    draining: latency(loads.flatMap((l) => l.draining)),
    drainBatch: loads[0]!.drainBatch,
  };
  ctx.log(
    `    idle p50 ${interactive.idle.p50} ms p99 ${interactive.idle.p99} ms (${interactive.idle.n}); draining p50 ${interactive.draining.p50} ms p99 ${interactive.draining.p99} ms (${interactive.draining.n})`,
  );
  return { plan, model: label, states, batch: rounded(batch), fanOuts, interactive, rounds };
}

/** Whether a batch run completed with every line answered once. */
function completed(b: Pick<BatchRun, 'ok' | 'duplicates' | 'status'>, lines: number): boolean {
  return b.status === 'completed' && b.duplicates === 0 && b.ok === lines;
}

/** One round's interactive p50 / p99, idle and draining. */
function livePercentiles(load: { idle: LoadRun[]; draining: LoadRun[] }) {
  return {
    idle: percentiles(load.idle.flatMap((r) => r.latencies)),
    draining: percentiles(load.draining.flatMap((r) => r.latencies)),
  };
}
