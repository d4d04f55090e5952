// 4-bit weights through the int8 kernels: at load, each MatMulNBits (bits 4, what MatMul4BitsQuantizer
// and the onnx-community q4 exports write) becomes the per-token int8 product (per-token-int8.ts).
//
// Why: onnxruntime's MatMulNBits CPU kernel at accuracy_level 4 (MLAS SQNBitGemm, CompInt8) works in
// tiles of 2 rows × 4 columns and, for every 32-weight block, unpacks the nibbles, takes a 32-term
// int8 dot product, converts it to float and multiplies by the block's two scales. That per-block
// float epilogue and the small tile keep it at a fraction of the int8 GEMM's speed, which packs
// panels and sums in int32 over the whole K (0.24 against 1.4–2.6 TFLOP/s on a VNNI Xeon at 256
// tokens; on AVX2 about 0.5× the int8 GEMM's speed). No session setting changes that path (the
// LUT GEMM option is 2-bit only), so the weights go to the int8 kernels instead:
//
//   w[k, n]  = (q[k, n] − zero_point) · scale[block(k), n]            the 4-bit weight, exactly
//   s[n]     = max_k |w[k, n]| / 127                                  one scale per output channel
//   W8[k, n] = round(w[k, n] / s[n]) ∈ [−127, 127]                    int8
//
// The products then run as a dynamic int8 export's do after the per-token rewrite: the same kernels,
// and the same exact-int8 setting where the CPU's fast u8 × s8 kernel saturates (AVX2 without VNNI,
// cpu.ts), so the integer sums are exact on every x86 CPU. The rounding adds at most s[n] / 2 =
// max|w| / 254 per weight, against the 4-bit grid's own step of up to max|w| / 7: measured, the
// converted model is as close to the fp32 twin as the 4-bit export itself (docs/peers.md). (A first
// form used 7 bits, |W8| ≤ 64, which keeps the fast kernel exact on AVX2 without the setting; it
// doubled that rounding and left the converted 0.5B shape measurably farther from fp32.)
//
// Memory: an int8 weight takes 1 byte where 4 bits took 0.5 + 4 / 32 (scales), so the weights grow
// about 1.6× (the Qwen2.5-0.5B shape: 310 → 495 MB of matrix weights, +185 MB).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';
import { topologicalOrder } from './graph-order.js';
import { aiOnnxOpset } from './opset.js';
import { PerTokenInt8 } from './per-token-int8.js';

/** Largest |int8| the converted weights use (see the header). */
export const Q4_INT8_LEVELS = 127;

/** What the conversion did, for the load log and the graph facts. */
export interface Q4Conversion {
  /** MatMulNBits nodes turned into int8 products. */
  nodes: number;
  /** Bytes of the 4-bit weights, scales and zero points replaced. */
  q4Bytes: number;
  /** Bytes of the int8 weights and their scales. */
  int8Bytes: number;
}

type Tensor = OnnxTypes.ITensorProto;

/** Whether the graph has a MatMulNBits node this conversion handles. */
export function hasQ4MatMuls(model: OnnxTypes.IModelProto): boolean {
  return (model.graph?.node ?? []).some((n) => n.opType === 'MatMulNBits' && attr(n, 'bits') === 4);
}

/**
 * Reads every external-data initializer's bytes into the model (from `dir`, the model file's
 * folder): the converted graph is written with all its weights, so it no longer reads the export's.
 */
export function inlineExternalData(model: OnnxTypes.IModelProto, dir: string): void {
  const read = externalDataReader(dir);
  for (const t of model.graph?.initializer ?? []) {
    if (!t.externalData?.length) continue;
    t.rawData = read(t);
    t.externalData = [];
    t.dataLocation = 0;
  }
}

