// 7. Serving under a mixed heavy load: does anything stall the event loop, and how long does a
// small request wait? The real server (`assay serve`) runs as a child process on loopback, on the
// tiny model, while loops send heavy requests (a 255-option choice, 400 questions, a ~32k-token
// state, an array nested 3,000 deep, a state of 300,000 spaces, a 6 MB body of 2,000,000 empty
// arrays, a body of 200,000 small objects) and two probes measure:
//   - /healthz latency every 50 ms (what a readiness probe sees);
//   - one-question requests on a ~150-token state, one at a time (what a light caller sees);
//   - the server's own event-loop delay (p99, max) from its /metrics (prom-client's
//     monitorEventLoopDelay, reset by the scrape that starts the window).
// `--repo DIR` runs another checkout's server (an older commit) for a before/after comparison:
// `--url URL` measures a server already running (key in ASSAY_API_KEY; it must serve `svc-latest`):
//   npx tsx bench/serving.ts [--quick] [--repo DIR | --url URL]   or   npm run bench -- --only serving
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchServer } from './lib/server.js';
import { createContext, table, type BenchContext, type SectionResult } from './lib/context.js';
import { quantile, summarize } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'bench-serving-key';

interface Probe {
  latencies: number[];
  statuses: Record<string, number>;
}

const startServer = (repo: string, modelDir: string, threads: number) =>
  startBenchServer({
    repo,
    modelDir,
    threads,
    key: KEY,
    model: 'svc-1.13.0',
    aliases: { 'svc-latest': 'svc-1.13.0' },
    args: ['--rpm', '1000000', '--tps', '100000000', '--max-queue', '1000'],
  });

async function timed(url: string, init?: RequestInit): Promise<[number, number]> {
  const t0 = performance.now();
  const res = await fetch(url, init).catch(() => undefined);
  if (res) await res.arrayBuffer().catch(() => undefined);
  return [performance.now() - t0, res?.status ?? 0];
}

function record(p: Probe, [ms, status]: [number, number]): void {
  p.latencies.push(ms);
  p.statuses[status] = (p.statuses[status] ?? 0) + 1;
}

async function eventLoop(url: string): Promise<{ p99: number; max: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string) =>
    Number(new RegExp(`^assay_nodejs_eventloop_lag_${name}_seconds (\\S+)`, 'm').exec(text)?.[1] ?? NaN) * 1000;
  return { p99: read('p99'), max: read('max') };
}

