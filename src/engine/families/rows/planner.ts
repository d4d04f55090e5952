// A row family's requests planned off the engine thread, as the decoder engine's are: a request's
// rows are its layout's tokenization, and a long text (80,000 CJK characters, one huge word) takes
// seconds to tokenize; on the engine thread that would stall every other caller of the model. The
// planner threads (planner-worker.ts) each read the family's folder once (its RowReader), in the
// planner's three lanes (prompting/planner/lanes.ts: parsed requests, request bodies as bytes, the
// batch lane). `plannerThreads: 0` plans on the calling thread (library use that wants no threads).
import type { ResolvedEngineConfig } from '../../config.js';
import { defaultPlannerThreads } from '../../prompting/planner/index.js';
import { lanedPlanner, type Planner } from '../../prompting/planner/lanes.js';
import { parseBody } from '../../prompting/planner/task.js';
import { workerEntry } from '../../../workers/index.js';
import type { FamilyPlan, RowReader } from './family.js';

/** What a row planner thread is started with: the family's name and the engine's settings, as data. */
export interface RowPlannerData {
  family: string;
  config: ResolvedEngineConfig;
}

/** The settings without their callbacks (they cannot cross to a thread). */
function asData(c: ResolvedEngineConfig): ResolvedEngineConfig {
  return Object.fromEntries(Object.entries(c).filter(([, v]) => typeof v !== 'function')) as ResolvedEngineConfig;
}

/** The planner of a row family's requests: its threads, or `reader` on the calling thread. */
export function rowPlanner<P extends FamilyPlan>(
  c: ResolvedEngineConfig,
  family: string,
  reader: RowReader<P>,
): Planner<P> {
  const threads = c.plannerThreads ?? defaultPlannerThreads();
  if (threads <= 0) {
    const plan = async (request: Parameters<RowReader<P>['plan']>[0]) => reader.plan(request);
    return { plan, planBody: async (body) => plan(parseBody(body)), close: async () => {} };
  }
  const data: RowPlannerData = { family, config: asData(c) };
  // Planning is quick next to a request's passes: its queue holds at least 16 (the engine's bound decides 529s).
  return lanedPlanner<P>(workerEntry('planner-worker', import.meta.url, { ...data }), {
    threads,
    maxQueue: Math.max(16, c.maxQueue),
  });
}
