// Trained weights for the generator: a safetensors file (8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw little-endian data) in the
// layout tools/train/train.py writes: every tensor under the graph's own name and orientation
// (linear weights [in, out], as x · W), and the embedding as the rows of the token ids that were
// trained (`model.embed_tokens.rows` [R, hidden], `model.embed_tokens.ids` [R] int32): every other
// row of the full vocabulary is zero.
import { readFileSync } from 'node:fs';

interface Entry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

export class WeightsError extends Error {}

export interface Weights {
  /** The tensor `name` with exactly `dims` (the graph's [in, out] for linear weights); WeightsError when absent or shaped otherwise. */
  get(name: string, dims: number[]): Float32Array;
  /** The file's `__metadata__` (string values). */
  metadata: Record<string, string>;
  file: string;
}

export function readWeights(file: string): Weights {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new WeightsError(
      `weights ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  if (bytes.length < 8) throw new WeightsError(`weights ${file}: not a safetensors file (too short)`);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  if (headerLength > bytes.length - 8)
    throw new WeightsError(`weights ${file}: not a safetensors file (header length ${headerLength})`);
  let header: Record<string, Entry | Record<string, string>>;
  try {
    header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as typeof header;
  } catch {
    throw new WeightsError(`weights ${file}: not a safetensors file (header is not JSON)`);
  }
  const data = bytes.subarray(8 + headerLength);
  const entries = new Map(Object.entries(header).filter(([k]) => k !== '__metadata__') as Array<[string, Entry]>);
  const raw = (name: string, dtype: string): { entry: Entry; buf: Buffer } => {
    const entry = entries.get(name);
    if (!entry) throw new WeightsError(`weights ${file}: no tensor ${name}`);
    if (entry.dtype !== dtype) throw new WeightsError(`weights ${file}: ${name} is ${entry.dtype}, expected ${dtype}`);
    const [start, end] = entry.data_offsets;
    const count = entry.shape.reduce((a, b) => a * b, 1);
    if (end - start !== count * 4 || end > data.length)
      throw new WeightsError(`weights ${file}: ${name} has ${end - start} bytes for shape [${entry.shape.join(', ')}]`);
    // Copied out: the file's buffer need not be aligned for a typed-array view.
    return { entry, buf: Buffer.from(data.subarray(start, end)) };
  };
  const floats = (name: string) => {
    const { entry, buf } = raw(name, 'F32');
    return { shape: entry.shape, values: new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4) };
  };
  const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

  return {
    file,
    metadata: (header.__metadata__ ?? {}) as Record<string, string>,
    get(name, dims) {
      if (name === 'model.embed_tokens.weight') {
        const [vocab = 0, hidden = 0] = dims;
        const rows = floats('model.embed_tokens.rows');
        const { buf } = raw('model.embed_tokens.ids', 'I32');
        const ids = new Int32Array(buf.buffer, buf.byteOffset, buf.length / 4);
        if (!same(rows.shape, [ids.length, hidden]))
          throw new WeightsError(
            `weights ${file}: model.embed_tokens.rows is [${rows.shape.join(', ')}], expected [${ids.length}, ${hidden}]`,
          );
        const out = new Float32Array(vocab * hidden);
        ids.forEach((id, r) => {
          if (id < 0 || id >= vocab)
            throw new WeightsError(
              `weights ${file}: embedding row for token ${id} is outside the vocabulary of ${vocab}`,
            );
          out.set(rows.values.subarray(r * hidden, (r + 1) * hidden), id * hidden);
        });
        return out;
      }
      const t = floats(name);
      if (!same(t.shape, dims))
        throw new WeightsError(`weights ${file}: ${name} is [${t.shape.join(', ')}], expected [${dims.join(', ')}]`);
      return t.values;
    },
  };
}
