// The engine runs in a worker thread of its own. onnxruntime-node's session.run is synchronous (its
// promise wraps a blocking native call in setImmediate), so on the main thread every pass would
// stall the event loop for its whole duration: a 2,000-token request on the 0.5B model held it up
// to 1,060 ms at a time, and /healthz, /metrics and every other caller waited behind it. Here the
// evaluator (scheduler, prefix cache, planner pool, onnxruntime session) lives in the thread; the
// caller gets an Evaluator that posts requests and aborts to it and rebuilds its errors.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import type { EngineConfig } from '../config.js';
import { EngineDeadError, EngineError } from '../errors.js';
import { rebuild, type Failure } from './failure.js';
import type { EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from '../types.js';
import { workerEntry, workerExecArgv } from '../../workers/index.js';
import { ownedBytes } from '../../protocol/index.js';

/** Main thread → engine thread. */
export type ToEngine =
  | { type: 'evaluate'; id: number; request: EvaluateRequest; cacheScope?: string }
  | { type: 'evaluate-body'; id: number; body: Uint8Array; cacheScope?: string }
  | { type: 'abort'; id: number }
  | { type: 'close' }
  /** Test hook (never sent for a caller): the thread exits, or throws an error nothing catches. */
  | { type: 'crash'; how: 'exit' | 'throw' };

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
export type EngineThreadData = Omit<EngineConfig, 'onWarning' | 'onDeath'>;

/** The evaluator of an engine thread, with a hook for tests that kills the thread. */
export interface EngineThreadEvaluator extends Evaluator {
  /** Makes the thread exit (`exit`) or throw an uncaught error (`throw`), as a crash would. */
  crashForTest(how: 'exit' | 'throw'): void;
}

interface Pending {
  resolve: (result: EvaluateResult) => void;
  reject: (error: Error) => void;
}

export async function loadEvaluatorThread(config: EngineConfig): Promise<EngineThreadEvaluator> {
  const { onWarning, onDeath, ...data } = config;
  const entry = workerEntry('engine-thread-worker', import.meta.url, data satisfies EngineThreadData);
  const worker = new Worker(entry.filename, { workerData: entry.workerData, execArgv: workerExecArgv() });
  const pending = new Map<number, Pending>();
  let stats: EngineStats | undefined;
  let exited: Error | undefined;
  let closed: (() => void) | undefined;
  let loaded = false;
  let closing = false;
  /** The thread is gone: every request waiting on it ends, and (after a load, unless closing) the owner hears of it at once. */
  const died = (why: string): void => {
    if (exited) return;
    exited = loaded && !closing ? new EngineDeadError(`the model's engine thread ${why}; it is being restarted`) : new EngineError(`the engine thread ${why}`);
    for (const p of pending.values()) p.reject(exited);
    pending.clear();
    if (loaded && !closing) onDeath?.(exited);
  };
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
      died(`failed: ${error.message}`);
      reject(exited);
    });
    worker.on('exit', (code) => {
      died(`exited (code ${code})`);
      reject(exited);
    });
  });
  let synthetic: boolean;
  let graph: string | undefined;
  try {
    ({ synthetic, graph } = await ready);
    loaded = true;
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
  /** Registers a request, sends it (`send` posts it under its id) and settles with the thread's answer. */
  const submit = (send: (id: number) => void, signal: AbortSignal | undefined): Promise<EvaluateResult> => {
    if (exited) return Promise.reject(exited);
    const id = nextId++;
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
      send(id);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
    });
  };
  return {
    modelDir: config.modelDir,
    synthetic,
    graph,
    evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      return submit((id) => post({ type: 'evaluate', id, request, cacheScope: options.cacheScope }), options.signal);
    },
    evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      // The bytes move to the engine thread (transferred: the body is never copied or parsed here).
      const owned = ownedBytes(body);
      return submit((id) => worker.postMessage({ type: 'evaluate-body', id, body: owned, cacheScope: options.cacheScope } satisfies ToEngine, [owned.buffer]), options.signal);
    },
    stats: () => ({ ...stats! }),
    crashForTest(how) {
      post({ type: 'crash', how });
    },
    async close(): Promise<void> {
      if (exited) return;
      closing = true;
      const done = new Promise<void>((resolve) => (closed = resolve));
      worker.ref(); // until it has closed: the caller awaits that
      post({ type: 'close' });
      await Promise.race([done, once(worker, 'exit')]);
      await worker.terminate();
    },
  };
}
