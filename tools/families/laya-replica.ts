// A synthetic replica of a Laya decision model (development only, never packed): a tiny
// ModernBERT-like encoder with the authors' decision head (FAMILIES.md, "Head (DecisionModel)"),
// seeded random weights, written in the layout of the public ONNX exports so the engine's Laya
// runner can be built and tested offline. The answers are MEANINGLESS; the interface is real:
//   onnx/model.onnx + model.onnx_data   single graph, fp32, weights as external data
//   onnx/model_fp16.onnx                 the same graph in fp16 (logits and act_logits f32)
//   onnx/encoder.onnx, onnx/head.onnx   the split export (encoder → last_hidden_state → head)
//   tokenizer/                          the ModernBERT-special stand-in (laya-tokenizer.ts)
//   config.json, rl_agent_config.json   encoder config; limits and calibration (one temperature
//                                       outside [0.5, 5], as the shipped choice:11+ 0.1006)
//   weights.safetensors                 the same weights in PyTorch's names and orientation, for
//                                       the independent reference (tools/reference/laya_forward.py)
// I/O: input_ids i64[b,s], attention_mask i64[b,s], marker_pos i64[b,k], marker_mask bool[b,k],
// qtype i64[b] → logits f32[b,k] (masked slots −1e4), act_logits f32[b,2].
//
// The architecture (docs/families/laya-markers.md, "The replica"):
// - encoder (ModernBERT's design, no biases): token embedding → LayerNorm; per layer pre-LN
//   attention (layer 0 reads the embedding norm directly) with rotary positions 0..s−1, layer 0
//   global (θ 160,000), layer 1 local (|i − j| ≤ 64, θ 10,000), keys masked by attention_mask;
//   pre-LN GeGLU MLP (GELU(x·Wi[:I]) · x·Wi[I:]); final LayerNorm;
// - head: + type embedding[qtype]; 2 pre-LN transformer layers (1 head of H, biases, ReLU MLP 4H,
//   padded keys masked); gather at marker_pos (clamped ≥ 0); scorer LayerNorm → Linear → GELU →
//   Linear → one logit per marker, masked slots −1e4; act_logits = Linear → GELU → Linear over
//   [state at position 0, top1, top1 − top2, entropy / ln max(2, K), K / 255] of softmax(logits).
//
//   npx tsx tools/families/laya-replica.ts DIR     writes the folder
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DataType, GraphBuilder } from '../../src/internal.js';
import {
  attend,
  cast,
  ensureFolder,
  F,
  F16,
  gelu,
  I64,
  keysValid,
  layerNorm,
  linear,
  maskBias,
  MASKED,
  type Net,
  param,
  random,
  splitHeads,
  type Tensor,
  writeJson as json,
  writeSafetensors,
} from './replica-kit.js';
import { LAYA_TEST_ADDED, writeLayaTestTokenizer } from './laya-tokenizer.js';

/** Bumped when the graph or the weights change: a cached folder of another version is rewritten. */
export const LAYA_REPLICA_VERSION = 1;
export const LAYA_REPLICA_SEED = 37;
export const LAYA_REPLICA_DIR = fileURLToPath(new URL('../../models/generated/laya-replica/', import.meta.url));

/** The replica's shape (tiny; vocabulary of the stand-in tokenizer). */
export const LAYA_REPLICA = {
  hidden: 32,
  heads: 2,
  intermediate: 64,
  layers: 2,
  headLayers: 2,
  headFf: 128,
  actHidden: 256,
  vocab: Math.max(...LAYA_TEST_ADDED.map((t) => t.id)) + 1,
  maxPositions: 1024,
  localWindow: 128,
  globalTheta: 160_000,
  localTheta: 10_000,
  eps: 1e-5,
} as const;

/**
 * The weights, in PyTorch's names and orientation (Linear [out, in]) as DecisionModel's
 * state dict has them (`encoder.` the ModernBERT model, `head.layers.*` nn.TransformerEncoderLayer).
 * Scales keep activations O(1) and attention uneven, so a logit depends on its marker's neighbours.
 */
