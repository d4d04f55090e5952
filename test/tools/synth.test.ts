// The synthetic models are real decoder exports as far as onnxruntime and transformers.js can
// tell: layout, config, I/O contract, exact KV reuse, padding, and the architecture itself
// (checked against an independent float64 reference forward pass written from the weights).
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { int8SessionConfig } from '../../src/engine/model/cpu.js';
import { ensureSynthModel, GENERATED_DIR } from '../../src/model-files/synth/ensure.js';
import { loadShapes, synthesize, type HfConfig, type ShapeManifest } from '../../src/model-files/synth/index.js';

const TOKENIZER_DIR = fileURLToPath(new URL('../../models/tokenizers/qwen3/', import.meta.url));

type Variant = { name: string; dtype: 'fp32' | 'int8'; positionIds: boolean; file: string };
const VARIANTS: Variant[] = [
  { name: 'tiny-fp32', dtype: 'fp32', positionIds: true, file: 'model.onnx' },
  { name: 'tiny-int8', dtype: 'int8', positionIds: true, file: 'model_quantized.onnx' },
  { name: 'tiny-fp32-nopos', dtype: 'fp32', positionIds: false, file: 'model.onnx' },
];

// A chat-templated prompt (Qwen3 template, thinking disabled) as token ids.
const PROMPT = [
  151644, 872, 198, 3872, 220, 17, 10, 17, 6144, 311, 220, 19, 30, 21806, 9834, 476, 902, 13, 151645, 198, 151644,
  77091, 198, 151667, 271, 151668, 271,
];

interface Session {
  s: ort.InferenceSession;
  cfg: HfConfig;
  hasPos: boolean;
}

const sessions = new Map<string, Session>();
const dirs = new Map<string, string>();

async function open(dir: string, file: string): Promise<Session> {
  const key = join(dir, file);
  let sess = sessions.get(key);
  if (!sess) {
    const s = await ort.InferenceSession.create(join(dir, 'onnx', file), {
      intraOpNumThreads: 1,
      extra: await int8SessionConfig(),
    });
    const cfg = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as HfConfig;
    sess = { s, cfg, hasPos: s.inputNames.includes('position_ids') };
    sessions.set(key, sess);
  }
  return sess;
}

const i64 = (a: number[], dims: number[]): ort.Tensor => new ort.Tensor('int64', BigInt64Array.from(a, BigInt), dims);

type Outputs = ort.InferenceSession.OnnxValueMapType;

/** One forward pass of `batch` rows; positions default to the HF rule cumsum(mask) - 1 (1 at padding). */
async function run(
  sess: Session,
  ids: number[],
  mask: number[],
  opts: { batch?: number; past?: Outputs; positions?: number[] } = {},
): Promise<Outputs> {
  const B = opts.batch ?? 1;
  const S = ids.length / B;
  const T = mask.length / B;
  const { num_hidden_layers: L, num_key_value_heads: kv, head_dim: D } = sess.cfg;
  const feeds: Record<string, ort.Tensor> = { input_ids: i64(ids, [B, S]), attention_mask: i64(mask, [B, T]) };
  if (sess.hasPos) {
    let pos = opts.positions;
    if (!pos) {
      pos = [];
      for (let b = 0; b < B; b++) {
        let c = 0;
        const row = mask.slice(b * T, (b + 1) * T).map((m) => (c += m) - 1);
        pos.push(...row.slice(T - S).map((p, j) => (mask[b * T + T - S + j] ? p : 1)));
      }
    }
    feeds.position_ids = i64(pos, [B, S]);
  }
  for (let i = 0; i < L; i++) {
    for (const k of ['key', 'value']) {
      feeds[`past_key_values.${i}.${k}`] =
        (opts.past?.[`present.${i}.${k}`] as ort.Tensor | undefined) ??
        new ort.Tensor('float32', new Float32Array(0), [B, kv, 0, D]);
    }
  }
  return sess.s.run(feeds);
}

