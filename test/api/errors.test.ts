// Every non-422 error provoked for real: 401 403 404 405 408 413 415 429 500 529, their
// `{"detail": ...}` bodies and headers, and x-request-id on all of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysFromList, sha256 } from '../../src/api/auth.js';
import type { Evaluator } from '../../src/engine/index.js';
import {
  auth,
  KEY,
  mixedRequest,
  OTHER_KEY,
  startServer,
  tinyEvaluator,
  withEvaluate,
  type TestServer,
} from './helpers.js';

let shared: Evaluator;
let s: TestServer;
beforeAll(async () => {
  shared = await tinyEvaluator();
  s = await startServer({
    evaluator: shared,
    bodyLimit: 64 * 1024,
    // A fault injected around the real engine: a state of "explode" makes it throw.
    wrap: (e) =>
      withEvaluate(e, (req, o, real) =>
        req.state === 'explode' ? Promise.reject(new Error('engine blew up on: explode')) : real.evaluate(req, o),
      ),
  });
});
afterAll(async () => {
  await s?.close();
  await shared?.close();
});

const post = (payload: unknown, headers: Record<string, string> = auth()) =>
  s.app.inject({
    method: 'POST',
    url: '/v1/systemone',
    headers,
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
  });

describe('authentication and access', () => {
  it('401 without a key, with WWW-Authenticate: Bearer', async () => {
    for (const res of [
      await s.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: { 'content-type': 'application/json' },
        payload: '{}',
      }),
      await s.app.inject({ method: 'GET', url: '/v1/models' }),
    ]) {
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.json()).toEqual({ detail: 'Not authenticated' });
    }
  });

  it('401 for a wrong key or another scheme', async () => {
    for (const authorization of ['Bearer nope', `Basic ${KEY}`, `Bearer ${KEY}x`, 'Bearer']) {
      const res = await s.app.inject({ method: 'GET', url: '/v1/models', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
    }
  });

  it('401 comes before body checks', async () => {
    const res = await s.app.inject({
      method: 'POST',
      url: '/v1/systemone',
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(res.statusCode).toBe(401);
  });

  it('403 when the key may not use the model; /v1/models lists only what it may use', async () => {
    const ok = await post(mixedRequest(), auth(OTHER_KEY));
    expect(ok.statusCode).toBe(200);
    const res = await post({ ...mixedRequest(), model: 'svc-0.9.0' }, auth(OTHER_KEY));
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ detail: "This API key may not use model 'svc-0.9.0'" });
    const list = await s.app.inject({ method: 'GET', url: '/v1/models', headers: auth(OTHER_KEY) });
    expect(list.json().models.map((m: { name: string }) => m.name)).toEqual(['svc-latest']);
    // the same versioned id is fine for the unrestricted key
    expect((await post({ ...mixedRequest(), model: 'svc-0.9.0' })).statusCode).toBe(200);
  });
});

