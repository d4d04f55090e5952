// Big single bodies at once: does a burst of large request bodies stall the event loop or hold the
// server's memory? The real server (`assay serve`, tiny model) runs as a child process on loopback;
// N clients (16, then 48), each on its own socket, send a ~6 MB valid body at the same moment (a
// ~6 MB state text and three questions), while a probe asks GET /healthz every ~20 ms on a fresh
// connection (what a readiness probe sees) and a sampler reads the server's VmRSS from
// /proc/<pid>/status every 20 ms (the probe in a thread of its own, as a readiness probe is a client
// of its own). Per burst: /healthz p50 / p99 / max, the server's event-loop
// delay (its /metrics, reset by the scrape that starts the burst), RSS before, at its peak and 5 s
// after the last answer, the requests' statuses and the burst's wall time.
// `--repo DIR` runs another checkout's server (an older commit) for a before/after comparison:
//   npx tsx bench/big-bodies.ts [--quick] [--repo DIR]   or   npm run bench -- --only big-bodies
import { request } from 'node:http';
import { Worker } from 'node:worker_threads';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchServer } from './lib/server.js';
import { createContext, table, type BenchContext, type SectionResult } from './lib/context.js';
import { quantile, round, summarize } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'bench-big-bodies-key';
const MODEL = 'big-1.0.0';
/** How long after a burst's last answer its "RSS after" is read. */
const SETTLE_MS = 5_000;

/** A valid request of about `bytes` bytes: a long plain-text state and three questions. */
export function bigBody(bytes: number, model = MODEL): Buffer {
  const questions = {
    late: { type: 'noul', instructions: 'Was the parcel late?' },
    topic: { type: 'choice', instructions: 'What is it about?', criteria: { delivery: null, billing: null } },
    severity: { type: 'score', instructions: 'How serious is it?', criteria: ['none', 'minor', 'serious'] },
  };
  const sentence = 'The parcel with order number A-1043 arrived two days late, and the box was crushed. ';
  const frame = JSON.stringify({ model, state: '', questions }).length;
  const state = sentence.repeat(Math.ceil((bytes - frame) / sentence.length)).slice(0, Math.max(0, bytes - frame));
  return Buffer.from(JSON.stringify({ model, state, questions }));
}

/** One POST on its own socket: its status (0: no answer) once the whole response is read. */
function post(url: URL, body: Buffer): Promise<number> {
  return new Promise((done) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      },
    );
    req.on('error', () => done(0));
    req.end(body);
  });
}

/** GET /healthz on a fresh connection: [ms, status]. */
function healthz(url: string): Promise<[number, number]> {
  const t0 = performance.now();
  return new Promise((done) => {
    const req = request(`${url}/healthz`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => done([performance.now() - t0, res.statusCode ?? 0]));
    });
    req.on('error', () => done([performance.now() - t0, 0]));
    req.end();
  });
}

/** The /healthz probe's loop (healthz() every ~20 ms) in a worker thread, until `stop` returns its probes. */
function probeApart(url: string): { stop(): Promise<Array<[number, number]>> } {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const { request } = require('node:http');
    const healthz = ${healthz.toString()};
    let running = true;
    const probes = [];
    parentPort.on('message', () => (running = false));
    (async () => {
      while (running) {
        probes.push(await healthz(workerData.url));
        await new Promise((r) => setTimeout(r, 20));
      }
      parentPort.postMessage(probes);
    })();`;
  const worker = new Worker(source, { eval: true, workerData: { url } });
  const done = new Promise<Array<[number, number]>>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    stop: async () => {
      worker.postMessage('stop');
      const probes = await done;
      await worker.terminate();
      return probes;
    },
  };
}

async function eventLoop(url: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) =>
    Number(new RegExp(`^assay_nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: round(read('p99'), 1), max: round(read('max'), 1) };
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024, 1);
}

export interface BurstResult {
  clients: number;
  bodyBytes: number;
  wallMs: number;
  statuses: Record<string, number>;
  healthz: { n: number; p50: number; p99: number; max: number; failed: number };
  eventLoopMs: { p99: number; max: number };
  rssMiB: { before: number; peak: number; after: number };
}

