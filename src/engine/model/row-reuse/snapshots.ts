// A request's state snapshot, across requests: kept in the model's prefix cache (cache/prefix-cache.ts,
// the decoder's too), under the caller's cache scope and the model, keyed by the snapshot's exact
// tokens (a digest, never the tokens), so a tenant never continues another tenant's state. Its bytes
// are the cache's, which the model's size counts (assay ps, the memory budget); the cache goes with
// the model when it closes.
//
// When a snapshot is taken: two or more rows that share a state of at least one piece (P ≥ 64)
// always read the state once (one state pass, then every row from it: cheaper than two whole rows);
// a state already in the cache is read from there, whatever the row count. One row on a state not
// in the cache runs whole (a snapshot then the row costs it a second pass) unless the cache admits
// the state, on its second sighting, as the decoder's one-question prefixes are: a state asked
// about again and again is read once from its third request on.
import type { PrefixCache } from '../../cache/prefix-cache.js';
import type { PassStep } from '../runner.js';
import { snapshotLength } from './prefix.js';
import type { ReuseRow, RowReuse, Snapshot } from './runner.js';

/** What a request may share snapshots with: the model's cache, under the caller's scope. */
export interface SnapshotCache {
  cache: PrefixCache<Snapshot>;
  /** The caller's cache scope and the model: entries are shared only within it. */
  scope: string;
}

/** The cache scope of a model's snapshots for a caller (its cache scope; none: shared by every caller). */
export function snapshotScope(modelId: string, cacheScope: string | undefined): string {
  return `${cacheScope ?? ''}\u0001${modelId}`;
}

/** How a request's rows read their state. */
export type StateRead =
  /** The rows share no snapshot (P = 0), or one row's state is neither cached nor admitted: whole rows. */
  | { whole: true; reason: 'no shared state' | 'one row' }
  /** A snapshot of the rows' first P tokens: from the cache (`hit`) or taken now (`stored`: kept there). */
  | { whole: false; snapshot: Snapshot; hit: boolean; stored: boolean };

/** A request's rows as readState takes them. */
export interface StateRows {
  rows: readonly ReuseRow[];
  /** The tokens of the state's part every row begins with: a snapshot never goes past it (its key is the state's, not a question's). */
  stateLength: number;
}

/**
 * P for a request's rows: the tokens every row shares, floored to `multiple`, never past the state's
 * part (so the same state is the same key whatever the questions) nor a gathered position. 0: the
 * rows share nothing a state pass could take.
 */
export function stateSnapshotLength({ rows, stateLength }: StateRows, multiple: number): number {
  return Math.min(snapshotLength(rows, multiple), Math.floor(stateLength / multiple) * multiple);
}

/**
 * How the rows read their state: a snapshot of the state's first P tokens (stateSnapshotLength)
 * from the cache, or taken (each state piece one pass through `step`) and stored when the cache
 * keeps it, or whole rows.
 */
export async function readState(
  reuse: RowReuse,
  request: StateRows,
  shared: SnapshotCache,
  step?: PassStep,
): Promise<StateRead> {
  const { rows } = request;
  const P = stateSnapshotLength(request, reuse.multiple);
  if (P === 0) return { whole: true, reason: 'no shared state' };
  const tokens = rows[0]!.ids.slice(0, P);
  const { cache, scope } = shared;
  const cached = cache.lookup(scope, tokens);
  if (cached) return { whole: false, snapshot: cached, hit: true, stored: false };
  const bytes = reuse.snapshotBytes(P) ?? 0;
  if (rows.length < 2) {
    const admitted = cache.admits(scope, tokens, bytes);
    cache.recordSighting(scope, tokens, bytes);
    if (!admitted) return { whole: true, reason: 'one row' };
  }
  const snapshot = await reuse.snapshot(tokens, reuse.empty, step);
  const stored = cache.keeps(snapshot.bytes);
  if (stored) cache.store(scope, tokens, snapshot);
  return { whole: false, snapshot, hit: false, stored };
}
