// The serving core over a real socket: tenants do not share prefix caches (unless the operator
// says so), refused requests are charged, a model still loading is waited for, failed model loads
// are remembered and answered 503, engine failures are logged with their (content-free) message,
// and a small request is never stuck behind heavy ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/api/auth.js';
import { createModelPool } from '../../src/service/model-pool.js';
import { EngineError } from '../../src/engine/index.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import {
  auth,
  KEY,
  mixedRequest,
  OTHER_KEY,
  startServer,
  testKeys,
  testRegistry,
  withEvaluate,
  type TestServer,
} from './helpers.js';

async function listen(s: TestServer): Promise<string> {
  return s.app.listen({ host: '127.0.0.1', port: 0 });
}

async function post(base: string, body: unknown, key = KEY): Promise<{ status: number; headers: Headers; json: any }> {
  const res = await fetch(`${base}/v1/systemone`, { method: 'POST', headers: auth(key), body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function prefixHits(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^assay_prefix_cache_hits_total\{[^}]*\} (\d+)/m.exec(text)?.[1] ?? 0);
}

describe('tenant isolation of the prefix cache', () => {
  for (const scope of ['key', 'shared'] as const) {
    it(`scope ${scope}: key B ${scope === 'key' ? 'never hits' : 'hits'} the prefix key A stored`, async () => {
      const s = await startServer({ prefixCacheScope: scope, logging: false });
      try {
        const base = await listen(s);
        const body = mixedRequest(`A private state ${scope} ${Date.now()}`);
        expect((await post(base, body, KEY)).status).toBe(200);
        const before = await prefixHits(base);
        expect((await post(base, body, OTHER_KEY)).status).toBe(200);
        expect(await prefixHits(base)).toBe(scope === 'key' ? before : before + 1);
        expect((await post(base, body, KEY)).status).toBe(200);
        expect(await prefixHits(base)).toBe(scope === 'key' ? before + 1 : before + 2);
      } finally {
        await s.close();
      }
    });
  }
});

describe('charging', () => {
  it('a request refused for its token budget is charged its counted tokens', async () => {
    const LIMITED = 'test-key-budget';
    const s = await startServer({
      logging: false,
      keys: [...testKeys(), { name: 'limited', hash: sha256(LIMITED), inputTokensPerSecond: 5_000 }],
    });
    try {
      const base = await listen(s);
      const over = await post(base, { ...mixedRequest('word '.repeat(70_000)) }, LIMITED);
      expect(over.status).toBe(422);
      expect(over.json.detail[0].type).toBe('token_budget_exceeded');
      const next = await post(base, mixedRequest(), LIMITED);
      expect(next.status).toBe(429);
      expect(next.json.detail).toContain('input tokens per second');
    } finally {
      await s.close();
    }
  });
});

describe('model loading off the request path', () => {
  it('the first request for a model not loaded yet waits for its load and is answered 200, not 503 "loading"', async () => {
    // The real pool with nothing loaded, as right after `assay serve` starts: the request's model
    // (svc-0.9.0, never preloaded) loads while the request waits, within its deadline.
    const registry = testRegistry(await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }));
    const pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} });
    const s = await startServer({ registry, models: pool, logging: false });
    try {
      const base = await listen(s);
      const [first, second] = await Promise.all([
        post(base, { ...mixedRequest(), model: 'svc-0.9.0' }),
        post(base, { ...mixedRequest(), model: 'svc-0.9.0' }),
      ]);
      expect([first.status, first.headers.get('retry-after')]).toEqual([200, null]);
      expect(first.json.model).toBe('svc-0.9.0');
      expect(second.status).toBe(200);
      expect(pool.loaded().map((m) => m.model)).toEqual(['svc-0.9.0']); // one load, shared by both
    } finally {
      await s.close();
      await pool.close();
    }
  });

  it('a model that fails to load is answered 503 with retry-after, and not retried by every request', async () => {
    const registry = checkRegistry(
      {
        default: 'svc-broken',
        models: {
          'svc-broken': { path: '/nonexistent/model-folder', description: 'missing', release_date: '2026-11-22' },
        },
        aliases: {},
      },
      '/tmp/assay-broken-registry.json',
    );
    const attempts: string[] = [];
    const pool = createModelPool(
      registry,
      { threads: 1 },
      {
        info: () => {},
        warn: (o, m) => void (m === 'model failed to load' && attempts.push(String((o as { reason: string }).reason))),
      },
    );
    const s = await startServer({ registry, models: pool });
    try {
      const base = await listen(s);
      const body = { ...mixedRequest(), model: 'svc-broken' };
      const first = await post(base, body);
      expect(first.status).toBe(503);
      expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      while (attempts.length === 0) await new Promise((r) => setTimeout(r, 5));
      const again = await post(base, body);
      expect(again.status).toBe(503);
      expect(again.json.detail).toMatch(/failed to load .*does not exist.*retrying in \d+ s/);
      expect(Number(again.headers.get('retry-after-ms'))).toBeGreaterThan(0);
      await post(base, body);
      expect(attempts).toHaveLength(1); // remembered: no new attempt before the backoff ends
      // The reason is in the logs (a path, not request content).
      expect(s.logs.join('')).toContain('/nonexistent/model-folder');
    } finally {
      await s.close();
    }
  });

  it('an engine failure is a 500 whose log keeps the runtime message', async () => {
    const s = await startServer({
      wrap: (e) =>
        withEvaluate(e, () =>
          Promise.reject(new EngineError('onnxruntime failed a pass of 12 tokens after 0: Non-zero status code')),
        ),
    });
    try {
      const r = await s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: mixedRequest() });
      expect(r.statusCode).toBe(500);
      // Never a bare 500: the error table's code and the request's id, as its x-request-id header says.
      expect(r.json()).toEqual({
        detail: `Internal Server Error (engine_failure, request ${r.headers['x-request-id']}): the server's log holds the cause`,
      });
      const failure = s.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
      expect(failure.err).toMatchObject({
        type: 'EngineError',
        message: expect.stringContaining('Non-zero status code'),
      });
    } finally {
      await s.close();
    }
  });
});

