// Unauthenticated operational endpoints: /healthz (also as /health, the hosted service's path, which
// clients and load balancers written for it probe), /metrics, /openapi.json.
import type { FastifyInstance, FastifyReply } from 'fastify';

export async function opsRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  const health = async (_req: unknown, reply: FastifyReply) => {
    const status = ctx.draining() ? 'draining' : ctx.models.ready() ? 'ok' : 'loading';
    // Batch jobs, where served: their store restarting does not take single requests out of rotation.
    const batches = ctx.batches ? { batches: ctx.batches.health() } : {};
    return reply.code(status === 'ok' ? 200 : 503).send({ status, ...batches });
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
