// The NLI pairs family (`nli-pairs`) as the engine runs it: the folder's files (config.json's label
// columns, tokenizer_config.json's length, an optional nli_config.json; the tokenizer at the root
// or in tokenizer/; one graph), one (state, hypothesis) row per option (layout.ts), the rows run
// whole in batches (../rows/batched.ts) and the readout of the entailment column (readout.ts).
// docs/families/nli-pairs.md.
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../../errors.js';
import { openSession, sessionOptions } from '../../model/session.js';
import { encoderGraph, quantizesPerTensor, readJsonFile } from '../files.js';
import { batchedRows } from '../rows/batched.js';
import type { FamilyPlan, FamilyQuestion, RowFamilySpec, RowReader } from '../rows/family.js';
import { readTokenizerFiles } from '../rows/tokenizer.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { NLI_CONFIG, readNliConfig, type NliConfig } from './config.js';
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

export interface NliReader extends RowReader<FamilyPlan<NliRowInput>> {
  config: NliConfig;
  padId: number;
}

/** The NLI family's parts: its folder (settings, tokenizer, layout, readout) and its one graph, rows batched whole. */
export const nliRows: RowFamilySpec<FamilyPlan<NliRowInput>, NliReader, NliRowInput> = {
  read(c) {
    const dir = c.modelDir;
    const modelConfig = readJsonFile(join(dir, 'config.json'));
    if (!modelConfig)
      throw new ModelLoadError(`${dir}/config.json is missing (its label2id names the entailment column)`);
    const files = readTokenizerFiles(dir);
    const config = readNliConfig({
      nli: readJsonFile(join(dir, NLI_CONFIG)),
      tokenizerConfig: files.config,
      modelConfig,
    });
    const notes = [`rows of at most ${config.maxLen} tokens (from ${config.maxLenFrom})`];
    const tok = nliTokenizer(files.json, files.config);
    if (files.disabled.length)
      notes.push(`tokenizer.json's own ${files.disabled.join(' and ')} disabled (the layout alone cuts, and says so)`);
    return {
      config,
      padId: tok.padId,
      notes,
      plan(request) {
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
        return { questions, rows };
      },
      probabilities(q, outputs) {
        const read = nliReadout(
          q.question.type,
          outputs.map((o) => o.logits),
          config.labels,
        );
        // The answer builder reads noul as [yes, no].
        return read.noul === undefined ? read.probabilities : [read.noul, 1 - read.noul];
      },
    };
  },

  async open(c, reader) {
    const graph = encoderGraph(c.modelDir, c.variant, false);
    if (!('single' in graph)) throw new ModelLoadError(`${c.modelDir}: an NLI cross-encoder is one graph`);
    const session = await openSession(graph.single, await sessionOptions(c));
    for (const name of ['input_ids', 'attention_mask'])
      if (!session.inputNames.includes(name))
        throw new ModelLoadError(
          `${graph.single}: not a cross-encoder: no ${name} input (it has ${session.inputNames.join(', ')})`,
        );
    if (!session.outputNames.includes('logits'))
      throw new ModelLoadError(`${graph.single}: no logits output (it has ${session.outputNames.join(', ')})`);
    const typeIds = session.inputNames.includes('token_type_ids');
    const alone = await quantizesPerTensor(graph.single);
    const { labels } = reader.config;
    return batchedRows(
      {
        graph: graph.single,
        notes: alone
          ? [
              'activations are quantized with one scale per run (a dynamic int8 export): rows run one by ' +
                'one, so no answer depends on another row or on padding',
            ]
          : [],
        rowsAlone: alone,
        feeds: (batch) => nliFeeds(batch, reader.padId, typeIds),
        async run(batch) {
          let logits: Float32Array;
          let columns: number;
          try {
            const out = (await session.run(nliFeeds(batch, reader.padId, typeIds))).logits!;
            logits = out.data as Float32Array;
            columns = Number(out.dims[1] ?? 1);
          } catch (error) {
            throw new EngineError(`NLI pass failed: ${(error as Error).message}`);
          }
          if (columns !== labels.columns)
            throw new EngineError(`the graph gives ${columns} columns per row, config.json labels ${labels.columns}`);
          return batch.map((_, i) => ({ logits: Array.from(logits.subarray(i * columns, (i + 1) * columns)) }));
        },
        close: () => session.release(),
      },
      c.rowBatchTokens,
    );
  },
};
