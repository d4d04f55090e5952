// A row family's planner thread (planner.ts): reads the family's folder once (its descriptor's
// RowReader: settings, tokenizer, layout), then plans requests and request bodies.
import { parentPort, workerData } from 'node:worker_threads';
import { runInBackground, serveChannel } from '../../../workers/index.js';
import { failureOf } from '../../thread/failure.js';
import { parseBody, type PlannerCalls } from '../../prompting/planner/task.js';
import { familyNamed } from '../list.js';
import type { FamilyPlan } from './family.js';
import type { RowPlannerData } from './planner.js';

const o = workerData as RowPlannerData & { background?: boolean };
if (o.background) runInBackground();
const reader = (async () => {
  const parts = familyNamed(o.family)?.rows;
  if (!parts) throw new Error(`${o.family} is not a row family`);
  return (await parts()).read(o.config);
})();

serveChannel<PlannerCalls<FamilyPlan>>(
  parentPort!,
  {
    plan: async (task) => (await reader).plan('body' in task ? parseBody(task.body) : task.request),
  },
  failureOf,
);
