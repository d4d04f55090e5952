// The state read once on the causal-row graphs (src/engine/model/row-reuse/), measured on Kev at a
// base's size on real trunks (tools/trunks/sized.ts: kev-qwen3-0.5b attention-only, kev-qwen35-0.8b
// hybrid), before the families run it: one state of `--state` tokens (2,000) and 1 / 5 / 16
// questions of `--question` tokens (40), as rows of synthetic token ids (the timing depends on the
// lengths only). Three ways, interleaved per cell, the order rotated every round:
// - whole: every question's whole row, one pass each (how the families run rows on CPU today), from
//   the continuation graph's empty snapshot (the same session: the export's own graph computes the
//   same ops; `--original` times it beside, one row);
// - new: the state pass (P = the state floored to 64, in pieces of 512), then one pass of all
//   the questions' rows from the snapshot (the state's last S − P tokens ride at each row's start);
// - sent: the question pass alone, from a snapshot already taken (a state sent before).
// `--rss` instead runs each way once in a process of its own and prints its peak RSS: `open` (the
// session alone), `reuse` (16 questions from a new state), `whole` (whole rows one by one: two of
// them, every pass having the same shape) and `batched` (whole rows in a batch of 16,384 tokens, the
// bench's batched side: one batch of 8, as each of the two batches of 16 questions).
//
//   npx tsx bench/engine/row-reuse.ts [--models kev-qwen3-0.5b,kev-qwen35-0.8b] [--questions 1,5,16]
//        [--state 2000] [--question 40] [--rounds 1] [--threads 2] [--original] [--rss]
import { spawnSync } from 'node:child_process';
import { loadavg, cpus } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import {
  checkContinuation,
  paddedIds,
  positionInput,
  RowReuse,
  rowReuseGraph,
  snapshotLength,
  type ReuseRow,
  type Snapshot,
} from '../../src/internal.js';
import { ensureSizedKev, SIZED_KEV } from '../../tools/trunks/sized.js';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
const MODELS = arg('--models', 'kev-qwen3-0.5b,kev-qwen35-0.8b').split(',');
const QUESTIONS = arg('--questions', '1,5,16').split(',').map(Number);
const STATE = Number(arg('--state', '2000'));
const QUESTION = Number(arg('--question', '40'));
const ROUNDS = Number(arg('--rounds', '1'));
const THREADS = Number(arg('--threads', '2'));
const RSS_WAY = arg('--rss-way', '');

const session = {
  intraOpNumThreads: THREADS,
  interOpNumThreads: 1,
  executionMode: 'sequential' as const,
  extra: { session: { force_spinning_stop: '1' } },
};

/** The rows of `n` questions on one state: state ids, then each question's ids; Kev's positions in the question. */
function rowsOf(n: number): ReuseRow[] {
  const id = (i: number) => (i * 7919 + 101) % 150_000;
  const state = Array.from({ length: STATE }, (_, i) => id(i));
  return Array.from({ length: n }, (_, q) => {
    const ids = [...state, ...Array.from({ length: QUESTION }, (_, i) => id(1_000_000 + 97 * q + i))];
    const end = ids.length - 1;
    return { ids, positions: { decide_pos: end, opt_pos: [STATE + 8, STATE + 20, end - 1] } };
  });
}

async function open(model: string): Promise<RowReuse> {
  const [dir] = await ensureSizedKev(SIZED_KEV.filter((r) => `kev-${r.trunk}-${r.size}` === model));
  const graph = await rowReuseGraph(join(dir!, 'model.onnx'));
  if ('reason' in graph) throw new Error(`${model}: ${graph.reason}`);
  const t0 = performance.now();
  const reuse = await RowReuse.open(graph, session, { padId: 0, check: false });
  const opened = performance.now() - t0;
  if (typeof reuse === 'string') throw new Error(reuse);
  if (!RSS_WAY) {
    const t1 = performance.now();
    const wrong = await checkContinuation(reuse);
    console.log(
      `${model}: session ${(opened / 1000).toFixed(1)} s, load-time probe ${((performance.now() - t1) / 1000).toFixed(1)} s (${wrong ?? 'holds'})`,
    );
  }
  return reuse;
}

