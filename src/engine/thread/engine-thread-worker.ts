// The engine thread's entry (engine-thread.ts): loads the evaluator here and answers the main
// thread's requests. onnxruntime's passes block this thread's event loop, not the server's.
import { parentPort, workerData } from 'node:worker_threads';
import type { EngineThreadData, FromEngine, ToEngine } from './engine-thread.js';
import { createEvaluator } from '../execution/evaluator.js';
import { failureOf } from './failure.js';
import type { EngineStats } from '../types.js';

const port = parentPort!;
const post = (m: FromEngine): void => port.postMessage(m);
const config = workerData as EngineThreadData;

try {
  const evaluator = await createEvaluator({ ...config, onWarning: (message) => post({ type: 'warning', message }) });
  const running = new Map<number, AbortController>();
  // Live counts for /metrics (and for whoever watches a request's progress): between two passes,
  // while requests run, the thread posts its stats when they changed.
  let last: EngineStats | undefined;
  const postStats = (): void => {
    const stats = evaluator.stats();
    // A handful of counters: compared field by field (no string built every 2 ms).
    if (!last || (Object.keys(stats) as Array<keyof EngineStats>).some((k) => stats[k] !== last![k])) post({ type: 'stats', stats });
    last = stats;
  };
  // Ticks only while something runs: an idle thread sleeps.
  let ticker: ReturnType<typeof setInterval> | undefined;
  const started = (): void => {
    ticker ??= setInterval(postStats, 2);
  };
  const ended = (id: number): void => {
    running.delete(id);
    if (running.size === 0) {
      clearInterval(ticker);
      ticker = undefined;
    }
  };
  port.on('message', (m: ToEngine) => {
    switch (m.type) {
      case 'evaluate':
      case 'evaluate-body': {
        const controller = new AbortController();
        running.set(m.id, controller);
        started();
        const options = { signal: controller.signal, cacheScope: m.cacheScope };
        void (m.type === 'evaluate' ? evaluator.evaluate(m.request, options) : evaluator.evaluateBody!(m.body, options))
          .then(
            (result) => post({ type: 'result', id: m.id, result, stats: evaluator.stats() }),
            (error: unknown) => post({ type: 'failed', id: m.id, failure: failureOf(error), stats: evaluator.stats() }),
          )
          .finally(() => ended(m.id));
        // Its place in the queue is visible to /metrics at once, not when it ends.
        postStats();
        break;
      }
      case 'abort':
        running.get(m.id)?.abort();
        break;
      case 'crash':
        if (m.how === 'exit') process.exit(70);
        setImmediate(() => {
          throw new Error('crash requested by a test');
        });
        break;
      case 'close':
        clearInterval(ticker);
        void evaluator.close().finally(() => {
          post({ type: 'closed' });
          port.close();
        });
        break;
    }
  });
  post({ type: 'ready', synthetic: evaluator.synthetic === true, graph: evaluator.graph, stats: evaluator.stats() });
} catch (error) {
  post({ type: 'load-failed', failure: failureOf(error) });
}
