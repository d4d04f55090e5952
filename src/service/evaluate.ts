// The one service function behind POST /v1/systemone and `assay eval`: validate → resolve the
// model → authorize → evaluate → check the answers against the contract. HTTP (keys, limits,
// headers, deadlines) stays in the route; files and flags stay in the command.
import type { EvaluateNotes, EvaluateResult, Evaluator, Lane, UsageParts } from '../engine/index.js';
import { InvalidRequestError, ModelForbiddenError, type LogPolicy } from '../protocol/index.js';
import { type SystemOneRequest, type SystemOneResponse } from '../protocol/index.js';
import { parseRequest, responseProblems } from '../protocol/index.js';
import { ParsedBody, questionOrder, ValidatedBody, type SentOrder } from '../protocol/index.js';
import { acceptedModelNames, resolveModel, type Registry } from '../registry/index.js';
import { escalatingEvaluator } from './escalation.js';
import { withModel, type ModelProvider } from './provider.js';
import { inSpan, stageSpans, tracing } from './tracing.js';

export interface ServiceContext {
  registry: Registry;
  models: ModelProvider;
}

export interface Caller {
  /** Whether the caller may use a model name (alias or versioned id) that resolves to `id`. Default: every model. */
  allows?(name: string, id: string): boolean;
  /** Aborts the evaluation (deadline, client gone), also while the model is still loading. */
  signal?: AbortSignal;
  /** The prefix cache scope of the caller (engine EvaluateOptions.cacheScope). */
  cacheScope?: string;
  /**
   * The engine's scheduler lane (engine EvaluateOptions.lane; default 'interactive'): a batch item
   * runs in 'batch', behind interactive requests and never refused for a full queue.
   */
  lane?: Lane;
  /** Told the versioned id and the question count once the request is accepted (for logs). */
  onAccepted?(facts: { model: string; questionCount: number }): void;
}

export interface Evaluation {
  response: SystemOneResponse;
  /** Time in the engine: queue wait and passes, ms. */
  engineMs: number;
  /** The request's question ids and choice options in the order sent: the order to write the response in (protocol/order.ts). */
  order: SentOrder;
  /** What the model's family says beside the answers (truncation by design, Laya's act_logits): headers, never the body. */
  notes?: EvaluateNotes;
  /**
   * The usage split into the shared state and each question's part (engine EvaluateResult.usageParts):
   * what any subset of the questions, sent alone on the same state, would be charged. Absent where
   * the engine cannot split it exactly (and for an escalating entry).
   */
  usageParts?: UsageParts;
}