describe('routing and transport', () => {
  it('404 {"detail":"Not Found"} for unknown paths, even with a bad body', async () => {
    for (const res of [
      await s.app.inject({ method: 'GET', url: '/v2/models', headers: auth() }),
      await s.app.inject({ method: 'POST', url: '/preview/evaluation', headers: auth(), payload: '{not json' }),
      await s.app.inject({ method: 'POST', url: '/nowhere', headers: { 'content-type': 'text/plain' }, payload: 'x' }),
    ]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ detail: 'Not Found' });
    }
  });

  it('405 {"detail":"Method Not Allowed"} with Allow for a known path', async () => {
    const get = await s.app.inject({ method: 'GET', url: '/v1/systemone', headers: auth() });
    expect(get.statusCode).toBe(405);
    expect(get.json()).toEqual({ detail: 'Method Not Allowed' });
    expect(get.headers.allow).toBe('POST');
    const post2 = await s.app.inject({ method: 'POST', url: '/v1/models', headers: auth(), payload: '{}' });
    expect(post2.statusCode).toBe(405);
    expect(post2.headers.allow).toBe('GET, HEAD');
    const del = await s.app.inject({ method: 'DELETE', url: '/v1/systemone', headers: auth() });
    expect(del.statusCode).toBe(405);
  });

  it('413 for a body over the configured limit', async () => {
    const res = await post({ ...mixedRequest(), state: 'x'.repeat(70 * 1024) });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ detail: 'Request body is larger than 65536 bytes' });
  });

  it('415 for a content type other than application/json', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const res = await post('{}', { authorization: `Bearer ${KEY}`, 'content-type': type });
      expect(res.statusCode, type).toBe(415);
      expect(res.json().detail).toMatch(/application\/json/);
    }
    const charset = await post(mixedRequest(), {
      authorization: `Bearer ${KEY}`,
      'content-type': 'application/json; charset=utf-8',
    });
    expect(charset.statusCode).toBe(200);
  });

  it('500 "Internal Server Error" with the code and the request id when the engine throws, and the next request still works', async () => {
    const res = await post({ ...mixedRequest(), state: 'explode' });
    expect(res.statusCode).toBe(500);
    expect(res.json().detail).toMatch(/^Internal Server Error \(internal_error, request \S+\): /);
    expect(res.json().detail).toContain(`request ${res.headers['x-request-id']})`);
    const after = await post(mixedRequest());
    expect(after.statusCode).toBe(200);
  });

  it('x-request-id on every response: a well-formed one is echoed, others replaced', async () => {
    const echoed = await s.app.inject({
      method: 'GET',
      url: '/nowhere',
      headers: { 'x-request-id': 'client-abc.123' },
    });
    expect(echoed.headers['x-request-id']).toBe('client-abc.123');
    const bad = await s.app.inject({
      method: 'GET',
      url: '/v1/models',
      headers: { 'x-request-id': 'has spaces and "quotes"' },
    });
    expect(bad.statusCode).toBe(401);
    expect(bad.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    const long = await s.app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'a'.repeat(200) } });
    expect(long.headers['x-request-id']).toMatch(/^req_/);
    for (const res of [
      await post('{bad'),
      await post({ ...mixedRequest(), state: 'explode' }),
      await post(mixedRequest()),
    ]) {
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    }
  });
});

describe('rate limits (per key, 429 with retry-after and retry-after-ms)', () => {
  let clock = 0;
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startServer({
      evaluator: shared,
      rateLimits: { requestsPerMinute: 2, inputTokensPerSecond: 1_000_000 },
      keys: [...keysFromList(KEY), { name: 'tokens', hash: sha256(OTHER_KEY), inputTokensPerSecond: 50 }],
      now: () => clock,
    });
  });
  afterAll(async () => {
    await limited?.close();
  });

  it('429 after the requests-per-minute budget, per key, until it refills', async () => {
    const send = (key: string) => limited.app.inject({ method: 'GET', url: '/v1/models', headers: auth(key) });
    expect((await send(KEY)).statusCode).toBe(200);
    expect((await send(KEY)).statusCode).toBe(200);
    const third = await send(KEY);
    expect(third.statusCode).toBe(429);
    expect(third.json().detail).toMatch(/requests per minute/);
    // The refill (30 s), jittered up to 20% later; whole seconds rounded up.
    const waitMs = Number(third.headers['retry-after-ms']);
    expect(waitMs).toBeGreaterThanOrEqual(30_000);
    expect(waitMs).toBeLessThanOrEqual(36_000);
    expect(third.headers['retry-after']).toBe(String(Math.ceil(waitMs / 1000)));
    // The next caller refused is told a slot of its own: one more request's refill later.
    const fourth = Number((await send(KEY)).headers['retry-after-ms']);
    expect(fourth).toBeGreaterThanOrEqual(60_000);
    expect(fourth).toBeLessThanOrEqual(72_000);
    expect((await send(OTHER_KEY)).statusCode).toBe(200); // another key has its own budget
    clock += 29_000;
    expect((await send(KEY)).statusCode).toBe(429);
    clock += 1_000;
    expect((await send(KEY)).statusCode).toBe(200);
  });

  it('429 once a key has used its input tokens per second, charged from usage.input_tokens', async () => {
    const send = () =>
      limited.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(OTHER_KEY), payload: mixedRequest() });
    const first = await send();
    expect(first.statusCode).toBe(200);
    const used = first.json().usage.input_tokens as number;
    expect(used).toBeGreaterThan(50);
    const second = await send();
    expect(second.statusCode).toBe(429);
    expect(second.json().detail).toMatch(/input tokens per second/);
    const waitMs = Number(second.headers['retry-after-ms']);
    const refill = Math.ceil(((used - 50) / 50) * 1000);
    expect(waitMs).toBeGreaterThanOrEqual(refill);
    expect(waitMs).toBeLessThanOrEqual(Math.round(refill * 1.2));
    expect(second.headers['retry-after']).toBe(String(Math.ceil(waitMs / 1000)));
    clock += waitMs;
    expect((await send()).statusCode).toBe(200);
  });
});

