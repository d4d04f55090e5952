// The continuation graph's inputs: rows of token ids right-padded to a multiple, the family's
// position inputs shifted to the pass, the past length, and the empty past of a fresh state.
import * as ort from 'onnxruntime-node';
import { pastConv, pastKey, pastRecurrent, pastValue, type RowGraphFacts } from './names.js';

export const i64 = (values: ArrayLike<number>, dims: readonly number[]): ort.Tensor =>
  new ort.Tensor('int64', BigInt64Array.from(Array.from(values), BigInt), dims);

/** `n` rounded up to a multiple of `multiple` (at least one). */
export const roundedUp = (n: number, multiple: number): number => Math.max(1, Math.ceil(n / multiple)) * multiple;

/** input_ids i64[rows, seq]: each row's ids, then `pad` up to the longest row rounded up to `multiple`. */
export function paddedIds(rows: readonly (readonly number[])[], pad: number, multiple: number): ort.Tensor {
  const seq = roundedUp(Math.max(...rows.map((r) => r.length)), multiple);
  const data = new Array<number>(rows.length * seq).fill(pad);
  rows.forEach((row, i) => row.forEach((id, t) => (data[i * seq + t] = id)));
  return i64(data, [rows.length, seq]);
}

/**
 * One position input for rows: [rows] from one position each, [rows, k] from lists (k the longest,
 * a shorter list repeating its last position: the head reads it, the readout ignores the column).
 */
export function positionInput(values: ReadonlyArray<number | readonly number[]>, rank: number): ort.Tensor {
  if (rank === 1)
    return i64(
      values.map((v) => (typeof v === 'number' ? v : v[0]!)),
      [values.length],
    );
  const lists = values.map((v) => (typeof v === 'number' ? [v] : v));
  const k = Math.max(1, ...lists.map((l) => l.length));
  const data = lists.flatMap((l) => Array.from({ length: k }, (_, j) => l[Math.min(j, l.length - 1)] ?? 0));
  return i64(data, [lists.length, k]);
}

/**
 * The past of no tokens, in shapes that broadcast to every layer's (the graph expands each to its
 * rows and heads): K / V with no positions, the conv's K-1 zero columns, a zero state.
 */
export function emptyPast(facts: RowGraphFacts): Record<string, ort.Tensor> {
  const zeros = (dims: number[]) => new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
  const past: Record<string, ort.Tensor> = {};
  for (let l = 0; l < facts.attention; l++) {
    past[pastKey(l)] = zeros([1, 1, 0, 1]);
    past[pastValue(l)] = zeros([1, 1, 0, 1]);
  }
  facts.convs.forEach((kernel, c) => (past[pastConv(c)] = zeros([1, 1, kernel - 1])));
  for (let r = 0; r < facts.recurrences; r++) past[pastRecurrent(r)] = zeros([1, 1, 1, 1]);
  return past;
}