export function layaReplicaWeights(seed = LAYA_REPLICA_SEED): Map<string, Tensor> {
  const { hidden: H, intermediate: I, layers, headLayers, headFf, actHidden, vocab } = LAYA_REPLICA;
  const w = new Map<string, Tensor>();
  const linear = (name: string, out: number, inp: number, gain = 1): void => {
    w.set(name, random(seed, name, [out, inp], gain / Math.sqrt(inp)));
  };
  const vector = (name: string, n: number, std: number, mean = 0): void => {
    w.set(name, random(seed, name, [n], std, mean));
  };
  w.set(
    'encoder.embeddings.tok_embeddings.weight',
    random(seed, 'encoder.embeddings.tok_embeddings.weight', [vocab, H], 1),
  );
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
  w.set('type_emb.weight', random(seed, 'type_emb.weight', [3, H], 1));
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

/** cos and sin [s, d] of rotary positions 0..s−1 (rotate-half layout: the frequencies twice). */
function rotaryTables(n: Net, seqLen: string, theta: number, d: number): [string, string] {
  const { g } = n;
  const inv = Float32Array.from({ length: d / 2 }, (_, i) => 1 / Math.pow(theta, (2 * i) / d));
  const invName = g.initializer(g.fresh('inv_freq'), F, [d / 2], inv);
  const pos = cast(n, g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]), F);
  const freqs = g.op('Mul', [g.op('Unsqueeze', [pos, g.constI64([1])]), invName]);
  const emb = g.op('Concat', [freqs, freqs], { axis: { i: -1 } });
  const to = (x: string): string => (n.half ? cast(n, x, F16) : x);
  return [to(g.op('Cos', [emb])), to(g.op('Sin', [emb]))];
}

function rotate(n: Net, x: string, cos: string, sin: string, d: number): string {
  const { g } = n;
  const [x1, x2] = g.node('Split', [x, g.constI64([d / 2, d / 2])], { outputs: 2, attrs: { axis: { i: -1 } } }) as [
    string,
    string,
  ];
  const rot = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: { i: -1 } });
  return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rot, sin])]);
}

