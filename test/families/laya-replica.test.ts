// The Laya replica (tools/families/laya/replica.ts) against an independent forward pass in numpy
// (tools/families/laya/laya_forward.py), on rows the landed layout builds: the graphs a Laya runner
// will load (single fp32 with external data, fp16, int8, split encoder + head) give the
// reference's scores, batching and padding change nothing, and a marker off by one changes the answer.
// docs/families/laya-markers.md, "The replica".
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import * as ort from 'onnxruntime-node';
import onnxProto from 'onnx-proto';
import { beforeAll, describe, expect, it } from 'vitest';
import { readLayaConfig } from '../../src/engine/families/laya/calibration.js';
import { int8SessionConfig } from '../../src/engine/model/cpu.js';
import { layaLayout, type LayaQuestion, type LayaRow } from '../../src/engine/families/laya/layout.js';
import { layaTokenizer } from '../../src/engine/families/laya/tokenizer.js';
import type { Content } from '../../src/engine/types.js';
import { ensureLayaReplica, LAYA_REPLICA, LAYA_SHAPES, layaParameters } from '../../tools/families/laya/replica.js';
import { layaTestTokenizer } from '../../tools/families/laya/tokenizer.js';
import { graphIo, type GraphIo, hasNumpy, PYTHON } from './replica-helpers.js';

const REFERENCE = join(import.meta.dirname, '..', '..', 'tools', 'families', 'laya', 'laya_forward.py');
const numpy = hasNumpy("the Laya replica's comparison with the numpy reference");

