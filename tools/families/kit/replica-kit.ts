// What the synthetic family replicas share (development only, never packed): seeded random weights
// in PyTorch's names and orientation, the small graph pieces of an encoder (Linear, LayerNorm,
// GELU, masked multi-head attention) in fp32, fp16 or int8 (dynamic quantization, through the
// decoders' int8Product), the safetensors file the numpy references read, and the version-stamped
// cache of a replica folder. Weights are looked up by name when a graph or file needs them, so a
// replica at a real size can generate each one then instead of holding them all. Used by
// laya-replica.ts and nli-replica.ts.
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  DataType,
  type DynamicQuantized,
  type GraphBuilder,
  int8Product,
  type QuantizedNames,
  seededRandom,
  toHalf,
} from '../../../src/internal.js';
import { writeAll } from './spool-graph.js';

export type Tensor = { shape: number[]; data: Float32Array };

/**
 * Weights by name: a Map that holds them (the tiny replicas), or a source that generates each one
 * when asked and keeps none (the Laya replica at its real sizes).
 */
export type WeightSource = Pick<ReadonlyMap<string, Tensor>, 'get'>;

/** The value added to a masked attention score: exp underflows to exactly 0 (scores stay far below 10^4). */
export const MASKED = -1e4;

/** FNV-1a of the name mixed with the seed: every tensor has its own stream. */
function stream(seed: number, name: string): () => number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return seededRandom(h >>> 0);
}

/** Triangular noise (sum of two uniforms) of the given mean and standard deviation. */
export function random(seed: number, name: string, shape: number[], std: number, mean = 0): Tensor {
  const next = stream(seed, name);
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) data[i] = mean + (next() + next() - 1) * std * Math.sqrt(6);
  return { shape, data };
}

/** A weight's shape (PyTorch's orientation, Linear [out, in]) and its random distribution. */
export interface Spec {
  shape: number[];
  std: number;
  mean: number;
}

/** The weights of `specs`, each generated when a graph or file asks for it (nothing keeps them). */
export function generated(specs: ReadonlyMap<string, Spec>, seed: number): WeightSource {
  return {
    get(name) {
      const spec = specs.get(name);
      return spec && random(seed, name, spec.shape, spec.std, spec.mean);
    },
  };
}

/** How many numbers `specs` hold. */
export function parameterCount(specs: ReadonlyMap<string, Spec>): number {
  let n = 0;
  for (const { shape } of specs.values()) n += shape.reduce((a, b) => a * b, 1);
  return n;
}

/** What the graph functions share: the builder, the weights and the compute dtype. */
export interface Net {
  g: GraphBuilder;
  w: WeightSource;
  half: boolean;
  /** LayerNorm epsilon. */
  eps: number;
  /** Initializers already added (a weight is added once per graph). */
  added: Set<string>;
  /** Linear layers as onnxruntime's quantize_dynamic writes them (int8 weights, uint8 activations). */
  quantized?: boolean;
  /** Quantized: the DynamicQuantizeLinear outputs of each activation (one per input, as quantize_dynamic shares them). */
  dql?: DynamicQuantized;
  /** Quantized: how the DynamicQuantizeLinear outputs are named (int8Product; default after the activation). */
  quantizedNames?: QuantizedNames;
}

export const F = DataType.FLOAT;
export const F16 = DataType.FLOAT16;
export const I64 = DataType.INT64;

function halfBytes(data: Float32Array): Uint8Array {
  const u16 = Uint16Array.from(data, (x) => toHalf(x));
  return new Uint8Array(u16.buffer);
}

/** A Linear [out, in] as the exporter stores it, [in, out]. */
export function transposed({ shape, data }: Tensor): Tensor {
  const [out = 0, inp = 0] = shape;
  const d = new Float32Array(data.length);
  for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) d[i * out + o] = data[o * inp + i]!;
  return { shape: [inp, out], data: d };
}

function weight(n: Pick<Net, 'w'>, name: string): Tensor {
  const t = n.w.get(name);
  if (!t) throw new Error(`no weight ${name}`);
  return t;
}

/** An initializer in the net's dtype; `transpose` stores a Linear [out, in] as the exporter's [in, out]. */
export function param(n: Net, name: string, transpose = false): string {
  if (n.added.has(name)) return name;
  const t = weight(n, name);
  const { shape, data } = transpose ? transposed(t) : t;
  n.g.initializer(name, n.half ? F16 : F, shape, n.half ? halfBytes(data) : data);
  n.added.add(name);
  return name;
}

/** A scalar in the net's dtype. */
export function scalar(n: Net, v: number): string {
  if (!n.half) return n.g.scalarF32(v);
  return n.g.initializer(n.g.fresh('const_f16'), F16, [], halfBytes(Float32Array.of(v)));
}

