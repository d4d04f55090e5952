// The engine thread's entry (engine-thread.ts): loads the evaluator here and answers the main
// thread's requests. onnxruntime's passes block this thread's event loop, not the server's.
import { parentPort, workerData } from 'node:worker_threads';
import type { EngineCalls, EngineEvent, EngineThreadData } from './engine-thread.js';
import { crashHookEnabled, installCrashHook } from './crash-hook.js';
import { serveChannel } from '../../workers/index.js';
import type { Evaluator } from '../types.js';
import { createEvaluator } from '../execution/evaluator.js';
import { failureOf } from './failure.js';
import type { EngineStats } from '../types.js';

const config = workerData as EngineThreadData;
let evaluator: Evaluator | undefined;
// Live counts for /metrics (and for whoever watches a request's progress): between two passes,
// while requests run, the thread posts its stats when they changed.
let last: EngineStats | undefined;
const postStats = (): void => {
  const stats = evaluator!.stats();
  // A handful of counters: compared field by field (no string built every 2 ms).
  if (!last || (Object.keys(stats) as Array<keyof EngineStats>).some((k) => stats[k] !== last![k]))
    channel.emit({ type: 'stats', stats });
  last = stats;
};
// Ticks only while something runs: an idle thread sleeps.
let running = 0;
let ticker: ReturnType<typeof setInterval> | undefined;
const run = async <T>(work: () => Promise<T>): Promise<{ result: T; stats: EngineStats }> => {
  running++;
  ticker ??= setInterval(postStats, 2);
  // Its place in the queue is visible to /metrics at once, not when it ends.
  const done = work();
  postStats();
  try {
    return { result: await done, stats: evaluator!.stats() };
  } finally {
    // A request that failed (aborted, refused) also leaves the counts: they reach the caller before its answer does.
    postStats();
    if (--running === 0) {
      clearInterval(ticker);
      ticker = undefined;
    }
  }
};

const channel = serveChannel<EngineCalls, EngineEvent>(
  parentPort!,
  {
    async load() {
      evaluator = await createEvaluator({
        ...config,
        onNote: (note) => channel.emit({ type: 'note', note }),
      });
      return { synthetic: evaluator.synthetic === true, graph: evaluator.graph, stats: evaluator.stats() };
    },
    evaluate: ({ request, cacheScope, lane, trace }, { signal }) =>
      run(() => evaluator!.evaluate(request, { signal, cacheScope, lane, trace })),
    evaluateBody: ({ body, cacheScope, lane, trace }, { signal }) =>
      run(() => evaluator!.evaluateBody!(body, { signal, cacheScope, lane, trace })),
    async close() {
      clearInterval(ticker);
      await evaluator?.close();
      setImmediate(() => parentPort!.close());
      return null;
    },
  },
  failureOf,
);

// Only where a test asked for it (crash-hook.ts): no production thread listens for a crash.
if (crashHookEnabled()) installCrashHook();
