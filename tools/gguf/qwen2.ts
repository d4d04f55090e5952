// Our synthetic Qwen2/Qwen3-shaped weights, read from the fp32 ONNX export, as a llama.cpp GGUF
// (the tensor names and metadata keys of convert_hf_to_gguf.py's Qwen2 / Qwen3 models), with the
// real Qwen tokenizer data (tokens, token types, merges, special ids, chat template).
//
//   npm run models:gguf -- --shape tiny|qwen2.5-0.5b|qwen3-0.6b --type F32|Q8_0|Q4_0   → prints the file
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import onnxProto from 'onnx-proto';
import { ensureSynthModel, type ShapeName } from '../../src/internal.js';
import { writeGguf, type GgmlType, type MetaValue, type TensorSpec } from './format.js';
import { quantizeQ4_0, quantizeQ8_0, toF32Bytes } from './quantize.js';

const FILE_TYPE: Record<GgmlType, number> = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };

/** Reads the fp32 export's initializers by name (inline or external data), one at a time. */
class Weights {
  private readonly tensors = new Map<string, onnxProto.onnx.ITensorProto>();
  constructor(private readonly onnxPath: string) {
    const model = onnxProto.onnx.ModelProto.decode(readFileSync(onnxPath));
    for (const t of model.graph!.initializer!) this.tensors.set(t.name!, t);
  }
  dims(name: string): number[] {
    return this.get(name).dims!.map(Number);
  }
  private get(name: string): onnxProto.onnx.ITensorProto {
    const t = this.tensors.get(name);
    if (!t) throw new Error(`${this.onnxPath}: no initializer ${name}`);
    return t;
  }
  floats(name: string): Float32Array {
    const t = this.get(name);
    const ext = Object.fromEntries((t.externalData ?? []).map((e) => [e.key, e.value]));
    if (ext.location) {
      const bytes = Buffer.alloc(Number(ext.length));
      const fd = openSync(join(dirname(this.onnxPath), ext.location), 'r');
      try {
        readSync(fd, bytes, 0, bytes.length, Number(ext.offset ?? 0));
      } finally {
        closeSync(fd);
      }
      return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
    }
    const raw = new Uint8Array(t.rawData!);
    return new Float32Array(raw.buffer, 0, raw.byteLength / 4);
  }
  /** A linear weight stored [in, out] (x·W), as [out, in] rows (ggml ne = [in, out]). */
  transposed(name: string): Float32Array {
    const [inDim = 0, outDim = 0] = this.dims(name);
    const w = this.floats(name);
    const t = new Float32Array(w.length);
    for (let i = 0; i < inDim; i++) for (let o = 0; o < outDim; o++) t[o * inDim + i] = w[i * outDim + o]!;
    return t;
  }
}

interface TokenizerJson {
  model: { vocab: Record<string, number>; merges: Array<string | [string, string]> };
  added_tokens: Array<{ id: number; content: string; special: boolean }>;
}

/** tokenizer.ggml.* as convert_hf_to_gguf writes a gpt2-style BPE vocabulary, padded to the embedding rows. */
export function tokenizerMetadata(
  dir: string,
  vocabSize: number,
  config: Record<string, unknown>,
): Array<[string, MetaValue]> {
  const tok = JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  const tokConfig = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  const tokens: string[] = Array.from({ length: vocabSize }, (_, i) => `[PAD${i}]`);
  const types: number[] = Array.from({ length: vocabSize }, () => 5); // UNUSED
  for (const [text, id] of Object.entries(tok.model.vocab)) if (id < vocabSize) [tokens[id], types[id]] = [text, 1]; // NORMAL
  for (const t of tok.added_tokens) if (t.id < vocabSize) [tokens[t.id], types[t.id]] = [t.content, t.special ? 3 : 4]; // CONTROL / USER_DEFINED
  const merges = tok.model.merges.map((m) => (typeof m === 'string' ? m : m.join(' ')));
  const eos = Number(config.eos_token_id);
  return [
    ['tokenizer.ggml.model', { str: 'gpt2' }],
    ['tokenizer.ggml.pre', { str: 'qwen2' }],
    ['tokenizer.ggml.tokens', { strs: tokens }],
    ['tokenizer.ggml.token_type', { i32s: types }],
    ['tokenizer.ggml.merges', { strs: merges }],
    ['tokenizer.ggml.eos_token_id', { u32: eos }],
    ['tokenizer.ggml.padding_token_id', { u32: Number(config.bos_token_id) }],
    ['tokenizer.ggml.bos_token_id', { u32: Number(config.bos_token_id) }],
    ['tokenizer.ggml.add_bos_token', { bool: false }],
    ['tokenizer.chat_template', { str: String(tokConfig.chat_template ?? '') }],
  ];
}

/** Writes `<model dir>/assay-<type>.gguf` from a synthetic fp32 export folder; returns its path. */
export function writeQwenGguf(dir: string, type: Exclude<GgmlType, 'F16'>): string {
  const { metadata, tensors } = qwenGguf(dir, type);
  const out = join(dir, `assay-${type.toLowerCase()}.gguf`);
  writeGguf(out, metadata, tensors);
  return out;
}

