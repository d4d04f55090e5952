// The graph of the causal-row replicas' trunk (causal-replica-kit.ts writes the folders): a tiny
// causal transformer in the published exports' conventions (development only, never packed).
// - `input_ids` i64[rows, seq] and NO attention-mask input: the causal mask is built in the graph
//   (key j is seen from query i when j <= i), so tokens to the right of a position never reach it
//   and right padding is inert by construction;
// - positions 0..seq-1 implicit (a learned table when the shape has one, rotary in the real bases);
// - the weights held as a `CausalStorage` says (BF16 in external data with a Cast to fp32 in the
//   graph, as the published exports store their base weights, or fp32);
// - a head's gathers of the final hidden states at its position inputs (`gather`, `gatherND`).
// Blocks (pre-norm): x = tok[id] (+ pos[j]); per layer x += o(attn(LN1 x)), x += down(gelu(up(LN2 x)));
// hidden = LN_f(x). Attention: heads of q, k, v (biases), softmax(q·kᵀ/√d + causal) · v.
// Each replica keeps the storage and node order its goldens were made with, so one replica's files
// keep their bytes when another's change: `KEV_STORAGE` (Kev, decider-slots), `endpointStorage`
// (Decision BF16, Arbiter fp32).
import { DataType, type GraphBuilder } from '../../../src/internal.js';
import * as kit from './replica-kit.js';
import { transposed, type Net, type Tensor } from './replica-kit.js';

export const F32 = DataType.FLOAT;
export const BF16 = DataType.BFLOAT16;
export const I64 = DataType.INT64;

/** The trunk's shape. */
export interface CausalShape {
  vocab: number;
  /** Rows of the learned position table (the longest row the graph takes); none: causal attention alone orders the tokens. */
  positions?: number;
  hidden: number;
  heads: number;
  intermediate: number;
  layers: number;
  eps: number;
}

/**
 * How a replica's graph holds its trunk:
 * - `weights`: 'bf16-at-use': matrices BF16 as PyTorch stores them ([out, in]), each Cast to fp32 and
 *   transposed where first used, vectors fp32; 'bf16-upfront': every trunk weight BF16, Linear
 *   weights stored [in, out] (the exporter's orientation), a Cast named as the weight, all declared
 *   before the graph's inputs; 'fp32': every weight fp32 where first used, Linear weights [in, out].
 *   Head weights outside the trunk: BF16 matrices under 'bf16-at-use', fp32 otherwise.
 * - `outputBiases`: o_proj and down_proj carry biases (q, k, v and up always do);
 * - `maskFirst`: the causal mask's nodes come before the embedding's (node order only);
 * - `opset`: the graph's ONNX opset.
 */
export interface CausalStorage {
  weights: 'bf16-at-use' | 'bf16-upfront' | 'fp32';
  outputBiases: boolean;
  maskFirst: boolean;
  opset: number;
}

/** Kev's and decider-slots' replicas. */
export const KEV_STORAGE: CausalStorage = { weights: 'bf16-at-use', outputBiases: false, maskFirst: false, opset: 20 };

/** Decision's (`bf16`) and Arbiter's (fp32) replicas. */
export function endpointStorage(bf16: boolean): CausalStorage {
  return { weights: bf16 ? 'bf16-upfront' : 'fp32', outputBiases: true, maskFirst: true, opset: 18 };
}

/** The weights a graph is built from: a Map, or drawn one by one as the graph asks (`lazyWeights`). */
export type CausalWeights = Pick<ReadonlyMap<string, Tensor>, 'get' | 'has'>;

/** BF16 bytes (the high halves) of floats already rounded to BF16. */
function bf16Bytes(data: Float32Array): Uint8Array {
  const u = new Uint32Array(data.buffer, data.byteOffset, data.length);
  // A loop, not Uint16Array.from(u, f): that collects the values in a plain array first, which a
  // published size's embedding (hundreds of millions of numbers) does not fit.
  const out = new Uint16Array(u.length);
  for (let i = 0; i < u.length; i++) out[i] = u[i]! >>> 16;
  return new Uint8Array(out.buffer);
}

/**
 * What a head builds on: the graph, the weights (each added once, as `storage` holds them) and the
 * gathers. A replica-kit `Net` too (fp32), so a head may use replica-kit's ops (fp32 weights at use).
 */
export class CausalNet implements Net {
  private readonly casts = new Map<string, string>();
  readonly half = false;
  readonly added = new Set<string>();

  constructor(
    readonly g: GraphBuilder,
    readonly w: CausalWeights,
    readonly shape: CausalShape,
    readonly inputIds: string,
    readonly storage: CausalStorage = KEV_STORAGE,
  ) {}

  get eps(): number {
    return this.shape.eps;
  }

