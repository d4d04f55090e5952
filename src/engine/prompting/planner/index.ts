// Planning (template rendering, tokenization of the state and every question, label tries, budget
// checks: plan.ts) off the event loop, in a pool of worker threads that each load the model's
// tokenizer once. The main thread only parses, validates, schedules and serializes: a 28k-token
// state or 200 questions on a 120 KB state no longer stall /healthz or other callers.
//
// Pool size: `plannerThreads`, default max(1, floor(cores / 2)) — onnxruntime already uses every
// core for a forward pass, so more planning threads would only take turns with it. 0 plans on the
// calling thread (library use that wants no threads).
import { availableParallelism } from 'node:os';
import { workerEntry } from '../../../workers/index.js';
import { familyNamed } from '../../families/list.js';
import { planRequest, type Budgets, type Plan } from '../plan.js';
import { promptSet } from '../prompts.js';
import { TextCodec } from '../tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import { lanedPlanner, type Planner } from './lanes.js';
import { parseBody } from './task.js';

export type { Planner } from './lanes.js';

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

/** Plans in worker threads (planner/worker.ts), in the three lanes of lanes.ts. */
export function workerPlanner(o: PlannerOptions): Planner {
  const entry = workerEntry('worker', import.meta.url, {
    modelDir: o.modelDir,
    promptVersion: o.promptVersion,
    rotations: o.rotations,
    endToken: o.endToken,
    budgets: o.budgets,
    contract: o.contract,
  });
  return lanedPlanner<Plan>(entry, o);
}
