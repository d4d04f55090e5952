// Unauthenticated operational endpoints: /healthz (also as /health, the hosted service's path, which
// clients and load balancers written for it probe), /metrics, /openapi.json.
import type { FastifyInstance, FastifyReply } from 'fastify';

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  const health = async (_req: unknown, reply: FastifyReply) => {
    const serving = ctx.draining() ? 'draining' : ctx.models.ready() ? 'ok' : 'loading';
    // Batch jobs, where served: a store fault (restarting, PostgreSQL away, a full disk) is said
    // here, with its reason, as degraded; it does not take single requests out of rotation (200).
    const store = ctx.batches?.health();
    const degraded = serving === 'ok' && store !== undefined && store.state !== 'ok';
    const batches = store ? { batches: store.state } : {};
    const reason = degraded
      ? { reason: `batches: ${store.reason ?? store.state}`, since: new Date(store.since ?? Date.now()).toISOString() }
      : {};
    return reply
      .code(serving === 'ok' ? 200 : 503)
      .send({ status: degraded ? 'degraded' : serving, ...batches, ...reason });
  };
  app.get('/healthz', health);
  app.get('/health', health);

  app.get('/metrics', async (_req, reply) => {
    const text = await ctx.metrics.text();
    return reply.type(ctx.metrics.contentType).send(text);
  });

  // Generated from the routes (openapi/document.ts), once all are registered.
  let doc: object | undefined;
  app.get('/openapi.json', async () => (doc ??= app.swagger()));
}
