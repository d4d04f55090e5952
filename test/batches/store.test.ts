// The batch store's contract, run against both engines (the embedded SQLite file and PostgreSQL
// with pg-boss, a real cluster started here): batches, idempotency, claims that take turns, leases
// that run out, lines answered exactly once, cancel, results paged while the batch runs, retention
// (content gone from the store's files and tables), owner isolation.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BatchCursorError, type BatchStore, type ItemResult, type NewItem } from '../../src/service/batches/index.js';
import { pgEngine, sqliteEngine, type Harness } from './harness.js';
import { postgresBinDir } from '../helpers/postgres.js';

const pgMissing = postgresBinDir() ? undefined : 'no PostgreSQL binaries under /usr/lib/postgresql';
if (pgMissing) console.log(`batch store on PostgreSQL skipped: ${pgMissing}`);

/** Unix milliseconds the tests' clock starts at. */
const T = 1_800_000_000_000;
const OWNER = 'owner-a';
let ids = 0;

function item(line: number, group: string, text = `text ${line}`): NewItem {
  return { line, customId: `c${line}`, group, body: JSON.stringify({ model: 'm', text }) };
}

function ok(line: number, extra = ''): ItemResult {
  return {
    line,
    result: JSON.stringify({ custom_id: `c${line}`, response: { status_code: 200, body: extra } }),
    ok: true,
    inputTokens: 3,
  };
}

/** A batch started with `items`, created `at` (unix ms), expiring a day later. */
async function started(store: BatchStore, items: NewItem[], at = T, owner = OWNER): Promise<string> {
  const id = `batch_${String(++ids).padStart(6, '0')}`;
  await store.create({ id, owner, createdAt: at / 1000, expiresAt: at / 1000 + 86_400 });
  await store.addItems(id, items, []);
  await store.start(id, at);
  return id;
}

async function allResults(store: BatchStore, id: string, owner = OWNER): Promise<string[]> {
  const page = await store.results(owner, id, { limit: 1000 });
  return page!.lines;
}

