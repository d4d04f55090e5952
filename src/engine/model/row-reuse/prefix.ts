// Where a request's rows share a snapshot: the state they all begin with, cut where a state pass may end.
import { REUSE_MULTIPLE, type ReuseRow } from './runner.js';

/**
 * P for a request's rows: the longest token prefix every row begins with, floored to a multiple of
 * `multiple`, and never past a gathered position of any row (a row's positions must lie after the
 * snapshot: the head reads them in the row's own pass). 0: nothing to share, the rows run whole.
 */
export function snapshotLength(rows: readonly ReuseRow[], multiple = REUSE_MULTIPLE): number {
  if (rows.length === 0) return 0;
  let shared = rows[0]!.ids.length;
  for (const row of rows.slice(1)) {
    let i = 0;
    while (i < shared && i < row.ids.length && row.ids[i] === rows[0]!.ids[i]) i++;
    shared = i;
  }
  for (const row of rows)
    for (const at of Object.values(row.positions))
      for (const p of typeof at === 'number' ? [at] : at) shared = Math.min(shared, p);
  return Math.max(0, Math.floor(shared / multiple) * multiple);
}
