// A tiny causal transformer in ONNX with a pluggable head (development only, never packed): the
// trunk of the causal-row families' replicas (decision-endpoint, arbiter-fixed), written in the
// published exports' layout: `input_ids` i64[rows, seq] and the head's position inputs, no
// attention-mask input (the causal mask is built in the graph from the row length, so right
// padding never reaches a read position), the trunk's weights in BF16 entering through a Cast to
// fp32 (or fp32), large ones as external data next to the graph. The head reads the trunk's
// hidden states at gathered positions (GatherND, one batch dimension).
//
// The trunk (docs/families/decision-endpoint.md, "The replica"): token embedding (no position
// embedding: causal attention alone orders the tokens), `layers` pre-LayerNorm blocks of
// multi-head causal self-attention (biases) and a GELU MLP, each added to the residual, then a
// final LayerNorm. PyTorch names and orientation (Linear [out, in]) under `model.`; the numpy
// forward (tools/reference/endpoint_forward.py) reads the same names from weights.safetensors.
import { dirname, join } from 'node:path';
import { DataType, GraphBuilder } from '../../src/internal.js';
import * as kit from './replica-kit.js';
import type { Net, Spec, Tensor, WeightSource } from './replica-kit.js';

export interface CausalShape {
  hidden: number;
  heads: number;
  intermediate: number;
  layers: number;
  /** Rows of the embedding: at least the largest id a row holds, the pad id included. */
  vocab: number;
  eps: number;
}

/** A head over the trunk's hidden states [rows, seq, hidden]. */
export interface CausalHead {
  /** Its position inputs (i64), by name and dims. */
  inputs: ReadonlyArray<{ name: string; dims: Array<string | number> }>;
  output: { name: string; dims: Array<string | number> };
  /** Its weights (fp32, as the published heads are). */
  specs(hidden: number): Map<string, Spec>;
  /** Its output from the final hidden states and its inputs. */
  build(n: Net, hidden: string, inputs: Record<string, string>): string;
}

/** The trunk's weights, PyTorch's names and orientation; queries and keys at gain 2 (uneven attention). */
export function trunkSpecs(s: CausalShape): Map<string, Spec> {
  const w = new Map<string, Spec>();
  const H = s.hidden;
  const dense = (name: string, out: number, inp: number, gain = 1): void => {
    w.set(`${name}.weight`, { shape: [out, inp], std: gain / Math.sqrt(inp), mean: 0 });
    w.set(`${name}.bias`, { shape: [out], std: 0.1, mean: 0 });
  };
  const norm = (name: string): void => {
    w.set(`${name}.weight`, { shape: [H], std: 0.1, mean: 1 });
    w.set(`${name}.bias`, { shape: [H], std: 0.1, mean: 0 });
  };
  w.set('model.embed_tokens.weight', { shape: [s.vocab, H], std: 1, mean: 0 });
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    norm(`${p}.input_layernorm`);
    dense(`${p}.self_attn.q_proj`, H, H, 2);
    dense(`${p}.self_attn.k_proj`, H, H, 2);
    dense(`${p}.self_attn.v_proj`, H, H);
    dense(`${p}.self_attn.o_proj`, H, H);
    norm(`${p}.post_attention_layernorm`);
    dense(`${p}.mlp.up_proj`, s.intermediate, H);
    dense(`${p}.mlp.down_proj`, H, s.intermediate);
  }
  norm('model.norm');
  return w;
}

