// A tiny causal transformer in the published exports' conventions, for the replicas of the
// causal-row families with a gathered-position head (kev-pointer, decision-endpoint,
// decider-slots, arbiter-fixed; development only, never packed):
// - `input_ids` i64[rows, seq] and NO attention-mask input: the causal mask is built in the graph
//   (key j is seen from query i when j <= i), so tokens to the right of a position never reach it
//   and right padding is inert by construction;
// - positions 0..seq-1 implicit (a learned table here, rotary in the real bases);
// - a head over the final hidden states gathered at named position inputs (i64[rows] or
//   i64[rows, k]), plugged in by the family (`CausalHead`): a pointer head, a slot head, a fixed
//   linear, an endpoint head;
// - every weight matrix as BF16 in external data next to the graph (`model.onnx_data`) with a
//   Cast to fp32 in the graph, as the published exports store their base weights; vectors (norms,
//   biases) inline in fp32. The random weights are drawn, then rounded to BF16, so the numpy
//   reference (tools/reference/causal_forward.py, which reads the same bytes) computes in fp32 /
//   fp64 from exactly the values the graph casts.
// Blocks (pre-norm): x = tok[id] + pos[j]; per layer x += o(attn(LN1 x)), x += down(gelu(up(LN2 x)));
// hidden = LN_f(x). Attention: heads of q, k, v (biases), softmax(q·kᵀ/√d + causal) · v.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataType, GraphBuilder } from '../../src/internal.js';
import { random, type Tensor } from './replica-kit.js';

export const F32 = DataType.FLOAT;
export const BF16 = DataType.BFLOAT16;
export const I64 = DataType.INT64;

/** The trunk's shape. */
export interface CausalShape {
  vocab: number;
  /** Rows of the position table: the longest row the graph takes. */
  positions: number;
  hidden: number;
  heads: number;
  intermediate: number;
  layers: number;
  eps: number;
}

/** A weight: its PyTorch shape (Linear [out, in]) and distribution; `bf16` matrices go to external data. */
export interface CausalSpec {
  shape: number[];
  std: number;
  mean?: number;
}

/** A float's nearest BF16 (round to nearest even), back as a float. */
export function bf16Round(data: Float32Array): Float32Array {
  const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
  const out = new Uint32Array(data.length);
  for (let i = 0; i < u.length; i++) {
    const x = u[i]!;
    out[i] = ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) << 16;
  }
  return new Float32Array(out.buffer);
}

/** BF16 bytes (the high halves) of floats already rounded to BF16. */
function bf16Bytes(data: Float32Array): Uint8Array {
  const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
  // A loop, not Uint16Array.from(u, f): that collects the values in a plain array first, which a
  // published size's embedding (hundreds of millions of numbers) does not fit.
  const out = new Uint16Array(u.length);
  for (let i = 0; i < u.length; i++) out[i] = u[i]! >>> 16;
  return new Uint8Array(out.buffer);
}

/** The trunk's weights, in the Qwen-style PyTorch names. */
export function trunkSpecs(s: CausalShape): Map<string, CausalSpec> {
  const w = new Map<string, CausalSpec>();
  const H = s.hidden;
  const lin = (name: string, out: number, inp: number, gain = 1, bias = true) => {
    w.set(`${name}.weight`, { shape: [out, inp], std: gain / Math.sqrt(inp) });
    if (bias) w.set(`${name}.bias`, { shape: [out], std: 0.1 });
  };
  const norm = (name: string) => {
    w.set(`${name}.weight`, { shape: [H], std: 0.1, mean: 1 });
    w.set(`${name}.bias`, { shape: [H], std: 0.1 });
  };
  w.set('model.embed_tokens.weight', { shape: [s.vocab, H], std: 1 });
  w.set('model.embed_positions.weight', { shape: [s.positions, H], std: 0.5 });
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    norm(`${p}.input_layernorm`);
    lin(`${p}.self_attn.q_proj`, H, H, 2);
    lin(`${p}.self_attn.k_proj`, H, H, 2);
    lin(`${p}.self_attn.v_proj`, H, H);
    lin(`${p}.self_attn.o_proj`, H, H, 1, false);
    norm(`${p}.post_attention_layernorm`);
    lin(`${p}.mlp.up_proj`, s.intermediate, H);
    lin(`${p}.mlp.down_proj`, H, s.intermediate, 1, false);
  }
  norm('model.norm');
  return w;
}

