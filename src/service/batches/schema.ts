// The batch store's one schema, for both engines (SQLite in the data directory, PostgreSQL shared by
// replicas): its tables, how a row becomes a BatchRecord, and the error lines the store writes
// itself (a line cancelled or expired before it ran). Times are kept in unix milliseconds (`*_ms`),
// the records show unix seconds.
//
//   batches  one row per batch: OpenAI's status and timestamps, counts, idempotency key and content
//            hash, metadata (JSON), `turn` (batches take turns: on SQLite the order of its last
//            claim; on PostgreSQL the turn of its last queued job)
//   items    one row per input line: custom_id, group, body (the request's JSON, emptied once the
//            line is done), state pending | leased | done, and the lease (runner, handle, until)
//   results  one row per answered line, `seq` in the order written (the results cursor); unique per
//            (batch, line), so a line is answered once
import type { LogPolicy } from '../../protocol/index.js';
import type { BatchError, BatchRecord, BatchStatus } from './store.js';

export type Dialect = 'sqlite' | 'pg';

/** The statements that create the schema (each idempotent). */
export function schemaStatements(dialect: Dialect): string[] {
  const seq = dialect === 'pg' ? 'BIGSERIAL PRIMARY KEY' : 'INTEGER PRIMARY KEY AUTOINCREMENT';
  const times = ['in_progress', 'finalizing', 'completed', 'failed', 'expired', 'cancelling', 'cancelled'];
  return [
    `CREATE TABLE IF NOT EXISTS batches (
      id TEXT PRIMARY KEY,
      owner TEXT NOT NULL,
      status TEXT NOT NULL,
      created_ms BIGINT NOT NULL,
      ${times.map((t) => `${t}_ms BIGINT,`).join('\n      ')}
      expires_ms BIGINT NOT NULL,
      ended_ms BIGINT,
      results_read_ms BIGINT,
      total INTEGER NOT NULL DEFAULT 0,
      completed INTEGER NOT NULL DEFAULT 0,
      failed INTEGER NOT NULL DEFAULT 0,
      errors TEXT,
      idempotency_key TEXT,
      content_hash TEXT,
      metadata TEXT,
      cache_scope TEXT,
      turn BIGINT NOT NULL DEFAULT 0,
      UNIQUE (owner, idempotency_key)
    )`,
    'CREATE INDEX IF NOT EXISTS batches_owner ON batches (owner, created_ms, id)',
    'CREATE INDEX IF NOT EXISTS batches_status ON batches (status, turn)',
    `CREATE TABLE IF NOT EXISTS items (
      batch_id TEXT NOT NULL,
      line INTEGER NOT NULL,
      custom_id TEXT NOT NULL,
      grp TEXT NOT NULL,
      body TEXT NOT NULL,
      state TEXT NOT NULL,
      runner TEXT,
      lease TEXT,
      leased_until BIGINT,
      PRIMARY KEY (batch_id, line)
    )`,
    'CREATE INDEX IF NOT EXISTS items_group ON items (batch_id, grp, state, line)',
    'CREATE INDEX IF NOT EXISTS items_state ON items (state, batch_id)',
    'CREATE INDEX IF NOT EXISTS items_claim ON items (batch_id, state, line)',
    `CREATE TABLE IF NOT EXISTS results (
      seq ${seq},
      batch_id TEXT NOT NULL,
      line INTEGER NOT NULL,
      result TEXT NOT NULL,
      ok INTEGER NOT NULL,
      input_tokens INTEGER NOT NULL DEFAULT 0,
      UNIQUE (batch_id, line)
    )`,
    'CREATE INDEX IF NOT EXISTS results_batch ON results (batch_id, seq)',
  ];
}

/** Statuses after which nothing runs. */
export const ENDED: readonly BatchStatus[] = ['completed', 'failed', 'expired', 'cancelled'];

/** The SQL list of the ended statuses, for `status IN (…)`. */
export const ENDED_SQL = ENDED.map((s) => `'${s}'`).join(', ');

/** A batches row as both drivers return it (BIGINT read as a number). */
export interface BatchRow {
  id: string;
  owner: string;
  status: string;
  created_ms: number;
  in_progress_ms: number | null;
  finalizing_ms: number | null;
  completed_ms: number | null;
  failed_ms: number | null;
  expired_ms: number | null;
  cancelling_ms: number | null;
  cancelled_ms: number | null;
  expires_ms: number;
  results_read_ms: number | null;
  total: number;
  completed: number;
  failed: number;
  errors: string | null;
  idempotency_key: string | null;
  content_hash: string | null;
  metadata: string | null;
  cache_scope: string | null;
}

const seconds = (ms: number | null): number | undefined => (ms === null ? undefined : Math.floor(Number(ms) / 1000));

/** The record of a row (absent fields left out). */
export function toRecord(r: BatchRow): BatchRecord {
  const record: BatchRecord = {
    id: r.id,
    owner: r.owner,
    status: r.status as BatchStatus,
    createdAt: seconds(r.created_ms)!,
    inProgressAt: seconds(r.in_progress_ms),
    finalizingAt: seconds(r.finalizing_ms),
    completedAt: seconds(r.completed_ms),
    failedAt: seconds(r.failed_ms),
    expiredAt: seconds(r.expired_ms),
    cancellingAt: seconds(r.cancelling_ms),
    cancelledAt: seconds(r.cancelled_ms),
    expiresAt: seconds(r.expires_ms)!,
    total: Number(r.total),
    completed: Number(r.completed),
    failed: Number(r.failed),
    errors: r.errors === null ? undefined : (JSON.parse(r.errors) as BatchError[]),
    idempotencyKey: r.idempotency_key ?? undefined,
    contentHash: r.content_hash ?? undefined,
    metadata: r.metadata === null ? undefined : (JSON.parse(r.metadata) as Record<string, string>),
    cacheScope: r.cache_scope ?? undefined,
    resultsReadAt: seconds(r.results_read_ms),
  };
  for (const k of Object.keys(record) as Array<keyof BatchRecord>) if (record[k] === undefined) delete record[k];
  return record;
}

/** The results line of a line the store answers itself: cancelled or expired before it ran. */
export function errorLine(customId: string, code: 'batch_cancelled' | 'batch_expired'): string {
  const message =
    code === 'batch_cancelled'
      ? 'the batch was cancelled before this line ran'
      : 'the batch expired before this line ran';
  return JSON.stringify({ custom_id: customId, error: { code, message } });
}

/** A results cursor the store did not write (the API answers 400). */
/** A results cursor the store did not write: 422. */
export class BatchCursorError extends Error {
  static readonly code = 'invalid_cursor';
  static readonly log: LogPolicy = 'none';
  constructor(cursor: string) {
    super(`invalid results cursor ${JSON.stringify(cursor.slice(0, 40))}`);
    this.name = 'BatchCursorError';
  }
}

/** The sequence number a cursor names (a decimal the store wrote), or a BatchCursorError. */
export function parseCursor(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^\d{1,15}$/.test(cursor)) throw new BatchCursorError(cursor);
  return Number(cursor);
}

/** Whether a batch's lines are still being read in: validating, or cancelled while validating. */
export function readingIn(r: Pick<BatchRow, 'status' | 'in_progress_ms'> | undefined): boolean {
  return r?.status === 'validating' || (r?.status === 'cancelling' && r.in_progress_ms === null);
}