export function cast(n: Net, x: string, to: DataType): string {
  return n.g.op('Cast', [x], { to: { i: to } });
}

/**
 * x · Wᵀ for a constant [out, in] weight. Quantized: the int8 weight (symmetric, per tensor) times
 * the activation quantized at run time, DynamicQuantizeLinear → MatMulInteger → Cast → Mul by the
 * two scales, as quantize_dynamic writes it (int8Product, which the synthetic decoders use too;
 * onnxruntime fuses it into DynamicQuantizeMatMul).
 */
function matmul(n: Net, x: string, name: string): string {
  const { g } = n;
  if (!n.quantized) return g.op('MatMul', [x, param(n, name, true)]);
  const { shape, data } = transposed(weight(n, name));
  n.dql ??= new Map();
  return int8Product(g, x, name, data, [shape[0]!, shape[1]!], n.dql, n.quantizedNames);
}

export function linear(n: Net, x: string, name: string, bias?: string): string {
  const y = matmul(n, x, name);
  return bias ? n.g.op('Add', [y, param(n, bias)]) : y;
}

export function layerNorm(n: Net, x: string, weight: string, bias?: string): string {
  const inputs = [x, param(n, weight)];
  if (bias) inputs.push(param(n, bias));
  return n.g.op('LayerNormalization', inputs, { axis: { i: -1 }, epsilon: { f: n.eps } });
}

/** GELU, exact: x · (1 + erf(x / √2)) / 2 (PyTorch's nn.GELU and the encoders' "gelu"). */
export function gelu(n: Net, x: string): string {
  const { g } = n;
  const erf = g.op('Erf', [g.op('Mul', [x, scalar(n, Math.SQRT1_2)])]);
  return g.op('Mul', [g.op('Mul', [x, scalar(n, 0.5)]), g.op('Add', [erf, scalar(n, 1)])]);
}

/** [b, s, heads·d] → [b, heads, s, d]. */
export function splitHeads(n: Net, x: string, heads: number, d: number): string {
  const r = n.g.op('Reshape', [x, n.g.constI64([0, 0, heads, d])]);
  return n.g.op('Transpose', [r], { perm: { ints: [0, 2, 1, 3] } });
}

/** softmax(q·kᵀ/√d + bias)·v over [b, heads, s, d], back to [b, s, heads·d]. */
export function attend(n: Net, q: string, k: string, v: string, bias: string, heads: number, d: number): string {
  const { g } = n;
  const kt = g.op('Transpose', [k], { perm: { ints: [0, 1, 3, 2] } });
  const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [q, kt]), scalar(n, 1 / Math.sqrt(d))]), bias]);
  const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: { i: -1 } }), v]);
  const t = g.op('Transpose', [ctx], { perm: { ints: [0, 2, 1, 3] } });
  return g.op('Reshape', [t, g.constI64([0, 0, heads * d])]);
}

/** The additive key mask [b, 1, 1|s, s]: 0 where `allowed`, −1e4 elsewhere. */
export function maskBias(n: Net, allowed: string): string {
  return n.g.op('Where', [allowed, scalar(n, 0), scalar(n, MASKED)]);
}

/** Key validity [b, 1, 1, s] from attention_mask. */
export function keysValid(n: Net, mask: string): string {
  return n.g.op('Unsqueeze', [cast(n, mask, DataType.BOOL), n.g.constI64([1, 2])]);
}

/**
 * safetensors: 8-byte little-endian header length, the JSON header (space-padded to 8), the data.
 * `layout` gives the tensors' names and shapes in file order (a Map of the tensors themselves
 * will do); each tensor's data is asked of `w` when its turn comes and written at once.
 */
