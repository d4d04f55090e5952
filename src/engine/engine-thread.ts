// The engine runs in a worker thread of its own. onnxruntime-node's session.run is synchronous (its
// promise wraps a blocking native call in setImmediate), so on the main thread every pass would
// stall the event loop for its whole duration: a 2,000-token request on the 0.5B model held it up
// to 1,060 ms at a time, and /healthz, /metrics and every other caller waited behind it. Here the
// evaluator (scheduler, prefix cache, planner pool, onnxruntime session) lives in the thread; the
// caller gets an Evaluator that posts requests and aborts to it and rebuilds its errors.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { EngineConfig } from './config.js';
import { EngineError } from './errors.js';
import { rebuild, type Failure } from './failure.js';
import type { EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from './types.js';
import { workerExecArgv, workerFile } from './worker-args.js';

/** Main thread → engine thread. */
export type ToEngine =
  | { type: 'evaluate'; id: number; request: EvaluateRequest; cacheScope?: string }
  | { type: 'abort'; id: number }
  | { type: 'close' };

/** Engine thread → main thread. */
export type FromEngine =
  | { type: 'warning'; message: string }
  | { type: 'ready'; synthetic: boolean; graph?: string; stats: EngineStats }
  | { type: 'load-failed'; failure: Failure }
  | { type: 'stats'; stats: EngineStats }
  | { type: 'result'; id: number; result: EvaluateResult; stats: EngineStats }
  | { type: 'failed'; id: number; failure: Failure; stats: EngineStats }
  | { type: 'closed' };

/** What the engine thread is started with: the config less its callbacks (they cannot cross). */
export type EngineThreadData = Omit<EngineConfig, 'onWarning'>;

interface Pending {
  resolve: (result: EvaluateResult) => void;
  reject: (error: Error) => void;
}

export async function loadEvaluatorThread(config: EngineConfig): Promise<Evaluator> {
  const { onWarning, ...data } = config;
  const worker = new Worker(workerFile('engine-thread-worker', import.meta.url), { workerData: data satisfies EngineThreadData, execArgv: workerExecArgv() });
  const pending = new Map<number, Pending>();
  let stats: EngineStats | undefined;
  let exited: Error | undefined;
  let closed: (() => void) | undefined;
  const ready = new Promise<{ synthetic: boolean; graph?: string }>((resolve, reject) => {
    worker.on('message', (m: FromEngine) => {
      switch (m.type) {
        case 'warning':
          onWarning?.(m.message);
          break;
        case 'ready':
          stats = m.stats;
          resolve({ synthetic: m.synthetic, graph: m.graph });
          break;
        case 'load-failed':
          reject(rebuild(m.failure));
          break;
        case 'stats':
          stats = m.stats;
          break;
        case 'result':
        case 'failed': {
          stats = m.stats;
          const p = settle(m.id);
          if (m.type === 'result') p?.resolve(m.result);
          else p?.reject(rebuild(m.failure));
          break;
        }
        case 'closed':
          closed?.();
          break;
      }
    });
    worker.on('error', (error) => {
      exited = new EngineError(`the engine thread failed: ${error.message}`);
      reject(exited);
    });
    worker.on('exit', (code) => {
      exited ??= new EngineError(`the engine thread exited (code ${code})`);
      reject(exited);
      for (const p of pending.values()) p.reject(exited);
      pending.clear();
    });
  });
  let synthetic: boolean;
  let graph: string | undefined;
  try {
    ({ synthetic, graph } = await ready);
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  // The thread keeps the process alive only while a request waits on it: an evaluator nobody
  // closes does not hold a finished script open, and a pending request is never cut off.
  worker.unref();
  const settle = (id: number): Pending | undefined => {
    const p = pending.get(id);
    pending.delete(id);
    if (pending.size === 0) worker.unref();
    return p;
  };
  let nextId = 0;
  const post = (m: ToEngine): void => worker.postMessage(m);
  return {
    modelDir: config.modelDir,
    synthetic,
    graph,
    evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      if (exited) return Promise.reject(exited);
      const id = nextId++;
      const { signal } = options;
      return new Promise<EvaluateResult>((resolve, reject) => {
        const abort = (): void => post({ type: 'abort', id });
        pending.set(id, {
          resolve(result) {
            signal?.removeEventListener('abort', abort);
            resolve(result);
          },
          reject(error) {
            signal?.removeEventListener('abort', abort);
            reject(error);
          },
        });
        if (pending.size === 1) worker.ref();
        post({ type: 'evaluate', id, request, cacheScope: options.cacheScope });
        if (signal?.aborted) abort();
        else signal?.addEventListener('abort', abort, { once: true });
      });
    },
    stats: () => ({ ...stats! }),
    async close(): Promise<void> {
      if (exited) return;
      const done = new Promise<void>((resolve) => (closed = resolve));
      worker.ref(); // until it has closed: the caller awaits that
      post({ type: 'close' });
      await Promise.race([done, once(worker, 'exit')]);
      await worker.terminate();
    },
  };
}
