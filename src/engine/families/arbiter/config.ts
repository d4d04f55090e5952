// What the Arbiter family reads of a model folder besides the tokenizer and the graph
// (docs/families/arbiter-fixed.md, "The folder"):
//   decision.json     {"layout": "arbiter-fixed-v1", "pad_token_id" (Gemma's <pad>, 0), "max_len"?}
//   calibration.json  {"temperature": [t_choice, t_score, t_noul]} (v3.3 ships [1, 1, 1]); absent: 1.
import {
  CALIBRATION_FILE,
  nonNegativeInt,
  settingsObject,
  softmaxAt,
  typeTemperatures,
  type TypeTemperatures,
} from '../shared/folder-settings.js';
import type { Question } from '../../types.js';
import { SLOTS } from './layout.js';

/** The row length when decision.json gives none: Gemma 3 4B's context (the reference cuts nothing). */
export const ARBITER_MAX_LEN = 131_072;

export interface ArbiterConfig {
  padId: number;
  maxLen: number;
  temperature: TypeTemperatures;
}

export function readArbiterConfig(decision: unknown, calibration: unknown): ArbiterConfig {
  const d = settingsObject(decision, 'decision.json');
  const temperature = typeTemperatures(settingsObject(calibration, CALIBRATION_FILE));
  return {
    padId: nonNegativeInt(d.pad_token_id, 'decision.json: pad_token_id', 0),
    maxLen: nonNegativeInt(d.max_len, 'decision.json: max_len', ARBITER_MAX_LEN),
    temperature,
  };
}

/** The question's slots of a row's 24 scores (`options`: a choice's count), calibrated: softmax(scores[slots] / T); noul [P(true), P(false)]. */
export function slotProbabilities(
  type: Question['type'],
  scores: readonly number[],
  options: number,
  temperature: ArbiterConfig['temperature'],
): number[] {
  const k = type === 'noul' ? 2 : type === 'score' ? SLOTS.levels : options;
  const from = type === 'noul' ? SLOTS.noul : type === 'score' ? SLOTS.score : SLOTS.choice;
  return softmaxAt(scores.slice(from, from + k), temperature[type]);
}
