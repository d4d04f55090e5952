// The decider as exported with a slot head (`decider-slots`; the decider's page in docs/families/, "As
// exported with a slot head"): the folder as published (model.onnx with its weights as external
// data, tokenizer.json, decision.json with the label table, calibration.json [T, 1, T]), the
// decider layout's rows (rows.ts), run by the causal-row runner (../causal/runner.ts: slot_pos →
// label_logits, the whole label table per row) and the decider readout of each row's label logits.
import { ModelLoadError } from '../../errors.js';
import { deciderTokenizer, readDeciderFolder, type DeciderFolder } from '../decider/index.js';
import type { RowFamilySpec, RowReader } from '../rows/family.js';
import { dataTokenizer, disabledNote } from '../rows/tokenizer.js';
import type { CausalPlan, WholeRow } from '../causal/plan.js';
import { openCausalRunner } from '../causal/runner.js';
import { encodeOnce } from '../shared/memo.js';
import { DeciderSlotsDecisionSchema, PAD_TOKEN } from './config.js';
import { slotPlan, slotRowProbabilities } from './rows.js';

export interface SlotsReader extends RowReader<CausalPlan> {
  folder: DeciderFolder<unknown>;
  padId: number;
}

/** The slot-head export's parts: its folder (tokenizer, label table, temperatures, layout) and its graph. */
export const deciderSlotsRows: RowFamilySpec<CausalPlan, SlotsReader, WholeRow> = {
  read(c) {
    const dir = c.modelDir;
    const { files, codec, encode } = dataTokenizer(dir);
    const folder = readDeciderFolder(dir, encode, DeciderSlotsDecisionSchema);
    const padId = folder.decision.special_tokens?.pad ?? codec.tokenId(PAD_TOKEN);
    if (padId === undefined)
      throw new ModelLoadError(
        `${dir}: no pad id: decision.json has no special_tokens.pad and the tokenizer no ${PAD_TOKEN}`,
      );
    const maxRow = folder.decision.max_row_tokens;
    return {
      folder,
      padId,
      notes: [
        ...disabledNote(files),
        ...folder.notes,
        `pad ${padId}` + (maxRow === undefined ? '' : `, rows of at most ${maxRow} tokens (decision.json)`),
      ],
      plan(request) {
        const tok = deciderTokenizer(codec, { labels: folder.labels });
        return slotPlan(request, { ...tok, encode: encodeOnce(tok.encode) }, maxRow);
      },
      probabilities: (q, outputs) => slotRowProbabilities(q, outputs, folder.temperatures),
    };
  },
  open: (c, reader) =>
    openCausalRunner(c, {
      what: 'decider slot-head',
      positions: { slot_pos: 'one' },
      output: 'label_logits',
      padId: reader.padId,
      columns: { count: reader.folder.labels.ids.length, what: 'label logits' },
    }),
};
