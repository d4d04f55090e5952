// The Arbiter family (`arbiter-fixed`) as the engine runs it: the folder's files (decision.json,
// calibration.json, tokenizer.json at the root or in tokenizer/, one graph), one plain-text causal
// row per question (layout.ts), a batched run of the graph (input_ids right-padded to a multiple of
// 64 with the folder's pad id, last_pos → scores[rows, 24]) and the readout of the question's slots,
// softmax(scores[slots] / T). docs/families/arbiter-fixed.md.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import type * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import { openSession, sessionOptions } from '../../model/session.js';
import { TextCodec } from '../../prompting/tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import type { RowFamily, FamilyPlan, FamilyQuestion, RowOutput } from '../family.js';
import { encoderGraph, readJsonFile, tokenizerDir } from '../files.js';
import { boundedTokens } from '../shared/bounded.js';
import { causalInputIds, rowPositions, rowsOf } from '../shared/causal-rows.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { arbiterProbabilities, readArbiterConfig } from './config.js';
import { arbiterRow, type ArbiterRow, SLOTS, tooLong } from './layout.js';
import { render } from './render.js';

export interface ArbiterRowInput {
  tokens: number;
  row: ArbiterRow;
}

/** The graph's inputs for a batch of rows. */
export function arbiterFeeds(batch: readonly ArbiterRowInput[], padId: number): Record<string, ort.Tensor> {
  return {
    input_ids: causalInputIds(
      batch.map((r) => r.row.ids),
      padId,
    ),
    last_pos: rowPositions(batch.map((r) => r.row.lastPos)),
  };
}

/** Tokens of a state's lower bound past which its row cannot fit. */
const STATE_MARGIN = 64;

/** Loads an Arbiter folder: its settings, tokenizer and session. */
export async function loadArbiter(c: ResolvedEngineConfig): Promise<RowFamily<ArbiterRowInput>> {
  const dir = c.modelDir;
  const config = readArbiterConfig(dir);
  const notes = [...config.notes];
  const tokDir = tokenizerDir(dir);
  const tokJson = readJsonFile(join(tokDir, 'tokenizer.json'));
  if (!tokJson) throw new ModelLoadError(`${dir}: no tokenizer.json (at the root or in tokenizer/)`);
  const tokConfig = readJsonFile(join(tokDir, 'tokenizer_config.json')) ?? {};
  // Content is data: every text of the row is tokenized as ordinary text (added-token strings in
  // caller text stay text), each on its own, as decider does (decider-slots/family.ts).
  const codec = new TextCodec(new Tokenizer({ ...tokJson, truncation: null, padding: null }, tokConfig), tokConfig);
  const encode = (text: string): number[] => codec.encodeText(text, undefined, true);

  const graph = encoderGraph(dir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${dir}: an Arbiter model is one graph`);
  const session = await openSession(graph.single, await sessionOptions(c));
  for (const name of ['input_ids', 'last_pos'])
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${graph.single}: not an Arbiter graph: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  const output = session.outputNames.includes('scores') ? 'scores' : session.outputNames[0]!;

  return {
    name: 'arbiter-fixed',
    graph: graph.single,
    notes,
    rowsAlone: false,

    plan(request: EvaluateRequest): FamilyPlan<ArbiterRowInput> {
      const rowEncode = encodeOnce(encode);
      // A state far past the row's length is refused before each question's row is tokenized whole.
      const bound = boundedTokens(rowEncode, render(request.state), config.maxLen + STATE_MARGIN, 'start');
      const rows: ArbiterRowInput[] = [];
      const questions = askedInOrder(request).map(({ key, question, layout, options }): FamilyQuestion => {
        if (bound.partial) throw tooLong(config.maxLen + 1, config.maxLen, true);
        const row = arbiterRow(layout, request.state, rowEncode, config.maxLen);
        const q: FamilyQuestion = { key, question, rows: [rows.length] };
        rows.push({ tokens: row.ids.length, row });
        if (options) q.options = options;
        return q;
      });
      return { questions, rows, usage: { input_tokens: rows.reduce((n, r) => n + r.tokens, 0), output_tokens: 0 } };
    },

    async run(batch: readonly ArbiterRowInput[]): Promise<RowOutput[]> {
      let out: ort.Tensor;
      try {
        out = (await session.run(arbiterFeeds(batch, config.padId)))[output]!;
      } catch (error) {
        throw new EngineError(`Arbiter pass failed: ${(error as Error).message}`);
      }
      if (Number(out.dims[1]) !== SLOTS.total)
        throw new EngineError(`the head gives ${String(out.dims[1])} slots, Arbiter's has ${SLOTS.total}`);
      return rowsOf(out, batch.length).map((logits) => ({ logits }));
    },

    probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[] {
      // noul slots are [true, false]: the answer builder's [yes, no]
      return arbiterProbabilities(q.question.type, outputs[0]!.logits, q.options?.length ?? 0, config.temperature);
    },

    async close(): Promise<void> {
      await session.release();
    },
  };
}