/** The encoder: input_ids, attention_mask → last hidden state [b, s, H] in the net's dtype. */
function encoder(n: Net, ids: string, mask: string): string {
  const { g } = n;
  const { hidden: H, heads, intermediate: I, layers, localWindow } = LAYA_REPLICA;
  const d = H / heads;
  const seqLen = g.op('Gather', [g.op('Shape', [ids]), g.constI64([1], [])], { axis: { i: 0 } });
  const valid = keysValid(n, mask);
  const globalBias = maskBias(n, valid);
  const idx = g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]);
  const dist = g.op('Abs', [g.op('Sub', [g.op('Unsqueeze', [idx, g.constI64([1])]), idx])]);
  const window = g.op('LessOrEqual', [dist, g.constI64([localWindow / 2], [])]);
  const localBias = maskBias(n, g.op('And', [window, valid]));
  const globalRot = rotaryTables(n, seqLen, LAYA_REPLICA.globalTheta, d);
  const localRot = rotaryTables(n, seqLen, LAYA_REPLICA.localTheta, d);

  let x = g.op('Gather', [param(n, 'encoder.embeddings.tok_embeddings.weight'), ids], { axis: { i: 0 } });
  x = layerNorm(n, x, 'encoder.embeddings.norm.weight');
  for (let i = 0; i < layers; i++) {
    const p = `encoder.layers.${i}`;
    // ModernBERT: every third layer is global, the others local (here: layer 0 global, layer 1 local).
    const isGlobal = i % 3 === 0;
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
function head(n: Net, hidden: string, pos: string, markerMask: string, qtype: string, mask: string): void {
  const { g } = n;
  const { hidden: H, headLayers } = LAYA_REPLICA;
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

/** The single graph (fp32 with external data, or fp16 inline). */
function writeSingle(file: string, w: Map<string, Tensor>, half: boolean, external?: string): void {
  const g = new GraphBuilder(
    'main_graph',
    external ? { path: join(dirname(file), external), location: external } : undefined,
  );
  const n: Net = { g, w, half, eps: LAYA_REPLICA.eps, added: new Set() };
  const ids = g.input('input_ids', I64, ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', I64, ['batch_size', 'sequence_length']);
  const [pos, markerMask, qtype] = markerInputs(g);
  markerOutputs(g);
  head(n, encoder(n, ids, mask), pos, markerMask, qtype, mask);
  g.save(file, SAVE);
}

/** The split export: encoder.onnx (→ last_hidden_state) and head.onnx (hidden_states → logits), fp32. */
function writeSplit(dir: string, w: Map<string, Tensor>): void {
  const { hidden: H } = LAYA_REPLICA;
  const e = new GraphBuilder('encoder');
  const en: Net = { g: e, w, half: false, eps: LAYA_REPLICA.eps, added: new Set() };
  const ids = e.input('input_ids', I64, ['batch_size', 'sequence_length']);
  const mask = e.input('attention_mask', I64, ['batch_size', 'sequence_length']);
  e.output('last_hidden_state', F, ['batch_size', 'sequence_length', H]);
  e.node('Identity', [encoder(en, ids, mask)], { outputs: ['last_hidden_state'] });
  e.save(join(dir, 'encoder.onnx'), SAVE);

  const h = new GraphBuilder('head');
  const hn: Net = { g: h, w, half: false, eps: LAYA_REPLICA.eps, added: new Set() };
  const hidden = h.input('hidden_states', F, ['batch_size', 'sequence_length', H]);
  const [pos, markerMask, qtype] = markerInputs(h);
  const hmask = h.input('attention_mask', I64, ['batch_size', 'sequence_length']);
  markerOutputs(h);
  head(hn, hidden, pos, markerMask, qtype, hmask);
  h.save(join(dir, 'head.onnx'), SAVE);
}

/** rl_agent_config.json: limits, head size, calibration (choice:11+ 0.1006 is outside the clamp). */
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

function tokenId(content: string): number {
  return LAYA_TEST_ADDED.find((t) => t.content === content)!.id;
}

/** Writes the replica's folder into `out` (created). */
export function writeLayaReplica(out: string, seed = LAYA_REPLICA_SEED): void {
  const w = layaReplicaWeights(seed);
  const onnxDir = join(out, 'onnx');
  mkdirSync(onnxDir, { recursive: true });
  writeSingle(join(onnxDir, 'model.onnx'), w, false, 'model.onnx_data');
  writeSingle(join(onnxDir, 'model_fp16.onnx'), w, true);
  writeSplit(onnxDir, w);
  const tokDir = join(out, 'tokenizer');
  writeLayaTestTokenizer(tokDir);
  json(join(tokDir, 'special_tokens_map.json'), {
    cls_token: '[CLS]',
    mask_token: '[MASK]',
    pad_token: '[PAD]',
    sep_token: '[SEP]',
    unk_token: '[UNK]',
  });
  const c = LAYA_REPLICA;
  json(join(out, 'config.json'), {
    architectures: ['ModernBertModel'],
    model_type: 'modernbert',
    hidden_size: c.hidden,
    intermediate_size: c.intermediate,
    num_hidden_layers: c.layers,
    num_attention_heads: c.heads,
    vocab_size: c.vocab,
    max_position_embeddings: c.maxPositions,
    global_attn_every_n_layers: 3,
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
  json(join(out, 'rl_agent_config.json'), LAYA_REPLICA_AGENT_CONFIG);
  writeSafetensors(join(out, 'weights.safetensors'), w, { format: 'pt', seed: String(seed) });
  // Written last: its presence means the folder is complete.
  json(join(out, 'assay.json'), {
    synthetic: true,
    family: 'laya',
    generator: 'laya-replica',
    generator_version: LAYA_REPLICA_VERSION,
    seed,
    warning: 'random weights: the answers are MEANINGLESS',
  });
}

/** The replica's folder (default models/generated/laya-replica), written once and reused while current. */
export function ensureLayaReplica(dir = LAYA_REPLICA_DIR, seed = LAYA_REPLICA_SEED): string {
  return ensureFolder(dir, LAYA_REPLICA_VERSION, seed, (out) => writeLayaReplica(out, seed));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const dir = process.argv[2];
  if (!dir) {
    console.error('usage: npx tsx tools/families/laya-replica.ts DIR');
    process.exit(2);
  }
  writeLayaReplica(resolve(dir));
  console.log(`wrote the Laya replica to ${dir}`);
}