/** float32 → bfloat16 bits, round to nearest even. */
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);
function bf16Bits(x: number): number {
  F32[0] = x;
  const u = U32[0]!;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The values rounded to bfloat16 (exactly what the BF16 initializers hold, in fp32). */
export function bf16Rounded(t: Tensor): Tensor {
  const u = new Uint32Array(t.data.length);
  for (let i = 0; i < u.length; i++) u[i] = bf16Bits(t.data[i]!) << 16;
  return { shape: t.shape, data: new Float32Array(u.buffer) };
}

/** Every weight of a replica, the trunk's rounded to bfloat16 when `bf16` (the file and the graph then agree exactly). */
export function causalWeights(
  trunk: ReadonlyMap<string, Spec>,
  head: ReadonlyMap<string, Spec>,
  seed: number,
  bf16: boolean,
): Map<string, Tensor> {
  const w = new Map<string, Tensor>();
  const t = kit.generated(trunk, seed);
  for (const name of trunk.keys()) w.set(name, bf16 ? bf16Rounded(t.get(name)!) : t.get(name)!);
  const h = kit.generated(head, seed);
  for (const name of head.keys()) w.set(name, h.get(name)!);
  return w;
}

/** A trunk weight as a BF16 initializer and a Cast to fp32 named as the weight (Linear stored [in, out]). */
function bf16Weight(n: Net, name: string, transpose: boolean): void {
  const t = n.w.get(name)!;
  let data = t.data;
  let shape = t.shape;
  if (transpose) {
    const [out = 0, inp = 0] = t.shape;
    data = new Float32Array(t.data.length);
    for (let o = 0; o < out; o++) for (let i = 0; i < inp; i++) data[i * out + o] = t.data[o * inp + i]!;
    shape = [inp, out];
  }
  const bits = Uint16Array.from(data, bf16Bits);
  const raw = n.g.initializer(`${name}_bf16`, DataType.BFLOAT16, shape, new Uint8Array(bits.buffer));
  n.g.node('Cast', [raw], { outputs: [name], attrs: { to: { i: DataType.FLOAT } } });
  n.added.add(name);
}

/** The hidden states at one position per row ([rows] → [rows, hidden]) or k per row ([rows, k] → [rows, k, hidden]). */
export function gatherAt(n: Net, hidden: string, positions: string, rank: 1 | 2): string {
  const idx = n.g.op('Unsqueeze', [positions, n.g.constI64([rank])]);
  return n.g.op('GatherND', [hidden, idx], { batch_dims: { i: 1 } });
}

/** The trunk: input_ids → final hidden states [rows, seq, hidden]. */
function trunk(n: Net, s: CausalShape, ids: string): string {
  const { g } = n;
  const d = s.hidden / s.heads;
  const seqLen = g.op('Gather', [g.op('Shape', [ids]), g.constI64([1], [])], { axis: { i: 0 } });
  const steps = g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]);
  // key j is read by query i when j <= i: [seq, seq], broadcast over rows and heads
  const allowed = g.op('LessOrEqual', [
    g.op('Unsqueeze', [steps, g.constI64([0])]),
    g.op('Unsqueeze', [steps, g.constI64([1])]),
  ]);
  const causal = kit.maskBias(n, allowed);
  let x = g.op('Gather', [kit.param(n, 'model.embed_tokens.weight'), ids], { axis: { i: 0 } });
  const dense = (x: string, name: string) => kit.linear(n, x, `${name}.weight`, `${name}.bias`);
  const norm = (x: string, name: string) => kit.layerNorm(n, x, `${name}.weight`, `${name}.bias`);
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    const a = norm(x, `${p}.input_layernorm`);
    const proj = (which: string) => kit.splitHeads(n, dense(a, `${p}.self_attn.${which}_proj`), s.heads, d);
    const ctx = kit.attend(n, proj('q'), proj('k'), proj('v'), causal, s.heads, d);
    x = g.op('Add', [x, dense(ctx, `${p}.self_attn.o_proj`)]);
    const m = kit.gelu(n, dense(norm(x, `${p}.post_attention_layernorm`), `${p}.mlp.up_proj`));
    x = g.op('Add', [x, dense(m, `${p}.mlp.down_proj`)]);
  }
  return norm(x, 'model.norm');
}

/**
 * Writes the graph `file` (its weights ≥ 1 KiB in `external`, next to it): input_ids and the
 * head's inputs → the head's output. `bf16`: the trunk's weights stored as BF16 with a Cast each.
 */
export function writeCausalGraph(
  file: string,
  opts: { shape: CausalShape; head: CausalHead; weights: WeightSource; bf16: boolean; external: string; doc: string },
): void {
  const { shape, head, weights, bf16 } = opts;
  const g = new GraphBuilder('main_graph', { path: join(dirname(file), opts.external), location: opts.external });
  const n: Net = { g, w: weights, half: false, eps: shape.eps, added: new Set() };
  try {
    if (bf16)
      for (const name of trunkSpecs(shape).keys()) {
        const linear = name.endsWith('_proj.weight');
        bf16Weight(n, name, linear);
      }
    const ids = g.input('input_ids', kit.I64, ['rows', 'seq']);
    const inputs = Object.fromEntries(head.inputs.map((i) => [i.name, g.input(i.name, kit.I64, i.dims)]));
    g.output(head.output.name, kit.F, head.output.dims);
    g.node('Identity', [head.build(n, trunk(n, shape, ids), inputs)], { outputs: [head.output.name] });
    g.save(file, { opset: 18, producer: 'assay-causal-replica', docString: opts.doc });
  } catch (e) {
    g.abort();
    throw e;
  }
}
