// The batch store on PostgreSQL, shared by replicas: the same tables as the embedded store
// (schema.ts) and pg-boss as the queue of groups (pg-queue.ts). A batch's row is the lock that
// orders changes to it: every transaction takes the job first (when it has one), then the batch's
// row, then its items, so two replicas never wait on each other in a circle (claims: pg-claims.ts;
// answered lines and retention: pg-lines.ts; reads: pg-reads.ts).
import pg from 'pg';
import type {
  BatchError,
  BatchRecord,
  BatchStatus,
  BatchStore,
  ClaimedGroup,
  ClaimOptions,
  ItemResult,
  NewBatch,
  NewItem,
  ResultsPage,
} from './store.js';
import { ENDED, readingIn, schemaStatements, toRecord, type BatchRow } from './schema.js';
import { GroupQueue } from './pg-queue.js';
import { encodeText, finish, lockBatch, remove, sweep, writeResults, type Tx } from './pg-lines.js';
import { claimGroup, settleClaim } from './pg-claims.js';
import { countAll, listBatches, ownedBatch, resultsPage } from './pg-reads.js';

export interface PgStoreOptions {
  /** A PostgreSQL connection string. */
  url: string;
  /** This replica's name (connections carry it as their application_name). */
  replicaId: string;
  /** How often pg-boss moves expired jobs back to the queue (seconds; default 30). */
  maintenanceIntervalSeconds?: number;
}

export class PgBatchStore implements BatchStore {
  private readonly pool: pg.Pool;
  readonly queue: GroupQueue;
  private failure: Error | undefined;

  constructor(o: PgStoreOptions) {
    const bigint = (oid: number, format?: string): ((v: string) => unknown) =>
      oid === 20 ? Number : (pg.types.getTypeParser(oid, format as 'text') as (v: string) => unknown);
    this.pool = new pg.Pool({
      connectionString: o.url,
      application_name: `assay-${o.replicaId}`,
      max: 4,
      types: { getTypeParser: bigint } as pg.CustomTypesConfig,
    });
    this.pool.on('error', (e) => (this.failure = e));
    this.queue = new GroupQueue({ ...o, maintenanceIntervalSeconds: o.maintenanceIntervalSeconds ?? 30 });
    this.queue.boss.on('error', (e) => (this.failure = e));
  }

  /** False while PostgreSQL cannot be reached (the last call or the queue failed to), until a call succeeds. */
  healthy(): boolean {
    return this.failure === undefined;
  }

  /** `work`'s outcome, noted for healthy(): a connection failure, or a success. */
  private async track<T>(work: Promise<T>): Promise<T> {
    try {
      const out = await work;
      this.failure = undefined;
      return out;
    } catch (e) {
      // SQLSTATE classes 08 (connection) and 57 (shutdown), a socket's errno, or the client's own
      // connection errors: PostgreSQL is out of reach (not a query's fault).
      const { code, message } = e as { code?: string; message?: string };
      const unreachable =
        code === undefined ? /connect|terminat|timeout/i.test(message ?? '') : /^(08|57|E[A-Z]+$)/.test(code);
      if (unreachable) this.failure = e as Error;
      throw e;
    }
  }

