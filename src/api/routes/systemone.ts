// POST /v1/systemone: the service function under the key's permissions, a deadline and the
// client's connection (evaluate-as-key.ts); then Server-Timing.
import type { FastifyInstance } from 'fastify';
import { admission } from '../admission.js';
import { evaluateAsKey, untilClientGone } from '../evaluate-as-key.js';

export async function systemoneRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.post('/v1/systemone', { onRequest: admission(ctx) }, async (req, reply) => {
    // An AbortedError (deadline, client gone) becomes 408 in the server's error handler.
    const { response, engineMs } = await evaluateAsKey(ctx, req, req.body, untilClientGone(reply));
    // Time in the engine (queue wait + passes): off unless the operator turns it on.
    if (ctx.serverTimingEngine) reply.header('server-timing', `engine;dur=${engineMs.toFixed(2)}`);
    return response;
  });
}
