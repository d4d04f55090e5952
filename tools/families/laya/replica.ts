// A synthetic replica of a Laya decision model (development only, never packed): a ModernBERT-like
// encoder with the authors' decision head (FAMILIES.md, "Head (DecisionModel)"), seeded random
// weights, written in the layout of the public ONNX exports so the engine's Laya runner can be
// built, tested and measured offline. The answers are MEANINGLESS; the interface is real:
//   onnx/model.onnx + model.onnx_data   single graph, fp32, weights as external data      (fp32)
//   onnx/model_fp16.onnx                 the same graph in fp16 (logits and act_logits f32) (fp16)
//   onnx/model_quantized.onnx            the same graph with every Linear dynamically        (int8)
//   onnx/model_int8.onnx                 quantized to int8 (a hard link: the same file)
//   onnx/encoder.onnx, onnx/head.onnx   the split export (encoder → last_hidden_state → head) (split)
//   weights.safetensors                 the same weights in PyTorch's names and orientation, for
//                                       the independent reference (tools/families/laya/laya_forward.py)
//                                                                                          (safetensors)
//   tokenizer/                          the ModernBERT-special stand-in (laya-tokenizer.ts)
//   config.json, rl_agent_config.json   encoder config; limits and calibration (one temperature
//                                       outside [0.5, 5], as the shipped choice:11+ 0.1006)
// I/O: input_ids i64[b,s], attention_mask i64[b,s], marker_pos i64[b,k], marker_mask bool[b,k],
// qtype i64[b] → logits f32[b,k] (masked slots −1e4), act_logits f32[b,2].
//
// Shapes (LAYA_SHAPES): `tiny` (the default, for tests), and the published encoders at their real
// sizes, `modernbert-large` (Laya en and typed-decisions, 421M) and `mmbert-base` (Laya
// multilingual, 322M), for measuring. Only the flavors asked for are written, and every weight is
// generated when its graph needs it and written at once (external data, or SpoolGraph's spool):
// a folder at a real size is written without holding its weights in memory. The graph pieces
// (Linear, int8 included, LayerNorm, GELU, attention), the safetensors writer and the folder cache
// are replica-kit.ts's, shared with the NLI replica.
//
// The architecture (docs/families/laya-markers.md, "The replica"):
// - encoder (ModernBERT's design, no biases): token embedding → LayerNorm; per layer pre-LN
//   attention (layer 0 reads the embedding norm directly) with rotary positions 0..s−1, every
//   `globalEvery`-th layer (0, 3, 6, …) global (θ globalTheta), the others local (|i − j| ≤
//   localWindow / 2, θ localTheta), keys masked by attention_mask; pre-LN GeGLU MLP
//   (GELU(x·Wi[:I]) · x·Wi[I:]); final LayerNorm;
// - head: + type embedding[qtype]; 2 pre-LN transformer layers (max(1, H/64) heads, biases, ReLU
//   MLP 4H, padded keys masked); gather at marker_pos (clamped ≥ 0); scorer LayerNorm → Linear →
//   GELU → Linear → one logit per marker, masked slots −1e4; act_logits = Linear → GELU → Linear
//   over [state at position 0, top1, top1 − top2, entropy / ln max(2, K), K / 255] of
//   softmax(logits).
//
//   npx tsx tools/families/laya/replica.ts DIR [SHAPE [FLAVOR,…]]   writes a folder
import { copyFileSync, linkSync, mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DataType, GENERATED_DIR, GraphBuilder } from '../../../src/internal.js';
import { LAYA_TEST_BPE, layaTestAdded, writeLayaTestTokenizer } from './tokenizer.js';
import {
  attend,
  cast,
  ensureFlavored,
  F,
  F16,
  type FlavoredReplica,
  generated,
  gelu,
  I64,
  keysValid,
  layerNorm,
  linear,
  maskBias,
  MASKED,
  type Net,
  param,
  parameterCount,
  type Spec,
  splitHeads,
  writeFlavored,
  writeJson as json,
  writeSafetensors,
} from '../kit/replica-kit.js';
import { SpoolGraph } from '../kit/spool-graph.js';

