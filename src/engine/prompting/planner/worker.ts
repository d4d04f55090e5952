// A planner worker thread: loads the model's tokenizer once, then plans requests (plan.ts).
import { workerData } from 'node:worker_threads';
import { planRequest, type Plan } from '../plan.js';
import { promptSet } from '../prompts.js';
import { TextCodec } from '../tokenizer.js';
import { failureOf, type Failure } from '../../thread/failure.js';
import type { PlannerOptions } from './index.js';
import { parseBody, type PlanTask } from './task.js';

const o = workerData as Omit<PlannerOptions, 'threads'>;
const codec = TextCodec.load(o.modelDir);
const prompts = promptSet(o.promptVersion);

export default async function plan(task: PlanTask): Promise<{ plan: Plan } | { failure: Failure }> {
  try {
    const request = 'body' in task ? parseBody(task.body) : task.request;
    return { plan: planRequest(request, await codec, prompts, o.endToken, o.budgets, { rotations: o.rotations }) };
  } catch (error) {
    return { failure: failureOf(error) };
  }
}