/** pydantic's wording for a value outside a set of literals: 'a', 'b' or 'c'. */
function literalList(names: string[]): string {
  const q = names.map((n) => `'${n}'`);
  return q.length <= 1 ? (q[0] ?? "''") : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

/**
 * The engine's answer broke the response contract (a bug, never the caller's fault). → 500. Its
 * message names codes and counts only (never ids, options or content), so logs keep it.
 */
export class ResponseContractError extends Error {
  static readonly code = 'response_contract';
  static readonly log: LogPolicy = 'message';

  constructor(problem: string) {
    super(`engine result violates the response contract: ${problem}`);
    this.name = 'ResponseContractError';
  }
}

/**
 * The engine's result must satisfy the response contract: one answer per question, same type. Of a
 * body the service only has as bytes (ValidatedBody), it knows the question count.
 */
function contractProblem(
  request: SystemOneRequest | { questionCount: number },
  response: SystemOneResponse,
): string | undefined {
  // The schema check sees every own key (`__proto__` ids and options included); codes only, no paths.
  const schema = responseProblems(response);
  if (schema.length > 0) return `response schema: ${schema.join(', ')}`;
  const answered = Object.keys(response.answers);
  if (!('questions' in request))
    return answered.length === request.questionCount
      ? undefined
      : `answered ${answered.length} of ${request.questionCount} questions`;
  const asked = Object.keys(request.questions);
  if (asked.length !== answered.length) return `answered ${answered.length} of ${asked.length} questions`;
  for (const id of asked) {
    // Own properties only: an id or option named like an Object.prototype member is not an answer.
    const a = Object.hasOwn(response.answers, id) ? response.answers[id] : undefined;
    const q = request.questions[id];
    if (!a || !q || a.type !== q.type) return 'an answer is missing or has the wrong type';
    if (a.type === 'choice' || a.type === 'score') {
      const expected =
        q.type === 'choice' ? Object.keys(q.criteria) : q.type === 'score' ? q.criteria.map((_, i) => String(i)) : [];
      const got = Object.keys(a.probabilities);
      if (got.length !== expected.length || !expected.every((k) => Object.hasOwn(a.probabilities, k)))
        return 'probability keys differ from the question';
    }
  }
  return undefined;
}

/**
 * Answers a request body: a parsed value (its maps in their own key order), a ParsedBody (with the
 * order they were sent in) or a ValidatedBody (bytes). Throws InvalidRequestError (422) for a body
 * that breaks the contract or names an unknown model, ModelForbiddenError (403), the model
 * provider's and the engine's errors as they are, and a plain Error when the engine's answer
 * breaks the contract.
 */
export async function evaluateRequest(ctx: ServiceContext, body: unknown, caller: Caller = {}): Promise<Evaluation> {
  // A large body arrives validated, as its bytes (protocol/body.ts): it never becomes an object here.
  const validated = body instanceof ValidatedBody ? body : undefined;
  let request: SystemOneRequest | { model: string; questionCount: number };
  let order: SentOrder;
  if (validated) {
    request = { model: validated.model, questionCount: validated.questionCount };
    order = validated.order;
  } else {
    const parsed = parseRequest(body instanceof ParsedBody ? body.value : body);
    if (!parsed.ok) throw new InvalidRequestError(parsed.detail);
    // zod has validated the raw body; the raw values go on (zod's copies would drop odd keys).
    request = parsed.request;
    order = questionOrder(request.questions, body instanceof ParsedBody ? body.order : undefined);
  }

  const resolved = resolveModel(ctx.registry, request.model);
  if (!resolved) {
    const names = acceptedModelNames(ctx.registry).filter((n) => {
      const m = resolveModel(ctx.registry, n);
      return m && (caller.allows?.(n, m.id) ?? true);
    });
    const expected = literalList(names);
    throw new InvalidRequestError([
      {
        type: 'literal_error',
        loc: ['body', 'model'],
        msg: `Input should be ${expected}`,
        input: request.model,
        ctx: { expected },
      },
    ]);
  }
  if (caller.allows && !caller.allows(request.model, resolved.id)) throw new ModelForbiddenError(request.model);
  caller.onAccepted?.({
    model: resolved.id,
    questionCount: 'questions' in request ? Object.keys(request.questions).length : request.questionCount,
  });

  // An escalating entry answers through its two models as one evaluator (escalation.ts). A model is
  // held (leased) while it answers: it is never unloaded under a request.
  const escalate = resolved.entry.escalate;
  // Traced: the engine times its stages (planning, queue wait, each pass, readout) for spans here.
  const options = { signal: caller.signal, cacheScope: caller.cacheScope, lane: caller.lane, trace: tracing() };
  let started = performance.now();
  const run = async (evaluator: Pick<Evaluator, 'evaluate' | 'evaluateBody'>): Promise<EvaluateResult> => {
    started = performance.now();
    if ('questions' in request)
      return evaluator.evaluate({ state: request.state, questions: request.questions, order }, options);
    if (evaluator.evaluateBody) return evaluator.evaluateBody(validated!.bytes, options);
    // An evaluator without it (an escalating entry, a library caller's own): parsed here after all.
    const { state, questions } = JSON.parse(new TextDecoder().decode(validated!.bytes)) as SystemOneRequest;
    return evaluator.evaluate({ state, questions, order }, options);
  };
  const result: EvaluateResult = await inSpan(
    'evaluate',
    { 'assay.model': resolved.id, 'assay.lane': caller.lane ?? 'interactive' },
    async (span) => {
      const r = escalate
        ? await run(escalatingEvaluator(ctx, resolved.id, escalate))
        : await withModel(ctx.models, resolved.id, caller.signal, run);
      if (span) {
        span.setAttributes({
          'assay.input_tokens': r.usage.input_tokens,
          'assay.questions': Object.keys(r.answers).length,
        });
        stageSpans(r.stages);
      }
      return r;
    },
  );
  const engineMs = performance.now() - started;

  const response: SystemOneResponse = { model: resolved.id, answers: result.answers, usage: result.usage };
  const problem = contractProblem(request, response);
  if (problem) throw new ResponseContractError(problem);
  const evaluation: Evaluation = { response, engineMs, order };
  if (result.notes) evaluation.notes = result.notes;
  if (result.usageParts && !escalate) evaluation.usageParts = result.usageParts;
  return evaluation;
}