/** Bumped when a graph, the weights or the folder change: a cached folder of another version is rewritten. */
export const LAYA_REPLICA_VERSION = 2;
export const LAYA_REPLICA_SEED = 37;
export const LAYA_REPLICA_DIR = fileURLToPath(new URL('../../../models/generated/laya-replica/', import.meta.url));

/** A replica's shape: the encoder's config.json values and the decision head's sizes. */
export interface LayaShape {
  hidden: number;
  heads: number;
  /** The GeGLU MLP's width (Wi is [2·intermediate, hidden]). */
  intermediate: number;
  layers: number;
  /** Layer i is global when i % globalEvery = 0, else local (ModernBERT's global_attn_every_n_layers). */
  globalEvery: number;
  /** A local layer's query sees the keys with |i − j| ≤ localWindow / 2 (ModernBERT's local_attention). */
  localWindow: number;
  globalTheta: number;
  localTheta: number;
  /** Rows of the token embedding: the real vocabulary (the stand-in tokenizer's ids stay below it). */
  vocab: number;
  /** The stand-in tokenizer keeps its BPE's first `tokenizerBpe` ids, the specials right after. */
  tokenizerBpe: number;
  maxPositions: number;
  eps: number;
  headLayers: number;
  headFf: number;
  actHidden: number;
  /** rl_agent_config.json's max_len. */
  maxLen: number;
}

/** The stand-in tokenizer's full size: its BPE and 8 added tokens. */
const STAND_IN_VOCAB = LAYA_TEST_BPE + layaTestAdded().length;

/**
 * The shapes. The encoders' values are their public config.json's (ModernBERT-large; mmBERT-base,
 * whose local layers keep θ 160,000). The head's sizes are not published: the tiny replica's
 * proportions (a ReLU MLP of 4·hidden, an act head of 256) give the published totals, 421.2M for
 * ModernBERT-large (encoder 394.7M + head 26.5M; "421M") and 321.9M for mmBERT-base (306.9M +
 * 15.0M; "322M"), where an MLP of 2·hidden would give 412.8M and 317.2M.
 */
export const LAYA_SHAPES = {
  tiny: {
    hidden: 32,
    heads: 2,
    intermediate: 64,
    layers: 2,
    globalEvery: 3,
    localWindow: 128,
    globalTheta: 160_000,
    localTheta: 10_000,
    vocab: STAND_IN_VOCAB,
    tokenizerBpe: LAYA_TEST_BPE,
    maxPositions: 1024,
    eps: 1e-5,
    headLayers: 2,
    headFf: 128,
    actHidden: 256,
    maxLen: 1024,
  },
  // The exports run up to 1,024 tokens (laya-typed-decisions' max_len; laya en ships 512): the
  // graph has no position table, so 8,192 in config.json costs nothing. ModernBERT's 50,368 rows
  // are fewer than the stand-in's 151,651 ids: its BPE is cut to 50,279 ids (ModernBERT's own BPE
  // ends about there), the specials at 50,279–50,286; rows past them are never read, as
  // ModernBERT's padding rows.
  'modernbert-large': {
    hidden: 1024,
    heads: 16,
    intermediate: 2624,
    layers: 28,
    globalEvery: 3,
    localWindow: 128,
    globalTheta: 160_000,
    localTheta: 10_000,
    vocab: 50_368,
    tokenizerBpe: 50_279,
    maxPositions: 8192,
    eps: 1e-5,
    headLayers: 2,
    headFf: 4096,
    actHidden: 256,
    maxLen: 1024,
  },
  // mmBERT's Gemma vocabulary has 256,000 rows; the stand-in's ids stay below 151,651 (its
  // ModernBERT-style specials replace mmBERT's <bos> <eos> <mask> <pad>).
  'mmbert-base': {
    hidden: 768,
    heads: 12,
    intermediate: 1152,
    layers: 22,
    globalEvery: 3,
    localWindow: 128,
    globalTheta: 160_000,
    localTheta: 160_000,
    vocab: 256_000,
    tokenizerBpe: LAYA_TEST_BPE,
    maxPositions: 8192,
    eps: 1e-5,
    headLayers: 2,
    headFf: 3072,
    actHidden: 256,
    maxLen: 1024,
  },
} as const satisfies Record<string, LayaShape>;

export type LayaShapeName = keyof typeof LAYA_SHAPES;

/** The tiny replica's shape (the default). */
export const LAYA_REPLICA: LayaShape = LAYA_SHAPES.tiny;

