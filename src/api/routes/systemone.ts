// POST /v1/systemone: validate, resolve the model, evaluate under a deadline, check the answer.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AbortedError, BudgetError, type EvaluateRequest, type EvaluateResult } from '../../engine/index.js';
import { acceptedModelNames, resolveModel } from '../../registry.js';
import type { ApiContext } from '../context.js';
import { ApiError, validationError } from '../errors.js';
import { requestErrors } from '../request-validation.js';
import { guard, keyAllows, limitsOf, rateKey } from '../guard.js';
import { SystemOneResponseSchema, type SystemOneRequest, type SystemOneResponse } from '../schemas.js';

/** pydantic's wording for a value outside a set of literals: 'a', 'b' or 'c'. */
function literalList(names: string[]): string {
  const q = names.map((n) => `'${n}'`);
  return q.length <= 1 ? (q[0] ?? "''") : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

/** Rejects with AbortedError when the signal fires first (e.g. while a model is still loading). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The engine's result must satisfy the response contract: one answer per question, same type. */
function checkAnswer(request: SystemOneRequest, response: SystemOneResponse): string | undefined {
  const parsed = SystemOneResponseSchema.safeParse(response);
  // Issue codes only: paths would carry question ids and option names into the logs.
  if (!parsed.success) return `response schema: ${parsed.error.issues.map((i) => i.code).join(', ')}`;
  const asked = Object.keys(request.questions);
  const answered = Object.keys(response.answers);
  if (asked.length !== answered.length) return `answered ${answered.length} of ${asked.length} questions`;
  for (const id of asked) {
    const a = response.answers[id];
    const q = request.questions[id];
    if (!a || a.type !== q.type) return 'an answer is missing or has the wrong type';
    if (a.type === 'choice' || a.type === 'score') {
      const expected = a.type === 'choice' ? Object.keys(q.criteria as object) : (q.criteria as unknown[]).map((_, i) => String(i));
      const got = Object.keys(a.probabilities);
      if (got.length !== expected.length || !expected.every((k) => k in a.probabilities)) return 'probability keys differ from the question';
    }
  }
  return undefined;
}

export function systemoneRoute(app: FastifyInstance, ctx: ApiContext): void {
  app.post('/v1/systemone', { onRequest: guard(ctx) }, async (req, reply: FastifyReply) => {
    const key = req.apiKey!;
    const body = req.body;
    const invalid = requestErrors(body);
    if (invalid.length) throw validationError(invalid);
    // zod has validated the raw body; the raw values go on (zod's copies would drop odd keys).
    const request = body as SystemOneRequest;

    const resolved = resolveModel(ctx.registry, request.model);
    if (!resolved) {
      const names = acceptedModelNames(ctx.registry).filter((n) => {
        const m = resolveModel(ctx.registry, n);
        return m && keyAllows(key, n, m.id);
      });
      const expected = literalList(names);
      throw validationError([
        { type: 'literal_error', loc: ['body', 'model'], msg: `Input should be ${expected}`, input: request.model, ctx: { expected } },
      ]);
    }
    if (!keyAllows(key, request.model, resolved.id)) {
      throw new ApiError(403, `This API key may not use model '${request.model}'`);
    }
    req.facts = { model: resolved.id, question_count: Object.keys(request.questions).length };

    // One deadline covers loading, queueing and evaluation; a client that hangs up aborts too.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new AbortedError(`deadline of ${ctx.deadlineMs} ms exceeded`)), ctx.deadlineMs);
    const onClose = () => {
      if (!reply.raw.writableFinished) controller.abort(new AbortedError('client closed the connection'));
    };
    reply.raw.once('close', onClose);
    let result: EvaluateResult;
    try {
      const evaluator = await untilAborted(ctx.models.get(resolved.id), controller.signal);
      const started = performance.now();
      // Each key's prefix cache is its own unless the operator shares it: no key can time another's.
      const cacheScope = ctx.prefixCacheScope === 'shared' ? undefined : rateKey(key);
      // An AbortedError (deadline, client gone) becomes 408 in the server's error handler.
      result = await evaluator.evaluate(request as EvaluateRequest, { signal: controller.signal, cacheScope });
      // Time in the engine (queue wait + passes): off unless the operator turns it on.
      if (ctx.serverTimingEngine) reply.header('server-timing', `engine;dur=${(performance.now() - started).toFixed(2)}`);
    } catch (error) {
      // A request refused for its size still cost tokenizer time: its counted tokens are charged.
      if (error instanceof BudgetError) ctx.limiter.charge(rateKey(key), error.count, limitsOf(key));
      throw error;
    } finally {
      clearTimeout(timer);
    }

    ctx.limiter.charge(rateKey(key), result.usage.input_tokens, limitsOf(key));
    ctx.metrics.inputTokens(resolved.id, result.usage.input_tokens);
    req.facts.input_tokens = result.usage.input_tokens;

    const response: SystemOneResponse = { model: resolved.id, answers: result.answers, usage: result.usage };
    const problem = checkAnswer(request, response);
    if (problem) throw new Error(`engine result violates the response contract: ${problem}`);
    return response;
  });
}
