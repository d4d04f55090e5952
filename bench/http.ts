// 6. HTTP: the real server (`assay serve`, i.e. `npm start`) as a child process on loopback.
//
// Load: autocannon (programmatic) at concurrency 1, 8 and 32 with workload (a) bodies (a fresh
// 300-token state per request, ~9 questions), against the qwen2.5-0.5b int8 model through a
// temporary registry file (--registry). requests/s and input tokens/s are completed requests (and
// their usage.input_tokens) over the wall time of each level; peak RSS is the server's VmHWM.
// Server overhead: the tiny model (engine time of a few ms, so a ms-sized overhead is visible),
// workload (a) requests sent one at a time over HTTP (fetch, keep-alive). The server reports
// `server-timing: engine;dur=…, total;dur=…`; its overhead is total − engine per request (body
// read, JSON, validation, auth, rate limiting, serialization, logging: everything outside the
// engine). The client-side view (HTTP latency − engine) is reported beside it. An earlier method
// (HTTP latency − the same request in a second, in-process evaluator) measured two onnxruntime
// processes taking turns on 2 cores more than the server itself.
import autocannon from 'autocannon';
import { TextCodec } from '../src/internal.js';
import { table, type BenchContext, type SectionResult, type Target } from './lib/context.js';
import { round, roundSummary, summarize, timeMs } from './lib/stats.js';
import { clientRequestsA } from './lib/text.js';
import { startBenchServer, type BenchServer } from './lib/server.js';

const KEY = 'bench-key-0123456789';

type Server = BenchServer;

const startServer = (ctx: BenchContext, dir: string, variant: 'fp32' | 'int8'): Promise<Server> =>
  startBenchServer({
    modelDir: dir,
    variant,
    threads: ctx.threads,
    key: KEY,
    args: ['--deadline-ms', '900000', '--rpm', '1000000', '--server-timing-engine'],
  });

function post(server: Server, body: string): Promise<Response> {
  return fetch(`${server.url}/v1/systemone`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body,
  });
}

async function overhead(ctx: BenchContext, requestsCount: number, small: boolean) {
  const dir = await ctx.model('tiny', 'fp32');
  const codec = await TextCodec.load(dir);
  const requests = small
    ? Array.from({ length: requestsCount + 2 }, (_, i) => ({
        state: `Order ${i} arrived late.`,
        questions: { q: { type: 'noul' as const, instructions: 'Was it late?' } },
      }))
    : clientRequestsA(codec, requestsCount + 2, 700);
  const server = await startServer(ctx, dir, 'fp32');
  const http: number[] = [];
  const engine: number[] = [];
  const total: number[] = [];
  try {
    for (let i = 0; i < requests.length; i++) {
      const body = JSON.stringify({ model: server.model, ...requests[i] });
      let status = 0;
      let timing = '';
      const h = await timeMs(async () => {
        const res = await post(server, body);
        status = res.status;
        timing = res.headers.get('server-timing') ?? '';
        await res.arrayBuffer();
      });
      if (status !== 200) throw new Error(`overhead: HTTP ${status}`);
      const e = Number(/engine;dur=([\d.]+)/.exec(timing)?.[1]);
      const t = Number(/total;dur=([\d.]+)/.exec(timing)?.[1]);
      if (!Number.isFinite(e) || !Number.isFinite(t))
        throw new Error(`overhead: no server-timing engine/total durations (${timing})`);
      if (i >= 2) {
        http.push(h);
        engine.push(e);
        total.push(t);
      }
    }
  } finally {
    await server.stop();
  }
  return {
    model: 'tiny-fp32',
    request: small ? 'one noul question on a one-line state' : 'workload (a)',
    pairs: http.length,
    http: roundSummary(summarize(http), 2),
    engine: roundSummary(summarize(engine), 2),
    /** The server's own time outside the engine: server-timing total − engine. */
    overhead: roundSummary(summarize(total.map((t, i) => t - engine[i]!)), 2),
    /** What the client sees outside the engine (adds the socket and the client's own HTTP stack). */
    clientOverhead: roundSummary(summarize(http.map((h, i) => h - engine[i]!)), 2),
  };
}

