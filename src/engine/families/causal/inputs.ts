// The input of a causal-row graph with a gathered-position head, as the published exports take it:
// `input_ids` i64[rows, seq], every row right-padded with the family's pad id to one length, a
// multiple of 64 (the exporters run attention in 64-token chunks and cannot pad in-graph), no
// attention-mask input: every layer is causal, so padding on the right never reaches a gathered
// position. Positions are i64 tensors of one index per row ([rows]) or of k per row ([rows, k]).
import * as ort from 'onnxruntime-node';
import { EngineError } from '../../errors.js';

/** The row length the exports take: a multiple of this. */
export const ROW_MULTIPLE = 64;

/** `n` rounded up to a multiple of `multiple` (at least one multiple). */
export function paddedLength(n: number, multiple = ROW_MULTIPLE): number {
  return Math.max(1, Math.ceil(n / multiple)) * multiple;
}

/** input_ids i64[rows, seq]: each row's ids, then `padId` up to the longest row rounded up to `multiple`. */
export function causalInputIds(
  rows: readonly (readonly number[])[],
  padId: number,
  multiple = ROW_MULTIPLE,
): ort.Tensor {
  const seq = paddedLength(Math.max(...rows.map((r) => r.length)), multiple);
  const data = new BigInt64Array(rows.length * seq).fill(BigInt(padId));
  rows.forEach((row, i) => row.forEach((id, t) => (data[i * seq + t] = BigInt(id))));
  return new ort.Tensor('int64', data, [rows.length, seq]);
}

/** One position per row: i64[rows]. */
export function rowPositions(positions: readonly number[]): ort.Tensor {
  return new ort.Tensor('int64', BigInt64Array.from(positions, BigInt), [positions.length]);
}

/**
 * k positions per row: i64[rows, k], k the most any row has; a row with fewer repeats its last
 * position (the head reads it, the readout ignores the extra columns).
 */
export function rowPositionLists(lists: readonly (readonly number[])[]): { tensor: ort.Tensor; k: number } {
  const k = Math.max(1, ...lists.map((l) => l.length));
  const data = new BigInt64Array(lists.length * k);
  lists.forEach((list, i) => {
    for (let j = 0; j < k; j++) data[i * k + j] = BigInt(list[Math.min(j, list.length - 1)] ?? 0);
  });
  return { tensor: new ort.Tensor('int64', data, [lists.length, k]), k };
}

/** A [rows, k] float output as one array per row (the first `widths[i]` columns of row i, when given). */
export function rowsOf(output: ort.Tensor, rows: number, widths?: readonly number[]): number[][] {
  const data = output.data as Float32Array;
  const k = Number(output.dims[output.dims.length - 1] ?? 1);
  if (output.dims.length !== 2 || Number(output.dims[0]) !== rows)
    throw new EngineError(`the head gave [${output.dims.join(', ')}], expected [${rows}, k]`);
  return Array.from({ length: rows }, (_, i) => Array.from(data.subarray(i * k, i * k + (widths?.[i] ?? k))));
}
