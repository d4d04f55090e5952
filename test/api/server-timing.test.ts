// Operators (and our benchmark) tell the server's own time from the engine's by Server-Timing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, mixedRequest, startServer, type TestServer } from './helpers.js';

describe('server-timing', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ serverTimingEngine: true });
  });
  afterAll(async () => s.close());

  it('an answered request reports engine and total time, engine within total', async () => {
    const res = await s.app.inject({ method: 'POST', url: '/v1/systemone', headers: auth(), payload: mixedRequest() });
    expect(res.statusCode).toBe(200);
    const timing = String(res.headers['server-timing']);
    const engine = Number(/engine;dur=([\d.]+)/.exec(timing)?.[1]);
    const total = Number(/total;dur=([\d.]+)/.exec(timing)?.[1]);
    expect(engine).toBeGreaterThan(0);
    expect(total).toBeGreaterThanOrEqual(engine);
  });

  it('other responses report the total only', async () => {
    const res = await s.app.inject({ method: 'GET', url: '/v1/models', headers: auth() });
    expect(String(res.headers['server-timing'])).toMatch(/^total;dur=[\d.]+$/);
  });
});

describe('server-timing by default', () => {
  it('reports the total only: the engine time would tell a cache hit from a miss', async () => {
    const s = await startServer();
    try {
      const res = await s.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: auth(),
        payload: mixedRequest(),
      });
      expect(res.statusCode).toBe(200);
      expect(String(res.headers['server-timing'])).toMatch(/^total;dur=[\d.]+$/);
    } finally {
      await s.close();
    }
  });
});
