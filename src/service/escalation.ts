// Escalation: a registry entry that answers with a first model and re-asks the questions it is
// unsure of (certainty under a per-type threshold) to a second model, a registered one or a remote
// endpoint of this API. To the service it is one more evaluator: evaluate.ts runs it where it
// would run a model, and checks its answers against the contract the same way.
//
// The response stays in the contract: every answer keeps its shape (the second model answers the
// same question), `usage` adds both models' tokens, and evaluate.ts reports the entry's own id.
// When the second model fails or misses its deadline, the first answers stand (on_failure
// "first", the default) or the request fails with 503 (on_failure "error"); /metrics counts both.
import type { EvaluateOptions, EvaluateRequest, EvaluateResult, Evaluator } from '../engine/index.js';
import {
  AnswerSchema,
  questionOrder,
  writeRequest,
  type Answer,
  type LogPolicy,
  type Question,
} from '../protocol/index.js';
import { certainty } from '../quality/index.js';
import { resolveModel, type EscalationSpec, type Registry, type RemoteModel } from '../registry/index.js';
import { ModelUnavailableError } from './errors.js';
import { withModel, type ModelProvider } from './provider.js';

export const DEFAULT_ESCALATION_TIMEOUT_MS = 10_000;

/** Per escalating entry: questions asked, re-asked to the second model, and re-asks that failed (first answer kept or 503). */
export interface EscalationCounts {
  questions: number;
  escalated: number;
  failed: number;
}

// Process-wide, as the metrics registry reads them at scrape time (keyed by the entry's versioned id).
const counts = new Map<string, EscalationCounts>();

/** The counts per escalating entry, for /metrics. */
export function escalationCounts(): Record<string, EscalationCounts> {
  return Object.fromEntries([...counts].map(([id, c]) => [id, { ...c }]));
}

function countOf(id: string): EscalationCounts {
  let c = counts.get(id);
  if (!c) counts.set(id, (c = { questions: 0, escalated: 0, failed: 0 }));
  return c;
}

/** Whether an answer goes to the second model: its type has a threshold (null: all) and its certainty is under it. */
export function shouldEscalate(answer: Answer, below: EscalationSpec['below']): boolean {
  const t = below[answer.type];
  return t === null || (t !== undefined && certainty(answer) < t);
}

/** The second model failed or missed its deadline. */
export class EscalationError extends Error {}

/**
 * The second model of an entry whose policy is `on_failure: error` did not answer: a 503 as an
 * unavailable model (its code and row), not logged (the escalation's counters record it; its
 * reason may be a remote service's message).
 */
export class SecondModelError extends ModelUnavailableError {
  static override readonly log: LogPolicy = 'none';

  constructor(message: string, retryAfterSeconds: number) {
    super(message, retryAfterSeconds);
    this.name = 'SecondModelError';
  }
}

/** POST {url}/v1/systemone with the escalated questions; the key from the environment. */
async function askRemote(
  remote: RemoteModel,
  request: EvaluateRequest,
  signal: AbortSignal,
  env: NodeJS.ProcessEnv,
): Promise<EvaluateResult> {
  const key = remote.api_key_env ? env[remote.api_key_env] : undefined;
  if (remote.api_key_env && !key) throw new EscalationError("the remote model's API key is not set");
  const res = await fetch(`${remote.url.replace(/\/+$/, '')}/v1/systemone`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    // In the order the caller sent (protocol/order.ts): the remote's prompt lists options in it.
    body: writeRequest({ state: request.state, model: remote.model, questions: request.questions }, request.order),
    signal,
  });
  if (!res.ok) throw new EscalationError(`the remote model answered ${res.status}`);
  const body = (await res.json()) as Partial<EvaluateResult>;
  const usage = body.usage;
  if (!usage || !Number.isInteger(usage.input_tokens) || !Number.isInteger(usage.output_tokens))
    throw new EscalationError('the remote model sent no usage');
  return { answers: body.answers ?? {}, usage };
}