export function writeSafetensors(
  file: string,
  layout: ReadonlyMap<string, { shape: readonly number[] }>,
  w: WeightSource,
  metadata: Record<string, string>,
): void {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const [name, { shape }] of layout) {
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const start = Buffer.alloc(8 + json.length);
  start.writeBigUInt64LE(BigInt(json.length), 0);
  start.write(json, 8, 'latin1');
  const fd = openSync(file, 'w');
  try {
    writeAll(fd, start);
    for (const name of layout.keys()) {
      const { data } = weight({ w }, name);
      writeAll(fd, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    }
  } finally {
    closeSync(fd);
  }
}

export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** A folder's assay.json when it names this generator `version` and `seed`, else null. */
export function readStamp(dir: string, version: number, seed: number): Record<string, unknown> | null {
  try {
    const m = JSON.parse(readFileSync(`${dir}/assay.json`, 'utf8')) as Record<string, unknown>;
    return m.generator_version === version && m.seed === seed ? m : null;
  } catch {
    return null;
  }
}

/** A scratch folder beside `target` (same file system: renamed into place). */
export function scratchBeside(target: string): string {
  return `${target}.tmp-${process.pid}-${Date.now().toString(36)}`;
}

/**
 * A replica's folder, written once by `write` (whose last file is assay.json with the generator's
 * version and seed) and reused while that version and seed are current and `accepts` its
 * assay.json (by default any). Written to a temporary folder and renamed, so a reader never sees
 * half a folder; a concurrent writer's folder is kept when it would be reused.
 */
export function ensureFolder(
  dir: string,
  version: number,
  seed: number,
  write: (out: string) => void,
  accepts: (stamp: Record<string, unknown>) => boolean = () => true,
): string {
  const target = resolve(dir);
  const current = (): boolean => {
    const stamp = readStamp(target, version, seed);
    return stamp !== null && accepts(stamp);
  };
  if (current()) return target;
  const tmp = scratchBeside(target);
  try {
    write(tmp);
    rmSync(target, { recursive: true, force: true });
    try {
      renameSync(tmp, target);
    } catch (e) {
      // Another writer finished first: use theirs.
      if (!current()) throw e;
    }
    return target;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * A replica folder at a named shape that holds only the flavors asked for, listed in its
 * assay.json (with the shape): what ensureFlavored needs to write one or add flavors to it.
 */
export interface FlavoredReplica<F extends string> {
  version: number;
  seed: number;
  shape: string;
  /** Every flavor, in the order assay.json lists them. */
  all: readonly F[];
  /** assay.json for a folder holding `flavors` (its generator_version, seed, shape and flavors among the fields). */
  stamp(flavors: readonly F[]): Record<string, unknown>;
  /** Writes `flavors` into `out` (which exists). */
  writeFlavors(out: string, flavors: readonly F[]): void;
  /** Writes the files every folder of the shape holds besides its flavors and assay.json. */
  writeCommon(out: string): void;
}

/** assay.json for `flavors` (written through a rename: never half there). */
function writeStamp<F extends string>(r: FlavoredReplica<F>, dir: string, flavors: readonly F[]): void {
  const file = join(dir, 'assay.json');
  const tmp = `${file}.tmp-${process.pid}`;
  writeJson(tmp, r.stamp(r.all.filter((f) => flavors.includes(f))));
  renameSync(tmp, file);
}

/** Writes the whole folder into `out` (created): the common files, `flavors`, and assay.json last. */
export function writeFlavored<F extends string>(r: FlavoredReplica<F>, out: string, flavors: readonly F[]): void {
  mkdirSync(out, { recursive: true });
  r.writeFlavors(out, flavors);
  r.writeCommon(out);
  writeStamp(r, out, flavors);
}

/** The flavors an assay.json of the replica's shape lists (readStamp: its version and seed), or null. */
function flavorsOf<F extends string>(r: FlavoredReplica<F>, stamp: Record<string, unknown> | null): F[] | null {
  return stamp?.shape === r.shape && Array.isArray(stamp.flavors) ? (stamp.flavors as F[]) : null;
}

/** Moves every file under `from` to the same place under `to` (same file system: renames). */
function moveInto(from: string, to: string): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory()) {
      mkdirSync(dst, { recursive: true });
      moveInto(src, dst);
    } else renameSync(src, dst);
  }
}

/**
 * The replica's folder `dir` with (at least) `flavors`, written once and reused while current
 * (this version, seed and shape). A current folder that lacks some of `flavors` gets just those
 * added; a folder of another version, seed or shape is rewritten whole.
 */
export function ensureFlavored<F extends string>(dir: string, r: FlavoredReplica<F>, flavors: readonly F[]): string {
  const target = resolve(dir);
  const written = (): F[] | null => flavorsOf(r, readStamp(target, r.version, r.seed));
  const have = written();
  const missing = flavors.filter((f) => !have?.includes(f));
  if (have && missing.length > 0) {
    // Only the missing flavors, written beside the folder and moved in; assay.json last.
    const tmp = scratchBeside(target);
    try {
      mkdirSync(tmp, { recursive: true });
      r.writeFlavors(tmp, missing);
      moveInto(tmp, target);
      writeStamp(r, target, [...(written() ?? have), ...missing]);
      return target;
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  // Current with every flavor asked for, or (re)written whole; a concurrent writer's folder is
  // kept when it holds what was asked for.
  return ensureFolder(
    target,
    r.version,
    r.seed,
    (out) => writeFlavored(r, out, flavors),
    (stamp) => {
      const held = flavorsOf(r, stamp);
      return held !== null && flavors.every((f) => held.includes(f));
    },
  );
}