describe('overload and deadlines', () => {
  it('529 with retry-after when the engine queue is full (maxQueue 0)', async () => {
    const busy = await startServer({ engine: { maxQueue: 0 } });
    try {
      const many = {
        ...mixedRequest(),
        questions: Object.fromEntries(
          Array.from({ length: 12 }, (_, i) => [`q${i}`, { type: 'noul', instructions: `Question ${i}?` }]),
        ),
      };
      // Hold the engine with a long evaluation (planned in a worker, then admitted), then ask.
      const state = Array.from({ length: 300 }, (_, i) => `Line ${i}: shipment ${i} was inspected.`).join('\n');
      const blocker = busy.evaluator.evaluate({
        state,
        questions: Object.fromEntries(
          Array.from({ length: 24 }, (_, i) => [`b${i}`, { type: 'noul' as const, instructions: `Item ${i}?` }]),
        ),
      });
      while (busy.evaluator.stats().running < 1) await new Promise((r) => setTimeout(r, 2));
      const results = await Promise.all(
        Array.from({ length: 3 }, () =>
          busy.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: many }),
        ),
      );
      await blocker;
      const codes = results.map((r) => r.statusCode);
      expect(codes.filter((c) => c === 529).length).toBeGreaterThan(0);
      expect(codes.every((c) => c === 200 || c === 529)).toBe(true);
      const refused = results.filter((x) => x.statusCode === 529);
      for (const r of refused) {
        expect(r.json()).toEqual({ detail: 'The engine is overloaded; retry with backoff' });
        const ms = Number(r.headers['retry-after-ms']);
        expect(ms).toBeGreaterThan(0);
        expect(r.headers['retry-after']).toBe(String(Math.max(1, Math.ceil(ms / 1000))));
      }
      // the server recovers once the queue drains
      expect(
        (await busy.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: many })).statusCode,
      ).toBe(200);
    } finally {
      await busy.close();
    }
  });

  it('408 when a request exceeds its deadline, and the engine keeps serving', async () => {
    const slow = await startServer({ evaluator: shared, deadlineMs: 1 });
    try {
      const questions = Object.fromEntries(
        Array.from({ length: 40 }, (_, i) => [
          `q${i}`,
          { type: 'score', instructions: `Aspect ${i}`, criteria: ['low', 'mid', 'high'] },
        ]),
      );
      const res = await slow.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: auth(),
        payload: { state: 'A long report. '.repeat(400), model: 'svc-latest', questions },
      });
      expect(res.statusCode).toBe(408);
      expect(res.json()).toEqual({ detail: 'Request exceeded its deadline of 1 ms' });
    } finally {
      await slow.close();
    }
    expect((await post(mixedRequest())).statusCode).toBe(200);
  });
});
