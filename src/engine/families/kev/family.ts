// The Kev pointer family (`kev-pointer`) as the engine runs it: the folder as published (the graph
// with its external data, tokenizer.json, decision.json, calibration.json), one causal row per
// question (layout.ts), the rows of a batch in one run (right-padded to a multiple of 64 with the pad
// id: shared/causal-rows.ts), and the readout: softmax of the question's option scores over the
// head's temperature. The graph takes whole rows and no KV: each question's row reads the state
// again. docs/families/kev-pointer.md.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import { openSession, sessionOptions } from '../../model/session.js';
import type { EvaluateRequest } from '../../types.js';
import type { FamilyPlan, FamilyQuestion, RowFamily, RowOutput } from '../family.js';
import { encoderGraph, quantizesPerTensor, readJsonFile, tokenizerDir } from '../files.js';
import { causalInputIds, rowPositionLists, rowPositions, rowsOf } from '../shared/causal-rows.js';
import { headProbabilities, type TypeTemperatures } from '../shared/settings.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { readKevConfig } from './config.js';
import { kevRow, kevState, type KevRow } from './layout.js';

/** One question's row as the graph reads it. */
export interface KevRowInput {
  tokens: number;
  row: KevRow;
}

/** The graph's inputs and output, as the published export names them. */
const INPUTS = ['input_ids', 'decide_pos', 'opt_pos'] as const;
const OUTPUT = 'scores';

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

/** The graph's inputs for a batch of rows. */
export function kevFeeds(batch: readonly KevRowInput[], padId: number) {
  return {
    input_ids: causalInputIds(
      batch.map((r) => r.row.ids),
      padId,
    ),
    decide_pos: rowPositions(batch.map((r) => r.row.decide)),
    opt_pos: rowPositionLists(batch.map((r) => r.row.opts)).tensor,
  };
}

/** Loads a Kev folder: its settings, tokenizer and session. */
export async function loadKev(c: ResolvedEngineConfig): Promise<RowFamily<KevRowInput>> {
  const dir = c.modelDir;
  const tokJson = readJsonFile(join(tokenizerDir(dir), 'tokenizer.json'));
  if (!tokJson) throw new ModelLoadError(`${dir}: no tokenizer.json (at the root or in tokenizer/)`);
  const tokConfig = readJsonFile(join(tokenizerDir(dir), 'tokenizer_config.json')) ?? {};
  const notes: string[] = [];
  const baked = (['truncation', 'padding'] as const).filter((k) => tokJson[k] !== undefined && tokJson[k] !== null);
  if (baked.length) notes.push(`tokenizer.json's own ${baked.join(' and ')} disabled (the layout alone cuts)`);
  const tokenizer = new Tokenizer({ ...tokJson, truncation: null, padding: null }, tokConfig);
  const encode = (text: string) => tokenizer.encode(text, { add_special_tokens: false }).ids;
  const config = readKevConfig(dir, (s) => tokenizer.token_to_id(s));
  notes.push(...config.notes);

  const graph = encoderGraph(dir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${dir}: a Kev model is one graph`);
  const session = await openSession(graph.single, await sessionOptions(c));
  for (const name of INPUTS)
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${graph.single}: not a Kev pointer graph: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  if (!session.outputNames.includes(OUTPUT))
    throw new ModelLoadError(`${graph.single}: no ${OUTPUT} output (it has ${session.outputNames.join(', ')})`);
  const alone = await quantizesPerTensor(graph.single);
  if (alone) notes.push('activations are quantized with one scale per run: rows run one by one');

  return {
    name: 'kev-pointer',
    graph: graph.single,
    notes,
    rowsAlone: alone,

    plan(request: EvaluateRequest): FamilyPlan<KevRowInput> {
      const once = encodeOnce(encode);
      const state = kevState(request.state, once, config);
      const rows: KevRowInput[] = [];
      const questions = askedInOrder(request).map(({ key, question, layout, options }): FamilyQuestion => {
        const row = kevRow(layout, state.ids, once, config);
        const q: FamilyQuestion = { key, question, rows: [rows.length] };
        rows.push({ tokens: row.ids.length, row });
        if (options) q.options = options;
        if (state.truncated) q.truncated = ['state'];
        return q;
      });
      return { questions, rows, usage: { input_tokens: rows.reduce((n, r) => n + r.tokens, 0), output_tokens: 0 } };
    },

    async run(batch: readonly KevRowInput[]): Promise<RowOutput[]> {
      let scores: number[][];
      try {
        const out = (await session.run(kevFeeds(batch, config.specials.pad)))[OUTPUT]!;
        scores = rowsOf(
          out,
          batch.length,
          batch.map((r) => r.row.opts.length),
        );
      } catch (error) {
        throw new EngineError(`Kev pass failed: ${(error as Error).message}`);
      }
      return scores.map((logits) => ({ logits }));
    },

    probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[] {
      return kevProbabilities(q.question.type, outputs[0]!.logits, config.temperatures);
    },

    async close(): Promise<void> {
      await session.release();
    },
  };
}
