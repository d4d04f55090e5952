// What the Decision family reads of a model folder besides the tokenizer and the graph
// (docs/families/decision-endpoint.md, "The folder"):
//   decision.json     {"layout": "decision-endpoint-v1", "pad_token_id", "max_len"?, "max_options"?,
//                      "max_levels"?, "choice_null_description"?: "null" | "key"}
//   calibration.json  {"temperature": [t_choice, t_score, t_noul]} (the released temperature, one
//                      for every type); absent: 1.
import { ModelLoadError } from '../../errors.js';
import {
  CALIBRATION_FILE,
  nonNegativeInt,
  settingsObject,
  softmaxAt,
  typeTemperatures,
  type TypeTemperatures,
} from '../shared/folder-settings.js';
import type { DecisionLayoutConfig } from './layout.js';

/** The published limits: rows of 16,384 tokens, choice 2..255, score 2..10. */
export const DECISION_LIMITS = { maxLen: 16_384, maxOptions: 255, maxLevels: 10 } as const;

export interface DecisionConfig extends DecisionLayoutConfig {
  padId: number;
  /** The head's temperature per type. */
  temperature: TypeTemperatures;
}

/** The folder's settings from decision.json and calibration.json (parsed; calibration may be absent). */
export function readDecisionConfig(decision: unknown, calibration: unknown): DecisionConfig {
  const d = settingsObject(decision, 'decision.json');
  const nullDescription = d.choice_null_description ?? 'null';
  if (nullDescription !== 'null' && nullDescription !== 'key')
    throw new ModelLoadError('decision.json: choice_null_description: expected "null" or "key"');
  const temperature = typeTemperatures(settingsObject(calibration, CALIBRATION_FILE));
  return {
    padId: nonNegativeInt(d.pad_token_id, 'decision.json: pad_token_id'),
    maxLen: nonNegativeInt(d.max_len, 'decision.json: max_len', DECISION_LIMITS.maxLen),
    maxOptions: nonNegativeInt(d.max_options, 'decision.json: max_options', DECISION_LIMITS.maxOptions),
    maxLevels: nonNegativeInt(d.max_levels, 'decision.json: max_levels', DECISION_LIMITS.maxLevels),
    choiceNullDescription: nullDescription,
    temperature,
  };
}

/** Calibrated probabilities of a row's candidate logits: softmax(logits / T). */
export const calibrated = softmaxAt;
