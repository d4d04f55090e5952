// The one runner of the causal-row families (a Qwen or Gemma trunk with a gathered-position head,
// published as one ONNX graph that takes whole rows: input_ids i64[rows, seq] right-padded to a
// multiple of 64, position inputs, no KV). A family configures it (CausalHead: its position
// inputs, its head's output by its exact name, its pad id, the head's width) and the runner does
// the rest, the same for every family: one graph required, the session opened and its inputs and
// output checked, a dynamic int8 export's rows run one by one, each pass's output read per row,
// the session released. How a plan's rows are executed is the runner's strategy (CausalExecution):
// the state read once and each question's row continued from it (prefix reuse: reuse.ts, on the
// export rewritten at load into a continuation graph, model/row-reuse/), or, where the rewrite
// cannot read the graph, its probe refuses it, the graph quantizes activations per run or the
// load-time rewrite is off (--no-graph-rewrite), every row whole, batched; the load notes say which
// and why. The families do not change.
import type * as ort from 'onnxruntime-node';
import { PrefixCache } from '../../cache/prefix-cache.js';
import { EngineError, ModelLoadError } from '../../errors.js';
import type { ResolvedEngineConfig } from '../../config.js';
import type { PassStep } from '../../model/runner.js';
import { RowReuse, rowReuseGraph, type Snapshot } from '../../model/row-reuse/index.js';
import { openSession, sessionOptions, type SessionOptions } from '../../model/session.js';
import { encoderGraph, quantizesPerTensor } from '../files.js';
import { runBatched, wholeRowsUsage } from '../rows/batched.js';
import type { RowOutput, RowRunner, RowUsage } from '../rows/family.js';
import { causalInputIds, rowPositionLists, rowPositions, rowsOf } from './inputs.js';
import { wholeRows, type CausalPlan, type WholeRow } from './plan.js';
import { reuseUsage, runReused, type ReuseParts } from './reuse.js';

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
  /** `cacheScope`: the caller's prefix cache scope (what it may share across requests). */
  run(plan: CausalPlan, graph: CausalGraph, pass: PassStep, cacheScope?: string): Promise<RowOutput[]>;
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

/**
 * The state read once: each plan's state part from a snapshot (the model's prefix cache, or one state
 * pass), each question's row from it, in batches of at most `batchTokens` padded tokens; usage counts
 * the state once (reuse.ts).
 */
export function reuseExecution(parts: ReuseParts, batchTokens: number): CausalExecution {
  const multiple = parts.reuse.multiple;
  return {
    name: 'the state read once',
    usage: (plan) => reuseUsage(plan, multiple),
    run: (plan, _graph, pass, cacheScope) => runReused(parts, plan, batchTokens, pass, cacheScope),
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
  const options = await sessionOptions(c);
  const alone = await quantizesPerTensor(path);
  const notes = alone ? ['activations are quantized with one scale per run: rows run one by one'] : [];
  // The continuation graph serves whole rows too (from the empty snapshot): one session, the weights loaded once.
  const reuse = await openReuse(c, head, path, options, alone);
  const session = 'reason' in reuse ? await openSession(path, options) : undefined;
  const names = session ?? (reuse as RowReuse);
  for (const name of ['input_ids', ...Object.keys(head.positions)])
    if (!names.inputNames.includes(name))
      throw new ModelLoadError(
        `${path}: not ${an(head.what)} graph: no ${name} input (it has ${names.inputNames.filter((n) => !n.startsWith('assay_')).join(', ')})`,
      );
  if (!names.outputNames.includes(head.output))
    throw new ModelLoadError(
      `${path}: no ${head.output} output (it has ${names.outputNames.filter((n) => !n.startsWith('assay_')).join(', ')})`,
    );

  const outputsOf = (out: ort.Tensor, batch: readonly WholeRow[]): RowOutput[] => {
    const columns = Number(out.dims[out.dims.length - 1]);
    if (head.columns && columns !== head.columns.count)
      throw new EngineError(`the head gives ${columns} ${head.columns.what} per row, expected ${head.columns.count}`);
    return rowsOf(
      out,
      batch.length,
      batch.map((r) => r.width ?? columns),
    ).map((logits) => ({ logits }));
  };
  const failed = (error: unknown) => new EngineError(`${head.what} pass failed: ${(error as Error).message}`);
  const continued = async (batch: readonly WholeRow[], snapshot: Snapshot): Promise<RowOutput[]> => {
    let out: ort.Tensor;
    try {
      out = (
        await (reuse as RowReuse).runRows(
          batch.map((r) => ({ ids: r.ids, positions: r.at })),
          snapshot,
        )
      )[head.output]!;
    } catch (error) {
      throw failed(error);
    }
    return outputsOf(out, batch);
  };
  const run = async (batch: readonly WholeRow[]): Promise<RowOutput[]> => {
    if (!session) return continued(batch, (reuse as RowReuse).empty);
    let out: ort.Tensor;
    try {
      out = (await session.run(causalFeeds(head, batch)))[head.output]!;
    } catch (error) {
      throw failed(error);
    }
    return outputsOf(out, batch);
  };

  const cache = new PrefixCache<Snapshot>(c.prefixCacheBytes);
  let execution: CausalExecution;
  if ('reason' in reuse) {
    execution = wholeRowsExecution(c.rowBatchTokens, alone);
    c.onNote?.({
      kind: 'whole-rows',
      message: `every question's row reads the state again (whole rows): ${reuse.reason}`,
    });
  } else {
    execution = reuseExecution(
      { reuse, cache, modelId: `${c.modelDir}\u0000${c.variant ?? ''}`, run: continued },
      c.rowBatchTokens,
    );
    c.onNote?.({
      kind: 'reuse',
      message: `${execution.name}: each question's row continues the state's snapshot, kept across requests in the prefix cache`,
    });
  }

  return {
    graph: path,
    notes,
    rowsAlone: alone,
    prefixReuse: !('reason' in reuse),
    cacheStats: () => ({ hits: cache.hits, misses: cache.misses, bytes: cache.bytes }),
    usage: (plan) => execution.usage(plan),
    run: (plan, pass, cacheScope) => execution.run(plan, { run }, pass, cacheScope),
    pass: run,
    feeds: (rows) => causalFeeds(head, rows),
    close: async () => {
      cache.clear();
      await (session ? session.release() : (reuse as RowReuse).close());
    },
  };
}

/**
 * The export's continuation graph, open (from the graph cache, rewritten there on first load), or
 * why its rows run whole: the engine told not to, activations quantized per run (a snapshot would
 * change a row's scales), a graph the rewrite does not read, or one the load-time probe refuses.
 */
async function openReuse(
  c: ResolvedEngineConfig,
  head: CausalHead,
  path: string,
  options: SessionOptions,
  alone: boolean,
): Promise<RowReuse | { reason: string }> {
  if (!c.rewriteGraph)
    return {
      reason: 'the load-time graph rewrite is off (--no-graph-rewrite, or "graph_rewrite": false in the registry)',
    };
  if (alone)
    return {
      reason:
        'the graph quantizes activations with one scale per run, so a row read from a snapshot would not equal its whole row',
    };
  let graph: Awaited<ReturnType<typeof rowReuseGraph>>;
  try {
    graph = await rowReuseGraph(path, c.graphCacheDir ? { cacheDir: c.graphCacheDir } : {});
  } catch (error) {
    return { reason: `the graph could not be rewritten (${(error as Error).message})` };
  }
  if ('reason' in graph) return graph;
  const reuse = await RowReuse.open(graph, options, { padId: head.padId });
  return typeof reuse === 'string' ? { reason: reuse } : reuse;
}
