// The batch store on SQLite, synchronous: better-sqlite3 on `<dataDir>/batches.sqlite`, in WAL mode
// with synchronous=FULL (a commit is on disk before it returns: an accepted batch survives the
// process's kill -9 and the machine's power loss; the store commits a chunk of lines or a group of
// answers at a time, so the fsync per commit is cheap) and secure_delete (deleted content is
// overwritten, never left in free pages; the WAL is truncated after a delete). It runs only in the
// store's worker thread (sqlite-thread.ts), never on the event loop.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type {
  BatchError,
  BatchRecord,
  BatchStatus,
  ClaimedGroup,
  ClaimOptions,
  ItemResult,
  NewBatch,
  NewItem,
  ResultsPage,
} from './store.js';
import { ENDED, parseCursor, readingIn, schemaStatements, toRecord, type BatchRow } from './schema.js';
import { SQLITE_FILE, type SyncStore } from './sqlite-calls.js';
import { claimGroup } from './sqlite-claims.js';
import { finish, remove, sweep, writeLines } from './sqlite-lines.js';

const ended = (r: BatchRow): boolean => ENDED.includes(r.status as BatchStatus);

export class SqliteBatches implements SyncStore {
  readonly db: Database.Database;
  private leases = 0;
  /** The last turn given (batches take turns: the least recently claimed goes first). */
  private turn: number | undefined;

  constructor(dataDir: string) {
    this.db = new Database(join(dataDir, SQLITE_FILE), { timeout: 1000 });
    // One process serves a data directory: the file stays locked while it is open.
    this.db.pragma('locking_mode = EXCLUSIVE');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('secure_delete = ON');
    this.db.pragma('foreign_keys = OFF');
    this.db.transaction(() => {
      for (const s of schemaStatements('sqlite')) this.db.exec(s);
    })();
    // One process serves a data directory, and it is starting: a lease left in the file is a
    // stopped process's (killed mid-claim), so its lines run again now rather than when it runs out.
    this.db
      .prepare(
        `UPDATE items SET state = 'pending', runner = NULL, lease = NULL, leased_until = NULL WHERE state = 'leased'`,
      )
      .run();
  }

  close(): void {
    this.db.close();
  }

  private row(id: string): BatchRow | undefined {
    return this.db.prepare('SELECT * FROM batches WHERE id = ?').get(id) as BatchRow | undefined;
  }

  private owned(owner: string, id: string): BatchRow | undefined {
    const r = this.row(id);
    return r && r.owner === owner ? r : undefined;
  }

