// The batch store on PostgreSQL beyond the shared contract (store.test.ts), on a real cluster: two
// replicas drain one queue without ever leasing the same line, and a replica that stops mid-claim
// loses nothing (pg-boss expires its job, and the other replica fetches it again).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BatchCursorError,
  BatchStoreUnavailableError,
  type BatchStore,
  type ClaimedGroup,
} from '../../src/service/batches/index.js';
import { pgEngine } from './harness.js';
import { postgresBinDir, startPostgres } from '../helpers/postgres.js';
import { openPgStore } from '../../src/service/batches/pg-store.js';

const missing = postgresBinDir() ? undefined : 'no PostgreSQL binaries under /usr/lib/postgresql';
if (missing) console.log(`batch store replicas on PostgreSQL skipped: ${missing}`);
const engine = pgEngine(missing);

async function startedBatch(store: BatchStore, id: string, groups: number, perGroup: number): Promise<number> {
  const now = Date.now();
  await store.create({ id, owner: 'o', createdAt: Math.floor(now / 1000), expiresAt: Math.floor(now / 1000) + 3600 });
  const items = [];
  for (let line = 1; line <= groups * perGroup; line++) {
    items.push({ line, customId: `c${line}`, group: `g${line % groups}`, body: `{"line":${line}}` });
  }
  await store.addItems(id, items, []);
  await store.start(id, now);
  return items.length;
}

describe.skipIf(missing)('batch store replicas on PostgreSQL', () => {
  beforeAll(() => engine.setup());
  afterAll(() => engine.teardown());

  it('two replicas drain one queue without ever leasing the same line', async () => {
    const h = await engine.open();
    try {
      const replicas = [h.store, await h.another()];
      const total = await startedBatch(h.store, 'b', 8, 5);
      const leased: number[] = [];
      const claims = [0, 0];
      const drain = async (store: BatchStore, r: number): Promise<void> => {
        for (;;) {
          const claim = await store.claim(`replica-${r}`, { maxItems: 3, leaseMs: 60_000, now: Date.now() });
          if (!claim) return;
          claims[r]!++;
          leased.push(...claim.items.map((i) => i.line));
          const results = claim.items.map((i) => ({
            line: i.line,
            result: `{"custom_id":"${i.customId}"}`,
            ok: true,
            inputTokens: 1,
          }));
          await store.complete(claim.batchId, results, Date.now());
          await store.settle(claim);
        }
      };
      await Promise.all(replicas.map((s, r) => drain(s, r)));
      console.log(`claims per replica: ${claims.join(', ')}`);
      expect(leased.length).toBe(total);
      expect(new Set(leased).size).toBe(total);
      expect(await h.store.get('o', 'b')).toMatchObject({ status: 'completed', completed: total });
      const page = await replicas[1]!.results('o', 'b', { limit: 100 });
      expect(page).toMatchObject({ done: true });
      expect(page!.lines).toHaveLength(total);
    } finally {
      await h.close();
    }
  });

  it('a replica that stops mid-claim loses nothing: its job expires and another replica takes it', async () => {
    const h = await engine.open();
    const dead = await h.another();
    try {
      await startedBatch(h.store, 'b', 1, 4);
      const first = (await dead.claim('dying', { maxItems: 10, leaseMs: 1000, now: Date.now() })) as ClaimedGroup;
      expect(first.items.map((i) => i.line)).toEqual([1, 2, 3, 4]);
      await dead.close(); // no settle, no release
      expect(await h.store.claim('alive', { maxItems: 10, leaseMs: 60_000, now: Date.now() })).toBeUndefined();

      // pg-boss's maintenance (every second here) moves the expired job back to the queue.
      let state = '';
      for (let i = 0; state !== 'retry'; i++) {
        expect(i).toBeLessThan(100);
        await new Promise((r) => setTimeout(r, 200));
        state = await h.jobState(first.lease);
      }
      const second = await h.store.claim('alive', { maxItems: 10, leaseMs: 60_000, now: Date.now() });
      expect(second).toMatchObject({ lease: first.lease, batchId: 'b', items: first.items });
      expect(await h.jobState(first.lease)).toBe('active');
      const results = second!.items.map((i) => ({
        line: i.line,
        result: `{"custom_id":"${i.customId}"}`,
        ok: true,
        inputTokens: 1,
      }));
      await h.store.complete('b', results, Date.now());
      await h.store.settle(second!);
      expect(await h.jobState(first.lease)).toBe('completed');
      expect(await h.store.get('o', 'b')).toMatchObject({ status: 'completed', completed: 4 });
    } finally {
      await h.close();
    }
  });

  it('says PostgreSQL is out of reach (BatchStoreUnavailableError) only when it is, and answers again once it is back', async () => {
    const server = await startPostgres();
    let store: Awaited<ReturnType<typeof openPgStore>> | undefined;
    try {
      store = await openPgStore({ url: server.url, replicaId: 'r' });
      expect(await store.get('o', 'none')).toBeUndefined();
      // A query's own failure is not an outage.
      const cursor = await store.results('o', 'none', { after: 'x', limit: 1 }).catch((e: unknown) => e);
      expect(cursor).toBeInstanceOf(BatchCursorError);
      await server.halt();
      const away = await store.get('o', 'none').catch((e: unknown) => e);
      expect(away).toBeInstanceOf(BatchStoreUnavailableError);
      expect((away as Error).message).toMatch(/PostgreSQL/);
      await server.resume();
      // The same store reconnects: no reopen.
      expect(await store.get('o', 'none')).toBeUndefined();
    } finally {
      await store?.close().catch(() => undefined);
      await server.stop().catch(() => undefined);
    }
  });
});