/** What a folder can hold; only the flavors asked for are written. */
export type LayaFlavor = 'fp32' | 'fp16' | 'int8' | 'split' | 'safetensors';
export const LAYA_FLAVORS: readonly LayaFlavor[] = ['fp32', 'fp16', 'int8', 'split', 'safetensors'];

/**
 * The weights, in PyTorch's names and orientation (Linear [out, in]) as DecisionModel's
 * state dict has them (`encoder.` the ModernBERT model, `head.layers.*` nn.TransformerEncoderLayer),
 * in state-dict order. Scales keep activations O(1) and attention uneven, so a logit depends on
 * its marker's neighbours.
 */
function weightSpecs(s: LayaShape): Map<string, Spec> {
  const { hidden: H, intermediate: I, layers, headLayers, headFf, actHidden, vocab } = s;
  const w = new Map<string, Spec>();
  const linear = (name: string, out: number, inp: number, gain = 1): void => {
    w.set(name, { shape: [out, inp], std: gain / Math.sqrt(inp), mean: 0 });
  };
  const vector = (name: string, n: number, std: number, mean = 0): void => {
    w.set(name, { shape: [n], std, mean });
  };
  w.set('encoder.embeddings.tok_embeddings.weight', { shape: [vocab, H], std: 1, mean: 0 });
  vector('encoder.embeddings.norm.weight', H, 0.1, 1);
  for (let i = 0; i < layers; i++) {
    const p = `encoder.layers.${i}`;
    if (i > 0) vector(`${p}.attn_norm.weight`, H, 0.1, 1);
    linear(`${p}.attn.Wqkv.weight`, 3 * H, H, 2);
    linear(`${p}.attn.Wo.weight`, H, H);
    vector(`${p}.mlp_norm.weight`, H, 0.1, 1);
    linear(`${p}.mlp.Wi.weight`, 2 * I, H);
    linear(`${p}.mlp.Wo.weight`, H, I);
  }
  vector('encoder.final_norm.weight', H, 0.1, 1);
  w.set('type_emb.weight', { shape: [3, H], std: 1, mean: 0 });
  for (let i = 0; i < headLayers; i++) {
    const p = `head.layers.${i}`;
    linear(`${p}.self_attn.in_proj_weight`, 3 * H, H, 2);
    vector(`${p}.self_attn.in_proj_bias`, 3 * H, 0.1);
    linear(`${p}.self_attn.out_proj.weight`, H, H);
    vector(`${p}.self_attn.out_proj.bias`, H, 0.1);
    linear(`${p}.linear1.weight`, headFf, H);
    vector(`${p}.linear1.bias`, headFf, 0.1);
    linear(`${p}.linear2.weight`, H, headFf);
    vector(`${p}.linear2.bias`, H, 0.1);
    for (const n of ['norm1', 'norm2']) {
      vector(`${p}.${n}.weight`, H, 0.1, 1);
      vector(`${p}.${n}.bias`, H, 0.1);
    }
  }
  vector('scorer.0.weight', H, 0.1, 1);
  vector('scorer.0.bias', H, 0.1);
  linear('scorer.1.weight', H, H);
  vector('scorer.1.bias', H, 0.1);
  linear('scorer.3.weight', 1, H, 3);
  vector('scorer.3.bias', 1, 0.1);
  linear('act_head.0.weight', actHidden, H + 4);
  vector('act_head.0.bias', actHidden, 0.1);
  linear('act_head.2.weight', 2, actHidden);
  vector('act_head.2.bias', 2, 0.1);
  return w;
}

/** Parameter count of a shape (embedding included). */
export function layaParameters(shape: LayaShape): number {
  return parameterCount(weightSpecs(shape));
}

/** A graph's compute dtype: fp32, fp16, or fp32 with int8 Linears (dynamic quantization). */
type Dtype = 'fp32' | 'fp16' | 'int8';

/** The graph pieces' Net (replica-kit.ts) and the shape it builds. */
interface LayaNet extends Net {
  shape: LayaShape;
}

/**
 * A net of `dtype` for replica-kit's graph pieces: every weight generated when the graph adds it.
 * int8: the Linears through int8Product (the writer the synthetic decoders and the NLI replica
 * use), the embeddings and LayerNorms fp32.
 */
