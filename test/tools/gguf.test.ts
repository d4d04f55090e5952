// The GGUF writer (tools/gguf): the container as llama.cpp reads it, and ggml's block quantizers.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gguf } from '@huggingface/gguf';
import onnxProto from 'onnx-proto';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { writeGguf } from '../../tools/gguf/format.js';
import { qwenGguf } from '../../tools/gguf/qwen2.js';
import { quantizeQ4_0, quantizeQ8_0 } from '../../tools/gguf/quantize.js';

/**
 * Reads a GGUF file with an independent parser (Hugging Face's `@huggingface/gguf`, which the hub
 * uses to read llama.cpp files), not with a reader written for this test: metadata, tensor infos
 * and where the data start.
 */
async function readGguf(path: string): Promise<{
  meta: Map<string, unknown>;
  tensors: Array<{ name: string; ne: number[]; type: number; offset: number }>;
  dataStart: number;
}> {
  const out = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  expect(out.metadata.version).toBe(3);
  const meta = new Map<string, unknown>();
  for (const [key, { value }] of Object.entries(out.typedMetadata)) {
    if (key === 'version' || key === 'tensor_count' || key === 'kv_count') continue;
    meta.set(key, typeof value === 'bigint' ? Number(value) : value);
  }
  const tensors = out.tensorInfos.map((t) => ({
    name: t.name,
    ne: t.shape.map(Number),
    type: t.dtype as number,
    offset: Number(t.offset),
  }));
  return { meta, tensors, dataStart: Number(out.tensorDataOffset) };
}

describe('GGUF container', () => {
  it('writes the v3 header, metadata, tensor infos and 32-byte aligned data', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'assay-gguf-')), 'x.gguf');
    const a = Float32Array.from({ length: 64 }, (_, i) => i / 10);
    const size = writeGguf(
      path,
      [
        ['general.architecture', { str: 'qwen2' }],
        ['qwen2.block_count', { u32: 2 }],
      ],
      [
        { name: 'a', ne: [32, 2], type: 'F32', data: () => new Uint8Array(a.buffer) },
        { name: 'b', ne: [32], type: 'Q8_0', data: () => quantizeQ8_0(a.subarray(0, 32)) },
      ],
    );
    const f = readFileSync(path);
    expect(f.length).toBe(size);
    expect(f.toString('ascii', 0, 4)).toBe('GGUF');
    const { meta, tensors, dataStart } = await readGguf(path);
    expect([...meta]).toEqual([
      ['general.architecture', 'qwen2'],
      ['qwen2.block_count', 2],
    ]);
    expect(f.readUInt32LE(4 + 4 + 16 + 8 + 'general.architecture'.length)).toBe(8); // STRING
    expect(tensors).toEqual([
      { name: 'a', ne: [32, 2], type: 0, offset: 0 },
      { name: 'b', ne: [32], type: 8, offset: 256 },
    ]);
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

