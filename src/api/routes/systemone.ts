// POST /v1/systemone: the service function under the key's permissions, a deadline and the
// client's connection (evaluate-as-key.ts); then Server-Timing. The response is written in the
// order the question ids and choice options were sent (protocol/order.ts), which an object's own
// key order cannot hold for integer-like keys.
import type { FastifyInstance } from 'fastify';
import { ParsedBody, ValidatedBody, writeResponse } from '../../protocol/index.js';
import { admission } from '../admission.js';
import { ACT_LOGITS_HEADER, notesHeaders } from '../notes-headers.js';
import { evaluateAsKey, untilClientGone } from '../evaluate-as-key.js';

export async function systemoneRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.post('/v1/systemone', { onRequest: admission(ctx) }, async (req, reply) => {
    // A large body arrives as its bytes with its order; a small one parsed, its order read beside it.
    const body = req.body instanceof ValidatedBody ? req.body : new ParsedBody(req.body, req.sentOrder ?? undefined);
    // An AbortedError (deadline, client gone) becomes 408 in the server's error handler.
    const { response, engineMs, order, notes } = await evaluateAsKey(ctx, req, body, untilClientGone(reply));
    // Time in the engine (queue wait + passes): off unless the operator turns it on.
    if (ctx.serverTimingEngine) reply.header('server-timing', `engine;dur=${engineMs.toFixed(2)}`);
    // What the model family says beside the answers (docs/api.md, "Model family headers").
    for (const [name, value] of Object.entries(notesHeaders(notes, req.headers[ACT_LOGITS_HEADER])))
      reply.header(name, value);
    return reply.type('application/json; charset=utf-8').send(writeResponse(response, order));
  });
}
