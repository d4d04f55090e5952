// The planner threads' three lanes, for any plan a worker makes (the decoder engine's prompts,
// planner/worker.ts; a row family's rows, families/rows/planner-worker.ts): a worker entry that
// answers `plan` with a request or a request body as bytes, and the pools that call it.
import { AbortedError, OverloadedError } from '../../errors.js';
import { QueueFullError, WorkerPool, workerExecArgv } from '../../../workers/index.js';
import { rebuild, type Failure } from '../../thread/failure.js';
import { ownedBytes } from '../../../protocol/index.js';
import type { EvaluateRequest, Lane } from '../../types.js';
import type { Plan } from '../plan.js';
import type { PlannerCalls, PlanTask } from './task.js';

export interface Planner<P = Plan> {
  /** Plans a request; in the batch lane never refused for a full queue (its runner bounds its work in flight). */
  plan(request: EvaluateRequest, signal?: AbortSignal, lane?: Lane): Promise<P>;
  /** Plans a request body given as bytes (protocol/body.ts); a worker planner takes them over (transferred). */
  planBody(body: Uint8Array, signal?: AbortSignal, lane?: Lane): Promise<P>;
  close(): Promise<void>;
}

/**
 * Plans in worker threads, in three lanes: requests the API parsed inline (small bodies), request
 * bodies given as bytes (past the inline size: megabytes to parse, render and tokenize), and the
 * batch lane's requests. Each lane has its own threads and queue, so a light caller's plan never
 * waits behind a 6 MB body's or a batch item's; the bytes and batch lanes start their threads on
 * first use. The batch lane's queue is unbounded: its runner bounds the items in flight, and a
 * batch item is never refused (529) for the interactive lanes' load; its threads run in the
 * background (workers/priority.ts), so planning batch items never slows an interactive pass.
 */
export function lanedPlanner<P>(
  entry: { filename: string; workerData: Record<string, unknown> },
  o: { threads: number; maxQueue: number },
): Planner<P> {
  const pool = (eager: number, size = o.threads, maxQueue = o.maxQueue, background = false) =>
    new WorkerPool<PlannerCalls<P>>({
      filename: entry.filename,
      worker: { workerData: { ...entry.workerData, background }, execArgv: workerExecArgv() },
      size,
      eager,
      maxQueue,
      decodeError: (f) => rebuild(f as Failure),
    });
  const requests = pool(o.threads);
  const bodies = pool(0);
  // The batch lane's threads run at the lowest priority: they plan in the time interactive work leaves.
  const batch = pool(0, o.threads, Infinity, true);
  const run = async (
    pool: WorkerPool<PlannerCalls<P>>,
    task: PlanTask,
    signal: AbortSignal | undefined,
    transfer?: ArrayBuffer[],
  ): Promise<P> =>
    pool.call('plan', task, { signal, ...(transfer ? { transfer } : {}) }).catch((error: unknown) => {
      if (signal?.aborted) throw new AbortedError();
      if (error instanceof QueueFullError)
        throw new OverloadedError(Math.max(1, Math.ceil(error.waiting / o.threads / 10)));
      throw error;
    });
  return {
    plan: (request, signal, lane) => run(lane === 'batch' ? batch : requests, { request }, signal),
    planBody(body, signal, lane) {
      const owned = ownedBytes(body);
      return run(lane === 'batch' ? batch : bodies, { body: owned }, signal, [owned.buffer]);
    },
    close: async () => {
      await Promise.all([requests.destroy(), bodies.destroy(), batch.destroy()]);
    },
  };
}