describe('the tiny synthetic model as a llama.cpp GGUF', () => {
  it('has the Qwen2 hyperparameters, the whole Qwen vocabulary and aligned tensors in llama.cpp layout', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const { metadata, tensors } = qwenGguf(dir, 'Q8_0');
    const path = join(mkdtempSync(join(tmpdir(), 'assay-gguf-')), 'tiny-q8_0.gguf');
    const size = writeGguf(path, metadata, tensors);
    const f = readFileSync(path);
    expect(f.length).toBe(size);
    const { meta, tensors: infos, dataStart } = await readGguf(path);

    expect(meta.get('general.architecture')).toBe('qwen2');
    expect(meta.get('general.alignment')).toBe(32);
    expect(meta.get('general.file_type')).toBe(7); // MOSTLY_Q8_0
    expect(meta.get('qwen2.block_count')).toBe(2);
    expect(meta.get('qwen2.embedding_length')).toBe(64);
    expect(meta.get('qwen2.feed_forward_length')).toBe(128);
    expect(meta.get('qwen2.attention.head_count')).toBe(4);
    expect(meta.get('qwen2.attention.head_count_kv')).toBe(2);
    expect(meta.get('qwen2.rope.freq_base')).toBe(1_000_000);
    expect(meta.get('qwen2.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-6, 12);
    expect(meta.get('tokenizer.ggml.model')).toBe('gpt2');
    expect(meta.get('tokenizer.ggml.pre')).toBe('qwen2');
    expect(meta.get('tokenizer.ggml.eos_token_id')).toBe(151645);
    expect(meta.get('tokenizer.ggml.add_bos_token')).toBe(false);
    expect(meta.get('tokenizer.chat_template')).toContain('<|im_start|>');

    // Every token of the tokenizer (vocabulary plus added tokens) at its id, padded to the
    // embedding's rows as convert_hf_to_gguf pads (llama.cpp needs n_vocab = token_embd rows).
    const tok = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as {
      model: { vocab: Record<string, number>; merges: unknown[] };
      added_tokens: Array<{ id: number; content: string }>;
    };
    const tokens = meta.get('tokenizer.ggml.tokens') as string[];
    const types = meta.get('tokenizer.ggml.token_type') as number[];
    expect(tokens.length).toBe(151936);
    expect(types.length).toBe(151936);
    const real = tokens.filter((t, i) => t !== `[PAD${i}]`).length;
    expect(real).toBe(Object.keys(tok.model.vocab).length + tok.added_tokens.length);
    for (const t of tok.added_tokens) expect(tokens[t.id]).toBe(t.content);
    expect([tokens[151645], types[151645]]).toEqual(['<|im_end|>', 3]); // CONTROL
    expect([tokens[9707], types[9707]]).toEqual([Object.entries(tok.model.vocab).find(([, id]) => id === 9707)![0], 1]); // NORMAL
    expect(types[151935]).toBe(5); // UNUSED padding row
    expect((meta.get('tokenizer.ggml.merges') as string[]).length).toBe(tok.model.merges.length);

    // Tensor infos: llama.cpp names, ggml order (ne[0] = input dim), Q8_0 matrices, F32 vectors.
    const byName = new Map(infos.map((t) => [t.name, t]));
    expect(infos.length).toBe(1 + 2 * 12 + 1); // token_embd, 12 per layer, output_norm (tied head: no output.weight)
    expect(byName.get('output.weight')).toBeUndefined();
    expect(byName.get('token_embd.weight')).toMatchObject({ ne: [64, 151936], type: 8 });
    expect(byName.get('blk.0.attn_q.weight')).toMatchObject({ ne: [64, 64], type: 8 });
    expect(byName.get('blk.0.attn_k.weight')).toMatchObject({ ne: [64, 32], type: 8 }); // 2 KV heads × 16
    expect(byName.get('blk.1.attn_k.bias')).toMatchObject({ ne: [32], type: 0 });
    expect(byName.get('blk.1.ffn_down.weight')).toMatchObject({ ne: [128, 64], type: 8 });
    expect(byName.get('blk.1.ffn_gate.weight')).toMatchObject({ ne: [64, 128], type: 8 });
    expect(byName.get('output_norm.weight')).toMatchObject({ ne: [64], type: 0 });
    let expected = 0;
    for (const t of infos) {
      expect(t.offset % 32).toBe(0);
      expect(t.offset).toBe(expected);
      const n = t.ne.reduce((a, b) => a * b, 1);
      expected = Math.ceil((t.offset + (t.type === 8 ? (n / 32) * 34 : n * 4)) / 32) * 32;
    }
    expect(dataStart % 32).toBe(0);
    expect(f.length).toBe(dataStart + expected);

    // The data are the export's weights transposed to [out, in] rows: blk.0.attn_k.weight row 0
    // is column 0 of the ONNX [in, out] initializer, quantized.
    const model = onnxProto.onnx.ModelProto.decode(readFileSync(join(dir, 'onnx', 'model.onnx')));
    const init = model.graph!.initializer!.find((t) => t.name === 'model.layers.0.self_attn.k_proj.weight')!;
    const raw = new Uint8Array(init.rawData!);
    const w = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength));
    const column0 = Float32Array.from({ length: 64 }, (_, i) => w[i * 32]!);
    const at = dataStart + byName.get('blk.0.attn_k.weight')!.offset;
    expect(f.subarray(at, at + 68)).toEqual(Buffer.from(quantizeQ8_0(column0)));
  });
});