function net(g: GraphBuilder, shape: LayaShape, seed: number, dtype: Dtype): LayaNet {
  return {
    g,
    shape,
    w: generated(weightSpecs(shape), seed),
    half: dtype === 'fp16',
    quantized: dtype === 'int8',
    eps: shape.eps,
    added: new Set(),
  };
}

/** cos and sin [s, d] of rotary positions 0..s−1 (rotate-half layout: the frequencies twice). */
function rotaryTables(n: LayaNet, seqLen: string, theta: number, d: number): [string, string] {
  const { g } = n;
  const inv = Float32Array.from({ length: d / 2 }, (_, i) => 1 / Math.pow(theta, (2 * i) / d));
  const invName = g.initializer(g.fresh('inv_freq'), F, [d / 2], inv);
  const pos = cast(n, g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]), F);
  const freqs = g.op('Mul', [g.op('Unsqueeze', [pos, g.constI64([1])]), invName]);
  const emb = g.op('Concat', [freqs, freqs], { axis: { i: -1 } });
  const to = (x: string): string => (n.half ? cast(n, x, F16) : x);
  return [to(g.op('Cos', [emb])), to(g.op('Sin', [emb]))];
}

function rotate(n: LayaNet, x: string, cos: string, sin: string, d: number): string {
  const { g } = n;
  const [x1, x2] = g.node('Split', [x, g.constI64([d / 2, d / 2])], { outputs: 2, attrs: { axis: { i: -1 } } }) as [
    string,
    string,
  ];
  const rot = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: { i: -1 } });
  return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rot, sin])]);
}

/** The encoder: input_ids, attention_mask → last hidden state [b, s, H] in the net's dtype. */
function encoder(n: LayaNet, ids: string, mask: string): string {
  const { g } = n;
  const { hidden: H, heads, intermediate: I, layers, localWindow, globalEvery } = n.shape;
  const d = H / heads;
  const seqLen = g.op('Gather', [g.op('Shape', [ids]), g.constI64([1], [])], { axis: { i: 0 } });
  const valid = keysValid(n, mask);
  const globalBias = maskBias(n, valid);
  const idx = g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]);
  const dist = g.op('Abs', [g.op('Sub', [g.op('Unsqueeze', [idx, g.constI64([1])]), idx])]);
  const window = g.op('LessOrEqual', [dist, g.constI64([localWindow / 2], [])]);
  const localBias = maskBias(n, g.op('And', [window, valid]));
  // One table per θ (mmBERT's local layers share the global θ).
  const tables = new Map<number, [string, string]>();
  const rotary = (theta: number): [string, string] => {
    let t = tables.get(theta);
    if (!t) tables.set(theta, (t = rotaryTables(n, seqLen, theta, d)));
    return t;
  };
  const globalRot = rotary(n.shape.globalTheta);
  const localRot = rotary(n.shape.localTheta);

  let x = g.op('Gather', [param(n, 'encoder.embeddings.tok_embeddings.weight'), ids], { axis: { i: 0 } });
  x = layerNorm(n, x, 'encoder.embeddings.norm.weight');
  for (let i = 0; i < layers; i++) {
    const p = `encoder.layers.${i}`;
    // ModernBERT: layers 0, n, 2n, … global (global_attn_every_n_layers = n), the others local.
    const isGlobal = i % globalEvery === 0;
    const [cos, sin] = isGlobal ? globalRot : localRot;
    const h = i === 0 ? x : layerNorm(n, x, `${p}.attn_norm.weight`);
    const qkv = linear(n, h, `${p}.attn.Wqkv.weight`);
    const parts = g.node('Split', [qkv, g.constI64([H, H, H])], { outputs: 3, attrs: { axis: { i: -1 } } });
    const [q, k, v] = parts.map((t) => splitHeads(n, t, heads, d)) as [string, string, string];
    const a = attend(
      n,
      rotate(n, q, cos, sin, d),
      rotate(n, k, cos, sin, d),
      v,
      isGlobal ? globalBias : localBias,
      heads,
      d,
    );
    x = g.op('Add', [x, linear(n, a, `${p}.attn.Wo.weight`)]);
    const m = linear(n, layerNorm(n, x, `${p}.mlp_norm.weight`), `${p}.mlp.Wi.weight`);
    const [input, gate] = g.node('Split', [m, g.constI64([I, I])], { outputs: 2, attrs: { axis: { i: -1 } } }) as [
      string,
      string,
    ];
    x = g.op('Add', [x, linear(n, g.op('Mul', [gelu(n, input), gate]), `${p}.mlp.Wo.weight`)]);
  }
  return layerNorm(n, x, 'encoder.final_norm.weight');
}

