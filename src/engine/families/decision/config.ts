// What the Decision family reads of a model folder besides the tokenizer and the graph
// (docs/families/decision-endpoint.md, "The folder"): decision.json (DecisionSchema: the pad id and
// the limits) and calibration.json (the released temperature, by the one rule of shared/settings.ts).
import { z } from 'zod';
import { fileObject } from '../../../protocol/index.js';
import {
  intAtLeast,
  LayoutField,
  readCalibration,
  readDecisionFile,
  type TypeTemperatures,
} from '../shared/settings.js';
import type { DecisionLayoutConfig } from './layout.js';

/** The published limits: rows of 16,384 tokens, choice 2..255, score 2..10. */
export const DECISION_LIMITS = { maxLen: 16_384, maxOptions: 255, maxLevels: 10 } as const;

/** A Decision folder's decision.json. */
export const DecisionSchema = fileObject({
  layout: LayoutField,
  pad_token_id: intAtLeast(0).describe('The id input_ids are padded with (to a multiple of 64).'),
  max_len: intAtLeast(0)
    .default(DECISION_LIMITS.maxLen)
    .describe(
      'The longest row, in tokens (the state, the question and its options; nothing is cut): a longer one is refused (422).',
    ),
  max_options: intAtLeast(0)
    .default(DECISION_LIMITS.maxOptions)
    .describe('The most options of a choice question (at least 2).'),
  max_levels: intAtLeast(0)
    .default(DECISION_LIMITS.maxLevels)
    .describe('The most levels of a score question (at least 2).'),
  choice_null_description: z
    .enum(['null', 'key'])
    .default('null')
    .describe('A choice option sent without a description: written as `null`, or as its key.'),
});

export interface DecisionConfig extends DecisionLayoutConfig {
  padId: number;
  /** The head's temperature per type. */
  temperature: TypeTemperatures;
  /** What the load reports. */
  notes: string[];
}

/** The folder's settings from decision.json and calibration.json (which may be absent). */
export function readDecisionConfig(dir: string): DecisionConfig {
  const d = readDecisionFile(dir, DecisionSchema);
  const { temperatures, notes } = readCalibration(dir);
  return {
    padId: d.pad_token_id,
    maxLen: d.max_len,
    maxOptions: d.max_options,
    maxLevels: d.max_levels,
    choiceNullDescription: d.choice_null_description,
    temperature: temperatures,
    notes: [`rows of at most ${d.max_len} tokens, pad id ${d.pad_token_id}`, ...notes],
  };
}
