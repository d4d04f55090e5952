// Every export flavor the generator writes, opened with onnxruntime directly (not the engine): the
// I/O contract its exporter leaves (names, dtypes), exact KV reuse within the flavor (a prefix pass
// then a suffix pass over the returned KV equals one whole pass), and agreement of the last-position
// logits with the fp32 twin (same weights). Each tolerance comes from the fp32 reference with its
// reason, and holds on AVX2, AVX-512-VNNI and AMX CPUs; see models/README.md "Flavor tolerances".
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { int8SessionConfig } from '../../src/engine/model/cpu.js';
import { ensureFlavor, type FlavorOptions } from '../../tools/flavors.js';
import { inScope } from '../numerics/scope.js';

interface Case {
  flavor: FlavorOptions;
  /** The ONNX file the flavor's exporter writes, relative to the folder. */
  file: string;
  /** max |Δlogit| prefix+suffix vs whole pass. */
  kv: number;
  /** max |Δlogit| against tiny-fp32 (plain attention, fp32). */
  twin: number;
  /**
   * max |Δlogit| against plain-attention tiny-q4 with accuracy_level 0 (the same 4-bit weights, fp32
   * arithmetic): a 4-bit flavor's own bugs are not hidden by 4-bit noise.
   */
  q4twin?: number;
  /**
   * For flavors that quantize activations to int8 at run time (accuracy_level 4): max |Δlogit|
   * against tiny-q4 (accuracy_level 4), in units of that run-time quantization's own effect on this
   * CPU, |tiny-q4 − tiny-q4 accuracy_level 0| (0.13 on AVX2 and AVX-512 alike).
   */
  q4noise?: number;
  /** Runs 4-bit kernels onnxruntime picks from CPUID: also in the emulated AVX2 run (../numerics/scope.ts). */
  kernels?: boolean;
}

const CASES: Case[] = [
  { flavor: { dtype: 'fp32' }, file: 'onnx/model.onnx', kv: 1e-4, twin: 0 },
  { flavor: { dtype: 'fp16' }, file: 'onnx/model_fp16.onnx', kv: 5e-3, twin: 2e-2 },
  { flavor: { dtype: 'q4' }, file: 'onnx/model_q4.onnx', kv: 5e-3, twin: 3.5, kernels: true },
  // The same int8-activation kernel on fp16-rounded activations and scales: each fp16 rounding can
  // move an activation across an int8 rounding boundary, so it differs from tiny-q4 by about as much
  // as int8 activations themselves move tiny-q4 (0.16 against 0.13): bound twice that.
  { flavor: { dtype: 'q4f16' }, file: 'onnx/model_q4f16.onnx', kv: 5e-3, twin: 3.5, q4noise: 2 },
  { flavor: { dtype: 'fp32', attention: 'gqa' }, file: 'onnx/model.onnx', kv: 1e-4, twin: 1e-4 },
  { flavor: { dtype: 'fp16', attention: 'gqa', layout: 'genai' }, file: 'model.onnx', kv: 5e-3, twin: 2e-2 },
  // accuracy_level 4 quantizes activations to int8 per block of 32 at run time, so a 1e-7 change of
  // an input (fused GroupQueryAttention instead of plain ops, another CPU's summation order) can
  // move one activation a whole int8 step: 0.11 on AVX2 against 3e-6 on AVX-512. Compared like with
  // like, with fp32 arithmetic (accuracy_level 0), the GQA graph must agree to fp32 rounding; with
  // int8 activations, within twice what int8 activations move tiny-q4 by.
  {
    flavor: { dtype: 'q4', attention: 'gqa', layout: 'genai' },
    file: 'model.onnx',
    kv: 5e-3,
    twin: 3.5,
    q4noise: 2,
    kernels: true,
  },
  {
    flavor: { dtype: 'q4', attention: 'gqa', layout: 'genai', accuracyLevel: 0 },
    file: 'model.onnx',
    kv: 1e-4,
    twin: 3.5,
    q4twin: 1e-4,
    kernels: true,
  },
  { flavor: { dtype: 'fp32', layout: 'optimum' }, file: 'model.onnx', kv: 1e-4, twin: 0 },
];