const seconds = async (fn: () => Promise<unknown>) => {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
};

async function timing(model: string): Promise<void> {
  const reuse = await open(model);
  if (args.includes('--original')) {
    const [dir] = await ensureSizedKev(SIZED_KEV.filter((r) => `kev-${r.trunk}-${r.size}` === model));
    const original = await ort.InferenceSession.create(join(dir!, 'model.onnx'), session);
    const [row] = rowsOf(1);
    const input = {
      input_ids: paddedIds([row!.ids], 0, 64),
      decide_pos: positionInput([row!.positions.decide_pos!], 1),
      opt_pos: positionInput([row!.positions.opt_pos!], 2),
    };
    for (let r = 0; r < 2; r++) {
      const a = await seconds(() => original.run(input));
      const b = await seconds(() => reuse.runRows([row!]));
      console.log(
        `${model}: one whole row, the export ${a.toFixed(1)} s, the continuation graph from nothing ${b.toFixed(1)} s (${(b / a).toFixed(2)}×)`,
      );
    }
    await original.release();
  }
  // a state already sent: its snapshot taken before the timing (every cell has the same state)
  const first = rowsOf(1);
  let sent: Snapshot = await reuse.snapshot(first[0]!.ids.slice(0, snapshotLength(first)));
  for (let round = 0; round < ROUNDS; round++)
    for (const n of QUESTIONS) {
      const rows = rowsOf(n);
      const P = snapshotLength(rows);
      const ways: Record<string, () => Promise<unknown>> = {
        whole: async () => {
          for (const row of rows) await reuse.runRows([row]);
        },
        new: async () => {
          sent = await reuse.snapshot(rows[0]!.ids.slice(0, P));
          await reuse.runRows(rows, sent);
        },
        sent: () => reuse.runRows(rows, sent),
      };
      const order = ['whole', 'new', 'sent'];
      for (let k = 0; k < (round + n) % 3; k++) order.push(order.shift()!);
      const took: Record<string, number> = {};
      for (const way of order) took[way] = await seconds(ways[way]!);
      console.log(
        `${model} ${n} question(s), state ${STATE} (P ${P}), round ${round + 1}: whole ${took.whole!.toFixed(1)} s, ` +
          `new ${took.new!.toFixed(1)} s (${(took.new! / took.whole!).toFixed(3)}× whole), sent ${took.sent!.toFixed(1)} s ` +
          `(${(took.sent! / took.new!).toFixed(3)}× new); snapshot ${(sent.bytes / 2 ** 20).toFixed(1)} MiB; load ${loadavg()[0]!.toFixed(1)}`,
      );
    }
  await reuse.close();
}

async function rss(model: string, way: string): Promise<void> {
  const reuse = await open(model);
  const rows = rowsOf(16);
  if (way === 'reuse') await reuse.runRows(rows, await reuse.snapshot(rows[0]!.ids.slice(0, snapshotLength(rows))));
  // whole rows: every pass has the same shape, so two passes (one batch) show the peak of sixteen
  else if (way === 'whole') for (const row of rows.slice(0, 2)) await reuse.runRows([row]);
  else if (way === 'batched') await reuse.runRows(rows.slice(0, 8));
  await reuse.close();
  console.log(JSON.stringify({ model, way, maxRssGiB: process.resourceUsage().maxRSS / 2 ** 20 }));
}

console.log(
  `${cpus()[0]?.model} × ${cpus().length}, ${THREADS} threads, onnxruntime ${ort.env.versions.common}, load ${loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
if (RSS_WAY) await rss(MODELS[0]!, RSS_WAY);
else if (args.includes('--rss'))
  for (const model of MODELS)
    for (const way of ['open', 'reuse', 'whole', 'batched']) {
      const out = spawnSync(
        process.execPath,
        [...process.execArgv, process.argv[1]!, '--models', model, '--rss-way', way, '--threads', String(THREADS)],
        {
          encoding: 'utf8',
        },
      );
      console.log(
        out.stdout.trim().split('\n').pop(),
        out.status === 0 ? '' : `(exit ${out.status ?? out.signal}: ${out.stderr.slice(-300)})`,
      );
    }
else for (const model of MODELS) await timing(model);
