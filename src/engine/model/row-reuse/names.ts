// The continuation graph's own inputs and outputs (rewrite.ts), and what the rewrite learned about
// a graph (kept beside the rewritten file: graph-cache.ts), and what its runner (runner.ts) takes and keeps.
import type * as ort from 'onnxruntime-node';

/** i64 scalar: P, how many tokens of the row the past holds (the rows continue at position P). */
export const PAST_LENGTH = 'assay_past_length';

/** Attention layer l's K after rotary, before the GQA expand: [1, kv_heads, P, head_dim]. */
export const pastKey = (l: number): string => `assay_past_key.${l}`;
/** Attention layer l's V: [1, kv_heads, P, head_dim]. */
export const pastValue = (l: number): string => `assay_past_value.${l}`;
/** Causal conv c's input at the last K-1 positions before P: [1, C, K-1]. */
export const pastConv = (c: number): string => `assay_past_conv.${c}`;
/** Recurrence r's state after P tokens: [1, heads, d_k, d_v] as the Scan carries it. */
export const pastRecurrent = (r: number): string => `assay_past_recurrent.${r}`;

/** The same after this pass (past and rows together); a state pass (one row) reads them as its snapshot. */
export const presentOf = (past: string): string => past.replace('assay_past_', 'assay_present_');

/** Bumped whenever the rewrite changes: a graph rewritten by an older version is rewritten again. */
export const ROW_REUSE_VERSION = 1;

/** What the rewrite found in a graph it recognised. */
export interface RowGraphFacts {
  /** The head's outputs (the graph's own). */
  outputs: string[];
  /** The family's position inputs: i64 [rows] (rank 1) or [rows, k] (rank 2). */
  positions: Array<{ name: string; rank: number }>;
  /** Attention layers (past key and value each). */
  attention: number;
  /** Causal convs: each one's kernel size K (the past holds K-1 columns). */
  convs: number[];
  /** Chunked recurrences (Scan). */
  recurrences: number;
  /** Rows of the embedding table (token ids are below it), when it could be told. */
  vocab?: number;
}

/** One row to continue: the whole row's token ids, and the family's positions in the whole row. */
export interface ReuseRow {
  ids: readonly number[];
  positions: Readonly<Record<string, number | readonly number[]>>;
}

/** Every layer's state after the first `length` tokens of a row (a state's, shared by its questions). */
export interface Snapshot {
  /** P: the tokens it holds, a multiple of the runner's `multiple`. */
  readonly length: number;
  /** Those tokens: a row continues from the snapshot only if it begins with them. */
  readonly tokens: readonly number[];
  /** The past inputs (the state pass's presents), one per layer input of the graph. */
  readonly past: Readonly<Record<string, ort.Tensor>>;
  /** Bytes of the tensors. */
  readonly bytes: number;
}
