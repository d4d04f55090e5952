// A Kev folder's settings: decision.json (the layout id, the delimiter and pad tokens by id or by
// string, the row limits; KevDecisionSchema) and calibration.json (the head's temperature, fitted by
// the authors and stored in head.pt; read by the one rule, shared/settings.ts). Missing settings
// take Kev's published values (docs/families/kev-pointer.md).
import { z } from 'zod';
import { fileObject } from '../../../protocol/index.js';
import { ModelLoadError } from '../../errors.js';
import {
  intAtLeast,
  LayoutField,
  readCalibration,
  readDecisionFile,
  type TypeTemperatures,
} from '../shared/settings.js';
import type { KevLayoutConfig, KevSpecials } from './layout.js';

/** Kev's delimiters (Qwen tokens it reuses) and pad, by string: decision.json may name them so. */
export const KEV_TOKENS: Readonly<Record<keyof KevSpecials, string>> = {
  state: '<|fim_prefix|>',
  question: '<|fim_middle|>',
  optionOpen: '<|box_start|>',
  optionClose: '<|box_end|>',
  decide: '<|fim_suffix|>',
  pad: '<|endoftext|>',
};

/** decision.json's key of each special token. */
const DECISION_KEYS: Readonly<Record<keyof KevSpecials, string>> = {
  state: 'state',
  question: 'question',
  optionOpen: 'option_open',
  optionClose: 'option_close',
  decide: 'decide',
  pad: 'pad',
};

/**
 * Kev's serving limits: 8,192 state tokens (its <state> token included), and a row of the state and
 * at most 8,192 tokens of one question's branch (the authors' SERVE_MAX_BRANCH = SERVE_MAX_STATE +
 * 8192; an earlier commit had 8,192 for the whole row, which leaves a state at the cut no room:
 * decision.json's max_row_tokens sets it).
 */
export const KEV_MAX_STATE = 8192;
export const KEV_MAX_ROW = KEV_MAX_STATE + 8192;

const Token = z.union([intAtLeast(0), z.string()], { error: 'expected a token id or a token string' });
const token = (key: keyof KevSpecials, what: string) =>
  Token.optional().describe(`${what}: its id, or its string in tokenizer.json (default \`${KEV_TOKENS[key]}\`).`);

/** A Kev folder's decision.json. */
export const KevDecisionSchema = fileObject({
  layout: LayoutField,
  special_tokens: fileObject({
    state: token('state', 'The token before the state'),
    question: token('question', 'The token before the instructions'),
    option_open: token('optionOpen', 'The token before each option'),
    option_close: token('optionClose', 'The token after each option (the head reads it)'),
    decide: token('decide', 'The last token of a row (the head reads it)'),
    pad: token('pad', 'The pad the rows of a batch are padded with'),
  })
    .optional()
    .describe('The delimiter and pad tokens.'),
  max_state_tokens: intAtLeast(2)
    .default(KEV_MAX_STATE)
    .describe('State tokens a row holds, its state token included: a longer state is cut (and the answer says so).'),
  max_row_tokens: intAtLeast(2)
    .default(KEV_MAX_ROW)
    .describe('Tokens a row may have (the state and one question): a question whose row is longer is refused (422).'),
});

export interface KevConfig extends KevLayoutConfig {
  temperatures: TypeTemperatures;
  /** Where each setting came from (the load notes). */
  notes: string[];
}

/**
 * The folder's settings. `idOf` gives a token string's id in the tokenizer (undefined: not there);
 * decision.json's special_tokens give ids (numbers) or token strings, else Kev's own strings.
 */
export function readKevConfig(dir: string, idOf: (token: string) => number | undefined): KevConfig {
  const decision = readDecisionFile(dir, KevDecisionSchema);
  const given = (decision.special_tokens ?? {}) as Record<string, string | number | undefined>;
  const specials = {} as KevSpecials;
  for (const key of Object.keys(KEV_TOKENS) as Array<keyof KevSpecials>) {
    const v = given[DECISION_KEYS[key]] ?? KEV_TOKENS[key];
    const id = typeof v === 'number' ? v : idOf(v);
    if (id === undefined)
      throw new ModelLoadError(
        `${DECISION_KEYS[key]} token ${JSON.stringify(v)} is not in tokenizer.json (decision.json special_tokens)`,
      );
    specials[key] = id;
  }
  const { max_state_tokens: maxState, max_row_tokens: maxRow } = decision;
  const { temperatures, notes } = readCalibration(dir);
  return {
    specials,
    maxState,
    maxRow,
    temperatures,
    notes: [`rows of at most ${maxRow} tokens, states cut at ${maxState - 1}`, ...notes],
  };
}
