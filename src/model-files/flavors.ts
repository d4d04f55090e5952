// Export flavors derived from a synthetic fp32 export, from the same weights, the way the common
// tools derive them from a PyTorch export:
//   fp16   onnxconverter-common's float16 conversion with keep_io_types=False (transformers.js
//          model_fp16.onnx, GPU builds): float initializers, graph I/O (KV, logits) and Casts to
//          float become float16; onnxruntime's CPU provider inserts casts where it has no float16 kernel.
//   q4     onnxruntime's MatMul4BitsQuantizer (transformers.js model_q4.onnx): every MatMul with a
//          constant weight, the tied head included, becomes com.microsoft MatMulNBits (bits 4,
//          block_size 32, symmetric: no zero points, the kernel's default zero point 8); I/O fp32.
//   q4f16  q4, then the float16 conversion (model_q4f16.onnx): MatMulNBits with float16 scales.
// Layouts: hf (onnx/<file>), optimum (model.onnx at the root), genai (genai_config.json and
// model.onnx + model.onnx.data at the root, no config.json, as onnxruntime-genai's builder writes).
// Templates: in tokenizer_config.json, or only in chat_template.jinja / chat_template.json.
//
// The answers of these models are MEANINGLESS (random weights); numerics are real.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { externalize } from '../engine/index.js';
import { GENERATED_DIR, ensureSynthModel } from './synth/ensure.js';
import { GraphBuilder } from './onnx/graph-builder.js';
import { buildDecoder, DEFAULT_SEED, loadShapes, type ShapeName } from './synth/index.js';
import { toHalf } from './onnx/half.js';

const onnx = onnxProto.onnx;
type Model = OnnxTypes.ModelProto;
type Tensor = OnnxTypes.ITensorProto;

export type FlavorDtype = 'fp16' | 'q4' | 'q4f16';
export type FlavorLayout = 'hf' | 'optimum' | 'genai';
export type FlavorTemplate = 'tokenizer_config' | 'jinja' | 'json';

export interface FlavorOptions {
  dtype: 'fp32' | FlavorDtype;
  /** The synthetic shape whose fp32 weights are converted (default tiny; gqa: tiny only). */
  shape?: ShapeName;
  layout?: FlavorLayout;
  template?: FlavorTemplate;
  /** 'gqa': GroupQueryAttention with rotary inside, as onnxruntime-genai's builder emits (no position_ids input). */
  attention?: 'plain' | 'gqa';
  /** MatMulNBits accuracy_level (4: int8 dot products on CPU). Default 4. */
  accuracyLevel?: number;
}

const FLOAT = 1;
const FLOAT16 = 10;
const UINT8 = 2;
const BLOCK = 32;
/** Bumped when a flavor folder's bytes or manifest change: cached folders of another version are rewritten. */
const FLAVOR_VERSION = 2;

/** transformers.js file names. */
const FILE: Record<FlavorOptions['dtype'], string> = { fp32: 'model.onnx', fp16: 'model_fp16.onnx', q4: 'model_q4.onnx', q4f16: 'model_q4f16.onnx' };

export function flavorName(o: FlavorOptions): string {
  const acc = (o.dtype === 'q4' || o.dtype === 'q4f16') && o.accuracyLevel !== undefined && o.accuracyLevel !== 4 ? `acc${o.accuracyLevel}` : '';
  return [
    o.shape ?? 'tiny',
    o.dtype,
    acc,
    o.attention === 'gqa' ? 'gqa' : '',
    o.layout && o.layout !== 'hf' ? o.layout : '',
    o.template && o.template !== 'tokenizer_config' ? `template-${o.template}` : '',
  ]
    .filter(Boolean)
    .join('-');
}

// ------------------------------------------------------------------------------ float16

function floats(t: Tensor): Float32Array {
  if (t.rawData && t.rawData.byteLength > 0) {
    const copy = new Uint8Array(t.rawData); // aligned copy
    return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
  }
  return Float32Array.from(t.floatData ?? []);
}

function halfTensor(t: Tensor): void {
  const v = floats(t);
  const h = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) h[i] = toHalf(v[i]!);
  t.dataType = FLOAT16;
  t.floatData = [];
  t.rawData = new Uint8Array(h.buffer);
}

