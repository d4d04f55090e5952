// The engine runs in a worker thread of its own. onnxruntime-node's session.run is synchronous (its
// promise wraps a blocking native call in setImmediate), so on the main thread every pass would
// stall the event loop for its whole duration: a 2,000-token request on the 0.5B model held it up
// to 1,060 ms at a time, and /healthz, /metrics and every other caller waited behind it. Here the
// evaluator (scheduler, prefix cache, planner pool, onnxruntime session) lives in the thread; the
// caller gets an Evaluator that posts requests and aborts to it and rebuilds its errors.
import { once } from 'node:events';
import type { EngineConfig, EngineNote } from '../config.js';
import { EngineDeadError, EngineError } from '../errors.js';
import { rebuild, type Failure } from './failure.js';
import { CRASH_HOOK_ENV, crashHookEnabled, type CrashHow, type CrashMessage } from './crash-hook.js';
import type { EngineStats, EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator, Lane } from '../types.js';
import { startWorker, workerEntry } from '../../workers/index.js';
import { ownedBytes } from '../../protocol/index.js';

/** The engine thread's calls (workers/channel.ts): method → [argument, result]. */
export type EngineCalls = {
  /** Loads the evaluator from the thread's data (the config): what the caller needs of it. */
  load: [null, { synthetic: boolean; graph?: string; stats: EngineStats }];
  evaluate: [
    { request: EvaluateRequest; cacheScope?: string; lane?: Lane; trace?: boolean },
    { result: EvaluateResult; stats: EngineStats },
  ];
  evaluateBody: [
    { body: Uint8Array; cacheScope?: string; lane?: Lane; trace?: boolean },
    { result: EvaluateResult; stats: EngineStats },
  ];
  close: [null, null];
};

/** Engine thread → main thread, between calls. */
export type EngineEvent = { type: 'note'; note: EngineNote } | { type: 'stats'; stats: EngineStats };

/** What the engine thread is started with: the config less its callbacks (they cannot cross). */
export type EngineThreadData = Omit<EngineConfig, 'onNote' | 'onDeath'>;

/** The evaluator of an engine thread, with a hook for tests that kills the thread. */
export interface EngineThreadEvaluator extends Evaluator {
  /**
   * Makes the thread exit (`exit`) or throw an uncaught error (`throw`), as a crash would. Only a
   * thread started with ASSAY_ENGINE_CRASH_HOOK=1 has the hook (crash-hook.ts); any other throws here.
   */
  crashForTest(how: CrashHow): void;
}

export async function loadEvaluatorThread(config: EngineConfig): Promise<EngineThreadEvaluator> {
  const { onNote, onDeath, ...data } = config;
  const crashHook = crashHookEnabled();
  const entry = workerEntry('engine-thread-worker', import.meta.url, data satisfies EngineThreadData);
  let stats: EngineStats | undefined;
  let loaded = false;
  let closing = false;
  let exited: Error | undefined;
  // The thread keeps the process alive only while a call waits on it: an evaluator nobody closes
  // does not hold a finished script open, and a pending request is never cut off. When the thread is
  // gone, every call waiting on it ends, and (after a load, unless closing) the owner hears of it at once.
  const { worker, channel } = startWorker<EngineCalls, EngineEvent>(
    entry.filename,
    { workerData: entry.workerData },
    {
      name: 'the engine thread',
      decodeError: (f) => rebuild(f as Failure),
      onEvent: (e) => (e.type === 'note' ? onNote?.(e.note) : (stats = e.stats)),
      refWhilePending: true,
      deathError: (death) => {
        const why = 'error' in death ? `failed: ${death.error.message}` : `exited (code ${death.code})`;
        return loaded && !closing
          ? new EngineDeadError(`the model's engine thread ${why}; it is being restarted`)
          : new EngineError(`the engine thread ${why}`);
      },
      onDeath: (error) => {
        exited = error;
        if (loaded && !closing) onDeath?.(error);
      },
    },
  );
  let ready: EngineCalls['load'][1];
  try {
    ready = await channel.call('load', null);
    stats = ready.stats;
    loaded = true;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  const answered = ({ result, stats: s }: EngineCalls['evaluate'][1]): EvaluateResult => {
    stats = s;
    return result;
  };
  return {
    modelDir: config.modelDir,
    synthetic: ready.synthetic,
    graph: ready.graph,
    async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      return answered(
        await channel.call(
          'evaluate',
          { request, cacheScope: options.cacheScope, lane: options.lane, trace: options.trace },
          { signal: options.signal },
        ),
      );
    },
    async evaluateBody(body: Uint8Array, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      // The bytes move to the engine thread (transferred: the body is never copied or parsed here).
      const owned = ownedBytes(body);
      return answered(
        await channel.call(
          'evaluateBody',
          { body: owned, cacheScope: options.cacheScope, lane: options.lane, trace: options.trace },
          { signal: options.signal, transfer: [owned.buffer] },
        ),
      );
    },
    stats: () => ({ ...stats! }),
    crashForTest(how) {
      if (!crashHook) throw new Error(`this engine thread has no crash hook (start it with ${CRASH_HOOK_ENV}=1)`);
      channel.postRaw({ type: 'crash', how } satisfies CrashMessage);
    },
    async close(): Promise<void> {
      if (exited) return;
      closing = true;
      await Promise.race([channel.call('close', null).catch(() => null), once(worker, 'exit')]);
      await worker.terminate();
    },
  };
}
