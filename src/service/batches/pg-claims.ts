// Claims on PostgreSQL (pg-store.ts), each in the caller's transaction: a claim fetches a group's
// job from the queue and leases that group's claimable items (FOR UPDATE SKIP LOCKED: two replicas
// never lease the same line); a job whose group has nothing left to lease is completed and the next
// one fetched. A runner's preferred groups (states it holds) are fetched first. When the queue has none, a claim takes over a group whose lease ran out (by the
// caller's clock) while its job is still active, without waiting for pg-boss's maintenance to expire
// that job. Settling completes the job and queues the group again while it has pending items.
import type { ClaimedGroup, ClaimOptions } from './store.js';
import type { GroupQueue } from './pg-queue.js';
import { decodeText, encodeText, lockBatch, type Tx } from './pg-lines.js';

/** Jobs fetched and found empty (their lines done or leased) before a claim gives up for now. */
const STALE_JOBS = 16;

export async function claimGroup(
  c: Tx,
  queue: GroupQueue,
  runner: string,
  o: ClaimOptions,
): Promise<ClaimedGroup | undefined> {
  for (let i = 0; i < STALE_JOBS; i++) {
    // A group whose state this runner holds first; then the queue's order.
    const preferred = o.prefer?.length && i === 0 ? await queue.fetch(c, o.prefer.map(encodeText)) : undefined;
    const job = preferred ?? (await queue.fetch(c));
    if (!job) break;
    const claim = await leaseGroup(c, job.data.batchId, job.data.group, job.id, runner, o);
    if (claim) {
      await queue.leased(c, job.id, job.turn, o.leaseMs);
      return claim;
    }
    await queue.complete(c, job.id);
  }
  const { rows } = await c.query<{ batch_id: string; grp: string; lease: string }>(
    `SELECT i.batch_id, i.grp, i.lease FROM items i JOIN batches b ON b.id = i.batch_id
     WHERE b.status = 'in_progress' AND i.state = 'leased' AND i.leased_until <= $1
     ORDER BY i.leased_until LIMIT 1`,
    [o.now],
  );
  const stale = rows[0];
  return stale && leaseGroup(c, stale.batch_id, stale.grp, stale.lease, runner, o);
}

/** Leases claimable items of `group` (as kept: encodeText) under `lease`. */
async function leaseGroup(
  c: Tx,
  batchId: string,
  group: string,
  lease: string,
  runner: string,
  o: ClaimOptions,
): Promise<ClaimedGroup | undefined> {
  const batch = await lockBatch(c, batchId);
  if (batch?.status !== 'in_progress') return undefined;
  const { rows: items } = await c.query<{ line: number; customId: string; body: string }>(
    `SELECT line, custom_id AS "customId", body FROM items
     WHERE batch_id = $1 AND grp = $2 AND (state = 'pending' OR (state = 'leased' AND leased_until <= $3))
     ORDER BY line LIMIT $4 FOR UPDATE SKIP LOCKED`,
    [batchId, group, o.now, o.maxItems],
  );
  if (items.length === 0) return undefined;
  await c.query(
    `UPDATE items SET state = 'leased', runner = $3, lease = $4, leased_until = $5
     WHERE batch_id = $1 AND line = ANY($2::int[])`,
    [batchId, items.map((i) => i.line), runner, lease, o.now + o.leaseMs],
  );
  const claim: ClaimedGroup = {
    lease,
    batchId,
    owner: batch.owner,
    group: decodeText(group),
    items: items.map((i) => ({ ...i, customId: decodeText(i.customId) })),
  };
  if (batch.cache_scope !== null) claim.cacheScope = batch.cache_scope;
  return claim;
}

export async function settleClaim(c: Tx, queue: GroupQueue, claim: ClaimedGroup): Promise<void> {
  await queue.complete(c, claim.lease);
  if ((await lockBatch(c, claim.batchId))?.status !== 'in_progress') return;
  const { rows } = await c.query(`SELECT 1 FROM items WHERE batch_id = $1 AND grp = $2 AND state = 'pending' LIMIT 1`, [
    claim.batchId,
    encodeText(claim.group),
  ]);
  if (rows.length > 0) await queue.enqueue(c, claim.batchId, [encodeText(claim.group)]);
}
