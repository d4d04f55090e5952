// The queue replicas share, on pg-boss (PostgreSQL): one job per (batch, group) of pending items.
// A claim fetches a job and leases its group's items in the same transaction; settling completes
// the job. A job's expiry is the claim's lease: the job of a replica that died mid-claim expires
// (pg-boss's maintenance moves it to retry) and is fetched by another replica. Batches take turns:
// a job's priority is minus its turn (pg-boss fetches the highest priority first, then the oldest),
// and a batch's next turn is the later of its own last turn and the turn the queue has reached, so a
// new batch runs next to those already running instead of behind them or ahead of them all.
import PgBoss from 'pg-boss';
import type pg from 'pg';

export const QUEUE = 'assay-batch-groups';

/** What a job names: a group of one batch. */
export interface GroupJob {
  batchId: string;
  /** As the items table keeps it (its JSON text). */
  group: string;
}

/** pg-boss's own statements run on a client inside the store's transaction. */
export function onClient(client: pg.PoolClient): PgBoss.Db {
  return { executeSql: async (text, values) => client.query(text, values) };
}

export interface QueueOptions {
  url: string;
  replicaId: string;
  /** How often pg-boss looks for expired jobs (seconds, at least 1). */
  maintenanceIntervalSeconds: number;
}

export class GroupQueue {
  readonly boss: PgBoss;

  constructor(o: QueueOptions) {
    this.boss = new PgBoss({
      connectionString: o.url,
      application_name: `assay-${o.replicaId}-queue`,
      max: 2,
      schedule: false,
      supervise: true,
      migrate: true,
      maintenanceIntervalSeconds: o.maintenanceIntervalSeconds,
    });
  }

  async start(): Promise<void> {
    await this.boss.start();
    // A lease that runs out makes its job fetchable again, as often as that happens.
    await this.boss.createQueue(QUEUE, { name: QUEUE, retryLimit: 1_000_000, retryDelay: 0 });
  }

  stop(): Promise<void> {
    return this.boss.stop({ graceful: false, wait: true, close: true });
  }

  /** Queues one job per group, in order, after the turns already given (batch's and queue's). */
  async enqueue(client: pg.PoolClient, batchId: string, groups: string[]): Promise<void> {
    if (groups.length === 0) return;
    const { rows } = await client.query<{ base: number }>(
      `SELECT GREATEST(b.turn, c.tag) AS base FROM batches b, batch_clock c WHERE b.id = $1`,
      [batchId],
    );
    const base = rows[0]?.base ?? 0;
    await this.boss.insert(
      groups.map((group, i) => ({ name: QUEUE, data: { batchId, group }, priority: -(base + i + 1) })),
      { db: onClient(client) },
    );
    await client.query('UPDATE batches SET turn = $2 WHERE id = $1', [batchId, base + groups.length]);
  }

  /**
   * The next job (active now, until its expiry), or undefined; of `groups` only (as kept: their
   * JSON text) when given. pg-boss fetches by queue alone, so a fetch by group is its fetch
   * statement narrowed to the groups (the job's state, start, retry count as pg-boss sets them).
   */
  async fetch(
    client: pg.PoolClient,
    groups?: string[],
  ): Promise<{ id: string; data: GroupJob; turn: number } | undefined> {
    if (!groups) {
      const [job] = await this.boss.fetch<GroupJob>(QUEUE, {
        batchSize: 1,
        includeMetadata: true,
        db: onClient(client),
      });
      return job && { id: job.id, data: job.data, turn: -job.priority };
    }
    const { rows } = await client.query<{ id: string; data: GroupJob; priority: number }>(
      `WITH next AS (
         SELECT id FROM pgboss.job
         WHERE name = $1 AND state < 'active' AND start_after < now() AND data->>'group' = ANY($2::text[])
         ORDER BY priority DESC, created_on, id LIMIT 1 FOR UPDATE SKIP LOCKED)
       UPDATE pgboss.job j SET state = 'active', started_on = now(),
         retry_count = CASE WHEN started_on IS NOT NULL THEN retry_count + 1 ELSE retry_count END
       FROM next WHERE j.name = $1 AND j.id = next.id
       RETURNING j.id, j.data, j.priority`,
      [QUEUE, groups],
    );
    const job = rows[0];
    return job && { id: job.id, data: job.data, turn: -job.priority };
  }

  /** The job a claim leased its items under: it expires with the lease; the queue reached its turn. */
  async leased(client: pg.PoolClient, id: string, turn: number, leaseMs: number): Promise<void> {
    await client.query(`UPDATE pgboss.job SET expire_in = $3 * interval '1 millisecond' WHERE name = $1 AND id = $2`, [
      QUEUE,
      id,
      Math.max(1000, leaseMs),
    ]);
    await client.query('UPDATE batch_clock SET tag = GREATEST(tag, $1)', [turn]);
  }

  async complete(client: pg.PoolClient, id: string): Promise<void> {
    await this.boss.complete(QUEUE, id, null as unknown as object, { db: onClient(client) });
  }

  /** Forgets a deleted batch's jobs (their data names it and its groups). */
  async forget(client: pg.PoolClient, batchId: string): Promise<void> {
    await client.query(`DELETE FROM pgboss.job WHERE name = $1 AND data->>'batchId' = $2`, [QUEUE, batchId]);
    await client.query(`DELETE FROM pgboss.archive WHERE name = $1 AND data->>'batchId' = $2`, [QUEUE, batchId]);
  }
}