/** The weights of `specs`, drawn from `seed` (each its own stream), matrices rounded to BF16. */
export function drawWeights(specs: ReadonlyMap<string, CausalSpec>, seed: number): Map<string, Tensor> {
  const lazy = lazyWeights(specs, seed);
  return new Map([...specs.keys()].map((name) => [name, lazy.get(name)!]));
}

/** The weights a graph is built from: a Map, or drawn one by one as the graph asks (`lazyWeights`). */
export type CausalWeights = Pick<ReadonlyMap<string, Tensor>, 'get' | 'has'>;

/**
 * The weights of `specs` as `drawWeights` draws them (the same values), each drawn when the graph
 * asks for it and not kept: a replica at a published size is written without holding its weights.
 */
export function lazyWeights(specs: ReadonlyMap<string, CausalSpec>, seed: number): CausalWeights {
  return {
    has: (name) => specs.has(name),
    get(name) {
      const spec = specs.get(name);
      if (!spec) return undefined;
      const t = random(seed, name, spec.shape, spec.std, spec.mean ?? 0);
      return spec.shape.length >= 2 ? { shape: t.shape, data: bf16Round(t.data) } : t;
    },
  };
}

/** What a head builds on: the graph, the weights (cast to fp32 once each) and the gathers. */
export class CausalNet {
  private readonly casts = new Map<string, string>();

  constructor(
    readonly g: GraphBuilder,
    readonly w: CausalWeights,
    readonly shape: CausalShape,
    readonly inputIds: string,
  ) {}

  /** A weight as an fp32 tensor: a matrix stored BF16 (external data) and Cast, a vector fp32 inline. */
  weight(name: string): string {
    const done = this.casts.get(name);
    if (done) return done;
    const t = this.w.get(name);
    if (!t) throw new Error(`no weight ${name}`);
    let out: string;
    if (t.shape.length >= 2) {
      this.g.initializer(name, BF16, t.shape, bf16Bytes(t.data));
      out = this.g.op('Cast', [name], { to: { i: F32 } });
    } else out = this.g.initializer(name, F32, t.shape, t.data);
    this.casts.set(name, out);
    return out;
  }

  /** x · Wᵀ (+ b) for the Linear `name` (weight [out, in]). */
  linear(x: string, name: string): string {
    const wt = this.g.op('Transpose', [this.weight(`${name}.weight`)], { perm: { ints: [1, 0] } });
    const y = this.g.op('MatMul', [x, wt]);
    return this.w.has(`${name}.bias`) ? this.g.op('Add', [y, this.weight(`${name}.bias`)]) : y;
  }

  layerNorm(x: string, name: string): string {
    return this.g.op('LayerNormalization', [x, this.weight(`${name}.weight`), this.weight(`${name}.bias`)], {
      axis: { i: -1 },
      epsilon: { f: this.shape.eps },
    });
  }

  gelu(x: string): string {
    const { g } = this;
    const erf = g.op('Erf', [g.op('Mul', [x, g.scalarF32(Math.SQRT1_2)])]);
    return g.op('Mul', [g.op('Mul', [x, g.scalarF32(0.5)]), g.op('Add', [erf, g.scalarF32(1)])]);
  }

  /** input_ids' dimension `axis` as a 0-d i64. */
  dim(axis: number): string {
    return this.g.op('Gather', [this.g.op('Shape', [this.inputIds]), this.g.constI64([axis], [])], { axis: { i: 0 } });
  }

  /** The hidden states [rows, seq, H] at positions `pos` (i64[rows] → [rows, H]; i64[rows, k] → [rows, k, H]). */
  gather(hidden: string, pos: string, perRow: 1 | 'k'): string {
    const { g } = this;
    const flat = g.op('Reshape', [hidden, g.constI64([-1, this.shape.hidden])]);
    const starts = g.op('Mul', [g.op('Range', [g.constI64([0], []), this.dim(0), g.constI64([1], [])]), this.dim(1)]);
    const offsets = perRow === 1 ? starts : g.op('Unsqueeze', [starts, g.constI64([1])]);
    return g.op('Gather', [flat, g.op('Add', [pos, offsets])], { axis: { i: 0 } });
  }
}

