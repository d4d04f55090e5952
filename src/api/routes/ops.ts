// Unauthenticated operational endpoints: /healthz, /metrics, /openapi.json.
import type { FastifyInstance } from 'fastify';
import type { ApiContext } from '../context.js';
import { buildOpenApi } from '../openapi.js';

export function opsRoutes(app: FastifyInstance, ctx: ApiContext): void {
  app.get('/healthz', async (_req, reply) => {
    const status = ctx.draining() ? 'draining' : ctx.models.ready() ? 'ok' : 'loading';
    return reply.code(status === 'ok' ? 200 : 503).send({ status });
  });

  app.get('/metrics', async (_req, reply) => {
    const text = await ctx.metrics.text();
    return reply.type(ctx.metrics.contentType).send(text);
  });

  let doc: object | undefined;
  app.get('/openapi.json', async () => (doc ??= buildOpenApi()));
}
