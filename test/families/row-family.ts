// A row family opened as the engine opens it (its descriptor's parts: the folder read, the graph
// opened), for the tests that check its layout, its graph and its readout one by one.
import { resolveEngineConfig } from '../../src/engine/config.js';
import type { EngineConfig } from '../../src/engine/config.js';
import { wholeRows, type CausalPlan, type WholeRow } from '../../src/engine/families/causal/plan.js';
import { loadRowFamily } from '../../src/engine/families/index.js';
import type { FamilyPlan, FamilyQuestion, RowOutput, RowUsage } from '../../src/engine/families/rows/family.js';
import type { EvaluateRequest } from '../../src/engine/types.js';

export interface OpenedFamily<P extends FamilyPlan, W> {
  /** The load notes: the folder's, then the graph's. */
  notes: string[];
  graph: string;
  rowsAlone: boolean;
  plan(request: EvaluateRequest): P;
  probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[];
  /** One pass over rows as given. */
  run(rows: readonly W[]): Promise<RowOutput[]>;
  /** What a plan reads as the runner runs it. */
  usage(plan: P): RowUsage;
  close(): Promise<void>;
}

export async function openFamily<P extends FamilyPlan, W>(
  name: string,
  modelDir: string,
  settings: Partial<EngineConfig> = {},
): Promise<OpenedFamily<P, W>> {
  const f = await loadRowFamily(resolveEngineConfig({ modelDir, threads: 1, ...settings }), name);
  return {
    notes: [...f.reader.notes, ...f.runner.notes],
    graph: f.runner.graph,
    rowsAlone: f.runner.rowsAlone,
    plan: (request) => f.reader.plan(request) as P,
    probabilities: (q, outputs) => f.reader.probabilities(q, outputs),
    run: (rows) => f.runner.pass(rows),
    usage: (plan) => f.runner.usage(plan),
    close: () => f.runner.close(),
  };
}

/** A causal family opened: its plans are causal plans, its passes take whole rows. */
export const openCausal = (name: string, modelDir: string, settings: Partial<EngineConfig> = {}) =>
  openFamily<CausalPlan, WholeRow>(name, modelDir, settings);

/** A causal plan's rows, whole, each with its token count (for rowBatches). */
export function wholeRowsOf(plan: CausalPlan): Array<WholeRow & { tokens: number }> {
  return wholeRows(plan).map((w) => ({ ...w, tokens: w.ids.length }));
}
