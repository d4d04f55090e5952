// Claims on SQLite (sqlite-batches.ts), in the caller's transaction: a runner's preferred groups
// first (states it holds); else, of the in-progress batches, the one claimed least recently (batches
// take turns) gives its oldest group (the group of its first claimable line). Claimable: pending,
// or leased until before `now`.
import type Database from 'better-sqlite3';
import type { ClaimedGroup, ClaimOptions } from './store.js';
import type { BatchRow } from './schema.js';

const CLAIMABLE = `(state = 'pending' OR (state = 'leased' AND leased_until <= @now))`;

/** Leases up to maxItems of one group under `lease`; the batch's turn becomes `turn`. */
export function claimGroup(
  db: Database.Database,
  runner: string,
  lease: string,
  turn: number,
  o: ClaimOptions,
): ClaimedGroup | undefined {
  const now = o.now;
  // A preferred group first; else of the in-progress batches by turn, the first with a claimable
  // line gives its oldest group.
  const home = o.prefer?.length ? preferred(db, o.prefer, now) : undefined;
  let batch: BatchRow | undefined =
    home && (db.prepare('SELECT * FROM batches WHERE id = ?').get(home.batchId) as BatchRow | undefined);
  let grp: string | undefined = home?.grp;
  if (!batch) {
    const batches = db
      .prepare(`SELECT * FROM batches WHERE status = 'in_progress' ORDER BY turn, created_ms, id`)
      .all() as BatchRow[];
    for (const b of batches) {
      grp = oldestClaimable(db, b.id, now);
      if (grp === undefined) continue;
      batch = b;
      break;
    }
  }
  if (!batch || grp === undefined) return undefined;
  const items = db
    .prepare(
      `SELECT line, custom_id AS customId, body FROM items
       WHERE batch_id = @id AND grp = @grp AND ${CLAIMABLE} ORDER BY line LIMIT @max`,
    )
    .all({ id: batch.id, grp, now, max: o.maxItems }) as ClaimedGroup['items'];
  const update = db.prepare(
    `UPDATE items SET state = 'leased', runner = ?, lease = ?, leased_until = ? WHERE batch_id = ? AND line = ?`,
  );
  for (const i of items) update.run(runner, lease, now + o.leaseMs, batch.id, i.line);
  db.prepare('UPDATE batches SET turn = ? WHERE id = ?').run(turn, batch.id);
  const claim: ClaimedGroup = { lease, batchId: batch.id, owner: batch.owner, group: grp, items };
  if (batch.cache_scope !== null) claim.cacheScope = batch.cache_scope;
  return claim;
}

/** The preferred group with a claimable line, in the batch whose turn comes first. */
function preferred(db: Database.Database, prefer: string[], now: number): { batchId: string; grp: string } | undefined {
  return db
    .prepare(
      `SELECT i.batch_id AS batchId, i.grp FROM items i JOIN batches b ON b.id = i.batch_id
       WHERE b.status = 'in_progress' AND i.grp IN (SELECT value FROM json_each(?))
         AND (i.state = 'pending' OR (i.state = 'leased' AND i.leased_until <= ?))
       ORDER BY b.turn, i.line LIMIT 1`,
    )
    .get(JSON.stringify(prefer), now) as { batchId: string; grp: string } | undefined;
}

/** The group of a batch's first claimable line (pending, or leased until before `now`). */
function oldestClaimable(db: Database.Database, id: string, now: number): string | undefined {
  const pending = db
    .prepare(`SELECT line, grp FROM items WHERE batch_id = ? AND state = 'pending' ORDER BY line LIMIT 1`)
    .get(id) as { line: number; grp: string } | undefined;
  const expired = db
    .prepare(
      `SELECT line, grp FROM items WHERE batch_id = ? AND state = 'leased' AND leased_until <= ? ORDER BY line LIMIT 1`,
    )
    .get(id, now) as { line: number; grp: string } | undefined;
  if (!pending || (expired && expired.line < pending.line)) return expired?.grp;
  return pending.grp;
}
