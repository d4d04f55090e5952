// The Laya family (`laya-markers`) as the engine runs it: the folder's files (rl_agent_config.json
// for the limits and the calibration, the tokenizer at the root or in tokenizer/, a single graph or
// the split encoder + head), the rows of a request (layout.ts, one row per question), the rows run
// whole in batches (../rows/batched.ts) and the readout (calibration.ts). docs/families/laya-markers.md.
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../../errors.js';
import { openSession, sessionOptions } from '../../model/session.js';
import { encoderGraph, quantizesPerTensor, readJsonFile } from '../files.js';
import { batchedRows } from '../rows/batched.js';
import type { FamilyPlan, FamilyQuestion, RowFamilySpec, RowOutput, RowReader } from '../rows/family.js';
import { disabledNote, readTokenizerFiles } from '../rows/tokenizer.js';
import { tokenName } from '../shared/specials.js';
import { encodeOnce } from '../shared/memo.js';
import { askedInOrder } from '../shared/question.js';
import { headProbabilities } from '../shared/settings.js';
import { LAYA_CONFIG, layaTemperature, readLayaConfig, type LayaConfig } from './calibration.js';
import { layaLayout, type LayaTokenizer } from './layout.js';
import { layaTokenizer } from './tokenizer.js';

/** One question's row as the graph reads it. */
export interface LayaRowInput {
  tokens: number;
  ids: number[];
  markers: number[];
  qtype: number;
}

/**
 * The graph's inputs for a batch of rows: ids padded on the right to the longest row with the pad
 * id (attention_mask 0), marker positions padded to the most markers (marker_mask false, position 0).
 */
export function layaFeeds(batch: readonly LayaRowInput[], padId: number): Record<string, ort.Tensor> {
  const b = batch.length;
  const s = Math.max(...batch.map((r) => r.tokens));
  const k = Math.max(...batch.map((r) => r.markers.length));
  const ids: number[] = [];
  const mask: number[] = [];
  const pos: number[] = [];
  const markerMask = new Uint8Array(b * k);
  batch.forEach((r, i) => {
    for (let t = 0; t < s; t++) {
      ids.push(t < r.tokens ? r.ids[t]! : padId);
      mask.push(t < r.tokens ? 1 : 0);
    }
    for (let m = 0; m < k; m++) {
      pos.push(r.markers[m] ?? 0);
      markerMask[i * k + m] = m < r.markers.length ? 1 : 0;
    }
  });
  return {
    input_ids: i64(ids, [b, s]),
    attention_mask: i64(mask, [b, s]),
    marker_pos: i64(pos, [b, k]),
    marker_mask: new ort.Tensor('bool', markerMask, [b, k]),
    qtype: i64(
      batch.map((r) => r.qtype),
      [b],
    ),
  };
}

const SINGLE_INPUTS = ['input_ids', 'attention_mask', 'marker_pos', 'marker_mask', 'qtype'];
const MARKER_INPUTS = ['marker_pos', 'marker_mask', 'qtype', 'attention_mask'];

function requireNames(path: string, kind: string, have: readonly string[], want: readonly string[]): void {
  const missing = want.filter((n) => !have.includes(n));
  if (missing.length)
    throw new ModelLoadError(`${path}: not a Laya ${kind}: no input ${missing.join(', ')} (it has ${have.join(', ')})`);
}

const i64 = (values: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(values, BigInt), dims);

export interface LayaReader extends RowReader<FamilyPlan<LayaRowInput>> {
  config: LayaConfig;
  padId: number;
}

/** Alone: the note of a graph whose rows run one by one. */
const ALONE_NOTE =
  'activations are quantized with one scale per run (a dynamic int8 export): rows run one by one, so no answer depends on another row or on padding';