async function load(
  ctx: BenchContext,
  shape: 'tiny' | 'qwen2.5-0.5b',
  levels: Array<{ connections: number; amount: number }>,
) {
  const dtype = shape === 'tiny' ? 'fp32' : 'int8';
  const dir = await ctx.model(shape, dtype);
  const codec = await TextCodec.load(dir);
  const total = levels.reduce((n, l) => n + l.amount, 0) + 2;
  const bodies = clientRequestsA(codec, total, 900).map((r) => JSON.stringify({ model: 'bench-model', ...r }));
  const server = await startServer(ctx, dir, dtype);
  const rows: Array<Record<string, unknown>> = [];
  let next = 0;
  try {
    const startMem = server.memory();
    for (let i = 0; i < 2; i++) await (await post(server, bodies[next++]!)).arrayBuffer(); // warm-up
    for (const level of levels) {
      ctx.log(`  ${shape}-${dtype}: concurrency ${level.connections}, ${level.amount} requests`);
      let inputTokens = 0;
      let ok = 0;
      const t0 = performance.now();
      const result = await autocannon({
        url: server.url,
        connections: level.connections,
        amount: level.amount,
        timeout: 900,
        requests: [
          {
            method: 'POST',
            path: '/v1/systemone',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
            setupRequest: (req) => ({ ...req, body: bodies[next++ % bodies.length] }),
            onResponse: (status, body) => {
              if (status !== 200) return;
              ok++;
              inputTokens += (JSON.parse(body) as { usage: { input_tokens: number } }).usage.input_tokens;
            },
          },
        ],
      });
      const seconds = (performance.now() - t0) / 1000;
      rows.push({
        model: `${shape}-${dtype}`,
        concurrency: level.connections,
        requests: result.latency.totalCount,
        ok,
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        requestsPerSecond: round(ok / seconds, 3),
        inputTokensPerSecond: round(inputTokens / seconds, 1),
        latencyMs: {
          p50: result.latency.p50,
          p90: result.latency.p90,
          p99: result.latency.p99,
          min: result.latency.min,
          max: result.latency.max,
        },
        seconds: round(seconds, 1),
        ...server.memory(),
      });
    }
    return { rows, idleMemory: startMem };
  } finally {
    await server.stop();
  }
}

export async function httpSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  ctx.log('  server overhead (tiny model, server-timing total − engine)');
  const over = await overhead(ctx, ctx.quick ? 10 : 40, false);
  const overSmall = await overhead(ctx, ctx.quick ? 10 : 40, true);
  const shape = ctx.quick ? 'tiny' : 'qwen2.5-0.5b';
  const levels = ctx.quick
    ? [
        { connections: 1, amount: 10 },
        { connections: 8, amount: 24 },
      ]
    : [
        { connections: 1, amount: 6 },
        { connections: 8, amount: 16 },
        { connections: 32, amount: 32 },
      ];
  const loadRes = await load(ctx, shape, levels);
  const targets: Target[] = [
    {
      name: 'server overhead per request at p50 (server time outside the engine, workload (a), tiny model)',
      goal: '< 2 ms',
      value: over.overhead.median,
      unit: 'ms',
      met: over.overhead.median < 2,
      detail: `engine ${over.engine.median} ms of ${over.http.median} ms HTTP latency, ${over.pairs} requests; seen by the client (HTTP − engine, socket and client stack included): ${over.clientOverhead.median} ms; one-question request: ${overSmall.overhead.median} ms (client: ${overSmall.clientOverhead.median} ms)`,
    },
  ];
  return {
    id: 'http',
    title: '6. HTTP (autocannon against `assay serve`)',
    config: { server: 'node bin/assay.js serve (what npm start runs)', threads: ctx.threads, levels, quick: ctx.quick },
    results: { overhead: over, overheadSmallRequest: overSmall, load: loadRes },
    targets,
    notes: [
      "Overhead: workload (a) requests over HTTP (fetch, keep-alive) one at a time on the tiny model; the server reports `server-timing: engine;dur, total;dur` and its overhead is total − engine (everything the server does outside the engine); the client-side view, HTTP latency − engine, adds the socket and the client's HTTP stack.",
      "Load: every request carries a fresh 300-token state (no prefix-cache hits); requests/s and input tokens/s are 200 responses over each level's wall time; RSS is the server process's (VmHWM is the peak since start).",
      `Server RSS after loading the model, before load: ${loadRes.idleMemory.vmRssMiB} MiB.`,
      ...(ctx.quick ? ['--quick: the tiny model for the load levels too (concurrency 1 and 8).'] : []),
    ],
    markdown: [
      table(
        [
          'server overhead',
          'requests',
          'HTTP latency',
          'engine (server-timing)',
          'server overhead (median, p10–p90)',
          'client-side HTTP − engine',
        ],
        [over, overSmall].map((o) => [
          `tiny-fp32, ${o.request}`,
          o.pairs,
          `${o.http.median} ms`,
          `${o.engine.median} ms`,
          `${o.overhead.median} ms (${o.overhead.p10}–${o.overhead.p90})`,
          `${o.clientOverhead.median} ms`,
        ]),
      ),
      '',
      table(
        [
          'model',
          'concurrency',
          'requests',
          'non-2xx / errors',
          'requests/s',
          'input tokens/s',
          'p50 ms',
          'p99 ms',
          'peak RSS MiB',
        ],
        loadRes.rows.map((r) => {
          const l = r.latencyMs as { p50: number; p99: number };
          return [
            r.model as string,
            r.concurrency as number,
            r.requests as number,
            `${r.non2xx} / ${r.errors}`,
            r.requestsPerSecond as number,
            r.inputTokensPerSecond as number,
            l.p50,
            l.p99,
            r.vmHwmMiB as number,
          ];
        }),
      ),
    ].join('\n'),
    seconds: (performance.now() - started) / 1000,
  };
}
