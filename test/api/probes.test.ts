// The probes Kubernetes acts on (/livez restarts, /readyz routes, /startupz holds the others off),
// each asked through what an operator goes through: startup and a model load, requests in flight,
// a drain, and PostgreSQL going away and coming back. /livez never follows the models or the
// database; /readyz does, with a JSON reason.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import inject from 'light-my-request';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { keysFromList } from '../../src/api/auth.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool, openBatches } from '../../src/service/index.js';
import { postgresBinDir, startPostgres, type Postgres } from '../helpers/postgres.js';
import { restartPostgres, stopPostgres } from '../helpers/postgres-outage.js';
import { auth, KEY, mixedRequest, startServer, testRegistry, withEvaluate } from './helpers.js';

async function probe(app: AssayServer, path: string) {
  // Straight into the server's request handler: a request on a connection that is already open,
  // which is all that reaches a server once its close() began (app.inject refuses by then).
  const res = await inject(app.routing, { method: 'GET', url: path });
  return { status: res.statusCode, body: res.json() as { status: string; reason?: string; checks?: object } };
}

async function probes(app: AssayServer) {
  return {
    live: await probe(app, '/livez'),
    ready: await probe(app, '/readyz'),
    started: await probe(app, '/startupz'),
  };
}

describe('startup and a model load', () => {
  it('before the default model is loaded: live, not ready ("loading"), not started; then all three 200', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const registry = testRegistry(dir);
    const pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} });
    const app = await buildServer({ registry, models: pool, keys: keysFromList(KEY), logging: false });
    try {
      const before = await probes(app);
      expect(before.live.status).toBe(200);
      expect(before.ready).toEqual({
        status: 503,
        body: {
          status: 'loading',
          reason: 'the default model is not loaded yet',
          checks: { default_model: 'loading', batch_store: 'off', draining: false },
        },
      });
      expect(before.started).toEqual({ status: 503, body: { status: 'starting' } });

      await pool.preload();
      const after = await probes(app);
      expect([after.live.status, after.ready.status, after.started.status]).toEqual([200, 200, 200]);
      expect(after.ready.body).toEqual({
        status: 'ready',
        checks: { default_model: 'loaded', batch_store: 'off', draining: false },
      });

      // Another model loading (an operator's load, or a request's first use): nothing changes.
      const loading = pool.load('svc-0.9.0');
      expect(pool.view('svc-0.9.0')?.state).toBe('loading');
      const during = await probes(app);
      expect([during.live.status, during.ready.status, during.started.status]).toEqual([200, 200, 200]);
      await loading;
    } finally {
      await app.close();
      await pool.close();
    }
  });
});

describe('requests in flight, then a drain', () => {
  it('live and ready while requests hold the engine; on close, not ready ("draining") but still live', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inside = 0;
    let allInside!: () => void;
    const entered = new Promise<void>((r) => (allInside = r));
    const N = 4;
    const s = await startServer({
      logging: false,
      wrap: (e) =>
        withEvaluate(e, async (req, o, real) => {
          if (++inside === N) allInside();
          await gate;
          return real.evaluate(req, o);
        }),
    });
    const base = await s.app.listen({ port: 0, host: '127.0.0.1' });
    const inFlight = Array.from({ length: N }, () =>
      fetch(`${base}/v1/systemone`, { method: 'POST', headers: auth(), body: JSON.stringify(mixedRequest()) }),
    );
    await entered;
    const busy = await probes(s.app);
    expect([busy.live.status, busy.ready.status, busy.started.status]).toEqual([200, 200, 200]);

    const closing = s.app.close();
    while (!s.app.assay.draining()) await new Promise((r) => setImmediate(r));
    const draining = await probes(s.app);
    expect(draining.live.status).toBe(200);
    expect(draining.started.status).toBe(200);
    expect(draining.ready.status).toBe(503);
    expect(draining.ready.body).toMatchObject({ status: 'draining', reason: 'the server is shutting down' });
    release();
    for (const r of await Promise.all(inFlight)) expect(r.status).toBe(200);
    await closing;
    await s.evaluator.close();
  });
});

describe.skipIf(!postgresBinDir())('a database outage (PostgreSQL stopped, then started again)', () => {
  let pg: Postgres | undefined;
  afterAll(async () => {
    await pg?.stop();
  });

  it('not ready ("batches_unreachable") while PostgreSQL is away, live throughout, ready again once it is back', async () => {
    pg = await startPostgres();
    const opened = await openBatches({
      dataDir: mkdtempSync(join(tmpdir(), 'assay-probes-')),
      queueUrl: pg.url,
      maxLines: 100,
      maxBytes: 1 << 20,
      windowMs: 3600_000,
      keepMs: 3600_000,
      keepReadMs: 3600_000,
      leaseMs: 60_000,
    });
    if (!('batches' in opened)) throw new Error(opened.unavailable);
    const s = await startServer({ logging: false, batches: opened.batches });
    try {
      await vi.waitFor(async () => expect((await probe(s.app, '/readyz')).status).toBe(200), { timeout: 30_000 });
      expect((await probe(s.app, '/readyz')).body.checks).toEqual({
        default_model: 'loaded',
        batch_store: 'ok',
        draining: false,
      });

      stopPostgres(pg);
      // The batch runner's next claim (every idle interval) finds PostgreSQL gone.
      await vi.waitFor(
        async () => {
          const r = await probe(s.app, '/readyz');
          expect(r.status).toBe(503);
          expect(r.body).toMatchObject({ status: 'batches_unreachable', reason: 'the batch store cannot be reached' });
        },
        { timeout: 60_000, interval: 200 },
      );
      expect((await probe(s.app, '/livez')).status).toBe(200);
      expect((await probe(s.app, '/startupz')).status).toBe(200);
      // Single requests do not need the database: still answered.
      const res = await s.app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: auth(),
        payload: mixedRequest(),
      });
      expect(res.statusCode).toBe(200);

      restartPostgres(pg);
      await vi.waitFor(async () => expect((await probe(s.app, '/readyz')).status).toBe(200), {
        timeout: 60_000,
        interval: 200,
      });
    } finally {
      await s.app.close();
      await s.evaluator.close();
    }
  }, 180_000);
});