/** The second model's answer fits the question (type, probability keys), or undefined. */
function fitting(q: Question, a: unknown): Answer | undefined {
  const parsed = AnswerSchema.safeParse(a);
  if (!parsed.success || parsed.data.type !== q.type) return undefined;
  const answer = a as Answer;
  if (answer.type === 'noul') return answer;
  const keys =
    q.type === 'choice' ? Object.keys(q.criteria) : q.type === 'score' ? q.criteria.map((_, i) => String(i)) : [];
  const got = Object.keys(answer.probabilities);
  return got.length === keys.length && keys.every((k) => k in answer.probabilities) ? answer : undefined;
}

/**
 * The evaluator of an escalating entry `id`. `env` holds the remote key's variable (default the
 * process environment).
 */
export function escalatingEvaluator(
  ctx: { registry: Registry; models: ModelProvider },
  id: string,
  spec: EscalationSpec,
  env: NodeJS.ProcessEnv = process.env,
): Pick<Evaluator, 'evaluate'> {
  const firstId = resolveModel(ctx.registry, spec.first)!.id;
  const secondId = typeof spec.second === 'string' ? resolveModel(ctx.registry, spec.second)!.id : undefined;
  const timeoutMs = spec.timeout_ms ?? DEFAULT_ESCALATION_TIMEOUT_MS;
  return {
    async evaluate(request: EvaluateRequest, options: EvaluateOptions = {}): Promise<EvaluateResult> {
      // An escalating entry reports no usageParts (two models, a sub-request): its batch lines are not merged.
      const { usageParts: _, ...first } = await withModel(ctx.models, firstId, options.signal, (e) =>
        e.evaluate(request, options),
      );
      const ids = Object.keys(request.questions).filter((q) => shouldEscalate(first.answers[q]!, spec.below));
      const c = countOf(id);
      c.questions += Object.keys(request.questions).length;
      if (ids.length === 0) return first;
      c.escalated += ids.length;
      const escalated = new Set(ids);
      const sub: EvaluateRequest = {
        state: request.state,
        questions: Object.fromEntries(ids.map((q) => [q, request.questions[q]!])),
        order: questionOrder(request.questions, request.order).filter((q) => escalated.has(q.id)),
      };
      const deadline = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
      let second: EvaluateResult;
      try {
        second =
          secondId !== undefined
            ? await untilAborted(
                withModel(ctx.models, secondId, signal, (e) => e.evaluate(sub, { ...options, signal })),
                signal,
              )
            : await askRemote(spec.second as RemoteModel, sub, signal, env);
        for (const q of ids)
          if (!fitting(request.questions[q]!, second.answers[q]))
            throw new EscalationError('its answers do not fit the questions');
      } catch (e) {
        // The caller's own deadline or disconnect ends the request as it would without escalation.
        if (options.signal?.aborted) throw e;
        c.failed++;
        const why = deadline.aborted ? `no answer within ${timeoutMs} ms` : (e as Error).message;
        if (spec.on_failure === 'error')
          throw new SecondModelError(`Model ${id}: the second model did not answer (${why})`, 1);
        return first;
      }
      const answers: Record<string, Answer> = {};
      for (const q of Object.keys(request.questions))
        answers[q] = ids.includes(q) ? second.answers[q]! : first.answers[q]!;
      return {
        answers,
        usage: {
          input_tokens: first.usage.input_tokens + second.usage.input_tokens,
          output_tokens: first.usage.output_tokens + second.usage.output_tokens,
        },
      };
    },
  };
}

/** Rejects with the signal's reason when it fires first (a local model still loading, or one that ignores the signal). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** The registered models an escalating entry runs locally (its first, and its second when registered). */
export function escalationModels(registry: Registry, spec: EscalationSpec): string[] {
  return [spec.first, ...(typeof spec.second === 'string' ? [spec.second] : [])].map(
    (n) => resolveModel(registry, n)!.id,
  );
}