describe('fairness over HTTP', () => {
  let s: TestServer;
  let base: string;
  beforeAll(async () => {
    s = await startServer({ logging: false, engine: { prefixCacheBytes: 0 } });
    base = await listen(s);
  });
  afterAll(() => s.close());

  it('a one-question request sent while a 255-option and a 400-question request run is answered before they end, /healthz answers throughout', async () => {
    // Behaviour only: the light request overtakes the heavy ones and /healthz keeps answering. How
    // fast (p99 < 1.5 s, /healthz max < 250 ms) is a timing, measured by the serving bench.
    const options = Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`option number ${i} of the list`, null]));
    const many = Object.fromEntries(
      Array.from({ length: 400 }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Is item ${i} mentioned?` }]),
    );
    const state = Array.from({ length: 60 }, (_, i) => `Line ${i}: a shipment was logged.`).join('\n');
    const heavy = [
      post(base, {
        state,
        model: 'svc-latest',
        questions: { c: { type: 'choice', instructions: 'Pick one', criteria: options } },
      }),
      post(base, { state, model: 'svc-latest', questions: many }),
    ];
    let heavyDone = false;
    let healthAnswers = 0;
    const healthPoller = (async () => {
      while (!heavyDone) {
        if ((await fetch(`${base}/healthz`)).status === 200) healthAnswers++;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      while (s.evaluator.stats().running < 2) await new Promise((r) => setTimeout(r, 5));
      const answeredWhile = healthAnswers;
      const small = await post(base, {
        state: 'The parcel was late.',
        model: 'svc-latest',
        questions: { late: { type: 'noul', instructions: 'Late?' } },
      });
      expect(small.status).toBe(200);
      expect(s.evaluator.stats().running).toBeGreaterThanOrEqual(1); // the heavy ones are still going
      expect((await Promise.all(heavy)).map((r) => r.status)).toEqual([200, 200]);
      expect(healthAnswers).toBeGreaterThan(answeredWhile);
    } finally {
      heavyDone = true;
      await healthPoller;
    }
  });
});
