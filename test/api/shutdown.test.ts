// Graceful shutdown: in-flight requests finish, new connections are refused, the process exits 0.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { staticModels } from '../../src/service/provider.js';
import { buildServer } from '../../src/api/server.js';
import { startServe, tinyRegistryFile } from '../serve-process.js';
import { auth, mixedRequest, startServer, testRegistry, withEvaluate } from './helpers.js';

describe('in-process close()', () => {
  it('finishes a request that is in flight when close() begins', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const s = await startServer({
      logging: false,
      // Holds the request inside the evaluator until the test has started closing.
      wrap: (e) =>
        withEvaluate(e, async (req, o, real) => {
          entered();
          await gate;
          return real.evaluate(req, o);
        }),
    });
    const base = await s.app.listen({ port: 0, host: '127.0.0.1' });
    const inFlight = fetch(`${base}/v1/systemone`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify(mixedRequest()),
    });
    await inside;

    let closed = false;
    const closing = s.app.close().then(() => (closed = true));
    // Waits for close() to reach its preClose hook (draining), instead of a guessed sleep.
    while (!s.app.assay.draining()) await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false); // waiting for the in-flight request
    await expect(fetch(`${base}/healthz`)).rejects.toThrow(); // no new connections

    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { answers: Record<string, unknown> };
    expect(Object.keys(body.answers).sort()).toEqual(['channel', 'paid', 'punctuality']);
    await closing;
    expect(closed).toBe(true);
    await s.evaluator.close();
  });

  it('/healthz is 503 "loading" until the default model is ready', async () => {
    const loading = await buildServer({
      registry: testRegistry(await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' })),
      models: { ...staticModels({}), ready: () => false },
      keys: [],
      logging: false,
    });
    const res = await loading.inject({ method: 'GET', url: '/healthz' });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: 'loading' });
    await loading.close();
  });
});

describe('the assay serve process', () => {
  it('on SIGTERM finishes in-flight work and exits 0', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-serve-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const server = await startServe(registry, [], { ASSAY_API_KEYS: 'proc-key' });
    const { base } = server;
    try {
      expect(server.out()).not.toContain('generated for this run'); // a key was configured
      // The startup log and /metrics name the int8 path, and it is exact (exact int8 is the default).
      expect(server.out()).toMatch(/cpu kernels: int8 \S+ \(exact/);
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(
        /^assay_cpu_kernels_info\{cpu="[^"]+",flags="[^"]*",int8="[^"]+\(exact[^"]*",q4="[^"]+",int8_exact="1"\} 1$/m,
      );
      // A heavy request, then SIGTERM as soon as the server reports it in flight.
      const questions = Object.fromEntries(
        Array.from({ length: 150 }, (_, i) => [
          `q${i}`,
          {
            type: 'choice',
            instructions: `Aspect ${i} of the text?`,
            criteria: { yes: null, no: null, unclear: 'not said' },
          },
        ]),
      );
      const pending = fetch(`${base}/v1/systemone`, {
        method: 'POST',
        headers: auth('proc-key'),
        body: JSON.stringify({ state: 'A report. '.repeat(300), model: 'svc-latest', questions }),
      });
      for (let i = 0; i < 200; i++) {
        const metrics = await (await fetch(`${base}/metrics`)).text();
        if (/assay_http_requests_in_flight\{route="\/v1\/systemone"\} 1/.test(metrics)) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      const exited = server.stop();
      const res = await pending;
      expect(res.status).toBe(200);
      expect(Object.keys(((await res.json()) as { answers: object }).answers)).toHaveLength(150);
      expect(await exited).toBe(0);
      expect(server.out()).toContain('shutting down');
      expect(server.out()).toContain('shutdown complete');
    } finally {
      await server.stop();
    }
  });
});