  create(b: NewBatch): { batch: BatchRecord; created: boolean } {
    return this.db.transaction(() => {
      const info = this.db
        .prepare(
          `INSERT INTO batches (id, owner, status, created_ms, expires_ms, idempotency_key, content_hash, metadata, cache_scope)
           VALUES (?, ?, 'validating', ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
        )
        .run(
          b.id,
          b.owner,
          b.createdAt * 1000,
          b.expiresAt * 1000,
          b.idempotencyKey ?? null,
          b.contentHash ?? null,
          b.metadata ? JSON.stringify(b.metadata) : null,
          b.cacheScope ?? null,
        );
      if (info.changes === 1) return { batch: toRecord(this.row(b.id)!), created: true };
      const same = b.idempotencyKey
        ? (this.db
            .prepare('SELECT * FROM batches WHERE owner = ? AND idempotency_key = ?')
            .get(b.owner, b.idempotencyKey) as BatchRow | undefined)
        : undefined;
      if (!same) throw new Error(`batch id ${b.id} exists`);
      return { batch: toRecord(same), created: false };
    })();
  }

  addItems(batchId: string, items: NewItem[], invalid: ItemResult[]): void {
    this.db.transaction(() => {
      if (!readingIn(this.row(batchId))) return;
      const item = this.db.prepare(
        `INSERT INTO items (batch_id, line, custom_id, grp, body, state) VALUES (?, ?, ?, ?, ?, 'pending')`,
      );
      for (const i of items) item.run(batchId, i.line, i.customId, i.group, i.body);
      const done = this.db.prepare(
        `INSERT INTO items (batch_id, line, custom_id, grp, body, state) VALUES (?, ?, '', '', '', 'done')`,
      );
      const result = this.db.prepare('INSERT INTO results (batch_id, line, result, ok) VALUES (?, ?, ?, 0)');
      for (const r of invalid) {
        done.run(batchId, r.line);
        result.run(batchId, r.line, r.result);
      }
      this.db.prepare('UPDATE batches SET failed = failed + ? WHERE id = ?').run(invalid.length, batchId);
    })();
  }

  start(batchId: string, now: number): void {
    this.db.transaction(() => {
      // A batch cancelled while validating starts as cancelling: every line read in is then cancelled.
      if (!readingIn(this.row(batchId))) return;
      const { n } = this.db.prepare('SELECT COUNT(*) AS n FROM items WHERE batch_id = ?').get(batchId) as { n: number };
      this.db
        .prepare(
          `UPDATE batches SET status = CASE status WHEN 'validating' THEN 'in_progress' ELSE status END, in_progress_ms = ?, total = ? WHERE id = ?`,
        )
        .run(now, n, batchId);
      finish(this.db, batchId, now);
    })();
  }

  fail(batchId: string, errors: BatchError[], now: number): void {
    this.db.transaction(() => {
      if (!readingIn(this.row(batchId))) return;
      this.db
        .prepare(`UPDATE batches SET status = 'failed', failed_ms = ?, ended_ms = ?, errors = ? WHERE id = ?`)
        .run(now, now, JSON.stringify(errors), batchId);
      this.db.prepare('DELETE FROM items WHERE batch_id = ?').run(batchId);
      this.db.prepare('DELETE FROM results WHERE batch_id = ?').run(batchId);
    })();
  }

  get(owner: string, id: string): BatchRecord | undefined {
    const r = this.owned(owner, id);
    return r && toRecord(r);
  }

  list(owner: string, o: { after?: string; limit: number }): { data: BatchRecord[]; hasMore: boolean } {
    const after = o.after === undefined ? undefined : this.owned(owner, o.after);
    const rows = (
      after
        ? this.db
            .prepare(
              `SELECT * FROM batches WHERE owner = ? AND (created_ms, id) < (?, ?) ORDER BY created_ms DESC, id DESC LIMIT ?`,
            )
            .all(owner, after.created_ms, after.id, o.limit + 1)
        : this.db
            .prepare('SELECT * FROM batches WHERE owner = ? ORDER BY created_ms DESC, id DESC LIMIT ?')
            .all(owner, o.limit + 1)
    ) as BatchRow[];
    return { data: rows.slice(0, o.limit).map(toRecord), hasMore: rows.length > o.limit };
  }

  cancel(owner: string, id: string, now: number): BatchRecord | undefined {
    return this.db.transaction(() => {
      const r = this.owned(owner, id);
      if (!r) return undefined;
      if (r.status === 'validating' || r.status === 'in_progress') {
        this.db.prepare(`UPDATE batches SET status = 'cancelling', cancelling_ms = ? WHERE id = ?`).run(now, id);
        finish(this.db, id, now);
      }
      return toRecord(this.row(id)!);
    })();
  }

  delete(owner: string, id: string): boolean {
    const gone = this.db.transaction(() => {
      if (!this.owned(owner, id)) return false;
      remove(this.db, id);
      return true;
    })();
    if (gone) this.db.pragma('wal_checkpoint(TRUNCATE)');
    return gone;
  }

  claim(runner: string, o: ClaimOptions): ClaimedGroup | undefined {
    return this.db.transaction(() => {
      const lease = `${runner}:${Date.now().toString(36)}:${(this.leases++).toString(36)}`;
      this.turn ??= (this.db.prepare('SELECT MAX(turn) AS t FROM batches').get() as { t: number | null }).t ?? 0;
      const claim = claimGroup(this.db, runner, lease, this.turn + 1, o);
      if (claim) this.turn++;
      return claim;
    })();
  }

  complete(batchId: string, results: ItemResult[], now: number): void {
    this.db.transaction(() => {
      writeLines(this.db, batchId, results);
      finish(this.db, batchId, now);
    })();
  }

  settle(_claim: ClaimedGroup): void {
    // Leases live in the items' rows: nothing else holds a claim.
  }

  release(batchId: string, lines: number[]): void {
    this.db.transaction(() => {
      const update = this.db.prepare(
        `UPDATE items SET state = 'pending', runner = NULL, lease = NULL, leased_until = NULL
         WHERE batch_id = ? AND line = ? AND state = 'leased'`,
      );
      for (const line of lines) update.run(batchId, line);
      finish(this.db, batchId, Date.now());
    })();
  }

  results(owner: string, id: string, o: { after?: string; limit: number }): ResultsPage | undefined {
    const after = parseCursor(o.after);
    return this.db.transaction(() => {
      const r = this.owned(owner, id);
      if (!r) return undefined;
      const rows = this.db
        .prepare('SELECT seq, result FROM results WHERE batch_id = ? AND seq > ? ORDER BY seq LIMIT ?')
        .all(id, after, o.limit + 1) as Array<{ seq: number; result: string }>;
      const page = rows.slice(0, o.limit);
      const out: ResultsPage = { lines: page.map((x) => x.result), done: false };
      if (page.length > 0) out.cursor = String(page[page.length - 1]!.seq);
      out.done = ended(r) && rows.length <= o.limit;
      return out;
    })();
  }

  resultsRead(owner: string, id: string, now: number): void {
    this.db.transaction(() => {
      const r = this.owned(owner, id);
      if (!r || !ended(r)) return;
      this.db.prepare('UPDATE batches SET results_read_ms = ? WHERE id = ?').run(now, id);
      this.db.prepare('DELETE FROM items WHERE batch_id = ?').run(id);
    })();
  }

  sweep(now: number, o: { keepMs: number; keepReadMs: number }): string[] {
    const deleted = this.db.transaction(() => sweep(this.db, now, o))();
    if (deleted.length > 0) this.db.pragma('wal_checkpoint(TRUNCATE)');
    return deleted;
  }

  counts(): { batches: Partial<Record<BatchStatus, number>>; pending: number; leased: number } {
    const rows = this.db.prepare('SELECT status, COUNT(*) AS n FROM batches GROUP BY status').all() as Array<{
      status: BatchStatus;
      n: number;
    }>;
    const items = this.db
      .prepare(`SELECT state, COUNT(*) AS n FROM items WHERE state <> 'done' GROUP BY state`)
      .all() as Array<{ state: string; n: number }>;
    const n = (state: string): number => items.find((i) => i.state === state)?.n ?? 0;
    return {
      batches: Object.fromEntries(rows.map((r) => [r.status, r.n])),
      pending: n('pending'),
      leased: n('leased'),
    };
  }
}
