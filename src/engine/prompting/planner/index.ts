// Planning (template rendering, tokenization of the state and every question, label tries, budget
// checks: plan.ts) off the event loop, in a pool of worker threads that each load the model's
// tokenizer once. The main thread only parses, validates, schedules and serializes: a 28k-token
// state or 200 questions on a 120 KB state no longer stall /healthz or other callers.
//
// Pool size: `plannerThreads`, default max(1, floor(cores / 2)) — onnxruntime already uses every
// core for a forward pass, so more planning threads would only take turns with it. 0 plans on the
// calling thread (library use that wants no threads).
import { availableParallelism } from 'node:os';
import { AbortedError, OverloadedError } from '../../errors.js';
import { QueueFullError, WorkerPool, workerEntry, workerExecArgv } from '../../../workers/index.js';
import { rebuild, type Failure } from '../../thread/failure.js';
import { familyNamed } from '../../families/list.js';
import { planRequest, type Budgets, type Plan } from '../plan.js';
import { promptSet } from '../prompts.js';
import { TextCodec } from '../tokenizer.js';
import type { EvaluateRequest, Lane } from '../../types.js';
import { ownedBytes } from '../../../protocol/index.js';
import { parseBody, type PlannerCalls, type PlanTask } from './task.js';

export interface PlannerOptions {
  modelDir: string;
  promptVersion?: string;
  /** Rotations of each choice question's options (plan.ts PlanOptions). */
  rotations?: number;
  endToken: number;
  budgets: Budgets;
  threads: number;
  /** Requests waiting for a planning thread before OverloadedError (529): planning has a bounded queue too. */
  maxQueue: number;
  /** A folder with its own prompt contract: its family's contract plans the requests (not Assay's prompt). */
  contract?: PlannerContract;
}

/** A folder's prompt contract as the planner threads take it: its family's name and the settings read at load. */
export interface PlannerContract {
  family: string;
  settings: unknown;
}

export interface Planner {
  /** Plans a request; in the batch lane never refused for a full queue (its runner bounds its work in flight). */
  plan(request: EvaluateRequest, signal?: AbortSignal, lane?: Lane): Promise<Plan>;
  /** Plans a request body given as bytes (protocol/body.ts); a worker planner takes them over (transferred). */
  planBody(body: Uint8Array, signal?: AbortSignal, lane?: Lane): Promise<Plan>;
  close(): Promise<void>;
}

export function defaultPlannerThreads(): number {
  return Math.max(1, Math.floor(availableParallelism() / 2));
}

/** A request's plan: the folder's prompt contract's (its family's descriptor), else Assay's prompt's. */
export function planWith(
  codec: TextCodec,
  o: Omit<PlannerOptions, 'threads' | 'modelDir' | 'maxQueue'>,
  request: EvaluateRequest,
): Plan {
  const contract = o.contract && familyNamed(o.contract.family)?.contract;
  if (contract) return contract.plan(request, codec, o.contract!.settings, o.budgets);
  return planRequest(request, codec, promptSet(o.promptVersion), o.endToken, o.budgets, { rotations: o.rotations });
}

/** Plans on the calling thread. */
export function inlinePlanner(codec: TextCodec, o: Omit<PlannerOptions, 'threads' | 'modelDir' | 'maxQueue'>): Planner {
  const plan = async (request: EvaluateRequest) => planWith(codec, o, request);
  return {
    plan,
    planBody: async (body) => plan(parseBody(body)),
    close: async () => {},
  };
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
export function workerPlanner(o: PlannerOptions): Planner {
  const entry = workerEntry('worker', import.meta.url, {
    modelDir: o.modelDir,
    promptVersion: o.promptVersion,
    rotations: o.rotations,
    endToken: o.endToken,
    budgets: o.budgets,
    contract: o.contract,
  });
  const pool = (eager: number, size = o.threads, maxQueue = o.maxQueue, background = false) =>
    new WorkerPool<PlannerCalls>({
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
    pool: WorkerPool<PlannerCalls>,
    task: PlanTask,
    signal: AbortSignal | undefined,
    transfer?: ArrayBuffer[],
  ): Promise<Plan> =>
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
