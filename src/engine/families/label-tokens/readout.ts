// The label-tokens readout (docs/families/label-tokens.md, "The readout"): each row's label
// log-probabilities at the slot (the LM's distribution restricted to the question's label tokens:
// normalizing them is the softmax of the label logits) → each answer's log-probabilities, in the
// engine's label order, for the engine's one answer builder (answerQuestions: `assay calibrate`'s
// temperature on top, then normalized): choice per option / t_choice, score per level / t_score,
// noul [P(true side), P(false side)] / t_noul, the row having written the sides in `noul.order`.
import type { ReadQuestion } from '../../prompting/plan.js';
import type { TypeTemperatures } from '../shared/settings.js';
import type { LabelTokensSettings } from './settings.js';

export function labelTokensLogps(
  questions: readonly ReadQuestion[],
  rowLogps: ReadonlyArray<readonly number[]>,
  t: TypeTemperatures,
  order: LabelTokensSettings['noul']['order'],
): number[][] {
  return questions.map((q) => {
    const row = rowLogps[q.rows[0]!]!;
    if (q.question.type === 'choice') return row.map((l) => l / t.choice);
    if (q.question.type === 'score') return row.map((l) => l / t.score);
    const yes = order[0] === 'true' ? 0 : 1;
    return [row[yes]! / t.noul, row[1 - yes]! / t.noul];
  });
}