const PROMPT = [151644, 872, 198, 3872, 220, 17, 10, 17, 6144, 311, 220, 19, 30, 151645, 198, 151644, 77091, 198];
const SPLIT = 11;
const L = 2;
const KV_HEADS = 2;
const HEAD = 16;

const halfView = new Float32Array(1);
const halfBits = new Uint32Array(halfView.buffer);
function fromHalf(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return (sign ? -1 : 1) * mant * 2 ** -24;
  halfBits[0] = sign | (exp === 0x1f ? 0x7f800000 | (mant << 13) : ((exp - 15 + 127) << 23) | (mant << 13));
  return halfView[0]!;
}

function floats(t: ort.Tensor): Float32Array {
  if (t.type === 'float32') return t.data as Float32Array;
  return Float32Array.from(t.data as Uint16Array, fromHalf);
}

const i64 = (a: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(a, BigInt), [1, a.length]);
type Outputs = ort.InferenceSession.OnnxValueMapType;

async function pass(
  s: ort.InferenceSession,
  ids: number[],
  start: number,
  kvType: 'float32' | 'float16',
  past?: Outputs,
): Promise<Outputs> {
  const total = start + ids.length;
  const feeds: Record<string, ort.Tensor> = { input_ids: i64(ids), attention_mask: i64(Array(total).fill(1)) };
  if (s.inputNames.includes('position_ids')) feeds.position_ids = i64(ids.map((_, j) => start + j));
  for (let i = 0; i < L; i++) {
    for (const k of ['key', 'value']) {
      feeds[`past_key_values.${i}.${k}`] =
        (past?.[`present.${i}.${k}`] as ort.Tensor | undefined) ??
        new ort.Tensor(kvType, kvType === 'float32' ? new Float32Array(0) : new Uint16Array(0), [1, KV_HEADS, 0, HEAD]);
    }
  }
  return s.run(feeds);
}

