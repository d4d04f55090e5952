// What the slot-head export reads of decision.json (the decider's page in docs/families/, "As exported
// with a slot head"): the decider's fields (the label table, the isolated rows' temperature) and
// its own, the pad id and the longest row.
import { fileObject } from '../../../protocol/index.js';
import { DECIDER_FIELDS } from '../decider/index.js';
import { intAtLeast } from '../shared/settings.js';

/** The pad when decision.json names none: Qwen3.5's `<|endoftext|>`, found by its string. */
export const PAD_TOKEN = '<|endoftext|>';

/** A decider slot-head folder's decision.json: the decider's fields and the export's own. */
export const DeciderSlotsDecisionSchema = fileObject({
  ...DECIDER_FIELDS,
  special_tokens: fileObject({
    pad: intAtLeast(1)
      .optional()
      .describe(`The id the rows of a batch are padded with; absent: the tokenizer's \`${PAD_TOKEN}\`.`),
  })
    .optional()
    .describe('The pad token.'),
  max_row_tokens: intAtLeast(1)
    .optional()
    .describe('Assay’s: the longest row the graph takes (the state and one question); a longer row is refused (422).'),
});