/** The decision head: hidden [b, s, H] (net dtype) and the marker inputs → logits, act_logits (f32). */
function head(n: LayaNet, hidden: string, pos: string, markerMask: string, qtype: string, mask: string): void {
  const { g } = n;
  const { hidden: H, headLayers } = n.shape;
  const heads = Math.max(1, Math.floor(H / 64));
  const d = H / heads;
  const bias = maskBias(n, keysValid(n, mask));
  const type = g.op('Unsqueeze', [
    g.op('Gather', [param(n, 'type_emb.weight'), qtype], { axis: { i: 0 } }),
    g.constI64([1]),
  ]);
  let h = g.op('Add', [hidden, type]);
  for (let i = 0; i < headLayers; i++) {
    const p = `head.layers.${i}`;
    const a = layerNorm(n, h, `${p}.norm1.weight`, `${p}.norm1.bias`);
    const qkv = linear(n, a, `${p}.self_attn.in_proj_weight`, `${p}.self_attn.in_proj_bias`);
    const parts = g.node('Split', [qkv, g.constI64([H, H, H])], { outputs: 3, attrs: { axis: { i: -1 } } });
    const [q, k, v] = parts.map((t) => splitHeads(n, t, heads, d)) as [string, string, string];
    const att = linear(
      n,
      attend(n, q, k, v, bias, heads, d),
      `${p}.self_attn.out_proj.weight`,
      `${p}.self_attn.out_proj.bias`,
    );
    h = g.op('Add', [h, att]);
    const f = layerNorm(n, h, `${p}.norm2.weight`, `${p}.norm2.bias`);
    const ff = g.op('Relu', [linear(n, f, `${p}.linear1.weight`, `${p}.linear1.bias`)]);
    h = g.op('Add', [h, linear(n, ff, `${p}.linear2.weight`, `${p}.linear2.bias`)]);
  }
  // Gather at the markers: h[b, max(pos, 0), :] (GatherElements over an index expanded to [b, k, H]).
  const one = g.constI64([1]);
  const at = g.op('Max', [pos, g.constI64([0], [])]);
  const shape = g.op('Concat', [g.op('Shape', [at]), g.constI64([H])], { axis: { i: 0 } });
  const index = g.op('Expand', [g.op('Unsqueeze', [at, g.constI64([2])]), shape]);
  const m = g.op('GatherElements', [h, index], { axis: { i: 1 } });
  let s = layerNorm(n, m, 'scorer.0.weight', 'scorer.0.bias');
  s = linear(n, gelu(n, linear(n, s, 'scorer.1.weight', 'scorer.1.bias')), 'scorer.3.weight', 'scorer.3.bias');
  let raw = g.op('Squeeze', [s, g.constI64([-1])]);
  if (n.half) raw = cast(n, raw, F);
  const logits = g.node('Where', [markerMask, raw, g.scalarF32(MASKED)], { outputs: ['logits'] })[0]!;

  // The act features, in f32 (the authors compute them from the f32 logits).
  const p = g.op('Softmax', [logits], { axis: { i: -1 } });
  const count = g.op('ReduceSum', [cast(n, markerMask, F), g.constI64([-1])], { keepdims: { i: 1 } });
  const k = g.op('Max', [count, g.scalarF32(2)]);
  const plogp = g.op('Mul', [p, g.op('Log', [g.op('Max', [p, g.scalarF32(1e-9)])])]);
  const ent = g.op('Div', [
    g.op('Neg', [g.op('ReduceSum', [plogp, g.constI64([-1])], { keepdims: { i: 1 } })]),
    g.op('Log', [k]),
  ]);
  // top-2 of p with a zero appended: a single marker's second is 0, as the authors pad it.
  const zero = g.op('Mul', [g.op('Slice', [p, g.constI64([0]), one, g.constI64([-1])]), g.scalarF32(0)]);
  const [top] = g.node('TopK', [g.op('Concat', [p, zero], { axis: { i: -1 } }), g.constI64([2])], {
    outputs: 2,
    attrs: { axis: { i: -1 } },
  }) as [string, string];
  const top1 = g.op('Slice', [top, g.constI64([0]), one, g.constI64([-1])]);
  const top2 = g.op('Slice', [top, one, g.constI64([2]), g.constI64([-1])]);
  const feats = [top1, g.op('Sub', [top1, top2]), ent, g.op('Div', [k, g.scalarF32(255)])];
  let pooled = g.op('Squeeze', [g.op('Gather', [h, g.constI64([0])], { axis: { i: 1 } }), one]);
  if (n.half) pooled = cast(n, pooled, F);
  let act = g.op('Concat', [pooled, ...feats], { axis: { i: -1 } });
  if (n.half) act = cast(n, act, F16);
  act = linear(
    n,
    gelu(n, linear(n, act, 'act_head.0.weight', 'act_head.0.bias')),
    'act_head.2.weight',
    'act_head.2.bias',
  );
  g.node(n.half ? 'Cast' : 'Identity', [act], { outputs: ['act_logits'], attrs: n.half ? { to: { i: F } } : {} });
}

