// What a planner worker is given: a request, or a request body as bytes (protocol/body.ts).
import { questionOrder, sentOrder } from '../../../protocol/index.js';
import type { EvaluateRequest } from '../../types.js';
import type { Plan } from '../plan.js';

const decoder = new TextDecoder();

/**
 * A request body's bytes as the request (the caller validated them: protocol/body.ts), with the
 * order its question ids and options were sent in, read from the text (protocol/order.ts).
 */
export function parseBody(body: Uint8Array): EvaluateRequest {
  const text = decoder.decode(body);
  const { state, questions } = JSON.parse(text) as EvaluateRequest;
  return { state, questions, order: questionOrder(questions, sentOrder(text)) };
}

/** A planner worker's task: a request, or a request body as bytes. */
export type PlanTask = { request: EvaluateRequest } | { body: Uint8Array };

/** A planner thread's one call (workers/channel.ts): a plan of the kind its worker makes. */
export type PlannerCalls<P = Plan> = { plan: [PlanTask, P] };
