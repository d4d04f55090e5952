// The NLI pairs family (`nli-pairs`) as the engine runs it: the folder's files (config.json's label
// columns, tokenizer_config.json's length, an optional nli_config.json; the tokenizer at the root
// or in tokenizer/; one graph), one (state, hypothesis) row per option (layout.ts), the batched run
// and the readout of the entailment column (readout.ts). docs/families/nli-pairs.md.
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import { openSession, sessionOptions } from '../../model/session.js';
import type { EvaluateRequest } from '../../types.js';
import type { RowFamily, FamilyPlan, FamilyQuestion, RowOutput } from '../family.js';
import { encoderGraph, quantizesPerTensor, readJsonFile, tokenizerDir } from '../files.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { readNliConfig } from './config.js';
import { nliLayout, type NliRow } from './layout.js';
import { nliReadout } from './readout.js';
import { nliTokenizer } from './tokenizer.js';

/** One option's row as the graph reads it. */
export interface NliRowInput {
  tokens: number;
  row: NliRow;
}

/**
 * The graph's inputs for a batch of rows, padded on the right to the longest with the pad id
 * (attention_mask 0, token type 0); `token_type_ids` only when the graph takes them.
 */
export function nliFeeds(batch: readonly NliRowInput[], padId: number, typeIds: boolean): Record<string, ort.Tensor> {
  const b = batch.length;
  const s = Math.max(...batch.map((r) => r.tokens));
  const ids: number[] = [];
  const mask: number[] = [];
  const types: number[] = [];
  for (const { row } of batch)
    for (let t = 0; t < s; t++) {
      const real = t < row.ids.length;
      ids.push(real ? row.ids[t]! : padId);
      mask.push(real ? 1 : 0);
      types.push(real ? (row.tokenTypeIds?.[t] ?? 0) : 0);
    }
  const feeds: Record<string, ort.Tensor> = { input_ids: i64(ids, [b, s]), attention_mask: i64(mask, [b, s]) };
  if (typeIds) feeds.token_type_ids = i64(types, [b, s]);
  return feeds;
}

const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);

/** Loads an NLI cross-encoder folder: its settings, tokenizer and session. */
export async function loadNli(c: ResolvedEngineConfig): Promise<RowFamily<NliRowInput>> {
  const dir = c.modelDir;
  const notes: string[] = [];
  const modelConfig = readJsonFile(join(dir, 'config.json'));
  if (!modelConfig)
    throw new ModelLoadError(`${dir}/config.json is missing (its label2id names the entailment column)`);
  const tokDir = tokenizerDir(dir);
  const tokJson = readJsonFile(join(tokDir, 'tokenizer.json'));
  if (!tokJson) throw new ModelLoadError(`${dir}: no tokenizer.json (at the root or in tokenizer/)`);
  const tokenizerConfig = readJsonFile(join(tokDir, 'tokenizer_config.json')) ?? {};
  const config = readNliConfig({ nli: readJsonFile(join(dir, 'nli_config.json')), tokenizerConfig, modelConfig });
  notes.push(`rows of at most ${config.maxLen} tokens (from ${config.maxLenFrom})`);
  const tok = nliTokenizer(tokJson, tokenizerConfig);
  if (tok.disabled.length)
    notes.push(`tokenizer.json's own ${tok.disabled.join(' and ')} disabled (the layout alone cuts, and says so)`);

  const graph = encoderGraph(dir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${dir}: an NLI cross-encoder is one graph`);
  const session = await openSession(graph.single, await sessionOptions(c));
  for (const name of ['input_ids', 'attention_mask'])
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${graph.single}: not a cross-encoder: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  const output = session.outputNames.includes('logits') ? 'logits' : session.outputNames[0]!;
  const typeIds = session.inputNames.includes('token_type_ids');
  const alone = await quantizesPerTensor(graph.single);
  if (alone)
    notes.push(
      'activations are quantized with one scale per run (a dynamic int8 export): rows run one by one, so no answer depends on another row or on padding',
    );

  return {
    name: 'nli-pairs',
    graph: graph.single,
    notes,
    rowsAlone: alone,

    plan(request: EvaluateRequest): FamilyPlan<NliRowInput> {
      // The state (the premise of every row) is tokenized once for all the request's rows.
      const rowTok = { ...tok, encode: encodeOnce(tok.encode) };
      const rows: NliRowInput[] = [];
      const questions = askedInOrder(request).map(({ key, question, layout, options }): FamilyQuestion => {
        const { rows: made } = nliLayout(layout, request.state, rowTok, config);
        const q: FamilyQuestion = { key, question, rows: [] };
        for (const row of made) {
          q.rows.push(rows.length);
          rows.push({ tokens: row.ids.length, row });
        }
        if (options) q.options = options;
        if (made.some((r) => r.truncated)) q.truncated = ['state'];
        return q;
      });
      return { questions, rows, usage: { input_tokens: rows.reduce((n, r) => n + r.tokens, 0), output_tokens: 0 } };
    },

    async run(batch: readonly NliRowInput[]): Promise<RowOutput[]> {
      const feeds = nliFeeds(batch, tok.padId, typeIds);
      let logits: Float32Array;
      let columns: number;
      try {
        const out = (await session.run(feeds))[output]!;
        logits = out.data as Float32Array;
        columns = Number(out.dims[1] ?? 1);
      } catch (error) {
        throw new EngineError(`NLI pass failed: ${(error as Error).message}`);
      }
      if (columns !== config.labels.columns)
        throw new EngineError(
          `the graph gives ${columns} columns per row, config.json labels ${config.labels.columns}`,
        );
      return batch.map((_, i) => ({ logits: Array.from(logits.subarray(i * columns, (i + 1) * columns)) }));
    },

    probabilities(q: FamilyQuestion, outputs: readonly RowOutput[]): number[] {
      const read = nliReadout(
        q.question.type,
        outputs.map((o) => o.logits),
        config.labels,
      );
      // The answer builder reads noul as [yes, no].
      return read.noul === undefined ? read.probabilities : [read.noul, 1 - read.noul];
    },

    async close(): Promise<void> {
      await session.release();
    },
  };
}