/** The Laya family's parts: its folder (config, tokenizer, layout, readout) and its graph (single or split), rows batched whole. */
export const layaRows: RowFamilySpec<FamilyPlan<LayaRowInput>, LayaReader, LayaRowInput> = {
  read(c) {
    const dir = c.modelDir;
    const rl = readJsonFile(join(dir, LAYA_CONFIG));
    if (!rl)
      throw new ModelLoadError(`${dir}/rl_agent_config.json is missing (a Laya folder's limits and calibration)`);
    const config: LayaConfig = readLayaConfig(rl, `${dir}/rl_agent_config.json`);
    const notes: string[] = [];
    if (config.calibration.clamped.length)
      notes.push(`temperatures clamped to [0.5, 5] as the reference does: ${config.calibration.clamped.join(', ')}`);
    const files = readTokenizerFiles(dir);
    notes.push(...disabledNote(files));
    const tokenizer = new Tokenizer(files.json, files.config);
    const tok: LayaTokenizer = layaTokenizer(tokenizer, files.config);
    const padName = tokenName(files.config.pad_token, '[PAD]');
    const padId = tokenizer.token_to_id(padName);
    if (padId === undefined)
      throw new ModelLoadError(`${files.dir}: tokenizer has no pad token ${JSON.stringify(padName)}`);
    return {
      config,
      padId,
      notes,
      plan(request) {
        // The state is tokenized once for all the request's questions.
        const rowTok: LayaTokenizer = { ...tok, encode: encodeOnce(tok.encode) };
        const rows: LayaRowInput[] = [];
        const questions: FamilyQuestion[] = askedInOrder(request).map(({ key, question, layout, options }) => {
          const row = layaLayout(layout, request.state, rowTok, config);
          rows.push({ tokens: row.ids.length, ids: row.ids, markers: row.markerPositions, qtype: row.qtype });
          const q: FamilyQuestion = { key, question, rows: [rows.length - 1] };
          if (options) q.options = options;
          if (row.truncated) q.truncated = Object.keys(row.truncated);
          return q;
        });
        return { questions, rows };
      },
      probabilities(q, outputs) {
        const logits = outputs[0]!.logits;
        // noul's markers are [false, true]; the answer builder reads [yes, no].
        const type = q.question.type;
        return headProbabilities(type, logits, layaTemperature(config.calibration, type, logits.length), 'false-true');
      },
    };
  },

  async open(c, reader) {
    const graph = encoderGraph(c.modelDir, c.variant, true);
    const options = await sessionOptions(c);
    let run: (feeds: Record<string, ort.Tensor>) => Promise<ort.InferenceSession.OnnxValueMapType>;
    let sessions: ort.InferenceSession[];
    let graphPath: string;
    let alone: boolean;
    if ('single' in graph) {
      const session = await openSession(graph.single, options);
      requireNames(graph.single, 'graph', session.inputNames, SINGLE_INPUTS);
      if (!session.outputNames.includes('logits'))
        throw new ModelLoadError(`${graph.single}: not a Laya graph: no logits output`);
      sessions = [session];
      graphPath = graph.single;
      run = (feeds) => session.run(feeds);
      alone = await quantizesPerTensor(graph.single);
    } else {
      const encoder = await openSession(graph.encoder, options);
      const head = await openSession(graph.head, options);
      requireNames(graph.encoder, 'encoder', encoder.inputNames, ['input_ids', 'attention_mask']);
      requireNames(graph.head, 'head', head.inputNames, MARKER_INPUTS);
      const hiddenName = head.inputNames.find((n) => !MARKER_INPUTS.includes(n));
      if (!hiddenName) throw new ModelLoadError(`${graph.head}: no hidden-states input`);
      sessions = [encoder, head];
      graphPath = `${graph.encoder} + ${graph.head}`;
      run = async (feeds) => {
        const hidden = await encoder.run({ input_ids: feeds.input_ids!, attention_mask: feeds.attention_mask! });
        const { input_ids: _ids, ...marker } = feeds;
        return head.run({ ...marker, [hiddenName]: hidden[encoder.outputNames[0]!]! });
      };
      alone = (await quantizesPerTensor(graph.encoder)) || (await quantizesPerTensor(graph.head));
    }
    return batchedRows(
      {
        graph: graphPath,
        notes: alone ? [ALONE_NOTE] : [],
        rowsAlone: alone,
        feeds: (batch) => layaFeeds(batch, reader.padId),
        async run(batch) {
          const k = Math.max(...batch.map((r) => r.markers.length));
          let out: ort.InferenceSession.OnnxValueMapType;
          try {
            out = await run(layaFeeds(batch, reader.padId));
          } catch (error) {
            throw new EngineError(`Laya pass failed: ${(error as Error).message}`);
          }
          const logits = out.logits!.data as Float32Array;
          const act = out.act_logits?.data as Float32Array | undefined;
          return batch.map((r, i) => {
            const row: RowOutput = { logits: Array.from(logits.subarray(i * k, i * k + r.markers.length)) };
            if (act) row.act = [act[i * 2]!, act[i * 2 + 1]!];
            return row;
          });
        },
        async close() {
          for (const session of sessions) await session.release();
        },
      },
      c.rowBatchTokens,
    );
  },
};
