// What the Arbiter family reads of a model folder besides the tokenizer and the graph
// (docs/families/arbiter-fixed.md, "The folder"): decision.json (ArbiterDecisionSchema: the pad id,
// the row length) and calibration.json (v3.3 ships [1, 1, 1]; the one rule of shared/settings.ts).
import { fileObject } from '../../../protocol/index.js';
import {
  headProbabilities,
  intAtLeast,
  LayoutField,
  readCalibration,
  readDecisionFile,
  type TypeTemperatures,
} from '../shared/settings.js';
import type { Question } from '../../types.js';
import { SLOTS } from './layout.js';

/** The row length when decision.json gives none: Gemma 3 4B's context (the reference cuts nothing). */
export const ARBITER_MAX_LEN = 131_072;

/** An Arbiter folder's decision.json. */
export const ArbiterDecisionSchema = fileObject({
  layout: LayoutField,
  pad_token_id: intAtLeast(0).default(0).describe('The id input_ids are padded with: Gemma’s `<pad>`.'),
  max_len: intAtLeast(0)
    .default(ARBITER_MAX_LEN)
    .describe('The longest row, in tokens (nothing is cut): a longer one is refused (422).'),
});

export interface ArbiterConfig {
  padId: number;
  maxLen: number;
  temperature: TypeTemperatures;
  /** What the load reports. */
  notes: string[];
}

export function readArbiterConfig(dir: string): ArbiterConfig {
  const d = readDecisionFile(dir, ArbiterDecisionSchema);
  const { temperatures, notes } = readCalibration(dir);
  return {
    padId: d.pad_token_id,
    maxLen: d.max_len,
    temperature: temperatures,
    notes: [`rows of at most ${d.max_len} tokens, pad id ${d.pad_token_id}`, ...notes],
  };
}

/**
 * The question's slots of a row's 24 scores (`options`: a choice's count), calibrated:
 * softmax(scores[slots] / T), noul's slots [true, false] as the answer builder reads them.
 */
export function arbiterProbabilities(
  type: Question['type'],
  scores: readonly number[],
  options: number,
  temperature: TypeTemperatures,
): number[] {
  const k = type === 'noul' ? 2 : type === 'score' ? SLOTS.levels : options;
  const from = type === 'noul' ? SLOTS.noul : type === 'score' ? SLOTS.score : SLOTS.choice;
  return headProbabilities(type, scores.slice(from, from + k), temperature[type], 'true-false');
}
