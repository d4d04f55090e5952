// Dtype variants of a synthetic export, from the same weights, the way the common tools derive them
// from a PyTorch export (transformers.js file names, Hugging Face layout):
//   fp16   onnxconverter-common's float16 conversion with keep_io_types=False (model_fp16.onnx):
//          float initializers, graph I/O (KV, logits) and Casts to float become float16.
//   q4     onnxruntime's MatMul4BitsQuantizer (model_q4.onnx): every MatMul with a constant weight,
//          the tied head included, becomes com.microsoft MatMulNBits (bits 4, block_size 32,
//          symmetric: no zero points, the kernel's default zero point 8); I/O fp32.
//   q4f16  q4, then the float16 conversion (model_q4f16.onnx): MatMulNBits with float16 scales.
// `assay eval --compare fp16|q4|q4f16` on a synthetic model runs them. Other export layouts and
// templates (loader fixtures) are written by tools/flavors.ts on top of these.
//
// The answers of these models are MEANINGLESS (random weights); numerics are real.
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { externalize, inlineExternalData } from '../engine/index.js';
import { GENERATED_DIR, ensureSynthModel } from './synth/ensure.js';
import type { ShapeName } from './synth/index.js';
import { toHalf } from './onnx/half.js';
import { AttributeType, DataType } from '../common/index.js';

const onnx = onnxProto.onnx;
export type Model = OnnxTypes.ModelProto;
type Tensor = OnnxTypes.ITensorProto;

export type VariantDtype = 'fp16' | 'q4' | 'q4f16';

export interface VariantOptions {
  dtype: 'fp32' | VariantDtype;
  /** The synthetic shape whose fp32 weights are converted (default tiny). */
  shape?: ShapeName;
  /** MatMulNBits accuracy_level (4: int8 dot products on CPU). Default 4. */
  accuracyLevel?: number;
}

const { FLOAT, FLOAT16, UINT8 } = DataType;
export const BLOCK = 32;
/** Bumped when a variant folder's bytes or manifest change: cached folders of another version are rewritten. */
export const VARIANT_VERSION = 2;

/** transformers.js file names. */
export const VARIANT_FILE: Record<VariantOptions['dtype'], string> = {
  fp32: 'model.onnx',
  fp16: 'model_fp16.onnx',
  q4: 'model_q4.onnx',
  q4f16: 'model_q4f16.onnx',
};

/** The folder name under models/generated: `<shape>-<dtype>[-acc<level>]`. */
export function derivedName(o: VariantOptions): string {
  const acc =
    (o.dtype === 'q4' || o.dtype === 'q4f16') && o.accuracyLevel !== undefined && o.accuracyLevel !== 4
      ? `-acc${o.accuracyLevel}`
      : '';
  return `${o.shape ?? 'tiny'}-${o.dtype}${acc}`;
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
export function quantize4(w: Float32Array, K: number, N: number, name: string): { b: Tensor; scales: Tensor } {
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
      { name: 'K', type: AttributeType.INT, i: K },
      { name: 'N', type: AttributeType.INT, i: N },
      { name: 'bits', type: AttributeType.INT, i: 4 },
      { name: 'block_size', type: AttributeType.INT, i: BLOCK },
      { name: 'accuracy_level', type: AttributeType.INT, i: accuracyLevel },
    ];
  }
  // Drop what no node reads any more (quantized weights, the head's Transpose).
  g.node = (g.node ?? []).filter((n) => !unused.has(n));
  const stillUsed = new Set(g.node.flatMap((n) => n.input ?? []));
  g.initializer = [...(g.initializer ?? []).filter((t) => !drop.has(t.name!) || stillUsed.has(t.name!)), ...added];
  if (!(model.opsetImport ?? []).some((o) => o.domain === 'com.microsoft'))
    model.opsetImport = [...(model.opsetImport ?? []), { domain: 'com.microsoft', version: 1 }];
}

