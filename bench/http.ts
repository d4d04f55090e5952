// 6. HTTP: the real server (`assay serve`, i.e. `npm start`) as a child process on loopback.
//
// Load: autocannon (programmatic) at concurrency 1, 8 and 32 with workload (a) bodies (a fresh
// 300-token state per request, ~9 questions), against the qwen2.5-0.5b int8 model through a
// temporary registry file (--registry). requests/s and input tokens/s are completed requests (and
// their usage.input_tokens) over the wall time of each level; peak RSS is the server's VmHWM.
// Server overhead: the tiny model (engine time of a few ms, so a ms-sized overhead is visible),
// the same workload (a) requests sent one at a time over HTTP (fetch, keep-alive) and evaluated
// in-process by an evaluator with the server's settings, interleaved request by request; overhead =
// HTTP latency − in-process time, per request pair (client, JSON, validation, auth, rate limiting,
// queueing, logging: everything outside the engine).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { loadEvaluator } from '../src/engine/index.js';
import { TextCodec } from '../src/engine/tokenizer.js';
import { table, type BenchContext, type SectionResult, type Target } from './lib/context.js';
import { round, roundSummary, summarize, timeMs } from './lib/stats.js';
import { clientRequestsA } from './lib/text.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const KEY = 'bench-key-0123456789';

interface Server {
  proc: ChildProcess;
  url: string;
  model: string;
  stop(): Promise<void>;
  memory(): { vmHwmMiB: number; vmRssMiB: number };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function startServer(ctx: BenchContext, dir: string, variant: 'fp32' | 'int8'): Promise<Server> {
  const tmp = mkdtempSync(join(tmpdir(), 'assay-bench-'));
  const registry = join(tmp, 'registry.json');
  const model = 'bench-model';
  writeFileSync(
    registry,
    JSON.stringify({ default: model, models: { [model]: { path: dir, variant, description: 'bench (synthetic)', release_date: '2026-01-01' } }, aliases: {} }),
  );
  const port = await freePort();
  const args = ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', String(port), '--registry', registry, '--threads', String(ctx.threads), '--log-level', 'warn', '--deadline-ms', '900000', '--rpm', '1000000'];
  const proc = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ASSAY_API_KEYS: KEY }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode}: ${stderr}`);
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`server not ready in 180 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const memory = () => {
    const status = readFileSync(`/proc/${proc.pid}/status`, 'utf8');
    const kib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    return { vmHwmMiB: round(kib('VmHWM') / 1024, 1), vmRssMiB: round(kib('VmRSS') / 1024, 1) };
  };
  const stop = async () => {
    if (proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(tmp, { recursive: true, force: true });
  };
  return { proc, url, model, stop, memory };
}

function post(server: Server, body: string): Promise<Response> {
  return fetch(`${server.url}/v1/systemone`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body,
  });
}

async function overhead(ctx: BenchContext, pairs: number, small: boolean) {
  const dir = await ctx.model('tiny', 'fp32');
  const codec = await TextCodec.load(dir);
  const requests = small
    ? Array.from({ length: pairs + 2 }, (_, i) => ({ state: `Order ${i} arrived late.`, questions: { q: { type: 'noul' as const, instructions: 'Was it late?' } } }))
    : clientRequestsA(codec, pairs + 2, 700);
  const server = await startServer(ctx, dir, 'fp32');
  const ev = await loadEvaluator({ modelDir: dir, variant: 'fp32', threads: ctx.threads });
  const http: number[] = [];
  const engine: number[] = [];
  try {
    for (let i = 0; i < requests.length; i++) {
      const body = JSON.stringify({ model: server.model, ...requests[i] });
      let status = 0;
      const h = await timeMs(async () => {
        const res = await post(server, body);
        status = res.status;
        await res.arrayBuffer();
      });
      if (status !== 200) throw new Error(`overhead: HTTP ${status}`);
      const e = await timeMs(() => ev.evaluate(requests[i]));
      if (i >= 2) {
        http.push(h);
        engine.push(e);
      }
    }
  } finally {
    await ev.close();
    await server.stop();
  }
  const diff = http.map((h, i) => h - engine[i]);
  return {
    model: 'tiny-fp32',
    request: small ? 'one noul question on a one-line state' : 'workload (a)',
    pairs: http.length,
    http: roundSummary(summarize(http), 2),
    engine: roundSummary(summarize(engine), 2),
    overhead: roundSummary(summarize(diff), 2),
  };
}

