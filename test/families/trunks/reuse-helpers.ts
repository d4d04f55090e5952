// What the row-reuse tests on the real-trunk replicas share (reuse.test.ts, reuse-cases.test.ts):
// each family's reader (its plan and its probabilities: the layout and the readout stay the
// family's own), its rows as the continuation runner takes them (the plan's whole rows: ids and the
// family's positions), the whole rows run on the export as published by a bare session, and the
// continuation graph opened from a cache folder of the test's own.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { resolveEngineConfig } from '../../../src/engine/config.js';
import { arbiterRows } from '../../../src/engine/families/arbiter/family.js';
import { wholeRows as wholeRowsOf, type CausalPlan, type WholeRow } from '../../../src/engine/families/causal/plan.js';
import { deciderSlotsRows } from '../../../src/engine/families/decider-slots/family.js';
import { decisionRows } from '../../../src/engine/families/decision/family.js';
import { kevRows } from '../../../src/engine/families/kev/family.js';
import type { RowOutput, RowReader } from '../../../src/engine/families/rows/family.js';
import { decodeModel, encodeModel, type ModelProto } from '../../../src/engine/model/graph-rewrite.js';
import { paddedIds, positionInput } from '../../../src/engine/model/row-reuse/feeds.js';
import {
  REUSE_MULTIPLE,
  RowReuse,
  rowReuseGraph,
  type ReuseRow,
  type RowGraph,
  type RowReuseOptions,
} from '../../../src/engine/model/row-reuse/index.js';
import { trunkConfig, type TrunkFamily } from '../../../tools/trunks/replicas.js';

const READERS = { kev: kevRows, decision: decisionRows, 'decider-slots': deciderSlotsRows, arbiter: arbiterRows };

/** A family's folder as its layout and readout read it (its plan and its probabilities); no graph. */
export function loadReader(family: TrunkFamily, dir: string): RowReader<CausalPlan> {
  return READERS[family].read(resolveEngineConfig({ modelDir: dir, threads: 1 }));
}

/** A plan's rows as the runner takes them: the whole row's ids and the family's positions, and the row's columns. */
export function reuseRows(plan: CausalPlan): Array<ReuseRow & { width?: number }> {
  return wholeRowsOf(plan).map((r: WholeRow) => ({
    ids: r.ids,
    positions: r.at,
    ...(r.width === undefined ? {} : { width: r.width }),
  }));
}

/** The head's output as one row output each (the first `width` columns where the row has a list). */
export function rowOutputs(out: ort.Tensor, rows: ReadonlyArray<{ width?: number }>): RowOutput[] {
  const k = Number(out.dims[1]);
  const data = out.data as Float32Array;
  return rows.map((r, i) => ({ logits: Array.from(data.subarray(i * k, i * k + (r.width ?? k))) }));
}

/** The largest |Δ| between two runs' outputs, and the outputs' scale (max |y| of the first). */
export function apart(a: readonly RowOutput[], b: readonly RowOutput[]): { worst: number; scale: number } {
  let worst = 0;
  let scale = 0;
  a.forEach((row, i) => {
    if (row.logits.length !== b[i]!.logits.length) worst = Infinity;
    row.logits.forEach((x, j) => {
      worst = Math.max(worst, Math.abs(x - b[i]!.logits[j]!));
      scale = Math.max(scale, Math.abs(x));
    });
  });
  return { worst, scale };
}

export const padIdOf = (dir: string): number => Number(trunkConfig(dir).pad_id);

/** A cache folder of the test's own (the user's graph cache is never touched). */
export const testCache = (): string => mkdtempSync(join(tmpdir(), 'assay-row-reuse-'));

/** The continuation runner of a replica folder's export (throws if the rewrite does not read it). */
export async function openReuse(
  dir: string,
  cacheDir: string,
  options: Partial<RowReuseOptions> = {},
): Promise<{ reuse: RowReuse; graph: RowGraph }> {
  const graph = await rowReuseGraph(join(dir, 'model.onnx'), { cacheDir });
  if ('reason' in graph) throw new Error(`${dir}: not recognised: ${graph.reason}`);
  const reuse = await RowReuse.open(graph, { intraOpNumThreads: 1 }, { padId: padIdOf(dir), ...options });
  if (typeof reuse === 'string') throw new Error(`${dir}: refused: ${reuse}`);
  return { reuse, graph };
}

/** The continuation graph of `graph`, edited by `edit`, written beside the original in a folder of its own. */
export function mutated(graph: RowGraph, edit: (model: ModelProto) => void): RowGraph {
  const model = decodeModel(readFileSync(graph.path));
  edit(model);
  const path = join(mkdtempSync(join(tmpdir(), 'assay-row-mutant-')), 'model.onnx');
  writeFileSync(path, encodeModel(model));
  return { ...graph, path };
}

/** The export as published, run on whole rows (padded as the families pad them): the head's first output per row. */
export async function wholeRows(
  session: ort.InferenceSession,
  rows: ReadonlyArray<ReuseRow & { width?: number }>,
  padId: number,
  positions: RowGraph['facts']['positions'],
): Promise<RowOutput[]> {
  const feeds: Record<string, ort.Tensor> = {
    input_ids: paddedIds(
      rows.map((r) => r.ids),
      padId,
      REUSE_MULTIPLE,
    ),
  };
  for (const { name, rank } of positions)
    feeds[name] = positionInput(
      rows.map((r) => r.positions[name]!),
      rank,
    );
  const out = await session.run(feeds);
  return rowOutputs(out[session.outputNames[0]!]!, rows);
}