async function burst(url: string, pid: number, clients: number, body: Buffer): Promise<BurstResult> {
  await eventLoop(url); // starts the measured window
  const before = rssMiB(pid);
  let peak = before;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, rssMiB(pid));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  // The probe runs in a thread of its own, as a readiness probe is a client of its own: on this
  // thread's event loop, busy writing the bodies, its timings would be the senders' as well.
  const probe = probeApart(url);
  const t0 = performance.now();
  const target = new URL(`${url}/v1/systemone`);
  const codes = await Promise.all(Array.from({ length: clients }, () => post(target, body)));
  const wallMs = performance.now() - t0;
  running = false;
  const [, probes] = await Promise.all([sampler, probe.stop()]);
  const eventLoopMs = await eventLoop(url);
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  const statuses: Record<string, number> = {};
  for (const c of codes) statuses[c] = (statuses[c] ?? 0) + 1;
  const ms = probes.map(([m]) => m).sort((a, b) => a - b);
  const s = summarize(ms);
  return {
    clients,
    bodyBytes: body.length,
    wallMs: round(wallMs, 0),
    statuses,
    healthz: {
      n: s.n,
      p50: round(s.median, 1),
      p99: round(quantile(ms, 0.99), 1),
      max: round(s.max, 1),
      failed: probes.filter(([, status]) => status !== 200).length,
    },
    eventLoopMs,
    rssMiB: { before, peak, after: rssMiB(pid) },
  };
}

export interface BigBodiesResult {
  bursts: BurstResult[];
  vmHwmMiB: number;
}

/** Against `repo`'s server started here on the tiny model. */
export async function measureBigBodies(ctx: BenchContext, repo = ROOT): Promise<BigBodiesResult> {
  const server = await startBenchServer({
    repo,
    modelDir: await ctx.model('tiny', 'fp32'),
    threads: ctx.threads,
    key: KEY,
    model: MODEL,
    args: ['--rpm', '1000000', '--tps', '1000000000', '--max-queue', '1000'],
  });
  try {
    const body = bigBody(6 * 1024 * 1024);
    const pid = server.proc.pid!;
    const bursts: BurstResult[] = [];
    for (const clients of ctx.quick ? [16] : [16, 48]) {
      ctx.log(`  ${clients} clients × ${(body.length / 2 ** 20).toFixed(1)} MiB`);
      const b = await burst(server.url, pid, clients, body);
      ctx.log(
        `    /healthz max ${b.healthz.max} ms, p99 ${b.healthz.p99} ms; RSS ${b.rssMiB.before} → peak ${b.rssMiB.peak} → ${b.rssMiB.after} MiB; ${JSON.stringify(b.statuses)}`,
      );
      bursts.push(b);
    }
    return { bursts, vmHwmMiB: server.memory().vmHwmMiB };
  } finally {
    await server.stop();
  }
}

export async function bigBodiesSection(ctx: BenchContext): Promise<SectionResult> {
  const t0 = performance.now();
  const r = await measureBigBodies(ctx);
  const markdown = table(
    [
      'clients × body',
      '/healthz p50 / p99 / max ms',
      'event loop p99 / max ms',
      'RSS before / peak / after MiB',
      'wall s',
      'statuses',
    ],
    r.bursts.map((b) => [
      `${b.clients} × ${(b.bodyBytes / 2 ** 20).toFixed(0)} MiB`,
      `${b.healthz.p50} / ${b.healthz.p99} / ${b.healthz.max}${b.healthz.failed ? ` (${b.healthz.failed} failed)` : ''}`,
      `${b.eventLoopMs.p99} / ${b.eventLoopMs.max}`,
      `${b.rssMiB.before} / ${b.rssMiB.peak} / ${b.rssMiB.after}`,
      (b.wallMs / 1000).toFixed(1),
      JSON.stringify(b.statuses),
    ]),
  );
  const last = r.bursts[r.bursts.length - 1]!;
  return {
    id: 'big-bodies',
    title: 'Big single bodies at once (tiny model, `assay serve` on loopback)',
    config: { threads: ctx.threads, clients: r.bursts.map((b) => b.clients), bodyBytes: last.bodyBytes },
    results: r,
    targets: [
      ...r.bursts.map((b) => ({
        name: `/healthz during ${b.clients} big bodies`,
        goal: 'max < 250 ms',
        value: b.healthz.max,
        unit: 'ms',
        met: b.healthz.max < 250 && b.healthz.failed === 0,
      })),
      {
        name: `RSS ${SETTLE_MS / 1000} s after ${last.clients} big bodies`,
        goal: 'within 256 MiB of before',
        value: round(last.rssMiB.after - last.rssMiB.before, 1),
        unit: 'MiB',
        met: last.rssMiB.after - last.rssMiB.before < 256,
      },
    ],
    notes: [
      `Every client opens its own socket and sends its whole body at once; /healthz is probed on a fresh connection every ~20 ms; RSS is the server process's VmRSS sampled every 20 ms (its VmHWM over the run: ${r.vmHwmMiB} MiB). The clients run on the same cores as the server; the probe runs in a thread of its own (a readiness probe is a client of its own), the senders on the bench's main thread.`,
    ],
    markdown,
    seconds: (performance.now() - t0) / 1000,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const repo = args.includes('--repo') ? resolve(args[args.indexOf('--repo') + 1] ?? '.') : ROOT;
  const ctx = createContext({ quick: args.includes('--quick') });
  const r = await measureBigBodies(ctx, repo);
  process.stdout.write(`${JSON.stringify({ repo, ...r }, null, 2)}\n`);
}