/** The trunk: input_ids → final hidden states [rows, seq, H], causal. */
export function causalTrunk(n: CausalNet): string {
  const { g, shape } = n;
  const { hidden: H, heads } = shape;
  const d = H / heads;
  const seq = n.dim(1);
  const r = g.op('Range', [g.constI64([0], []), seq, g.constI64([1], [])]);
  const tok = g.op('Gather', [n.weight('model.embed_tokens.weight'), n.inputIds], { axis: { i: 0 } });
  const pos = g.op('Gather', [n.weight('model.embed_positions.weight'), r], { axis: { i: 0 } });
  let x = g.op('Add', [tok, pos]);
  // The causal mask [seq, seq]: key j is seen from query i when j <= i; others get -1e4 (exp → 0).
  const keys = g.op('Unsqueeze', [r, g.constI64([0])]);
  const queries = g.op('Unsqueeze', [r, g.constI64([1])]);
  const allowed = g.op('LessOrEqual', [keys, queries]);
  const bias = g.op('Where', [allowed, g.scalarF32(0), g.scalarF32(-1e4)]);
  const split = (t: string) =>
    g.op('Transpose', [g.op('Reshape', [t, g.constI64([0, 0, heads, d])])], { perm: { ints: [0, 2, 1, 3] } });
  for (let i = 0; i < shape.layers; i++) {
    const p = `model.layers.${i}`;
    const h = n.layerNorm(x, `${p}.input_layernorm`);
    const q = split(n.linear(h, `${p}.self_attn.q_proj`));
    const k = split(n.linear(h, `${p}.self_attn.k_proj`));
    const v = split(n.linear(h, `${p}.self_attn.v_proj`));
    const kt = g.op('Transpose', [k], { perm: { ints: [0, 1, 3, 2] } });
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [q, kt]), g.scalarF32(1 / Math.sqrt(d))]), bias]);
    const ctx = g.op('MatMul', [g.op('Softmax', [scores], { axis: { i: -1 } }), v]);
    const merged = g.op('Reshape', [g.op('Transpose', [ctx], { perm: { ints: [0, 2, 1, 3] } }), g.constI64([0, 0, H])]);
    x = g.op('Add', [x, n.linear(merged, `${p}.self_attn.o_proj`)]);
    const m = n.linear(
      n.gelu(n.linear(n.layerNorm(x, `${p}.post_attention_layernorm`), `${p}.mlp.up_proj`)),
      `${p}.mlp.down_proj`,
    );
    x = g.op('Add', [x, m]);
  }
  return n.layerNorm(x, 'model.norm');
}

/** A family's head: its position inputs, then the outputs it computes from the hidden states. */
export interface CausalHead {
  /** Position inputs, by name: one per row ([rows]) or k per row ([rows, k]). */
  positions: Array<{ name: string; perRow: 1 | 'k' }>;
  /** The head's own weights (PyTorch names and shapes). */
  specs: Map<string, CausalSpec>;
  /** Builds the outputs (g.output + an Identity into each) from the hidden states and the gathered positions. */
  build(n: CausalNet, hidden: string, positions: Record<string, string>): void;
}

/** config.json of the replica: its shape in Hugging Face's field names (what causal_forward.py reads). */
export function causalConfig(s: CausalShape, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    architectures: ['CausalReplicaForDecision'],
    model_type: 'causal-replica',
    vocab_size: s.vocab,
    max_position_embeddings: s.positions,
    hidden_size: s.hidden,
    num_attention_heads: s.heads,
    intermediate_size: s.intermediate,
    num_hidden_layers: s.layers,
    layer_norm_eps: s.eps,
    torch_dtype: 'bfloat16',
    ...extra,
  };
}

/**
 * Writes `dir/model.onnx` with its weights in `dir/model.onnx_data` (BF16 matrices, 4 KiB aligned):
 * input_ids i64[rows, seq], the head's positions, the head's outputs.
 */
export function writeCausalGraph(
  dir: string,
  shape: CausalShape,
  head: CausalHead,
  w: CausalWeights,
  meta: { producer: string; docString: string },
): void {
  const g = new GraphBuilder('main_graph', { path: join(dir, 'model.onnx_data'), location: 'model.onnx_data' });
  try {
    const ids = g.input('input_ids', I64, ['rows', 'seq']);
    const positions = Object.fromEntries(
      head.positions.map((p) => [p.name, g.input(p.name, I64, p.perRow === 1 ? ['rows'] : ['rows', 'k'])]),
    );
    const n = new CausalNet(g, w, shape, ids);
    head.build(n, causalTrunk(n), positions);
    g.save(join(dir, 'model.onnx'), { opset: 20, ...meta });
  } catch (e) {
    g.abort();
    throw e;
  }
}

export function writeJsonFile(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}