const dir = ensureLayaReplica();
const readJson = (file: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
const tokenizerConfig = readJson('tokenizer/tokenizer_config.json');
const tok = layaTokenizer(new Tokenizer(readJson('tokenizer/tokenizer.json'), tokenizerConfig), tokenizerConfig);
const PAD = new Tokenizer(readJson('tokenizer/tokenizer.json'), tokenizerConfig).token_to_id('[PAD]')!;
const config = readLayaConfig(readJson('rl_agent_config.json'));

const letters = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZ'];
const requests: Array<[string, LayaQuestion, Content]> = [
  ['choice one option', { type: 'choice', instructions: 'Pick it.', options: [['only', null]] }, 'a state'],
  [
    'choice 10 options',
    {
      type: 'choice',
      instructions: 'Which department should handle the ticket?',
      options: ['billing', 'shipping', 'returns', 'legal', 'sales', 'support', 'hr', 'it', 'press', 'other'].map(
        (o, i) => [o, i % 3 === 0 ? `tickets about ${o}` : null] as const,
      ),
    },
    'My parcel arrived broken and I want my money back.',
  ],
  [
    'choice 26 options',
    { type: 'choice', instructions: 'Which letter?', options: letters.map((l) => [l, null] as const) },
    'The answer is Q.',
  ],
  ['score 2 levels', { type: 'score', instructions: 'Is it polite?', criteria: ['rude', 'polite'] }, 'Thank you!'],
  [
    'score 10 levels',
    { type: 'score', instructions: 'How urgent?', criteria: Array.from({ length: 10 }, (_, i) => `urgency ${i}`) },
    { ticket: 42, text: 'server down', tags: ['prod', 'p1'] },
  ],
  ['noul plain', { type: 'noul', instructions: 'The user is angry.' }, 'This is the third time I write!'],
  [
    'noul criteria',
    { type: 'noul', instructions: 'Refund?', criteria: { true: 'asks for money back', false: { reason: 'other' } } },
    ['hi', 'I want a refund', 'now'],
  ],
  [
    'CJK',
    {
      type: 'choice',
      instructions: '这条消息的情绪是什么？',
      options: [
        ['正面', '积极'],
        ['负面', null],
        ['中性', ''],
      ],
    },
    '今天的天气非常好，我们去公园散步吧。東京は晴れです。',
  ],
  ['state at the limit', { type: 'noul', instructions: 'Long?' }, 'word '.repeat(3000)],
  [
    'score 3 levels, object state',
    { type: 'score', instructions: 'Quality', criteria: ['low', 'mid', 'high'] },
    { a: [1, 2.5, null], b: '[SEP] x' },
  ],
  [
    'specials in text',
    {
      type: 'choice',
      instructions: 'Pick [MASK] one',
      options: [
        ['[SEP]', 'x [CLS] y'],
        ['b', null],
        ['c', null],
        ['d', null],
      ],
    },
    'state with [MASK] and [PAD]',
  ],
  ['short noul', { type: 'noul', instructions: null }, ''],
];
const rows: LayaRow[] = requests.map(([, q, state]) => layaLayout(q, state, tok, config));

interface Scores {
  logits: number[][];
  act: number[][];
}

/** The graph inputs of rows, padded to the longest row (pad id, attention_mask 0) and the most markers. */
function feeds(batch: LayaRow[]): Record<string, ort.Tensor> {
  const b = batch.length;
  const s = Math.max(...batch.map((r) => r.ids.length));
  const k = Math.max(...batch.map((r) => r.markerPositions.length));
  const ids = new BigInt64Array(b * s).fill(BigInt(PAD));
  const mask = new BigInt64Array(b * s);
  const pos = new BigInt64Array(b * k);
  const valid = new Uint8Array(b * k);
  batch.forEach((r, i) => {
    r.ids.forEach((id, j) => {
      ids[i * s + j] = BigInt(id);
      mask[i * s + j] = 1n;
    });
    r.markerPositions.forEach((m, j) => {
      pos[i * k + j] = BigInt(m);
      valid[i * k + j] = 1;
    });
  });
  return {
    input_ids: new ort.Tensor('int64', ids, [b, s]),
    attention_mask: new ort.Tensor('int64', mask, [b, s]),
    marker_pos: new ort.Tensor('int64', pos, [b, k]),
    marker_mask: new ort.Tensor('bool', valid, [b, k]),
    qtype: new ort.Tensor(
      'int64',
      BigInt64Array.from(batch, (r) => BigInt(r.qtype)),
      [b],
    ),
  };
}

/** Rows of a [b, n] output. */
function split2(t: ort.Tensor): number[][] {
  const [b = 0, n = 0] = t.dims;
  const data = Array.from(t.data as Float32Array);
  return Array.from({ length: b }, (_, i) => data.slice(i * n, (i + 1) * n));
}

async function runSingle(session: ort.InferenceSession, batch: LayaRow[]): Promise<Scores> {
  const out = await session.run(feeds(batch));
  return { logits: split2(out.logits!), act: split2(out.act_logits!) };
}

async function runSplit(enc: ort.InferenceSession, head: ort.InferenceSession, batch: LayaRow[]): Promise<Scores> {
  const f = feeds(batch);
  const { last_hidden_state } = await enc.run({ input_ids: f.input_ids!, attention_mask: f.attention_mask! });
  const { input_ids: _ids, ...rest } = f;
  const out = await head.run({ ...rest, hidden_states: last_hidden_state! });
  return { logits: split2(out.logits!), act: split2(out.act_logits!) };
}

/** Each row alone (no padding): its markers' logits and its act_logits. */
async function oneByOne(session: ort.InferenceSession, batch: LayaRow[]): Promise<Scores> {
  const all: Scores = { logits: [], act: [] };
  for (const r of batch) {
    const s = await runSingle(session, [r]);
    all.logits.push(s.logits[0]!);
    all.act.push(s.act[0]!);
  }
  return all;
}

function reference(batch: LayaRow[]): Scores {
  const input = batch
    .map((r) =>
      JSON.stringify({
        ids: r.ids,
        marker_pos: r.markerPositions,
        marker_mask: r.markerPositions.map(() => true),
        qtype: r.qtype,
      }),
    )
    .join('\n');
  const run = spawnSync(PYTHON, [REFERENCE, dir], { input, encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`laya_forward.py failed: ${run.stderr}`);
  const lines = run.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { logits: number[]; act_logits: number[] });
  return { logits: lines.map((l) => l.logits), act: lines.map((l) => l.act_logits) };
}

/** max |a − b| over each row's first K (its own markers) logits and the act logits. */
function maxDiff(a: Scores, b: Scores, batch: LayaRow[]): { logits: number; act: number } {
  let logits = 0;
  let act = 0;
  batch.forEach((r, i) => {
    for (let j = 0; j < r.markerPositions.length; j++)
      logits = Math.max(logits, Math.abs(a.logits[i]![j]! - b.logits[i]![j]!));
    for (let j = 0; j < 2; j++) act = Math.max(act, Math.abs(a.act[i]![j]! - b.act[i]![j]!));
  });
  return { logits, act };
}

const decode = (file: string): onnxProto.onnx.ModelProto =>
  onnxProto.onnx.ModelProto.decode(readFileSync(join(dir, 'onnx', file)));

const session = async (file: string): Promise<ort.InferenceSession> =>
  ort.InferenceSession.create(join(dir, 'onnx', file), {
    logSeverityLevel: 3,
    // int8 as the engine runs it: exact on CPUs whose default int8 GEMM saturates (cpu.ts).
    extra: await int8SessionConfig(),
  });

let fp32: ort.InferenceSession;
let batched: Scores;
let single: Scores;
beforeAll(async () => {
  fp32 = await session('model.onnx');
  batched = await runSingle(fp32, rows);
  single = await oneByOne(fp32, rows);
});

describe('the Laya replica', () => {
  it('is laid out as the published exports, with their graph I/O', () => {
    for (const f of [
      'onnx/model.onnx',
      'onnx/model.onnx_data',
      'onnx/model_fp16.onnx',
      'onnx/model_quantized.onnx',
      'onnx/model_int8.onnx',
      'onnx/encoder.onnx',
      'onnx/head.onnx',
      'tokenizer/tokenizer.json',
      'tokenizer/tokenizer_config.json',
      'config.json',
      'rl_agent_config.json',
      'weights.safetensors',
    ])
      expect(existsSync(join(dir, f)), f).toBe(true);
    const io = (file: string): GraphIo => {
      const { ops: _, ...rest } = graphIo(join(dir, 'onnx', file));
      return rest;
    };
    const markers = [
      'marker_pos:7[batch_size,num_markers]',
      'marker_mask:9[batch_size,num_markers]',
      'qtype:7[batch_size]',
    ];
    const outputs = ['logits:1[batch_size,num_markers]', 'act_logits:1[batch_size,2]'];
    const text = ['input_ids:7[batch_size,sequence_length]', 'attention_mask:7[batch_size,sequence_length]'];
    expect(io('model.onnx')).toEqual({ inputs: [...text, ...markers], outputs, external: ['model.onnx_data'] });
    expect(io('model_fp16.onnx')).toEqual({ inputs: [...text, ...markers], outputs, external: [] });
    expect(io('model_quantized.onnx')).toEqual({ inputs: [...text, ...markers], outputs, external: [] });
    expect(io('model_int8.onnx')).toEqual(io('model_quantized.onnx'));
    expect(io('encoder.onnx').outputs).toEqual([
      `last_hidden_state:1[batch_size,sequence_length,${LAYA_REPLICA.hidden}]`,
    ]);
    expect(io('head.onnx').inputs).toEqual([
      `hidden_states:1[batch_size,sequence_length,${LAYA_REPLICA.hidden}]`,
      ...markers,
      text[1],
    ]);
  });

  it('ships a temperature outside the clamp range, which the calibration readout clamps', () => {
    expect(config.maxLen).toBe(1024);
    expect(config.calibration.clamped).toEqual(['choice:11+=0.1006 -> 0.5']);
  });

  it('runs rows of every kind the layout makes', () => {
    const lengths = rows.map((r) => r.ids.length);
    expect(Math.max(...lengths)).toBe(config.maxLen);
    expect(rows.map((r) => r.markerPositions.length)).toEqual([1, 10, 26, 2, 10, 2, 2, 3, 2, 3, 4, 2]);
    for (const s of [batched, single]) for (const l of s.logits.flat()) expect(Number.isFinite(l)).toBe(true);
  });

  it.skipIf(!numpy)('gives the numpy reference scores (fp32 single graph, within 1e-4)', () => {
    // The reference runs in float64; onnxruntime in float32 (unit roundoff 6e-8) with its own
    // summation order, over dot products of at most 4·hidden = 128 terms and softmax sums over at
    // most 1,024 keys: worst case ~1e-4 relative on O(1) activations, logits here are below 10.
    const ref = reference(rows);
    const d = maxDiff(single, ref, rows);
    console.log(`fp32 vs numpy reference: logits max |Δ| ${d.logits.toExponential(2)}, act ${d.act.toExponential(2)}`);
    expect(d.logits).toBeLessThan(1e-4);
    expect(d.act).toBeLessThan(1e-4);
  });

  it('pads: a batch (padded to its longest row, attention_mask 0) gives each row alone, masked slots exactly −1e4', () => {
    // Padded keys get exactly zero attention weight, so only kernel blocking differs: 1e-5.
    const d = maxDiff(batched, single, rows);
    console.log(`batched vs one by one: logits max |Δ| ${d.logits.toExponential(2)}, act ${d.act.toExponential(2)}`);
    expect(d.logits).toBeLessThan(1e-5);
    expect(d.act).toBeLessThan(1e-5);
    const k = Math.max(...rows.map((r) => r.markerPositions.length));
    rows.forEach((r, i) => {
      expect(batched.logits[i]!.length).toBe(k);
      for (let j = r.markerPositions.length; j < k; j++) expect(batched.logits[i]![j]).toBe(-1e4);
    });
  });

  it('split encoder + head = the single graph (within 1e-5)', async () => {
    const split = await runSplit(await session('encoder.onnx'), await session('head.onnx'), rows);
    const d = maxDiff(split, batched, rows);
    console.log(`split vs single: logits max |Δ| ${d.logits.toExponential(2)}, act ${d.act.toExponential(2)}`);
    expect(d.logits).toBeLessThan(1e-5);
    expect(d.act).toBeLessThan(1e-5);
  });

  it('fp16 stays within the fp16 bound of fp32', async () => {
    // fp16 rounds every weight and stored activation to 11 significant bits (u = 2^-11 ≈ 4.9e-4).
    // LayerNorms keep activations O(1); a logit passes ~6 normalised blocks (embedding norm,
    // 2 encoder, 2 head layers, the scorer) of ~10 roundings each: 6·10·u ≈ 0.03 relative, times
    // ~3 for what a LayerNorm (division by a row's spread) and a softmax (score errors
    // exponentiated, scores up to ~10) amplify: |Δ| ≤ 0.1·(1 + |fp32 value|). A broken fp16 graph
    // (an overflow, a lost cast) is off by O(1). Masked slots are −1e4 in both (set in f32).
    const BOUND = 0.1;
    const half = await runSingle(await session('model_fp16.onnx'), rows);
    let worst = 0;
    rows.forEach((r, i) => {
      for (let j = 0; j < batched.logits[i]!.length; j++) {
        const a = batched.logits[i]![j]!;
        const excess = Math.abs(half.logits[i]![j]! - a) / (BOUND * (1 + Math.abs(a)));
        worst = Math.max(worst, excess);
      }
      for (let j = 0; j < 2; j++) {
        const a = batched.act[i]![j]!;
        worst = Math.max(worst, Math.abs(half.act[i]![j]! - a) / (BOUND * (1 + Math.abs(a))));
      }
      if (r.markerPositions.length < batched.logits[i]!.length) expect(half.logits[i]!.at(-1)).toBe(-1e4);
    });
    const d = maxDiff(half, batched, rows);
    console.log(
      `fp16 vs fp32: logits max |Δ| ${d.logits.toExponential(2)}, act ${d.act.toExponential(2)}; ${(worst * 100).toFixed(1)}% of the bound`,
    );
    expect(worst).toBeLessThan(1);
  });

  it('int8: every Linear quantized per tensor (symmetric int8 weights from the fp32 ones), embeddings fp32', () => {
    const quant = decode('model_quantized.onnx');
    const full = decode('model.onnx');
    const external = readFileSync(join(dir, 'onnx', 'model.onnx_data'));
    const tensor = (m: onnxProto.onnx.IModelProto, name: string): onnxProto.onnx.ITensorProto => {
      const t = m.graph!.initializer!.find((i) => i.name === name);
      if (!t) throw new Error(`no initializer ${name}`);
      return t;
    };
    const bytes = (t: onnxProto.onnx.ITensorProto): Uint8Array => {
      if (!t.externalData?.length) return new Uint8Array(t.rawData!);
      const at = Object.fromEntries(t.externalData.map((e) => [e.key, e.value]));
      return new Uint8Array(external.subarray(Number(at.offset), Number(at.offset) + Number(at.length)));
    };
    const floats = (t: onnxProto.onnx.ITensorProto): Float32Array => new Float32Array(bytes(t).slice().buffer);
    const nodes = quant.graph!.node!;
    const constants = new Set(quant.graph!.initializer!.map((t) => t.name));
    const producer = new Map(nodes.flatMap((n) => n.output!.map((o) => [o, n] as const)));
    const products = nodes.filter((n) => n.opType === 'MatMulInteger');
    // Per encoder layer Wqkv, Wo, Wi, Wo; per head layer in_proj, out_proj, linear1, linear2;
    // the scorer's two Linears and the act head's two.
    expect(products.length).toBe(4 * LAYA_REPLICA.layers + 4 * LAYA_REPLICA.headLayers + 4);
    expect(nodes.filter((n) => n.opType === 'MatMul' && n.input!.some((i) => constants.has(i)))).toEqual([]);
    for (const p of products) {
      const [x, wq, xzp, wzp] = p.input!;
      expect(producer.get(x!)?.opType).toBe('DynamicQuantizeLinear');
      expect(producer.get(xzp!)).toBe(producer.get(x!));
      const name = wq!.replace(/_quantized$/, '');
      const w = tensor(full, name);
      const q = tensor(quant, wq!);
      expect([q.dataType, q.dims!.map(Number)]).toEqual([
        onnxProto.onnx.TensorProto.DataType.INT8,
        w.dims!.map(Number),
      ]);
      expect(Array.from(new Int8Array(bytes(tensor(quant, wzp!)).slice().buffer))).toEqual([0]);
      const scale = floats(tensor(quant, `${name}_scale`))[0]!;
      const fp = floats(w);
      const ints = new Int8Array(bytes(q).slice().buffer);
      // Symmetric per tensor: the largest |w| is 127 steps; every weight rounds to the nearest step.
      const max = fp.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
      expect(Math.abs(127 * scale - max), name).toBeLessThan(1e-6 * max);
      let worst = 0;
      fp.forEach((v, i) => (worst = Math.max(worst, Math.abs(v / scale - ints[i]!))));
      expect(worst, name).toBeLessThanOrEqual(0.5 + 1e-6);
    }
    const embedding = tensor(quant, 'encoder.embeddings.tok_embeddings.weight');
    expect([embedding.dataType, embedding.dims!.map(Number)]).toEqual([
      onnxProto.onnx.TensorProto.DataType.FLOAT,
      [LAYA_REPLICA.vocab, LAYA_REPLICA.hidden],
    ]);
  });

  it('int8 stays within the int8 bound of fp32', async () => {
    // Dynamic int8 rounds both operands of every Linear, per tensor. The weight: to steps of
    // max|W| / 127; the replica's weights are triangular within ±√6·σ, so the rounding error's RMS
    // is at most σ·√6 / (127·√12) = 0.56 % of σ. The activation: to steps of its range / 255 (RMS
    // error range / (255·√12)). A LayerNorm's output row of H values has |z| ≤ √(H − 1) (5.6 at
    // H = 32), so with γ ≤ 1.25 its range is at most 14 times its RMS: ≤ 1.6 %; the other inputs
    // (attention contexts, GeGLU products, ReLU and GELU outputs) are heavier-tailed: take a range
    // ≤ 32 RMS, ≤ 3.6 %. With independent errors, a product's output is off by √(εx² + εw²) of its
    // scale: ≤ 1.7 % for the 9 products on a logit's path that read a LayerNorm, ≤ 3.7 % for the
    // other 9 (the act head's two are alike). Independent errors add in quadrature, √(9·1.7² +
    // 9·3.7²) % = 12 % of an output's scale; ×3 for what LayerNorms and softmaxes amplify (as the
    // fp16 bound allows) and ×4 for the largest of ~90 values (4 standard deviations): |Δ| ≤ 1.5 ×
    // the RMS of the fp32 tensor (the valid logits; the act logits). Per-tensor quantization errs
    // by a share of the tensor's scale, not of each value: hence the RMS, not 1 + |x|. A lost zero
    // point or scale, or weights rounded to half their range, lands far past it; a slightly wrong
    // scale or rounding is the previous test's to catch.
    const BOUND = 1.5;
    const int8 = await runSingle(await session('model_quantized.onnx'), rows);
    const rms = (values: number[]): number => Math.sqrt(values.reduce((a, v) => a + v * v, 0) / values.length);
    const valid = rows.flatMap((r, i) => batched.logits[i]!.slice(0, r.markerPositions.length));
    const d = maxDiff(int8, batched, rows);
    const share = { logits: d.logits / (BOUND * rms(valid)), act: d.act / (BOUND * rms(batched.act.flat())) };
    console.log(
      `int8 vs fp32: logits max |Δ| ${d.logits.toExponential(2)} (RMS ${rms(valid).toFixed(2)}), act ` +
        `${d.act.toExponential(2)} (RMS ${rms(batched.act.flat()).toFixed(2)}); ` +
        `${(Math.max(share.logits, share.act) * 100).toFixed(1)}% of the bound`,
    );
    expect(share.logits).toBeLessThan(1);
    expect(share.act).toBeLessThan(1);
    rows.forEach((r, i) => {
      for (let j = r.markerPositions.length; j < int8.logits[i]!.length; j++) expect(int8.logits[i]![j]).toBe(-1e4);
    });
  });

  it('a layout bug changes the scores: every marker one token late, or the token after a marker changed', async () => {
    const late = rows.map((r) => ({ ...r, markerPositions: r.markerPositions.map((m) => m + 1) }));
    const shifted = await runSingle(fp32, late);
    const moved = rows.map((r, i) =>
      Math.max(...r.markerPositions.map((_, j) => Math.abs(shifted.logits[i]![j]! - batched.logits[i]![j]!))),
    );
    moved.forEach((m, i) => expect(m, requests[i]![0]).toBeGreaterThan(1e-2));
    // The first option's first token replaced by another word: that option's score moves.
    const other = tok.encode(' zebra')[0]!;
    const edited = rows.map((r) => {
      const ids = [...r.ids];
      ids[r.markerPositions[0]! + 1] = other;
      return { ...r, ids };
    });
    const after = await runSingle(fp32, edited);
    const changed = rows.map((_, i) => Math.abs(after.logits[i]![0]! - batched.logits[i]![0]!));
    changed.forEach((c, i) => expect(c, requests[i]![0]).toBeGreaterThan(1e-2));
    console.log(
      `marker one late: least max |Δ| of a row ${Math.min(...moved).toFixed(3)}; ` +
        `token after the first marker changed: least |Δ| ${Math.min(...changed).toFixed(3)}`,
    );
  });
});

describe('the Laya replica at the published shapes', () => {
  it('has the published parameter totals (421M, 322M: rounded to the million)', () => {
    expect(Math.abs(layaParameters(LAYA_SHAPES['modernbert-large']) - 421e6)).toBeLessThanOrEqual(0.5e6);
    expect(Math.abs(layaParameters(LAYA_SHAPES['mmbert-base']) - 322e6)).toBeLessThanOrEqual(0.5e6);
  });

  it.each(Object.keys(LAYA_SHAPES) as Array<keyof typeof LAYA_SHAPES>)(
    '%s: the stand-in tokenizer gives no id past the embedding rows, and round-trips',
    (shape) => {
      const { vocab, tokenizerBpe } = LAYA_SHAPES[shape];
      const { tokenizer, config } = layaTestTokenizer(tokenizerBpe);
      const t = new Tokenizer(tokenizer, config);
      const text = 'Pick [MASK] one: naïve café, 今天的天气非常好, ünïcödé 🙂 |||IP_ADDRESS||| <|padding|> zebra!';
      const ids = t.encode(text).ids as number[];
      expect(Math.max(...ids, ...(tokenizer.added_tokens as Array<{ id: number }>).map((a) => a.id))).toBeLessThan(
        vocab,
      );
      expect(t.decode(ids, { skip_special_tokens: false })).toBe(`[CLS]${text.replace(' [MASK]', '[MASK]')}[SEP]`);
    },
  );
});
