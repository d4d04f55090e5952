// The state read once (prefix reuse): the causal-row runner's execution where the export's
// whole-row graph was rewritten at load into a continuation graph (model/row-reuse/). A plan's state
// part runs once into a snapshot, in pieces, or comes from the model's prefix cache (under the
// caller's cache scope: a tenant never continues another's state), and each question's row runs
// from it: its tokens past the snapshot, batched. Usage counts what runs: the snapshot's P tokens
// once, and each row's tokens past P (the state's last S − P < 64 tokens ride in every row; a state
// under 64 tokens shares nothing). One row on a state not cached runs whole (snapshots.ts says
// when), as do the rows of a graph the rewrite cannot read (the runner's whole-rows execution,
// with its reason in the load notes). docs/engine.md, "Causal rows: the state read once".
import type { PrefixCache } from '../../cache/prefix-cache.js';
import type { PassStep } from '../../model/runner.js';
import {
  readState,
  snapshotScope,
  stateSnapshotLength,
  type ReuseRow,
  type RowReuse,
  type Snapshot,
} from '../../model/row-reuse/index.js';
import { rowsUsage, runBatched } from '../rows/batched.js';
import type { RowOutput, RowUsage } from '../rows/family.js';
import { wholeRows, type CausalPlan, type WholeRow } from './plan.js';

/** What the reuse execution runs a plan's rows with. */
export interface ReuseParts {
  reuse: RowReuse;
  /** The model's snapshots across requests. */
  cache: PrefixCache<Snapshot>;
  /** The model (its folder and variant): part of every snapshot's scope. */
  modelId: string;
  /** Runs rows from a snapshot (the empty one: whole rows), as the head's outputs per row. */
  run(rows: readonly WholeRow[], snapshot: Snapshot): Promise<RowOutput[]>;
}

const reuseRow = (r: WholeRow): ReuseRow => ({ ids: r.ids, positions: r.at });

/** P of a plan: the state's tokens a snapshot takes (0: the rows run whole). */
export function planSnapshotLength(plan: CausalPlan, multiple: number): number {
  return stateSnapshotLength({ rows: wholeRows(plan).map(reuseRow), stateLength: plan.state.length }, multiple);
}

/**
 * What a plan reads with the state read once: P tokens once, then each row's tokens past P. Split
 * per question (shared P, each question its rows' tokens past P) where every row is one question's
 * and P is the state's part floored to the multiple, the same for any subset of the questions.
 */
export function reuseUsage(plan: CausalPlan, multiple: number): RowUsage {
  const P = planSnapshotLength(plan, multiple);
  const read = rowsUsage(plan, P);
  return P === Math.floor(plan.state.length / multiple) * multiple ? read : { usage: read.usage };
}

/**
 * Runs a plan's rows from its state's snapshot (cached, or taken through `pass`), batched by their
 * tokens past it (at most `batchTokens` padded tokens a pass); whole rows where readState says so.
 */
export async function runReused(
  parts: ReuseParts,
  plan: CausalPlan,
  batchTokens: number,
  pass: PassStep,
  cacheScope: string | undefined,
): Promise<RowOutput[]> {
  const rows = wholeRows(plan);
  const read = await readState(
    parts.reuse,
    { rows: rows.map(reuseRow), stateLength: plan.state.length },
    { cache: parts.cache, scope: snapshotScope(parts.modelId, cacheScope) },
    pass,
  );
  const snapshot = read.whole ? parts.reuse.empty : read.snapshot;
  return runBatched(
    rows,
    (r) => r.ids.length - snapshot.length,
    batchTokens,
    pass,
    (batch) => parts.run(batch, snapshot),
  );
}
