// The Arbiter family (`arbiter-fixed`) as the engine runs it: the folder's files (decision.json,
// calibration.json, tokenizer.json at the root or in tokenizer/, one graph), one plain-text causal
// row per question (layout.ts), run by the causal-row runner (../causal/runner.ts: last_pos →
// scores[rows, 24]) and the readout of the question's slots, softmax(scores[slots] / T).
// docs/families/arbiter-fixed.md.
import type { RowFamilySpec, RowReader } from '../rows/family.js';
import { dataTokenizer, disabledNote } from '../rows/tokenizer.js';
import { rowPerQuestion, type CausalPlan, type WholeRow } from '../causal/plan.js';
import { openCausalRunner } from '../causal/runner.js';
import { boundedTokens } from '../shared/bounded.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { arbiterProbabilities, readArbiterConfig, type ArbiterConfig } from './config.js';
import { arbiterRow, SLOTS, stateSegment, tooLong } from './layout.js';
import { render } from './render.js';

/** Tokens of a state's lower bound past which its row cannot fit. */
const STATE_MARGIN = 64;

export interface ArbiterReader extends RowReader<CausalPlan> {
  config: ArbiterConfig;
}

/** The Arbiter family's parts: its folder (settings, tokenizer, layout, readout) and its graph (the causal-row runner). */
export const arbiterRows: RowFamilySpec<CausalPlan, ArbiterReader, WholeRow> = {
  read(c) {
    const config = readArbiterConfig(c.modelDir);
    // Content is data: every text of the row is tokenized as ordinary text (added-token strings in
    // caller text stay text), each on its own, as the decider's slot export does.
    const { files, encode } = dataTokenizer(c.modelDir);
    return {
      config,
      notes: [...config.notes, ...disabledNote(files, 'nothing is cut')],
      plan(request) {
        const rowEncode = encodeOnce(encode);
        // A state far past the row's length is refused before each question's row is tokenized whole.
        const bound = boundedTokens(rowEncode, render(request.state), config.maxLen + STATE_MARGIN, 'start');
        const asked = askedInOrder(request);
        if (bound.partial && asked.length) throw tooLong(config.maxLen + 1, config.maxLen, true);
        // The state's part: as far as every row begins with the tokens of the text before the instructions.
        return rowPerQuestion(asked, rowEncode, stateSegment(request.state), (layout) => {
          const row = arbiterRow(layout, request.state, rowEncode, config.maxLen);
          return { ids: row.ids, at: { last_pos: row.lastPos } };
        });
      },
      // noul slots are [true, false]: the answer builder's [yes, no]
      probabilities: (q, outputs) =>
        arbiterProbabilities(q.question.type, outputs[0]!.logits, q.options?.length ?? 0, config.temperature),
    };
  },
  open: (c, reader) =>
    openCausalRunner(c, {
      what: 'Arbiter',
      positions: { last_pos: 'one' },
      output: 'scores',
      padId: reader.config.padId,
      columns: { count: SLOTS.total, what: 'slots' },
    }),
};
