// The Decision endpoint family (`decision-endpoint`) as the engine runs it: the folder's files
// (decision.json, calibration.json, tokenizer.json at the root or in tokenizer/, one graph), one
// causal row per question (layout.ts), a batched run of the graph (input_ids right-padded to a
// multiple of 64 with the folder's pad id, query_pos, cand_pos → logits[rows, k]) and the
// calibrated readout softmax(logits / T). docs/families/decision-endpoint.md.
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
import { causalInputIds, rowPositionLists, rowPositions, rowsOf } from '../shared/causal-rows.js';
import { headProbabilities } from '../shared/settings.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { payload } from './canonical.js';
import { readDecisionConfig } from './config.js';
import { decisionRow, type DecisionRow, tooLong } from './layout.js';

/** One question's row as the graph reads it. */
export interface DecisionRowInput {
  tokens: number;
  row: DecisionRow;
}

/** The graph's inputs for a batch of rows. */
export function decisionFeeds(batch: readonly DecisionRowInput[], padId: number): Record<string, ort.Tensor> {
  return {
    input_ids: causalInputIds(
      batch.map((r) => r.row.ids),
      padId,
    ),
    query_pos: rowPositions(batch.map((r) => r.row.queryPos)),
    cand_pos: rowPositionLists(batch.map((r) => r.row.candPos)).tensor,
  };
}
/** Tokens of a state's lower bound past which its row cannot fit (the prefix's other text merges with a few of them at most). */
const STATE_MARGIN = 64;

/** Loads a Decision endpoint folder: its settings, tokenizer and session. */
export async function loadDecision(c: ResolvedEngineConfig): Promise<RowFamily<DecisionRowInput>> {
  const dir = c.modelDir;
  const config = readDecisionConfig(dir);
  const notes = [...config.notes];
  const tokDir = tokenizerDir(dir);
  const tokJson = readJsonFile(join(tokDir, 'tokenizer.json'));
  if (!tokJson) throw new ModelLoadError(`${dir}: no tokenizer.json (at the root or in tokenizer/)`);
  const disabled = (['truncation', 'padding'] as const).filter((k) => tokJson[k] !== undefined && tokJson[k] !== null);
  if (disabled.length) notes.push(`tokenizer.json's own ${disabled.join(' and ')} disabled (nothing is cut)`);
  const tokConfig = readJsonFile(join(tokDir, 'tokenizer_config.json')) ?? {};
  // Content is data: every text of the row is tokenized as ordinary text (added-token strings in
  // caller text stay text), each on its own, as decider does (decider-slots/family.ts).
  const codec = new TextCodec(new Tokenizer({ ...tokJson, truncation: null, padding: null }, tokConfig), tokConfig);
  const encode = (text: string): number[] => codec.encodeText(text, undefined, true);

  const graph = encoderGraph(dir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${dir}: a Decision endpoint model is one graph`);
  const session = await openSession(graph.single, await sessionOptions(c));
  for (const name of ['input_ids', 'query_pos', 'cand_pos'])
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${graph.single}: not a Decision endpoint graph: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  const output = session.outputNames.includes('logits') ? 'logits' : session.outputNames[0]!;

  return {
    name: 'decision-endpoint',
    graph: graph.single,
    notes,
    rowsAlone: false,

    plan(request: EvaluateRequest): FamilyPlan<DecisionRowInput> {
      const rowEncode = encodeOnce(encode);
      // A state far past the row's length is refused before its prefixes are tokenized whole.
      const stateText = payload(request.state ?? null);
      const bound = boundedTokens(rowEncode, stateText, config.maxLen + STATE_MARGIN, 'start');
      const rows: DecisionRowInput[] = [];
      const questions = askedInOrder(request).map(({ key, question, layout, options }): FamilyQuestion => {
        if (bound.partial) throw tooLong(config.maxLen + 1, config.maxLen, true);
        const row = decisionRow(layout, request.state, rowEncode, config);
        const q: FamilyQuestion = { key, question, rows: [rows.length] };
        rows.push({ tokens: row.ids.length, row });
        if (options) q.options = options;
        return q;
      });
      return { questions, rows, usage: { input_tokens: rows.reduce((n, r) => n + r.tokens, 0), output_tokens: 0 } };
    },

    async run(batch: readonly DecisionRowInput[]): Promise<RowOutput[]> {
      let out: ort.Tensor;
      try {
        out = (await session.run(decisionFeeds(batch, config.padId)))[output]!;
      } catch (error) {
        throw new EngineError(`Decision endpoint pass failed: ${(error as Error).message}`);
      }
      return rowsOf(
        out,
        batch.length,
        batch.map((r) => r.row.candPos.length),
      ).map((logits) => ({ logits }));
    },

    probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[] {
      // The head's noul order is [false, true]; the answer builder reads [yes, no].
      const type = q.question.type;
      return headProbabilities(type, outputs[0]!.logits, config.temperature[type], 'false-true');
    },

    async close(): Promise<void> {
      await session.release();
    },
  };
}
