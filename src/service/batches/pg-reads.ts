// Reading the batch store on PostgreSQL (pg-store.ts): batches, a page of results, counts. A page
// reads the batch's status first: lines and the batch's end are written in one transaction, so once
// it has ended, every line is visible to the query after.
import type pg from 'pg';
import type { BatchRecord, BatchStatus, ResultsPage } from './store.js';
import { ENDED, parseCursor, toRecord, type BatchRow } from './schema.js';

export async function ownedBatch(c: pg.Pool | pg.PoolClient, owner: string, id: string): Promise<BatchRow | undefined> {
  return (await c.query<BatchRow>('SELECT * FROM batches WHERE id = $1 AND owner = $2', [id, owner])).rows[0];
}

export async function listBatches(
  pool: pg.Pool,
  owner: string,
  o: { after?: string; limit: number },
): Promise<{ data: BatchRecord[]; hasMore: boolean }> {
  const after = o.after === undefined ? undefined : await ownedBatch(pool, owner, o.after);
  const { rows } = after
    ? await pool.query<BatchRow>(
        `SELECT * FROM batches WHERE owner = $1 AND (created_ms, id) < ($2, $3) ORDER BY created_ms DESC, id DESC LIMIT $4`,
        [owner, after.created_ms, after.id, o.limit + 1],
      )
    : await pool.query<BatchRow>('SELECT * FROM batches WHERE owner = $1 ORDER BY created_ms DESC, id DESC LIMIT $2', [
        owner,
        o.limit + 1,
      ]);
  return { data: rows.slice(0, o.limit).map(toRecord), hasMore: rows.length > o.limit };
}

export async function resultsPage(
  pool: pg.Pool,
  owner: string,
  id: string,
  o: { after?: string; limit: number },
): Promise<ResultsPage | undefined> {
  const after = parseCursor(o.after);
  // The status first: lines and the batch's end are written in one transaction, so once it has
  // ended, every line is visible to the query after.
  const r = await ownedBatch(pool, owner, id);
  if (!r) return undefined;
  const { rows } = await pool.query<{ seq: number; result: string }>(
    'SELECT seq, result FROM results WHERE batch_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
    [id, after, o.limit + 1],
  );
  const page = rows.slice(0, o.limit);
  const out: ResultsPage = { lines: page.map((x) => x.result), done: false };
  if (page.length > 0) out.cursor = String(page[page.length - 1]!.seq);
  out.done = ENDED.includes(r.status as BatchStatus) && rows.length <= o.limit;
  return out;
}

export async function countAll(
  pool: pg.Pool,
): Promise<{ batches: Partial<Record<BatchStatus, number>>; pending: number; leased: number }> {
  const b = await pool.query<{ status: BatchStatus; n: number }>(
    'SELECT status, COUNT(*)::int AS n FROM batches GROUP BY status',
  );
  const i = await pool.query<{ state: string; n: number }>(
    `SELECT state, COUNT(*)::int AS n FROM items WHERE state <> 'done' GROUP BY state`,
  );
  const n = (state: string): number => i.rows.find((x) => x.state === state)?.n ?? 0;
  return {
    batches: Object.fromEntries(b.rows.map((r) => [r.status, r.n])),
    pending: n('pending'),
    leased: n('leased'),
  };
}
