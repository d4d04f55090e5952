// The Kev pointer family (`kev-pointer`) as the engine runs it: the folder as published (the graph
// with its external data, tokenizer.json, decision.json, calibration.json), one causal row per
// question (layout.ts: the state's part, <state> and the state's tokens, then the question's
// branch), run by the causal-row runner (../causal/runner.ts: decide_pos, opt_pos → scores), and
// the readout: softmax of the question's option scores over the head's temperature.
// docs/families/kev-pointer.md.
import { Tokenizer } from '@huggingface/tokenizers';
import type { FamilyQuestion, RowFamilySpec, RowOutput, RowReader } from '../rows/family.js';
import { disabledNote, readTokenizerFiles } from '../rows/tokenizer.js';
import { causalRow, type CausalPlan, type WholeRow } from '../causal/plan.js';
import { openCausalRunner } from '../causal/runner.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { headProbabilities, type TypeTemperatures } from '../shared/settings.js';
import { readKevConfig, type KevConfig } from './config.js';
import { kevRow, kevState } from './layout.js';

/**
 * A question's probabilities from its row's scores, in the answer builder's order: choice per
 * option, score per level, noul [P(yes), P(no)] (the head's options are [no, yes]).
 */
export function kevProbabilities(
  type: FamilyQuestion['question']['type'],
  scores: readonly number[],
  t: TypeTemperatures,
): number[] {
  return headProbabilities(type, scores, t[type], 'false-true');
}

export interface KevReader extends RowReader<CausalPlan> {
  config: KevConfig;
}

/** The Kev family's parts: its folder (settings, tokenizer, layout, readout) and its graph (the causal-row runner). */
export const kevRows: RowFamilySpec<CausalPlan, KevReader, WholeRow> = {
  read(c) {
    const files = readTokenizerFiles(c.modelDir);
    const tokenizer = new Tokenizer(files.json, files.config);
    const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;
    const config = readKevConfig(c.modelDir, (s) => tokenizer.token_to_id(s));
    return {
      config,
      notes: [...disabledNote(files), ...config.notes],
      plan(request) {
        const once = encodeOnce(encode);
        const state = kevState(request.state, once, config);
        // The state's part: <state> and the state's tokens, the same in every row.
        const statePart = [config.specials.state, ...state.ids];
        const rows: CausalPlan['rows'] = [];
        const questions = askedInOrder(request).map(({ key, question, layout, options }) => {
          const row = kevRow(layout, state.ids, once, config);
          const q: FamilyQuestion = { key, question, rows: [rows.length] };
          rows.push(
            causalRow(row.ids, statePart.length, { decide_pos: row.decide, opt_pos: row.opts }, row.opts.length),
          );
          if (options) q.options = options;
          if (state.truncated) q.truncated = ['state'];
          return q;
        });
        return { questions, rows, state: statePart };
      },
      probabilities: (q, outputs: readonly RowOutput[]) =>
        kevProbabilities(q.question.type, outputs[0]!.logits, config.temperatures),
    };
  },
  open: (c, reader) =>
    openCausalRunner(c, {
      what: 'Kev pointer',
      positions: { decide_pos: 'one', opt_pos: 'list' },
      output: 'scores',
      padId: reader.config.specials.pad,
    }),
};
