// Whole rows in batches: how an encoder family's rows run (and, built from their parts, a causal
// family's whole rows: ../causal/runner.ts). Longest rows first, each batch at most `batchTokens`
// padded tokens, one pass each in the request's turn; a graph that quantizes activations with one
// scale per run takes its rows one by one. Every row is read whole, so a question's usage is its
// rows' tokens and nothing is shared.
import type * as ort from 'onnxruntime-node';
import type { PassStep } from '../../model/runner.js';
import type { Usage, UsageParts } from '../../types.js';
import type { FamilyPlan, FamilyRow, RowOutput, RowRunner, RowUsage } from './family.js';

/**
 * The rows of a plan in batches: longest first, each batch at most `batchTokens` padded tokens (its
 * row count × its longest row), at least one row. Sorting by length keeps the padding small; 0 (or a
 * budget under the longest row) runs rows one by one.
 */
export function rowBatches(rows: readonly FamilyRow[], batchTokens: number): number[][] {
  const order = rows.map((_, i) => i).sort((a, b) => rows[b]!.tokens - rows[a]!.tokens || a - b);
  const batches: number[][] = [];
  let batch: number[] = [];
  for (const i of order) {
    const longest = batch.length > 0 ? rows[batch[0]!]!.tokens : rows[i]!.tokens;
    if (batch.length > 0 && (batch.length + 1) * longest > batchTokens) {
      batches.push(batch);
      batch = [];
    }
    batch.push(i);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * Whole rows' usage: every token of every row (an encoder reads the state again in each row); per
 * part, every row is one question's, so nothing is shared and a question's part is its rows'
 * tokens, as when it is asked alone. No parts if a row were read by no question or by several.
 */
export function wholeRowsUsage(plan: FamilyPlan): RowUsage {
  return rowsUsage(plan, 0);
}

/**
 * The usage of rows that share their first `shared` tokens, read once (prefix reuse: ../causal/reuse.ts;
 * 0: whole rows): those tokens once, then each row's tokens past them; per part, `shared`, and each
 * question its rows' own tokens. No parts if a row were read by no question or by several.
 */
export function rowsUsage(plan: FamilyPlan, shared: number): RowUsage {
  const own = (i: number) => plan.rows[i]!.tokens - shared;
  const usage = { input_tokens: plan.rows.reduce((n, _, i) => n + own(i), shared), output_tokens: 0 };
  const owners = new Array<number>(plan.rows.length).fill(0);
  // Own keys: a question id may be named like an Object.prototype member.
  const questions = Object.create(null) as Record<string, Usage>;
  for (const q of plan.questions) {
    const part = (questions[q.key] ??= { input_tokens: 0, output_tokens: 0 });
    for (const i of q.rows) {
      owners[i]!++;
      part.input_tokens += own(i);
    }
  }
  if (owners.some((n) => n !== 1)) return { usage };
  const parts: UsageParts = { shared: { input_tokens: shared, output_tokens: 0 }, questions };
  return { usage, parts };
}

/** Runs `rows` whole, in batches, each batch one pass through `pass`; the outputs in the rows' order. */
export async function runBatched<W>(
  rows: readonly W[],
  tokens: (row: W) => number,
  batchTokens: number,
  pass: PassStep,
  run: (batch: readonly W[]) => Promise<RowOutput[]>,
): Promise<RowOutput[]> {
  const out = new Array<RowOutput>(rows.length);
  for (const batch of rowBatches(
    rows.map((r) => ({ tokens: tokens(r) })),
    batchTokens,
  )) {
    const picked = batch.map((i) => rows[i]!);
    const got = await pass(() => run(picked), picked.length * tokens(picked[0]!));
    batch.forEach((i, j) => (out[i] = got[j]!));
  }
  return out;
}

/** What an encoder's runner is made of: its graph, what it says, and one pass over a batch of rows. */
export interface EncoderGraph<R extends FamilyRow> {
  graph: string;
  notes: readonly string[];
  /** The graph quantizes activations with one scale per run (a dynamic int8 export): rows run one by one. */
  rowsAlone: boolean;
  /** The graph's inputs for a batch of rows. */
  feeds(batch: readonly R[]): Record<string, ort.Tensor>;
  run(batch: readonly R[]): Promise<RowOutput[]>;
  close(): Promise<void>;
}

/** An encoder family's runner: whole rows, batched (`batchTokens`: the engine's rowBatchTokens). */
export function batchedRows<R extends FamilyRow>(g: EncoderGraph<R>, batchTokens: number): RowRunner<FamilyPlan<R>, R> {
  return {
    graph: g.graph,
    notes: g.notes,
    rowsAlone: g.rowsAlone,
    usage: wholeRowsUsage,
    run: (plan, pass) =>
      runBatched(
        plan.rows,
        (r) => r.tokens,
        g.rowsAlone ? 0 : batchTokens,
        pass,
        (b) => g.run(b),
      ),
    pass: (rows) => g.run(rows),
    feeds: (rows) => g.feeds(rows),
    close: () => g.close(),
  };
}
