// A question as the families' layouts read it (Laya, NLI pairs): the protocol's question with a
// choice question's options as an ordered list of [name, description], so the caller's order is
// the rows' (or markers') order and the answer's; a parsed object would put integer-like names first.
import { optionEntries, questionOrder } from '../../../protocol/index.js';
import type { Content, EvaluateRequest, Question } from '../../types.js';

export type FamilyQuestion =
  | {
      type: 'noul';
      instructions?: Content | null;
      criteria?: { true?: Content | null; false?: Content | null } | null;
    }
  | { type: 'choice'; instructions?: Content | null; options: ReadonlyArray<readonly [string, Content | null]> }
  | { type: 'score'; instructions?: Content | null; criteria: readonly Content[] };

/** The protocol's question as a layout reads it: choice options in the parsed object's key order. */
export function familyQuestion(
  q:
    | {
        type: 'noul';
        instructions?: Content | null;
        criteria?: { true?: Content | null; false?: Content | null } | null;
      }
    | { type: 'choice'; instructions?: Content | null; criteria: Record<string, Content | null> }
    | { type: 'score'; instructions?: Content | null; criteria: Content[] },
): FamilyQuestion {
  if (q.type === 'choice') return { type: 'choice', instructions: q.instructions, options: Object.entries(q.criteria) };
  return q;
}

/** A request's questions in the order sent, each as the families' layouts read it. */
export function askedInOrder(
  request: EvaluateRequest,
): Array<{ key: string; question: Question; layout: FamilyQuestion; options?: string[] }> {
  return questionOrder(request.questions, request.order).map(({ id, options }) => {
    const question = request.questions[id]!;
    if (question.type !== 'choice') return { key: id, question, layout: question };
    const layout: FamilyQuestion = {
      type: 'choice',
      instructions: question.instructions,
      options: optionEntries(question.criteria, options),
    };
    return { key: id, question, layout, options: layout.options.map(([name]) => name) };
  });
}