/** The metadata and tensors of the GGUF of a synthetic fp32 export folder. */
export function qwenGguf(
  dir: string,
  type: Exclude<GgmlType, 'F16'>,
): { metadata: Array<[string, MetaValue]>; tensors: TensorSpec[] } {
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, number | string[]>;
  const manifest = JSON.parse(readFileSync(join(dir, 'assay.json'), 'utf8')) as { shape?: string };
  const arch = (config.model_type as unknown as string) === 'qwen3' ? 'qwen3' : 'qwen2';
  const w = new Weights(join(dir, 'onnx', 'model.onnx'));
  const H = Number(config.hidden_size);
  const V = Number(config.vocab_size);
  const matrix = (name: string, ne: number[], values: () => Float32Array): TensorSpec => ({
    name,
    ne,
    type,
    data: () =>
      type === 'Q8_0' ? quantizeQ8_0(values()) : type === 'Q4_0' ? quantizeQ4_0(values()) : toF32Bytes(values()),
  });
  const vector = (name: string, source: string): TensorSpec => ({
    name,
    ne: [w.dims(source)[0]!],
    type: 'F32',
    data: () => toF32Bytes(w.floats(source)),
  });
  const linear = (name: string, source: string): TensorSpec => {
    const [inDim = 0, outDim = 0] = w.dims(source);
    return matrix(name, [inDim, outDim], () => w.transposed(source));
  };
  const tensors: TensorSpec[] = [matrix('token_embd.weight', [H, V], () => w.floats('model.embed_tokens.weight'))];
  for (let i = 0; i < Number(config.num_hidden_layers); i++) {
    const p = `model.layers.${i}`;
    tensors.push(vector(`blk.${i}.attn_norm.weight`, `${p}.input_layernorm.weight`));
    for (const [n, g] of [
      ['q', 'attn_q'],
      ['k', 'attn_k'],
      ['v', 'attn_v'],
    ] as const) {
      tensors.push(linear(`blk.${i}.${g}.weight`, `${p}.self_attn.${n}_proj.weight`));
      if (arch === 'qwen2') tensors.push(vector(`blk.${i}.${g}.bias`, `${p}.self_attn.${n}_proj.bias`));
    }
    if (arch === 'qwen3') {
      tensors.push(vector(`blk.${i}.attn_q_norm.weight`, `${p}.self_attn.q_norm.weight`));
      tensors.push(vector(`blk.${i}.attn_k_norm.weight`, `${p}.self_attn.k_norm.weight`));
    }
    tensors.push(linear(`blk.${i}.attn_output.weight`, `${p}.self_attn.o_proj.weight`));
    tensors.push(vector(`blk.${i}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`));
    tensors.push(linear(`blk.${i}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`));
    tensors.push(linear(`blk.${i}.ffn_up.weight`, `${p}.mlp.up_proj.weight`));
    tensors.push(linear(`blk.${i}.ffn_down.weight`, `${p}.mlp.down_proj.weight`));
  }
  tensors.push(vector('output_norm.weight', 'model.norm.weight'));
  // Tied embeddings: no output.weight, as convert_hf_to_gguf writes tied models; llama.cpp's
  // qwen2/qwen3 loaders then use token_embd for the head.
  const metadata: Array<[string, MetaValue]> = [
    ['general.architecture', { str: arch }],
    ['general.name', { str: `assay synthetic ${manifest.shape ?? ''}`.trim() }],
    ['general.alignment', { u32: 32 }],
    ['general.file_type', { u32: FILE_TYPE[type] }],
    [`${arch}.context_length`, { u32: Number(config.max_position_embeddings) }],
    [`${arch}.embedding_length`, { u32: H }],
    [`${arch}.block_count`, { u32: Number(config.num_hidden_layers) }],
    [`${arch}.feed_forward_length`, { u32: Number(config.intermediate_size) }],
    [`${arch}.attention.head_count`, { u32: Number(config.num_attention_heads) }],
    [`${arch}.attention.head_count_kv`, { u32: Number(config.num_key_value_heads) }],
    [`${arch}.attention.key_length`, { u32: Number(config.head_dim) }],
    [`${arch}.attention.value_length`, { u32: Number(config.head_dim) }],
    [`${arch}.rope.freq_base`, { f32: Number(config.rope_theta) }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { f32: Number(config.rms_norm_eps) }],
    ...tokenizerMetadata(dir, V, config),
  ];
  return { metadata, tensors };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({
    options: { shape: { type: 'string', default: 'tiny' }, type: { type: 'string', default: 'F32' } },
  });
  const dir = await ensureSynthModel({ shape: values.shape as ShapeName, dtype: 'fp32' });
  process.stdout.write(`${writeQwenGguf(dir, values.type as Exclude<GgmlType, 'F16'>)}\n`);
}
