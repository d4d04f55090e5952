// The GGUF v3 container, as llama.cpp's gguf-py writes it: header, metadata key/values, tensor
// infos, then tensor data, each tensor aligned to `general.alignment` (32). Tensor bytes are
// written one tensor at a time at their offsets, so a multi-GB model is never held twice.
import { closeSync, openSync, writeSync } from 'node:fs';

export const GGUF_ALIGNMENT = 32;

/** ggml tensor types used here, and their block geometry (elements, bytes). */
export const GGML = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q4_0: { id: 2, block: 32, bytes: 18 },
  Q8_0: { id: 8, block: 32, bytes: 34 },
} as const;
export type GgmlType = keyof typeof GGML;

/** GGUF metadata value types. */
const T = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

export type MetaValue =
  | { u32: number }
  | { i32: number }
  | { f32: number }
  | { bool: boolean }
  | { str: string }
  | { strs: string[] }
  | { i32s: number[] };

export interface TensorSpec {
  name: string;
  /** ggml order: ne[0] is the innermost (contiguous) dimension. */
  ne: number[];
  type: GgmlType;
  /** The tensor's bytes, produced when it is written. */
  data: () => Uint8Array;
}

class Buf {
  private chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  str(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function writeValue(b: Buf, v: MetaValue): void {
  if ('u32' in v) return (b.u32(T.UINT32), b.u32(v.u32));
  if ('i32' in v) return (b.u32(T.INT32), b.i32(v.i32));
  if ('f32' in v) return (b.u32(T.FLOAT32), b.f32(v.f32));
  if ('bool' in v) return (b.u32(T.BOOL), b.push(Buffer.of(v.bool ? 1 : 0)));
  if ('str' in v) return (b.u32(T.STRING), b.str(v.str));
  if ('strs' in v) {
    b.u32(T.ARRAY);
    b.u32(T.STRING);
    b.u64(v.strs.length);
    for (const s of v.strs) b.str(s);
    return;
  }
  b.u32(T.ARRAY);
  b.u32(T.INT32);
  b.u64(v.i32s.length);
  for (const x of v.i32s) b.i32(x);
}

export function tensorBytes(t: Pick<TensorSpec, 'ne' | 'type'>): number {
  const g = GGML[t.type];
  const n = t.ne.reduce((a, b) => a * b, 1);
  if (t.ne[0]! % g.block !== 0) throw new Error(`${t.type} needs rows that are a multiple of ${g.block}`);
  return (n / g.block) * g.bytes;
}

const align = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** Writes a GGUF file; returns its size in bytes. */
export function writeGguf(path: string, metadata: Array<[string, MetaValue]>, tensors: TensorSpec[]): number {
  const head = new Buf();
  head.push(Buffer.from('GGUF', 'ascii'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.length);
  for (const [key, value] of metadata) {
    head.str(key);
    writeValue(head, value);
  }
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    head.str(t.name);
    head.u32(t.ne.length);
    for (const d of t.ne) head.u64(d);
    head.u32(GGML[t.type].id);
    head.u64(offset);
    offsets.push(offset);
    offset = align(offset + tensorBytes(t));
  }
  const header = head.bytes();
  const dataStart = align(header.length);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, header, 0, header.length, 0);
    tensors.forEach((t, i) => {
      const data = t.data();
      if (data.byteLength !== tensorBytes(t))
        throw new Error(`${t.name}: ${data.byteLength} bytes, expected ${tensorBytes(t)}`);
      writeSync(fd, data, 0, data.byteLength, dataStart + offsets[i]!);
    });
    // Pad the file to the end of the last tensor's aligned slot (zeros after its data, never over it).
    const last = tensors.length ? offsets[offsets.length - 1]! + tensorBytes(tensors[tensors.length - 1]!) : 0;
    if (offset > last) writeSync(fd, Buffer.alloc(offset - last), 0, offset - last, dataStart + last);
  } finally {
    closeSync(fd);
  }
  return dataStart + offset;
}
