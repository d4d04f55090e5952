// A planner worker thread: loads the model's tokenizer once, then plans requests (plan.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { runInBackground, serveChannel } from '../../../workers/index.js';
import { TextCodec } from '../tokenizer.js';
import { failureOf } from '../../thread/failure.js';
import { planWith, type PlannerOptions } from './index.js';
import { parseBody, type PlannerCalls } from './task.js';

const o = workerData as Omit<PlannerOptions, 'threads'> & { background?: boolean };
if (o.background) runInBackground();
const codec = TextCodec.load(o.modelDir);

serveChannel<PlannerCalls>(
  parentPort!,
  {
    plan: async (task) => planWith(await codec, o, 'body' in task ? parseBody(task.body) : task.request),
  },
  failureOf,
);