async function load(ctx: BenchContext, shape: 'tiny' | 'qwen2.5-0.5b', levels: Array<{ connections: number; amount: number }>) {
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
    for (let i = 0; i < 2; i++) await (await post(server, bodies[next++])).arrayBuffer(); // warm-up
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
        latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, min: result.latency.min, max: result.latency.max },
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
  ctx.log('  server overhead (tiny model, HTTP vs in-process, interleaved)');
  const over = await overhead(ctx, ctx.quick ? 10 : 40, false);
  const overSmall = await overhead(ctx, ctx.quick ? 10 : 40, true);
  const shape = ctx.quick ? 'tiny' : 'qwen2.5-0.5b';
  const levels = ctx.quick
    ? [{ connections: 1, amount: 10 }, { connections: 8, amount: 24 }]
    : [{ connections: 1, amount: 6 }, { connections: 8, amount: 16 }, { connections: 32, amount: 32 }];
  const loadRes = await load(ctx, shape, levels);
  const targets: Target[] = [{
    name: 'server overhead per request at p50 (HTTP − engine, workload (a), tiny model)',
    goal: '< 2 ms',
    value: over.overhead.median,
    unit: 'ms',
    met: over.overhead.median < 2,
    detail: `HTTP ${over.http.median} ms vs in-process ${over.engine.median} ms, ${over.pairs} pairs; on a one-question request: ${overSmall.overhead.median} ms`,
  }];
  return {
    id: 'http',
    title: '6. HTTP (autocannon against `assay serve`)',
    config: { server: 'node --import tsx src/cli.ts serve (what npm start runs)', threads: ctx.threads, levels, quick: ctx.quick },
    results: { overhead: over, overheadSmallRequest: overSmall, load: loadRes },
    targets,
    notes: [
      'Overhead: the same workload (a) request over HTTP (fetch, keep-alive, client time included) and in-process on an evaluator with the server\'s settings, alternating request by request on the tiny model; overhead = the per-pair difference.',
      'Load: every request carries a fresh 300-token state (no prefix-cache hits); requests/s and input tokens/s are 200 responses over each level\'s wall time; RSS is the server process\'s (VmHWM is the peak since start).',
      `Server RSS after loading the model, before load: ${loadRes.idleMemory.vmRssMiB} MiB.`,
      ...(ctx.quick ? ['--quick: the tiny model for the load levels too (concurrency 1 and 8).'] : []),
    ],
    markdown: [
      table(
        ['server overhead', 'pairs', 'HTTP latency', 'in-process engine', 'overhead (median, p10–p90)'],
        [over, overSmall].map((o) => [`tiny-fp32, ${o.request}`, o.pairs, `${o.http.median} ms`, `${o.engine.median} ms`, `${o.overhead.median} ms (${o.overhead.p10}–${o.overhead.p90})`]),
      ),
      '',
      table(
        ['model', 'concurrency', 'requests', 'non-2xx / errors', 'requests/s', 'input tokens/s', 'p50 ms', 'p99 ms', 'peak RSS MiB'],
        loadRes.rows.map((r) => {
          const l = r.latencyMs as { p50: number; p99: number };
          return [r.model as string, r.concurrency as number, r.requests as number, `${r.non2xx} / ${r.errors}`, r.requestsPerSecond as number, r.inputTokensPerSecond as number, l.p50, l.p99, r.vmHwmMiB as number];
        }),
      ),
    ].join('\n'),
    seconds: (performance.now() - started) / 1000,
  };
}
