// Reuse of a state across the rows of a causal-row family (Kev, Decision, decider slots, Arbiter):
// the published whole-row graph rewritten at load into a continuation graph (rewrite.ts, cached by
// graph-cache.ts), run by RowReuse (a state's snapshot once, then each question's row from it), and
// where a request's rows share their snapshot (prefix.ts), kept across requests in the model's
// tenant-scoped prefix cache (snapshots.ts). docs/engine.md, "Causal rows: the state read once".
export { rowReuseGraph, type RowGraph } from './graph-cache.js';
export { rowReuseVerdict } from './verdict.js';
export { ROW_REUSE_VERSION, type RowGraphFacts } from './names.js';
export { snapshotLength } from './prefix.js';
export {
  readState,
  snapshotScope,
  stateSnapshotLength,
  type SnapshotCache,
  type StateRead,
  type StateRows,
} from './snapshots.js';
export { REUSE_MULTIPLE, RowReuse, STATE_PIECE, type ReuseRow, type RowReuseOptions, type Snapshot } from './runner.js';
