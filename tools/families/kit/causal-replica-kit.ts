// The replicas of the causal-row families with a gathered-position head (kev-pointer,
// decision-endpoint, decider-slots, arbiter-fixed; development only, never packed): one trunk
// (causal-net.ts: a tiny causal transformer in the published exports' conventions, no attention-mask
// input, right padding inert by construction) under a head plugged in by the family (`CausalHead`:
// a pointer head, a slot head, a fixed linear, an endpoint head) over the final hidden states
// gathered at named position inputs (i64[rows] or i64[rows, k]). Here: the trunk's weights in
// Qwen-style PyTorch names, their random draws (rounded to BF16 where the graph stores BF16, so the
// numpy references, tools/families/kit/causal_forward.py and endpoint_forward.py, compute from
// exactly the values the graph casts), the graph's writer and the folder's JSON files.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { GraphBuilder } from '../../../src/internal.js';
import {
  CausalNet,
  causalTrunk,
  I64,
  KEV_STORAGE,
  type CausalShape,
  type CausalStorage,
  type CausalWeights,
} from './causal-net.js';
import { ensureFolder, random, writeSafetensors, type Tensor } from './replica-kit.js';

export * from './causal-net.js';

/** A weight: its PyTorch shape (Linear [out, in]) and distribution. */
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

/** Which weights a graph under `storage` holds as BF16 (the ones drawn rounded); `trunk`: the trunk's names. */
export function storedBf16(storage: CausalStorage, trunk: ReadonlyMap<string, CausalSpec>): Rounded {
  if (storage.weights === 'bf16-at-use') return (_, spec) => spec.shape.length >= 2;
  if (storage.weights === 'bf16-upfront') return (name) => trunk.has(name);
  return () => false;
}

/** Whether a weight is drawn rounded to BF16. */
export type Rounded = (name: string, spec: CausalSpec) => boolean;

/** The trunk's weights, in the Qwen-style PyTorch names. */
export function trunkSpecs(s: CausalShape, storage: CausalStorage = KEV_STORAGE): Map<string, CausalSpec> {
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
  if (s.positions) w.set('model.embed_positions.weight', { shape: [s.positions, H], std: 0.5 });
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    norm(`${p}.input_layernorm`);
    lin(`${p}.self_attn.q_proj`, H, H, 2);
    lin(`${p}.self_attn.k_proj`, H, H, 2);
    lin(`${p}.self_attn.v_proj`, H, H);
    lin(`${p}.self_attn.o_proj`, H, H, 1, storage.outputBiases);
    norm(`${p}.post_attention_layernorm`);
    lin(`${p}.mlp.up_proj`, s.intermediate, H);
    lin(`${p}.mlp.down_proj`, H, s.intermediate, 1, storage.outputBiases);
  }
  norm('model.norm');
  return w;
}

/** The weights of `specs`, drawn from `seed` (each its own stream), `rounded` ones (default: matrices) rounded to BF16. */
export function drawWeights(
  specs: ReadonlyMap<string, CausalSpec>,
  seed: number,
  rounded?: Rounded,
): Map<string, Tensor> {
  const lazy = lazyWeights(specs, seed, rounded);
  return new Map([...specs.keys()].map((name) => [name, lazy.get(name)!]));
}

/**
 * The weights of `specs` as `drawWeights` draws them (the same values), each drawn when the graph
 * asks for it and not kept: a replica at a published size is written without holding its weights.
 */