/** keep_io_types=False: every float tensor of the graph becomes float16. */
export function convertToFloat16(model: Model): void {
  const g = model.graph!;
  for (const t of g.initializer ?? []) if (t.dataType === FLOAT) halfTensor(t);
  for (const vi of [...(g.input ?? []), ...(g.output ?? []), ...(g.valueInfo ?? [])]) {
    const tt = vi.type?.tensorType;
    if (tt && tt.elemType === FLOAT) tt.elemType = FLOAT16;
  }
  for (const n of g.node ?? []) {
    for (const a of n.attribute ?? []) {
      if (n.opType === 'Cast' && a.name === 'to' && Number(a.i) === FLOAT) a.i = FLOAT16;
      if (a.t && a.t.dataType === FLOAT) halfTensor(a.t);
    }
  }
}

// ------------------------------------------------------------------------------ 4-bit

function initializerMap(g: OnnxTypes.IGraphProto): Map<string, Tensor> {
  return new Map((g.initializer ?? []).map((t) => [t.name!, t]));
}

/** W [K, N] (x·W) as MatMulNBits: B uint8 [N, blocks, 16] (low nibble first), scales [N × blocks]. */
function quantize4(w: Float32Array, K: number, N: number, name: string): { b: Tensor; scales: Tensor } {
  const blocks = Math.ceil(K / BLOCK);
  const blob = BLOCK / 2;
  const b = new Uint8Array(N * blocks * blob);
  const scales = new Float32Array(N * blocks);
  for (let n = 0; n < N; n++) {
    for (let k0 = 0, blk = 0; k0 < K; k0 += BLOCK, blk++) {
      let absmax = 0;
      for (let k = k0; k < Math.min(K, k0 + BLOCK); k++) absmax = Math.max(absmax, Math.abs(w[k * N + n]!));
      const scale = absmax > 0 ? absmax / 7 : 1;
      scales[n * blocks + blk] = scale;
      for (let k = k0; k < k0 + BLOCK; k++) {
        const q = k < K ? Math.max(0, Math.min(15, Math.round(w[k * N + n]! / scale) + 8)) : 8;
        const at = (n * blocks + blk) * blob + ((k - k0) >> 1);
        b[at]! |= (k - k0) & 1 ? q << 4 : q;
      }
    }
  }
  return {
    b: { name: `${name}_Q4`, dataType: UINT8, dims: [N, blocks, blob], rawData: b },
    scales: { name: `${name}_scales`, dataType: FLOAT, dims: [N * blocks], rawData: new Uint8Array(scales.buffer) },
  };
}

/** Every MatMul by a constant [K, N] weight (or the transposed tied embedding) becomes MatMulNBits. */
export function quantizeTo4Bits(model: Model, accuracyLevel: number): void {
  const g = model.graph!;
  const inits = initializerMap(g);
  const producer = new Map<string, OnnxTypes.INodeProto>();
  for (const n of g.node ?? []) for (const o of n.output ?? []) producer.set(o, n);
  const drop = new Set<string>();
  const unused = new Set<OnnxTypes.INodeProto>();
  const added: Tensor[] = [];
  for (const n of g.node ?? []) {
    if (n.opType !== 'MatMul') continue;
    const wName = n.input![1]!;
    let w: Float32Array;
    let K: number;
    let N: number;
    const direct = inits.get(wName);
    const transpose = producer.get(wName);
    if (direct && direct.dims?.length === 2) {
      [K = 0, N = 0] = direct.dims.map(Number);
      w = floats(direct);
      drop.add(wName);
    } else if (transpose?.opType === 'Transpose' && inits.get(transpose.input![0]!)?.dims?.length === 2) {
      // The tied head: MatMul(hidden, Transpose(embed [V, H])) → W [H, V].
      const e = inits.get(transpose.input![0]!)!;
      const [V = 0, H = 0] = e.dims!.map(Number);
      const ev = floats(e);
      [K, N] = [H, V];
      w = new Float32Array(H * V);
      for (let v = 0; v < V; v++) for (let h = 0; h < H; h++) w[h * V + v] = ev[v * H + h]!;
      unused.add(transpose);
    } else continue;
    const { b, scales } = quantize4(w, K, N, wName);
    added.push(b, scales);
    n.opType = 'MatMulNBits';
    n.domain = 'com.microsoft';
    n.input = [n.input![0]!, b.name!, scales.name!];
    n.attribute = [
      { name: 'K', type: 2, i: K },
      { name: 'N', type: 2, i: N },
      { name: 'bits', type: 2, i: 4 },
      { name: 'block_size', type: 2, i: BLOCK },
      { name: 'accuracy_level', type: 2, i: accuracyLevel },
    ];
  }
  // Drop what no node reads any more (quantized weights, the head's Transpose).
  g.node = (g.node ?? []).filter((n) => !unused.has(n));
  const stillUsed = new Set(g.node.flatMap((n) => n.input ?? []));
  g.initializer = [...(g.initializer ?? []).filter((t) => !drop.has(t.name!) || stillUsed.has(t.name!)), ...added];
  if (!(model.opsetImport ?? []).some((o) => o.domain === 'com.microsoft')) model.opsetImport = [...(model.opsetImport ?? []), { domain: 'com.microsoft', version: 1 }];
}