  /** Every trunk weight BF16 with a Cast to fp32 named as the weight, Linear weights [in, out] ('bf16-upfront'). */
  declareUpfront(names: Iterable<string>): void {
    for (const name of names) {
      const t = this.w.get(name);
      if (!t) throw new Error(`no weight ${name}`);
      const stored = name.endsWith('_proj.weight') ? transposed(t) : t;
      const raw = this.g.initializer(`${name}_bf16`, BF16, stored.shape, bf16Bytes(stored.data));
      this.g.node('Cast', [raw], { outputs: [name], attrs: { to: { i: F32 } } });
      this.added.add(name);
    }
  }

  /** A weight as an fp32 tensor: under 'bf16-at-use', a matrix stored BF16 (external data) and Cast, a vector fp32 inline. */
  weight(name: string): string {
    if (this.storage.weights !== 'bf16-at-use') return kit.param(this, name);
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
    const bias = this.w.has(`${name}.bias`) ? `${name}.bias` : undefined;
    if (this.storage.weights !== 'bf16-at-use') return kit.linear(this, x, `${name}.weight`, bias);
    const wt = this.g.op('Transpose', [this.weight(`${name}.weight`)], { perm: { ints: [1, 0] } });
    const y = this.g.op('MatMul', [x, wt]);
    return bias ? this.g.op('Add', [y, this.weight(bias)]) : y;
  }

  layerNorm(x: string, name: string): string {
    return this.g.op('LayerNormalization', [x, this.weight(`${name}.weight`), this.weight(`${name}.bias`)], {
      axis: { i: -1 },
      epsilon: { f: this.shape.eps },
    });
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

  /** The graph's output `name` (fp32), the value `value`. */
  output(name: string, dims: Array<string | number>, value: string): void {
    this.g.output(name, F32, dims);
    this.g.node('Identity', [value], { outputs: [name] });
  }

  /** keys [rows, k, D] · query [rows, D] × scale → [rows, k]. */
  scaledDot(keys: string, query: string, scale: number): string {
    const { g } = this;
    const dot = g.op('MatMul', [keys, g.op('Unsqueeze', [query, g.constI64([2])])]); // [rows, k, 1]
    return g.op('Mul', [g.op('Squeeze', [dot, g.constI64([2])]), g.scalarF32(scale)]);
  }

  /** The same gather as one GatherND over the row dimension. */
  gatherND(hidden: string, pos: string, perRow: 1 | 'k'): string {
    const idx = this.g.op('Unsqueeze', [pos, this.g.constI64([perRow === 1 ? 1 : 2])]);
    return this.g.op('GatherND', [hidden, idx], { batch_dims: { i: 1 } });
  }
}

/** The trunk: input_ids → final hidden states [rows, seq, H], causal. */
export function causalTrunk(n: CausalNet): string {
  const { g, shape } = n;
  const { hidden: H, heads } = shape;
  const d = H / heads;
  const seq = n.dim(1);
  const r = g.op('Range', [g.constI64([0], []), seq, g.constI64([1], [])]);
  const embed = () => {
    const tok = g.op('Gather', [n.weight('model.embed_tokens.weight'), n.inputIds], { axis: { i: 0 } });
    if (!shape.positions) return tok;
    const pos = g.op('Gather', [n.weight('model.embed_positions.weight'), r], { axis: { i: 0 } });
    return g.op('Add', [tok, pos]);
  };
  // The causal mask [seq, seq]: key j is seen from query i when j <= i; others get -1e4 (exp → 0).
  const mask = () => {
    const keys = g.op('Unsqueeze', [r, g.constI64([0])]);
    const queries = g.op('Unsqueeze', [r, g.constI64([1])]);
    return kit.maskBias(n, g.op('LessOrEqual', [keys, queries]));
  };
  const bias = n.storage.maskFirst ? mask() : '';
  let x = embed();
  const causal = bias || mask();
  for (let i = 0; i < shape.layers; i++) {
    const p = `model.layers.${i}`;
    const h = n.layerNorm(x, `${p}.input_layernorm`);
    const proj = (which: string) => kit.splitHeads(n, n.linear(h, `${p}.self_attn.${which}_proj`), heads, d);
    const ctx = kit.attend(n, proj('q'), proj('k'), proj('v'), causal, heads, d);
    x = g.op('Add', [x, n.linear(ctx, `${p}.self_attn.o_proj`)]);
    const m = n.linear(
      kit.gelu(n, n.linear(n.layerNorm(x, `${p}.post_attention_layernorm`), `${p}.mlp.up_proj`)),
      `${p}.mlp.down_proj`,
    );
    x = g.op('Add', [x, m]);
  }
  return n.layerNorm(x, 'model.norm');
}