function logitsAt(out: Outputs, row: number, pos: number): Float32Array {
  const t = out.logits as ort.Tensor;
  const [, S, V] = t.dims as readonly [number, number, number];
  const start = (row * S + pos) * V;
  return (t.data as Float32Array).subarray(start, start + V);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const ones = (n: number): number[] => Array(n).fill(1);

beforeAll(async () => {
  for (const v of VARIANTS) {
    dirs.set(v.name, await ensureSynthModel({ shape: 'tiny', dtype: v.dtype, positionIds: v.positionIds }));
  }
});

afterAll(async () => {
  for (const s of sessions.values()) await s.s.release();
});

describe.each(VARIANTS)('$name', (v) => {
  const dir = (): string => dirs.get(v.name)!;

  it('has the HF export layout, config and manifest', () => {
    expect(dir()).toBe(join(GENERATED_DIR, v.name));
    for (const f of [
      'config.json',
      'generation_config.json',
      'tokenizer.json',
      'tokenizer_config.json',
      'assay.json',
      `onnx/${v.file}`,
    ]) {
      expect(existsSync(join(dir(), f)), f).toBe(true);
    }
    const cfg = JSON.parse(readFileSync(join(dir(), 'config.json'), 'utf8')) as HfConfig;
    expect(cfg).toMatchObject({
      architectures: ['Qwen2ForCausalLM'],
      model_type: 'qwen2',
      hidden_size: 64,
      intermediate_size: 128,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      head_dim: 16,
      vocab_size: 151936,
      max_position_embeddings: 32768,
      rms_norm_eps: 1e-6,
      rope_theta: 1000000,
      tie_word_embeddings: true,
      bos_token_id: 151643,
      eos_token_id: 151645,
    });
    const marker = JSON.parse(readFileSync(join(dir(), 'assay.json'), 'utf8')) as Record<string, unknown>;
    expect(marker).toMatchObject({ synthetic: true, shape: 'tiny', dtype: v.dtype, position_ids: v.positionIds });
    expect(String(marker.warning)).toMatch(/meaningless/i);
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
      expect(readFileSync(join(dir(), f)).equals(readFileSync(join(TOKENIZER_DIR, f))), f).toBe(true);
    }
    // Only the export: the engine writes its rewritten graphs to the graph cache, never here.
    expect(readdirSync(join(dir(), 'onnx')).filter((f) => !f.includes('.assay-'))).toEqual([v.file]);
  });

  it('has exactly the export I/O contract', async () => {
    const { s } = await open(dir(), v.file);
    const past = [0, 1].flatMap((i) => [`past_key_values.${i}.key`, `past_key_values.${i}.value`]);
    expect(s.inputNames).toEqual(['input_ids', 'attention_mask', ...(v.positionIds ? ['position_ids'] : []), ...past]);
    expect(s.outputNames).toEqual(['logits', ...[0, 1].flatMap((i) => [`present.${i}.key`, `present.${i}.value`])]);
    const meta = Object.fromEntries(
      [...s.inputMetadata, ...s.outputMetadata].map((m) => [m.name, m.isTensor ? [m.type, m.shape] : null]),
    );
    expect(meta.input_ids).toEqual(['int64', ['batch_size', 'sequence_length']]);
    expect(meta.attention_mask).toEqual(['int64', ['batch_size', 'total_sequence_length']]);
    if (v.positionIds) expect(meta.position_ids).toEqual(['int64', ['batch_size', 'sequence_length']]);
    expect(meta['past_key_values.1.value']).toEqual(['float32', ['batch_size', 2, 'past_sequence_length', 16]]);
    expect(meta.logits).toEqual(['float32', ['batch_size', 'sequence_length', 151936]]);
    expect(meta['present.1.key']).toEqual(['float32', ['batch_size', 2, 'total_sequence_length', 16]]);
  });

  it('runs with an empty past and returns present KV of the right shape', async () => {
    const sess = await open(dir(), v.file);
    const out = await run(sess, PROMPT, ones(PROMPT.length));
    expect((out.logits as ort.Tensor).dims).toEqual([1, PROMPT.length, 151936]);
    expect((out['present.0.key'] as ort.Tensor).dims).toEqual([1, 2, PROMPT.length, 16]);
    expect(Array.from(logitsAt(out, 0, PROMPT.length - 1)).every(Number.isFinite)).toBe(true);
    // Deterministic: the same inputs give bit-identical logits.
    const again = await run(sess, PROMPT, ones(PROMPT.length));
    expect(maxAbsDiff(logitsAt(out, 0, PROMPT.length - 1), logitsAt(again, 0, PROMPT.length - 1))).toBe(0);
  });

  it('depends on context (attention is live)', async () => {
    const sess = await open(dir(), v.file);
    const a = await run(sess, PROMPT, ones(PROMPT.length));
    const changed = [...PROMPT];
    changed[4] = 9454;
    const b = await run(sess, changed, ones(PROMPT.length));
    expect(maxAbsDiff(logitsAt(a, 0, PROMPT.length - 1), logitsAt(b, 0, PROMPT.length - 1))).toBeGreaterThan(1e-2);
  });

  // Dynamic int8 quantization picks one activation scale per MatMul call over all rows of the
  // call, so splitting a sequence (or batching it with others) changes the rounding: real
  // quantize_dynamic exports behave the same. Exactness is asserted for fp32 only.
  const exact = v.dtype === 'fp32';

  it(`reuses KV ${exact ? 'exactly' : 'approximately (int8)'}: prefix pass + suffix pass = whole pass`, async () => {
    const sess = await open(dir(), v.file);
    const n = PROMPT.length;
    const whole = await run(sess, PROMPT, ones(n));
    for (const cut of [1, 19, n - 1]) {
      const prefix = await run(sess, PROMPT.slice(0, cut), ones(cut));
      const suffix = await run(sess, PROMPT.slice(cut), ones(n), { past: prefix });
      expect((suffix['present.1.value'] as ort.Tensor).dims).toEqual([1, 2, n, 16]);
      let d = 0;
      for (let p = cut; p < n; p++) d = Math.max(d, maxAbsDiff(logitsAt(whole, 0, p), logitsAt(suffix, 0, p - cut)));
      expect(d).toBeLessThan(exact ? 1e-5 : 1.0);
    }
  });

  it(`gives a left-padded row of a batch the logits it has alone${exact ? '' : ' (approximately, int8)'}`, async () => {
    const sess = await open(dir(), v.file);
    const long = PROMPT;
    const short = PROMPT.slice(9);
    const pad = long.length - short.length;
    const batch = await run(
      sess,
      [...long, ...Array(pad).fill(151643), ...short],
      [...ones(long.length), ...Array(pad).fill(0), ...ones(short.length)],
      {
        batch: 2,
      },
    );
    const aloneLong = await run(sess, long, ones(long.length));
    const aloneShort = await run(sess, short, ones(short.length));
    const tol = exact ? 1e-4 : 1.0;
    expect(maxAbsDiff(logitsAt(batch, 0, long.length - 1), logitsAt(aloneLong, 0, long.length - 1))).toBeLessThan(tol);
    expect(maxAbsDiff(logitsAt(batch, 1, long.length - 1), logitsAt(aloneShort, 0, short.length - 1))).toBeLessThan(
      tol,
    );
    // A decode step after the padded batch stays consistent too.
    const next = await run(
      sess,
      [9454, 9454],
      [...ones(long.length), 1, ...Array(pad).fill(0), ...ones(short.length), 1],
      {
        batch: 2,
        past: batch,
      },
    );
    const nextShort = await run(sess, [9454], ones(short.length + 1), { past: aloneShort });
    expect(maxAbsDiff(logitsAt(next, 1, 0), logitsAt(nextShort, 0, 0))).toBeLessThan(tol);
  });
});

