// A model's engine thread that dies (it exits, or an error escapes it) is an event: its running and
// queued requests end with 503 and retry-after (never a hang, never a 500), /healthz says 503 while
// the model is down, the model is loaded again, /metrics counts the restart, and requests are
// answered again. The thread is killed for real through its test hook (no caller can reach it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { createModelPool } from '../../src/service/model-pool.js';
import type { EngineThreadEvaluator } from '../../src/engine/thread/engine-thread.js';
import { auth, MODEL_ID, mixedRequest, testKeys, testRegistry } from './helpers.js';

// The engine threads these tests start get the crash hook they kill them with (engine/thread/crash-hook.ts).
process.env.ASSAY_ENGINE_CRASH_HOOK = '1';

let app: AssayServer;
let base: string;
let pool: ReturnType<typeof createModelPool>;
const warnings: string[] = [];

beforeAll(async () => {
  const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  pool = createModelPool(testRegistry(dir), { threads: 1 }, { info: () => {}, warn: (_o, m) => warnings.push(m) });
  await pool.preload();
  app = await buildServer({ registry: testRegistry(dir), models: pool, keys: testKeys(), logging: false });
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await app.close();
  await pool.close();
});

const post = (tag: string) =>
  fetch(`${base}/v1/systemone`, {
    method: 'POST',
    headers: auth(),
    body: JSON.stringify(mixedRequest(`Invoice ${tag}. ${'The customer paid late. '.repeat(400)}`)),
    signal: AbortSignal.timeout(60_000),
  });

async function waitFor(check: () => Promise<boolean> | boolean, what = 'condition', everyMs = 100): Promise<void> {
  const until = Date.now() + 60_000;
  while (Date.now() < until) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.each(['exit', 'throw'] as const)('an engine thread that dies (%s) under load', (how) => {
  it('ends its requests with 503 + retry-after, reports 503 on /healthz, restarts, and answers again', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const restartsBefore = pool.restarts!()[MODEL_ID] ?? 0;
    const evaluator = (await pool.load(MODEL_ID)) as EngineThreadEvaluator;
    // Sixteen concurrent requests on states never seen before; the thread dies while at least two of
    // them are in it (one running, one queued). On a loaded machine requests reach the thread slowly,
    // so the check polls often and needs only two, not a fixed share of the sixteen.
    const inFlight = Array.from({ length: 16 }, (_, i) => post(`${how} ${i}`));
    let settled = 0;
    for (const p of inFlight)
      void p.then(
        () => settled++,
        () => settled++,
      );
    await waitFor(
      () => {
        if (settled === inFlight.length)
          throw new Error('all requests ended before two were in the engine thread at once');
        return evaluator.stats().queueDepth + evaluator.stats().running >= 2;
      },
      'two requests in the engine thread',
      5,
    );
    evaluator.crashForTest(how);
    await waitFor(async () => (await fetch(`${base}/healthz`)).status === 503, '/healthz 503');

    // Every request ends (the fetch timeout would throw otherwise): answered before the crash, or 503 with retry-after.
    const statuses: number[] = [];
    for (const res of await Promise.all(inFlight)) {
      statuses.push(res.status);
      if (res.status === 503) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(((await res.json()) as { detail: string }).detail).toMatch(/restart|loading|stopped/);
      } else await res.arrayBuffer();
    }
    expect(
      statuses.every((s) => s === 200 || s === 503),
      statuses.join(','),
    ).toBe(true);
    expect(statuses).toContain(503);

    // Restarted: /healthz 200 again, one more restart counted, and requests answered.
    await waitFor(async () => (await fetch(`${base}/healthz`)).status === 200, '/healthz 200 after the restart');
    expect(pool.restarts!()[MODEL_ID]).toBe(restartsBefore + 1);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain(`assay_engine_restarts_total{model="${MODEL_ID}"} ${restartsBefore + 1}`);
    const again = await post(`${how} after`);
    expect(again.status).toBe(200);
    expect(warnings.filter((w) => w.startsWith('engine thread died'))).toHaveLength(restartsBefore + 1);
  });
});