/** Reads an external-data tensor's bytes from `dir` (each file read once per reader). */
function externalDataReader(dir: string): (t: Tensor) => Uint8Array {
  const files = new Map<string, Buffer>();
  return (t) => {
    const at = (key: string) => t.externalData!.find((e) => e.key === key)?.value;
    const location = at('location')!;
    if (!files.has(location)) files.set(location, readFileSync(join(dir, location)));
    const file = files.get(location)!;
    const offset = Number(at('offset') ?? 0);
    const length = Number(at('length') ?? file.byteLength - offset);
    return file.subarray(offset, offset + length);
  };
}

/**
 * Rewrites, in place, every 4-bit MatMulNBits whose weights are initializers (and which has no
 * g_idx) into the per-token int8 product. External data must be inlined first (inlineExternalData).
 */
export function convertQ4ToInt8(model: OnnxTypes.IModelProto, levels = Q4_INT8_LEVELS): Q4Conversion {
  const graph = model.graph!;
  const inits = new Map((graph.initializer ?? []).map((t) => [t.name!, t]));
  const added: Tensor[] = [];
  const builder = new PerTokenInt8(aiOnnxOpset(model), 'assay/q4_int8');
  const result: Q4Conversion = { nodes: 0, q4Bytes: 0, int8Bytes: 0 };
  const replaced = new Map<OnnxTypes.INodeProto, OnnxTypes.INodeProto[]>();
  const casts = new Set<string>();
  for (const n of graph.node ?? []) {
    if (n.opType !== 'MatMulNBits' || attr(n, 'bits') !== 4) continue;
    const [a, bName, sName, zName = '', gIdx = '', bias = ''] = n.input ?? [];
    const b = inits.get(bName!);
    const s = inits.get(sName!);
    const z = zName ? inits.get(zName) : undefined;
    if (
      !a ||
      !b ||
      !s ||
      gIdx ||
      (zName && (!z || z.dataType !== DataType.UINT8)) ||
      (s.dataType !== DataType.FLOAT && s.dataType !== DataType.FLOAT16)
    )
      continue;
    const K = attr(n, 'K')!;
    const N = attr(n, 'N')!;
    const block = attr(n, 'block_size')!;
    const half = s.dataType === DataType.FLOAT16;
    const prefix = `assay/q4_int8/${n.name || n.output![0]}`;
    const { weight, scales } = requantize(bytes(b), floats(s), z ? bytes(z) : undefined, K, N, block, levels);
    added.push(
      { name: `${prefix}/weight`, dataType: DataType.INT8, dims: [K, N], rawData: new Uint8Array(weight.buffer) },
      { name: `${prefix}/weight_scale`, dataType: DataType.FLOAT, dims: [N], rawData: new Uint8Array(scales.buffer) },
    );
    result.q4Bytes += bytes(b).byteLength + bytes(s).byteLength + (z ? bytes(z).byteLength : 0);
    result.int8Bytes += weight.byteLength + scales.byteLength;
    // float16 activations (q4f16 exports): the product runs in float32 between two Casts.
    const nodes: OnnxTypes.INodeProto[] = [];
    let input = a;
    if (half) {
      input = `${a}/assay_float32`;
      if (!casts.has(input)) nodes.push(cast(a, input, DataType.FLOAT));
      casts.add(input);
    }
    const out = n.output![0]!;
    const product = half || bias ? `${prefix}/product` : out;
    nodes.push(
      ...builder.matMul({
        input,
        weight: `${prefix}/weight`,
        depth: K,
        weightScale: `${prefix}/weight_scale`,
        output: product,
        prefix,
      }),
    );
    let last = product;
    if (half) {
      last = bias ? `${prefix}/product_half` : out;
      nodes.push(cast(product, last, DataType.FLOAT16));
    }
    if (bias) nodes.push({ opType: 'Add', input: [last, bias], output: [out], name: `${prefix}/bias` });
    replaced.set(n, nodes);
    result.nodes++;
  }
  if (result.nodes === 0) return result;
  // Each activation's row quantization, read by its products.
  const kept = (graph.node ?? []).flatMap((n) => replaced.get(n) ?? [n]);
  const quantization = builder.finish({ nodes: kept, outputs: (graph.output ?? []).map((o) => o.name!) });
  graph.node = topologicalOrder([...kept, ...quantization.nodes]);
  const used = new Set(graph.node.flatMap((n) => n.input ?? []));
  graph.initializer = [
    ...(graph.initializer ?? []).filter((t) => used.has(t.name!)),
    ...quantization.initializers,
    ...added,
  ];
  return result;
}