describe('numerics across variants', () => {
  it('fp32 without position_ids equals fp32 with them (positions derived from the mask)', async () => {
    const a = await run(await open(dirs.get('tiny-fp32')!, 'model.onnx'), PROMPT, ones(PROMPT.length));
    const b = await run(await open(dirs.get('tiny-fp32-nopos')!, 'model.onnx'), PROMPT, ones(PROMPT.length));
    for (let p = 0; p < PROMPT.length; p++) expect(maxAbsDiff(logitsAt(a, 0, p), logitsAt(b, 0, p))).toBeLessThan(1e-5);
  });

  it('int8 logits are close to fp32 for the same seed', async () => {
    const a = await run(await open(dirs.get('tiny-fp32')!, 'model.onnx'), PROMPT, ones(PROMPT.length));
    const b = await run(await open(dirs.get('tiny-int8')!, 'model_quantized.onnx'), PROMPT, ones(PROMPT.length));
    const la = logitsAt(a, 0, PROMPT.length - 1);
    const lb = logitsAt(b, 0, PROMPT.length - 1);
    let sq = 0;
    let sa = 0;
    for (let i = 0; i < la.length; i++) {
      sq += (la[i]! - lb[i]!) ** 2;
      sa += la[i]! ** 2;
    }
    // Relative RMS error of a few percent, and not identical (the int8 path really ran).
    expect(Math.sqrt(sq / sa)).toBeLessThan(0.1);
    expect(Math.sqrt(sq / sa)).toBeGreaterThan(1e-4);
    expect(maxAbsDiff(la, lb)).toBeLessThan(1.5);
  });
});