  async open(): Promise<void> {
    await this.tx(async (c) => {
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('assay-batches-schema'))`);
      for (const s of schemaStatements('pg')) await c.query(s);
      await c.query('CREATE TABLE IF NOT EXISTS batch_clock (id INTEGER PRIMARY KEY, tag BIGINT NOT NULL)');
      await c.query('INSERT INTO batch_clock VALUES (1, 0) ON CONFLICT DO NOTHING');
    });
    await this.queue.start();
  }

  private tx<T>(work: (c: Tx) => Promise<T>): Promise<T> {
    return this.track(
      (async () => {
        const c = await this.pool.connect();
        // A connection that fails while checked out emits 'error' with no query to reject: noted,
        // and the client is destroyed on release (never handed out again with a dead socket).
        let broken: Error | undefined;
        const onError = (e: Error) => (broken = e);
        c.on('error', onError);
        try {
          await c.query('BEGIN');
          const out = await work(c);
          await c.query('COMMIT');
          return out;
        } catch (e) {
          await c.query('ROLLBACK').catch((r: Error) => (broken ??= r));
          throw e;
        } finally {
          c.off('error', onError);
          c.release(broken ?? false);
        }
      })(),
    );
  }

  create(b: NewBatch): Promise<{ batch: BatchRecord; created: boolean }> {
    return this.tx(async (c) => {
      const { rows } = await c.query<BatchRow>(
        `INSERT INTO batches (id, owner, status, created_ms, expires_ms, idempotency_key, content_hash, metadata, cache_scope)
         VALUES ($1, $2, 'validating', $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING *`,
        [
          b.id,
          b.owner,
          b.createdAt * 1000,
          b.expiresAt * 1000,
          b.idempotencyKey ?? null,
          b.contentHash ?? null,
          b.metadata ? JSON.stringify(b.metadata) : null,
          b.cacheScope ?? null,
        ],
      );
      if (rows[0]) return { batch: toRecord(rows[0]), created: true };
      const same = b.idempotencyKey
        ? (
            await c.query<BatchRow>('SELECT * FROM batches WHERE owner = $1 AND idempotency_key = $2', [
              b.owner,
              b.idempotencyKey,
            ])
          ).rows[0]
        : undefined;
      if (!same) throw new Error(`batch id ${b.id} exists`);
      return { batch: toRecord(same), created: false };
    });
  }

  addItems(batchId: string, items: NewItem[], invalid: ItemResult[]): Promise<void> {
    return this.tx(async (c) => {
      if (!readingIn(await lockBatch(c, batchId))) return;
      await c.query(
        `INSERT INTO items (batch_id, line, custom_id, grp, body, state)
         SELECT $1, l, cid, g, body, 'pending' FROM unnest($2::int[], $3::text[], $4::text[], $5::text[]) AS x (l, cid, g, body)`,
        [
          batchId,
          items.map((i) => i.line),
          items.map((i) => encodeText(i.customId)),
          items.map((i) => encodeText(i.group)),
          items.map((i) => i.body),
        ],
      );
      const lines = invalid.map((r) => r.line);
      await c.query(
        `INSERT INTO items (batch_id, line, custom_id, grp, body, state) SELECT $1, l, '', '', '', 'done' FROM unnest($2::int[]) AS l`,
        [batchId, lines],
      );
      await c.query(
        `INSERT INTO results (batch_id, line, result, ok) SELECT $1, l, r, 0 FROM unnest($2::int[], $3::text[]) AS x (l, r)`,
        [batchId, lines, invalid.map((r) => r.result)],
      );
      await c.query('UPDATE batches SET failed = failed + $2 WHERE id = $1', [batchId, invalid.length]);
    });
  }

  start(batchId: string, now: number): Promise<void> {
    return this.tx(async (c) => {
      // A batch cancelled while validating starts as cancelling: every line read in is then cancelled.
      const r = await lockBatch(c, batchId);
      if (!readingIn(r)) return;
      await c.query(
        `UPDATE batches SET status = CASE status WHEN 'validating' THEN 'in_progress' ELSE status END,
           in_progress_ms = $2, total = (SELECT COUNT(*) FROM items WHERE batch_id = $1) WHERE id = $1`,
        [batchId, now],
      );
      if (r!.status !== 'validating') return finish(c, batchId, now);
      const groups = await c.query<{ grp: string }>(
        `SELECT grp FROM items WHERE batch_id = $1 AND state = 'pending' GROUP BY grp ORDER BY MIN(line)`,
        [batchId],
      );
      await this.queue.enqueue(
        c,
        batchId,
        groups.rows.map((g) => g.grp),
      );
      await finish(c, batchId, now);
    });
  }

  fail(batchId: string, errors: BatchError[], now: number): Promise<void> {
    return this.tx(async (c) => {
      if (!readingIn(await lockBatch(c, batchId))) return;
      await c.query(`UPDATE batches SET status = 'failed', failed_ms = $2, ended_ms = $2, errors = $3 WHERE id = $1`, [
        batchId,
        now,
        JSON.stringify(errors),
      ]);
      await c.query('DELETE FROM items WHERE batch_id = $1', [batchId]);
      await c.query('DELETE FROM results WHERE batch_id = $1', [batchId]);
    });
  }

  async get(owner: string, id: string): Promise<BatchRecord | undefined> {
    const r = await this.track(ownedBatch(this.pool, owner, id));
    return r && toRecord(r);
  }

  list(owner: string, o: { after?: string; limit: number }): Promise<{ data: BatchRecord[]; hasMore: boolean }> {
    return this.track(listBatches(this.pool, owner, o));
  }

  cancel(owner: string, id: string, now: number): Promise<BatchRecord | undefined> {
    return this.tx(async (c) => {
      const r = await lockBatch(c, id);
      if (!r || r.owner !== owner) return undefined;
      if (r.status === 'validating' || r.status === 'in_progress') {
        await c.query(`UPDATE batches SET status = 'cancelling', cancelling_ms = $2 WHERE id = $1`, [id, now]);
        await finish(c, id, now);
      }
      return toRecord((await lockBatch(c, id))!);
    });
  }

  delete(owner: string, id: string): Promise<boolean> {
    return this.tx(async (c) => {
      const r = await lockBatch(c, id);
      if (!r || r.owner !== owner) return false;
      await remove(c, this.queue, id);
      return true;
    });
  }

  claim(runner: string, o: ClaimOptions): Promise<ClaimedGroup | undefined> {
    return this.tx((c) => claimGroup(c, this.queue, runner, o));
  }

  settle(claim: ClaimedGroup): Promise<void> {
    return this.tx((c) => settleClaim(c, this.queue, claim));
  }

  complete(batchId: string, results: ItemResult[], now: number): Promise<void> {
    return this.tx(async (c) => {
      if (!(await lockBatch(c, batchId))) return;
      await writeResults(c, batchId, results);
      await finish(c, batchId, now);
    });
  }

  release(batchId: string, lines: number[]): Promise<void> {
    return this.tx(async (c) => {
      if (!(await lockBatch(c, batchId))) return;
      await c.query(
        `UPDATE items SET state = 'pending', runner = NULL, lease = NULL, leased_until = NULL
         WHERE batch_id = $1 AND line = ANY($2::int[]) AND state = 'leased'`,
        [batchId, lines],
      );
      await finish(c, batchId, Date.now());
    });
  }

  results(owner: string, id: string, o: { after?: string; limit: number }): Promise<ResultsPage | undefined> {
    return this.track(resultsPage(this.pool, owner, id, o));
  }

  resultsRead(owner: string, id: string, now: number): Promise<void> {
    return this.tx(async (c) => {
      const r = await lockBatch(c, id);
      if (!r || r.owner !== owner || !ENDED.includes(r.status as BatchStatus)) return;
      await c.query('UPDATE batches SET results_read_ms = $2 WHERE id = $1', [id, now]);
      await c.query('DELETE FROM items WHERE batch_id = $1', [id]);
    });
  }

  async sweep(now: number, o: { keepMs: number; keepReadMs: number }): Promise<string[]> {
    return sweep(this.pool, (work) => this.tx(work), this.queue, now, o);
  }

  counts(): Promise<{ batches: Partial<Record<BatchStatus, number>>; pending: number; leased: number }> {
    return this.track(countAll(this.pool));
  }

  async close(): Promise<void> {
    await this.queue.stop();
    await this.pool.end();
  }
}

/** Opens the store on PostgreSQL at `url` (creates its tables and pg-boss's schema when missing). */
export async function openPgStore(o: PgStoreOptions): Promise<PgBatchStore> {
  const store = new PgBatchStore(o);
  try {
    await store.open();
  } catch (e) {
    await store.close().catch(() => undefined);
    throw new Error(`cannot open the batch store on PostgreSQL: ${(e as Error).message}`, { cause: e });
  }
  return store;
}