const SAVE = {
  opset: 18,
  producer: 'assay-laya-replica',
  docString: 'Laya replica: random weights, MEANINGLESS answers.',
};

function markerInputs(g: GraphBuilder): [string, string, string] {
  return [
    g.input('marker_pos', I64, ['batch_size', 'num_markers']),
    g.input('marker_mask', DataType.BOOL, ['batch_size', 'num_markers']),
    g.input('qtype', I64, ['batch_size']),
  ];
}

function markerOutputs(g: GraphBuilder): void {
  g.output('logits', F, ['batch_size', 'num_markers']);
  g.output('act_logits', F, ['batch_size', 2]);
}

/**
 * A builder for `file`: its large weights go to `external` (a data file beside it) as they are
 * added, or without one to a spool beside it, inlined on save (SpoolGraph).
 */
function builder(name: string, file: string, external?: string): GraphBuilder {
  return external
    ? new GraphBuilder(name, { path: join(dirname(file), external), location: external })
    : new SpoolGraph(name, `${file}.spool`);
}

/** Builds a graph with `build` and saves it; on failure closes (and for a spool removes) its scratch file. */
function writeGraph(g: GraphBuilder, file: string, build: () => void): void {
  try {
    build();
    g.save(file, SAVE);
  } catch (e) {
    g.abort();
    throw e;
  }
}

/** The single graph: fp32 with external data; fp16 or int8 inline. */
function writeSingle(file: string, shape: LayaShape, seed: number, dtype: Dtype, external?: string): void {
  const g = builder('main_graph', file, external);
  writeGraph(g, file, () => {
    const n = net(g, shape, seed, dtype);
    const ids = g.input('input_ids', I64, ['batch_size', 'sequence_length']);
    const mask = g.input('attention_mask', I64, ['batch_size', 'sequence_length']);
    const [pos, markerMask, qtype] = markerInputs(g);
    markerOutputs(g);
    head(n, encoder(n, ids, mask), pos, markerMask, qtype, mask);
  });
}

/**
 * The split export, fp32: encoder.onnx (→ last_hidden_state) and head.onnx (hidden_states →
 * logits). At the real sizes the encoder's weights (1.2–1.6 GB) go to encoder.onnx_data, as the
 * single graph's do; the tiny replica's stay inline.
 */
function writeSplit(dir: string, shape: LayaShape, seed: number): void {
  const { hidden: H } = shape;
  const file = join(dir, 'encoder.onnx');
  const e = builder('encoder', file, shape === LAYA_SHAPES.tiny ? undefined : 'encoder.onnx_data');
  writeGraph(e, file, () => {
    const en = net(e, shape, seed, 'fp32');
    const ids = e.input('input_ids', I64, ['batch_size', 'sequence_length']);
    const mask = e.input('attention_mask', I64, ['batch_size', 'sequence_length']);
    e.output('last_hidden_state', F, ['batch_size', 'sequence_length', H]);
    e.node('Identity', [encoder(en, ids, mask)], { outputs: ['last_hidden_state'] });
  });

  const headFile = join(dir, 'head.onnx');
  const h = builder('head', headFile);
  writeGraph(h, headFile, () => {
    const hn = net(h, shape, seed, 'fp32');
    const hidden = h.input('hidden_states', F, ['batch_size', 'sequence_length', H]);
    const [pos, markerMask, qtype] = markerInputs(h);
    const hmask = h.input('attention_mask', I64, ['batch_size', 'sequence_length']);
    markerOutputs(h);
    head(hn, hidden, pos, markerMask, qtype, hmask);
  });
}

