// POST /v1/systemone: the service function under the key's permissions, a deadline and the
// client's connection; then the key's token charge, metrics and Server-Timing.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AbortedError, BudgetError } from '../../engine/index.js';
import { evaluateRequest, type Evaluation } from '../../service/index.js';
import { admission, keyAllows, limitsOf, rateKey } from '../admission.js';

export async function systemoneRoute(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  app.post('/v1/systemone', { onRequest: admission(ctx) }, async (req, reply: FastifyReply) => {
    const key = req.apiKey!;
    // One deadline covers loading, queueing and evaluation; a client that hangs up aborts too.
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new AbortedError(`deadline of ${ctx.deadlineMs} ms exceeded`)),
      ctx.deadlineMs,
    );
    const onClose = () => {
      if (!reply.raw.writableFinished) controller.abort(new AbortedError('client closed the connection'));
    };
    reply.raw.once('close', onClose);
    let evaluation: Evaluation;
    try {
      evaluation = await evaluateRequest(ctx, req.body, {
        allows: (name, id) => keyAllows(key, name, id),
        signal: controller.signal,
        // Each key's prefix cache is its own unless the operator shares it: no key can time another's.
        cacheScope: ctx.prefixCacheScope === 'shared' ? undefined : rateKey(key),
        onAccepted: ({ model, questionCount }) => {
          req.facts = { model, question_count: questionCount };
        },
      });
    } catch (error) {
      // A request refused for its size still cost tokenizer time: its counted tokens are charged.
      // An AbortedError (deadline, client gone) becomes 408 in the server's error handler.
      if (error instanceof BudgetError) ctx.limiter.charge(rateKey(key), error.count, limitsOf(key));
      throw error;
    } finally {
      clearTimeout(timer);
    }

    const { response, engineMs } = evaluation;
    // Time in the engine (queue wait + passes): off unless the operator turns it on.
    if (ctx.serverTimingEngine) reply.header('server-timing', `engine;dur=${engineMs.toFixed(2)}`);
    ctx.limiter.charge(rateKey(key), response.usage.input_tokens, limitsOf(key));
    ctx.metrics.inputTokens(response.model, response.usage.input_tokens);
    if (req.facts) req.facts.input_tokens = response.usage.input_tokens;
    return response;
  });
}
