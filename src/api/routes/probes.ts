// Kubernetes' three probes, unauthenticated, each answering what its kind of probe acts on
// (docs/operations.md#probes):
// - /livez: the process and its event loop turn (the answer itself is the proof). Never the models
//   nor the database: a liveness probe that fails while a model loads or PostgreSQL is away
//   restarts a healthy process. 200 while draining too (shutdown is not death).
// - /readyz: whether to send this replica traffic: the default model loaded, the batch store
//   reachable where one is configured, not draining. 503 with the reason otherwise.
// - /startupz: whether startup is over (the default model loaded once); it stays 200 after, so a
//   later model restart or database outage is readiness's business, not a restart's.
// /healthz (routes/ops.ts) stays as it was, for what already probes it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';

/** The probe paths, answered while draining (plugins/requests.ts lets them through). */
export const PROBE_PATHS = ['/livez', '/readyz', '/startupz'];

export const LiveSchema = z
  .object({ status: z.literal('ok') })
  .meta({ id: 'Live', description: 'The process answers: its event loop turns.' });

export const ReadySchema = z
  .object({
    status: z.enum(['ready', 'loading', 'draining', 'batches_unreachable']),
    reason: z.string().optional().describe('Why the replica is not ready (absent when ready).'),
    checks: z
      .object({
        default_model: z.enum(['loaded', 'loading']),
        batch_store: z.enum(['ok', 'unreachable', 'off']),
        draining: z.boolean(),
      })
      .describe('Each condition readiness reads.'),
  })
  .meta({ id: 'Ready', description: 'Whether this replica should receive traffic, and why not.' });

export const StartedSchema = z
  .object({ status: z.enum(['started', 'starting']) })
  .meta({ id: 'Started', description: 'Whether startup (the default model loaded once) is over.' });

export async function probeRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  let started = false;

  app.get('/livez', async () => ({ status: 'ok' as const }));

  app.get('/readyz', async (_req, reply) => {
    const loaded = ctx.models.ready();
    const draining = ctx.draining();
    // The store's own status (store.healthy(): its thread, or PostgreSQL, answered its last call).
    const store = ctx.batches ? (ctx.batches.health() === 'ok' ? 'ok' : 'unreachable') : 'off';
    const checks = { default_model: loaded ? 'loaded' : 'loading', batch_store: store, draining } as const;
    const [status, reason] = draining
      ? (['draining', 'the server is shutting down'] as const)
      : !loaded
        ? (['loading', 'the default model is not loaded yet'] as const)
        : store === 'unreachable'
          ? (['batches_unreachable', 'the batch store cannot be reached'] as const)
          : (['ready', undefined] as const);
    return reply.code(status === 'ready' ? 200 : 503).send({ status, ...(reason ? { reason } : {}), checks });
  });

  app.get('/startupz', async (_req, reply) => {
    started ||= ctx.models.ready();
    return reply.code(started ? 200 : 503).send({ status: started ? 'started' : 'starting' });
  });
}
