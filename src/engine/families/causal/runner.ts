// The one runner of the causal-row families (a Qwen or Gemma trunk with a gathered-position head,
// published as one ONNX graph that takes whole rows: input_ids i64[rows, seq] right-padded to a
// multiple of 64, position inputs, no KV). A family configures it (CausalHead: its position
// inputs, its head's output by its exact name, its pad id, the head's width) and the runner does
// the rest, the same for every family: one graph required, the session opened and its inputs and
// output checked, a dynamic int8 export's rows run one by one, each pass's output read per row,
// the session released. How a plan's rows are executed is the runner's strategy (CausalExecution):
// today every row whole, batched; the state read once and each question's row continued from it
// (prefix reuse) is another strategy over the same plan, and the families do not change.
import type * as ort from 'onnxruntime-node';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import type { PassStep } from '../../model/runner.js';
import { openSession, sessionOptions } from '../../model/session.js';
import { encoderGraph, quantizesPerTensor } from '../files.js';
import { runBatched, wholeRowsUsage } from '../rows/batched.js';
import type { RowOutput, RowRunner, RowUsage } from '../rows/family.js';
import { causalInputIds, rowPositionLists, rowPositions, rowsOf } from './inputs.js';
import { wholeRows, type CausalPlan, type WholeRow } from './plan.js';

/** What a causal-row family configures the runner with. */
export interface CausalHead {
  /** What messages call the export: 'Kev pointer' (→ "not a Kev pointer graph", "a Kev pointer model is one graph"). */
  what: string;
  /** The graph's position inputs: one index per row (`one`, i64[rows]) or one per option (`list`, i64[rows, k]). */
  positions: Record<string, 'one' | 'list'>;
  /** The head's output, by its exact name in the published export. */
  output: string;
  /** The id input_ids are padded with. */
  padId: number;
  /** The columns every row's output has where the head's width is fixed (checked each pass), and what they are. */
  columns?: { count: number; what: string };
}

/** A graph of the family, as an execution runs it: one pass over whole rows. */
export interface CausalGraph {
  run(rows: readonly WholeRow[]): Promise<RowOutput[]>;
}

/**
 * How a plan's rows are executed: what they read (usage, counted from the plan's state and question
 * parts) and the passes that run them.
 */
export interface CausalExecution {
  /** What the load notes call it. */
  readonly name: string;
  usage(plan: CausalPlan): RowUsage;
  run(plan: CausalPlan, graph: CausalGraph, pass: PassStep): Promise<RowOutput[]>;
}

/**
 * Every row whole (the state's part, then the question's), longest first, in batches of at most
 * `batchTokens` padded tokens (rows one by one where `alone`): each row reads the state again, so a
 * question's usage is its rows' tokens, state included.
 */
export function wholeRowsExecution(batchTokens: number, alone: boolean): CausalExecution {
  return {
    name: alone ? 'whole rows, one by one' : 'whole rows, batched',
    usage: (plan) => wholeRowsUsage(plan),
    run: (plan, graph, pass) =>
      runBatched(
        wholeRows(plan),
        (r) => r.ids.length,
        alone ? 0 : batchTokens,
        pass,
        (b) => graph.run(b),
      ),
  };
}

/** The article before `what` in a message. */
const an = (what: string) => (/^[aeiou]/i.test(what) ? `an ${what}` : `a ${what}`);

/** The graph's inputs for a batch of whole rows. */
export function causalFeeds(head: Pick<CausalHead, 'positions' | 'padId'>, batch: readonly WholeRow[]) {
  const feeds: Record<string, ort.Tensor> = {
    input_ids: causalInputIds(
      batch.map((r) => r.ids),
      head.padId,
    ),
  };
  for (const [name, kind] of Object.entries(head.positions)) {
    const at = batch.map((r) => r.at[name]!);
    feeds[name] = kind === 'one' ? rowPositions(at as number[]) : rowPositionLists(at as number[][]).tensor;
  }
  return feeds;
}

/** Opens a causal-row family's graph (the folder's one graph, of the variant asked for) as its runner. */
export async function openCausalRunner(
  c: ResolvedEngineConfig,
  head: CausalHead,
): Promise<RowRunner<CausalPlan, WholeRow>> {
  const graph = encoderGraph(c.modelDir, c.variant, false);
  if (!('single' in graph)) throw new ModelLoadError(`${c.modelDir}: ${an(head.what)} model is one graph`);
  const path = graph.single;
  const session = await openSession(path, await sessionOptions(c));
  for (const name of ['input_ids', ...Object.keys(head.positions)])
    if (!session.inputNames.includes(name))
      throw new ModelLoadError(
        `${path}: not ${an(head.what)} graph: no ${name} input (it has ${session.inputNames.join(', ')})`,
      );
  if (!session.outputNames.includes(head.output))
    throw new ModelLoadError(`${path}: no ${head.output} output (it has ${session.outputNames.join(', ')})`);
  const alone = await quantizesPerTensor(path);
  const notes = alone ? ['activations are quantized with one scale per run: rows run one by one'] : [];
  const execution = wholeRowsExecution(c.rowBatchTokens, alone);

  const run = async (batch: readonly WholeRow[]): Promise<RowOutput[]> => {
    let out: ort.Tensor;
    try {
      out = (await session.run(causalFeeds(head, batch)))[head.output]!;
    } catch (error) {
      throw new EngineError(`${head.what} pass failed: ${(error as Error).message}`);
    }
    const columns = Number(out.dims[out.dims.length - 1]);
    if (head.columns && columns !== head.columns.count)
      throw new EngineError(`the head gives ${columns} ${head.columns.what} per row, expected ${head.columns.count}`);
    return rowsOf(
      out,
      batch.length,
      batch.map((r) => r.width ?? columns),
    ).map((logits) => ({ logits }));
  };

  return {
    graph: path,
    notes,
    rowsAlone: alone,
    usage: (plan) => execution.usage(plan),
    run: (plan, pass) => execution.run(plan, { run }, pass),
    pass: run,
    feeds: (rows) => causalFeeds(head, rows),
    close: () => session.release(),
  };
}
