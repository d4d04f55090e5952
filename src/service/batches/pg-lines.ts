// Answering lines on PostgreSQL (pg-store.ts), inside the caller's transaction that holds the
// batch's row: each line not yet done becomes done with its result (a line already done is left as
// it is: a line is answered once), lines the store answers itself (cancelled, expired), a batch
// with no line left ends; and retention (sweep, remove).
import type pg from 'pg';
import type { BatchStatus, ItemResult } from './store.js';
import { ENDED, ENDED_SQL, errorLine, type BatchRow } from './schema.js';
import type { GroupQueue } from './pg-queue.js';

export type Tx = pg.PoolClient;

/**
 * A custom_id or group as PostgreSQL keeps it: its JSON text. PostgreSQL's text (and pg-boss's jsonb)
 * cannot hold U+0000, which a custom_id may contain and a group does (model and state hash).
 */
export const encodeText = (s: string): string => JSON.stringify(s);
export const decodeText = (s: string): string => JSON.parse(s) as string;

export async function writeResults(c: Tx, batchId: string, results: ItemResult[]): Promise<void> {
  if (results.length === 0) return;
  const { rows } = await c.query<{ completed: number; failed: number }>(
    `WITH r AS (SELECT * FROM unnest($2::int[], $3::text[], $4::int[], $5::int[]) AS x (line, result, ok, tokens)),
     done AS (
       UPDATE items i SET state = 'done', body = '', runner = NULL, lease = NULL, leased_until = NULL
       FROM r WHERE i.batch_id = $1 AND i.line = r.line AND i.state <> 'done'
       RETURNING i.line),
     written AS (
       INSERT INTO results (batch_id, line, result, ok, input_tokens)
       SELECT $1, r.line, r.result, r.ok, r.tokens FROM r JOIN done USING (line) ORDER BY r.line
       RETURNING ok)
     SELECT COUNT(*) FILTER (WHERE ok = 1)::int AS completed, COUNT(*) FILTER (WHERE ok = 0)::int AS failed FROM written`,
    [
      batchId,
      results.map((r) => r.line),
      results.map((r) => r.result),
      results.map((r) => (r.ok ? 1 : 0)),
      results.map((r) => r.inputTokens),
    ],
  );
  const { completed, failed } = rows[0]!;
  await c.query('UPDATE batches SET completed = completed + $2, failed = failed + $3 WHERE id = $1', [
    batchId,
    completed,
    failed,
  ]);
}

/** Unanswered lines (pending, and leased too unless `now` is given: then the batch may end) get `code`. */
export async function answerUnfinished(
  c: Tx,
  batchId: string,
  code: 'batch_cancelled' | 'batch_expired',
  now?: number,
): Promise<void> {
  const { rows } = await c.query<{ line: number; custom_id: string }>(
    `SELECT line, custom_id FROM items WHERE batch_id = $1 AND state <> 'done'`,
    [batchId],
  );
  await writeResults(
    c,
    batchId,
    rows.map((r) => ({ line: r.line, result: errorLine(decodeText(r.custom_id), code), ok: false, inputTokens: 0 })),
  );
  if (now !== undefined) await finish(c, batchId, now);
}

/** After a change: a cancelling batch answers its pending lines; a batch with no line left ends. */
export async function finish(c: Tx, batchId: string, now: number): Promise<void> {
  const { rows } = await c.query<{ status: string; in_progress_ms: number | null }>(
    'SELECT status, in_progress_ms FROM batches WHERE id = $1',
    [batchId],
  );
  const status = rows[0]?.status;
  if (status !== 'in_progress' && status !== 'cancelling') return;
  // Cancelled while validating: its lines are still being read in; start() finishes it.
  if (status === 'cancelling' && rows[0]!.in_progress_ms === null) return;
  if (status === 'cancelling') {
    const pending = await c.query<{ line: number; custom_id: string }>(
      `SELECT line, custom_id FROM items WHERE batch_id = $1 AND state = 'pending'`,
      [batchId],
    );
    await writeResults(
      c,
      batchId,
      pending.rows.map((r) => ({
        line: r.line,
        result: errorLine(decodeText(r.custom_id), 'batch_cancelled'),
        ok: false,
        inputTokens: 0,
      })),
    );
  }
  const open = await c.query(`SELECT 1 FROM items WHERE batch_id = $1 AND state <> 'done' LIMIT 1`, [batchId]);
  if (open.rows.length > 0) return;
  if (status === 'in_progress') {
    await c.query(
      `UPDATE batches SET status = 'completed', finalizing_ms = $2, completed_ms = $2, ended_ms = $2 WHERE id = $1`,
      [batchId, now],
    );
  } else {
    await c.query(`UPDATE batches SET status = 'cancelled', cancelled_ms = $2, ended_ms = $2 WHERE id = $1`, [
      batchId,
      now,
    ]);
  }
}

/** The batch's row, locked for the transaction (the lock that orders every change to a batch). */
export async function lockBatch(c: Tx, id: string): Promise<BatchRow | undefined> {
  return (await c.query<BatchRow>('SELECT * FROM batches WHERE id = $1 FOR UPDATE', [id])).rows[0];
}

/** Removes a batch, its input, its results and its jobs. */
export async function remove(c: Tx, queue: GroupQueue, id: string): Promise<void> {
  await c.query('DELETE FROM items WHERE batch_id = $1', [id]);
  await c.query('DELETE FROM results WHERE batch_id = $1', [id]);
  await c.query('DELETE FROM batches WHERE id = $1', [id]);
  await queue.forget(c, id);
}

/** BatchStore.sweep: a transaction per batch changed. */
export async function sweep(
  pool: pg.Pool,
  tx: <T>(work: (c: Tx) => Promise<T>) => Promise<T>,
  queue: GroupQueue,
  now: number,
  o: { keepMs: number; keepReadMs: number },
): Promise<string[]> {
  // Cancelling batches whose leases ran out: no runner is left to finish those lines.
  const stale = await pool.query<{ id: string }>(
    `SELECT DISTINCT b.id FROM batches b JOIN items i ON i.batch_id = b.id
     WHERE b.status = 'cancelling' AND i.state = 'leased' AND i.leased_until <= $1`,
    [now],
  );
  for (const { id } of stale.rows) {
    await tx(async (c) => {
      if ((await lockBatch(c, id))?.status === 'cancelling') await answerUnfinished(c, id, 'batch_cancelled', now);
    });
  }
  // A batch whose lines are still being read in expires once they are in (each line gets its result).
  const expiring = await pool.query<{ id: string }>(
    `SELECT id FROM batches WHERE status NOT IN (${ENDED_SQL}) AND in_progress_ms IS NOT NULL AND expires_ms <= $1`,
    [now],
  );
  for (const { id } of expiring.rows) {
    await tx(async (c) => {
      const r = await lockBatch(c, id);
      if (!r || ENDED.includes(r.status as BatchStatus)) return;
      await answerUnfinished(c, id, 'batch_expired');
      await c.query(`UPDATE batches SET status = 'expired', expired_ms = $2, ended_ms = $2 WHERE id = $1`, [id, now]);
    });
  }
  const old = await pool.query<{ id: string }>(
    `SELECT id FROM batches WHERE status IN (${ENDED_SQL}) AND (ended_ms <= $1 OR results_read_ms <= $2)`,
    [now - o.keepMs, now - o.keepReadMs],
  );
  for (const { id } of old.rows) await tx((c) => remove(c, queue, id));
  return old.rows.map((x) => x.id);
}
