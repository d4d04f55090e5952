// Residency on real loads (the tiny synthetic model under several versioned ids, each a separate
// evaluator with its own engine thread): the least recently used idle model is the one unloaded, a
// model is never unloaded under a request, idle models leave after keep-alive, a model too large
// for the budget is refused before it loads, and a registry replaced under a request lets it finish.
import { afterEach, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool, type ModelPool } from '../../src/service/model-pool.js';
import { ModelInUseError, ModelsBusyError, ModelsPinnedError, ModelTooLargeError } from '../../src/service/errors.js';
import { folderBytes, type ResidencyOptions } from '../../src/service/residency.js';
import { checkRegistry, type Registry } from '../../src/registry/registry.js';
import type { EvaluateRequest } from '../../src/engine/index.js';
import { mixedRequest } from '../api/helpers.js';

const IDS = ['svc-a', 'm-b', 'm-c', 'm-d'];

async function registry(ids = IDS, file = '/tmp/assay-residency-registry.json'): Promise<Registry> {
  const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  const entry = { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
  return checkRegistry(
    { default: ids[0], models: Object.fromEntries(ids.map((id) => [id, entry])), aliases: {} },
    file,
  );
}

let pool: ModelPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

async function open(residency: Partial<ResidencyOptions>, r?: Registry) {
  const unloads: Array<{ model: string; cause: string }> = [];
  pool = createModelPool(
    r ?? (await registry()),
    { threads: 1 },
    {
      info: (o, m) => void (m === 'model unloaded' && unloads.push(o as { model: string; cause: string })),
      warn: () => {},
    },
    Date.now,
    residency,
  );
  return { pool, unloads };
}

const resident = (p: ModelPool) => p.residency!().models.map((m) => m.model);
const { state, questions } = mixedRequest() as unknown as EvaluateRequest;
/** One real evaluation on a model, held for its duration (as a request is). */
const ask = (p: ModelPool, id: string, signal?: AbortSignal) =>
  p.acquire(id, signal).then(async (lease) => {
    try {
      return await lease.evaluator.evaluate({ state, questions });
    } finally {
      lease.release();
    }
  });

describe('residency', () => {
  it('at startup only the default loads; loading past the count unloads the least recently used idle model', async () => {
    const { pool, unloads } = await open({ maxLoadedModels: 3 });
    await pool.preload();
    expect(resident(pool)).toEqual(['svc-a']);
    await ask(pool, 'm-b');
    await ask(pool, 'm-c');
    await ask(pool, 'm-b'); // m-c is now the least recently used of the two that may go
    expect(resident(pool).sort()).toEqual(['m-b', 'm-c', 'svc-a']);
    await ask(pool, 'm-d');
    expect(resident(pool).sort()).toEqual(['m-b', 'm-d', 'svc-a']);
    expect(unloads).toEqual([{ model: 'm-c', cause: 'evicted', bytes: expect.any(Number) }]);
    await ask(pool, 'm-c'); // now m-b is the least recently used
    expect(resident(pool).sort()).toEqual(['m-c', 'm-d', 'svc-a']);
    expect(pool.counts!()['m-b']).toMatchObject({ loads: 1, unloads: { evicted: 1 } });
    // The default stays resident however long ago it was used.
    expect(pool.residency!().models.find((m) => m.model === 'svc-a')).toMatchObject({ pinned: true });
    // By hand: never under a request (409 to the operator), then unloaded.
    const held = await pool.acquire('m-c');
    expect(() => pool.unload('m-c')).toThrow(ModelInUseError);
    held.release();
    expect(pool.unload('m-c')).toBe(true);
    expect(pool.unload('m-c')).toBe(false); // not resident any more
    expect(unloads.at(-1)).toEqual({ model: 'm-c', cause: 'operator', bytes: expect.any(Number) });
  });

  it('never unloads a model under a request: a long request on m-b while m-c and m-d are asked for repeatedly', async () => {
    const { pool, unloads } = await open({ maxLoadedModels: 3 });
    await pool.preload();
    // The long request: m-b is leased (as a request holds it) for the whole churn, then evaluates.
    const held = await pool.acquire('m-b');
    const churn = await Promise.all(
      [0, 1, 2, 3, 4, 5].map(async (i) => {
        const id = i % 2 === 0 ? 'm-c' : 'm-d';
        return ask(pool, id, AbortSignal.timeout(60_000)).then((r) => Object.keys(r.answers).length);
      }),
    );
    expect(churn).toEqual([3, 3, 3, 3, 3, 3]);
    // m-c and m-d took turns in the one place left; m-b was never the one unloaded.
    expect(unloads.map((u) => u.model)).not.toContain('m-b');
    expect(unloads.filter((u) => u.cause === 'evicted').length).toBeGreaterThan(0);
    const answer = await held.evaluator.evaluate({ state, questions });
    expect(Object.keys(answer.answers).sort()).toEqual(['channel', 'paid', 'punctuality']);
    held.release();

    // With both places held, a third model waits for room within its deadline, then is refused.
    const other = resident(pool).find((id) => id === 'm-c' || id === 'm-d')!;
    const leases = [await pool.acquire('m-b'), await pool.acquire(other)];
    const third = missing(pool);
    const refused = await pool.acquire(third, AbortSignal.timeout(300)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ModelsBusyError);
    expect((refused as Error).message).toMatch(
      /^Model m-. cannot be loaded now: 3 of 3 models are resident \(--max-loaded-models\) and each has requests in flight/,
    );
    expect(pool.counts!()[third]!.slotWaits).toBeGreaterThan(0);
    // Once one is released, the waiting request gets its place.
    const waiting = pool.acquire(third, AbortSignal.timeout(60_000));
    leases[0]!.release();
    (await waiting).release();
    leases[1]!.release();
    expect(resident(pool)).toContain(third);
    expect(resident(pool)).not.toContain('m-b');
  });

  it('an idle model unloads once its keep-alive has passed, not before; 0 unloads after each request', async () => {
    const { pool, unloads } = await open({ maxLoadedModels: 4, keepAliveMs: 4000 });
    await pool.preload();
    await ask(pool, 'm-b');
    const view = pool.residency!().models.find((m) => m.model === 'm-b')!;
    expect(Date.parse(view.expires_at!) - Date.parse(view.last_used!)).toBe(4000);
    // Waits on the event (the unload), then checks when it came.
    while (!unloads.some((u) => u.model === 'm-b')) await new Promise((r) => setTimeout(r, 50));
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(view.expires_at!));
    expect(unloads).toEqual([{ model: 'm-b', cause: 'expired', bytes: expect.any(Number) }]);
    expect(resident(pool)).toEqual(['svc-a']); // the default is kept

    const zero = await open({ maxLoadedModels: 4, keepAliveMs: 0 }, await registry());
    await zero.pool.preload();
    await ask(zero.pool, 'm-c');
    expect(resident(zero.pool)).toEqual(['svc-a']);
    expect(zero.unloads).toEqual([{ model: 'm-c', cause: 'expired', bytes: expect.any(Number) }]);
    await zero.pool.close();
  });

  it('a model larger than the whole budget is refused before it loads, with its size and the budget', async () => {
    const { pool } = await open({ memoryBudget: 1000 });
    const refused = await pool.acquire('m-b').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ModelTooLargeError);
    expect((refused as Error).message).toMatch(
      /^Model m-b needs [\d.]+ MiB \(its files, with its prefix cache's 256\.0 MiB\), more than the whole memory budget of 0\.0 MiB/,
    );
    expect(pool.loaded()).toEqual([]);
  });

  it('pinned models that alone fill --max-loaded-models: another model is refused at once, naming them, not waited for', async () => {
    const { pool } = await open({ maxLoadedModels: 1 });
    await pool.preload();
    // A deadline far off: waiting would never end before it (the default is never unloaded).
    const refused = await pool.acquire('m-b', AbortSignal.timeout(60_000)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ModelsPinnedError);
    expect((refused as Error).message).toBe(
      'Model m-b cannot be loaded while svc-a stays resident (pinned by --preload): it takes the one place of --max-loaded-models; raise it or pin fewer models',
    );
    expect(pool.counts!()['m-b']?.slotWaits ?? 0).toBe(0);
    expect(resident(pool)).toEqual(['svc-a']);
    await ask(pool, 'svc-a'); // the pinned model answers as before
  });

  it('--preload models load at startup beside the default and stay, however long idle', async () => {
    const { pool } = await open({ preload: ['m-c'], keepAliveMs: 0, maxLoadedModels: 3 });
    await pool.preload();
    expect(resident(pool).sort()).toEqual(['m-c', 'svc-a']);
    expect(pool.residency!().models.every((m) => m.pinned && m.expires_at === null)).toBe(true);
    await ask(pool, 'm-b'); // keep-alive 0: m-b leaves after its request; the kept ones stay
    expect(resident(pool).sort()).toEqual(['m-c', 'svc-a']);
  });

  it("a model's size is the process's RSS growth over its load, never less than its files", async () => {
    const { pool } = await open({});
    await pool.preload();
    const [m] = pool.residency!().models;
    expect(m!.size_bytes).toBeGreaterThanOrEqual(folderBytes(pool.registry().models['svc-a']!.path));
    expect(m!.load_ms).toBeGreaterThan(0);
  });

  it('a re-pointed model: the request in flight finishes on the old folder, the next one loads the new', async () => {
    const { pool, unloads } = await open({ maxLoadedModels: 4 });
    await pool.preload();
    const old = await pool.acquire('m-b');
    const next = await registry(IDS);
    const int8 = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
    next.models['m-b'] = { ...next.models['m-b']!, path: int8, variant: 'int8' };
    expect(pool.replaceRegistry(next)).toMatchObject({ added: [], removed: [], changed: ['m-b'] });
    expect(Object.keys((await old.evaluator.evaluate({ state, questions })).answers)).toHaveLength(3);
    expect(old.evaluator.modelDir).not.toBe(int8);
    old.release();
    expect(unloads).toEqual([{ model: 'm-b', cause: 'registry', bytes: expect.any(Number) }]);
    const fresh = await pool.acquire('m-b');
    expect(fresh.evaluator.modelDir).toBe(int8);
    fresh.release();
  });

  it('a registry replaced under a request: it finishes on its model, which then unloads; added models load', async () => {
    const { pool, unloads } = await open({ maxLoadedModels: 4 });
    await pool.preload();
    const held = await pool.acquire('m-b');
    const change = pool.replaceRegistry(await registry(['svc-a', 'm-c', 'm-e']));
    expect(change).toMatchObject({ added: ['m-e'], removed: ['m-b', 'm-d'], changed: [] });
    expect(resident(pool)).toContain('m-b'); // still held
    const answer = await held.evaluator.evaluate({ state, questions });
    expect(Object.keys(answer.answers)).toHaveLength(3);
    held.release();
    expect(unloads).toEqual([{ model: 'm-b', cause: 'registry', bytes: expect.any(Number) }]);
    await ask(pool, 'm-e');
    expect(resident(pool).sort()).toEqual(['m-e', 'svc-a']);
  });
});

/** The one non-default model not resident now. */
function missing(p: ModelPool): string {
  return ['m-b', 'm-c', 'm-d'].find((id) => !resident(p).includes(id))!;
}