export function lazyWeights(
  specs: ReadonlyMap<string, CausalSpec>,
  seed: number,
  rounded: Rounded = (_, spec) => spec.shape.length >= 2,
): CausalWeights {
  return {
    has: (name) => specs.has(name),
    get(name) {
      const spec = specs.get(name);
      if (!spec) return undefined;
      const t = random(seed, name, spec.shape, spec.std, spec.mean ?? 0);
      return rounded(name, spec) ? { shape: t.shape, data: bf16Round(t.data) } : t;
    },
  };
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

/**
 * The published bases' sizes (their config.json: hidden, layers, heads; the 2-matrix MLP 1.5 × the
 * base's SwiGLU width, so that its two matrices hold the three matrices' parameters): a replica at
 * one of them costs per token what the base does (the trunk is not Qwen's: learned or no positions,
 * LayerNorm and GELU, every layer full attention).
 */
export const CAUSAL_BASE_SIZES = {
  'qwen2.5-0.5b': { hidden: 896, heads: 14, intermediate: 1.5 * 4864, layers: 24 },
  'qwen3.5-0.8b': { hidden: 1024, heads: 8, intermediate: 1.5 * 3584, layers: 24 },
} as const;
export type CausalSize = keyof typeof CAUSAL_BASE_SIZES;

/** A tiny replica's shape at each base's size (its vocabulary, positions and eps kept). */
export function sizedShapes<S extends CausalShape>(tiny: S): Record<CausalSize, S> {
  const sized = (size: CausalSize): S => ({ ...tiny, ...CAUSAL_BASE_SIZES[size] });
  return { 'qwen2.5-0.5b': sized('qwen2.5-0.5b'), 'qwen3.5-0.8b': sized('qwen3.5-0.8b') };
}

/** A replica folder at a base's size (assay.json's `size` says which), written once by `write`. */
export function ensureSizedFolder(
  dir: string,
  stamp: { version: number; seed: number; size: CausalSize; what: string },
  write: (out: string) => void,
  log?: (line: string) => void,
): string {
  const { version, seed, size, what } = stamp;
  return ensureFolder(
    dir,
    version,
    seed,
    (out) => {
      log?.(`writing the ${what} replica at ${size}'s size (BF16 external data) into ${dir}`);
      write(out);
    },
    (s) => s.size === size,
  );
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
 * Writes `dir/model.onnx` with its weights in `dir/model.onnx_data` (as `storage` holds them, 4 KiB aligned):
 * input_ids i64[rows, seq], the head's positions, the head's outputs.
 */
export function writeCausalGraph(
  dir: string,
  shape: CausalShape,
  head: CausalHead,
  w: CausalWeights,
  meta: { producer: string; docString: string },
  storage: CausalStorage = KEV_STORAGE,
): void {
  const g = new GraphBuilder('main_graph', { path: join(dir, 'model.onnx_data'), location: 'model.onnx_data' });
  try {
    const ids = g.input('input_ids', I64, ['rows', 'seq']);
    const positions = Object.fromEntries(
      head.positions.map((p) => [p.name, g.input(p.name, I64, p.perRow === 1 ? ['rows'] : ['rows', 'k'])]),
    );
    const n = new CausalNet(g, w, shape, ids, storage);
    if (storage.weights === 'bf16-upfront') n.declareUpfront(trunkSpecs(shape, storage).keys());
    head.build(n, causalTrunk(n), positions);
    g.save(join(dir, 'model.onnx'), { opset: storage.opset, ...meta });
  } catch (e) {
    g.abort();
    throw e;
  }
}

/**
 * A replica's graph in `out`: the trunk's and the head's weights drawn from `seed`, rounded where
 * `storage` stores BF16, and the same values in fp32 in weights.safetensors (PyTorch names, for the
 * numpy references; `safetensors` its metadata). `lazy` (a base's size): each weight drawn as the
 * graph asks for it, none kept, and no weights.safetensors (no reference reads them).
 */
export function writeReplicaGraph(
  out: string,
  r: { shape: CausalShape; head: CausalHead; seed: number; storage: CausalStorage; lazy: boolean },
  meta: { producer: string; docString: string; safetensors: Record<string, string> },
): void {
  const trunk = trunkSpecs(r.shape, r.storage);
  const specs = new Map([...trunk, ...r.head.specs]);
  const w = (r.lazy ? lazyWeights : drawWeights)(specs, r.seed, storedBf16(r.storage, trunk));
  writeCausalGraph(out, r.shape, r.head, w, meta, r.storage);
  if (!r.lazy) writeSafetensors(join(out, 'weights.safetensors'), specs, w, meta.safetensors);
}

export function writeJsonFile(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}
