// What a planner worker is given: a request, or a request body as bytes (protocol/body.ts).
import type { EvaluateRequest } from '../../types.js';
import type { Plan } from '../plan.js';

const decoder = new TextDecoder();

/** A request body's bytes as the request (the caller validated them: protocol/body.ts). */
export function parseBody(body: Uint8Array): EvaluateRequest {
  return JSON.parse(decoder.decode(body)) as EvaluateRequest;
}

/** A planner worker's task: a request, or a request body as bytes. */
export type PlanTask = { request: EvaluateRequest } | { body: Uint8Array };

/** A planner thread's one call (workers/channel.ts). */
export type PlannerCalls = { plan: [PlanTask, Plan] };