/** rl_agent_config.json of the tiny replica: limits, head size, calibration (choice:11+ 0.1006 is outside the clamp). */
export const LAYA_REPLICA_AGENT_CONFIG = {
  encoder: 'assay/laya-replica (synthetic ModernBERT-like, random weights)',
  max_len: 1024,
  head_max_len: 192,
  head_layers: LAYA_REPLICA.headLayers,
  act_costs: { abstain: 0.1 },
  temperature: [1.3, 0.9, 1.1],
  temperature_by_options: {
    'choice:2': 1.2,
    'choice:3-5': 1.4,
    'choice:6-10': 1.6,
    'choice:11+': 0.1006,
    'score:3-5': 0.8,
    'noul:2': 1.05,
  },
};

/** The flavors a call writes when it names none: all of them for the tiny replica, fp32 at the real sizes. */
function defaultFlavors(shape: LayaShapeName): readonly LayaFlavor[] {
  return shape === 'tiny' ? LAYA_FLAVORS : ['fp32'];
}

/** Writes `flavors` of the replica into `out` (which holds an onnx/ folder). */
function writeFlavors(
  out: string,
  seed: number,
  name: LayaShapeName,
  flavors: readonly LayaFlavor[],
  log: (line: string) => void,
): void {
  const shape = LAYA_SHAPES[name];
  const onnxDir = join(out, 'onnx');
  for (const flavor of LAYA_FLAVORS.filter((f) => flavors.includes(f))) {
    const t0 = performance.now();
    switch (flavor) {
      case 'fp32':
        writeSingle(join(onnxDir, 'model.onnx'), shape, seed, 'fp32', 'model.onnx_data');
        break;
      case 'fp16':
        writeSingle(join(onnxDir, 'model_fp16.onnx'), shape, seed, 'fp16');
        break;
      case 'int8': {
        const file = join(onnxDir, 'model_quantized.onnx');
        writeSingle(file, shape, seed, 'int8');
        // The exports ship the same int8 graph under both names: one file, two links.
        try {
          linkSync(file, join(onnxDir, 'model_int8.onnx'));
        } catch {
          copyFileSync(file, join(onnxDir, 'model_int8.onnx'));
        }
        break;
      }
      case 'split':
        writeSplit(onnxDir, shape, seed);
        break;
      case 'safetensors': {
        const specs = weightSpecs(shape);
        writeSafetensors(join(out, 'weights.safetensors'), specs, generated(specs, seed), {
          format: 'pt',
          seed: String(seed),
        });
        break;
      }
    }
    log(`laya-${name} ${flavor}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
}

/** The replica at `name` for replica-kit's flavored folders: its files, flavors and assay.json. */
function layaReplica(seed: number, name: LayaShapeName, log: (line: string) => void): FlavoredReplica<LayaFlavor> {
  const c = LAYA_SHAPES[name];
  return {
    version: LAYA_REPLICA_VERSION,
    seed,
    shape: name,
    all: LAYA_FLAVORS,
    stamp: (flavors) => ({
      synthetic: true,
      family: 'laya',
      generator: 'laya-replica',
      generator_version: LAYA_REPLICA_VERSION,
      seed,
      shape: name,
      flavors,
      warning: 'random weights: the answers are MEANINGLESS',
    }),
    writeFlavors: (out, flavors) => {
      mkdirSync(join(out, 'onnx'), { recursive: true });
      writeFlavors(out, seed, name, flavors, log);
    },
    writeCommon: (out) => {
      const tokDir = join(out, 'tokenizer');
      writeLayaTestTokenizer(tokDir, c.tokenizerBpe);
      json(join(tokDir, 'special_tokens_map.json'), {
        cls_token: '[CLS]',
        mask_token: '[MASK]',
        pad_token: '[PAD]',
        sep_token: '[SEP]',
        unk_token: '[UNK]',
      });
      const added = layaTestAdded(c.tokenizerBpe);
      const tokenId = (content: string): number => added.find((t) => t.content === content)!.id;
      json(join(out, 'config.json'), {
        architectures: ['ModernBertModel'],
        model_type: 'modernbert',
        hidden_size: c.hidden,
        intermediate_size: c.intermediate,
        num_hidden_layers: c.layers,
        num_attention_heads: c.heads,
        vocab_size: c.vocab,
        max_position_embeddings: c.maxPositions,
        global_attn_every_n_layers: c.globalEvery,
        local_attention: c.localWindow,
        global_rope_theta: c.globalTheta,
        local_rope_theta: c.localTheta,
        hidden_activation: 'gelu',
        norm_eps: c.eps,
        norm_bias: false,
        attention_bias: false,
        mlp_bias: false,
        cls_token_id: tokenId('[CLS]'),
        sep_token_id: tokenId('[SEP]'),
        pad_token_id: tokenId('[PAD]'),
        mask_token_id: tokenId('[MASK]'),
        torch_dtype: 'float32',
      });
      json(join(out, 'rl_agent_config.json'), {
        ...LAYA_REPLICA_AGENT_CONFIG,
        encoder:
          name === 'tiny'
            ? LAYA_REPLICA_AGENT_CONFIG.encoder
            : `assay/laya-${name} (synthetic ModernBERT-like, random weights)`,
        max_len: c.maxLen,
        head_layers: c.headLayers,
      });
    },
  };
}

/** Writes the replica's folder into `out` (created): the common files, `flavors`, and assay.json last. */
export function writeLayaReplica(
  out: string,
  seed = LAYA_REPLICA_SEED,
  name: LayaShapeName = 'tiny',
  flavors: readonly LayaFlavor[] = defaultFlavors(name),
  log: (line: string) => void = () => {},
): void {
  writeFlavored(layaReplica(seed, name, log), out, flavors);
}

/**
 * The replica's folder (default models/generated/laya-replica, the tiny shape with every flavor),
 * written once and reused while current. A current folder that lacks some of `flavors` gets just
 * those added; a folder of another version, seed or shape is rewritten.
 */
export function ensureLayaReplica(
  dir = LAYA_REPLICA_DIR,
  seed = LAYA_REPLICA_SEED,
  shape: LayaShapeName = 'tiny',
  flavors: readonly LayaFlavor[] = defaultFlavors(shape),
  log: (line: string) => void = () => {},
): string {
  return ensureFlavored(dir, layaReplica(seed, shape, log), flavors);
}

/** The folder of a shape: models/generated/laya-<shape>/. */
export function layaReplicaDir(shape: LayaShapeName): string {
  return join(GENERATED_DIR, `laya-${shape}`);
}

/**
 * The replica at `shape` with (at least) `flavors`, cached in models/generated/laya-<shape>/ and
 * written only when missing. At modernbert-large, fp32 is 1.69 GB and takes minutes to write.
 */
export function ensureLayaReplicaShape(
  shape: LayaShapeName,
  flavors: readonly LayaFlavor[] = defaultFlavors(shape),
  opts: { seed?: number; log?: (line: string) => void } = {},
): string {
  return ensureLayaReplica(layaReplicaDir(shape), opts.seed ?? LAYA_REPLICA_SEED, shape, flavors, opts.log);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [dir, shape = 'tiny', list] = process.argv.slice(2);
  const flavors = list?.split(',') as LayaFlavor[] | undefined;
  if (!dir || !(shape in LAYA_SHAPES) || flavors?.some((f) => !LAYA_FLAVORS.includes(f))) {
    console.error(
      `usage: npx tsx tools/families/laya/replica.ts DIR [${Object.keys(LAYA_SHAPES).join('|')} [${LAYA_FLAVORS.join(',')}]]`,
    );
    process.exit(2);
  }
  const name = shape as LayaShapeName;
  writeLayaReplica(resolve(dir), LAYA_REPLICA_SEED, name, flavors ?? defaultFlavors(name), (l) => console.log(l));
  console.log(`wrote the Laya replica (${shape}) to ${dir}`);
}
