// The decider's readout (docs/families/decider-labels.md): each row's label log-probabilities at
// the slot (the LM's distribution restricted to the label tokens: normalizing them is the softmax
// of the label logits) → each answer's log-probabilities, in the engine's label order, for the
// engine's one answer builder (answerQuestions: `assay calibrate`'s temperature, then normalized):
// - choice: the option labels / t_choice;
// - noul: the row lists `no` (A) then `yes` (B); the engine reads [yes, no]: [l_B, l_A] / t_noul;
// - score: each level's isolated yes/no row gives z_j = log σ((l_yes − l_no) / T_row), then / t_score
//   (softmax over the levels = each level's P(fits) normalized over the levels).
import type { ReadQuestion } from '../../prompting/plan.js';

/** The family's temperatures (calibration.json [t_choice, t_score, t_noul]; T_row of the isolated rows). */
export interface DeciderTemperatures {
  choice: number;
  score: number;
  noul: number;
  /** The isolated score rows' temperature (decision.json isolated_row_temperature; default t_noul). */
  row: number;
}

/** log σ(x), without overflow. */
export function logSigmoid(x: number): number {
  return x >= 0 ? -Math.log1p(Math.exp(-x)) : x - Math.log1p(Math.exp(x));
}

/** Each answer's log-probabilities from its rows' label log-probabilities. */
export function deciderLogps(
  questions: readonly ReadQuestion[],
  rowLogps: ReadonlyArray<readonly number[]>,
  t: DeciderTemperatures,
): number[][] {
  return questions.map((q) => {
    const rows = q.rows.map((i) => rowLogps[i]!);
    if (q.question.type === 'choice') return rows[0]!.map((l) => l / t.choice);
    if (q.question.type === 'noul') return [rows[0]![1]! / t.noul, rows[0]![0]! / t.noul];
    return rows.map(([no, yes]) => logSigmoid((yes! - no!) / t.row) / t.score);
  });
}
