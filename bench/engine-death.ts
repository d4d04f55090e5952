// 7b. The engine thread killed under load: does any request hang, is any answered 500,
// how long until /healthz says 503 (detection) and 200 again (restart)? The server and its model
// pool run in this process (the thread's kill switch, crashForTest, is reachable only from here)
// on the tiny model; four clients loop one-question requests on fresh states, /healthz is polled
// every 20 ms, and the thread is killed twice, once by exiting and once by an uncaught error.
import {
  buildServer,
  checkRegistry,
  createModelPool,
  keysFromList,
  type EngineThreadEvaluator,
} from '../src/internal.js';
import { table, type BenchContext, type SectionResult } from './lib/context.js';

const KEY = 'bench-engine-death-key';
const MODEL = 'svc-1.13.0';
const CLIENTS = 4;

interface Kill {
  how: 'exit' | 'throw';
  /** Requests in the engine thread (running + queued) when it was killed. */
  inThread: number;
  detectMs: number;
  restartMs: number;
  statuses: Record<string, number>;
  /** 500s answered after /healthz first said 503. */
  after500: number;
  /** Requests that did not end within 60 s. */
  hung: number;
}

export async function engineDeathSection(ctx: BenchContext): Promise<SectionResult> {
  const started = performance.now();
  const dir = await ctx.model('tiny', 'fp32');
  const registry = checkRegistry(
    {
      default: MODEL,
      models: { [MODEL]: { path: dir, description: 'tiny', release_date: '2026-11-22' } },
      aliases: { 'svc-latest': MODEL },
    },
    '(bench registry)',
  );
  // Its engine threads get the crash hook it kills them with (engine/thread/crash-hook.ts).
  process.env.ASSAY_ENGINE_CRASH_HOOK = '1';
  const pool = createModelPool(registry, { threads: ctx.threads }, { info: () => {}, warn: () => {} });
  await pool.preload();
  const app = await buildServer({ registry, models: pool, keys: keysFromList(KEY), logging: false });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const kills: Kill[] = [];
  try {
    for (const how of ['exit', 'throw'] as const) {
      const evaluator = (await pool.load(MODEL)) as EngineThreadEvaluator;
      const statuses: Record<string, number> = {};
      let hung = 0;
      let after500 = 0;
      let detectedAt = Number.POSITIVE_INFINITY;
      let stop = false;
      let n = 0;
      const client = async () => {
        while (!stop) {
          const body = JSON.stringify({
            state: `Ticket ${how}-${n++}. ${'The customer asked for a refund twice. '.repeat(60)}`,
            model: 'svc-latest',
            questions: { refund: { type: 'noul', instructions: 'Was a refund asked for?' } },
          });
          const res = await fetch(`${base}/v1/systemone`, {
            method: 'POST',
            headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
            body,
            signal: AbortSignal.timeout(60_000),
          }).catch(() => undefined);
          if (!res) {
            hung++;
            continue;
          }
          await res.arrayBuffer();
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          if (res.status === 500 && performance.now() > detectedAt) after500++;
          if (res.status === 503) await new Promise((r) => setTimeout(r, 100));
        }
      };
      const clients = Array.from({ length: CLIENTS }, client);
      while (evaluator.stats().queueDepth + evaluator.stats().running < 2) await new Promise((r) => setTimeout(r, 2));
      const inThread = evaluator.stats().queueDepth + evaluator.stats().running;
      const killedAt = performance.now();
      evaluator.crashForTest(how);
      let restartedAt = Number.POSITIVE_INFINITY;
      while (performance.now() - killedAt < 60_000) {
        const status = (await fetch(`${base}/healthz`)).status;
        if (status === 503 && detectedAt === Number.POSITIVE_INFINITY) detectedAt = performance.now();
        if (status === 200 && detectedAt !== Number.POSITIVE_INFINITY) {
          restartedAt = performance.now();
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 2_000)); // answered again after the restart
      stop = true;
      await Promise.all(clients);
      kills.push({
        how,
        inThread,
        detectMs: detectedAt - killedAt,
        restartMs: restartedAt - killedAt,
        statuses,
        after500,
        hung,
      });
      ctx.log(
        `  killed (${how}) with ${inThread} requests in the thread: /healthz 503 after ${(detectedAt - killedAt).toFixed(0)} ms, 200 after ${(restartedAt - killedAt).toFixed(0)} ms; ${JSON.stringify(statuses)}`,
      );
    }
  } finally {
    await app.close();
    await pool.close();
  }
  const worst = (f: (k: Kill) => number) => Math.max(...kills.map(f));
  return {
    id: 'engine-death',
    title: '7b. The engine thread killed under load (tiny model, server in-process)',
    config: { clients: CLIENTS, threads: ctx.threads, model: 'tiny-fp32' },
    results: { kills },
    targets: [
      {
        name: 'requests that hang when the engine thread dies',
        goal: '0',
        value: worst((k) => k.hung),
        unit: 'requests',
        met: worst((k) => k.hung) === 0,
      },
      {
        name: '500s after the death is detected',
        goal: '0',
        value: worst((k) => k.after500 + (k.statuses['500'] ?? 0)),
        unit: 'requests',
        met: kills.every((k) => !k.statuses['500']),
      },
      {
        name: '/healthz 503 then 200 after the restart',
        goal: 'both seen',
        value: worst((k) => k.restartMs),
        unit: 'ms',
        met: kills.every((k) => Number.isFinite(k.detectMs) && Number.isFinite(k.restartMs)),
      },
    ],
    notes: [
      'Each kill: four clients loop one-question requests (fresh ~400-token states) for the whole window; a 503 client waits 100 ms (as its retry-after would ask, shortened). Detection is the first /healthz 503 after the kill, restart the first 200 after that (the model loaded again).',
    ],
    markdown: table(
      ['kill', 'in the thread', '/healthz 503 after', '/healthz 200 after', 'statuses', 'hung'],
      kills.map((k) => [
        k.how,
        k.inThread,
        `${k.detectMs.toFixed(0)} ms`,
        `${k.restartMs.toFixed(0)} ms`,
        JSON.stringify(k.statuses),
        k.hung,
      ]),
    ),
    seconds: (performance.now() - started) / 1000,
  };
}
