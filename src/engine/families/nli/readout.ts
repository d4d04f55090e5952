// The NLI pairs readout: each row's logits → its option's score (the entailment column) → the
// numbers an answer is made of, in float64, as ZeroShotClassificationPipeline.postprocess reads
// them with multi_label false (docs/families/nli-pairs.md, "The readout").
import { softmax } from '../../../common/index.js';
import { answerConfidence, type ConfidenceKind } from '../../execution/answers.js';
import type { NliLabels } from './config.js';
import type { NliQuestion } from './layout.js';

// Softmax in float64, max-subtracted (the pipeline's plain exp overflows past ~88 in float32).

/** A row's P(entailment) on its own: softmax over [contradiction, entailment]; a 1-column scorer: sigmoid. */
export function rowEntailment(logits: readonly number[], labels: NliLabels): number {
  if (labels.columns === 1) return 1 / (1 + Math.exp(-logits[0]!));
  return softmax([logits[labels.contradiction]!, logits[labels.entailment]!])[1]!;
}

export interface NliReadout {
  /** The entailment logit of each row: its option's score. */
  entailment: number[];
  /** How the probabilities were made: over the options' entailment logits, or the one row on its own. */
  mode: 'options' | 'row';
  /** choice: per option; score: per level; noul: [P(yes)]. */
  probabilities: number[];
  /** The option with the highest probability (the first of equal ones). */
  best: number;
  score?: number;
  noul?: number;
  confidence?: number;
}

/**
 * From the rows' logits (rows × columns, in option order):
 * - choice and score with two or more options: softmax over the options' entailment logits
 *   (the pipeline's single-label mode); score = Σ level · p(level);
 * - noul (one row): P(yes) = the row's entailment against its contradiction column (the pipeline's
 *   mode for one label); a 3-way model's neutral column is not read;
 * - a choice or score with one option: the pipeline would give that row's own P(entailment); the
 *   contract's distribution over one option is [1], so probabilities are [1] (mode 'row' still
 *   reports the entailment logit).
 * confidence (choice, score): the engine's formula (answers.ts; 'entropy' is 1 − H/ln K).
 */
export function nliReadout(
  type: NliQuestion['type'],
  logits: ReadonlyArray<readonly number[]>,
  labels: NliLabels,
  kind: ConfidenceKind = 'entropy',
): NliReadout {
  const entailment = logits.map((row) => row[labels.entailment]!);
  if (type === 'noul') {
    const p = rowEntailment(logits[0]!, labels);
    return { entailment, mode: 'row', probabilities: [p], best: 0, noul: p };
  }
  const mode = logits.length === 1 ? 'row' : 'options';
  const probabilities = mode === 'row' ? [1] : softmax(entailment);
  let best = 0;
  probabilities.forEach((p, i) => {
    if (p > probabilities[best]!) best = i;
  });
  const confidence = answerConfidence(type, probabilities, kind);
  const out: NliReadout = { entailment, mode, probabilities, best, confidence };
  if (type === 'score') out.score = probabilities.reduce((s, p, i) => s + i * p, 0);
  return out;
}