function heavyBodies(): Array<[string, string]> {
  const options = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`option number ${i}`, null]));
  const many = Object.fromEntries(
    Array.from({ length: 400 }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Is item ${i} mentioned?` }]),
  );
  const prose = Array.from(
    { length: 2_000 },
    (_, i) => `Entry ${i}: the shipment was inspected and logged by the night team.`,
  ).join('\n');
  const one = { q: { type: 'noul', instructions: 'Is it logged?' } };
  return [
    [
      '255 options',
      JSON.stringify({
        state: 'A short note.',
        model: 'svc-latest',
        questions: { c: { type: 'choice', instructions: 'Pick', criteria: options } },
      }),
    ],
    ['400 questions', JSON.stringify({ state: 'A short note.', model: 'svc-latest', questions: many })],
    [
      '~32k-token state (over the question budget)',
      JSON.stringify({ state: prose, model: 'svc-latest', questions: one }),
    ],
    [
      'nested 3,000 deep',
      `{"state": ${'['.repeat(3000)}"x"${']'.repeat(3000)}, "model": "svc-latest", "questions": {"q": {"type": "noul"}}}`,
    ],
    [
      '300,000 spaces',
      JSON.stringify({ state: `Report:${' '.repeat(300_000)}end`, model: 'svc-latest', questions: one }),
    ],
    // Large flat bodies: parsed in the body worker, never on the event loop.
    [
      '6 MB: 2,000,000 empty arrays',
      `{"state": [${'[],'.repeat(1_999_999)}[]], "model": "svc-latest", "questions": {"q": {"type": "noul"}}}`,
    ],
    [
      '200,000 small objects',
      JSON.stringify({
        state: Array.from({ length: 200_000 }, (_, i) => ({ id: i, ok: true })),
        model: 'svc-latest',
        questions: one,
      }),
    ],
  ];
}

type Latency = ReturnType<typeof summarize> & { p99: number; statuses: Record<string, number> };

function latency(p: Probe): Latency {
  return {
    ...summarize(p.latencies),
    p99: quantile(
      [...p.latencies].sort((a, b) => a - b),
      0.99,
    ),
    statuses: p.statuses,
  };
}

export interface ServingResult {
  seconds: number;
  eventLoopMs: { p99: number; max: number };
  healthz: Latency;
  small: Latency;
  heavy: Record<string, Record<string, number>>;
}

/** Against `repo`'s server started here on the tiny model, or against a running server at `url` (its key in ASSAY_API_KEY). */
export async function measureServing(ctx: BenchContext, repo = ROOT, url?: string): Promise<ServingResult> {
  const server = url
    ? { url: url.replace(/\/$/, ''), stop: async () => {} }
    : await startServer(repo, await ctx.model('tiny', 'fp32'), ctx.threads);
  const seconds = ctx.quick ? 30 : 90;
  const headers = {
    authorization: `Bearer ${url ? (process.env.ASSAY_API_KEY ?? '') : KEY}`,
    'content-type': 'application/json',
  };
  try {
    await eventLoop(server.url); // starts the measured window
    const end = performance.now() + seconds * 1000;
    const heavy: Record<string, Record<string, number>> = {};
    const loops = heavyBodies().map(async ([name, body]) => {
      heavy[name] = {};
      while (performance.now() < end) {
        const [, status] = await timed(`${server.url}/v1/systemone`, { method: 'POST', headers, body });
        heavy[name][status] = (heavy[name][status] ?? 0) + 1;
      }
    });
    const health: Probe = { latencies: [], statuses: {} };
    const healthLoop = (async () => {
      while (performance.now() < end) {
        record(health, await timed(`${server.url}/healthz`));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const state =
      'The parcel with order number A-1043 arrived two days late, and the box was crushed on one side. '.repeat(6);
    const smallBody = JSON.stringify({
      state,
      model: 'svc-latest',
      questions: { late: { type: 'noul', instructions: 'Was the parcel late?' } },
    });
    const small: Probe = { latencies: [], statuses: {} };
    const smallLoop = (async () => {
      while (performance.now() < end)
        record(small, await timed(`${server.url}/v1/systemone`, { method: 'POST', headers, body: smallBody }));
    })();
    await Promise.all([...loops, healthLoop, smallLoop]);
    const eventLoopMs = await eventLoop(server.url);
    return {
      seconds,
      eventLoopMs,
      healthz: latency(health),
      small: latency(small),
      heavy,
    };
  } finally {
    await server.stop();
  }
}

function row(name: string, s: Latency): Array<string | number> {
  return [name, s.n, s.median.toFixed(1), s.p99.toFixed(1), s.max.toFixed(1), JSON.stringify(s.statuses)];
}

export async function servingSection(ctx: BenchContext): Promise<SectionResult> {
  const t0 = performance.now();
  const r = await measureServing(ctx);
  const markdown = [
    table(
      ['server event loop (its /metrics)', 'p99', 'max'],
      [['delay over the run', `${r.eventLoopMs.p99.toFixed(1)} ms`, `${r.eventLoopMs.max.toFixed(1)} ms`]],
    ),
    '',
    table(
      ['probe', 'requests', 'p50 ms', 'p99 ms', 'max ms', 'statuses'],
      [row('GET /healthz', r.healthz), row('one-question request', r.small)],
    ),
    '',
    table(
      ['heavy loop', 'statuses'],
      Object.entries(r.heavy).map(([k, v]) => [k, JSON.stringify(v)]),
    ),
  ].join('\n');
  return {
    id: 'serving',
    title: '7. Serving under a mixed heavy load (tiny model, `assay serve` on loopback)',
    config: { seconds: r.seconds, threads: ctx.threads, heavy: Object.keys(r.heavy) },
    results: r,
    targets: [
      { name: '/healthz under load', goal: 'max < 250 ms', value: r.healthz.max, unit: 'ms', met: r.healthz.max < 250 },
      {
        name: 'one-question request under load',
        goal: 'p99 < 1,500 ms',
        value: r.small.p99,
        unit: 'ms',
        met: r.small.p99 < 1500,
      },
    ],
    notes: [
      "Heavy loops run back to back for the whole window; the probes run beside them. Event-loop delay is the server process's own (prom-client).",
    ],
    markdown,
    seconds: (performance.now() - t0) / 1000,
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const repo = args.includes('--repo') ? resolve(args[args.indexOf('--repo') + 1] ?? '.') : ROOT;
  const ctx = createContext({ quick: args.includes('--quick') });
  const url = args.includes('--url') ? args[args.indexOf('--url') + 1] : undefined;
  const r = await measureServing(ctx, repo, url);
  process.stdout.write(`${JSON.stringify({ ...(url ? { url } : { repo }), ...r }, null, 2)}\n`);
}