// ---------------------------------------------------------------------------------------------
// Architecture check: an independent float64 forward pass from the model's weights.

function readWeights(file: string): Map<string, { dims: number[]; data: Float32Array }> {
  const m = onnxProto.onnx.ModelProto.decode(readFileSync(file));
  const out = new Map<string, { dims: number[]; data: Float32Array }>();
  for (const t of m.graph?.initializer ?? []) {
    if (t.dataType !== 1 || !t.rawData) continue;
    const raw = t.rawData;
    const copy = new Float32Array(raw.byteLength / 4);
    new Uint8Array(copy.buffer).set(raw);
    out.set(t.name ?? '', { dims: (t.dims ?? []).map(Number), data: copy });
  }
  return out;
}

/** Last-position logits of a plain Qwen2/Qwen3 forward pass (HF semantics), in float64. */
function referenceLogits(file: string, m: ShapeManifest, ids: number[]): Float64Array {
  const w = readWeights(file);
  const get = (n: string): Float32Array => {
    const t = w.get(n);
    if (!t) throw new Error(`missing weight ${n}`);
    return t.data;
  };
  const c = m.config;
  const { hidden_size: H, head_dim: D, num_attention_heads: nH, num_key_value_heads: kvH, intermediate_size: I } = c;
  const eps = c.rms_norm_eps;
  const S = ids.length;
  const rms = (x: Float64Array, wt: Float32Array): Float64Array => {
    let s = 0;
    for (const v of x) s += v * v;
    const r = 1 / Math.sqrt(s / x.length + eps);
    return x.map((v, i) => v * r * wt[i]!);
  };
  // y = x · W for W stored [in, out] (ONNX MatMul layout).
  const mm = (x: Float64Array, wt: Float32Array, out: number, bias?: Float32Array): Float64Array => {
    const y = new Float64Array(out);
    for (let i = 0; i < x.length; i++) for (let j = 0; j < out; j++) y[j]! += x[i]! * wt[i * out + j]!;
    if (bias) for (let j = 0; j < out; j++) y[j]! += bias[j]!;
    return y;
  };
  const rope = (v: Float64Array, heads: number, pos: number): void => {
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < D / 2; j++) {
        const ang = pos * Math.pow(c.rope_theta, (-2 * j) / D);
        const a = v[h * D + j]!;
        const b = v[h * D + j + D / 2]!;
        v[h * D + j] = a * Math.cos(ang) - b * Math.sin(ang);
        v[h * D + j + D / 2] = b * Math.cos(ang) + a * Math.sin(ang);
      }
    }
  };
  const headNorm = (v: Float64Array, heads: number, wt: Float32Array): Float64Array => {
    const out = new Float64Array(v.length);
    for (let h = 0; h < heads; h++) out.set(rms(v.subarray(h * D, (h + 1) * D), wt), h * D);
    return out;
  };
  const E = get('model.embed_tokens.weight');
  let xs = ids.map((id) => Float64Array.from(E.subarray(id * H, (id + 1) * H)));
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const bias = (n: string): Float32Array | undefined =>
      m.qkv_bias ? get(`${p}.self_attn.${n}_proj.bias`) : undefined;
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    for (let t = 0; t < S; t++) {
      const h = rms(xs[t]!, get(`${p}.input_layernorm.weight`));
      let q = mm(h, get(`${p}.self_attn.q_proj.weight`), nH * D, bias('q'));
      let k = mm(h, get(`${p}.self_attn.k_proj.weight`), kvH * D, bias('k'));
      if (m.qk_norm) {
        q = headNorm(q, nH, get(`${p}.self_attn.q_norm.weight`));
        k = headNorm(k, kvH, get(`${p}.self_attn.k_norm.weight`));
      }
      rope(q, nH, t);
      rope(k, kvH, t);
      qs.push(q);
      ks.push(k);
      vs.push(mm(h, get(`${p}.self_attn.v_proj.weight`), kvH * D, bias('v')));
    }
    xs = xs.map((x, t) => {
      const ctx = new Float64Array(nH * D);
      for (let h = 0; h < nH; h++) {
        const g = Math.floor(h / (nH / kvH));
        const sc = new Float64Array(t + 1);
        for (let u = 0; u <= t; u++) {
          let s = 0;
          for (let d = 0; d < D; d++) s += qs[t]![h * D + d]! * ks[u]![g * D + d]!;
          sc[u] = s / Math.sqrt(D);
        }
        const mx = Math.max(...sc);
        let z = 0;
        for (let u = 0; u <= t; u++) z += sc[u] = Math.exp(sc[u]! - mx);
        for (let u = 0; u <= t; u++) for (let d = 0; d < D; d++) ctx[h * D + d]! += (sc[u]! / z) * vs[u]![g * D + d]!;
      }
      const x1 = mm(ctx, get(`${p}.self_attn.o_proj.weight`), H).map((v, i) => v + x[i]!);
      const h2 = rms(x1, get(`${p}.post_attention_layernorm.weight`));
      const gate = mm(h2, get(`${p}.mlp.gate_proj.weight`), I);
      const up = mm(h2, get(`${p}.mlp.up_proj.weight`), I);
      const act = gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]!);
      return mm(act, get(`${p}.mlp.down_proj.weight`), H).map((v, i) => v + x1[i]!);
    });
  }
  const hf = rms(xs[S - 1]!, get('model.norm.weight'));
  const V = c.vocab_size;
  const logits = new Float64Array(V);
  for (let v = 0; v < V; v++) {
    let s = 0;
    for (let i = 0; i < H; i++) s += hf[i]! * E[v * H + i]!;
    logits[v] = s;
  }
  return logits;
}

