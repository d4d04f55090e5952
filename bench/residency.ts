// Residency: what a cold model costs its first request, and what churn costs when more models are
// asked for than fit. The model pool runs in this process as `assay serve` runs it (loads one at a
// time, leases, least recently used idle model unloaded for room).
// (a) Cold load per model size and flavor: the first request on a model not loaded (its load, then
//     the evaluation) against the same request once it is warm (median of 5).
// (b) Churn: four clients round-robin over three models (the tiny synthetic folder under three
//     versioned ids, each its own engine) with room for two of them, against all three resident.
import { checkRegistry, cpuKernels, createModelPool, type ShapeName, type SynthDtype } from '../src/internal.js';
import { table, type BenchContext, type SectionResult } from './lib/context.js';

const STATE = 'Order #1042 arrived two days late and the box was damaged. The customer asks for a refund. '.repeat(4);
const QUESTIONS = {
  refund: { type: 'noul' as const, instructions: 'Does the customer ask for a refund?' },
  topic: {
    type: 'choice' as const,
    instructions: 'What is the main topic?',
    criteria: { delivery: 'shipping, delays, damage', billing: null, product: 'the item itself' },
  },
};
const quiet = { info: () => {}, warn: () => {} };

function registryOf(dir: string, dtype: string, ids: string[]) {
  const entry = { path: dir, variant: dtype, description: 'bench', release_date: '2026-11-27' };
  return checkRegistry(
    { default: ids[0], models: Object.fromEntries(ids.map((id) => [id, entry])), aliases: {} },
    '(bench registry)',
  );
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function coldLoad(ctx: BenchContext, shape: ShapeName, dtype: SynthDtype) {
  const dir = await ctx.model(shape, dtype);
  // Two ids: the default loads first (the runtime's one-time start), then the measured one is cold.
  const pool = createModelPool(registryOf(dir, dtype, ['warmup', 'cold']), { threads: ctx.threads }, quiet);
  try {
    await pool.preload();
    const ask = async () => {
      const t = performance.now();
      const lease = await pool.acquire('cold');
      try {
        await lease.evaluator.evaluate({ state: STATE, questions: QUESTIONS });
      } finally {
        lease.release();
      }
      return performance.now() - t;
    };
    const first = await ask();
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push(await ask());
    const view = pool.view('cold')!;
    return {
      model: `${shape} ${dtype}`,
      firstMs: first,
      loadMs: view.load_ms ?? 0,
      warmMs: median(warm),
      sizeBytes: view.size_bytes,
    };
  } finally {
    await pool.close();
  }
}

async function churn(ctx: BenchContext, maxLoaded: number, seconds: number) {
  const dir = await ctx.model('tiny', 'fp32');
  const ids = ['default', 'm-1', 'm-2', 'm-3'];
  // The default is kept resident: room for two of the three others means four places in all but one.
  const pool = createModelPool(registryOf(dir, 'fp32', ids), { threads: ctx.threads }, quiet, Date.now, {
    maxLoadedModels: maxLoaded,
  });
  try {
    await pool.preload();
    // Each model asked once first (its load, its first passes), so the clock runs on the steady state.
    for (const id of ids.slice(1)) (await pool.acquire(id)).release();
    const loadsBefore = Object.values(pool.counts!()).reduce((t, c) => t + c.loads, 0);
    const until = performance.now() + seconds * 1000;
    let done = 0;
    await Promise.all(
      [0, 1, 2, 3].map(async (c) => {
        for (let i = c; performance.now() < until; i++) {
          const lease = await pool.acquire(ids[1 + (i % 3)]!, AbortSignal.timeout(120_000));
          try {
            await lease.evaluator.evaluate({ state: STATE, questions: QUESTIONS });
            done++;
          } finally {
            lease.release();
          }
        }
      }),
    );
    const counts = Object.values(pool.counts!());
    return {
      room: maxLoaded - 1,
      requestsPerSecond: done / seconds,
      loads: counts.reduce((t, c) => t + c.loads, 0) - loadsBefore,
      evictions: counts.reduce((t, c) => t + (c.unloads.evicted ?? 0), 0),
      loadSeconds: counts.reduce((t, c) => t + c.loadSeconds, 0),
    };
  } finally {
    await pool.close();
  }
}

export async function residencySection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const kernels = await cpuKernels();
  ctx.log(`  residency on ${kernels.cpu}`);
  const flavors: Array<[ShapeName, SynthDtype]> = ctx.quick
    ? [
        ['tiny', 'fp32'],
        ['tiny', 'int8'],
      ]
    : [
        ['tiny', 'fp32'],
        ['tiny', 'int8'],
        ['qwen2.5-0.5b', 'int8'],
      ];
  const cold = [];
  for (const [shape, dtype] of flavors) {
    const r = await coldLoad(ctx, shape, dtype);
    ctx.log(
      `  cold ${r.model}: first ${r.firstMs.toFixed(0)} ms (load ${r.loadMs} ms), warm ${r.warmMs.toFixed(1)} ms`,
    );
    cold.push(r);
  }
  const seconds = ctx.quick ? 20 : 60;
  const churned = [await churn(ctx, 3, seconds), await churn(ctx, 4, seconds)];
  for (const c of churned)
    ctx.log(
      `  churn, room for ${c.room} of 3: ${c.requestsPerSecond.toFixed(2)} req/s, ${c.loads} loads, ${c.evictions} evictions`,
    );
  const [tight, all] = churned as [(typeof churned)[0], (typeof churned)[0]];
  return {
    id: 'residency',
    title: 'Residency: cold loads and churn',
    config: { cpu: kernels.cpu, threads: ctx.threads, churnSeconds: seconds, clients: 4 },
    results: { cold, churn: churned },
    targets: [],
    notes: [
      `CPU: ${kernels.cpu}. A cold first request pays its model's load (one at a time, in the pool); churn with room for 2 of 3 models runs at ${(tight.requestsPerSecond / all.requestsPerSecond).toFixed(2)}× the all-resident rate.`,
    ],
    markdown: [
      table(
        ['model', 'first request (cold)', 'of which load', 'warm request (median of 5)', 'size'],
        cold.map((r) => [
          r.model,
          `${r.firstMs.toFixed(0)} ms`,
          `${r.loadMs} ms`,
          `${r.warmMs.toFixed(1)} ms`,
          `${(r.sizeBytes / 2 ** 20).toFixed(0)} MiB`,
        ]),
      ),
      table(
        ['room for', 'requests/s (4 clients, 3 models)', 'loads', 'evictions'],
        churned.map((c) => [`${c.room} of 3`, c.requestsPerSecond.toFixed(2), c.loads, c.evictions]),
      ),
    ].join('\n\n'),
    seconds: (performance.now() - started) / 1000,
  };
}
