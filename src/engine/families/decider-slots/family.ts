// The decider as exported with a slot head (`decider-slots`; docs/families/decider-labels.md, "As
// exported with a slot head"): the folder as published (model.onnx with its weights as external
// data, tokenizer.json, decision.json with the label table, calibration.json [T, 1, T]), the
// decider layout's rows (rows.ts), the rows of a batch in one run (right-padded to a multiple of 64
// with the pad id, no attention mask: shared/causal-rows.ts) and the decider readout of each row's
// label logits. The graph takes whole rows and no KV: each row reads the context again.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import { openSession, sessionOptions } from '../../model/session.js';
import { TextCodec } from '../../prompting/tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import { DECIDER_FIELDS, deciderTokenizer, readDeciderFolder } from '../decider/index.js';
import { fileObject } from '../../../protocol/index.js';
import { intAtLeast } from '../shared/settings.js';
import type { FamilyPlan, FamilyQuestion, RowFamily, RowOutput } from '../family.js';
import { encoderGraph, quantizesPerTensor, readJsonFile, tokenizerDir } from '../files.js';
import { rowsOf } from '../shared/causal-rows.js';
import { encodeOnce } from '../shared/memo.js';
import { slotFeeds, slotPlan, slotRowProbabilities, type SlotRowInput } from './rows.js';

/** The graph's inputs and output, as the published export names them. */
const INPUTS = ['input_ids', 'slot_pos'] as const;
const OUTPUT = 'label_logits';
/** The pad when decision.json names none: Qwen3.5's `<|endoftext|>`, found by its string. */
const PAD_TOKEN = '<|endoftext|>';

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

/** Loads a decider slot-head folder: its tokenizer, label table, temperatures and session. */
export async function loadDeciderSlots(c: ResolvedEngineConfig): Promise<RowFamily<SlotRowInput>> {
  const dir = c.modelDir;
  const tokDir = tokenizerDir(dir);
  const tokJson = readJsonFile(join(tokDir, 'tokenizer.json'));
  if (!tokJson) throw new ModelLoadError(`${dir}: no tokenizer.json (at the root or in tokenizer/)`);
  const tokConfig = readJsonFile(join(tokDir, 'tokenizer_config.json')) ?? {};
  const notes: string[] = [];
  const baked = (['truncation', 'padding'] as const).filter((k) => tokJson[k] !== undefined && tokJson[k] !== null);
  if (baked.length) notes.push(`tokenizer.json's own ${baked.join(' and ')} disabled (the layout alone cuts)`);
  const tokenizer = new Tokenizer({ ...tokJson, truncation: null, padding: null }, tokConfig);
  const codec = new TextCodec(tokenizer, tokConfig);
  const folder = readDeciderFolder(dir, (text) => codec.encodeText(text, undefined, true), DeciderSlotsDecisionSchema);
  notes.push(...folder.notes);

  const given = folder.decision.special_tokens?.pad;
  const padId = given ?? tokenizer.token_to_id(PAD_TOKEN);
  if (padId === undefined)
    throw new ModelLoadError(
      `${dir}: no pad id: decision.json has no special_tokens.pad and the tokenizer no ${PAD_TOKEN}`,
    );
  const maxRow = folder.decision.max_row_tokens;
  notes.push(`pad ${padId}` + (maxRow === undefined ? '' : `, rows of at most ${maxRow} tokens (decision.json)`));

  const graph = encoderGraph(dir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${dir}: a decider slot-head model is one graph`);
  const session = await openSession(graph.single, await sessionOptions(c));
  for (const name of INPUTS)
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${graph.single}: not a decider slot-head graph: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  if (!session.outputNames.includes(OUTPUT))
    throw new ModelLoadError(`${graph.single}: no ${OUTPUT} output (it has ${session.outputNames.join(', ')})`);
  const alone = await quantizesPerTensor(graph.single);
  if (alone) notes.push('activations are quantized with one scale per run: rows run one by one');
  const labels = folder.labels.ids.length;

  return {
    name: 'decider-slots',
    graph: graph.single,
    notes,
    rowsAlone: alone,

    plan(request: EvaluateRequest): FamilyPlan<SlotRowInput> {
      const tok = deciderTokenizer(codec, { labels: folder.labels });
      return slotPlan(request, { ...tok, encode: encodeOnce(tok.encode) }, maxRow);
    },

    async run(batch: readonly SlotRowInput[]): Promise<RowOutput[]> {
      let logits: number[][];
      try {
        const out = (await session.run(slotFeeds(batch, padId)))[OUTPUT]!;
        const width = Number(out.dims[out.dims.length - 1]);
        if (width !== labels)
          throw new Error(`the graph gives ${width} label logits per row, the label table has ${labels}`);
        logits = rowsOf(out, batch.length);
      } catch (error) {
        throw new EngineError(`decider slot pass failed: ${(error as Error).message}`);
      }
      return logits.map((l) => ({ logits: l }));
    },

    probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[] {
      return slotRowProbabilities(q, outputs, folder.temperatures);
    },

    async close(): Promise<void> {
      await session.release();
    },
  };
}