describe('architecture matches an independent reference forward pass', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'assay-synth-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('tiny (Qwen2: q/k/v biases, GQA, tied head)', async () => {
    const dir = dirs.get('tiny-fp32')!;
    const file = join(dir, 'onnx', 'model.onnx');
    const ref = referenceLogits(file, loadShapes().tiny, PROMPT);
    const out = await run(await open(dir, 'model.onnx'), PROMPT, ones(PROMPT.length));
    expect(maxAbsDiff(logitsAt(out, 0, PROMPT.length - 1), ref)).toBeLessThan(1e-3);
  });

  it('a tiny Qwen3-style variant (q/k norms, no biases, head_dim ≠ hidden/heads)', async () => {
    const base = loadShapes()['qwen3-0.6b'];
    const manifest: ShapeManifest = {
      ...base,
      config: {
        ...base.config,
        hidden_size: 48,
        head_dim: 32,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        intermediate_size: 96,
        num_hidden_layers: 2,
      },
    };
    const out = join(tmp, 'qwen3-mini');
    mkdirSync(dirname(out), { recursive: true });
    synthesize({ shape: 'qwen3-0.6b', dtype: 'fp32', out, manifest });
    const ref = referenceLogits(join(out, 'onnx', 'model.onnx'), manifest, PROMPT);
    const got = await run(await open(out, 'model.onnx'), PROMPT, ones(PROMPT.length));
    expect(maxAbsDiff(logitsAt(got, 0, PROMPT.length - 1), ref)).toBeLessThan(1e-3);
  });
});

// ---------------------------------------------------------------------------------------------