/**
 * The 4-bit blocks (B [N, blocks, block / 2], low nibble first; scales [N · blocks]; zero points
 * two per byte, default 8) as int8 [K, N] with one scale per column. Works a tile of columns at a
 * time so both the reads and the writes stay sequential.
 */
export function requantize(
  b: Uint8Array,
  scale: Float32Array,
  zeroPoints: Uint8Array | undefined,
  K: number,
  N: number,
  block: number,
  levels = Q4_INT8_LEVELS,
): { weight: Int8Array; scales: Float32Array } {
  const blocks = Math.ceil(K / block);
  const blob = block / 2;
  const zpStride = Math.ceil(blocks / 2);
  const weight = new Int8Array(K * N);
  const scales = new Float32Array(N);
  const TILE = 64;
  const column = new Float32Array(TILE * K);
  for (let n0 = 0; n0 < N; n0 += TILE) {
    const width = Math.min(TILE, N - n0);
    for (let j = 0; j < width; j++) {
      const n = n0 + j;
      let max = 0;
      for (let blk = 0; blk < blocks; blk++) {
        const s = scale[n * blocks + blk]!;
        const zp = zeroPoints ? (zeroPoints[n * zpStride + (blk >> 1)]! >> ((blk & 1) * 4)) & 15 : 8;
        const base = (n * blocks + blk) * blob;
        for (let i = 0; i < block; i++) {
          const k = blk * block + i;
          if (k >= K) break;
          const byte = b[base + (i >> 1)]!;
          const w = (((i & 1 ? byte >> 4 : byte) & 15) - zp) * s;
          column[j * K + k] = w;
          max = Math.max(max, Math.abs(w));
        }
      }
      scales[n] = max > 0 ? max / levels : 1;
    }
    for (let k = 0; k < K; k++) {
      const row = k * N + n0;
      for (let j = 0; j < width; j++) weight[row + j] = Math.round(column[j * K + k]! / scales[n0 + j]!);
    }
  }
  return { weight, scales };
}

function attr(n: OnnxTypes.INodeProto, name: string): number | undefined {
  const a = (n.attribute ?? []).find((x) => x.name === name);
  return a ? Number(a.i) : undefined;
}

function cast(input: string, output: string, to: number): OnnxTypes.INodeProto {
  return {
    opType: 'Cast',
    input: [input],
    output: [output],
    name: output,
    attribute: [{ name: 'to', type: AttributeType.INT, i: to }],
  };
}

function bytes(t: Tensor): Uint8Array {
  if (t.rawData && t.rawData.byteLength > 0) return t.rawData;
  // Small tensors may be stored as int32Data (uint8 and float16 widen to int32 there).
  const values = t.int32Data ?? [];
  return t.dataType === DataType.FLOAT16 ? new Uint8Array(Uint16Array.from(values).buffer) : Uint8Array.from(values);
}

/** A float or float16 initializer's values as float32. */
function floats(t: Tensor): Float32Array {
  if (t.dataType === DataType.FLOAT) {
    if (t.rawData && t.rawData.byteLength > 0) return new Float32Array(new Uint8Array(t.rawData).buffer);
    return Float32Array.from(t.floatData ?? []);
  }
  const raw = bytes(t);
  const halves = new Uint16Array(new Uint8Array(raw).buffer, 0, raw.byteLength / 2);
  return Float32Array.from(halves, fromHalf);
}

function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}
