// act | review | abstain: what an agent should do with an answer, from the answer's certainty (the
// coverage report's measure: noul max(p, 1 − p), choice and score their confidence) and per-type
// thresholds (a coverage report's, or set in the registry). Pure.
import type { Answer } from '../protocol/index.js';
import { certainty } from '../quality/index.js';

export type QuestionType = Answer['type'];
export type TypeThresholds = Partial<Record<QuestionType, number>>;

/**
 * Per question type: at or above `act` the answer can be acted on; below it but at or above
 * `review` it should go to a person (or a stronger model); below `review`, abstain. A type with no
 * `act` threshold gets no decision; a type with no `review` threshold is never abstained on.
 */
export interface DecisionThresholds {
  act: TypeThresholds;
  review?: TypeThresholds;
}

export interface Decision {
  decision: 'act' | 'review' | 'abstain';
  /** The certainty compared with the thresholds. */
  certainty: number;
  /** The thresholds of the answer's type that gave the decision. */
  act_threshold: number;
  review_threshold?: number;
}

/** The decision for an answer, or undefined when its type has no `act` threshold. */
export function decide(answer: Answer, thresholds: DecisionThresholds | undefined): Decision | undefined {
  const act = thresholds?.act[answer.type];
  if (act === undefined) return undefined;
  const review = thresholds?.review?.[answer.type];
  const c = certainty(answer);
  const decision = c >= act ? 'act' : review === undefined || c >= review ? 'review' : 'abstain';
  return { decision, certainty: c, act_threshold: act, ...(review === undefined ? {} : { review_threshold: review }) };
}
