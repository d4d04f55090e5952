// The Decision endpoint family (`decision-endpoint`) as the engine runs it: the folder's files
// (decision.json, calibration.json, tokenizer.json at the root or in tokenizer/, one graph), one
// causal row per question (layout.ts), run by the causal-row runner (../causal/runner.ts:
// query_pos, cand_pos → logits[rows, k]) and the calibrated readout softmax(logits / T).
// docs/families/decision-endpoint.md.
import type { RowFamilySpec, RowReader } from '../rows/family.js';
import { dataTokenizer, disabledNote } from '../rows/tokenizer.js';
import { rowPerQuestion, type CausalPlan, type WholeRow } from '../causal/plan.js';
import { openCausalRunner } from '../causal/runner.js';
import { boundedTokens } from '../shared/bounded.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { headProbabilities } from '../shared/settings.js';
import { payload } from './canonical.js';
import { readDecisionConfig, type DecisionConfig } from './config.js';
import { decisionRow, stateSegment, tooLong } from './layout.js';

/** Tokens of a state's lower bound past which its row cannot fit (the prefix's other text merges with a few of them at most). */
const STATE_MARGIN = 64;

export interface DecisionReader extends RowReader<CausalPlan> {
  config: DecisionConfig;
}

/** The Decision family's parts: its folder (settings, tokenizer, layout, readout) and its graph (the causal-row runner). */
export const decisionRows: RowFamilySpec<CausalPlan, DecisionReader, WholeRow> = {
  read(c) {
    const config = readDecisionConfig(c.modelDir);
    // Content is data: every text of the row is tokenized as ordinary text (added-token strings in
    // caller text stay text), each on its own, as the decider's slot export does.
    const { files, encode } = dataTokenizer(c.modelDir);
    return {
      config,
      notes: [...config.notes, ...disabledNote(files, 'nothing is cut')],
      plan(request) {
        const rowEncode = encodeOnce(encode);
        // A state far past the row's length is refused before its prefixes are tokenized whole.
        const bound = boundedTokens(rowEncode, payload(request.state ?? null), config.maxLen + STATE_MARGIN, 'start');
        const asked = askedInOrder(request);
        if (bound.partial && asked.length) throw tooLong(config.maxLen + 1, config.maxLen, true);
        // The state's part: as far as every row begins with the tokens of the text before the question.
        return rowPerQuestion(asked, rowEncode, stateSegment(request.state), (layout) => {
          const row = decisionRow(layout, request.state, rowEncode, config);
          return { ids: row.ids, at: { query_pos: row.queryPos, cand_pos: row.candPos }, width: row.candPos.length };
        });
      },
      probabilities(q, outputs) {
        // The head's noul order is [false, true]; the answer builder reads [yes, no].
        const type = q.question.type;
        return headProbabilities(type, outputs[0]!.logits, config.temperature[type], 'false-true');
      },
    };
  },
  open: (c, reader) =>
    openCausalRunner(c, {
      what: 'Decision endpoint',
      positions: { query_pos: 'one', cand_pos: 'list' },
      output: 'logits',
      padId: reader.config.padId,
    }),
};
