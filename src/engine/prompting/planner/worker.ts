// A planner worker thread: loads the model's tokenizer once, then plans requests (plan.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { serveChannel } from '../../../workers/index.js';
import { planRequest } from '../plan.js';
import { promptSet } from '../prompts.js';
import { TextCodec } from '../tokenizer.js';
import { failureOf } from '../../thread/failure.js';
import type { PlannerOptions } from './index.js';
import { parseBody, type PlannerCalls } from './task.js';

const o = workerData as Omit<PlannerOptions, 'threads'>;
const codec = TextCodec.load(o.modelDir);
const prompts = promptSet(o.promptVersion);

serveChannel<PlannerCalls>(
  parentPort!,
  {
    plan: async (task) =>
      planRequest('body' in task ? parseBody(task.body) : task.request, await codec, prompts, o.endToken, o.budgets, {
        rotations: o.rotations,
      }),
  },
  failureOf,
);
