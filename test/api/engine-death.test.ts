// A model's engine thread that dies (it exits, or an error escapes it) is an event: its running and
// queued requests end with 503 and retry-after (never a hang, never a 500), /healthz says 503 while
// the model is down, the model is loaded again, /metrics counts the restart, and requests are
// answered again. The thread is killed for real through its test hook (no caller can reach it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/tools/synth/ensure.js';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { createModelPool } from '../../src/service/model-pool.js';
import type { EngineThreadEvaluator } from '../../src/engine/engine-thread.js';
import { auth, MODEL_ID, mixedRequest, testKeys, testRegistry } from './helpers.js';

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

const post = (i: number) =>
  fetch(`${base}/v1/systemone`, { method: 'POST', headers: auth(), body: JSON.stringify(mixedRequest(`Invoice ${i}. ${'The customer paid late. '.repeat(200)}`)), signal: AbortSignal.timeout(60_000) });

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting');
}

describe.each(['exit', 'throw'] as const)('an engine thread that dies (%s) under load', (how) => {
  it('ends its requests with 503 + retry-after, reports 503 on /healthz, restarts, and answers again', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const restartsBefore = pool.restarts!()[MODEL_ID] ?? 0;
    const evaluator = (await pool.load(MODEL_ID)) as EngineThreadEvaluator;
    // Eight concurrent requests: one running, the rest queued in the engine thread.
    const inFlight = Array.from({ length: 8 }, (_, i) => post(i));
    await waitFor(async () => evaluator.stats().queueDepth + evaluator.stats().running >= 4);
    evaluator.crashForTest(how);
    await waitFor(async () => (await fetch(`${base}/healthz`)).status === 503);

    // Every request ends (the fetch timeout would throw otherwise): answered before the crash, or 503 with retry-after.
    const statuses: number[] = [];
    for (const res of await Promise.all(inFlight)) {
      statuses.push(res.status);
      if (res.status === 503) {
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(((await res.json()) as { detail: string }).detail).toMatch(/restart|loading|stopped/);
      } else await res.arrayBuffer();
    }
    expect(statuses.every((s) => s === 200 || s === 503), statuses.join(',')).toBe(true);
    expect(statuses).toContain(503);

    // Restarted: /healthz 200 again, one more restart counted, and requests answered.
    await waitFor(async () => (await fetch(`${base}/healthz`)).status === 200);
    expect(pool.restarts!()[MODEL_ID]).toBe(restartsBefore + 1);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain(`assay_engine_restarts_total{model="${MODEL_ID}"} ${restartsBefore + 1}`);
    const again = await post(100);
    expect(again.status).toBe(200);
    expect(warnings.filter((w) => w.startsWith('engine thread died'))).toHaveLength(restartsBefore + 1);
  });
});
