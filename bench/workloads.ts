// 5. Workloads shaped like real clients', through the engine in-process.
//   (a) ~9 questions per request (8–10) on a 300-token English state: 60% noul, 28% choice with 4
//       options, 12% score with ≤ 5 levels, some questions in Chinese;
//   (b) one question per request on a 150-token and on a 1,250-token state.
// Every request has a fresh state (no prefix-cache hits), run one after another; the engine has the
// server's defaults (prefix cache on, 256 MiB).
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { loadEvaluator, TextCodec, type EvaluateRequest } from '../src/internal.js';
import { table, ms, type BenchContext, type SectionResult } from './lib/context.js';
import { round, roundSummary, summarize, timeMs } from './lib/stats.js';
import { clientRequestsA, clientRequestsB } from './lib/text.js';

export async function workloadsSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('qwen2.5-0.5b', 'int8');
  const codec = await TextCodec.load(dir);
  const n = ctx.quick ? { a: 4, b150: 4, b1250: 2 } : { a: 16, b150: 16, b1250: 8 };
  const sets: Array<[string, EvaluateRequest[]]> = [
    ['(a) ~9 questions, 300-token state', clientRequestsA(codec, n.a + 1)],
    ['(b) 1 question, 150-token state', clientRequestsB(codec, 150, n.b150 + 1)],
    ['(b) 1 question, 1,250-token state', clientRequestsB(codec, 1250, n.b1250 + 1)],
  ];
  const ev = await loadEvaluator({ modelDir: dir, variant: 'int8', threads: ctx.threads });
  const rows: Array<Record<string, unknown>> = [];
  try {
    for (const [name, requests] of sets) {
      ctx.log(`  ${name}: ${requests.length - 1} requests`);
      await ev.evaluate(requests[0]!); // warm-up
      const latencies: number[] = [];
      let inputTokens = 0;
      let questions = 0;
      // The caller's event loop while the engine works: onnxruntime's passes are synchronous, so
      // they must run in the engine thread, not here.
      const loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      const t0 = performance.now();
      for (const r of requests.slice(1)) {
        latencies.push(await timeMs(async () => (inputTokens += (await ev.evaluate(r)).usage.input_tokens)));
        questions += Object.keys(r.questions).length;
      }
      const seconds = (performance.now() - t0) / 1000;
      loop.disable();
      rows.push({
        workload: name,
        requests: latencies.length,
        questionsPerRequest: round(questions / latencies.length, 2),
        inputTokensPerRequest: round(inputTokens / latencies.length, 1),
        requestsPerSecond: round(latencies.length / seconds, 3),
        inputTokensPerSecond: round(inputTokens / seconds, 1),
        latency: roundSummary(summarize(latencies), 1),
        callerLoopDelayMaxMs: round(loop.max / 1e6, 1),
      });
    }
  } finally {
    await ev.close();
  }
  return {
    id: 'workloads',
    title: '5. Client-shaped workloads through the engine',
    config: { model: 'qwen2.5-0.5b-int8', threads: ctx.threads, requests: n, quick: ctx.quick },
    results: rows,
    targets: [],
    notes: [
      'Sequential requests, each with a fresh state (no prefix-cache hits); latency median (min–max) and p10/p90 in the JSON.',
      "Caller's event loop: the largest delay of the calling thread's event loop while the requests ran (the engine runs in its own thread; on the calling thread each pass would block it for the pass's whole duration).",
      ...(ctx.quick ? ['--quick: fewer requests.'] : []),
    ],
    markdown: table(
      [
        'workload',
        'requests',
        'questions / request',
        'input tokens / request',
        'requests/s',
        'input tokens/s',
        'latency',
        "caller's event loop, max delay",
      ],
      rows.map((r) => [
        r.workload as string,
        r.requests as number,
        r.questionsPerRequest as number,
        r.inputTokensPerRequest as number,
        r.requestsPerSecond as number,
        r.inputTokensPerSecond as number,
        ms(r.latency as never),
        `${r.callerLoopDelayMaxMs as number} ms`,
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