/** The converted model of a variant (the fp32 export's weights, inlined). */
export function variantModel(source: string, o: VariantOptions, model = decodeSource(source)): Model {
  if (o.dtype === 'q4' || o.dtype === 'q4f16') quantizeTo4Bits(model, o.accuracyLevel ?? 4);
  if (o.dtype === 'fp16' || o.dtype === 'q4f16') convertToFloat16(model);
  return model;
}

function decodeSource(source: string): Model {
  const model = onnx.ModelProto.decode(readFileSync(join(source, 'onnx', 'model.onnx')));
  inlineExternalData(model, join(source, 'onnx'));
  return model;
}

/** The manifest of a folder derived from `source` (its assay.json, with the variant's facts). */
export function derivedManifest(
  source: string,
  o: VariantOptions,
  fields: Record<string, unknown>,
): Record<string, unknown> {
  const manifest = JSON.parse(readFileSync(join(source, 'assay.json'), 'utf8')) as Record<string, unknown>;
  const q4 = o.dtype === 'q4' || o.dtype === 'q4f16';
  const derived: Record<string, unknown> = {
    ...manifest,
    dtype: o.dtype,
    quantization: q4
      ? {
          op: 'com.microsoft.MatMulNBits',
          bits: 4,
          block_size: BLOCK,
          symmetric: true,
          accuracy_level: o.accuracyLevel ?? 4,
        }
      : null,
    ...fields,
    flavor_version: VARIANT_VERSION,
    derived_from: `${o.shape ?? 'tiny'}-fp32`,
  };
  for (const k of ['model_bytes', 'external_bytes', 'generation_seconds']) delete derived[k];
  return derived;
}

/** Whether `out` holds a variant folder of this version. */
export function variantCurrent(out: string): boolean {
  const manifestPath = join(out, 'assay.json');
  return (
    existsSync(manifestPath) &&
    (JSON.parse(readFileSync(manifestPath, 'utf8')) as { flavor_version?: number }).flavor_version === VARIANT_VERSION
  );
}

/** Writes `file` (external data past 256 MiB, as exporters do) into `dir`. */
export async function writeModelFile(model: Model, dir: string, file: string): Promise<void> {
  const bytes = onnx.ModelProto.encode(model).finish();
  if (bytes.byteLength > 256 * 1024 * 1024) {
    await externalize(model, join(dir, `${file}_data`), `${file}_data`);
    writeFileSync(join(dir, file), onnx.ModelProto.encode(model).finish());
  } else writeFileSync(join(dir, file), bytes);
}

/** A synthetic model in a dtype variant, Hugging Face layout (generated once, from the fp32 twin's weights). */
export async function ensureSynthVariant(o: VariantOptions): Promise<string> {
  const shape = o.shape ?? 'tiny';
  if (o.dtype === 'fp32' && o.accuracyLevel === undefined) return ensureSynthModel({ shape, dtype: 'fp32' });
  const out = join(GENERATED_DIR, derivedName(o));
  if (variantCurrent(out)) return out;
  const source = await ensureSynthModel({ shape, dtype: 'fp32' });
  const tmp = `${out}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(join(tmp, 'onnx'), { recursive: true });
  const file = VARIANT_FILE[o.dtype];
  await writeModelFile(variantModel(source, o), join(tmp, 'onnx'), file);
  for (const f of ['tokenizer.json', 'tokenizer_config.json', 'config.json', 'generation_config.json'])
    copyFileSync(join(source, f), join(tmp, f));
  const manifest = derivedManifest(source, o, {
    position_ids: true,
    model_file: `onnx/${file}`,
    external_data: existsSync(join(tmp, 'onnx', `${file}_data`)) ? `onnx/${file}_data` : null,
    flavor: { dtype: o.dtype, attention: 'plain', layout: 'hf', template: 'tokenizer_config' },
  });
  writeFileSync(join(tmp, 'assay.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return out;
}
