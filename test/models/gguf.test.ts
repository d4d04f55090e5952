// The GGUF writer (models/gguf): the container as llama.cpp reads it, and ggml's block quantizers.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeGguf } from '../../models/gguf/format.js';
import { quantizeQ4_0, quantizeQ8_0 } from '../../models/gguf/quantize.js';

describe('GGUF container', () => {
  it('writes the v3 header, metadata, tensor infos and 32-byte aligned data', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'assay-gguf-')), 'x.gguf');
    const a = Float32Array.from({ length: 64 }, (_, i) => i / 10);
    const size = writeGguf(path, [['general.architecture', { str: 'qwen2' }], ['qwen2.block_count', { u32: 2 }]], [
      { name: 'a', ne: [32, 2], type: 'F32', data: () => new Uint8Array(a.buffer) },
      { name: 'b', ne: [32], type: 'Q8_0', data: () => quantizeQ8_0(a.subarray(0, 32)) },
    ]);
    const f = readFileSync(path);
    expect(f.length).toBe(size);
    let at = 0;
    const u32 = () => ((at += 4), f.readUInt32LE(at - 4));
    const u64 = () => ((at += 8), Number(f.readBigUInt64LE(at - 8)));
    const str = () => {
      const n = u64();
      at += n;
      return f.toString('utf8', at - n, at);
    };
    expect(f.toString('ascii', 0, 4)).toBe('GGUF');
    at = 4;
    expect([u32(), u64(), u64()]).toEqual([3, 2, 2]);
    expect([str(), u32(), str()]).toEqual(['general.architecture', 8, 'qwen2']);
    expect([str(), u32(), u32()]).toEqual(['qwen2.block_count', 4, 2]);
    expect([str(), u32(), u64(), u64(), u32(), u64()]).toEqual(['a', 2, 32, 2, 0, 0]);
    expect([str(), u32(), u64(), u32(), u64()]).toEqual(['b', 1, 32, 8, 256]);
    const dataStart = Math.ceil(at / 32) * 32;
    expect(new Float32Array(f.buffer.slice(f.byteOffset + dataStart, f.byteOffset + dataStart + 256))).toEqual(a);
    expect(f.subarray(dataStart + 256, dataStart + 256 + 34)).toEqual(Buffer.from(quantizeQ8_0(a.subarray(0, 32))));
    // The file is padded to the last tensor's aligned slot with zeros after its data.
    expect(f.length).toBe(dataStart + 256 + 64);
    expect(f.subarray(dataStart + 256 + 34).every((x) => x === 0)).toBe(true);
  });

  it('pads after the last tensor, never over it (an aligned last tensor keeps its last byte)', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'assay-gguf-')), 'y.gguf');
    const a = Float32Array.from({ length: 8 }, (_, i) => i + 1); // 32 bytes: ends on the alignment
    writeGguf(path, [], [{ name: 'a', ne: [8], type: 'F32', data: () => new Uint8Array(a.buffer) }]);
    const f = readFileSync(path);
    expect(new Float32Array(f.buffer.slice(f.byteOffset + f.length - 32, f.byteOffset + f.length))).toEqual(a);
  });
});

describe('ggml block quantizers', () => {
  it('Q8_0: a float16 scale max|x| / 127, then round(x / scale)', () => {
    const x = Float32Array.from({ length: 32 }, (_, i) => (i - 16) / 4); // -4 .. 3.75
    const q = quantizeQ8_0(x);
    expect(q.length).toBe(34);
    const view = new DataView(q.buffer);
    expect(view.getUint16(0, true)).toBe(0x2808); // float16(4 / 127): exponent -5, mantissa 8/1024
    expect(view.getInt8(2)).toBe(-127); // -4
    expect(view.getInt8(2 + 16)).toBe(0);
    expect(view.getInt8(2 + 31)).toBe(119); // round(3.75 * 127 / 4) = round(119.06)
  });

  it('Q4_0: scale = the largest-magnitude value / -8, nibbles low half first', () => {
    const x = Float32Array.from({ length: 32 }, (_, i) => (i === 0 ? -8 : i === 16 ? 4 : 0));
    const q = quantizeQ4_0(x);
    expect(q.length).toBe(18);
    expect(new DataView(q.buffer).getUint16(0, true)).toBe(0x3c00); // d = -8 / -8 = 1
    expect(q[2]).toBe(0 | (12 << 4)); // x0 = -8 → 0; x16 = 4 → 12
    expect(q[3]).toBe(8 | (8 << 4)); // zeros → 8
  });
});