// ------------------------------------------------------------------------------ folders

function genaiConfig(config: Record<string, number | number[] | unknown>, file: string): object {
  return {
    model: {
      bos_token_id: config.bos_token_id,
      context_length: config.max_position_embeddings,
      decoder: {
        session_options: { log_id: 'onnxruntime-genai', provider_options: [] },
        filename: file,
        head_size: config.head_dim,
        hidden_size: config.hidden_size,
        inputs: {
          input_ids: 'input_ids',
          attention_mask: 'attention_mask',
          position_ids: 'position_ids',
          past_key_names: 'past_key_values.%d.key',
          past_value_names: 'past_key_values.%d.value',
        },
        outputs: { logits: 'logits', present_key_names: 'present.%d.key', present_value_names: 'present.%d.value' },
        num_attention_heads: config.num_attention_heads,
        num_hidden_layers: config.num_hidden_layers,
        num_key_value_heads: config.num_key_value_heads,
      },
      eos_token_id: [151645, 151643],
      pad_token_id: 151643,
      type: config.model_type,
      vocab_size: config.vocab_size,
    },
    search: { max_length: config.max_position_embeddings, do_sample: false, num_beams: 1 },
  };
}

/** The tiny shape with GroupQueryAttention, from the same seeded weight streams as tiny-fp32. */
function gqaModel(): Model {
  const g = new GraphBuilder('main_graph');
  buildDecoder(g, loadShapes().tiny, { quantized: false, positionIds: false, seed: DEFAULT_SEED, attention: 'gqa' });
  return onnx.ModelProto.decode(onnx.ModelProto.encode(g.toModel({ opset: 17 })).finish());
}

/** Reads every external-data initializer's bytes into the model (the 0.5b fp32 weights live in model.onnx_data). */
function inlineExternalData(model: Model, dir: string): void {
  const files = new Map<string, Buffer>();
  for (const t of model.graph?.initializer ?? []) {
    if (!t.externalData?.length) continue;
    const at = (key: string) => t.externalData!.find((e) => e.key === key)?.value;
    const location = at('location')!;
    if (!files.has(location)) files.set(location, readFileSync(join(dir, location)));
    const offset = Number(at('offset') ?? 0);
    const length = Number(at('length') ?? files.get(location)!.byteLength - offset);
    t.rawData = files.get(location)!.subarray(offset, offset + length);
    t.externalData = [];
    t.dataLocation = 0;
  }
}

