// Answering lines on SQLite (sqlite-batches.ts), inside the caller's transaction: each line not yet
// done becomes done with its result (a line already done is left as it is: a line is answered
// once), lines the store answers itself (cancelled, expired), a batch with no line left ends;
// and retention (sweep, remove).
import type Database from 'better-sqlite3';
import type { ItemResult } from './store.js';
import { ENDED_SQL, errorLine, type BatchRow } from './schema.js';

/** Each line not yet done becomes done with its result, and is counted; a line done is left alone. */
export function writeLines(db: Database.Database, batchId: string, results: ItemResult[]): void {
  const done = db.prepare(
    `UPDATE items SET state = 'done', body = '', runner = NULL, lease = NULL, leased_until = NULL
       WHERE batch_id = ? AND line = ? AND state <> 'done'`,
  );
  const insert = db.prepare('INSERT INTO results (batch_id, line, result, ok, input_tokens) VALUES (?, ?, ?, ?, ?)');
  let completed = 0;
  let failed = 0;
  for (const r of results) {
    if (done.run(batchId, r.line).changes !== 1) continue;
    insert.run(batchId, r.line, r.result, r.ok ? 1 : 0, r.inputTokens);
    if (r.ok) completed++;
    else failed++;
  }
  db.prepare('UPDATE batches SET completed = completed + ?, failed = failed + ? WHERE id = ?').run(
    completed,
    failed,
    batchId,
  );
}

/** Unanswered lines (pending, and leased too when `leased`) answered with `code`. */
export function answerUnfinished(
  db: Database.Database,
  id: string,
  code: 'batch_cancelled' | 'batch_expired',
  leased: boolean,
): void {
  const rows = db
    .prepare(`SELECT line, custom_id FROM items WHERE batch_id = ? AND state ${leased ? "<> 'done'" : "= 'pending'"}`)
    .all(id) as Array<{ line: number; custom_id: string }>;
  writeLines(
    db,
    id,
    rows.map((r) => ({ line: r.line, result: errorLine(r.custom_id, code), ok: false, inputTokens: 0 })),
  );
}

/** After a change: a batch with no line left ends; a cancelling one cancels its pending lines first. */
export function finish(db: Database.Database, id: string, now: number): void {
  const r = db.prepare('SELECT * FROM batches WHERE id = ?').get(id) as BatchRow | undefined;
  if (!r) return;
  // Cancelled while validating: its lines are still being read in; start() finishes it.
  if (r.status === 'cancelling' && r.in_progress_ms === null) return;
  if (r.status === 'cancelling') answerUnfinished(db, id, 'batch_cancelled', false);
  if (r.status !== 'in_progress' && r.status !== 'cancelling') return;
  const open = db.prepare(`SELECT 1 FROM items WHERE batch_id = ? AND state <> 'done' LIMIT 1`).get(id);
  if (open) return;
  if (r.status === 'in_progress') {
    db.prepare(
      `UPDATE batches SET status = 'completed', finalizing_ms = ?, completed_ms = ?, ended_ms = ? WHERE id = ?`,
    ).run(now, now, now, id);
  } else {
    db.prepare(`UPDATE batches SET status = 'cancelled', cancelled_ms = ?, ended_ms = ? WHERE id = ?`).run(
      now,
      now,
      id,
    );
  }
}

/** Removes a batch, its input and its results. */
export function remove(db: Database.Database, id: string): void {
  db.prepare('DELETE FROM items WHERE batch_id = ?').run(id);
  db.prepare('DELETE FROM results WHERE batch_id = ?').run(id);
  db.prepare('DELETE FROM batches WHERE id = ?').run(id);
}

/** BatchStore.sweep, in the caller's transaction: the ids deleted. */
export function sweep(db: Database.Database, now: number, o: { keepMs: number; keepReadMs: number }): string[] {
  // Cancelling batches whose leases ran out: no runner is left to finish those lines.
  const stale = db
    .prepare(
      `SELECT DISTINCT b.id FROM batches b JOIN items i ON i.batch_id = b.id
       WHERE b.status = 'cancelling' AND i.state = 'leased' AND i.leased_until <= ?`,
    )
    .all(now) as Array<{ id: string }>;
  for (const { id } of stale) {
    answerUnfinished(db, id, 'batch_cancelled', true);
    finish(db, id, now);
  }
  const expiring = db
    // A batch whose lines are still being read in expires once they are in (each line gets its result).
    .prepare(
      `SELECT id FROM batches WHERE status NOT IN (${ENDED_SQL}) AND in_progress_ms IS NOT NULL AND expires_ms <= ?`,
    )
    .all(now) as Array<{ id: string }>;
  for (const { id } of expiring) {
    answerUnfinished(db, id, 'batch_expired', true);
    db.prepare(`UPDATE batches SET status = 'expired', expired_ms = ?, ended_ms = ? WHERE id = ?`).run(now, now, id);
  }
  const old = db
    .prepare(`SELECT id FROM batches WHERE status IN (${ENDED_SQL}) AND (ended_ms <= ? OR results_read_ms <= ?)`)
    .all(now - o.keepMs, now - o.keepReadMs) as Array<{ id: string }>;
  for (const { id } of old) remove(db, id);
  return old.map((x) => x.id);
}