describe.each([sqliteEngine(), pgEngine(pgMissing)])('batch store on $name', (engine) => {
  let h: Harness;
  let store: BatchStore;
  const test = engine.missing ? it.skip : it;

  beforeAll(async () => {
    if (!engine.missing) await engine.setup();
  });
  afterAll(async () => {
    if (!engine.missing) await engine.teardown();
  });
  const open = async (): Promise<void> => {
    h = await engine.open();
    store = h.store;
  };
  afterEach(async () => {
    await h?.close();
  });

  test('create: the same idempotency key gives the same batch, created false', async () => {
    await open();
    const a = await store.create({
      id: 'batch_a',
      owner: OWNER,
      createdAt: T / 1000,
      expiresAt: T / 1000 + 60,
      idempotencyKey: 'k1',
      contentHash: 'h1',
      metadata: { x: 'y' },
    });
    expect(a.created).toBe(true);
    expect(a.batch).toMatchObject({
      id: 'batch_a',
      status: 'validating',
      total: 0,
      completed: 0,
      failed: 0,
      contentHash: 'h1',
      metadata: { x: 'y' },
      createdAt: T / 1000,
    });
    const again = await store.create({
      id: 'batch_b',
      owner: OWNER,
      createdAt: T / 1000 + 1,
      expiresAt: T / 1000 + 61,
      idempotencyKey: 'k1',
      contentHash: 'h2',
    });
    expect(again.created).toBe(false);
    expect(again.batch.id).toBe('batch_a');
    expect(again.batch.contentHash).toBe('h1');
    // Another owner's key is another key.
    const other = await store.create({
      id: 'batch_c',
      owner: 'owner-b',
      createdAt: T / 1000,
      expiresAt: T / 1000 + 60,
      idempotencyKey: 'k1',
    });
    expect(other.created).toBe(true);
    expect(await store.get(OWNER, 'batch_b')).toBeUndefined();
  });

  test('addItems and start count the lines; a batch of invalid lines only completes at once', async () => {
    await open();
    await store.create({ id: 'b1', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.addItems(
      'b1',
      [item(1, 'g'), item(3, 'g')],
      [{ line: 2, result: '{"custom_id":"c2","error":{"code":"invalid"}}', ok: false, inputTokens: 0 }],
    );
    await store.addItems('b1', [item(4, 'h')], []);
    expect((await store.get(OWNER, 'b1'))!.status).toBe('validating');
    await store.start('b1', T + 5000);
    expect(await store.get(OWNER, 'b1')).toMatchObject({
      status: 'in_progress',
      total: 4,
      completed: 0,
      failed: 1,
      inProgressAt: T / 1000 + 5,
    });
    expect(await store.counts()).toMatchObject({ batches: { in_progress: 1 }, pending: 3, leased: 0 });
    expect(await allResults(store, 'b1')).toEqual(['{"custom_id":"c2","error":{"code":"invalid"}}']);

    await store.create({ id: 'b2', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.addItems('b2', [], [{ line: 1, result: '{"custom_id":"x"}', ok: false, inputTokens: 0 }]);
    await store.start('b2', T);
    expect(await store.get(OWNER, 'b2')).toMatchObject({ status: 'completed', total: 1, failed: 1 });

    await store.create({ id: 'b3', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.addItems('b3', [item(1, 'g')], []);
    await store.fail('b3', [{ code: 'duplicate_custom_id', message: 'c1 twice', line: 2 }], T);
    expect(await store.get(OWNER, 'b3')).toMatchObject({
      status: 'failed',
      errors: [{ code: 'duplicate_custom_id', line: 2 }],
    });
    expect(await store.claim('r', { maxItems: 10, leaseMs: 1000, now: T })).toMatchObject({ batchId: 'b1' });
  });

  test('a claim leases one group, and batches take turns', async () => {
    await open();
    const a = await started(store, [item(1, 'g1'), item(2, 'g2'), item(3, 'g1'), item(4, 'g2')], T);
    const b = await started(store, [item(1, 'g1'), item(2, 'g1'), item(3, 'g2'), item(4, 'g2')], T + 1000);
    const claims = [];
    for (let i = 0; i < 4; i++)
      claims.push(await store.claim(`r${i}`, { maxItems: 10, leaseMs: 60_000, now: T + 2000 }));
    expect(claims.map((c) => [c!.batchId, c!.group, c!.items.map((x) => x.line)])).toEqual([
      [a, 'g1', [1, 3]],
      [b, 'g1', [1, 2]],
      [a, 'g2', [2, 4]],
      [b, 'g2', [3, 4]],
    ]);
    expect(claims[0]!.items[0]).toEqual({ line: 1, customId: 'c1', body: item(1, 'g1').body });
    expect(claims[0]!.owner).toBe(OWNER);
    expect(await store.claim('r', { maxItems: 10, leaseMs: 60_000, now: T + 2000 })).toBeUndefined();
    expect(await store.counts()).toMatchObject({ pending: 0, leased: 8 });
    // At most maxItems: the rest of the group is claimed next, once the claim is settled.
    const c = await started(store, [item(1, 'g'), item(2, 'g'), item(3, 'g')], T + 3000);
    const first = await store.claim('r', { maxItems: 2, leaseMs: 60_000, now: T + 4000 });
    expect(first).toMatchObject({ batchId: c, items: [{ line: 1 }, { line: 2 }] });
    await store.complete(c, [ok(1), ok(2)], T + 4000);
    await store.settle(first!);
    const rest = await store.claim('r', { maxItems: 2, leaseMs: 60_000, now: T + 5000 });
    expect(rest).toMatchObject({ batchId: c, items: [{ line: 3 }] });
  });

  test("a runner's preferred groups (states it holds) are claimed first", async () => {
    await open();
    const lines = (from: number, to: number, group: string): NewItem[] =>
      Array.from({ length: to - from + 1 }, (_, i) => item(from + i, group));
    const id = await started(store, [...lines(1, 6, 'g1'), ...lines(7, 9, 'g2'), ...lines(10, 12, 'g3')]);
    const home = await store.claim('r1', { maxItems: 3, leaseMs: 60_000, now: T, prefer: ['g3', 'elsewhere'] });
    expect(home).toMatchObject({ batchId: id, group: 'g3', items: [{ line: 10 }, { line: 11 }, { line: 12 }] });
    // A preferred group with nothing left to claim: the usual order.
    const next = await store.claim('r1', { maxItems: 3, leaseMs: 60_000, now: T, prefer: ['g3'] });
    expect(next).toMatchObject({ group: 'g1', items: [{ line: 1 }, { line: 2 }, { line: 3 }] });
    await store.complete(id, [ok(1), ok(2), ok(3)], T);
    await store.settle(next!);
    const rest = await store.claim('r2', { maxItems: 3, leaseMs: 60_000, now: T, prefer: ['g1'] });
    expect(rest).toMatchObject({ group: 'g1', items: [{ line: 4 }, { line: 5 }, { line: 6 }] });
  });

  test('a lease that runs out makes its items claimable again; each line is answered once', async () => {
    await open();
    const id = await started(store, [item(1, 'g'), item(2, 'g')]);
    const first = await store.claim('r1', { maxItems: 10, leaseMs: 1000, now: T });
    expect(first!.items.map((i) => i.line)).toEqual([1, 2]);
    expect(await store.claim('r2', { maxItems: 10, leaseMs: 1000, now: T + 500 })).toBeUndefined();
    const second = await store.claim('r2', { maxItems: 10, leaseMs: 1000, now: T + 1001 });
    expect(second).toMatchObject({ batchId: id, items: [{ line: 1 }, { line: 2 }] });
    // Both runners answer: the first answer of each line is kept, once.
    await store.complete(id, [ok(1, 'first')], T + 1100);
    await store.complete(id, [ok(1, 'second'), ok(2, 'second')], T + 1200);
    await store.complete(id, [ok(2, 'first')], T + 1300);
    await store.settle(first!);
    await store.settle(second!);
    const lines = await allResults(store, id);
    expect(lines.map((l) => JSON.parse(l).response.body)).toEqual(['first', 'second']);
    expect(await store.get(OWNER, id)).toMatchObject({
      status: 'completed',
      completed: 2,
      failed: 0,
      completedAt: Math.floor((T + 1200) / 1000),
    });
    expect(await store.claim('r3', { maxItems: 10, leaseMs: 1000, now: T + 9000 })).toBeUndefined();
  });

  test('a group and a custom_id come back as sent, U+0000 and all', async () => {
    await open();
    const group = 'tiny-tasks-1\u0000e3b0c442';
    const customId = 'id \u0000 "quoted" é 🙂';
    const id = await started(store, [
      { line: 1, customId, group, body: '{"text":"a"}' },
      { line: 2, customId: `${customId}2`, group, body: '{"text":"b"}' },
    ]);
    const claim = await store.claim('r', { maxItems: 1, leaseMs: 60_000, now: T });
    expect(claim).toMatchObject({ group, items: [{ line: 1, customId, body: '{"text":"a"}' }] });
    await store.complete(id, [ok(1)], T);
    await store.settle(claim!);
    await store.cancel(OWNER, id, T);
    const lines = (await allResults(store, id)).map((l) => JSON.parse(l));
    expect(lines[1]).toMatchObject({ custom_id: `${customId}2`, error: { code: 'batch_cancelled' } });
  });

  test('released items are pending again', async () => {
    await open();
    const id = await started(store, [item(1, 'g'), item(2, 'g')]);
    const c = await store.claim('r1', { maxItems: 10, leaseMs: 60_000, now: T });
    await store.release(id, [1, 2]);
    await store.settle(c!);
    expect(await store.counts()).toMatchObject({ pending: 2, leased: 0 });
    expect(await store.claim('r2', { maxItems: 10, leaseMs: 60_000, now: T + 1 })).toMatchObject({
      items: [{ line: 1 }, { line: 2 }],
    });
  });

  test('cancel: pending lines get batch_cancelled, leased ones finish, then cancelled', async () => {
    await open();
    const id = await started(store, [item(1, 'g1'), item(2, 'g1'), item(3, 'g2'), item(4, 'g2')]);
    const c = await store.claim('r', { maxItems: 10, leaseMs: 60_000, now: T });
    expect(c!.group).toBe('g1');
    expect(await store.cancel('owner-b', id, T)).toBeUndefined();
    const cancelling = await store.cancel(OWNER, id, T + 1000);
    expect(cancelling).toMatchObject({ status: 'cancelling', cancellingAt: T / 1000 + 1, failed: 2 });
    const lines = (await allResults(store, id)).map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { custom_id: 'c3', error: { code: 'batch_cancelled', message: expect.any(String) } },
      { custom_id: 'c4', error: { code: 'batch_cancelled', message: expect.any(String) } },
    ]);
    expect(await store.claim('r', { maxItems: 10, leaseMs: 60_000, now: T + 1000 })).toBeUndefined();
    await store.complete(id, [ok(1), ok(2)], T + 2000);
    await store.settle(c!);
    expect(await store.get(OWNER, id)).toMatchObject({
      status: 'cancelled',
      completed: 2,
      failed: 2,
      cancelledAt: T / 1000 + 2,
    });
    expect((await store.results(OWNER, id, { limit: 10 }))!.done).toBe(true);
  });

  test('sweep: a cancelling batch whose runner never came back is cancelled once its lease runs out', async () => {
    await open();
    const id = await started(store, [item(1, 'g1'), item(2, 'g2')]);
    await store.claim('gone', { maxItems: 10, leaseMs: 1000, now: T });
    await store.cancel(OWNER, id, T);
    const keep = { keepMs: 3_600_000, keepReadMs: 60_000 };
    await store.sweep(T + 500, keep);
    expect(await store.get(OWNER, id)).toMatchObject({ status: 'cancelling', failed: 1 });
    await store.sweep(T + 1000, keep);
    expect(await store.get(OWNER, id)).toMatchObject({ status: 'cancelled', failed: 2, cancelledAt: T / 1000 + 1 });
    const codes = (await allResults(store, id)).map((l) => JSON.parse(l).error.code);
    expect(codes).toEqual(['batch_cancelled', 'batch_cancelled']);
    // The runner's late answer is not written: the line was answered.
    await store.complete(id, [ok(1)], T + 2000);
    expect(await store.get(OWNER, id)).toMatchObject({ completed: 0, failed: 2 });
  });

  test('cancel while validating: the lines still read in are cancelled at start; validation can still fail it', async () => {
    await open();
    await store.create({ id: 'v', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.addItems('v', [item(1, 'g'), item(2, 'h')], []);
    expect(await store.cancel(OWNER, 'v', T)).toMatchObject({ status: 'cancelling' });
    await store.addItems('v', [item(3, 'g')], []);
    expect(await store.claim('r', { maxItems: 10, leaseMs: 1000, now: T })).toBeUndefined();
    await store.start('v', T + 1000);
    expect(await store.get(OWNER, 'v')).toMatchObject({ status: 'cancelled', total: 3, completed: 0, failed: 3 });
    const lines = (await allResults(store, 'v')).map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.custom_id, l.error.code]).sort()).toEqual([
      ['c1', 'batch_cancelled'],
      ['c2', 'batch_cancelled'],
      ['c3', 'batch_cancelled'],
    ]);
    expect(await store.claim('r', { maxItems: 10, leaseMs: 1000, now: T + 2000 })).toBeUndefined();

    await store.create({ id: 'w', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.addItems('w', [item(1, 'g')], []);
    await store.cancel(OWNER, 'w', T);
    await store.fail('w', [{ code: 'empty_file', message: 'no line' }], T);
    expect(await store.get(OWNER, 'w')).toMatchObject({ status: 'failed' });
  });

  test('results are paged by cursor while the batch runs; done only at the end', async () => {
    await open();
    const id = await started(store, [item(1, 'g'), item(2, 'g'), item(3, 'g'), item(4, 'g')]);
    await store.claim('r', { maxItems: 10, leaseMs: 60_000, now: T });
    await store.complete(id, [ok(3)], T);
    const p1 = await store.results(OWNER, id, { limit: 10 });
    expect(p1).toMatchObject({ lines: [ok(3).result], done: false });
    expect(typeof p1!.cursor).toBe('string');
    await store.complete(id, [ok(1), ok(4)], T);
    const p2 = await store.results(OWNER, id, { after: p1!.cursor, limit: 1 });
    expect(p2).toMatchObject({ lines: [ok(1).result], done: false });
    const p3 = await store.results(OWNER, id, { after: p2!.cursor, limit: 1 });
    expect(p3).toMatchObject({ lines: [ok(4).result], done: false });
    const empty = await store.results(OWNER, id, { after: p3!.cursor, limit: 5 });
    expect(empty).toEqual({ lines: [], done: false });
    await store.complete(id, [ok(2)], T);
    const p4 = await store.results(OWNER, id, { after: p3!.cursor, limit: 1 });
    expect(p4).toMatchObject({ lines: [ok(2).result], done: true });
    expect(await store.results(OWNER, id, { after: p4!.cursor, limit: 1 })).toEqual({ lines: [], done: true });
    // A full last page is done too when nothing follows it.
    expect(await store.results(OWNER, id, { after: p3!.cursor, limit: 1 })).toMatchObject({ done: true });
    await expect(store.results(OWNER, id, { after: 'nope', limit: 1 })).rejects.toBeInstanceOf(BatchCursorError);
    expect(await store.results('owner-b', id, { limit: 1 })).toBeUndefined();
  });

  test('retention: expiry answers batch_expired; read or old batches, and DELETE, leave nothing at rest', async () => {
    await open();
    const canary = (n: string): string => `CANARY-${engine.name}-${n}-7f3a`;
    // Expires unfinished: its lines are answered batch_expired, its content stays until swept.
    await store.create({ id: 'x', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 10 });
    await store.addItems('x', [item(1, 'g', canary('x')), item(2, 'g', canary('x'))], []);
    await store.start('x', T);
    await store.complete('x', [ok(1, canary('x'))], T);
    // Completed and read.
    const y = await started(store, [item(1, 'g', canary('y'))]);
    await store.complete(y, [ok(1, canary('y'))], T);
    // Deleted by its owner while it runs.
    const z = await started(store, [item(1, 'g', canary('z')), item(2, 'g', canary('z'))]);
    await store.complete(z, [ok(1, canary('z'))], T);
    expect(await h.atRest()).toContain(canary('z'));

    expect(await store.delete('owner-b', z)).toBe(false);
    expect(await store.delete(OWNER, z)).toBe(true);
    expect(await store.delete(OWNER, z)).toBe(false);
    expect(await store.get(OWNER, z)).toBeUndefined();
    expect(await h.atRest()).not.toContain(canary('z'));

    const keep = { keepMs: 3_600_000, keepReadMs: 60_000 };
    expect(await store.sweep(T + 11_000, keep)).toEqual([]);
    expect(await store.get(OWNER, 'x')).toMatchObject({
      status: 'expired',
      completed: 1,
      failed: 1,
      expiredAt: T / 1000 + 11,
    });
    const lines = (await allResults(store, 'x')).map((l) => JSON.parse(l));
    expect(lines[1]).toEqual({ custom_id: 'c2', error: { code: 'batch_expired', message: expect.any(String) } });
    expect((await store.results(OWNER, 'x', { limit: 10 }))!.done).toBe(true);

    await store.resultsRead(OWNER, y, T + 20_000);
    expect(await store.get(OWNER, y)).toMatchObject({ resultsReadAt: T / 1000 + 20 });
    expect(await store.sweep(T + 20_000 + 59_000, keep)).toEqual([]);
    expect(await store.sweep(T + 20_000 + 60_000, keep)).toEqual([y]);
    expect(await store.get(OWNER, y)).toBeUndefined();
    const rest = await h.atRest();
    expect(rest).not.toContain(canary('y'));
    expect(rest).toContain(canary('x'));

    expect(await store.sweep(T + 11_000 + 3_600_000, keep)).toEqual(['x']);
    expect(await h.atRest()).not.toContain(canary('x'));
    expect(await store.counts()).toEqual({ batches: {}, pending: 0, leased: 0 });
  });

  test('a batch still being read in expires once its lines are in', async () => {
    await open();
    await store.create({ id: 'slow', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 10 });
    await store.addItems('slow', [item(1, 'g')], []);
    const keep = { keepMs: 3_600_000, keepReadMs: 60_000 };
    await store.sweep(T + 20_000, keep);
    expect(await store.get(OWNER, 'slow')).toMatchObject({ status: 'validating' });
    await store.addItems('slow', [item(2, 'g')], []);
    await store.start('slow', T + 21_000);
    await store.sweep(T + 22_000, keep);
    expect(await store.get(OWNER, 'slow')).toMatchObject({ status: 'expired', total: 2, failed: 2 });
    const codes = (await allResults(store, 'slow')).map((l) => JSON.parse(l).error.code);
    expect(codes).toEqual(['batch_expired', 'batch_expired']);
  });

  test("another owner's batches are invisible", async () => {
    await open();
    const id = await started(store, [item(1, 'g')]);
    expect(await store.get('owner-b', id)).toBeUndefined();
    expect(await store.list('owner-b', { limit: 10 })).toEqual({ data: [], hasMore: false });
    expect(await store.cancel('owner-b', id, T)).toBeUndefined();
    expect(await store.delete('owner-b', id)).toBe(false);
    expect(await store.results('owner-b', id, { limit: 10 })).toBeUndefined();
    await store.resultsRead('owner-b', id, T);
    expect(await store.get(OWNER, id)).toMatchObject({ status: 'in_progress' });
  });

  test('list: newest first, paged after a batch id', async () => {
    await open();
    const a = await started(store, [item(1, 'g')], T);
    const b = await started(store, [item(1, 'g')], T + 1000);
    const c = await started(store, [item(1, 'g')], T + 2000);
    await started(store, [item(1, 'g')], T + 3000, 'owner-b');
    const p1 = await store.list(OWNER, { limit: 2 });
    expect(p1.data.map((x) => x.id)).toEqual([c, b]);
    expect(p1.hasMore).toBe(true);
    const p2 = await store.list(OWNER, { after: b, limit: 2 });
    expect(p2).toMatchObject({ data: [{ id: a }], hasMore: false });
  });

  test('counts: batches per status, items pending and leased', async () => {
    await open();
    await started(store, [item(1, 'g1'), item(2, 'g2')]);
    const done = await started(store, [item(1, 'g')]);
    await store.create({ id: 'v', owner: OWNER, createdAt: T / 1000, expiresAt: T / 1000 + 60 });
    await store.claim('r', { maxItems: 10, leaseMs: 60_000, now: T });
    await store.complete(done, [ok(1)], T);
    expect(await store.counts()).toEqual({
      batches: { in_progress: 1, completed: 1, validating: 1 },
      pending: 1,
      leased: 1,
    });
  });
});