/** A synthetic model in one flavor (generated once, from the fp32 twin's weights). */
export async function ensureFlavor(o: FlavorOptions): Promise<string> {
  const shape = o.shape ?? 'tiny';
  const out = join(GENERATED_DIR, flavorName(o));
  if (flavorName(o) === `${shape}-fp32`) return ensureSynthModel({ shape, dtype: 'fp32' });
  if (o.attention === 'gqa' && shape !== 'tiny') throw new Error('the gqa flavor is made for the tiny shape only');
  const manifestPath = join(out, 'assay.json');
  if (existsSync(manifestPath) && (JSON.parse(readFileSync(manifestPath, 'utf8')) as { flavor_version?: number }).flavor_version === FLAVOR_VERSION) return out;
  const source = await ensureSynthModel({ shape, dtype: 'fp32' });
  const tmp = `${out}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  let model: Model;
  if (o.attention === 'gqa') model = gqaModel();
  else {
    model = onnx.ModelProto.decode(readFileSync(join(source, 'onnx', 'model.onnx')));
    inlineExternalData(model, join(source, 'onnx'));
  }
  if (o.dtype === 'q4' || o.dtype === 'q4f16') quantizeTo4Bits(model, o.accuracyLevel ?? 4);
  if (o.dtype === 'fp16' || o.dtype === 'q4f16') convertToFloat16(model);
  const layout = o.layout ?? 'hf';
  const config = JSON.parse(readFileSync(join(source, 'config.json'), 'utf8')) as Record<string, unknown>;
  const tokenizerConfig = JSON.parse(readFileSync(join(source, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  copyFileSync(join(source, 'tokenizer.json'), join(tmp, 'tokenizer.json'));
  const bytes = onnx.ModelProto.encode(model).finish();
  if (layout === 'genai') {
    // The builder always writes its weights as external data next to model.onnx.
    await externalize(model, join(tmp, 'model.onnx.data'), 'model.onnx.data');
    writeFileSync(join(tmp, 'model.onnx'), onnx.ModelProto.encode(model).finish());
    writeFileSync(join(tmp, 'genai_config.json'), `${JSON.stringify(genaiConfig(config, 'model.onnx'), null, 4)}\n`);
  } else {
    const dir = layout === 'hf' ? join(tmp, 'onnx') : tmp;
    mkdirSync(dir, { recursive: true });
    const file = layout === 'hf' ? FILE[o.dtype] : 'model.onnx';
    if (bytes.byteLength > 256 * 1024 * 1024) {
      // Big shapes keep their weights in external data, as exporters do past the protobuf comfort zone.
      await externalize(model, join(dir, `${file}_data`), `${file}_data`);
      writeFileSync(join(dir, file), onnx.ModelProto.encode(model).finish());
    } else writeFileSync(join(dir, file), bytes);
    writeFileSync(join(tmp, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
    copyFileSync(join(source, 'generation_config.json'), join(tmp, 'generation_config.json'));
  }
  const template = o.template ?? 'tokenizer_config';
  if (template !== 'tokenizer_config') {
    const text = tokenizerConfig.chat_template as string;
    delete tokenizerConfig.chat_template;
    if (template === 'jinja') writeFileSync(join(tmp, 'chat_template.jinja'), text);
    else writeFileSync(join(tmp, 'chat_template.json'), `${JSON.stringify({ chat_template: text }, null, 2)}\n`);
  }
  writeFileSync(join(tmp, 'tokenizer_config.json'), `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
  const manifest = JSON.parse(readFileSync(join(source, 'assay.json'), 'utf8')) as Record<string, unknown>;
  const flavor = { dtype: o.dtype, attention: o.attention ?? 'plain', layout, template };
  const q4 = o.dtype === 'q4' || o.dtype === 'q4f16';
  const derived: Record<string, unknown> = {
    ...manifest,
    dtype: o.dtype,
    position_ids: o.attention !== 'gqa',
    model_file: layout === 'hf' ? `onnx/${FILE[o.dtype]}` : 'model.onnx',
    external_data: layout === 'genai' ? 'model.onnx.data' : existsSync(join(tmp, 'onnx', `${FILE[o.dtype]}_data`)) ? `onnx/${FILE[o.dtype]}_data` : null,
    quantization: q4 ? { op: 'com.microsoft.MatMulNBits', bits: 4, block_size: BLOCK, symmetric: true, accuracy_level: o.accuracyLevel ?? 4 } : null,
    flavor,
    flavor_version: FLAVOR_VERSION,
    derived_from: `${shape}-fp32`,
  };
  for (const k of ['model_bytes', 'external_bytes', 'generation_seconds']) delete derived[k];
  writeFileSync(join(tmp, 'assay.json'), `${JSON.stringify(derived, null, 2)}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return out;
}

// CLI: npm run models:flavor -- [--shape tiny|qwen2.5-0.5b] --dtype fp32|fp16|q4|q4f16 [--attention plain|gqa] [--layout hf|optimum|genai] [--template tokenizer_config|jinja|json]
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({
    options: {
      shape: { type: 'string' },
      dtype: { type: 'string', default: 'fp32' },
      attention: { type: 'string' },
      layout: { type: 'string' },
      template: { type: 'string' },
      'accuracy-level': { type: 'string' },
    },
  });
  const dir = await ensureFlavor({
    shape: values.shape as ShapeName | undefined,
    dtype: values.dtype as FlavorOptions['dtype'],
    attention: values.attention as FlavorOptions['attention'],
    layout: values.layout as FlavorLayout | undefined,
    template: values.template as FlavorTemplate | undefined,
    accuracyLevel: values['accuracy-level'] === undefined ? undefined : Number(values['accuracy-level']),
  });
  process.stdout.write(`${dir}\n`);
}
