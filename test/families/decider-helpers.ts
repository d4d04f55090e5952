// What the decider-labels tests share: the goldens, a golden request as the engine takes it, the
// replica's codec and label settings.
import type { EvaluateRequest, Question } from '../../src/engine/types.js';
import { DECIDER_GOLDENS, type GoldenRequest } from '../../tools/families/decider/goldens.js';
import { readGoldens } from './golden-helpers.js';

export interface DeciderResult {
  name: string;
  refused?: string;
  ctx?: number[];
  cut?: boolean;
  rows?: Array<{ key: string; level?: number; piece: number[]; slot: number; labels: number[] }>;
  probabilities?: Record<string, number[]>;
}

export interface DeciderGoldens {
  temperature: [number, number, number];
  answer_temperature: Record<string, number>;
  requests: GoldenRequest[];
  results: DeciderResult[];
}

export const goldens = readGoldens<DeciderGoldens>(DECIDER_GOLDENS);

/** A golden request as the engine takes it: choice pairs as criteria, ids and options in the order sent. */
export function deciderRequest(g: GoldenRequest): EvaluateRequest {
  const questions = Object.create(null) as Record<string, Question>;
  for (const [id, q] of g.questions) {
    const criteria = q.type === 'choice' ? Object.fromEntries(q.criteria as Array<[string, unknown]>) : q.criteria;
    questions[id] = { ...q, ...(q.criteria === undefined ? {} : { criteria }) } as unknown as Question;
  }
  const order = g.questions.map(([id, q]) =>
    q.type === 'choice' ? { id, options: (q.criteria as Array<[string, unknown]>).map(([n]) => n) } : { id },
  );
  return { state: g.state, questions, order } as EvaluateRequest;
}
