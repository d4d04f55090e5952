// A short diagnostic of interactive latency while a batch drains (not a bench section): an
// in-process server on the tiny model, a batch of `LINES` lines (50 questions a state, one a
// line) draining, and a 3-question interactive request every 300 ms. Prints the interactive
// engine time (Server-Timing engine;dur=) and the client's latency, idle and during the drain.
//   npx tsx bench/batches/lat-probe.ts [lines=2000] [idle requests=12]
// PROBE_BPT sets the engine's batchPackTokens, PROBE_THREADS its onnxruntime threads (0: one per core).
// PROBE_FOLLOW=1 reads the results pages while the batch runs, as a client following Link does.
import { ensureSynthModel, TextCodec } from '../../src/internal.js';
import { startBatchServer, submit, getBatch } from '../../test/batches/helpers.js';
import { KEY } from '../../test/api/helpers.js';
import { followResults } from './clients.js';
import { corpusLines, interactiveRequest, jsonl } from './corpus.js';

const LINES = Number(process.argv[2] ?? 2000);
const IDLE = Number(process.argv[3] ?? 12);
const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
const codec = await TextCodec.load(dir);
const threads = Number(process.env.PROBE_THREADS ?? 0);
const s = await startBatchServer(
  {},
  {
    serverTimingEngine: true,
    engine: { threads, ...(process.env.PROBE_BPT ? { batchPackTokens: Number(process.env.PROBE_BPT) } : {}) },
  },
);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function one(i: number): Promise<{ engine: number; total: number }> {
  const t = performance.now();
  const res = await fetch(`${s.base}/v1/systemone`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify(interactiveRequest(codec, 'svc-latest', i)),
  });
  await res.text();
  const total = performance.now() - t;
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  const engine = Number(/engine;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '')?.[1] ?? NaN);
  return { engine, total };
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor(p * s.length))]! * 10) / 10;
}
const show = (name: string, r: Array<{ engine: number; total: number }>) =>
  console.log(
    `${name}: n=${r.length} engine p50 ${pct(
      r.map((x) => x.engine),
      0.5,
    )} p99 ${pct(
      r.map((x) => x.engine),
      0.99,
    )} | total p50 ${pct(
      r.map((x) => x.total),
      0.5,
    )} p99 ${pct(
      r.map((x) => x.total),
      0.99,
    )}`,
  );

// Warm up, then idle.
for (let i = 0; i < 3; i++) await one(1000 + i);
const idle: Array<{ engine: number; total: number }> = [];
for (let i = 0; i < IDLE; i++) {
  idle.push(await one(i));
  await sleep(300);
}
const body = jsonl(corpusLines(codec, 'svc-latest', LINES, 50));
const t0 = performance.now();
const created = (await (await submit(s.base, body)).json()) as { id: string };
const draining: Array<{ engine: number; total: number }> = [];
let done = false;
const poll = (async () => {
  while (!done) {
    const b = await getBatch(s.base, created.id);
    if (['completed', 'failed', 'cancelled', 'expired'].includes(b.status)) done = true;
    else await sleep(250);
  }
})();
// PROBE_FOLLOW=1: read results pages while it runs, as the bench's client does (the next page at once while lines come).
const follow = process.env.PROBE_FOLLOW ? followResults(s.base, KEY, created.id, () => {}) : Promise.resolve(0);
for (let i = 100; !done; i++) {
  const started = performance.now();
  const r = await one(i);
  if (!done) draining.push(r);
  await sleep(Math.max(0, 300 - (performance.now() - started)));
}
await poll;
const pages = await follow;
const wall = (performance.now() - t0) / 1000;
show('idle    ', idle);
show('draining', draining);
console.log(
  `batch ${LINES} lines in ${wall.toFixed(1)} s (${(LINES / wall).toFixed(0)} lines/s), ${pages} result pages`,
);
await s.close();
process.exit(0);
