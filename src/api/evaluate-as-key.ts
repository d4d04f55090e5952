// One evaluation under the caller's key, shared by POST /v1/systemone and the MCP tools: the
// service function with the key's permissions and prefix cache scope, one deadline over loading,
// queueing and evaluation, then the key's token charge and the token metric.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AbortedError, BudgetError } from '../engine/index.js';
import { evaluateRequest, type Evaluation } from '../service/index.js';
import { keyAllows, limitsOf, rateKey } from './admission.js';
import type { ApiContext } from './context.js';
import { truncationSummary } from './notes-headers.js';

/** Aborts when the client hangs up before its response is written. */
export function untilClientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort(new AbortedError('client closed the connection'));
  });
  return controller.signal;
}

/**
 * Evaluates `body` as the request's key may (admission put the key on the request). Aborts with
 * `signal` or at the deadline (an AbortedError: 408). Every token that reached the tokenizer is
 * charged to the key, a request refused for its size too.
 */
export async function evaluateAsKey(
  ctx: ApiContext,
  req: FastifyRequest,
  body: unknown,
  signal: AbortSignal,
): Promise<Evaluation> {
  const key = req.apiKey!;
  const deadline = new AbortController();
  const timer = setTimeout(
    () => deadline.abort(new AbortedError(`deadline of ${ctx.deadlineMs} ms exceeded`)),
    ctx.deadlineMs,
  );
  let evaluation: Evaluation;
  try {
    evaluation = await evaluateRequest(ctx, body, {
      allows: (name, id) => keyAllows(key, name, id),
      signal: AbortSignal.any([signal, deadline.signal]),
      // Each key's prefix cache is its own unless the operator shares it: no key can time another's.
      cacheScope: ctx.prefixCacheScope === 'shared' ? undefined : rateKey(key),
      onAccepted: ({ model, questionCount }) => {
        req.facts = { model, question_count: questionCount };
      },
    });
  } catch (error) {
    // A request refused for its size still cost tokenizer time: its counted tokens are charged.
    if (error instanceof BudgetError) ctx.limiter.charge(rateKey(key), error.count, limitsOf(key));
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const { usage, model } = evaluation.response;
  ctx.limiter.charge(rateKey(key), usage.input_tokens, limitsOf(key));
  ctx.metrics.inputTokens(model, usage.input_tokens);
  if (req.facts) req.facts.input_tokens = usage.input_tokens;
  const truncated = truncationSummary(evaluation.notes?.truncated);
  if (req.facts && truncated) req.facts.truncated = truncated;
  return evaluation;
}