function lastLogits(out: Outputs): Float32Array {
  const t = out.logits as ort.Tensor;
  const [, S, V] = t.dims as readonly [number, number, number];
  return floats(t).subarray((S - 1) * V, S * V);
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const sessions: ort.InferenceSession[] = [];
const dirs = new Map<Case, string>();
let twin: Float32Array;
let q4: Float32Array;
let q4exact: Float32Array;
/** What run-time int8 activations (accuracy_level 4) move tiny-q4's logits by on this CPU. */
let q4noise: number;

beforeAll(async () => {
  for (const c of CASES) dirs.set(c, await ensureFlavor(c.flavor));
  const s = await ort.InferenceSession.create(join(dirs.get(CASES[0]!)!, CASES[0]!.file), {
    intraOpNumThreads: 1,
    extra: await int8SessionConfig(),
  });
  sessions.push(s);
  twin = lastLogits(await pass(s, PROMPT, 0, 'float32'));
  const s4 = await ort.InferenceSession.create(join(dirs.get(CASES[2]!)!, CASES[2]!.file), { intraOpNumThreads: 1 });
  const s40 = await ort.InferenceSession.create(
    join(await ensureFlavor({ dtype: 'q4', accuracyLevel: 0 }), 'onnx/model_q4.onnx'),
    { intraOpNumThreads: 1 },
  );
  sessions.push(s4, s40);
  q4 = lastLogits(await pass(s4, PROMPT, 0, 'float32'));
  q4exact = lastLogits(await pass(s40, PROMPT, 0, 'float32'));
  q4noise = maxAbsDiff(q4, q4exact);
}, 120_000);

afterAll(async () => {
  for (const s of sessions) await s.release();
});

describe.each(inScope(CASES).map((c) => ({ name: JSON.stringify(c.flavor), c })))('$name', ({ c }) => {
  const half = c.flavor.dtype === 'fp16' || c.flavor.dtype === 'q4f16';
  const gqa = c.flavor.attention === 'gqa';
  let s: ort.InferenceSession;

  beforeAll(async () => {
    s = await ort.InferenceSession.create(join(dirs.get(c)!, c.file), {
      intraOpNumThreads: 1,
      extra: await int8SessionConfig(),
    });
    sessions.push(s);
  });

  it('keeps its exporter I/O contract and records the flavor in assay.json', async () => {
    const kvNames = Array.from({ length: L }, (_, i) => [
      `past_key_values.${i}.key`,
      `past_key_values.${i}.value`,
    ]).flat();
    expect(s.inputNames).toEqual(['input_ids', 'attention_mask', ...(gqa ? [] : ['position_ids']), ...kvNames]);
    expect(s.outputNames).toEqual(['logits', ...kvNames.map((n) => n.replace('past_key_values', 'present'))]);
    const out = await pass(s, PROMPT.slice(0, 3), 0, half ? 'float16' : 'float32');
    expect((out.logits as ort.Tensor).type).toBe(half ? 'float16' : 'float32');
    expect((out['present.0.key'] as ort.Tensor).type).toBe(half ? 'float16' : 'float32');
    expect((out['present.1.value'] as ort.Tensor).dims).toEqual([1, KV_HEADS, 3, HEAD]);
    const manifest = JSON.parse(readFileSync(join(dirs.get(c)!, 'assay.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.synthetic).toBe(true);
    if (c.file === 'onnx/model.onnx' && !gqa) return; // tiny-fp32 itself: the generator's own manifest
    expect(manifest.dtype).toBe(c.flavor.dtype);
    expect(manifest.model_file).toBe(c.file);
    expect(manifest.flavor).toMatchObject({
      dtype: c.flavor.dtype,
      attention: c.flavor.attention ?? 'plain',
      layout: c.flavor.layout ?? 'hf',
    });
  });

  it('prefix pass + suffix pass over the returned KV equals the whole pass', async () => {
    const kvType = half ? 'float16' : 'float32';
    const whole = lastLogits(await pass(s, PROMPT, 0, kvType));
    const prefix = await pass(s, PROMPT.slice(0, SPLIT), 0, kvType);
    const split = lastLogits(await pass(s, PROMPT.slice(SPLIT), SPLIT, kvType, prefix));
    const d = maxAbsDiff(split, whole);
    if (process.env.ASSAY_PRINT_TOLERANCE)
      process.stdout.write(`${JSON.stringify(c.flavor)} kv max|Δ| ${d.toExponential(2)}\n`);
    expect(d).toBeLessThanOrEqual(c.kv);
  });

  it('agrees with the fp32 twin at the last position', async () => {
    const got = lastLogits(await pass(s, PROMPT, 0, half ? 'float16' : 'float32'));
    const d = maxAbsDiff(got, twin);
    if (process.env.ASSAY_PRINT_TOLERANCE)
      process.stdout.write(`${JSON.stringify(c.flavor)} twin max|Δ| ${d.toExponential(2)}\n`);
    expect(d).toBeLessThanOrEqual(c.twin);
    if (c.q4noise !== undefined) {
      const dn = maxAbsDiff(got, q4);
      if (process.env.ASSAY_PRINT_TOLERANCE)
        process.stdout.write(
          `${JSON.stringify(c.flavor)} q4 max|Δ| ${dn.toExponential(2)}, int8-activation effect ${q4noise.toExponential(2)}\n`,
        );
      expect(dn).toBeLessThanOrEqual(c.q4noise * q4noise);
    }
    if (c.q4twin !== undefined) {
      const d4 = maxAbsDiff(got, q4exact);
      if (process.env.ASSAY_PRINT_TOLERANCE)
        process.stdout.write(`${JSON.stringify(c.flavor)} q4 twin max|Δ| ${d4.toExponential(2)}\n`);
      expect(d4).toBeLessThanOrEqual(c.q4twin);
    }
  });
});