describe('generation', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'assay-synth-gen-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));
  const sha = (f: string): string => createHash('sha256').update(readFileSync(f)).digest('hex');

  it('is deterministic: the same seed writes byte-identical models, another seed different weights', () => {
    synthesize({ shape: 'tiny', dtype: 'int8', out: join(tmp, 'a') });
    synthesize({ shape: 'tiny', dtype: 'int8', out: join(tmp, 'b') });
    synthesize({ shape: 'tiny', dtype: 'int8', out: join(tmp, 'c'), seed: 7 });
    const f = (d: string): string => join(tmp, d, 'onnx', 'model_quantized.onnx');
    expect(sha(f('a'))).toBe(sha(f('b')));
    expect(sha(f('a'))).toBe(sha(join(dirs.get('tiny-int8')!, 'onnx', 'model_quantized.onnx')));
    expect(sha(f('a'))).not.toBe(sha(f('c')));
  });

  it('ensureSynthModel: callers share one complete folder; stale temp folders are swept; force replaces', async () => {
    const out = join(tmp, 'ensure', 'tiny-fp32');
    mkdirSync(dirname(out), { recursive: true });
    // A leftover of an interrupted run (its process is gone).
    const stale = join(dirname(out), '.tiny-fp32.tmp-999999999-x');
    mkdirSync(stale);
    const [a, b] = await Promise.all([
      ensureSynthModel({ shape: 'tiny', dtype: 'fp32', out }),
      ensureSynthModel({ shape: 'tiny', dtype: 'fp32', out }),
    ]);
    expect(a).toBe(out);
    expect(b).toBe(out);
    expect(existsSync(join(out, 'assay.json'))).toBe(true);
    expect(readdirSync(dirname(out))).toEqual(['tiny-fp32']);
    // A folder without its marker (interrupted copy, or older generator) is regenerated.
    rmSync(join(out, 'assay.json'));
    await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', out });
    expect(existsSync(join(out, 'assay.json'))).toBe(true);
    expect(sha(join(out, 'onnx', 'model.onnx'))).toBe(sha(join(dirs.get('tiny-fp32')!, 'onnx', 'model.onnx')));
    // force: the new copy is renamed over the complete one.
    const before = readFileSync(join(out, 'assay.json'), 'utf8');
    await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', out, seed: 7, force: true });
    expect(JSON.parse(readFileSync(join(out, 'assay.json'), 'utf8')).seed).toBe(7);
    expect(readFileSync(join(out, 'assay.json'), 'utf8')).not.toBe(before);
    expect(readdirSync(dirname(out))).toEqual(['tiny-fp32']);
  });
});

// ---------------------------------------------------------------------------------------------

describe('transformers.js loads the folders offline and computes the same logits', () => {
  it.each([
    ['tiny-fp32', 'fp32', 'model.onnx'],
    ['tiny-int8', 'q8', 'model_quantized.onnx'],
    ['tiny-fp32-nopos', 'fp32', 'model.onnx'],
  ] as const)('%s (dtype %s)', async (name, dtype, file) => {
    const { env, AutoTokenizer, AutoModelForCausalLM } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = GENERATED_DIR;
    const tokenizer = await AutoTokenizer.from_pretrained(name);
    // enable_thinking is a chat-template variable: transformers.js passes extra options through to it.
    const templateOptions = {
      add_generation_prompt: true,
      enable_thinking: false,
      tokenize: true,
      return_dict: true,
    } as const;
    const enc = tokenizer.apply_chat_template(
      [{ role: 'user', content: 'Is the sky green? Answer yes or no. 天空是绿色的吗？' }],
      templateOptions,
    ) as unknown as {
      input_ids: { data: BigInt64Array; dims: number[] };
      attention_mask: unknown;
    };
    const ids = Array.from(enc.input_ids.data, Number);
    // The template opens the assistant turn with an empty think block.
    expect(ids.slice(-7)).toEqual([151644, 77091, 198, 151667, 271, 151668, 271]);
    // A transformers.js user on a CPU whose int8 kernel saturates passes the same session config.
    const model = await AutoModelForCausalLM.from_pretrained(name, {
      dtype,
      session_options: { extra: await int8SessionConfig() },
    });
    try {
      const out = (await model(enc)) as { logits: { dims: number[]; data: Float32Array } };
      const n = ids.length;
      expect(out.logits.dims).toEqual([1, n, 151936]);
      const theirs = out.logits.data.subarray((n - 1) * 151936, n * 151936);
      const ours = logitsAt(await run(await open(dirs.get(name)!, file), ids, ones(n)), 0, n - 1);
      expect(maxAbsDiff(theirs, ours)).toBeLessThan(1e-4);
    } finally {
      await model.dispose();
    }
  });
});
